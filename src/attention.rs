//! Scaled dot-product attention,
//! `Attention(Q, K, V) = softmax(QKᵀ / √d_k) V`.
//!
//! Shapes: `Q` is `n×d_k` (one row per query), `K` is `m×d_k` (one row per
//! key), `V` is `m×d_v` (one row per value; value `j` belongs to key `j`).
//! The scores `QKᵀ/√d_k` and the weights are `n×m`; the output is `n×d_v`.
//! `n` and `m` may differ (cross-attention, chapter 4).

use ndarray::{array, Array2, Array3, ArrayRef2, ArrayRef3, ArrayView2, Axis};

use crate::check::{
    check_finite, check_not_empty, check_overflow, check_size, check_total, MAX_ENTRIES,
};
use crate::error::AttnError;
use crate::linalg::matmul;
use crate::softmax::softmax_rows_in_place;

/// What attention returns: the mixed values and the weights that mixed them.
#[derive(Debug, Clone, PartialEq)]
pub struct Attention {
    /// `n×d_v`: row `i` is the weighted average of the value rows for query `i`.
    pub output: Array2<f32>,
    /// `n×m`: row `i` is query `i`'s distribution over the `m` keys.
    pub weights: Array2<f32>,
}

// ANCHOR: check_shapes
/// Checks that `Q` (`n×d_k`), `K` (`m×d_k`) and `V` (`m×d_v`) fit together,
/// and that they hold only finite numbers.
pub fn check_qkv(
    q: &ArrayRef2<f32>,
    k: &ArrayRef2<f32>,
    v: &ArrayRef2<f32>,
) -> Result<(), AttnError> {
    check_not_empty("queries", q.dim())?;
    check_not_empty("keys", k.dim())?;
    check_not_empty("values", v.dim())?;
    if k.ncols() != q.ncols() {
        return Err(AttnError::KeyWidthMismatch { queries: q.dim(), keys: k.dim() });
    }
    if v.nrows() != k.nrows() {
        return Err(AttnError::KeyValueCountMismatch { keys: k.dim(), values: v.dim() });
    }
    check_finite("queries", q)?;
    check_finite("keys", k)?;
    check_finite("values", v)
}
// ANCHOR_END: check_shapes

// ANCHOR: attention
/// `softmax(QKᵀ / √d_k) V` for `Q`: `n×d_k`, `K`: `m×d_k`, `V`: `m×d_v`.
///
/// Returns the `n×d_v` output and the `n×m` weights, or an error naming the
/// shapes if they do not fit together.
pub fn scaled_dot_product_attention(
    q: &ArrayRef2<f32>,
    k: &ArrayRef2<f32>,
    v: &ArrayRef2<f32>,
) -> Result<Attention, AttnError> {
    check_qkv(q, k, v)?; // the shapes fit, the numbers are finite
    check_size("the scores QKᵀ", q.nrows(), k.nrows())?; // n×m must fit in memory
    let sqrt_d_k = (q.ncols() as f32).sqrt();
    let q_scaled = q / sqrt_d_k; // scale n×d_k queries, not n×m scores: same result
    let mut scores = matmul(&q_scaled, &k.t()); // n×m: how well query i matches key j
    check_overflow("the scores QKᵀ/√d_k", &scores)?; // huge finite Q, K can overflow
    softmax_rows_in_place(&mut scores)?;
    let weights = scores; // n×m: each row sums to 1
    let output = matmul(&weights, v); // n×d_v: each row a weighted average of values
    check_overflow("the output", &output)?;
    Ok(Attention { output, weights })
}
// ANCHOR_END: attention

// ANCHOR: batched
/// What [`batched_attention`] returns: one [`Attention`] per batch item,
/// stacked along the first axis.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchedAttention {
    /// `b×n×d_v`.
    pub output: Array3<f32>,
    /// `b×n×m`.
    pub weights: Array3<f32>,
}

