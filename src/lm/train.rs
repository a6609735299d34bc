//! Training the language model on random windows of its corpus, with AdamW,
//! a warm-up and cosine schedule, and gradient clipping.

use std::time::Instant;

use super::model::LanguageModel;
use crate::check::{check_total, MAX_ENTRIES};
use crate::decoder::AttentionPath;
use crate::error::AttnError;
use crate::nn::{clip_gradient_norm, warmup_cosine_to, Adam};
use crate::real::Real;

// ANCHOR: recipe
/// How to train a language model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LmTraining {
    /// Optimiser steps.
    pub steps: usize,
    /// Windows of `context + 1` characters per step.
    pub batch: usize,
    /// The peak learning rate, reached after `warmup` steps.
    pub lr: f64,
    /// Steps of linear warm-up.
    pub warmup: usize,
    /// The learning rate the cosine decays to at the last step.
    pub min_lr: f64,
    /// AdamW's `β₁, β₂`.
    pub betas: (f64, f64),
    /// AdamW's `ε`.
    pub eps: f64,
    /// AdamW's weight decay, on the matrices only.
    pub weight_decay: f64,
    /// The largest global norm of the gradients (clipped to it).
    pub clip: f64,
    /// Seeds the initial weights and the order of the windows.
    pub seed: u64,
    /// Steps between two entries of the log.
    pub log_every: usize,
    /// Windows of the validation split each log entry's validation loss is
    /// measured on (evenly spaced).
    pub log_windows: usize,
    /// How each head's attention is computed in training (the validation
    /// loss keeps chapter 2's).
    pub attention: AttentionPath,
}

/// The recipe nanoGPT trains its character-level Shakespeare model with on
/// a CPU: 2,000 steps of 12 windows, AdamW at 10⁻³ after 100 warm-up steps,
/// decaying to 10⁻⁴, weight decay 0.1, gradients clipped at norm 1.
pub const SHAKESPEARE_TRAINING: LmTraining = LmTraining {
    steps: 2000,
    batch: 12,
    lr: 1e-3,
    warmup: 100,
    min_lr: 1e-4,
    betas: (0.9, 0.99),
    eps: 1e-8,
    weight_decay: 0.1,
    clip: 1.0,
    seed: 1,
    log_every: 100,
    log_windows: 240,
    attention: AttentionPath::Weights,
};
// ANCHOR_END: recipe

/// SplitMix64 (Steele, Lea and Flood, 2014): a small generator whose
/// arithmetic any language can repeat, so that a PyTorch script trains on
/// exactly the crate's windows.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// The generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// `B` sequences of token ids.
pub type Batch = Vec<Vec<usize>>;

// ANCHOR: windows
/// `B` windows of a split: inputs `text[o..o + T]` for each offset `o`, and
/// the targets one character later, `text[o + 1..o + T + 1]`, every
/// position predicting one (window after window, as the decoder takes them).
pub fn windows(
    text: &[u8],
    offsets: &[usize],
    context: usize,
) -> Result<(Batch, Vec<Option<usize>>), AttnError> {
    let (mut inputs, mut targets) = (Vec::new(), Vec::new());
    for &o in offsets {
        // The window text[o..o + T + 1], if the text holds it.
        let end = o.checked_add(context).and_then(|end| end.checked_add(1));
        let Some(window) = end.and_then(|end| text.get(o..end)) else {
            return Err(AttnError::InvalidArgument {
                name: "window offset",
                value: o as f64,
                requirement: "must leave context + 1 characters of the text from it",
            });
        };
        let window: Vec<usize> = window.iter().map(|&c| usize::from(c)).collect();
        inputs.push(window[..context].to_vec());
        targets.extend(window[1..].iter().map(|&t| Some(t)));
    }
    Ok((inputs, targets))
}

impl LmTraining {
    /// Checks that there is at least one step of at least one window,
    /// logged every step or less often, at most [`MAX_ENTRIES`] steps (a
    /// bound on the work), and a warm-up no longer than the training; the
    /// optimiser checks its own settings.
    pub fn check(&self) -> Result<(), AttnError> {
        let counts = [("steps", self.steps), ("batch", self.batch), ("log_every", self.log_every)];
        crate::check::check_nonzero(&counts)?;
        check_total("the training steps", &[self.steps], MAX_ENTRIES)?;
        crate::nn::check_warmup(self.warmup, self.steps)?;
        Ok(())
    }
}

/// The offsets of one training step's `batch` windows: uniform over the
/// `len − context` places a window of `context + 1` characters fits. The
/// windows they will cut, `batch × (context + 1)`, are checked first.
pub fn random_offsets(
    rng: &mut SplitMix64,
    batch: usize,
    len: usize,
    context: usize,
) -> Result<Vec<usize>, AttnError> {
    check_total("a batch's windows", &[batch, context.saturating_add(1)], MAX_ENTRIES)?;
    let places = len.saturating_sub(context).max(1) as u64;
    Ok((0..batch).map(|_| (rng.next_u64() % places) as usize).collect())
}
// ANCHOR_END: windows

