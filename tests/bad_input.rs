//! Contract 4 of the book: bad input gets a clear, typed error. Never a
//! panic, never a hidden NaN, never a silently wrong answer. One test per
//! class of defect that a reader calling the crate could meet; each failed
//! on the crate before it was fixed.

use attn::approximate::{causal_linear_attention, linear_attention, local_attention};
use attn::block::{residual, Transformer};
use attn::block::{Activation, Config, DecoderLayer, EncoderLayer, FeedForward, LayerNorm, Norm};
use attn::complexity::projection_flops;
use attn::exercises::ch02::softmax_with_temperature;
use attn::exercises::ch09::chunked_softmax;
use attn::masking::{biased_attention, masked_attention, masked_fill};
use attn::masking::{cumulative_flops, flops_per_token_with_cache};
use attn::model::{
    inputs_and_targets, schedule, small_problem, train, ModelConfig, Task, TinyTransformer,
    TrainConfig,
};
use attn::multihead::MultiHeadAttention;
use attn::nn::{Adam, Parameters};
use attn::position::alibi_bias;
use attn::position::rope;
use attn::projection::{init_statistics, init_weight, Projections};
use attn::softmax::{softmax, softmax_rows};
use attn::tiled::tiled_attention;
use attn::{scaled_dot_product_attention, AttnError};
use ndarray::{array, Array2};
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

fn rng() -> StdRng {
    StdRng::seed_from_u64(0)
}

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
    assert!(matches!(
        rows,
        AttnError::InvalidScore {
            position: (1, 1),
            ..
        }
    ));
    // −∞ is a dropped key, and a row of them is all zeros by design.
    assert_eq!(
        softmax(&array![f32::NEG_INFINITY, f32::NEG_INFINITY]).unwrap(),
        array![0.0, 0.0]
    );
    // The same mechanism elsewhere.
    let x = Array2::<f32>::ones((2, 2));
    let mut bias = Array2::zeros((2, 2));
    bias[[0, 1]] = f32::NAN;
    let err = biased_attention(&x, &x, &x, &bias).unwrap_err();
    assert_eq!(
        err.to_string(),
        "bias must hold finite numbers, or −∞ for a dropped key, got NaN"
    );
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
    assert!(matches!(
        tiled_attention(&q, &k, &v, false),
        Err(AttnError::Overflow { .. })
    ));
    assert!(matches!(
        tiled_attention(&q, &k, &v, true),
        Err(AttnError::Overflow { .. })
    ));
    let keep = Array2::from_elem((2, 2), true);
    assert!(matches!(
        masked_attention(&q, &k, &v, &keep),
        Err(AttnError::Overflow { .. })
    ));
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

/// Class 3: constructors that return `Result` return an error, not a panic,
/// for sizes of 0.
#[test]
fn constructors_reject_sizes_of_zero() {
    let c = Config {
        d_model: 8,
        h: 2,
        d_ff: 0,
        activation: Activation::Relu,
        norm: Norm::Post,
    };
    assert!(EncoderLayer::new(c, &mut rng()).is_err());
    assert!(DecoderLayer::new(c, &mut rng()).is_err());
    assert!(Transformer::new(c, 2, &mut rng()).is_err());
    assert!(FeedForward::new(8, 0, Activation::Gelu, &mut rng()).is_err());
    assert!(FeedForward::new(0, 8, Activation::Gelu, &mut rng()).is_err());
    assert!(Projections::new(0, 4, 4, &mut rng()).is_err());
    assert!(Projections::new(4, 0, 4, &mut rng()).is_err());
    let err = init_weight(0, 3, &mut rng()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "weight matrix has shape 0×3, which is empty: at least one row and one column are needed"
    );
    assert!(init_statistics(0, 4, 10, 1).is_err());
    assert!(init_statistics(4, 4, 0, 1).is_err());
    let zero = MultiHeadAttention::new(0, 1, &mut rng()).unwrap_err();
    assert_eq!(zero.to_string(), "d_model must be at least 1, got 0");
}

