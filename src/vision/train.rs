//! Training a classifier of digits (a Vision Transformer, or a baseline
//! that sees the pixels as one vector) on the digits' training split:
//! batches of images drawn at random (SplitMix64, so that another program
//! can draw the same), AdamW with a warm-up and cosine schedule, and
//! gradients clipped, as chapter 16 trains its language model.

use std::ops::Range;

use ndarray::Array2;

use super::perceptron::{Perceptron, PerceptronForward};
use super::vit::{Vit, VitForward};
use super::{Digits, PIXELS};
use crate::check::{check_nonzero, check_total, MAX_ENTRIES};
use crate::error::AttnError;
use crate::lm::SplitMix64;
use crate::nn::{
    check_warmup, clip_gradient_norm, cross_entropy, matrices_of, warmup_cosine_to, Adam,
    Parameters,
};
use crate::real::Real;

/// A model that names the digit an image shows: what training and scoring
/// ask of it, its forward and backward passes; the loss follows.
pub trait DigitClassifier: Parameters + Sized {
    /// What the forward pass keeps for the backward pass.
    type Forward;

    /// The forward pass over `images`.
    fn forward_pass(&self, images: &[[u8; PIXELS]]) -> Result<Self::Forward, AttnError>;

    /// A forward pass's logits, `B×10`: row `b` scores image `b`'s digits.
    fn logits_of(forward: &Self::Forward) -> &Array2<Self::Real>;

    /// The backward pass: every parameter's gradient given `dL/dlogits`.
    fn backward_pass(
        &self,
        forward: &Self::Forward,
        d_logits: &Array2<Self::Real>,
    ) -> Result<Self, AttnError>;

    /// The logits of `images`.
    fn logits(&self, images: &[[u8; PIXELS]]) -> Result<Array2<Self::Real>, AttnError> {
        Ok(Self::logits_of(&self.forward_pass(images)?).clone())
    }

    /// The mean cross-entropy of `images` against their `labels`, and
    /// every parameter's gradient, as a model of the same shape.
    fn loss_and_gradients(
        &self,
        images: &[[u8; PIXELS]],
        labels: &[u8],
    ) -> Result<(f64, Self), AttnError> {
        if labels.len() != images.len() {
            let requirement = "must be one per image";
            return Err(AttnError::Mismatched { name: "labels", requirement });
        }
        let forward = self.forward_pass(images)?;
        let targets: Vec<Option<usize>> = labels.iter().map(|&l| Some(usize::from(l))).collect();
        let (loss, d_logits) = cross_entropy(Self::logits_of(&forward), &targets)?;
        Ok((loss.wide(), self.backward_pass(&forward, &d_logits)?))
    }
}

impl<F: Real> DigitClassifier for Vit<F> {
    type Forward = VitForward<F>;

    fn forward_pass(&self, images: &[[u8; PIXELS]]) -> Result<VitForward<F>, AttnError> {
        self.forward(images)
    }

    fn logits_of(forward: &VitForward<F>) -> &Array2<F> {
        forward.logits()
    }

    fn backward_pass(&self, fwd: &VitForward<F>, d: &Array2<F>) -> Result<Self, AttnError> {
        self.backward(fwd, d)
    }
}

impl<F: Real> DigitClassifier for Perceptron<F> {
    type Forward = PerceptronForward<F>;

    fn forward_pass(&self, images: &[[u8; PIXELS]]) -> Result<PerceptronForward<F>, AttnError> {
        self.forward(images)
    }

    fn logits_of(forward: &PerceptronForward<F>) -> &Array2<F> {
        forward.logits()
    }

    fn backward_pass(&self, fwd: &PerceptronForward<F>, d: &Array2<F>) -> Result<Self, AttnError> {
        self.backward(fwd, d)
    }
}

/// How to train a classifier on the digits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VitTraining {
    /// Optimiser steps.
    pub steps: usize,
    /// Images a step.
    pub batch: usize,
    /// The peak learning rate, reached after `warmup` steps.
    pub lr: f64,
    /// Steps of linear warm-up.
    pub warmup: usize,
    /// The learning rate the cosine decays to at the last step.
    pub min_lr: f64,
    /// AdamW's weight decay, on the matrices only.
    pub weight_decay: f64,
    /// The largest global norm of the gradients (clipped to it).
    pub clip: f64,
    /// Seeds the order of the images.
    pub seed: u64,
}

/// 1,000 steps of 32 images, AdamW at 10⁻³ after 50 warm-up steps,
/// decaying to 10⁻⁴, weight decay 0.05, gradients clipped at norm 1.
pub const DIGITS_TRAINING: VitTraining = VitTraining {
    steps: 1000,
    batch: 32,
    lr: 1e-3,
    warmup: 50,
    min_lr: 1e-4,
    weight_decay: 0.05,
    clip: 1.0,
    seed: 1,
};

