//! Tests of `cache`.

use super::*;
use crate::masking::{causal_mask, masked_attention};
use crate::scaling::standard_normal;
use approx::assert_abs_diff_eq;
use ndarray::array;
use ndarray_rand::rand::{rngs::StdRng, Rng, SeedableRng};

/// A random self-attention problem of `t` tokens.
fn random_qkv(t: usize, rng: &mut StdRng) -> (Array2<f32>, Array2<f32>, Array2<f32>) {
    let d = rng.random_range(1..6);
    let d_v = rng.random_range(1..6);
    (standard_normal(t, d, rng), standard_normal(t, d, rng), standard_normal(t, d_v, rng))
}

// ANCHOR: kv_cache_test
#[test]
fn decoding_with_a_cache_reproduces_full_causal_attention() {
    let mut rng = StdRng::seed_from_u64(21);
    for n in [1, 2, 7, 33, 100] {
        let (q, k, v) = random_qkv(n, &mut rng);
        let full = masked_attention(&q, &k, &v, &causal_mask(n, n)).unwrap();
        let incremental = decode_with_cache(&q, &k, &v).unwrap();
        assert_abs_diff_eq!(incremental, full.output, epsilon = 1e-6);
    }
}
// ANCHOR_END: kv_cache_test

#[test]
fn the_cache_checks_widths() {
    let mut cache = KvCache::new(4, 2);
    assert!(cache.is_empty());
    let (q_t, v_t) = (array![1.0, 0.0, 0.0, 0.0], array![1.0, 2.0]);
    let err = cache.step(&q_t, &array![1.0, 0.0, 0.0], &v_t).unwrap_err();
    assert_eq!(err.to_string(), "the new key has width 3 but the cache expects width 4");
    assert!(cache.is_empty(), "a rejected token is not appended");
    let nan_value = cache.step(&q_t, &q_t, &array![f32::NAN, 0.0]);
    assert!(nan_value.is_err() && cache.is_empty(), "nor is a non-finite one");
    let wide_query = cache.step(&array![1.0, 0.0], &q_t, &v_t).unwrap_err();
    assert!(wide_query.to_string().starts_with("keys have d_k = 4 but queries have d_k = 2"));
    let out = cache.step(&q_t, &q_t, &v_t).unwrap();
    assert_eq!(out, v_t, "one token attends to itself only");
    assert_eq!(cache.len(), 1);
    let (q, k) = (Array2::<f32>::zeros((3, 4)), Array2::<f32>::zeros((2, 4)));
    let err = decode_with_cache(&q, &k, &Array2::zeros((2, 1))).unwrap_err();
    assert_eq!(err, AttnError::NotSelfAttention { queries: 3, keys: 2 });
}

#[test]
fn decode_flops_match_their_closed_forms() {
    let d = 512;
    for n in [1_u64, 2, 10, 1024, 4096] {
        let without = cumulative_flops(n, d, flops_per_token_without_cache).unwrap();
        let with = cumulative_flops(n, d, flops_per_token_with_cache).unwrap();
        let sum_t = n * (n + 1) / 2;
        let sum_t2 = n * (n + 1) * (2 * n + 1) / 6;
        assert_eq!(without, (8 * d * d * sum_t + 4 * d * sum_t2) as f64);
        assert_eq!(with, (8 * d * d * n + 4 * d * sum_t) as f64);
    }
    // Summing u64::MAX tokens one by one would never finish.
    assert!(cumulative_flops(u64::MAX, 0, flops_per_token_with_cache).is_err());
    // At t = 1 there is nothing to reuse: both cost the same.
    assert_eq!(flops_per_token_with_cache(1, d), flops_per_token_without_cache(1, d));
}