/// Class 6: LayerNorm and the FFN reject non-finite input, and LayerNorm
/// normalises rows of huge finite numbers correctly.
#[test]
fn layer_norm_is_exact_on_huge_rows_and_rejects_non_finite_ones() {
    let ln = LayerNorm::new(4);
    let constant = ln.forward(&array![[3e38_f32, 3e38, 3e38, 3e38]]).unwrap();
    assert_eq!(constant, array![[0.0, 0.0, 0.0, 0.0]]);
    let spread = ln.forward(&array![[1e30_f32, -1e30, 0.0, 0.0]]).unwrap();
    let s = 2f32.sqrt();
    for (got, want) in spread.iter().zip([s, -s, 0.0, 0.0]) {
        assert!((got - want).abs() < 1e-5, "{spread}");
    }
    let err = ln
        .forward(&array![[1.0_f32, f32::NAN, 0.0, 0.0]])
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "LayerNorm input must hold only finite numbers, got NaN"
    );
    let ffn = FeedForward::new(4, 8, Activation::Relu, &mut rng()).unwrap();
    assert!(ffn
        .forward(&array![[f32::INFINITY, 0.0, 0.0, 0.0]])
        .is_err());
    assert!(ffn.forward(&array![[3e38_f32, 3e38, 3e38, 3e38]]).is_err());
}

/// Class 7: shapes that do not fit are errors of ours, not panics inside
/// ndarray, and a 1×m mask is not broadcast silently.
#[test]
fn shapes_are_checked_before_ndarray_sees_them() {
    let mut scores = Array2::<f32>::zeros((3, 4));
    let err = masked_fill(
        &mut scores,
        &Array2::from_elem((1, 4), false),
        f32::NEG_INFINITY,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "the mask is 1×4 but the scores are 3×4 (n queries × m keys)"
    );
    let ln = LayerNorm::new(4);
    let x = Array2::<f32>::zeros((3, 4));
    let wrong = residual(&x, &ln, Norm::Pre, |_| Ok(Array2::zeros((1, 4)))).unwrap_err();
    assert_eq!(
        wrong.to_string(),
        "a sub-layer's output and its input must have the same shape, but they are 1×4 and 3×4"
    );
    assert!(residual(&x, &ln, Norm::Post, |_| Ok(Array2::zeros((3, 2)))).is_err());
}

/// Class 4: the weights loader refuses what it cannot trust (the details
/// are tested in `src/model/weights.rs`).
#[test]
fn the_weights_loader_refuses_huge_sizes_non_finite_values_and_trailing_content() {
    let text = TinyTransformer::new(small(), 1).unwrap().to_text();
    let first = text.lines().nth(1).unwrap().split(' ').next().unwrap();
    assert!(TinyTransformer::from_text(&text.replacen(first, "NaN", 1)).is_err());
    assert!(TinyTransformer::from_text(&(text.clone() + "0 0 0\n")).is_err());
    let huge = "tiny-transformer 4 65536 2 262144 4\n";
    assert!(matches!(
        TinyTransformer::from_text(huge),
        Err(AttnError::InvalidWeights { .. })
    ));
    assert!(TinyTransformer::from_text(&text).is_ok());
}

fn small() -> ModelConfig {
    ModelConfig {
        k: 2,
        d_model: 8,
        heads: 2,
        d_ff: 12,
        layers: 1,
    }
}

fn training(lr: f64) -> TrainConfig {
    TrainConfig {
        steps: 2,
        batch: 4,
        lr,
        warmup: 1,
        seed: u64::MAX, // seeds are any u64: derived seeds wrap, never overflow
        task: Task::REVERSE,
    }
}

/// Class 5: training cannot hang, and cannot turn the parameters NaN.
#[test]
fn training_refuses_what_would_hang_or_poison_it() {
    // k = 2 has 100 possible examples; excluding all of them would leave
    // the loop drawing forever.
    let mut rng = StdRng::seed_from_u64(3);
    let mut all: Vec<Vec<usize>> = (0..2000)
        .map(|_| Task::REVERSE.example(2, &mut rng))
        .collect();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 100);
    let err = train(small(), &training(1e-3), &all).unwrap_err();
    assert!(err
        .to_string()
        .starts_with("excluded examples must be at most half"));
    assert!(train(small(), &training(1e-3), &all[..50]).is_ok());
    for lr in [f64::INFINITY, f64::NAN, 0.0, -1.0] {
        let err = train(small(), &training(lr), &[]).unwrap_err();
        assert!(
            err.to_string().starts_with("learning rate must be finite"),
            "{lr}"
        );
    }
    // Adam refuses a non-finite learning rate or gradient.
    let mut net = TinyTransformer::new(small(), 0).unwrap();
    assert!(Adam::new(&net, f64::INFINITY).is_err());
    let mut adam = Adam::new(&net, 1e-3).unwrap();
    let (_, grads) = net
        .loss_and_gradients(&[vec![1, 2, 10, 2]], &[None, None, Some(2), Some(1)])
        .unwrap();
    assert!(adam.update(&mut net, &grads, f64::NAN).is_err());
    assert!(adam.update(&mut net, &grads, f64::INFINITY).is_err());
    assert!(adam.update(&mut net, &grads, 1.0).is_ok());
    // The whole-model gradient check's problem takes any seed.
    assert!(small_problem(u64::MAX).is_ok());
}