/// The images of `range` as a batch: their pixels and labels.
fn batch(digits: &Digits, indices: &[usize]) -> Result<(Vec<[u8; PIXELS]>, Vec<u8>), AttnError> {
    let images = indices.iter().map(|&i| digits.image(i).copied()).collect::<Result<_, _>>()?;
    let labels = indices.iter().map(|&i| digits.label(i)).collect::<Result<_, _>>()?;
    Ok((images, labels))
}

/// Trains `model` on the images of `train` by `recipe`: each step draws
/// `batch` of them, uniformly, with the recipe's generator. Returns each
/// step's training loss. Deterministic for a seed.
pub fn train_classifier<M: DigitClassifier>(
    model: &mut M,
    digits: &Digits,
    train: Range<usize>,
    recipe: &VitTraining,
) -> Result<Vec<f64>, AttnError> {
    check_nonzero(&[
        ("steps", recipe.steps),
        ("batch", recipe.batch),
        ("training images", train.len()),
    ])?;
    check_total("the training steps' images", &[recipe.steps, recipe.batch], MAX_ENTRIES)?;
    check_warmup(recipe.warmup, recipe.steps)?;
    digits.image(train.end - 1)?; // the range is inside the set
    let mut adam =
        Adam::new(model, recipe.lr)?.with_weight_decay(recipe.weight_decay, &matrices_of(model))?;
    let (floor, mut rng) = (recipe.min_lr / recipe.lr, SplitMix64::new(recipe.seed));
    let mut losses = Vec::with_capacity(recipe.steps);
    for step in 0..recipe.steps {
        let indices: Vec<usize> = (0..recipe.batch)
            .map(|_| train.start + (rng.next_u64() % train.len() as u64) as usize)
            .collect();
        let (images, labels) = batch(digits, &indices)?;
        let (loss, mut grads) = model.loss_and_gradients(&images, &labels)?;
        clip_gradient_norm(&mut grads, recipe.clip)?;
        let factor = warmup_cosine_to(step, recipe.steps, recipe.warmup, floor)?;
        adam.update(model, &grads, factor)?;
        losses.push(loss);
    }
    Ok(losses)
}

/// The share of the images of `range` whose most likely digit is their
/// label, `batch` images at a time.
pub fn accuracy<M: DigitClassifier>(
    model: &M,
    digits: &Digits,
    range: Range<usize>,
) -> Result<f64, AttnError> {
    check_nonzero(&[("images", range.len())])?;
    digits.image(range.end - 1)?;
    let mut right = 0;
    for chunk in range.clone().collect::<Vec<_>>().chunks(64) {
        let (images, labels) = batch(digits, chunk)?;
        let logits = model.logits(&images)?;
        for (row, &label) in logits.rows().into_iter().zip(&labels) {
            let best = row.iter().enumerate().fold(0, |b, (i, &x)| if x > row[b] { i } else { b });
            right += usize::from(best == usize::from(label));
        }
    }
    Ok(right as f64 / range.len() as f64)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// The small ViT the unit tests build.
    pub(crate) const SMALL: crate::vision::VitConfig = crate::vision::VitConfig {
        patch: 4,
        d_model: 8,
        heads: 2,
        layers: 2,
        d_ff: 16,
        positions: crate::vision::PatchPositions::Learned,
    };

    /// Two images whose pixels follow no pattern a model could shortcut.
    pub(crate) fn images() -> Vec<[u8; PIXELS]> {
        (0..2u32)
            .map(|b| std::array::from_fn(|i| ((i as u32 * 7 + b * 5 + i as u32 / 9) % 17) as u8))
            .collect()
    }

    /// Checks `model`'s gradients on `images` (labelled 3 and 8) against
    /// central differences, at the first, middle and last entry of every
    /// tensor.
    pub(crate) fn assert_gradients_match<M>(model: &M, images: &[[u8; PIXELS]], what: &str)
    where
        M: DigitClassifier<Real = f64> + Clone,
    {
        let labels = [3, 8];
        let (_, grads) = model.loss_and_gradients(images, &labels).unwrap();
        let loss = |m: &M| m.loss_and_gradients(images, &labels).unwrap().0;
        let h = 1e-6;
        for (t, (name, values)) in model.named_slices().into_iter().enumerate() {
            let ends = [0, values.len() / 2, values.len().saturating_sub(1)];
            for &i in ends.iter().filter(|_| !values.is_empty()) {
                let nudged = |by: f64| {
                    let mut m = model.clone();
                    m.slices_mut()[t][i] += by;
                    loss(&m)
                };
                let numeric = (nudged(h) - nudged(-h)) / (2.0 * h);
                let analytic = grads.slices()[t][i];
                let error =
                    (numeric - analytic).abs() / numeric.abs().max(analytic.abs()).max(1e-8);
                assert!(error < 1e-5, "{what} {name}[{i}]: {analytic} against {numeric}");
            }
        }
    }
}
