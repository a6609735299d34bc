//! The Transformer block: attention plus a position-wise feed-forward
//! network, each wrapped in a residual connection and a layer
//! normalisation, stacked into an encoder and a decoder.
//!
//! | step | shape |
//! | --- | --- |
//! | input tokens `X` | `n×d_model` |
//! | multi-head (self-)attention | `n×d_model` |
//! | residual `X + ·`, LayerNorm | `n×d_model` |
//! | FFN: `d_model → d_ff → d_model`, row by row | `n×d_ff`, then `n×d_model` |
//! | residual, LayerNorm | `n×d_model` |
//!
//! Everything here is deterministic: dropout, which training adds after each
//! sub-layer, is not part of the forward pass the book uses (chapter 9).

use ndarray::{Array1, Array2, ArrayRef2, Axis};
use ndarray_rand::rand::rngs::StdRng;

use crate::error::{check_model_width, check_overflow, AttnError};
use crate::masking::causal_mask;
use crate::multihead::MultiHeadAttention;
use crate::projection::init_weight;

// ANCHOR: layer_norm
/// Layer normalisation over the features of each token (each row):
/// `y = (x − μ) / √(σ² + ε) · γ + β`, with `μ` and `σ²` the mean and the
/// (biased, `1/d`) variance of the row. `ε` is added to the variance,
/// **inside** the square root, as in PyTorch's `LayerNorm` (default
/// `ε = 1e-5`).
#[derive(Debug, Clone, PartialEq)]
pub struct LayerNorm {
    /// Scale, one per feature (`d_model`), initialised to 1.
    pub gamma: Array1<f32>,
    /// Shift, one per feature, initialised to 0.
    pub beta: Array1<f32>,
    /// Added to the variance.
    pub eps: f32,
}

impl LayerNorm {
    /// The identity-initialised normalisation for `d_model` features.
    pub fn new(d_model: usize) -> Self {
        LayerNorm {
            gamma: Array1::ones(d_model),
            beta: Array1::zeros(d_model),
            eps: 1e-5,
        }
    }

    /// Normalises each row of `x` (`n×d_model`).
    pub fn forward(&self, x: &ArrayRef2<f32>) -> Result<Array2<f32>, AttnError> {
        check_model_width("LayerNorm input", x, self.gamma.len())?;
        let mut y = x.to_owned();
        for mut row in y.rows_mut() {
            // In f64: the variance of f32 entries near 3e38 is near 1e77.
            let d = row.len() as f64;
            let mean = row.iter().map(|&x| x as f64).sum::<f64>() / d;
            let variance = row.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / d;
            let inv_std = 1.0 / (variance + self.eps as f64).sqrt();
            row.mapv_inplace(|x| ((x as f64 - mean) * inv_std) as f32);
        }
        let y = y * &self.gamma + &self.beta;
        check_overflow("LayerNorm's output", &y)?; // a huge γ or β can overflow
        Ok(y)
    }
}
// ANCHOR_END: layer_norm

// ANCHOR: ffn
/// The non-linearity of the feed-forward network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    /// `max(0, x)`, as in the original Transformer.
    Relu,
    /// `x·Φ(x)`, in the tanh approximation of GPT-2 and BERT.
    Gelu,
}

impl Activation {
    /// Applies the activation to one number.
    pub fn apply(self, x: f32) -> f32 {
        match self {
            Activation::Relu => x.max(0.0),
            Activation::Gelu => gelu(x),
        }
    }
}

/// GELU, tanh approximation: `0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))`.
pub fn gelu(x: f32) -> f32 {
    let c = (2.0 / std::f32::consts::PI).sqrt();
    0.5 * x * (1.0 + (c * (x + 0.044_715 * x * x * x)).tanh())
}

/// The position-wise feed-forward network, `FFN(x) = act(x W₁ + b₁) W₂ + b₂`,
/// applied to every token (row) separately: `d_model → d_ff → d_model`.
#[derive(Debug, Clone, PartialEq)]
pub struct FeedForward {
    /// `d_model×d_ff`.
    pub w1: Array2<f32>,
    /// `d_ff`.
    pub b1: Array1<f32>,
    /// `d_ff×d_model`.
    pub w2: Array2<f32>,
    /// `d_model`.
    pub b2: Array1<f32>,
    /// ReLU or GELU.
    pub activation: Activation,
}

