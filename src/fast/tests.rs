//! Tests of `fast`.

use super::*;
use crate::masking::{causal_mask, masked_attention};
use crate::scaled_dot_product_attention;
use crate::scaling::standard_normal;
use approx::assert_abs_diff_eq;
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

#[test]
fn fast_attention_equals_naive_attention_with_and_without_the_mask() {
    let mut rng = StdRng::seed_from_u64(77);
    for (n, m, d_k, d_v) in crate::tiled::tests::SHAPES {
        let q = standard_normal(n, d_k, &mut rng);
        let k = standard_normal(m, d_k, &mut rng);
        let v = standard_normal(m, d_v, &mut rng);
        let naive = scaled_dot_product_attention(&q, &k, &v).unwrap().output;
        assert_abs_diff_eq!(
            fast_attention(&q, &k, &v, false).unwrap(),
            naive,
            epsilon = 1e-5
        );
        let naive = masked_attention(&q, &k, &v, &causal_mask(n, m))
            .unwrap()
            .output;
        assert_abs_diff_eq!(
            fast_attention(&q, &k, &v, true).unwrap(),
            naive,
            epsilon = 1e-5
        );
    }
}

#[test]
fn the_fast_multihead_layer_equals_the_layer_of_chapter_5() {
    let mut rng = StdRng::seed_from_u64(9);
    for (n, m, d_model, h) in [(7, 7, 32, 4), (130, 70, 64, 8), (300, 300, 48, 3)] {
        let layer = MultiHeadAttention::new(d_model, h, &mut rng).unwrap();
        let x_q = standard_normal(n, d_model, &mut rng);
        let x_kv = standard_normal(m, d_model, &mut rng);
        let expected = layer.forward(&x_q, &x_kv).unwrap().output;
        assert_abs_diff_eq!(
            fast_multihead(&layer, &x_q, &x_kv).unwrap(),
            expected,
            epsilon = 1e-5
        );
    }
    let layer = MultiHeadAttention::new(8, 2, &mut rng).unwrap();
    let wrong = Array2::<f32>::zeros((3, 6));
    assert!(fast_multihead(&layer, &wrong, &wrong).is_err());
}

#[test]
fn one_thread_and_two_give_the_same_bits() {
    let mut rng = StdRng::seed_from_u64(5);
    let (q, k, v) = (
        standard_normal(300, 32, &mut rng),
        standard_normal(300, 32, &mut rng),
        standard_normal(300, 16, &mut rng),
    );
    let on = |threads| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| fast_attention(&q, &k, &v, true).unwrap())
    };
    assert_eq!(on(1), on(2));
}

#[test]
fn growing_scores_are_rescaled_and_overflow_is_an_error() {
    let (n, m, d) = (3, 1000, 2);
    let q = Array2::from_elem((n, d), 10.0_f32);
    let k = Array2::from_shape_fn((m, d), |(j, _)| j as f32 / 10.0);
    let v = Array2::from_shape_fn((m, 1), |(j, _)| (j % 7) as f32);
    let naive = scaled_dot_product_attention(&q, &k, &v).unwrap().output;
    assert_abs_diff_eq!(
        fast_attention(&q, &k, &v, false).unwrap(),
        naive,
        epsilon = 1e-4
    );
    let huge = Array2::from_elem((2, 2), 3e38_f32);
    assert!(fast_attention(&huge, &huge, &huge, false).is_err());
}
