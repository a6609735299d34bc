//! Multi-head latent attention's forward and backward passes over a batch
//! of sequences: the explicit form, in which every head's keys and values
//! are computed from the latents, as training needs it. [`crate::latent`]
//! builds the public layer, and its absorbed form for decoding, on it.

use ndarray::{s, Array2, ArrayRef2, Axis};

use super::multihead::{
    mha_backward_to_projections, mha_from_projections, rotate_heads, Heads, MhaCache,
};
use crate::error::AttnError;
use crate::linalg::{linear, matmul};
use crate::position::Rotation;
use crate::real::Real;
use crate::rope_scaling::RopeScaling;

/// The weights of a latent attention layer of `h` heads of width `d_h`,
/// with a latent of width `d_c` and rotary parts of width `d_r`, for
/// `d`-wide tokens.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LatentWeights<F> {
    /// `d × h·d_h`: the queries matched against the keys `c W_UK` (in
    /// decoding, against the latents themselves).
    pub(crate) w_q: Array2<F>,
    /// `d × h·d_r`: the queries' rotary parts, head `i`'s in columns
    /// `i·d_r..(i+1)·d_r`.
    pub(crate) w_qr: Array2<F>,
    /// `d × d_c`: down to the latent, which is cached.
    pub(crate) w_dkv: Array2<F>,
    /// `d × d_r`: the one rotary key all heads share, cached.
    pub(crate) w_kr: Array2<F>,
    /// `d_c × h·d_h`: the latent up to each head's keys.
    pub(crate) w_uk: Array2<F>,
    /// `d_c × h·d_h`: the latent up to each head's values.
    pub(crate) w_uv: Array2<F>,
    /// `h·d_h × d`: the heads' outputs back to the model's width.
    pub(crate) w_o: Array2<F>,
}

impl<F> LatentWeights<F> {
    /// The number of heads, `h = (h·d_r) / d_r`.
    pub(crate) fn heads(&self) -> usize {
        self.w_qr.ncols() / self.w_kr.ncols().max(1)
    }

    /// The seven matrices, in the order a weights file lists them.
    pub(crate) fn matrices(&self) -> [&Array2<F>; 7] {
        [&self.w_q, &self.w_qr, &self.w_dkv, &self.w_kr, &self.w_uk, &self.w_uv, &self.w_o]
    }

    /// [`Self::matrices`], mutable.
    pub(crate) fn matrices_mut(&mut self) -> [&mut Array2<F>; 7] {
        let LatentWeights { w_q, w_qr, w_dkv, w_kr, w_uk, w_uv, w_o } = self;
        [w_q, w_qr, w_dkv, w_kr, w_uk, w_uv, w_o]
    }

