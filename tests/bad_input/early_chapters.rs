//! Bad-input tests for public functions of chapters 1 to 11 that had none:
//! masks, softmax in place, the linear layer, batches, kernel scores, the
//! look-back scores, the backward passes, the schedule and the optimiser's
//! settings, and chapter 3's statistics.

use attn::AttnError;
use ndarray::{array, Array1, Array2, Array3, ArrayView2};

fn message<T>(r: Result<T, AttnError>) -> String {
    r.err().map(|e| e.to_string()).unwrap_or_else(|| "Ok".into())
}

/// Masks: windows of no width, sinks past the text, ranges that are not
/// queries before keys, and sizes that cannot be allocated.
#[test]
fn masks_refuse_windows_and_sizes_they_cannot_build() {
    use attn::masking::*;
    assert_eq!(
        band_mask(3, 2).unwrap(),
        array![[true, false, false], [true, true, false], [false, true, true]]
    );
    assert!(message(band_mask(3, 0)).contains("window"));
    assert!(band_mask(1 << 40, 2).is_err());
    assert!(sinks_and_window_mask(4, 1, 2).is_ok());
    assert!(sinks_and_window_mask(4, 1, 0).is_err());
    assert!(sinks_and_window_mask(1 << 40, 1, 2).is_err());
    assert!(window_mask(2..4, 0..4, 0, 2).is_ok());
    assert!(window_mask(0..1 << 40, 0..1 << 40, 0, 2).is_err());
    assert!(causal_mask_bottom_right(2, 3).is_ok());
    assert!(causal_mask_bottom_right(3, 2).is_err(), "more queries than keys");
    assert!(causal_mask_bottom_right(1 << 40, 1 << 40).is_err());
    let additive = additive_mask(&array![[true, false]]);
    assert_eq!(additive, array![[0.0, f32::NEG_INFINITY]]);
    assert!(fully_masked_row(&array![1.0, 2.0]).is_ok());
    assert!(fully_masked_row(&array![1.0, f32::NAN]).is_err());
}

/// Softmax in place, the linear layer, batches and kernel scores.
#[test]
fn softmax_in_place_layers_and_batches_refuse_what_they_cannot_compute() {
    use attn::linalg::{linear, linear_backward};
    use attn::softmax::{softmax_in_place, softmax_rows_in_place};
    let mut row = array![1.0_f32, f32::NAN];
    assert!(softmax_in_place(&mut row.view_mut()).is_err());
    let mut rows = array![[1.0_f32, 2.0], [f32::INFINITY, 0.0]];
    let e = message(softmax_rows_in_place(&mut rows.view_mut()));
    assert!(e.contains("(1, 0)") && e.contains("inf"), "{e}");
    let (x, w) = (Array2::<f32>::ones((2, 3)), Array2::<f32>::ones((3, 4)));
    assert!(linear("a test", &x, &w, None).is_ok());
    assert!(linear("a test", &x, &w.t(), None).is_err());
    assert!(linear("a test", &x, &w, Some(&Array1::ones(3))).is_err(), "a bias of 3 for 4");
    assert!(linear_backward(&x, &w, &Array2::ones((2, 4))).is_ok());
    assert!(linear_backward(&x, &w, &Array2::ones((2, 3))).is_err());
    // NaN in dY came out as NaN gradients, in an Ok.
    assert!(linear_backward(&x, &w, &Array2::from_elem((2, 4), f32::NAN)).is_err());
    let huge = Array2::from_elem((2, 4), 3e38_f32);
    assert!(message(linear_backward(&x, &w, &huge)).contains("dX"), "overflow");
    let (q, k) = (Array2::<f32>::ones((2, 3)), Array2::<f32>::ones((4, 3)));
    assert!(attn::attention::check_qkv(&q, &k, &Array2::ones((4, 2))).is_ok());
    assert!(attn::attention::check_qkv(&q, &k, &Array2::ones((3, 2))).is_err());
    assert!(attn::attention::check_qkv(&q, &k.t(), &Array2::ones((3, 2))).is_err());
    let attend = |_: usize, q: ArrayView2<f32>, k: ArrayView2<f32>, v: ArrayView2<f32>| {
        attn::scaled_dot_product_attention(&q, &k, &v)
    };
    let batch = Array3::<f32>::ones((2, 3, 4));
    assert!(attn::attention::for_each_item(&batch, &batch, &batch, attend).is_ok());
    let other = Array3::<f32>::ones((3, 3, 4));
    assert!(attn::attention::for_each_item(&batch, &other, &other, attend).is_err());
    // No widths, so tiny inputs, and 2^40 weights: refused, not allocated.
    let wide = Array3::<f32>::zeros((1, 1 << 20, 0));
    assert!(attn::attention::for_each_item(&wide, &wide, &wide, attend).is_err());
    use attn::origins::kernel_scores;
    assert!(kernel_scores(&array![0.0, 1.0], &array![0.5], 1.0).is_ok());
    for bandwidth in [0.0, -1.0, f32::NAN, f32::INFINITY] {
        assert!(kernel_scores(&array![0.0], &array![0.5], bandwidth).is_err(), "{bandwidth}");
    }
    assert!(kernel_scores(&array![f32::NAN], &array![0.5], 1.0).is_err());
    assert!(attn::position::look_back_scores(&Array2::ones((4, 4)), 1).is_ok());
    assert!(attn::position::look_back_scores(&Array2::ones((4, 3)), 1).is_err(), "an odd width");
    assert!(attn::position::look_back_scores(&Array2::from_elem((4, 4), f32::NAN), 1).is_err());
}