/// Attention over a batch of `b` independent problems (chapter 2, exercise 2):
/// `Q`: `b×n×d_k`, `K`: `b×m×d_k`, `V`: `b×m×d_v`.
/// Each batch item is attended on its own with the 2-D function.
pub fn batched_attention(
    q: &ArrayRef3<f32>,
    k: &ArrayRef3<f32>,
    v: &ArrayRef3<f32>,
) -> Result<BatchedAttention, AttnError> {
    for_each_item(q, k, v, |_, q_i, k_i, v_i| scaled_dot_product_attention(&q_i, &k_i, &v_i))
}

// ANCHOR_END: batched

// ANCHOR: for_each_item
/// Runs `per_item(i, Q_i, K_i, V_i)` on each batch item `i` and stacks
/// the results; the batch sizes of `Q`, `K` and `V` must agree.
pub fn for_each_item(
    q: &ArrayRef3<f32>,
    k: &ArrayRef3<f32>,
    v: &ArrayRef3<f32>,
    mut per_item: impl FnMut(
        usize,
        ArrayView2<f32>,
        ArrayView2<f32>,
        ArrayView2<f32>,
    ) -> Result<Attention, AttnError>,
) -> Result<BatchedAttention, AttnError> {
    let (b, n, m, d_v) = check_batch(q, k, v)?; // even with no item to check
    let mut output = Array3::zeros((b, n, d_v));
    let mut weights = Array3::zeros((b, n, m));
    for i in 0..b {
        let (q_i, k_i, v_i) =
            (q.index_axis(Axis(0), i), k.index_axis(Axis(0), i), v.index_axis(Axis(0), i));
        let a = per_item(i, q_i, k_i, v_i)?;
        output.index_axis_mut(Axis(0), i).assign(&a.output);
        weights.index_axis_mut(Axis(0), i).assign(&a.weights);
    }
    Ok(BatchedAttention { output, weights })
}
// ANCHOR_END: for_each_item

/// Checks that `Q`, `K` and `V` hold the same number `b` of items and that
/// the items' shapes fit as chapter 2's attention needs (checked even when
/// there are no items); returns `(b, n, m, d_v)`.
fn check_batch(
    q: &ArrayRef3<f32>,
    k: &ArrayRef3<f32>,
    v: &ArrayRef3<f32>,
) -> Result<(usize, usize, usize, usize), AttnError> {
    let b = q.len_of(Axis(0));
    if k.len_of(Axis(0)) != b || v.len_of(Axis(0)) != b {
        return Err(AttnError::BatchSizeMismatch {
            queries: b,
            keys: k.len_of(Axis(0)),
            values: v.len_of(Axis(0)),
        });
    }
    let (n, m, d_v) = (q.len_of(Axis(1)), k.len_of(Axis(1)), v.len_of(Axis(2)));
    let item = |x: &ArrayRef3<f32>| (x.len_of(Axis(1)), x.len_of(Axis(2)));
    if k.len_of(Axis(2)) != q.len_of(Axis(2)) {
        return Err(AttnError::KeyWidthMismatch { queries: item(q), keys: item(k) });
    }
    if v.len_of(Axis(1)) != m {
        return Err(AttnError::KeyValueCountMismatch { keys: item(k), values: item(v) });
    }
    // Before the stacked results are allocated: inputs of width 0 can be
    // small while their weights are not.
    check_total("the batch's weights (b×n×m)", &[b, n, m], MAX_ENTRIES)?;
    check_total("the batch's outputs (b×n×d_v)", &[b, n, d_v], MAX_ENTRIES)?;
    Ok((b, n, m, d_v))
}

