//! Exact attention in memory that grows linearly with `n`: the scores are
//! computed one tile at a time and never stored whole, with an **online
//! softmax** that keeps, for each query, a running maximum `M` and a running
//! sum `ℓ` of exponentials, rescaling what it has accumulated whenever the
//! maximum grows. This is the idea of FlashAttention (Dao et al., 2022),
//! here on the CPU, where the tiles are sized for the caches rather than for
//! a GPU's shared memory.
//!
//! Shapes as in chapter 2: `Q` is `n×d_k`, `K` is `m×d_k`, `V` is `m×d_v`,
//! the output `n×d_v`. The scratch memory is one `QUERY_BLOCK×KEY_BLOCK`
//! tile of scores, one block of scaled queries, and two numbers per query
//! of the block, whatever `n` and `m` are.

use ndarray::linalg::general_mat_mul;
use ndarray::{s, Array1, Array2, ArrayRef2, ArrayViewMut2};

use crate::attention::check_qkv;
use crate::check::{check_overflow, check_overflow_at};
use crate::error::AttnError;
use crate::real::Real;
use crate::softmax::{max_of, sum_of};

/// Queries per tile.
pub const QUERY_BLOCK: usize = 128;
/// Keys per tile.
pub const KEY_BLOCK: usize = 256;

// ANCHOR: online_update
/// One step of the online softmax for one query: `scores` (one row of a
/// tile, already scaled and masked) are turned into `exp(score − M_new)` in
/// place, and the running maximum
/// `M` (`max_so_far`) and sum `ℓ` (`l`) are updated. Returns the
/// factor `exp(M_old − M_new)` by which the query's accumulated output must
/// be multiplied before this tile's contribution is added.
///
/// While every score seen so far is `−∞` (masked), `M` stays `−∞`, the
/// exponentials are 0 and nothing is accumulated. A NaN or `+∞` score is an
/// error, as in chapter 2's softmax.
pub fn online_softmax_step(
    scores: &mut [f32],
    max_so_far: &mut f32,
    l: &mut f32,
) -> Result<f32, AttnError> {
    check_running_state(*max_so_far, *l)?; // M not NaN or +∞; ℓ finite and ≥ 0
    let block_max = max_of(scores); // NaN if any score is NaN
    if block_max.is_nan() || block_max == f32::INFINITY {
        let j = scores.iter().position(|s| s.is_nan() || *s == f32::INFINITY);
        let position = (0, j.unwrap_or(0));
        let value = j.map_or(block_max, |j| scores[j]);
        return Err(AttnError::InvalidScore { position, value });
    }
    let max_new = max_so_far.max(block_max);
    if max_new == f32::NEG_INFINITY {
        scores.fill(0.0);
        return Ok(1.0);
    }
    let correction = (*max_so_far - max_new).exp_nonpositive(); // 0 on the first tile (M = −∞)
    for s in scores.iter_mut() {
        *s = (*s - max_new).exp_nonpositive();
    }
    *l = *l * correction + sum_of(scores);
    *max_so_far = max_new;
    Ok(correction)
}
// ANCHOR_END: online_update

/// A running state `(M, ℓ)` the online softmax can continue from: `M` a
/// maximum (`−∞` before any score), `ℓ` a sum of exponentials.
fn check_running_state(max_so_far: f32, l: f32) -> Result<(), AttnError> {
    if max_so_far.is_nan() || max_so_far == f32::INFINITY {
        return Err(AttnError::InvalidArgument {
            name: "running maximum M",
            value: f64::from(max_so_far),
            requirement: "must be a number below +∞ (−∞ before the first tile)",
        });
    }
    if !(l.is_finite() && l >= 0.0) {
        return Err(AttnError::InvalidArgument {
            name: "running sum ℓ",
            value: f64::from(l),
            requirement: "must be finite and ≥ 0 (a sum of exponentials)",
        });
    }
    Ok(())
}

// ANCHOR: tiled
/// `softmax(QKᵀ/√d_k) V`, exactly (to rounding), without ever holding the
/// `n×m` scores: tiles of `QUERY_BLOCK` queries by `KEY_BLOCK` keys, with
/// the online softmax. With `causal`, query `i` sees keys `0..=i` (as
/// [`crate::masking::causal_mask`]), and tiles entirely above the diagonal
/// are skipped, not computed and masked.
pub fn tiled_attention(
    q: &ArrayRef2<f32>,
    k: &ArrayRef2<f32>,
    v: &ArrayRef2<f32>,
    causal: bool,
) -> Result<Array2<f32>, AttnError> {
    check_qkv(q, k, v)?;
    let (n, d_v) = (q.nrows(), v.ncols());
    let scale = 1.0 / (q.ncols() as f32).sqrt();
    let mut output = Array2::zeros((n, d_v));
    let mut tile = Array2::zeros((QUERY_BLOCK, KEY_BLOCK)); // the only n-free scratch
    for i0 in (0..n).step_by(QUERY_BLOCK) {
        let i1 = (i0 + QUERY_BLOCK).min(n);
        let q_block = &q.slice(s![i0..i1, ..]) * scale; // scaled queries of the block
        let out_block = output.slice_mut(s![i0..i1, ..]);
        attend_block(&q_block, [k, v], (i0, causal), &mut tile, out_block)?;
    }
    check_overflow("the output", &output)?;
    Ok(output)
}
// ANCHOR_END: tiled

