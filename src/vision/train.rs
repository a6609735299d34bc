//! Training a Vision Transformer on the digits' training split: batches of
//! images drawn at random (SplitMix64, so that another program can draw
//! the same), AdamW with a warm-up and cosine schedule, and gradients
//! clipped, as chapter 16 trains its language model.

use std::ops::Range;

use super::vit::Vit;
use super::{Digits, PIXELS};
use crate::check::{check_nonzero, check_total, MAX_ENTRIES};
use crate::error::AttnError;
use crate::lm::SplitMix64;
use crate::nn::{check_warmup, clip_gradient_norm, warmup_cosine_to, Adam};
use crate::real::Real;

/// How to train a Vision Transformer on the digits.
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
pub fn train_vit<F: Real>(
    model: &mut Vit<F>,
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
        Adam::new(model, recipe.lr)?.with_weight_decay(recipe.weight_decay, &model.matrices())?;
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
pub fn accuracy<F: Real>(
    model: &Vit<F>,
    digits: &Digits,
    range: Range<usize>,
) -> Result<f64, AttnError> {
    check_nonzero(&[("images", range.len())])?;
    digits.image(range.end - 1)?;
    let mut right = 0;
    for chunk in range.clone().collect::<Vec<_>>().chunks(64) {
        let (images, labels) = batch(digits, chunk)?;
        let fwd = model.forward(&images)?;
        for (row, &label) in fwd.logits().rows().into_iter().zip(&labels) {
            let best = row.iter().enumerate().fold(0, |b, (i, &x)| if x > row[b] { i } else { b });
            right += usize::from(best == usize::from(label));
        }
    }
    Ok(right as f64 / range.len() as f64)
}
