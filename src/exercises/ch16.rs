//! Chapter 16: sharing and forgetting keys.

use ndarray::{s, Array2};

use crate::error::AttnError;
use crate::multihead::MultiHeadAttention;
use crate::nn::AttentionWeights;

// ANCHOR: mean_pool
/// Exercise 1: a multi-head layer turned into a grouped-query layer of
/// `kv_heads` key/value heads, as Ainslie et al. (2023) convert a checkpoint: each
/// group's `W_K` and `W_V` columns are the mean of its heads' columns;
/// `W_Q` and `W_O` are kept. `kv_heads` must divide the layer's heads, and
/// the layer must be multi-head (every head its own keys) and without biases.
pub fn mean_pool_key_value_heads(
    layer: &MultiHeadAttention,
    kv_heads: usize,
) -> Result<MultiHeadAttention, AttnError> {
    let h = layer.h();
    if layer.kv_heads() != h || layer.weights().biases.is_some() {
        return Err(AttnError::InvalidArgument {
            name: "layer to pool",
            value: layer.kv_heads() as f64,
            requirement: "must be multi-head (h_kv = h) and without biases",
        });
    }
    if kv_heads == 0 || !h.is_multiple_of(kv_heads) {
        return Err(AttnError::InvalidArgument {
            name: "h_kv (key/value heads)",
            value: kv_heads as f64,
            requirement: "must divide the number of heads h",
        });
    }
    let (d, d_k, per_group) = (layer.d_model(), layer.d_k(), h / kv_heads);
    let pool = |w: &Array2<f32>| {
        let mut out = Array2::zeros((d, kv_heads * d_k));
        for i in 0..h {
            let j = i / per_group; // the group head i joins
            let mut group = out.slice_mut(s![.., j * d_k..(j + 1) * d_k]);
            group += &(&w.slice(s![.., i * d_k..(i + 1) * d_k]) / per_group as f32);
        }
        out
    };
    let w = layer.weights();
    let pooled = AttentionWeights::new(w.w_q.clone(), pool(&w.w_k), pool(&w.w_v), w.w_o.clone());
    MultiHeadAttention::from_weights(pooled, h)
}
// ANCHOR_END: mean_pool

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

    /// Keep W_Q and W_O; head i joins group i / (h / h_kv), and each group's W_K and W_V columns
    /// are the mean of its heads' columns. Build the result from the weights
    /// (`AttentionWeights::new`, `MultiHeadAttention::from_weights`). h_kv = 0, an h_kv that does
    /// not divide h, and a layer that is already grouped or has biases are errors.
    #[test]
    fn pooling_keeps_what_is_shared_and_averages_the_rest() {
        let mut rng = StdRng::seed_from_u64(7);
        let (d, h) = (8, 4);
        let x = crate::scaling::standard_normal(6, d, &mut rng);
        let layer = MultiHeadAttention::new(d, h, &mut rng).unwrap();
        // h_kv = h changes nothing.
        let same = mean_pool_key_value_heads(&layer, h).unwrap();
        assert_eq!(same.forward(&x, &x).unwrap(), layer.forward(&x, &x).unwrap());
        // A layer whose heads already share their group's keys and values
        // is the pooled layer, exactly.
        let grouped = MultiHeadAttention::grouped(d, h, 2, &mut rng).unwrap();
        let mha = grouped.to_multi_head();
        let pooled = mean_pool_key_value_heads(&mha, 2).unwrap();
        assert_eq!(pooled.weights(), grouped.weights());
        // Otherwise the mean changes the output, but keeps each group's mean.
        let pooled = mean_pool_key_value_heads(&layer, 1).unwrap();
        assert_eq!(pooled.kv_heads(), 1);
        let mean = layer.weights().w_k.sum_axis(ndarray::Axis(1)) / h as f32;
        let got = pooled.weights().w_k.sum_axis(ndarray::Axis(1));
        approx::assert_abs_diff_eq!(got, mean, epsilon = 1e-5);
        let out = |l: &MultiHeadAttention| l.forward(&x, &x).unwrap().output;
        assert!((out(&pooled) - out(&layer)).iter().any(|e| e.abs() > 1e-3));
        for g in [0, 3] {
            assert!(mean_pool_key_value_heads(&layer, g).is_err(), "h_kv = {g} of h = 4");
        }
        assert!(mean_pool_key_value_heads(&pooled, 1).is_err(), "already grouped");
    }
}
