use attn::approximate::{causal_linear_attention, linear_attention, local_attention};
use attn::block::residual;
use attn::block::{LayerNorm, Norm};
use attn::cache::{cumulative_flops, flops_per_token_with_cache};
use attn::complexity::projection_flops;
use attn::exercises::ch02::softmax_with_temperature;
use attn::exercises::ch09::chunked_softmax;
use attn::masking::{biased_attention, masked_attention, masked_fill};
use attn::model::{schedule, ModelConfig, TinyTransformer};
use attn::multihead::MultiHeadAttention;
use attn::position::alibi_bias;
use attn::position::rope;
use attn::projection::init_weight;
use attn::softmax::{softmax, softmax_rows};
use attn::tiled::tiled_attention;
use attn::{scaled_dot_product_attention, AttnError};
use ndarray::{array, Array2};

use crate::{rng, small, training};

/// Class 1: a NaN or +∞ score is an error, never a weight of about 0, and
/// an all-NaN row is not mistaken for a fully masked one.
#[test]
fn the_softmax_family_rejects_nan_and_plus_infinity() {
    let nan = softmax(&array![f32::NAN, 0.0]).unwrap_err();
    assert_eq!(
        nan.to_string(),
        "score (0, 0) is NaN: softmax needs finite scores, or −∞ for a dropped key"
    );
    assert!(softmax(&array![f32::NAN, f32::NAN]).is_err());
    assert!(softmax(&array![0.0, f32::INFINITY]).is_err());
    let rows = softmax_rows(&array![[0.0, 1.0], [2.0, f32::NAN]]).unwrap_err();
    assert!(matches!(rows, AttnError::InvalidScore { position: (1, 1), .. }));
    // −∞ is a dropped key, and a row of them is all zeros by design.
    assert_eq!(softmax(&array![f32::NEG_INFINITY, f32::NEG_INFINITY]).unwrap(), array![0.0, 0.0]);
    // The same mechanism elsewhere.
    let x = Array2::<f32>::ones((2, 2));
    let mut bias = Array2::zeros((2, 2));
    bias[[0, 1]] = f32::NAN;
    let err = biased_attention(&x, &x, &x, &bias).unwrap_err();
    assert_eq!(err.to_string(), "bias must hold finite numbers, or −∞ for a dropped key, got NaN");
    assert!(alibi_bias(3, f32::INFINITY).is_err());
    assert!(alibi_bias(3, f32::NAN).is_err());
    assert!(chunked_softmax(&array![f32::INFINITY, 0.0], 1).is_err());
    let tiny = softmax_with_temperature(&array![-1.0, -2.0], 1e-45).unwrap_err();
    assert_eq!(
        tiny.to_string(),
        "temperature is so small that x / τ overflows f32, got 0.000000000000000000000000000000000000000000001"
    );
}

/// Class 2: finite inputs whose scores overflow `f32` are reported as such,
/// by every attention function, instead of giving wrong weights or a row of
/// zeros that looks fully masked.
#[test]
fn scores_that_overflow_are_an_error_not_wrong_weights() {
    let q = array![[1e20_f32], [1.0]];
    let k = array![[1e20_f32], [-1e20]];
    let v = array![[1.0_f32], [2.0]];
    let err = scaled_dot_product_attention(&q, &k, &v).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the scores QKᵀ/√d_k overflow f32: entry (0, 0) is inf although every input is \
         finite (scale the inputs down)"
    );
    assert!(matches!(tiled_attention(&q, &k, &v, false), Err(AttnError::Overflow { .. })));
    assert!(matches!(tiled_attention(&q, &k, &v, true), Err(AttnError::Overflow { .. })));
    let keep = Array2::from_elem((2, 2), true);
    assert!(matches!(masked_attention(&q, &k, &v, &keep), Err(AttnError::Overflow { .. })));
    let q2 = array![[1e20_f32], [1e20]];
    assert!(local_attention(&q2, &q2, &v, 2).is_err());
    // Values so large that the weighted sum overflows.
    let big_v = array![[3e38_f32], [3e38]];
    let small = array![[0.0_f32], [0.0]];
    let output = scaled_dot_product_attention(&small, &small, &big_v);
    assert!(output.is_ok_and(|a| a.output.iter().all(|o| o.is_finite())));
    // Linear attention's normaliser underflows to 0 for very negative inputs.
    let low = array![[-200.0_f32], [-200.0]];
    assert!(linear_attention(&low, &low, &v).is_err());
    assert!(causal_linear_attention(&low, &low, &v).is_err());
}

