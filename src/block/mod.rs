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
//! sub-layer, is not part of the forward pass the book uses (chapter 10).

use ndarray::{Array1, Array2, ArrayRef2, Axis};
use ndarray_rand::rand::rngs::StdRng;

use crate::check::{check_finite, check_model_width, check_not_empty, check_overflow};
use crate::error::AttnError;
use crate::nn::{ffn_forward, layer_norm_forward, FfnWeights};
use crate::projection::init_weight;

pub use crate::nn::{gelu, gelu_erf, Activation};

mod layers;

pub use layers::{Config, DecoderLayer, EncoderLayer, Transformer, CHAPTER_CONFIG};

// ANCHOR: layer_norm
/// Layer normalisation over the features of each token (each row):
/// `y = (x − μ) / √(σ² + ε) · γ + β`, with `μ` and `σ²` the mean and the
/// (biased, `1/d`) variance of the row. `ε` is added to the variance,
/// **inside** the square root, as in PyTorch's `LayerNorm` (default
/// `ε = 1e-5`).
#[derive(Debug, Clone, PartialEq)]
pub struct LayerNorm {
    gamma: Array1<f32>, // scale, one per feature (d_model), initialised to 1
    beta: Array1<f32>,  // shift, one per feature, initialised to 0
    eps: f32,           // added to the variance: finite and > 0
}

impl LayerNorm {
    /// The identity-initialised normalisation for `d_model` features.
    pub fn new(d_model: usize) -> Self {
        LayerNorm { gamma: Array1::ones(d_model), beta: Array1::zeros(d_model), eps: 1e-5 }
    }

    /// Normalises each row of `x` (`n×d_model`).
    pub fn forward(&self, x: &ArrayRef2<f32>) -> Result<Array2<f32>, AttnError> {
        check_model_width("LayerNorm input", x, self.gamma.len())?;
        let (y, _) = layer_norm_forward(x, &self.gamma, &self.beta, self.eps)?;
        check_overflow("LayerNorm's output", &y)?; // a huge γ or β can overflow
        Ok(y)
    }
}
// ANCHOR_END: layer_norm

impl LayerNorm {
    /// A normalisation with given scale `γ`, shift `β` (the same length
    /// `d_model ≥ 1`, finite) and `ε` (finite, `> 0`).
    pub fn from_parameters(
        gamma: Array1<f32>,
        beta: Array1<f32>,
        eps: f32,
    ) -> Result<Self, AttnError> {
        check_not_empty("γ", (1, gamma.len()))?;
        if beta.len() != gamma.len() {
            return Err(AttnError::ShapesDiffer {
                what: "γ and β",
                left: (1, gamma.len()),
                right: (1, beta.len()),
            });
        }
        check_finite("γ", &gamma.view().insert_axis(Axis(0)))?;
        check_finite("β", &beta.view().insert_axis(Axis(0)))?;
        if !(eps.is_finite() && eps > 0.0) {
            return Err(AttnError::InvalidArgument {
                name: "ε",
                value: f64::from(eps),
                requirement: "must be finite and > 0",
            });
        }
        Ok(LayerNorm { gamma, beta, eps })
    }

    /// The width `d_model` it normalises.
    pub fn d_model(&self) -> usize {
        self.gamma.len()
    }

    /// `(γ, β, ε)`.
    pub fn parameters(&self) -> (&Array1<f32>, &Array1<f32>, f32) {
        (&self.gamma, &self.beta, self.eps)
    }
}

// ANCHOR: ffn
/// The position-wise feed-forward network, `FFN(x) = act(x W₁ + b₁) W₂ + b₂`,
/// applied to every token (row) separately: `d_model → d_ff → d_model`.
#[derive(Debug, Clone, PartialEq)]
pub struct FeedForward {
    p: FfnWeights<f32>, // W₁ (d_model×d_ff), b₁ (d_ff), W₂ (d_ff×d_model), b₂ (d_model)
    activation: Activation,
}

impl FeedForward {
    /// A network `d_model → d_ff → d_model` with weights drawn as in
    /// chapter 4 (`N(0, 1/fan-in)`) and zero biases.
    pub fn new(
        d_model: usize,
        d_ff: usize,
        activation: Activation,
        rng: &mut StdRng,
    ) -> Result<Self, AttnError> {
        let p = FfnWeights {
            w1: init_weight(d_model, d_ff, rng)?,
            b1: Array1::zeros(d_ff),
            w2: init_weight(d_ff, d_model, rng)?,
            b2: Array1::zeros(d_model),
        };
        Ok(FeedForward { p, activation })
    }