/// The backward passes: gradients of another shape, or not finite.
#[test]
fn backward_passes_refuse_gradients_that_do_not_fit() {
    use attn::nn::{
        attention_backward, attention_forward, layer_norm_backward, layer_norm_forward,
        softmax_backward,
    };
    let p = array![[0.5_f64, 0.5], [1.0, 0.0]];
    assert!(softmax_backward(&p, &Array2::ones((2, 2))).is_ok());
    assert!(softmax_backward(&p, &Array2::ones((2, 3))).is_err());
    // A NaN in dP came out as NaN gradients, in an Ok.
    assert!(softmax_backward(&p, &Array2::from_elem((2, 2), f64::NAN)).is_err());
    let (q, k, v) = (Array2::<f64>::ones((2, 3)), Array2::ones((4, 3)), Array2::ones((4, 2)));
    let (_, cache) = attention_forward(&q, &k, &v, None, 3f64.sqrt()).unwrap();
    assert!(attention_forward(&q, &k, &v, None, 0.0).is_err(), "a scale of 0");
    assert!(attention_forward(&q, &k, &v, Some(&Array2::from_elem((2, 3), true)), 1.0).is_err());
    assert!(attention_backward(&q, &k, &v, &cache, &Array2::ones((2, 2))).is_ok());
    assert!(attention_backward(&q, &k, &v, &cache, &Array2::ones((2, 3))).is_err());
    assert!(attention_backward(&q, &k.t(), &v, &cache, &Array2::ones((2, 2))).is_err());
    let (gamma, beta) = (Array1::<f64>::ones(3), Array1::zeros(3));
    let (_, ln) = layer_norm_forward(&q, &gamma, &beta, 1e-5).unwrap();
    assert!(layer_norm_forward(&q, &Array1::ones(2), &beta, 1e-5).is_err());
    assert!(layer_norm_forward(&q, &gamma, &beta, -1.0).is_err(), "a negative ε");
    assert!(layer_norm_backward(&ln, &gamma, &Array2::ones((2, 3))).is_ok());
    assert!(layer_norm_backward(&ln, &gamma, &Array2::ones((3, 3))).is_err());
    assert!(layer_norm_backward(&ln, &Array1::ones(4), &Array2::ones((2, 3))).is_err());
}