/// Class 8: the model's helpers check their arguments.
#[test]
fn model_helpers_check_what_they_are_given() {
    let net = TinyTransformer::new(small(), 0).unwrap();
    let other = TinyTransformer::new(small(), 1).unwrap();
    let inputs = vec![vec![1, 2, 10, 2]];
    let fwd = other.forward(&inputs).unwrap();
    let d_logits = Array2::<f64>::zeros(fwd.logits().dim());
    let err = net.backward(&fwd, &d_logits).unwrap_err();
    assert_eq!(
        err.to_string(),
        "forward pass must come from this model, with its current parameters, got 0"
    );
    assert!(net
        .backward(&net.forward(&inputs).unwrap(), &d_logits)
        .is_ok());
    let fwd = net.forward(&inputs).unwrap();
    assert!(fwd.weights(0, 0, 0).is_ok());
    assert!(fwd.weights(1, 0, 0).is_err(), "one block only");
    assert!(fwd.weights(0, 1, 0).is_err(), "one sequence only");
    assert!(fwd.weights(0, 0, 2).is_err(), "two heads only");
    let short = inputs_and_targets(&[vec![1, 2]], 2).unwrap_err();
    assert_eq!(
        short.to_string(),
        "example length must be 2k + 1 tokens: k digits, the separator, k answer digits, got 2"
    );
}

/// Class 9: no integer overflow: a panic in debug builds, a wrapped value
/// in release.
#[test]
fn sizes_and_positions_do_not_overflow() {
    assert!(projection_flops(u64::MAX, u64::MAX).is_finite());
    assert!(cumulative_flops(u64::MAX, 0, flops_per_token_with_cache).is_err());
    let x = Array2::<f32>::zeros((2, 4));
    assert!(rope(&x, usize::MAX).is_err());
    let huge = ModelConfig {
        k: usize::MAX,
        ..small()
    };
    assert!(huge.check().is_err());
    assert!(TinyTransformer::new(huge, 0).is_err());
    assert!(schedule(usize::MAX, &training(1e-3)).is_err());
}

/// Class 10: structs with an invariant keep their fields private; the
/// model's configuration can be read, not changed behind its back.
#[test]
fn invariants_are_kept_behind_constructors() {
    let net = TinyTransformer::new(small(), 0).unwrap();
    assert_eq!(net.config(), small());
    assert_eq!(
        small().parameter_count(),
        Some(net.parameter_count()),
        "the count the loader checks is the model's"
    );
    let named = net.named_slices();
    assert_eq!(named.len(), net.slices().len());
    assert_eq!(named[2].0, "block 1 LayerNorm 1 γ");
}

