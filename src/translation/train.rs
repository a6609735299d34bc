//! Training the encoder–decoder with teacher forcing, translating with
//! greedy decoding or beam search, and scoring translations.

use ndarray_rand::rand::{rngs::StdRng, Rng, SeedableRng};

use super::batch::{batch, Batch};
use super::model::{Seq2Seq, Seq2SeqConfig};
use super::{beam_search, corpus_bleu, Bleu, TranslationPair, BOS, EOS};
use crate::error::AttnError;
use crate::model::{warmup_cosine, Adam};

/// How to train the encoder–decoder.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Seq2SeqTraining {
    /// Optimiser steps.
    pub steps: usize,
    /// Pairs per step.
    pub batch: usize,
    /// Peak learning rate (warm-up, then cosine decay).
    pub lr: f64,
    /// Warm-up steps.
    pub warmup: usize,
    /// Seed of the initialisation and of the batches.
    pub seed: u64,
}

/// Trains a fresh model on batches drawn (seeded, with replacement) from
/// `pairs`, with teacher forcing: the decoder reads `BOS target` and learns
/// to predict `target EOS`. Returns the model and the loss of every step.
pub fn train_seq2seq(
    config: Seq2SeqConfig,
    training: &Seq2SeqTraining,
    pairs: &[TranslationPair],
) -> Result<(Seq2Seq, Vec<f64>), AttnError> {
    if pairs.is_empty() || training.batch == 0 {
        return Err(AttnError::InvalidArgument {
            name: "training pairs and batch size",
            value: pairs.len().min(training.batch) as f64,
            requirement: "must both be at least 1",
        });
    }
    let mut net = Seq2Seq::new(config, training.seed)?;
    let mut adam = Adam::new(&net, training.lr)?;
    let mut rng = StdRng::seed_from_u64(training.seed.wrapping_add(1));
    let mut losses = Vec::with_capacity(training.steps);
    for step in 0..training.steps {
        let chosen: Vec<&TranslationPair> = (0..training.batch)
            .map(|_| &pairs[rng.random_range(0..pairs.len())])
            .collect();
        let refs: Vec<(&[usize], &[usize])> = chosen
            .iter()
            .map(|p| (&p.source[..], &p.target[..]))
            .collect();
        let (loss, grads) = net.loss_and_gradients(&batch(&refs)?)?;
        let factor = warmup_cosine(step, training.steps, training.warmup)?;
        adam.update(&mut net, &grads, factor)?;
        losses.push(loss);
    }
    Ok((net, losses))
}

/// The log-probabilities of every next target token after `prefix`, for
/// the source `source`.
pub fn next_log_probs(
    net: &Seq2Seq,
    source: &[usize],
    prefix: &[usize],
) -> Result<Vec<f64>, AttnError> {
    let mut input = vec![BOS];
    input.extend_from_slice(prefix);
    let t = input.len();
    let one = Batch {
        sources: vec![source.to_vec()],
        inputs: vec![input],
        targets: vec![None; t],
        source_lengths: vec![source.len()],
    };
    let fwd = net.forward(&one)?;
    let last = fwd.logits().row(t - 1);
    let max = last.fold(f64::NEG_INFINITY, |m, &z| m.max(z));
    let log_sum = last.iter().map(|z| (z - max).exp()).sum::<f64>().ln() + max;
    Ok(last.iter().map(|z| z - log_sum).collect())
}

/// Translates `source` by beam search of `width` (1: greedy), stopping at
/// EOS or at the model's longest target. Returns the tokens without EOS.
pub fn translate(net: &Seq2Seq, source: &[usize], width: usize) -> Result<Vec<usize>, AttnError> {
    let max_len = net.config().max_lengths.1;
    let best = beam_search(
        |prefix| next_log_probs(net, source, prefix),
        EOS,
        width,
        max_len,
    )?;
    let mut tokens = best.tokens;
    if tokens.last() == Some(&EOS) {
        tokens.pop();
    }
    Ok(tokens)
}

/// Exact-sequence accuracy and corpus BLEU of translating `pairs` with
/// beam width `width`.
pub fn evaluate(
    net: &Seq2Seq,
    pairs: &[TranslationPair],
    width: usize,
) -> Result<(f64, Bleu), AttnError> {
    let mut candidates = Vec::with_capacity(pairs.len());
    for p in pairs {
        candidates.push(translate(net, &p.source, width)?);
    }
    let references: Vec<Vec<usize>> = pairs.iter().map(|p| p.target.clone()).collect();
    let exact = candidates
        .iter()
        .zip(&references)
        .filter(|(c, r)| c == r)
        .count();
    Ok((
        exact as f64 / pairs.len().max(1) as f64,
        corpus_bleu(&candidates, &references)?,
    ))
}
