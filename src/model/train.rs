//! Training the tiny Transformer: Adam, the learning-rate schedule and the
//! training loop (chapter 12).

use std::collections::HashSet;

use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

use super::{inputs_and_targets, ModelConfig, Task, TinyTransformer, VOCAB};
use crate::check::{check_total, MAX_ENTRIES};
use crate::error::AttnError;
use crate::nn::{check_learning_rate, warmup_cosine, Adam};

// ANCHOR: book_config
/// The model chapter 12 trains: 8 digits, width 32, 2 heads, 2 blocks.
pub const BOOK_MODEL: ModelConfig =
    ModelConfig { k: 8, d_model: 32, heads: 2, d_ff: 128, layers: 2 };
/// How chapter 12 trains it: 600 steps of 64 sequences, peak learning rate
/// 3·10⁻³ after 30 warm-up steps.
pub const BOOK_TRAINING: TrainConfig =
    TrainConfig { steps: 600, batch: 64, lr: 3e-3, warmup: 30, seed: 1, task: Task::REVERSE };
/// The held-out set: 1000 distinct examples, seed 99.
pub const HELD_OUT: (usize, u64) = (1000, 99);
// ANCHOR_END: book_config

/// How to train.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrainConfig {
    /// Optimiser steps.
    pub steps: usize,
    /// Sequences per step.
    pub batch: usize,
    /// Peak learning rate.
    pub lr: f64,
    /// Steps of linear warm-up from 0 to `lr`, after which it decays as a
    /// cosine to 0 at `steps`.
    pub warmup: usize,
    /// Seed of the initialisation and of the training data.
    pub seed: u64,
    /// The task the training examples are drawn from.
    pub task: Task,
}

/// The learning-rate factor at `step`: linear warm-up, then cosine decay.
pub fn schedule(step: usize, c: &TrainConfig) -> Result<f64, AttnError> {
    c.check()?;
    warmup_cosine(step, c.steps, c.warmup)
}

/// Trains a fresh model on random examples of `c.task`, never drawing one of
/// `exclude` (the held-out set). Returns the model and the loss of every step.
pub fn train(
    model: ModelConfig,
    c: &TrainConfig,
    exclude: &[Vec<usize>],
) -> Result<(TinyTransformer, Vec<f64>), AttnError> {
    train_with(model, c, exclude, |_, _| {})
}

// ANCHOR: train
/// [`train`], calling `after_step(step, model)` after every step (to
/// measure held-out accuracy while training, say).
pub fn train_with(
    model: ModelConfig,
    c: &TrainConfig,
    exclude: &[Vec<usize>],
    mut after_step: impl FnMut(usize, &TinyTransformer),
) -> Result<(TinyTransformer, Vec<f64>), AttnError> {
    check_training(model, c)?; // sizes a batch and the log can hold
    let mut net = TinyTransformer::new(model, c.seed)?; // checks the configuration
    let mut adam = Adam::new(&net, c.lr)?;
    let mut rng = StdRng::seed_from_u64(c.seed.wrapping_add(1)); // any seed, even u64::MAX
    let excluded: HashSet<&Vec<usize>> = exclude.iter().collect();
    check_exclusion(excluded.len(), model.k)?; // else drawing could never end
    let mut losses = Vec::with_capacity(c.steps);
    for step in 0..c.steps {
        let mut examples = Vec::with_capacity(c.batch);
        while examples.len() < c.batch {
            let e = c.task.example(model.k, &mut rng)?;
            if !excluded.contains(&e) {
                examples.push(e);
            }
        }
        let (inputs, targets) = inputs_and_targets(&examples, model.k)?;
        let (loss, grads) = net.loss_and_gradients(&inputs, &targets)?;
        adam.update(&mut net, &grads, schedule(step, c)?)?;
        losses.push(loss);
        after_step(step, &net);
    }
    Ok((net, losses))
}
// ANCHOR_END: train

/// Checks that a batch's activations and the log of every step's loss fit
/// in memory.
fn check_training(model: ModelConfig, c: &TrainConfig) -> Result<(), AttnError> {
    c.check()?;
    let widest = model.d_model.max(model.d_ff).max(VOCAB); // the widest activation
    check_total("a batch's activations", &[c.batch, model.context(), widest], MAX_ENTRIES)?;
    check_total("the losses of every step", &[c.steps], MAX_ENTRIES)?;
    Ok(())
}

impl TrainConfig {
    /// Checks that there is at least one step of at least one sequence, a
    /// positive learning rate, and a warm-up no longer than the training.
    pub fn check(&self) -> Result<(), AttnError> {
        for (name, count) in [("steps", self.steps), ("batch", self.batch)] {
            if count == 0 {
                return Err(AttnError::InvalidArgument {
                    name,
                    value: 0.0,
                    requirement: "must be at least 1",
                });
            }
        }
        crate::nn::check_warmup(self.warmup, self.steps)?;
        check_learning_rate(self.lr)
    }
}

/// Training draws examples until it finds ones not excluded: `excluded`
/// distinct examples may be at most half of the `10^k` possible ones, as
/// for [`crate::model::held_out`].
fn check_exclusion(excluded: usize, k: usize) -> Result<(), AttnError> {
    let possible = u32::try_from(k).ok().and_then(|k| 10usize.checked_pow(k)).unwrap_or(usize::MAX);
    if excluded > possible / 2 {
        return Err(AttnError::InvalidArgument {
            name: "excluded examples",
            value: excluded as f64,
            requirement: "must be at most half the 10^k possible sequences, or training \
                          could not draw new ones",
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::Parameters;

    fn small() -> ModelConfig {
        crate::model::gradcheck::SMALL
    }

    #[test]
    fn adam_moves_each_parameter_by_about_lr_on_its_first_step() {
        let mut net = TinyTransformer::new(small(), 2).unwrap();
        let before = net.clone();
        let mut grads = net.zeros_like();
        grads.tokens.fill(3.0);
        let mut adam = Adam::new(&net, 0.01).unwrap();
        adam.update(&mut net, &grads, 1.0).unwrap();
        let moved = &before.tokens - &net.tokens;
        assert!(moved.iter().all(|&m| (m - 0.01).abs() < 1e-9), "m̂/√v̂ = 1 on step 1");
        assert_eq!(net.positions, before.positions, "zero gradient, no move");
    }

    #[test]
    fn adam_refuses_a_gradient_that_is_not_finite() {
        let mut net = TinyTransformer::new(small(), 2).unwrap();
        let mut grads = net.zeros_like();
        grads.blocks[0].attn.matrices_mut()[1][[0, 3]] = f64::NAN;
        let mut adam = Adam::new(&net, 0.01).unwrap();
        let err = adam.update(&mut net, &grads, 1.0).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the gradient of blocks.0.w_k holds NaN: a step would make the parameters non-finite"
        );
        assert!(net.slices().iter().all(|s| s.iter().all(|x| x.is_finite())));
    }
}
