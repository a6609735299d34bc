//! Attention on a GPU, through `wgpu` (the crate's `gpu` feature): the
//! kernels are WGSL files included by the crate, `plain.wgsl` (chapter 2's
//! three passes, the scores written to GPU memory) and `flash.wgsl`
//! (FlashAttention-2's forward pass, the scores kept in registers and
//! workgroup memory), with its backward pass in `backward.wgsl`. [`Gpu`]
//! finds an adapter, builds the pipelines once, and runs them on `f32`
//! matrices, reading the result back.
//!
//! The same WGSL runs on a real GPU, on a software one (Mesa's lavapipe,
//! which CI uses), and in a browser through WebGPU.

use ndarray::{Array1, Array2, ArrayRef2};

use crate::attention::check_qkv;
use crate::check::{check_finite, check_shape};
use crate::error::AttnError;

mod device;
mod run;

pub use device::Gpu;
pub use run::SPAN;

/// The widest row the kernels take: 16 vec4s.
pub const MAX_D: usize = 64;

/// The most queries or keys the kernels take (the plain kernels dispatch
/// a workgroup a row, and WebGPU allows 65,535 a dimension).
pub const MAX_ROWS: usize = 65_535;

/// Which keys each query sees.
#[derive(Debug, Clone, Copy)]
pub enum Mask<'a> {
    /// Every key.
    None,
    /// Keys `0..=i` for query `i`, as [`crate::masking::causal_mask`].
    Causal,
    /// Key `j` for query `i` where `keep[[i, j]]`, an `n×m` mask as
    /// [`crate::masking::masked_attention`] takes: a query that keeps no
    /// key gets a zero row.
    Keep(&'a ArrayRef2<bool>),
}

impl Mask<'_> {
    /// The kernels' number for it: 0, 1 or 2.
    fn kind(&self) -> u32 {
        match self {
            Mask::None => 0,
            Mask::Causal => 1,
            Mask::Keep(_) => 2,
        }
    }

    /// A number that tells masks apart: the kind, and for a `Keep` mask
    /// an FNV-1a hash of its shape and entries, so that the backward pass
    /// can refuse a mask other than its forward pass's.
    fn fingerprint(&self) -> u64 {
        let Mask::Keep(keep) = self else { return u64::from(self.kind()) };
        let (n, m) = keep.dim();
        let words = [n as u64, m as u64].into_iter().chain(keep.iter().map(|&x| u64::from(x)));
        words.fold(0xcbf2_9ce4_8422_2325, |h, w| (h ^ w).wrapping_mul(0x0100_0000_01b3))
    }
}

/// What the flash kernel returns: the output and each query's
/// log-sum-exp of its scores, `ln Σ_j exp(s_ij)` (what its backward pass
/// keeps instead of the weights).
#[derive(Debug, Clone, PartialEq)]
pub struct FlashOutput {
    /// `n × d_v`.
    pub output: Array2<f32>,
    /// `n`; −3e38, the kernels' −∞, for a query that sees no key.
    pub lse: Array1<f32>,
    /// The mask it was computed under, which its backward pass must be
    /// given again ([`Mask::fingerprint`]).
    mask: u64,
}

/// The sizes the kernels read, as WGSL's `Sizes`.
#[derive(Debug, Clone, Copy)]
struct Sizes {
    n: u32,
    m: u32,
    d4: u32,
    mask: u32,
    scale: f32,
    /// The keys (or queries) a dispatch walks, `begin..end`.
    span: (u32, u32),
}

impl Sizes {
    /// The uniform's bytes: eight words, as a uniform's size is a multiple
    /// of 16 bytes.
    fn bytes(&self) -> Vec<u8> {
        let words =
            [self.n, self.m, self.d4, self.mask, self.scale.to_bits(), self.span.0, self.span.1, 0];
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }
}

/// Checks Q, K, V and the mask for the kernels: chapter 2's shapes,
/// `d_k = d_v` of at most [`MAX_D`], at most [`MAX_ROWS`] rows, finite
/// entries ([`check_qkv`]), an `n×m` mask.
fn check(
    q: &ArrayRef2<f32>,
    k: &ArrayRef2<f32>,
    v: &ArrayRef2<f32>,
    mask: Mask,
) -> Result<(), AttnError> {
    check_qkv(q, k, v)?;
    if let Mask::Keep(keep) = mask {
        if keep.dim() != (q.nrows(), k.nrows()) {
            return Err(AttnError::MaskShapeMismatch {
                scores: (q.nrows(), k.nrows()),
                mask: keep.dim(),
            });
        }
    }
    if v.ncols() != k.ncols() || k.ncols() > MAX_D {
        return Err(AttnError::InvalidArgument {
            name: "value width d_v (the GPU kernels need d_v = d_k ≤ 64)",
            value: v.ncols() as f64,
            requirement: "must equal the key width d_k, at most 64",
        });
    }
    for (name, rows) in [("queries", q.nrows()), ("keys", k.nrows())] {
        if rows > MAX_ROWS {
            return Err(AttnError::OutOfRange {
                name,
                value: rows,
                requirement: "the GPU kernels take at most this many rows",
                limit: MAX_ROWS,
            });
        }
    }
    Ok(())
}

/// Checks what the backward pass is given besides Q, K and V: the
/// forward pass's mask, output (`n × d_v`, finite) and log-sum-exp (`n`,
/// not NaN), and `dO` (`n × d_v`, finite).
fn check_backward(
    q: &ArrayRef2<f32>,
    forward: &FlashOutput,
    d_out: &ArrayRef2<f32>,
    mask: Mask,
) -> Result<(), AttnError> {
    if mask.fingerprint() != forward.mask {
        return Err(AttnError::InvalidArgument {
            name: "the backward pass's mask (Mask::None 0, Causal 1, Keep 2)",
            value: f64::from(mask.kind()),
            requirement: "must be the mask the forward pass was computed under",
        });
    }
    let n = q.nrows();
    check_shape("the forward pass's output and Q (n × d)", forward.output.dim(), q.dim())?;
    check_shape("the forward pass's log-sum-exp (n)", (forward.lse.len(), 1), (n, 1))?;
    check_shape("dO and the output (n × d_v)", d_out.dim(), q.dim())?;
    check_finite("the forward pass's output", &forward.output)?;
    check_finite("dO", d_out)?;
    if let Some(&bad) = forward.lse.iter().find(|x| !x.is_finite()) {
        return Err(AttnError::InvalidArgument {
            name: "the forward pass's log-sum-exp",
            value: bad as f64,
            requirement: "must hold only finite numbers (−3e38 for a query that sees no key)",
        });
    }
    Ok(())
}

/// The rows of `x` as vec4s, padded with zeros to `d4` of them: the
/// buffer's bytes.
fn padded(x: &ArrayRef2<f32>, d4: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(x.nrows() * d4 * 16);
    for row in x.rows() {
        for c in 0..4 * d4 {
            let value = if c < row.len() { row[c] } else { 0.0 };
            out.extend_from_slice(&value.to_le_bytes());
        }
    }
    out
}

/// The first `cols` columns of `rows` rows of `d4` vec4s read back.
fn unpadded(floats: &[f32], rows: usize, d4: usize, cols: usize) -> Array2<f32> {
    Array2::from_shape_fn((rows, cols), |(i, c)| floats[i * 4 * d4 + c])
}
