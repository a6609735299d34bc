//! Tests of `grad`.

use super::*;
use ndarray_rand::rand::SeedableRng;

/// The tolerance of every check: central differences with `δ = 1e-5`
/// in `f64` are good to about `1e-10`; a wrong formula is off by O(1).
const TOLERANCE: f64 = 1e-6;

// ANCHOR: attention_gradient_test
#[test]
fn attention_gradients_match_finite_differences_with_and_without_a_mask() {
    for seed in 0..20 {
        assert!(check_attention(seed, false).unwrap() < TOLERANCE, "seed {seed}");
        assert!(check_attention(seed, true).unwrap() < TOLERANCE, "seed {seed}, masked");
    }
}
// ANCHOR_END: attention_gradient_test

#[test]
fn every_backward_pass_matches_finite_differences() {
    for seed in 0..10 {
        for (name, error) in all_checks(seed).unwrap() {
            assert!(error < TOLERANCE, "{name}, seed {seed}: {error:e}");
        }
    }
}

#[test]
fn every_activation_s_derivative_matches_finite_differences() {
    for activation in [Activation::Relu, Activation::Gelu, Activation::GeluErf] {
        for i in 0..=80 {
            let x = i as f64 / 10.0 - 4.0 + 0.05; // never exactly ReLU's kink
            let numeric = (activation.apply(x + 1e-6) - activation.apply(x - 1e-6)) / 2e-6;
            let error = (activation.derivative(x) - numeric).abs();
            assert!(error < 1e-8, "{activation:?} at x = {x}: {error:e}");
        }
    }
}

#[test]
fn cross_entropy_ignores_rows_without_a_target_and_is_ln_classes_when_uniform() {
    let z = Matrix::zeros((2, 5));
    let (loss, dz) = cross_entropy(&z, &[Some(3), None]).unwrap();
    assert!((loss - 5f64.ln()).abs() < 1e-12);
    assert!(dz.row(1).iter().all(|&g| g == 0.0));
}

#[test]
fn the_f64_forward_passes_agree_with_the_crate() {
    let mut rng = StdRng::seed_from_u64(96);
    let (q, k, v) = (
        normal_matrix(5, 8, &mut rng),
        normal_matrix(6, 8, &mut rng),
        normal_matrix(6, 3, &mut rng),
    );
    let f32s = |x: &Matrix| x.mapv(|a| a as f32);
    let ours = attention_forward(&q, &k, &v, None, 8f64.sqrt()).unwrap().0;
    let crate_f32 =
        crate::scaled_dot_product_attention(&f32s(&q), &f32s(&k), &f32s(&v)).unwrap().output;
    assert!((ours.mapv(|a| a as f32) - crate_f32).iter().all(|d| d.abs() < 1e-5));
    let x = normal_matrix(3, 8, &mut rng);
    let ln = crate::block::LayerNorm::new(8).forward(&f32s(&x)).unwrap();
    let (ones, zeros) = (ndarray::Array1::ones(8), ndarray::Array1::zeros(8));
    let ours = layer_norm_forward(&x, &ones, &zeros, 1e-5).unwrap().0;
    assert!((ours.mapv(|a| a as f32) - ln).iter().all(|d| d.abs() < 1e-5));
    assert!((crate::nn::gelu(0.7_f64) as f32 - crate::nn::gelu(0.7_f32)).abs() < 1e-6);
}