    /// The names [`Self::matrices`] have in a weights file.
    pub(crate) const NAMES: [&'static str; 7] =
        ["w_q", "w_qr", "w_dkv", "w_kr", "w_uk", "w_uv", "w_o"];
}

// ANCHOR: explicit
/// Causal latent self-attention over `B` sequences of `seq_len` tokens,
/// `x` (`B·seq_len × d`), each sequence under the mask `keep(b)`, the explicit way:
/// the latents `c = x W_DKV`, and every head's keys `[c W_UK^i | k^R]` and
/// values `c W_UV^i`; its queries are `[x W_Q^i | q^R_i]`, where `q^R_i` and
/// `k^R = x W_KR` (one for all heads) are turned by their positions (RoPE).
/// That is plain multi-head attention, scaled by `√(d_h + d_r)`.
pub(crate) fn latent_forward<F: Real>(
    x: &ArrayRef2<F>,
    w: &LatentWeights<F>,
    seq_len: usize,
    keep: impl Fn(usize) -> Option<Array2<bool>> + Sync,
) -> Result<(Array2<F>, MhaCache<F>), AttnError> {
    let heads = w.heads();
    let c = linear("the latents X W_DKV", x, &w.w_dkv, None)?; // B·seq_len × d_c: what a cache keeps
    let mut k_r = linear("the rotary keys X W_KR", x, &w.w_kr, None)?; // B·seq_len × d_r: cached too
    let mut q_r = linear("the rotary queries X W_QR", x, &w.w_qr, None)?; // B·seq_len × h·d_r
    rotate_heads(&mut k_r, seq_len, 1, (Rotation::Forward, RopeScaling::None))?;
    rotate_heads(&mut q_r, seq_len, heads, (Rotation::Forward, RopeScaling::None))?;
    let q_c = linear("the queries X W_Q", x, &w.w_q, None)?; // B·seq_len × h·d_h
    let k_c = linear("the keys C W_UK", &c, &w.w_uk, None)?; // B·seq_len × h·d_h
    let v = linear("the values C W_UV", &c, &w.w_uv, None)?; // B·seq_len × h·d_h
    let q = side_by_side(&q_c, &q_r, heads, heads); // per head [q^C_i | q^R_i]
    let k = side_by_side(&k_c, &k_r, heads, 1); // per head [k^C_i | k^R]
    let sizes = Heads::new(seq_len, seq_len, heads);
    mha_from_projections([q, k, v], (&w.w_o, None), sizes, keep)
}
// ANCHOR_END: explicit

/// The gradients of [`latent_forward`]'s input and weights, given `dOut`
/// and the attention's cache. The latents are computed again, not kept: one
/// product of `x`.
pub(crate) fn latent_backward<F: Real>(
    cache: &MhaCache<F>,
    x: &ArrayRef2<F>,
    w: &LatentWeights<F>,
    seq_len: usize,
    d_out: &ArrayRef2<F>,
) -> Result<(Array2<F>, LatentWeights<F>), AttnError> {
    let heads = w.heads();
    let sizes = Heads::new(seq_len, seq_len, heads);
    let ([dq, dk, dv], dw_o) = mha_backward_to_projections(cache, &w.w_o, sizes, d_out)?;
    let c = matmul(x, &w.w_dkv);
    let d_h = w.w_q.ncols() / heads;
    // ANCHOR: latent_gradients
    // Each head's query and key gradients, split into their latent and
    // rotary parts.
    let [dq_c, mut dq_r] = apart(&dq, d_h, heads);
    let [dk_c, dk_r_per_head] = apart(&dk, d_h, heads);
    // Every head reads the one rotary key: their gradients add.
    let d_r = w.w_kr.ncols();
    let mut dk_r = Array2::zeros((dk.nrows(), d_r));
    for i in 0..heads {
        dk_r += &dk_r_per_head.slice(s![.., i * d_r..(i + 1) * d_r]);
    }
    // Back through RoPE: a rotation's inverse is its transpose.
    rotate_heads(&mut dq_r, seq_len, heads, (Rotation::Back, RopeScaling::None))?;
    rotate_heads(&mut dk_r, seq_len, 1, (Rotation::Back, RopeScaling::None))?;
    // The latents feed every head's keys and values.
    let dc = matmul(&dk_c, &w.w_uk.t()) + matmul(&dv, &w.w_uv.t());
    // ANCHOR_END: latent_gradients
    let dx = matmul(&dq_c, &w.w_q.t())
        + matmul(&dq_r, &w.w_qr.t())
        + matmul(&dc, &w.w_dkv.t())
        + matmul(&dk_r, &w.w_kr.t());
    let grads = LatentWeights {
        w_q: matmul(&x.t(), &dq_c),
        w_qr: matmul(&x.t(), &dq_r),
        w_dkv: matmul(&x.t(), &dc),
        w_kr: matmul(&x.t(), &dk_r),
        w_uk: matmul(&c.t(), &dk_c),
        w_uv: matmul(&c.t(), &dv),
        w_o: dw_o,
    };
    Ok((dx, grads))
}

/// Per head `i`, `[a_i | b_j]`: `a` has `heads` heads side by side, `b`
/// has `b_heads` (`heads`, or 1 that every head shares), `j = i·b_heads/heads`.
fn side_by_side<F: Real>(a: &Array2<F>, b: &Array2<F>, heads: usize, b_heads: usize) -> Array2<F> {
    let (w_a, w_b) = (a.ncols() / heads, b.ncols() / b_heads);
    let mut out = Array2::zeros((a.nrows(), heads * (w_a + w_b)));
    for i in 0..heads {
        let (at, j) = (i * (w_a + w_b), i * b_heads / heads);
        out.slice_mut(s![.., at..at + w_a]).assign(&a.slice(s![.., i * w_a..(i + 1) * w_a]));
        out.slice_mut(s![.., at + w_a..at + w_a + w_b])
            .assign(&b.slice(s![.., j * w_b..(j + 1) * w_b]));
    }
    out
}

/// Splits `x`, whose heads are `[a_i | b_i]` side by side, into `a` (`w_a`
/// columns a head) and `b` (the rest), each with the heads side by side.
fn apart<F: Real>(x: &Array2<F>, w_a: usize, heads: usize) -> [Array2<F>; 2] {
    let width = x.ncols() / heads;
    let pick = |from: usize, to: usize| {
        let views: Vec<_> =
            (0..heads).map(|i| x.slice(s![.., i * width + from..i * width + to])).collect();
        ndarray::concatenate(Axis(1), &views).expect("the same rows")
    };
    [pick(0, w_a), pick(w_a, width)]
}

#[cfg(test)]
mod tests;