// ANCHOR: tiled_block
/// One block of scaled queries, the first at row `i0`, over every tile of
/// keys it sees: each tile's scores, then the online softmax of each row,
/// which rescales the block's output so far before the tile's weighted
/// values are added to it; at the end, each row divided by its sum `ℓ`.
fn attend_block(
    q_block: &ArrayRef2<f32>,
    [k, v]: [&ArrayRef2<f32>; 2],
    (i0, causal): (usize, bool),
    tile: &mut Array2<f32>,
    mut out_block: ArrayViewMut2<f32>,
) -> Result<(), AttnError> {
    let (rows, m) = (q_block.nrows(), k.nrows());
    let mut running_max = Array1::from_elem(rows, f32::NEG_INFINITY);
    let mut running_sum = Array1::<f32>::zeros(rows);
    // With the causal mask, the block's last query sees keys 0..i0 + rows.
    let keys_seen = if causal { m.min(i0 + rows) } else { m };
    for j0 in (0..keys_seen).step_by(KEY_BLOCK) {
        let j1 = (j0 + KEY_BLOCK).min(keys_seen);
        let mut s_tile = tile.slice_mut(s![..rows, ..j1 - j0]);
        general_mat_mul(1.0, q_block, &k.slice(s![j0..j1, ..]).t(), 0.0, &mut s_tile);
        check_overflow_at("the scores QKᵀ/√d_k", &s_tile, (i0, j0))?;
        if causal && j1 > i0 + 1 {
            mask_future(&mut s_tile, i0, j0);
        }
        for (r, mut row) in s_tile.rows_mut().into_iter().enumerate() {
            let row = row.as_slice_mut().expect("tile rows are contiguous");
            let correction = online_softmax_step(row, &mut running_max[r], &mut running_sum[r])?;
            out_block.row_mut(r).mapv_inplace(|o| o * correction);
        }
        general_mat_mul(1.0, &s_tile, &v.slice(s![j0..j1, ..]), 1.0, &mut out_block);
    }
    for (mut out_row, &l) in out_block.rows_mut().into_iter().zip(&running_sum) {
        if l > 0.0 {
            out_row.mapv_inplace(|o| o / l); // a fully masked query stays 0
        }
    }
    Ok(())
}
// ANCHOR_END: tiled_block

/// Sets to `−∞` the scores of a tile whose query `i0 + r` would see key
/// `j0 + c > i0 + r`, its future.
fn mask_future(tile: &mut ArrayViewMut2<f32>, i0: usize, j0: usize) {
    for ((r, c), s) in tile.indexed_iter_mut() {
        if j0 + c > i0 + r {
            *s = f32::NEG_INFINITY;
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::masking::{causal_mask, masked_attention};
    use crate::scaled_dot_product_attention;
    use crate::scaling::standard_normal;
    use approx::assert_abs_diff_eq;
    use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

    // ANCHOR: tiled_test
    /// `(n, m, d_k, d_v)` below, at and across the tile sizes, `n ≠ m`, odd
    /// widths (the appendix's fast kernel is tested on them too).
    pub(crate) const SHAPES: [(usize, usize, usize, usize); 7] = [
        (1, 1, 1, 1),
        (5, 3, 4, 2),
        (128, 256, 64, 64),
        (130, 300, 16, 8),
        (257, 513, 64, 32),
        (600, 600, 33, 7),
        (1000, 700, 64, 64),
    ];

    #[test]
    fn tiled_attention_equals_naive_attention_with_and_without_the_mask() {
        let mut rng = StdRng::seed_from_u64(77);
        for (n, m, d_k, d_v) in SHAPES {
            let q = standard_normal(n, d_k, &mut rng);
            let k = standard_normal(m, d_k, &mut rng);
            let v = standard_normal(m, d_v, &mut rng);
            let naive = scaled_dot_product_attention(&q, &k, &v).unwrap().output;
            let tiled = tiled_attention(&q, &k, &v, false).unwrap();
            assert_abs_diff_eq!(tiled, naive, epsilon = 1e-5);
            let naive = masked_attention(&q, &k, &v, &causal_mask(n, m)).unwrap().output;
            let tiled = tiled_attention(&q, &k, &v, true).unwrap();
            assert_abs_diff_eq!(tiled, naive, epsilon = 1e-5);
        }
    }
    // ANCHOR_END: tiled_test

    #[test]
    fn large_scores_need_the_rescaling() {
        // Scores that grow along the keys: every new tile has a larger max,
        // so every accumulated output must be rescaled, and exp would
        // overflow without subtracting the running maximum.
        let (n, m, d) = (3, 1000, 2);
        let q = Array2::from_elem((n, d), 10.0_f32);
        let k = Array2::from_shape_fn((m, d), |(j, _)| j as f32 / 10.0);
        let v = Array2::from_shape_fn((m, 1), |(j, _)| (j % 7) as f32);
        let naive = scaled_dot_product_attention(&q, &k, &v).unwrap().output;
        let tiled = tiled_attention(&q, &k, &v, false).unwrap();
        assert!(tiled.iter().all(|x| x.is_finite()));
        // Scores reach 1400, where f32 numbers are 1.2e-4 apart: scaling the
        // queries before the product (tiled) or the scores after it (naive)
        // rounds differently, so the tolerance is relative to that.
        assert_abs_diff_eq!(tiled, naive, epsilon = 1e-4);
    }

    #[test]
    fn shapes_are_checked() {
        let q = Array2::<f32>::zeros((4, 8));
        let k = Array2::<f32>::zeros((5, 6));
        let err = tiled_attention(&q, &k, &k, false).unwrap_err();
        assert_eq!(err, AttnError::KeyWidthMismatch { queries: (4, 8), keys: (5, 6) });
    }
}