/// Class 10 for the layers: fields are private, and the constructors from
/// given weights check what the private fields must satisfy.
#[test]
fn layers_from_given_weights_check_their_shapes() {
    let w = Array2::<f32>::zeros((8, 8));
    let ok = MultiHeadAttention::from_weights([w.clone(), w.clone(), w.clone(), w.clone()], 2);
    assert_eq!(ok.unwrap().h(), 2);
    let err = MultiHeadAttention::from_weights([w.clone(), w.clone(), w.clone(), w.clone()], 3);
    assert!(matches!(
        err,
        Err(AttnError::HeadsDoNotDivide { d_model: 8, h: 3 })
    ));
    let narrow = Array2::<f32>::zeros((8, 4));
    let err = MultiHeadAttention::from_weights([w.clone(), narrow, w.clone(), w.clone()], 2);
    assert_eq!(
        err.unwrap_err().to_string(),
        "W_Q and every other weight of the layer (d_model×d_model) must have the same shape, \
         but they are 8×8 and 8×4"
    );
    let mut nan = w.clone();
    nan[[1, 1]] = f32::NAN;
    assert!(MultiHeadAttention::from_weights([w.clone(), w.clone(), nan, w.clone()], 2).is_err());
    let gamma = ndarray::Array1::ones(4);
    assert!(LayerNorm::from_parameters(gamma.clone(), ndarray::Array1::zeros(3), 1e-5).is_err());
    assert!(LayerNorm::from_parameters(gamma.clone(), ndarray::Array1::zeros(4), 0.0).is_err());
    let w1 = Array2::zeros((4, 6));
    let ffn = FeedForward::from_weights(
        w1.clone(),
        ndarray::Array1::zeros(6),
        Array2::zeros((6, 4)),
        ndarray::Array1::zeros(5),
        Activation::Gelu,
    );
    assert!(ffn.is_err(), "b₂ has d_model = 4 entries, not 5");
    let mha = MultiHeadAttention::new(8, 2, &mut rng()).unwrap();
    let ffn4 = FeedForward::new(4, 16, Activation::Relu, &mut rng()).unwrap();
    let lns = [LayerNorm::new(8), LayerNorm::new(8)];
    assert!(EncoderLayer::from_parts(mha, ffn4, lns, Norm::Post).is_err());
    assert!(Projections::from_weights(w.clone(), narrow_copy(), w).is_err());
}

fn narrow_copy() -> Array2<f32> {
    Array2::zeros((8, 4))
}

/// Class 11: the small helpers answer degenerate input with an error, not
/// a panic or a NaN.
#[test]
fn small_helpers_handle_degenerate_input() {
    use attn::approximate::{error_experiment, relative_error};
    use attn::block::row_statistics;
    use attn::complexity::fitted_exponent;
    use attn::multihead::head_entropies;
    use attn::position::largest_norm_change;
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
        MultiHeadAttention::new(0, 1, &mut rng())
            .unwrap_err()
            .to_string(),
        "d_model must be at least 1, got 0"
    );
    // A count above 2^24 is printed exactly, not rounded through f32.
    let err =
        attn::masking::cumulative_flops(16_777_217 + (1 << 24), 1, flops_per_token_with_cache)
            .unwrap_err();
    assert!(err.to_string().ends_with("got 33554433"), "{err}");
    assert_eq!(
        net.loss(&[vec![1, 2]], &[None, Some(11)])
            .unwrap_err()
            .to_string(),
        "target must be a digit 0–9 or the separator 10, got 11"
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
    assert!(
        attn::masking::key_padding_mask(1 << 20, 3, 1 << 20, attn::masking::Padding::Right)
            .is_err()
    );
    assert!(init_weight(1 << 20, 1 << 20, &mut rng()).is_err());
    assert!(attn::approximate::error_experiment(1 << 16, 1).is_err());
}

/// Chapter 14's additions: biases of the wrong length or not finite, a head
/// or a pooled length that does not exist, vectors of different lengths.
#[test]
fn pretrained_model_pieces_reject_bad_arguments() {
    use attn::pretrained::{cosine, mean_pool};
    use ndarray::Array1;
    let mha = MultiHeadAttention::new(8, 2, &mut rng()).unwrap();
    let short = [8, 8, 8, 7].map(Array1::<f32>::zeros);
    assert_eq!(
        mha.clone().with_biases(short).unwrap_err().to_string(),
        "W_Q's columns and every bias of the layer (d_model) must have the same shape, \
         but they are 1×8 and 1×7"
    );
    let mut nan = [8, 8, 8, 8].map(Array1::<f32>::zeros);
    nan[1][3] = f32::NAN;
    assert_eq!(
        mha.clone().with_biases(nan).unwrap_err().to_string(),
        "b_K must hold only finite numbers, got NaN"
    );
    assert_eq!(
        mha.without_head(2).unwrap_err().to_string(),
        "head must be less than the number of heads h, got 2"
    );
    let hidden = Array2::<f32>::ones((3, 4));
    assert!(mean_pool(&hidden, 0).is_err() && mean_pool(&hidden, 4).is_err());
    assert!(cosine(&Array1::zeros(3), &Array1::zeros(4)).is_err());
    // A model directory that is not there names the file and the command.
    let missing = attn::pretrained::Bert::load(std::path::Path::new("no/such/model"));
    assert!(missing
        .unwrap_err()
        .to_string()
        .contains("no/such/model/config.json"));
}
