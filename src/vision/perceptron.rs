//! The baselines a Vision Transformer is measured against: classifiers of
//! the 64 pixels as one vector, which know nothing of patches or of where
//! a pixel is. With no hidden layer, a linear classifier `XW + b`; with
//! hidden layers, a multi-layer perceptron, GELU (the ViT's FFN's) after
//! each hidden layer:
//!
//! `Z = (… GELU(X W₁ + b₁) …) W_L + b_L`, `X` the `B×64` pixels scaled to
//! `[0, 1]`, `Z` the `B×10` logits.

use ndarray::{Array1, Array2, ArrayRef2};
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

use super::{check_pixels, CLASSES, MAX_PIXEL, PIXELS};
use crate::check::{check_nonzero, check_total, MAX_ENTRIES, MAX_PARAMETERS};
use crate::error::AttnError;
use crate::grad::normal_weights as normal;
use crate::linalg::{linear, linear_backward, LinearWeights};
use crate::nn::{
    check_d_logits, check_finite_parameters, check_same_model, fingerprint, flat, flat_mut,
    Activation, Parameters,
};
use crate::real::Real;

/// The activation after each hidden layer.
const ACTIVATION: Activation = Activation::GeluErf;

/// A linear classifier or a perceptron over the pixels.
#[derive(Debug, Clone, PartialEq)]
pub struct Perceptron<F: Real = f32> {
    /// `64 → h₁ → … → 10`: each layer's `W` (`in × out`) and `b`.
    layers: Vec<LinearWeights<F>>,
}

/// What the forward pass keeps for the backward pass.
pub struct PerceptronForward<F> {
    logits: Array2<F>,
    fingerprint: u64,
    /// Each layer's input, and each hidden layer's pre-activation.
    inputs: Vec<Array2<F>>,
    pre: Vec<Array2<F>>,
}

impl<F: Real> PerceptronForward<F> {
    /// The logits, `B×10`.
    pub fn logits(&self) -> &Array2<F> {
        &self.logits
    }
}

impl<F: Real> Perceptron<F> {
    /// A fresh classifier with hidden layers of widths `hidden` (none: a
    /// linear classifier), each `W` drawn with deviation `1/√fan-in`, each
    /// `b` 0.
    pub fn new(hidden: &[usize], seed: u64) -> Result<Self, AttnError> {
        let names: Vec<(&'static str, usize)> = hidden.iter().map(|&h| ("hidden", h)).collect();
        check_nonzero(&names)?;
        let widths: Vec<usize> = [PIXELS].iter().chain(hidden).chain(&[CLASSES]).copied().collect();
        let sizes: Vec<usize> =
            widths.windows(2).map(|w| w[0].saturating_add(1).saturating_mul(w[1])).collect();
        check_total(
            "the parameters",
            &[sizes.iter().fold(0, |s, &x| s.saturating_add(x))],
            MAX_PARAMETERS,
        )?;
        let mut rng = StdRng::seed_from_u64(seed);
        let layers = widths
            .windows(2)
            .map(|w| {
                let deviation = 1.0 / (w[0] as f64).sqrt();
                LinearWeights { w: normal(&mut rng, w[0], w[1], deviation), b: Array1::zeros(w[1]) }
            })
            .collect();
        Ok(Perceptron { layers })
    }

    /// The widths of the hidden layers.
    pub fn hidden(&self) -> Vec<usize> {
        self.layers[..self.layers.len() - 1].iter().map(|l| l.b.len()).collect()
    }

    /// The forward pass over `images`: their logits, and what the backward
    /// pass needs.
    pub fn forward(&self, images: &[[u8; PIXELS]]) -> Result<PerceptronForward<F>, AttnError> {
        check_nonzero(&[("images", images.len())])?;
        check_pixels(images)?;
        check_finite_parameters(self)?;
        let widest = self.layers.iter().map(|l| l.b.len()).max().unwrap_or(0).max(PIXELS);
        check_total("the vectors of a layer", &[images.len(), widest], MAX_ENTRIES)?;
        let mut x = Array2::from_shape_fn((images.len(), PIXELS), |(b, i)| {
            F::of(f64::from(images[b][i]) / f64::from(MAX_PIXEL))
        });
        let (mut inputs, mut pre) = (Vec::new(), Vec::new());
        let last = self.layers.len() - 1;
        for (l, layer) in self.layers.iter().enumerate() {
            let y = linear("a layer's output X W + b", &x, &layer.w, Some(&layer.b))?;
            inputs.push(x);
            x = if l < last { y.mapv(|h| ACTIVATION.apply(h)) } else { y.clone() };
            if l < last {
                pre.push(y);
            }
        }
        let fingerprint = fingerprint(self, self.hidden());
        Ok(PerceptronForward { logits: x, fingerprint, inputs, pre })
    }

    /// The backward pass: every parameter's gradient given `dL/dlogits`,
    /// as a classifier of the same shape.
    pub fn backward(
        &self,
        fwd: &PerceptronForward<F>,
        d_logits: &ArrayRef2<F>,
    ) -> Result<Perceptron<F>, AttnError> {
        check_same_model(fwd.fingerprint, self, self.hidden())?;
        check_d_logits(d_logits, fwd.logits.dim())?;
        let mut layers = Vec::with_capacity(self.layers.len());
        let mut dy = d_logits.to_owned();
        for (l, layer) in self.layers.iter().enumerate().rev() {
            let (dx, g) = linear_backward(&fwd.inputs[l], &layer.w, &dy)?;
            layers.push(g);
            if l > 0 {
                dy = dx * &fwd.pre[l - 1].mapv(|h| ACTIVATION.derivative(h)); // chain rule
            }
        }
        layers.reverse();
        Ok(Perceptron { layers })
    }
}

impl<F: Real> Parameters for Perceptron<F> {
    type Real = F;

    fn slices(&self) -> Vec<&[F]> {
        self.layers.iter().flat_map(|l| [flat(&l.w), flat(&l.b)]).collect()
    }

    fn slices_mut(&mut self) -> Vec<&mut [F]> {
        self.layers.iter_mut().flat_map(|l| [flat_mut(&mut l.w), flat_mut(&mut l.b)]).collect()
    }

    fn named_slices(&self) -> Vec<(String, &[F])> {
        let names =
            (0..self.layers.len()).flat_map(|l| [format!("layers.{l}.w"), format!("layers.{l}.b")]);
        names.zip(self.slices()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vision::train::tests::{assert_gradients_match, images};
    use crate::vision::DigitClassifier;

    #[test]
    fn every_gradient_matches_finite_differences() {
        for hidden in [&[][..], &[12], &[12, 6]] {
            let model = Perceptron::<f64>::new(hidden, 3).unwrap();
            assert_eq!(model.hidden(), hidden);
            assert_gradients_match(&model, &images(), &format!("hidden {hidden:?}"));
        }
    }

    #[test]
    fn a_linear_classifier_is_x_w_plus_b() {
        let model = Perceptron::<f64>::new(&[], 2).unwrap();
        let images = images();
        let logits = model.logits(&images).unwrap();
        let layer = &model.layers[0];
        for (b, image) in images.iter().enumerate() {
            for c in 0..CLASSES {
                let sum: f64 = (0..PIXELS)
                    .map(|i| f64::from(image[i]) / f64::from(MAX_PIXEL) * layer.w[[i, c]])
                    .sum::<f64>()
                    + layer.b[c];
                assert!((logits[[b, c]] - sum).abs() < 1e-12, "image {b}, class {c}");
            }
        }
        assert_eq!(model.parameter_count(), (PIXELS + 1) * CLASSES);
    }
}