/// The schedule and the optimiser's settings: steps past the training,
/// a floor outside [0, 1], betas outside [0, 1), decay that is negative,
/// and a norm to clip to that is not positive.
#[test]
fn the_schedule_and_the_optimiser_refuse_settings_outside_their_ranges() {
    use attn::model::TinyTransformer;
    use attn::nn::{clip_gradient_norm, warmup_cosine, warmup_cosine_to, Adam};
    assert_eq!(warmup_cosine(0, 10, 0).unwrap(), 1.0);
    assert!(warmup_cosine(10, 10, 0).is_err());
    assert!(warmup_cosine(0, 10, 11).is_err());
    assert!(warmup_cosine_to(0, 10, 0, 1.5).is_err());
    assert!(warmup_cosine_to(0, 10, 0, f64::NAN).is_err());
    let net = TinyTransformer::new(crate::small(), 1).unwrap();
    let adam = || Adam::new(&net, 1e-3).unwrap();
    for betas in [(1.0, 0.9), (0.9, -0.1), (f64::NAN, 0.9)] {
        assert!(adam().with_betas_and_eps(betas, 1e-8).is_err(), "{betas:?}");
    }
    assert!(adam().with_betas_and_eps((0.9, 0.99), 0.0).is_err(), "ε of 0");
    let decayed = net.matrices();
    assert!(adam().with_weight_decay(0.1, &decayed).is_ok());
    assert!(adam().with_weight_decay(-0.1, &decayed).is_err());
    assert!(adam().with_weight_decay(0.1, &decayed[1..]).is_err(), "one flag short");
    let mut grads = net.zeros_like();
    assert_eq!(clip_gradient_norm(&mut grads, 1.0).unwrap(), 0.0);
    for max in [0.0, -1.0, f64::NAN] {
        assert!(clip_gradient_norm(&mut grads, max).is_err(), "{max}");
    }
}

/// Chapter 3's statistics: a variance needs two finite samples, the
/// experiment at least two draws, the Jacobian a finite distribution it
/// can allocate; the frequencies a width they can allocate.
#[test]
fn statistics_refuse_samples_they_cannot_summarise() {
    use attn::scaling::*;
    assert_eq!(sample_variance(&array![1.0, 3.0]).unwrap(), 2.0);
    for xs in [array![], array![1.0], array![1.0, f32::INFINITY]] {
        assert!(sample_variance(&xs).is_err(), "{xs}"); // NaN or ∞ before
    }
    assert!(variance_experiment(1, 0).is_err());
    assert!(variance_experiment(1 << 40, 0).is_err());
    assert!(variance_experiment(8, 0).unwrap().iter().all(|r| r.scaled.is_finite()));
    assert!(softmax_jacobian(&array![0.5, 0.5]).is_ok());
    assert!(softmax_jacobian(&array![0.5, f32::NAN]).is_err());
    assert!(softmax_jacobian(&Array1::zeros(1 << 16)).is_err(), "2^32 entries");
    assert_eq!(entropy(&array![0.5_f64, 0.5, 0.0]), 2f64.ln());
    assert_eq!(frobenius_norm(&array![[3.0, 4.0]]), 5.0);
    assert_eq!(attn::position::frequencies(4).unwrap().len(), 2);
    assert!(attn::position::frequencies(usize::MAX).is_err());
}

/// Projections and additive scores: inputs of another width, or not
/// finite, are errors.
#[test]
fn projections_and_additive_scores_refuse_inputs_of_another_width() {
    use attn::origins::AdditiveScore;
    use attn::projection::Projections;
    use ndarray_rand::rand::{rngs::StdRng, SeedableRng};
    let mut rng = StdRng::seed_from_u64(0);
    let p = Projections::new(4, 3, 2, &mut rng).unwrap();
    let x = Array2::<f32>::ones((5, 4));
    assert!(p.self_attention(&x).is_ok());
    assert!(p.self_attention(&Array2::ones((5, 3))).is_err());
    assert!(p.self_attention(&Array2::from_elem((5, 4), f32::NAN)).is_err());
    assert!(p.cross_attention(&x, &Array2::ones((2, 4))).is_ok());
    assert!(p.cross_attention(&x, &Array2::ones((2, 5))).is_err());
    assert!(p.cross_attention(&x, &Array2::ones((0, 4))).is_err(), "no encoder tokens");
    let score = AdditiveScore::new(4, 3, 2, &mut rng).unwrap();
    assert!(score.scores(&x, &Array2::ones((2, 3))).is_ok());
    assert!(score.scores(&x, &Array2::ones((2, 4))).is_err());
    assert!(score
        .scores(&Array2::from_elem((1, 4), f32::INFINITY), &Array2::ones((2, 3)))
        .is_err());
}

