//! Exact attention written for speed (the appendix "Making it fast"):
//! chapter 9's tiled attention with FlashAttention-2's loop order (Dao,
//! 2023), and everything that does not compute taken out of the loops.
//!
//! - Query tiles outside, key tiles inside: a tile of queries keeps its
//!   output, running maxima and sums in cache while every key tile passes.
//! - The scale `1/√d_k` is folded into the queries once per tile.
//! - The exponentials and their row sum are one pass over the scores.
//! - The output is rescaled once per key tile and normalised once at the end.
//! - No allocation inside the loops: each thread owns one scratch of a
//!   query tile, a score tile and two numbers per query, whatever `n` is.
//! - Query tiles are independent, so they run on `rayon`'s threads.
//!
//! Shapes as in chapter 2: `Q` is `n×d_k`, `K` is `m×d_k`, `V` is `m×d_v`,
//! the output `n×d_v`.

use ndarray::{s, Array1, Array2, ArrayRef2, ArrayViewMut1, ArrayViewMut2, Axis};
use rayon::prelude::*;

use crate::attention::check_qkv;
use crate::check::check_overflow;
use crate::error::AttnError;
pub(crate) use crate::linalg::product;

mod backward;
pub use backward::{
    fast_attention_backward, fast_attention_backward_on, fast_attention_backward_with, FastForward,
    Gradients,
};

/// The sizes of the tiles: `query` rows of queries by `key` keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tiles {
    /// Queries per tile: the rows one task owns.
    pub query: usize,
    /// Keys per tile: the columns of one tile of scores.
    pub key: usize,
}

/// The tiles [`fast_attention`] uses, chosen from a sweep of tile sizes on
/// an AMD EPYC with 1 MiB of L2 cache a core: the largest whose working set
/// (896 KiB at `d = 64`) fits it. The appendix's sweep shows how they fare
/// on the machine of its run.
pub const FAST_TILES: Tiles = Tiles { query: 256, key: 512 };

// ANCHOR: fast
/// `softmax(QKᵀ/√d_k) V`, exact to rounding, as [`crate::tiled::tiled_attention`]
/// computes it (with `causal`, query `i` sees keys `0..=i`), on the current
/// `rayon` thread pool.
pub fn fast_attention(
    q: &ArrayRef2<f32>,
    k: &ArrayRef2<f32>,
    v: &ArrayRef2<f32>,
    causal: bool,
) -> Result<Array2<f32>, AttnError> {
    fast_attention_with(q, k, v, causal, FAST_TILES)
}

/// [`fast_attention`] with other tiles (each side at least 1).
pub fn fast_attention_with(
    q: &ArrayRef2<f32>,
    k: &ArrayRef2<f32>,
    v: &ArrayRef2<f32>,
    causal: bool,
    tiles: Tiles,
) -> Result<Array2<f32>, AttnError> {
    fast_attention_on(q, k, v, causal, tiles, Kernel::best())
}

/// The AVX-512 kernel's micro-kernel: rows of its block, and registers of
/// 16 queries across (6 × 4 = 24 of the 32 vector registers).
pub const AVX512_BLOCK: [usize; 2] = [6, 4];

/// Which loop computes the tiles: both give the same attention, to
/// rounding; the appendix times one against the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    /// Any processor: the tiles' products through the `gemm` crate, the
    /// online softmax row by row.
    Portable,
    /// Processors with AVX-512: every tile transposed, queries across the
    /// 16 lanes of a register, one hand-written micro-kernel for both
    /// products and the online softmax 16 queries at a time.
    Avx512,
}

impl Kernel {
    /// The faster kernel this processor runs: [`Kernel::Avx512`] where it
    /// can, [`Kernel::Portable`] elsewhere.
    pub fn best() -> Kernel {
        #[cfg(target_arch = "x86_64")]
        if avx512::available() {
            return Kernel::Avx512;
        }
        Kernel::Portable
    }
}