    /// `act(x W₁ + b₁) W₂ + b₂` for `x`: `n×d_model`.
    pub fn forward(&self, x: &ArrayRef2<f32>) -> Result<Array2<f32>, AttnError> {
        check_model_width("FFN input", x, self.p.w1.nrows())?;
        let (output, _) = ffn_forward(x, &self.p, self.activation)?;
        Ok(output)
    }
}
// ANCHOR_END: ffn

impl FeedForward {
    /// A network from given weights: `W₁` (`d_model×d_ff`), `b₁` (`d_ff`),
    /// `W₂` (`d_ff×d_model`), `b₂` (`d_model`), all finite and non-empty.
    pub fn from_weights(
        w1: Array2<f32>,
        b1: Array1<f32>,
        w2: Array2<f32>,
        b2: Array1<f32>,
        activation: Activation,
    ) -> Result<Self, AttnError> {
        let (d_model, d_ff) = w1.dim();
        check_not_empty("W₁", w1.dim())?;
        let expected = [
            ("b₁", (1, d_ff), (1, b1.len())),
            ("W₂", (d_ff, d_model), w2.dim()),
            ("b₂", (1, d_model), (1, b2.len())),
        ];
        for (what, want, got) in expected {
            if want != got {
                return Err(AttnError::ShapesDiffer { what, left: got, right: want });
            }
        }
        check_finite("W₁", &w1)?;
        check_finite("b₁", &b1.view().insert_axis(Axis(0)))?;
        check_finite("W₂", &w2)?;
        check_finite("b₂", &b2.view().insert_axis(Axis(0)))?;
        let p = FfnWeights { w1, b1, w2, b2 };
        Ok(FeedForward { p, activation })
    }

    /// `(W₁, b₁, W₂, b₂)`.
    pub fn weights(&self) -> (&Array2<f32>, &Array1<f32>, &Array2<f32>, &Array1<f32>) {
        (&self.p.w1, &self.p.b1, &self.p.w2, &self.p.b2)
    }

    /// The hidden width `d_ff`.
    pub fn d_ff(&self) -> usize {
        self.p.w1.ncols()
    }

    /// The token width `d_model`.
    pub fn d_model(&self) -> usize {
        self.p.w1.nrows()
    }

    /// Parameters: `2·d_model·d_ff + d_ff + d_model`.
    pub fn parameters(&self) -> usize {
        let p = &self.p;
        p.w1.len() + p.b1.len() + p.w2.len() + p.b2.len()
    }
}

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

/// Mean and standard deviation of every row's entries, averaged over rows:
/// how far a residual stream is from zero mean and unit variance.
pub fn row_statistics(x: &ArrayRef2<f32>) -> Result<(f32, f32), AttnError> {
    check_not_empty("x", x.dim())?;
    check_finite("x", x)?;
    let x = x.mapv(f64::from); // f64: sums and squares of f32s can overflow
    let means = x.mean_axis(Axis(1)).unwrap_or_default(); // columns ≥ 1: never the default
    let stds = x.std_axis(Axis(1), 0.0);
    let average = |a: Array1<f64>| a.mean().unwrap_or(0.0) as f32;
    Ok((average(means), average(stds)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_abs_diff_eq;
    use ndarray::{array, s};

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
        let (mean, std) = row_statistics(&y.slice(s![0..1, ..])).unwrap();
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
        assert!(gelu(-10.0_f32).abs() < 1e-6);
    }

    #[test]
    fn exact_gelu_values_and_how_far_the_tanh_form_is() {
        // PyTorch, F.gelu(x) (approximate='none'), in f32.
        assert_abs_diff_eq!(gelu_erf(1.0), 0.841_344_7, epsilon = 1e-6);
        assert_abs_diff_eq!(gelu_erf(-1.0), -0.158_655_3, epsilon = 1e-6);
        assert_abs_diff_eq!(gelu_erf(3.0), 2.995_950_5, epsilon = 1e-6);
        assert_eq!(gelu_erf(0.0), 0.0);
        // The two forms differ by up to a few 1e-4: far more than a golden
        // test's 1e-5, so a model needs the one it was trained with.
        let gap = (-600..=600)
            .map(|i| i as f32 / 100.0)
            .map(|x| (gelu(x) - gelu_erf(x)).abs())
            .fold(0.0, f32::max);
        assert!(gap > 1e-4 && gap < 1e-3, "gap {gap}");
    }
}