// ANCHOR: worked_example
/// The chapter's worked example: 3 queries and 4 keys of width `d_k = 4`
/// (so `√d_k = 2`), and 4 values of width `d_v = 2`. Returns `(Q, K, V)`.
///
/// The keys are one-hot, so `QKᵀ` just reads off query entries. Query 0
/// points at key 0, query 1 at keys 1 and 2 equally, query 2 at nothing.
pub fn worked_example() -> (Array2<f32>, Array2<f32>, Array2<f32>) {
    let q = array![
        [4.0, 0.0, 0.0, 0.0], // scores 2, 0, 0, 0
        [0.0, 2.0, 2.0, 0.0], // scores 0, 1, 1, 0
        [0.0, 0.0, 0.0, 0.0], // scores 0, 0, 0, 0
    ];
    let k = array![
        [1.0, 0.0, 0.0, 0.0],
        [0.0, 1.0, 0.0, 0.0],
        [0.0, 0.0, 1.0, 0.0],
        [0.0, 0.0, 0.0, 1.0],
    ];
    let v = array![[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]];
    (q, k, v)
}
// ANCHOR_END: worked_example

// ANCHOR: sentence_example
/// A six-word sentence with hand-made 5-dimensional embeddings, used for the
/// chapter's heatmap. The features are
/// `[article, noun, verb, preposition, animal-or-thing]`; there are no learned
/// weights yet, so the chapter uses `Q = K = V = X`.
pub fn sentence_example() -> (Vec<&'static str>, Array2<f32>) {
    let words = vec!["the", "cat", "sat", "on", "the", "mat"];
    let x = array![
        [2.0, 0.0, 0.0, 0.0, 0.0], // the
        [0.0, 2.0, 0.0, 0.0, 1.0], // cat
        [0.0, 0.0, 2.0, 0.0, 0.5], // sat
        [0.0, 0.0, 0.0, 2.0, 0.0], // on
        [2.0, 0.0, 0.0, 0.0, 0.0], // the
        [0.0, 2.0, 0.0, 0.0, 1.0], // mat
    ];
    (words, x)
}
// ANCHOR_END: sentence_example

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_abs_diff_eq;
    use ndarray::stack;

    // ANCHOR: worked_example_test
    #[test]
    fn worked_example_matches_the_hand_computation() {
        let (q, k, v) = worked_example();
        let a = scaled_dot_product_attention(&q, &k, &v).unwrap();

        // By hand, in f64: scores are [2,0,0,0], [0,1,1,0], [0,0,0,0].
        let e = std::f64::consts::E;
        let (w00, w01) = (e * e / (e * e + 3.0), 1.0 / (e * e + 3.0));
        let (w10, w11) = (1.0 / (2.0 + 2.0 * e), e / (2.0 + 2.0 * e));
        let weights = array![[w00, w01, w01, w01], [w10, w11, w11, w10], [0.25, 0.25, 0.25, 0.25],];
        // Output row i = Σ_j w_ij v_j with v = [1,0], [0,1], [1,1], [0,0].
        let output = array![[w00 + w01, 2.0 * w01], [w10 + w11, 2.0 * w11], [0.5, 0.5],];
        assert_abs_diff_eq!(a.weights, weights.mapv(|w| w as f32), epsilon = 1e-6);
        assert_abs_diff_eq!(a.output, output.mapv(|o| o as f32), epsilon = 1e-6);
    }
    // ANCHOR_END: worked_example_test

    #[test]
    fn n_and_m_may_differ_and_shapes_follow() {
        let q = Array2::<f32>::ones((2, 8));
        let k = Array2::<f32>::ones((5, 8));
        let v = Array2::<f32>::ones((5, 3));
        let a = scaled_dot_product_attention(&q, &k, &v).unwrap();
        assert_eq!(a.output.dim(), (2, 3));
        assert_eq!(a.weights.dim(), (2, 5));
        for row in a.weights.rows() {
            assert_abs_diff_eq!(row.sum(), 1.0, epsilon = 1e-6);
        }
    }

    #[test]
    fn accepts_views_as_well_as_owned_arrays() {
        let (q, k, v) = worked_example();
        let owned = scaled_dot_product_attention(&q, &k, &v).unwrap();
        let viewed = scaled_dot_product_attention(&q.view(), &k.view(), &v.view()).unwrap();
        assert_eq!(owned, viewed);
    }

    // ANCHOR: shape_errors
    #[test]
    fn shape_errors_name_both_shapes() {
        let q = Array2::<f32>::zeros((3, 64));
        let k = Array2::<f32>::zeros((4, 32));
        let v = Array2::<f32>::zeros((4, 2));
        let err = scaled_dot_product_attention(&q, &k, &v).unwrap_err();
        assert_eq!(
            err.to_string(),
            "keys have d_k = 32 but queries have d_k = 64 (queries: 3×64, keys: 4×32)"
        );

        let k = Array2::<f32>::zeros((4, 64));
        let v = Array2::<f32>::zeros((5, 2));
        let err = scaled_dot_product_attention(&q, &k, &v).unwrap_err();
        assert_eq!(
            err.to_string(),
            "values have m = 5 rows but keys have m = 4 (keys: 4×64, values: 5×2)"
        );

        let empty = Array2::<f32>::zeros((0, 64));
        let err = scaled_dot_product_attention(&empty, &k, &v).unwrap_err();
        assert_eq!(err, AttnError::Empty { name: "queries", shape: (0, 64) });
        assert_eq!(
            err.to_string(),
            "queries has shape 0×64, which is empty: at least one row and one column are needed"
        );
    }
    // ANCHOR_END: shape_errors

    #[test]
    fn empty_keys_values_and_non_finite_inputs_are_errors() {
        let q = Array2::<f32>::zeros((3, 4));
        let none = Array2::<f32>::zeros((0, 4));
        let err = scaled_dot_product_attention(&q, &none, &none).unwrap_err();
        assert!(matches!(err, AttnError::Empty { name: "keys", .. }));
        let k = Array2::<f32>::zeros((2, 4));
        let thin = Array2::<f32>::zeros((2, 0));
        let err = scaled_dot_product_attention(&q, &k, &thin).unwrap_err();
        assert!(matches!(err, AttnError::Empty { name: "values", .. }));

        let mut bad = Array2::<f32>::zeros((2, 4));
        bad[[1, 2]] = f32::NAN;
        let err = scaled_dot_product_attention(&q, &bad, &k).unwrap_err();
        assert_eq!(err.to_string(), "keys must hold only finite numbers, got NaN");
    }

    #[test]
    fn sentence_example_weights_are_rows_of_probabilities() {
        let (words, x) = sentence_example();
        assert_eq!(words.len(), x.nrows());
        let a = scaled_dot_product_attention(&x, &x, &x).unwrap();
        // "cat" attends most to itself and to "mat", its fellow noun.
        let cat = a.weights.row(1);
        let best = cat.iter().cloned().fold(f32::MIN, f32::max);
        assert_eq!(cat[1], best);
        assert_eq!(cat[5], best);
        assert!(cat[5] > cat[2] && cat[2] > cat[0]);
    }

    #[test]
    fn batched_attention_equals_one_call_per_item() {
        let (q, k, v) = worked_example();
        let q2 = q.mapv(|x| -0.5 * x + 1.0); // a second, different problem
        let qb = stack![Axis(0), q, q2];
        let kb = stack![Axis(0), k, k];
        let vb = stack![Axis(0), v, v];
        let out = batched_attention(&qb, &kb, &vb).unwrap();
        assert_eq!(out.weights.dim(), (2, 3, 4));
        assert_eq!(out.output.dim(), (2, 3, 2));
        let first = scaled_dot_product_attention(&q, &k, &v).unwrap();
        let second = scaled_dot_product_attention(&q2, &k, &v).unwrap();
        assert_eq!(out.output.index_axis(Axis(0), 0), first.output);
        assert_eq!(out.output.index_axis(Axis(0), 1), second.output);
        assert_eq!(out.weights.index_axis(Axis(0), 0), first.weights);
        assert_eq!(out.weights.index_axis(Axis(0), 1), second.weights);

        let err = batched_attention(&qb, &kb, &vb.slice(ndarray::s![..1, .., ..])).unwrap_err();
        assert_eq!(err.to_string(), "batch sizes differ: queries 2, keys 2, values 1");
    }
}
