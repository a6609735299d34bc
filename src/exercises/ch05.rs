//! Chapter 5, exercise 3: one head's weights, the slow way.

use ndarray::{s, Array2, ArrayRef2};

use crate::attention::check_qkv;
use crate::check::{check_model_width, check_size};
use crate::error::AttnError;
use crate::multihead::MultiHeadAttention;
use crate::softmax::softmax_rows;

// ANCHOR: head_weights
/// The `n×m` weights of head `head` of `layer`, computed on their own.
///
/// Take the head's `d_k` columns of `W_Q` and `W_K`, project, and softmax the
/// scores divided by `√d_k`, the head's width (not `√d_model`). A head past
/// the layer's, inputs the layer refuses, and weights too large to hold are
/// errors.
pub fn head_weights(
    layer: &MultiHeadAttention,
    x_q: &ArrayRef2<f32>,
    x_kv: &ArrayRef2<f32>,
    head: usize,
) -> Result<Array2<f32>, AttnError> {
    if head >= layer.h() {
        return Err(AttnError::InvalidArgument {
            name: "head",
            value: head as f64,
            requirement: "must be less than the layer's number of heads",
        });
    }
    check_model_width("query input", x_q, layer.d_model())?;
    check_model_width("key/value input", x_kv, layer.d_model())?;
    check_size("the head's weights", x_q.nrows(), x_kv.nrows())?; // n×m must fit in memory
    let d_k = layer.d_k();
    let columns = s![.., head * d_k..(head + 1) * d_k];
    let w = layer.weights();
    let mut q = x_q.dot(&w.w_q.slice(columns));
    let mut k = x_kv.dot(&w.w_k.slice(columns));
    if let Some(b) = &w.biases {
        // A layer with biases (chapter 15's): the head's entries of b_Q, b_K.
        q += &b.b_q.slice(s![head * d_k..(head + 1) * d_k]);
        k += &b.b_k.slice(s![head * d_k..(head + 1) * d_k]);
    }
    check_qkv(&q, &k, &k)?; // empty or non-finite inputs, as the layer rejects them
    softmax_rows(&(q.dot(&k.t()) / (d_k as f32).sqrt()))
}
// ANCHOR_END: head_weights

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scaling::standard_normal;
    use approx::assert_abs_diff_eq;
    use ndarray::Axis;
    use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

    /// Head i uses columns i·d_k … (i+1)·d_k of W_Q and W_K (the layer's `weights()`, `d_k()`,
    /// `h()`): project, score with QKᵀ/√d_k (the head's width, not d_model's) and take the row
    /// softmax (`attn::softmax::softmax_rows`). A head index ≥ h is an error
    /// (`AttnError::InvalidArgument { name, value, requirement }`): the test asks for head 4 of 4.
    // ANCHOR: head_weights_test
    #[test]
    fn each_head_matches_the_layer() {
        let mut rng = StdRng::seed_from_u64(4);
        let layer = MultiHeadAttention::new(32, 4, &mut rng).unwrap();
        let (x_q, x_kv) = (standard_normal(5, 32, &mut rng), standard_normal(7, 32, &mut rng));
        let all = layer.forward(&x_q, &x_kv).unwrap().weights;
        for head in 0..4 {
            let one = head_weights(&layer, &x_q, &x_kv, head).unwrap();
            assert_abs_diff_eq!(one, all.index_axis(Axis(0), head), epsilon = 1e-6);
        }
        assert!(head_weights(&layer, &x_q, &x_kv, 4).is_err(), "head 4 of 4 must be an error");
    }
    // ANCHOR_END: head_weights_test

    /// A layer may carry biases (`weights().biases`, an `Option` whose `b_q` and `b_k` are d_model
    /// long): add head i's slice of each to its projected queries and keys before scoring.
    #[test]
    fn each_head_matches_a_layer_with_biases() {
        let mut rng = StdRng::seed_from_u64(5);
        let biases = [(); 4].map(|_| standard_normal(1, 32, &mut rng).remove_axis(Axis(0)));
        let layer = MultiHeadAttention::new(32, 4, &mut rng).unwrap().with_biases(biases.into());
        let layer = layer.unwrap();
        let (x_q, x_kv) = (standard_normal(5, 32, &mut rng), standard_normal(7, 32, &mut rng));
        let all = layer.forward(&x_q, &x_kv).unwrap().weights;
        for head in 0..4 {
            let one = head_weights(&layer, &x_q, &x_kv, head).unwrap();
            assert_abs_diff_eq!(one, all.index_axis(Axis(0), head), epsilon = 1e-5);
        }
    }
}