/// Chapter 11's multi-head attention in parts: heads that do not divide
/// the width, key/value heads that do not divide the heads, inputs and
/// gradients of another shape.
#[test]
fn multi_head_attention_s_parts_refuse_what_does_not_fit() {
    use attn::nn::{mha_backward, mha_forward, AttentionWeights, Heads};
    let m = |seed: f64| Array2::from_shape_fn((4, 4), |(i, j)| ((i * 4 + j) as f64 * seed).sin());
    let w = AttentionWeights::new(m(0.1), m(0.2), m(0.3), m(0.4));
    let x = m(0.5).slice(ndarray::s![..3, ..]).to_owned();
    assert!(w.queries(&x).is_ok() && w.keys(&x).is_ok());
    assert!(w.queries(&x.t()).is_err() && w.keys(&Array2::ones((3, 5))).is_err());
    assert!(w.output(&Array2::ones((3, 3))).is_err());
    let no_mask = |_: usize| None;
    let heads = Heads::new(3, 3, 2);
    let (out, cache) = mha_forward(&x, &x, &w, heads, no_mask).unwrap();
    assert!(mha_backward(&cache, &x, &x, &w, heads, &out).is_ok());
    assert!(mha_backward(&cache, &x, &x, &w, heads, &out.t().to_owned()).is_err());
    let nan = Array2::from_elem((3, 4), f64::NAN);
    assert!(mha_backward(&cache, &x, &x, &w, heads, &nan).is_err());
    for bad in
        [Heads::new(3, 3, 3), Heads::new(3, 3, 0), heads.with_kv_heads(0), heads.with_kv_heads(3)]
    {
        assert!(mha_forward(&x, &x, &w, bad, no_mask).is_err(), "{bad:?}");
    }
    assert!(mha_forward(&x, &x, &w, Heads::new(2, 3, 2), no_mask).is_err(), "n of another x");
    use attn::rope_scaling::RopeScaling;
    let slower = heads.rotary(RopeScaling::Linear { factor: 0.5 });
    let e = mha_forward(&x, &x, &w, slower, no_mask).unwrap_err().to_string();
    assert!(e.contains("scale factor"), "{e}");
    let odd = Heads::new(3, 3, 4).rotary(RopeScaling::None); // d_k = 1
    assert!(mha_forward(&x, &x, &w, odd, no_mask).is_err(), "an odd d_k with RoPE");
}

/// The activations and their derivatives, scalar functions: any finite
/// input, the largest included, gives a finite output (NaN in is NaN out,
/// as for any float function). The tanh GELU's derivative was NaN past
/// about 1e102, where `x³` overflows while `1 − tanh²` is 0.
#[test]
fn activations_are_finite_for_every_finite_input() {
    use attn::nn::{gelu, gelu_erf, Activation};
    let xs =
        [0.0, -0.0, 1e-300, -1e-300, 3.0, -3.0, 1e10, -1e10, 1e300, -1e300, f64::MAX, f64::MIN];
    for x in xs {
        assert!(gelu(x).is_finite() && gelu_erf(x).is_finite(), "{x}");
        for a in [Activation::Relu, Activation::Gelu, Activation::GeluErf] {
            assert!(a.apply(x).is_finite() && a.derivative(x).is_finite(), "{a:?} at {x}");
        }
        let y = (x as f32).clamp(f32::MIN, f32::MAX);
        assert!(
            attn::approximate::elu_plus_one(y).is_finite()
                && attn::approximate::elu_plus_one(y) >= 0.0,
            "{y}"
        );
    }
}