/// Class 7: shapes that do not fit are errors of ours, not panics inside
/// ndarray, and a 1×m mask is not broadcast silently.
#[test]
fn shapes_are_checked_before_ndarray_sees_them() {
    let mut scores = Array2::<f32>::zeros((3, 4));
    let err =
        masked_fill(&mut scores, &Array2::from_elem((1, 4), false), f32::NEG_INFINITY).unwrap_err();
    assert_eq!(err.to_string(), "the mask is 1×4 but the scores are 3×4 (n queries × m keys)");
    let ln = LayerNorm::new(4);
    let x = Array2::<f32>::zeros((3, 4));
    let wrong = residual(&x, &ln, Norm::Pre, |_| Ok(Array2::zeros((1, 4)))).unwrap_err();
    assert_eq!(
        wrong.to_string(),
        "a sub-layer's output and its input must have the same shape, but they are 1×4 and 3×4"
    );
    assert!(residual(&x, &ln, Norm::Post, |_| Ok(Array2::zeros((3, 2)))).is_err());
}

/// Class 9: no integer overflow: a panic in debug builds, a wrapped value
/// in release.
#[test]
fn sizes_and_positions_do_not_overflow() {
    assert!(projection_flops(u64::MAX, u64::MAX).is_finite());
    assert!(cumulative_flops(u64::MAX, 0, flops_per_token_with_cache).is_err());
    let x = Array2::<f32>::zeros((2, 4));
    assert!(rope(&x, usize::MAX).is_err());
    let huge = ModelConfig { k: usize::MAX, ..small() };
    assert!(huge.check().is_err());
    assert!(TinyTransformer::new(huge, 0).is_err());
    assert!(schedule(usize::MAX, &training(1e-3)).is_err());
}

/// Class 11: the small helpers answer degenerate input with an error, not
/// a panic or a NaN.
#[test]
fn small_helpers_handle_degenerate_input() {
    use attn::approximate::{error_experiment, relative_error};
    use attn::block::row_statistics;
    use attn::complexity::fitted_exponent;
    use attn::position::largest_norm_change;
    use report::ch05::head_entropies;
    use report::show::{matrix, table};
    assert!(row_statistics(&Array2::<f32>::zeros((3, 0))).is_err());
    assert!(error_experiment(0, 1).is_err());
    assert_eq!(table(&["a", "b"], &[vec!["1".into()]]), "a  b\n1");
    assert!(matrix(&array![[1.0_f32]], usize::MAX).len() < 100);
    let zeros = Array2::<f32>::zeros((2, 2));
    assert!(relative_error(&zeros, &zeros).is_err(), "0 / 0");
    assert!(fitted_exponent(&[(1.0, 1.0), (f64::INFINITY, 2.0)]).is_err());
    let nan = ndarray::Array3::from_elem((1, 2, 2), f32::NAN);
    assert!(head_entropies(&nan).is_err());
    let mut rows = Array2::<f32>::ones((2, 2));
    rows[[1, 0]] = f32::NAN;
    assert!(largest_norm_change(&Array2::ones((2, 2)), &rows).is_err());
}

/// Class 12: messages name what the caller passed, in its own words.
#[test]
fn messages_name_the_argument_the_caller_passed() {
    let net = TinyTransformer::new(small(), 0).unwrap();
    assert_eq!(
        net.forward(&[]).err().unwrap().to_string(),
        "batch must hold at least one sequence, got 0"
    );
    assert_eq!(
        MultiHeadAttention::new(0, 1, &mut rng()).unwrap_err().to_string(),
        "d_model must be at least 1, got 0"
    );
    // A count above 2^24 is printed exactly, not rounded through f32.
    let err = attn::cache::cumulative_flops(16_777_217 + (1 << 24), 1, flops_per_token_with_cache)
        .unwrap_err();
    assert!(err.to_string().ends_with("got 33554433"), "{err}");
    assert_eq!(
        net.loss(&[vec![1, 2]], &[None, Some(11)]).unwrap_err().to_string(),
        "target must be less than the vocabulary's size (11), got 11"
    );
    // A layer's input that is not finite is named as the layer's input.
    let mha = MultiHeadAttention::new(8, 2, &mut rng()).unwrap();
    let mut x = Array2::<f32>::zeros((3, 8));
    x[[0, 0]] = f32::NAN;
    assert_eq!(
        mha.forward(&x, &x).unwrap_err().to_string(),
        "query input must hold only finite numbers, got NaN"
    );
}

/// Sizes that would need more memory than any machine has are errors, not
/// allocation failures that abort the process.
#[test]
fn sizes_beyond_memory_are_errors() {
    use attn::position::{offset_map, sinusoidal};
    assert!(sinusoidal(usize::MAX / 2, 2).is_err());
    assert!(sinusoidal(1 << 20, 1 << 12).is_err());
    assert!(offset_map(1, 1 << 16).is_err());
    assert!(alibi_bias(1 << 16, 0.5).is_err());
    assert!(attn::masking::key_padding_mask(1 << 20, 3, 1 << 20, attn::masking::Padding::Right)
        .is_err());
    assert!(init_weight(1 << 20, 1 << 20, &mut rng()).is_err());
    assert!(attn::approximate::error_experiment(1 << 16, 1).is_err());
}