/// [`fast_attention_with`] on the given `kernel`; asking for
/// [`Kernel::Avx512`] on a processor without it is an error.
pub fn fast_attention_on(
    q: &ArrayRef2<f32>,
    k: &ArrayRef2<f32>,
    v: &ArrayRef2<f32>,
    causal: bool,
    tiles: Tiles,
    kernel: Kernel,
) -> Result<Array2<f32>, AttnError> {
    attention_with([q, k, v], (causal, tiles, kernel), None)
}

/// [`fast_attention`], keeping what [`fast_attention_backward`] needs: the
/// output and each query's log-sum-exp.
pub fn fast_attention_forward(
    q: &ArrayRef2<f32>,
    k: &ArrayRef2<f32>,
    v: &ArrayRef2<f32>,
    causal: bool,
) -> Result<FastForward, AttnError> {
    forward_with(q, k, v, causal, FAST_TILES)
}

/// The forward pass with `tiles`.
pub(crate) fn forward_with(
    q: &ArrayRef2<f32>,
    k: &ArrayRef2<f32>,
    v: &ArrayRef2<f32>,
    causal: bool,
    tiles: Tiles,
) -> Result<FastForward, AttnError> {
    let mut lse = Array1::zeros(q.nrows());
    let output = attention_with([q, k, v], (causal, tiles, Kernel::best()), Some(lse.view_mut()))?;
    Ok(FastForward { output, lse, causal })
}

/// The checked attention of `q` over `k`, `v`, and each query's
/// log-sum-exp into `lse` if asked.
fn attention_with(
    [q, k, v]: [&ArrayRef2<f32>; 3],
    (causal, tiles, kernel): (bool, Tiles, Kernel),
    lse: Option<ArrayViewMut1<f32>>,
) -> Result<Array2<f32>, AttnError> {
    check_qkv(q, k, v)?;
    let tiles = checked_tiles(tiles, q.nrows(), k.nrows())?;
    // Rows contiguous (a copy only if they are not), so that the products
    // and the result are the same, bit for bit, whatever the layout.
    let (q, k, v) = (q.as_standard_layout(), k.as_standard_layout(), v.as_standard_layout());
    let mut output = Array2::zeros((q.nrows(), v.ncols()));
    attend_into([&q, &k, &v], (causal, tiles, kernel), output.view_mut(), lse)?;
    check_overflow("the output", &output)?;
    Ok(output)
}

/// Writes the attention of `q` over `k`, `v` into `output` (`n×d_v`), one
/// query tile per task, and each query's log-sum-exp into `lse` if asked.
pub(crate) fn attend_into(
    [q, k, v]: [&ArrayRef2<f32>; 3],
    (causal, tiles, kernel): (bool, Tiles, Kernel),
    output: ArrayViewMut2<f32>,
    lse: Option<ArrayViewMut1<f32>>,
) -> Result<(), AttnError> {
    let dims = [q.ncols(), v.ncols()];
    match kernel {
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx512 if avx512::available() => {
            let [q, k, v] = [q, k, v].map(|x| x.as_standard_layout());
            let slices = [&q, &k, &v].map(|x| x.as_slice().expect("standard layout"));
            let scratch = || avx512::Scratch::new(dims, tiles);
            let tile = |s: &mut avx512::Scratch, i0, out: ArrayViewMut2<f32>| {
                // SAFETY: `available` found AVX-512 on this processor.
                unsafe { avx512::query_tile(slices, dims, causal, tiles.key, i0, out, s) }
            };
            return each_query_tile(output, lse, tiles.query, scratch, tile);
        }
        Kernel::Avx512 => return Err(unavailable()),
        Kernel::Portable => {}
    }
    let scratch = || portable::Scratch::new(dims[0], tiles);
    let tile = |s: &mut portable::Scratch, i0, out: ArrayViewMut2<f32>| {
        portable::query_tile([q, k, v], causal, tiles.key, i0, out, s)
    };
    each_query_tile(output, lse, tiles.query, scratch, tile)
}

