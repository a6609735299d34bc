//! The fast kernel's portable loop ([`super::Kernel::Portable`]), for any
//! processor: chapter 9's tiles in FlashAttention-2's order, the products
//! through the `gemm` crate, the online softmax row by row.

use gemm::Parallelism;
use ndarray::{s, Array1, Array2, ArrayRef2, ArrayViewMut2};

use super::{keys_seen, scaled_queries, visible_keys, RunningSoftmax, Tiles};
use crate::error::AttnError;
use crate::linalg::product;
use crate::real::exp_nonpositive;

/// One thread's scratch: a tile of scaled queries, a tile of scores, and
/// each query's running maximum and sum.
pub(super) struct Scratch {
    q: Array2<f32>,   // tiles.query×d_k
    s: Array2<f32>,   // tiles.query×tiles.key
    max: Array1<f32>, // tiles.query
    sum: Array1<f32>, // tiles.query
}

impl Scratch {
    pub(super) fn new(d_k: usize, tiles: Tiles) -> Scratch {
        Scratch {
            q: Array2::zeros((tiles.query, d_k)),
            s: Array2::zeros((tiles.query, tiles.key)),
            max: Array1::zeros(tiles.query),
            sum: Array1::zeros(tiles.query),
        }
    }
}

impl RunningSoftmax for Scratch {
    fn max_and_sum(&self) -> (&[f32], &[f32]) {
        (self.max.as_slice().expect("owned"), self.sum.as_slice().expect("owned"))
    }
}

// ANCHOR: portable
/// The output rows `i0 .. i0 + out.nrows()`: every key tile the causal mask
/// leaves visible, with the online softmax.
pub(super) fn query_tile(
    [q, k, v]: [&ArrayRef2<f32>; 3],
    causal: bool,
    key_tile: usize,
    i0: usize,
    mut out: ArrayViewMut2<f32>,
    scratch: &mut Scratch,
) -> Result<(), AttnError> {
    let rows = out.nrows();
    scaled_queries(&mut scratch.q, q, i0, rows);
    scratch.max.fill(f32::NEG_INFINITY);
    scratch.sum.fill(0.0);
    let keys_seen = keys_seen(causal, k.nrows(), i0 + rows);
    for j0 in (0..keys_seen).step_by(key_tile) {
        let cols = key_tile.min(keys_seen - j0);
        let mut s_tile = scratch.s.slice_mut(s![..rows, ..cols]);
        let k_tile = k.slice(s![j0..j0 + cols, ..]);
        product(&mut s_tile, scratch.q.slice(s![..rows, ..]), k_tile.t(), false, Parallelism::None);
        for r in 0..rows {
            let mut row = s_tile.row_mut(r);
            let scores = row.as_slice_mut().expect("score rows are contiguous");
            let visible = visible_keys(causal, i0 + r, j0, cols);
            let (seen, future) = scores.split_at_mut(visible);
            future.fill(0.0); // weight 0: the key is in the query's future
            let alpha =
                exponentials(seen, &mut scratch.max[r], &mut scratch.sum[r]).map_err(|value| {
                    AttnError::Overflow {
                        what: "the scores QKᵀ/√d_k",
                        position: (i0 + r, j0),
                        value,
                    }
                })?;
            if alpha != 1.0 {
                out.row_mut(r).map_inplace(|o| *o *= alpha);
            }
        }
        product(&mut out, s_tile.view(), v.slice(s![j0..j0 + cols, ..]), true, Parallelism::None);
    }
    for (mut row, &l) in out.rows_mut().into_iter().zip(&scratch.sum) {
        if l > 0.0 {
            let inv = 1.0 / l;
            row.map_inplace(|o| *o *= inv);
        }
    }
    Ok(())
}

/// Lanes of the running maximum and sum: independent accumulators the
/// compiler keeps in one vector register each.
const LANES: usize = 16;

/// The online softmax on one row of a tile, in one pass after the maximum:
/// `scores` become `exp(score − M_new)` while their sum is taken; `M` and
/// `ℓ` are updated, and the factor `exp(M_old − M_new)` for the output so far
/// is returned. A score of `+∞` or NaN (the product of finite queries and
/// keys overflowed) is returned as the error.
///
/// Both passes keep `LANES` partial results, combined at the end: a single
/// running sum would make every addition wait for the one before, and the
/// compiler may not reorder floating-point additions on its own.
pub(crate) fn exponentials(scores: &mut [f32], max: &mut f32, sum: &mut f32) -> Result<f32, f32> {
    let mut lane_max = [f32::NEG_INFINITY; LANES];
    let mut poison = [0.0_f32; LANES]; // becomes NaN if a score is NaN or ±∞
    let chunks = scores.chunks_exact(LANES);
    let rest = chunks.remainder();
    for chunk in chunks {
        for i in 0..LANES {
            lane_max[i] = lane_max[i].max(chunk[i]);
            poison[i] += chunk[i] * 0.0;
        }
    }
    let block_max = rest.iter().chain(&lane_max).fold(f32::NEG_INFINITY, |m, &x| m.max(x));
    let poisoned = rest.iter().map(|x| x * 0.0).chain(poison).any(f32::is_nan);
    if poisoned && (block_max == f32::INFINITY || scores.iter().any(|x| x.is_nan())) {
        return Err(if block_max == f32::INFINITY { block_max } else { f32::NAN });
    }
    let max_new = max.max(block_max);
    if max_new == f32::NEG_INFINITY {
        return Ok(1.0); // an empty row: nothing seen yet
    }
    let mut lane_sum = [0.0_f32; LANES];
    let mut chunks = scores.chunks_exact_mut(LANES);
    for chunk in &mut chunks {
        for i in 0..LANES {
            chunk[i] = exp_nonpositive(chunk[i] - max_new);
            lane_sum[i] += chunk[i];
        }
    }
    let mut row_sum: f32 = lane_sum.iter().sum();
    for x in chunks.into_remainder() {
        *x = exp_nonpositive(*x - max_new);
        row_sum += *x;
    }
    let alpha = exp_nonpositive(*max - max_new);
    *sum = *sum * alpha + row_sum;
    *max = max_new;
    Ok(alpha)
}
// ANCHOR_END: portable