impl FeedForward {
    /// A network `d_model → d_ff → d_model` with weights drawn as in
    /// chapter 3 (`N(0, 1/fan-in)`) and zero biases.
    pub fn new(
        d_model: usize,
        d_ff: usize,
        activation: Activation,
        rng: &mut StdRng,
    ) -> Result<Self, AttnError> {
        Ok(FeedForward {
            w1: init_weight(d_model, d_ff, rng)?,
            b1: Array1::zeros(d_ff),
            w2: init_weight(d_ff, d_model, rng)?,
            b2: Array1::zeros(d_model),
            activation,
        })
    }

    /// `act(x W₁ + b₁) W₂ + b₂` for `x`: `n×d_model`.
    pub fn forward(&self, x: &ArrayRef2<f32>) -> Result<Array2<f32>, AttnError> {
        check_model_width("FFN input", x, self.w1.nrows())?;
        let hidden = (x.dot(&self.w1) + &self.b1).mapv(|h| self.activation.apply(h)); // n×d_ff
        let output = hidden.dot(&self.w2) + &self.b2; // n×d_model
        check_overflow("the FFN's output", &output)?;
        Ok(output)
    }
}
// ANCHOR_END: ffn

// ANCHOR: sublayer
/// Where the LayerNorm goes around each sub-layer `F` (attention or FFN).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Norm {
    /// The original Transformer: `x ← LayerNorm(x + F(x))`.
    Post,
    /// GPT-2 and most models since: `x ← x + F(LayerNorm(x))`, with one
    /// more LayerNorm after the last layer.
    Pre,
}

/// One residual sub-layer: `F` applied with the normalisation placed as
/// `norm` says.
pub fn residual(
    x: &ArrayRef2<f32>,
    ln: &LayerNorm,
    norm: Norm,
    f: impl FnOnce(&Array2<f32>) -> Result<Array2<f32>, AttnError>,
) -> Result<Array2<f32>, AttnError> {
    let same_shape = |fx: Array2<f32>| match fx.dim() == x.dim() {
        true => Ok(fx + x),
        false => Err(AttnError::ShapesDiffer {
            what: "a sub-layer's output and its input",
            left: fx.dim(),
            right: x.dim(),
        }),
    };
    match norm {
        Norm::Post => ln.forward(&same_shape(f(&x.to_owned())?)?),
        Norm::Pre => same_shape(f(&ln.forward(x)?)?),
    }
}
// ANCHOR_END: sublayer

/// The sizes of a Transformer block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// Token width.
    pub d_model: usize,
    /// Heads per attention layer.
    pub h: usize,
    /// Hidden width of the FFN (4·d_model in the paper).
    pub d_ff: usize,
    /// FFN non-linearity.
    pub activation: Activation,
    /// Placement of the LayerNorms.
    pub norm: Norm,
}

/// The configuration chapter 9's example follows: small enough to print,
/// shaped like the paper's base model (`d_ff = 4·d_model`, ReLU, post-norm).
pub const CHAPTER_CONFIG: Config = Config {
    d_model: 64,
    h: 4,
    d_ff: 256,
    activation: Activation::Relu,
    norm: Norm::Post,
};

// ANCHOR: encoder_layer
/// An encoder layer: self-attention, then the FFN, each a residual
/// sub-layer.
#[derive(Debug, Clone, PartialEq)]
pub struct EncoderLayer {
    /// Self-attention over the input.
    pub attention: MultiHeadAttention,
    /// The position-wise network.
    pub ffn: FeedForward,
    /// Normalisation of the attention sub-layer.
    pub ln1: LayerNorm,
    /// Normalisation of the FFN sub-layer.
    pub ln2: LayerNorm,
    /// Post- or pre-norm.
    pub norm: Norm,
}

impl EncoderLayer {
    /// A freshly initialised layer.
    pub fn new(c: Config, rng: &mut StdRng) -> Result<Self, AttnError> {
        Ok(EncoderLayer {
            attention: MultiHeadAttention::new(c.d_model, c.h, rng)?,
            ffn: FeedForward::new(c.d_model, c.d_ff, c.activation, rng)?,
            ln1: LayerNorm::new(c.d_model),
            ln2: LayerNorm::new(c.d_model),
            norm: c.norm,
        })
    }

    /// `x` (`n×d_model`) → `n×d_model`.
    pub fn forward(&self, x: &ArrayRef2<f32>) -> Result<Array2<f32>, AttnError> {
        let x = residual(x, &self.ln1, self.norm, |x| {
            Ok(self.attention.forward(x, x)?.output)
        })?;
        residual(&x, &self.ln2, self.norm, |x| self.ffn.forward(x))
    }
}
// ANCHOR_END: encoder_layer

