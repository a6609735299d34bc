use attn::block::Transformer;
use attn::block::{Activation, Config, DecoderLayer, EncoderLayer, FeedForward, LayerNorm, Norm};
use attn::model::{ModelConfig, TinyTransformer};
use attn::multihead::MultiHeadAttention;
use attn::nn::Parameters;
use attn::projection::{init_weight, Projections};
use attn::AttnError;
use ndarray::{array, Array2};

use crate::{narrow_copy, rng, small};

/// Class 3: constructors that return `Result` return an error, not a panic,
/// for sizes of 0.
#[test]
fn constructors_reject_sizes_of_zero() {
    let c = Config { d_model: 8, h: 2, d_ff: 0, activation: Activation::Relu, norm: Norm::Post };
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
    let err = ln.forward(&array![[1.0_f32, f32::NAN, 0.0, 0.0]]).unwrap_err();
    assert_eq!(err.to_string(), "LayerNorm input must hold only finite numbers, got NaN");
    let ffn = FeedForward::new(4, 8, Activation::Relu, &mut rng()).unwrap();
    assert!(ffn.forward(&array![[f32::INFINITY, 0.0, 0.0, 0.0]]).is_err());
    assert!(ffn.forward(&array![[3e38_f32, 3e38, 3e38, 3e38]]).is_err());
}

/// Class 10: structs with an invariant keep their fields private; the
/// model's configuration can be read, not changed behind its back.
#[test]
fn invariants_are_kept_behind_constructors() {
    let net = TinyTransformer::new(small(), 0).unwrap();
    assert_eq!(ModelConfig::of(&net).unwrap(), small());
    assert_eq!(
        small().parameter_count(),
        Some(net.parameter_count()),
        "the count the loader checks is the model's"
    );
    let named = net.named_slices();
    assert_eq!(named.len(), net.slices().len());
    assert_eq!(named[2].0, "blocks.0.ln1.gamma");
}

/// Class 10 for the layers: fields are private, and the constructors from
/// given weights check what the private fields must satisfy.
#[test]
fn layers_from_given_weights_check_their_shapes() {
    let w = Array2::<f32>::zeros((8, 8));
    let ok =
        MultiHeadAttention::from_weights([w.clone(), w.clone(), w.clone(), w.clone()].into(), 2);
    assert_eq!(ok.unwrap().h(), 2);
    let err =
        MultiHeadAttention::from_weights([w.clone(), w.clone(), w.clone(), w.clone()].into(), 3);
    assert!(matches!(err, Err(AttnError::HeadsDoNotDivide { d_model: 8, h: 3 })));
    let narrow = Array2::<f32>::zeros((8, 4));
    let err = MultiHeadAttention::from_weights([w.clone(), narrow, w.clone(), w.clone()].into(), 2);
    assert_eq!(
        err.unwrap_err().to_string(),
        "a layer's weight and its shape (W_Q, W_O: d_model×d_model; W_K, W_V: d_model × \
         h_kv·d_k) must have the same shape, but they are 8×4 and 8×8"
    );
    let mut nan = w.clone();
    nan[[1, 1]] = f32::NAN;
    assert!(
        MultiHeadAttention::from_weights([w.clone(), w.clone(), nan, w.clone()].into(), 2).is_err()
    );
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

/// Chapter 15's additions: biases of the wrong length or not finite, a head
/// or a pooled length that does not exist, vectors of different lengths.
#[test]
fn pretrained_model_pieces_reject_bad_arguments() {
    use attn::pretrained::{cosine, mean_pool};
    use ndarray::Array1;
    let mha = MultiHeadAttention::new(8, 2, &mut rng()).unwrap();
    let short = [8, 8, 8, 7].map(Array1::<f32>::zeros);
    assert_eq!(
        mha.clone().with_biases(short.into()).unwrap_err().to_string(),
        "W_O's columns and b_O must have the same shape, but they are 1×8 and 1×7"
    );
    let mut nan = [8, 8, 8, 8].map(Array1::<f32>::zeros);
    nan[1][3] = f32::NAN;
    assert_eq!(
        mha.clone().with_biases(nan.into()).unwrap_err().to_string(),
        "b_K must hold only finite numbers, got NaN"
    );
    assert_eq!(
        mha.without_head(2).unwrap_err().to_string(),
        "head must be less than the number of heads h (2), got 2"
    );
    let hidden = Array2::<f32>::ones((3, 4));
    assert!(mean_pool(&hidden, 0).is_err());
    assert_eq!(
        mean_pool(&hidden, 4).unwrap_err().to_string(),
        "len must be at least 1 and at most the number of rows (3), got 4"
    );
    // A length past the padded length names both.
    let padding = attn::masking::real_positions(7, 4, attn::masking::Padding::Right);
    assert_eq!(
        padding.unwrap_err().to_string(),
        "len must be at most the padded length (4), got 7"
    );
    assert!(cosine(&Array1::zeros(3), &Array1::zeros(4)).is_err());
    // A model directory that is not there names the file and the command.
    let missing = attn::pretrained::Bert::load(std::path::Path::new("no/such/model"));
    assert!(missing.unwrap_err().to_string().contains("no/such/model/config.json"));
}

/// Chapter 11's gradient check, as readers call it: shapes that differ, a
/// point that is not finite, a function that is not finite there.
#[test]
fn the_gradient_check_refuses_what_it_cannot_compare() {
    use attn::grad::check_gradient;
    let x = Array2::<f64>::ones((2, 3));
    let sum = |x: &Array2<f64>| x.sum();
    assert!(check_gradient(&x, sum, &x).unwrap() < 1e-9);
    let wide = Array2::<f64>::ones((2, 4));
    assert!(check_gradient(&wide, sum, &x).unwrap_err().to_string().contains("2×4"));
    let mut nan = x.clone();
    nan[[1, 2]] = f64::NAN;
    assert!(check_gradient(&x, sum, &nan).unwrap_err().to_string().contains("NaN"));
    let log = |x: &Array2<f64>| x.mapv(f64::ln).sum();
    let at_zero = Array2::<f64>::zeros((2, 3));
    let error = check_gradient(&x, log, &at_zero).unwrap_err().to_string();
    assert!(error.contains("f at x"), "{error}");
}