/// The error for [`Kernel::Avx512`] on a processor without it.
fn unavailable() -> AttnError {
    AttnError::Mismatched {
        name: "kernel",
        requirement: "Kernel::Avx512 needs a processor that runs AVX-512 \
                      (Kernel::best() says which kernel this one runs)",
    }
}

/// A scratch that keeps each query's running maximum and sum.
trait RunningSoftmax {
    fn max_and_sum(&self) -> (&[f32], &[f32]);
}

/// Runs `tile(scratch, i0, rows)` on each tile of `rows` rows of `output`
/// in parallel, one scratch per thread, and writes each query's
/// log-sum-exp into `lse` if asked.
fn each_query_tile<S: RunningSoftmax>(
    mut output: ArrayViewMut2<f32>,
    lse: Option<ArrayViewMut1<f32>>,
    query_tile: usize,
    scratch: impl Fn() -> S + Send + Sync,
    tile: impl Fn(&mut S, usize, ArrayViewMut2<f32>) -> Result<(), AttnError> + Send + Sync,
) -> Result<(), AttnError> {
    let chunks = output.axis_chunks_iter_mut(Axis(0), query_tile).into_par_iter().enumerate();
    match lse {
        None => chunks.try_for_each_init(scratch, |s, (t, out)| tile(s, t * query_tile, out)),
        Some(mut lse) => chunks
            .zip(lse.axis_chunks_iter_mut(Axis(0), query_tile))
            .try_for_each_init(scratch, |s, ((t, out), mut lse)| {
                tile(s, t * query_tile, out)?;
                // lse_i = s_max,i + log ℓ_i, the log of the softmax's denominator.
                let (max, sum) = s.max_and_sum();
                for (l, (&m, &sum)) in lse.iter_mut().zip(max.iter().zip(sum)) {
                    *l = m + sum.ln();
                }
                Ok(())
            }),
    }
}

/// `tiles`, each side at least 1 (or an error), and no larger than the
/// problem: a larger tile would only enlarge the scratch.
pub(crate) fn checked_tiles(tiles: Tiles, n: usize, m: usize) -> Result<Tiles, AttnError> {
    if tiles.query == 0 || tiles.key == 0 {
        return Err(AttnError::InvalidArgument {
            name: "tile size",
            value: 0.0,
            requirement: "must be at least 1",
        });
    }
    Ok(Tiles { query: tiles.query.min(n), key: tiles.key.min(m) })
}

// ANCHOR_END: fast

/// Queries `i0 .. i0 + rows` of `q`, times `1/√d_k`, into the first rows
/// of `tile`: the scale folded in once per tile of queries.
fn scaled_queries(tile: &mut Array2<f32>, q: &ArrayRef2<f32>, i0: usize, rows: usize) {
    let scale = 1.0 / (q.ncols() as f32).sqrt();
    let mut tile = tile.slice_mut(s![..rows, ..]);
    tile.zip_mut_with(&q.slice(s![i0..i0 + rows, ..]), |a, &b| *a = b * scale);
}

/// How many of `m` keys the queries before `end` see: all of them, or,
/// under the causal mask, those up to the last query.
fn keys_seen(causal: bool, m: usize, end: usize) -> usize {
    if causal {
        m.min(end)
    } else {
        m
    }
}

/// How many of the keys `j0 .. j0 + cols` query `i` sees: all of them, or,
/// under the causal mask, those up to `i`.
fn visible_keys(causal: bool, i: usize, j0: usize, cols: usize) -> usize {
    if causal {
        (i + 1).saturating_sub(j0).min(cols)
    } else {
        cols
    }
}

// ANCHOR_END: fast

#[cfg(target_arch = "x86_64")]
pub(crate) mod avx512;
mod fused;
mod portable;
pub(crate) use fused::{fused_backward, fused_causal};
pub(crate) use portable::exponentials;
#[cfg(target_arch = "x86_64")]
mod avx512_backward;

#[cfg(test)]
mod tests;