// ANCHOR: decoder_layer
/// A decoder layer: masked (causal) self-attention, cross-attention over the
/// encoder's output, then the FFN; three residual sub-layers.
#[derive(Debug, Clone, PartialEq)]
pub struct DecoderLayer {
    /// Causal self-attention over the decoder's input.
    pub self_attention: MultiHeadAttention,
    /// Queries from the decoder, keys and values from the encoder.
    pub cross_attention: MultiHeadAttention,
    /// The position-wise network.
    pub ffn: FeedForward,
    /// One normalisation per sub-layer.
    pub ln: [LayerNorm; 3],
    /// Post- or pre-norm.
    pub norm: Norm,
}

impl DecoderLayer {
    /// A freshly initialised layer.
    pub fn new(c: Config, rng: &mut StdRng) -> Result<Self, AttnError> {
        Ok(DecoderLayer {
            self_attention: MultiHeadAttention::new(c.d_model, c.h, rng)?,
            cross_attention: MultiHeadAttention::new(c.d_model, c.h, rng)?,
            ffn: FeedForward::new(c.d_model, c.d_ff, c.activation, rng)?,
            ln: [0, 1, 2].map(|_| LayerNorm::new(c.d_model)),
            norm: c.norm,
        })
    }

    /// `y` (`n×d_model`, the decoder's tokens) and `memory` (`m×d_model`, the
    /// encoder's output) → `n×d_model`.
    pub fn forward(
        &self,
        y: &ArrayRef2<f32>,
        memory: &ArrayRef2<f32>,
    ) -> Result<Array2<f32>, AttnError> {
        let causal = causal_mask(y.nrows(), y.nrows());
        let y = residual(y, &self.ln[0], self.norm, |y| {
            Ok(self.self_attention.forward_masked(y, y, &causal)?.output)
        })?;
        let y = residual(&y, &self.ln[1], self.norm, |y| {
            Ok(self.cross_attention.forward(y, memory)?.output)
        })?;
        residual(&y, &self.ln[2], self.norm, |y| self.ffn.forward(y))
    }
}
// ANCHOR_END: decoder_layer

// ANCHOR: stack
/// An encoder-decoder stack of `N` layers each, as in the original
/// Transformer. With pre-norm, a final LayerNorm closes each stack.
#[derive(Debug, Clone, PartialEq)]
pub struct Transformer {
    /// The encoder's layers.
    pub encoder: Vec<EncoderLayer>,
    /// The decoder's layers.
    pub decoder: Vec<DecoderLayer>,
    /// Final normalisations (pre-norm only): encoder, decoder.
    pub final_ln: Option<[LayerNorm; 2]>,
}

impl Transformer {
    /// `layers` encoder and `layers` decoder layers of configuration `c`.
    pub fn new(c: Config, layers: usize, rng: &mut StdRng) -> Result<Self, AttnError> {
        Ok(Transformer {
            encoder: (0..layers)
                .map(|_| EncoderLayer::new(c, rng))
                .collect::<Result<_, _>>()?,
            decoder: (0..layers)
                .map(|_| DecoderLayer::new(c, rng))
                .collect::<Result<_, _>>()?,
            final_ln: (c.norm == Norm::Pre).then(|| [0, 1].map(|_| LayerNorm::new(c.d_model))),
        })
    }

    /// The encoder: source tokens `x` (`m×d_model`) → memory (`m×d_model`).
    pub fn encode(&self, x: &ArrayRef2<f32>) -> Result<Array2<f32>, AttnError> {
        let mut x = x.to_owned();
        for layer in &self.encoder {
            x = layer.forward(&x)?;
        }
        match &self.final_ln {
            Some([ln, _]) => ln.forward(&x),
            None => Ok(x),
        }
    }

    /// The decoder: target tokens `y` (`n×d_model`) attending to `memory` →
    /// `n×d_model` (a linear layer and a softmax would turn each row into
    /// next-token probabilities).
    pub fn decode(
        &self,
        y: &ArrayRef2<f32>,
        memory: &ArrayRef2<f32>,
    ) -> Result<Array2<f32>, AttnError> {
        let mut y = y.to_owned();
        for layer in &self.decoder {
            y = layer.forward(&y, memory)?;
        }
        match &self.final_ln {
            Some([_, ln]) => ln.forward(&y),
            None => Ok(y),
        }
    }
}
// ANCHOR_END: stack

