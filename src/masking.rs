//! Masked attention: some keys are hidden from some queries.
//!
//! A mask is an `n×m` matrix of booleans, `true` where query `i` may attend
//! to key `j`. Masked scores are set to `−∞` before the softmax, so they get
//! weight exactly 0; a row with every key masked gets all-zero weights and a
//! zero output (see [`crate::softmax::softmax_in_place`]), never NaN.

use ndarray::{Array2, ArrayRef2};

use crate::attention::{check_qkv, Attention};
use crate::error::AttnError;
use crate::softmax::softmax_rows;

// ANCHOR: causal
/// The causal mask for `n` queries and `m` keys: query `i` may attend to
/// keys `0..=i` (aligned at the top left, as PyTorch's `is_causal`).
pub fn causal_mask(n: usize, m: usize) -> Array2<bool> {
    Array2::from_shape_fn((n, m), |(i, j)| j <= i)
}
// ANCHOR_END: causal

// ANCHOR: masked_attention
/// `softmax(QKᵀ/√d_k with masked scores set to −∞) V`; `keep` is `n×m`.
pub fn masked_attention(
    q: &ArrayRef2<f32>,
    k: &ArrayRef2<f32>,
    v: &ArrayRef2<f32>,
    keep: &ArrayRef2<bool>,
) -> Result<Attention, AttnError> {
    check_qkv(q, k, v)?;
    let scores_shape = (q.nrows(), k.nrows());
    if keep.dim() != scores_shape {
        return Err(AttnError::MaskShapeMismatch {
            scores: scores_shape,
            mask: keep.dim(),
        });
    }
    let d_k = q.ncols() as f32;
    let mut scores = q.dot(&k.t()) / d_k.sqrt(); // n×m
    scores.zip_mut_with(keep, |s, &keep_ij| {
        if !keep_ij {
            *s = f32::NEG_INFINITY;
        }
    });
    let weights = softmax_rows(&scores); // masked entries get exactly 0
    let output = weights.dot(v); // n×d_v
    Ok(Attention { output, weights })
}
// ANCHOR_END: masked_attention

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attention::{scaled_dot_product_attention, worked_example};
    use ndarray::s;

    #[test]
    fn an_all_true_mask_changes_nothing() {
        let (q, k, v) = worked_example();
        let all = Array2::from_elem((3, 4), true);
        let masked = masked_attention(&q, &k, &v, &all).unwrap();
        assert_eq!(masked, scaled_dot_product_attention(&q, &k, &v).unwrap());
    }

    #[test]
    fn masked_keys_get_zero_weight_and_a_fully_masked_row_is_zero() {
        let (q, k, v) = worked_example();
        let mut keep = causal_mask(3, 4);
        keep.row_mut(2).fill(false); // query 2 may see nothing
        let a = masked_attention(&q, &k, &v, &keep).unwrap();
        assert_eq!(a.weights.slice(s![0, 1..]), ndarray::array![0.0, 0.0, 0.0]);
        assert!((a.weights.row(1).sum() - 1.0).abs() < 1e-6);
        assert_eq!(a.weights.row(2), ndarray::array![0.0, 0.0, 0.0, 0.0]);
        assert_eq!(a.output.row(2), ndarray::array![0.0, 0.0]);
        assert!(a.output.iter().all(|x| x.is_finite()));
    }

    #[test]
    fn a_mask_of_the_wrong_shape_names_both_shapes() {
        let (q, k, v) = worked_example();
        let err = masked_attention(&q, &k, &v, &causal_mask(4, 4)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the mask is 4×4 but the scores are 3×4 (n queries × m keys)"
        );
    }
}