/// `count` offsets spread evenly over a split, from its start to the last
/// place a window fits; the windows, `count × (context + 1)`, are checked
/// first.
pub fn even_offsets(count: usize, len: usize, context: usize) -> Result<Vec<usize>, AttnError> {
    check_total("the windows", &[count, context.saturating_add(1)], MAX_ENTRIES)?;
    let last = len.saturating_sub(context.saturating_add(1));
    Ok(match count {
        0 => vec![],
        1 => vec![0],
        // i · last / (count − 1), in u128: the product can pass usize.
        _ => {
            (0..count).map(|i| (i as u128 * last as u128 / (count - 1) as u128) as usize).collect()
        }
    })
}

/// The mean loss of `model` over the windows at `offsets` of `text`,
/// `batch` windows at a time (every window counts the same).
pub fn mean_loss<F: Real>(
    model: &LanguageModel<F>,
    text: &[u8],
    offsets: &[usize],
    batch: usize,
) -> Result<f64, AttnError> {
    if offsets.is_empty() {
        return Err(AttnError::InvalidArgument {
            name: "windows",
            value: 0.0,
            requirement: "must be at least one to measure a mean loss over",
        });
    }
    let context = model.config().context;
    let mut total = 0.0;
    for chunk in offsets.chunks(batch.max(1)) {
        let (inputs, targets) = windows(text, chunk, context)?;
        total += model.loss(&inputs, &targets)? * chunk.len() as f64;
    }
    Ok(total / offsets.len() as f64)
}

/// One entry of the training log.
#[derive(Debug, Clone, PartialEq)]
pub struct LogEntry {
    /// Steps taken.
    pub step: usize,
    /// The mean training loss of the steps since the last entry.
    pub train_loss: f64,
    /// The loss on the validation windows.
    pub validation_loss: f64,
    /// The learning rate of the last step.
    pub lr: f64,
    /// Training tokens per second since the last entry (not counting the
    /// validation).
    pub tokens_per_second: f64,
}

// ANCHOR: train
/// Trains `model` on `train` (token ids) by `recipe`, logging every
/// `log_every` steps with the loss on `validation`; `after_log` sees each
/// entry and the model at that moment. Deterministic for a seed.
pub fn train_lm<F: Real>(
    model: &mut LanguageModel<F>,
    train: &[u8],
    validation: &[u8],
    recipe: &LmTraining,
    after_log: impl FnMut(&LogEntry, &LanguageModel<F>) + Send,
) -> Result<Vec<LogEntry>, AttnError> {
    let context = model.config().context;
    let eval = even_offsets(recipe.log_windows, validation.len(), context)?;
    let next_batch = |rng: &mut SplitMix64| {
        windows(train, &random_offsets(rng, recipe.batch, train.len(), context)?, context)
    };
    let validate = |model: &LanguageModel<F>| mean_loss(model, validation, &eval, recipe.batch);
    train_on_batches(model, recipe, next_batch, validate, after_log)
}

/// [`train_lm`] on the batches `next_batch` draws with the recipe's generator (inputs, and a
/// target or `None` for each position), logging what `validate` measures, on rayon's pool.
pub fn train_on_batches<F: Real>(
    model: &mut LanguageModel<F>,
    recipe: &LmTraining,
    mut next_batch: impl FnMut(&mut SplitMix64) -> Result<(Batch, Vec<Option<usize>>), AttnError> + Send,
    mut validate: impl FnMut(&LanguageModel<F>) -> Result<f64, AttnError> + Send,
    mut after_log: impl FnMut(&LogEntry, &LanguageModel<F>) + Send,
) -> Result<Vec<LogEntry>, AttnError> {
    recipe.check()?;
    let mut adam = Adam::new(model, recipe.lr)?
        .with_betas_and_eps(recipe.betas, recipe.eps)?
        .with_weight_decay(recipe.weight_decay, &model.matrices())?;
    let (floor, mut rng) = (recipe.min_lr / recipe.lr, SplitMix64::new(recipe.seed));
    let (mut log, mut losses, mut tokens, mut clock) = (Vec::new(), Vec::new(), 0, Instant::now());
    rayon::scope(|_| {
        for step in 0..recipe.steps {
            let (inputs, targets) = next_batch(&mut rng)?;
            let (loss, mut grads) =
                model.loss_and_gradients_on(&inputs, &targets, recipe.attention)?;
            clip_gradient_norm(&mut grads, recipe.clip)?;
            let factor = warmup_cosine_to(step, recipe.steps, recipe.warmup, floor)?;
            adam.update(model, &grads, factor)?;
            losses.push(loss);
            tokens += inputs.iter().map(Vec::len).sum::<usize>();
            if (step + 1) % recipe.log_every == 0 || step + 1 == recipe.steps {
                let seconds = clock.elapsed().as_secs_f64();
                let entry = LogEntry {
                    step: step + 1,
                    train_loss: losses.iter().sum::<f64>() / losses.len() as f64,
                    validation_loss: validate(model)?,
                    lr: recipe.lr * factor,
                    tokens_per_second: tokens as f64 / seconds,
                };
                after_log(&entry, model);
                log.push(entry);
                (losses, tokens, clock) = (Vec::new(), 0, Instant::now());
            }
        }
        Ok(log)
    })
}
// ANCHOR_END: train