/// Mean and standard deviation of every row's entries, averaged over rows:
/// how far a residual stream is from zero mean and unit variance.
pub fn row_statistics(x: &ArrayRef2<f32>) -> (f32, f32) {
    let means = x.mean_axis(Axis(1)).expect("columns > 0");
    let stds = x.std_axis(Axis(1), 0.0);
    (means.mean().unwrap_or(0.0), stds.mean().unwrap_or(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scaling::standard_normal;
    use approx::assert_abs_diff_eq;
    use ndarray::{array, s};
    use ndarray_rand::rand::SeedableRng;

    // ANCHOR: layer_norm_test
    #[test]
    fn layer_norm_gives_each_row_zero_mean_and_unit_variance() {
        let x = array![[1.0_f32, 2.0, 3.0, 4.0], [10.0, 10.0, 10.0, 10.0]];
        let y = LayerNorm::new(4).forward(&x).unwrap();
        // Row 0: mean 2.5, variance 1.25 (divided by d = 4, not d − 1).
        let inv_std = 1.0 / (1.25_f32 + 1e-5).sqrt();
        assert_abs_diff_eq!(
            y.row(0),
            array![-1.5 * inv_std, -0.5 * inv_std, 0.5 * inv_std, 1.5 * inv_std],
            epsilon = 1e-6
        );
        // A constant row has variance 0: ε keeps the division finite.
        assert_eq!(y.row(1), array![0.0, 0.0, 0.0, 0.0]);
        let (mean, std) = row_statistics(&y.slice(s![0..1, ..]));
        assert!(mean.abs() < 1e-6 && (std - 1.0).abs() < 1e-5);
    }
    // ANCHOR_END: layer_norm_test

    #[test]
    fn epsilon_goes_inside_the_square_root() {
        // With a tiny variance, (x − μ)/√(σ² + ε) and (x − μ)/(σ + ε) differ.
        let x = array![[0.0_f32, 0.002]]; // σ² = 1e-6, σ = 1e-3
        let y = LayerNorm::new(2).forward(&x).unwrap();
        let inside = 0.001 / (1e-6_f32 + 1e-5).sqrt();
        let outside = 0.001 / (1e-3_f32 + 1e-5);
        assert_abs_diff_eq!(y[[0, 1]], inside, epsilon = 1e-5);
        assert!((y[[0, 1]] - outside).abs() > 0.5);
    }

    #[test]
    fn gelu_and_relu_values() {
        assert_eq!(Activation::Relu.apply(-2.0), 0.0);
        assert_eq!(Activation::Relu.apply(1.5), 1.5);
        assert_eq!(gelu(0.0), 0.0);
        assert_abs_diff_eq!(gelu(1.0), 0.841_192, epsilon = 1e-5); // PyTorch, approximate='tanh'
        assert_abs_diff_eq!(gelu(-1.0), -0.158_808, epsilon = 1e-5);
        assert!(gelu(-10.0).abs() < 1e-6);
    }

    // ANCHOR: shapes_test
    #[test]
    fn every_layer_keeps_the_shape_and_the_decoder_is_causal() {
        let mut rng = StdRng::seed_from_u64(8);
        for norm in [Norm::Post, Norm::Pre] {
            let c = Config {
                d_model: 16,
                h: 4,
                d_ff: 64,
                activation: Activation::Relu,
                norm,
            };
            let model = Transformer::new(c, 2, &mut rng).unwrap();
            let (x, y) = (
                standard_normal(7, 16, &mut rng),
                standard_normal(5, 16, &mut rng),
            );
            let memory = model.encode(&x).unwrap();
            assert_eq!(memory.dim(), (7, 16));
            let out = model.decode(&y, &memory).unwrap();
            assert_eq!(out.dim(), (5, 16));
            // Changing decoder token 3 changes no output before position 3.
            let mut y2 = y.clone();
            y2.row_mut(3).fill(9.0);
            let out2 = model.decode(&y2, &memory).unwrap();
            assert_abs_diff_eq!(
                out.slice(s![..3, ..]),
                out2.slice(s![..3, ..]),
                epsilon = 1e-5
            );
            assert!((&out.row(3) - &out2.row(3)).iter().any(|d| d.abs() > 1e-3));
        }
    }
    // ANCHOR_END: shapes_test

    #[test]
    fn widths_are_checked() {
        let mut rng = StdRng::seed_from_u64(1);
        let c = Config {
            d_model: 8,
            h: 2,
            d_ff: 16,
            activation: Activation::Gelu,
            norm: Norm::Pre,
        };
        let layer = EncoderLayer::new(c, &mut rng).unwrap();
        let err = layer.forward(&Array2::zeros((3, 6))).unwrap_err();
        assert_eq!(
            err.to_string(),
            "LayerNorm input has rows of width 6 but the layer expects d_model = 8 (shape 3×6)"
        );
    }
}
