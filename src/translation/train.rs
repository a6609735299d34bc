//! Training the encoder–decoder with teacher forcing, translating with
//! greedy decoding or beam search, and scoring translations.

use ndarray_rand::rand::{rngs::StdRng, Rng, SeedableRng};

use super::batch::{batch, Batch};
use super::model::{Seq2Seq, Seq2SeqConfig};
use super::{
    beam_search, corpus_bleu, translation_set, Bleu, TranslationPair, BOS, EOS, TARGET_VOCAB,
};
use crate::check::{check_total, MAX_ENTRIES};
use crate::error::AttnError;
use crate::nn::{log_softmax, smoothed_cross_entropy, warmup_cosine, Adam};

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
    /// Label smoothing `ε` (0: plain cross-entropy).
    pub label_smoothing: f64,
}

/// The book's model: 2 encoder and 2 decoder layers of width 32 with 4
/// heads, sources up to 12 words and targets up to 7 tokens after BOS.
pub const BOOK_SEQ2SEQ: Seq2SeqConfig = Seq2SeqConfig {
    d_model: 32,
    heads: 4,
    d_ff: 64,
    layers: 2,
    max_lengths: (12, 8),
    bottleneck: false,
};

/// The book's training run: 1,500 steps of 32 pairs.
pub const BOOK_SEQ2SEQ_TRAINING: Seq2SeqTraining = Seq2SeqTraining {
    steps: 1500,
    batch: 32,
    lr: 3e-3,
    warmup: 100,
    seed: 1,
    label_smoothing: 0.0,
};

/// The book's data: `(count, seed)` of the held-out numbers, drawn first,
/// and of the training numbers, drawn from the rest.
pub const BOOK_PAIRS: [(usize, u64); 2] = [(1000, 2026), (5000, 12)];

/// The book's held-out pairs and training pairs (no number in both).
pub fn book_pairs() -> Result<(Vec<TranslationPair>, Vec<TranslationPair>), AttnError> {
    let [(held_out_count, held_out_seed), (train_count, train_seed)] = BOOK_PAIRS;
    let held_out = translation_set(held_out_count, held_out_seed, &[])?;
    let train = translation_set(train_count, train_seed, &held_out)?;
    Ok((held_out, train))
}

// ANCHOR: train
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
    let (s, t) = config.max_lengths;
    let widest = config.d_model.max(config.d_ff).max(TARGET_VOCAB); // the widest activation
    let activations = [training.batch, s.max(t + 1), widest];
    check_total("a batch's activations", &activations, MAX_ENTRIES)?;
    check_total("the losses of every step", &[training.steps], MAX_ENTRIES)?;
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
        let batch = batch(&refs)?;
        let fwd = net.forward(&batch)?;
        let (loss, d_logits) =
            smoothed_cross_entropy(fwd.logits(), &batch.targets, training.label_smoothing)?;
        let grads = net.backward(&fwd, &d_logits)?;
        let factor = warmup_cosine(step, training.steps, training.warmup)?;
        adam.update(&mut net, &grads, factor)?;
        losses.push(loss);
    }
    Ok((net, losses))
}
// ANCHOR_END: train

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
    Ok(log_softmax(&fwd.logits().row(t - 1)).to_vec())
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

/// Translates every source of `pairs` with beam width `width`.
pub fn translate_all(
    net: &Seq2Seq,
    pairs: &[TranslationPair],
    width: usize,
) -> Result<Vec<Vec<usize>>, AttnError> {
    pairs
        .iter()
        .map(|p| translate(net, &p.source, width))
        .collect()
}

/// Exact-sequence accuracy and corpus BLEU of `candidates`, one for each
/// pair of `pairs`.
pub fn score(
    candidates: &[Vec<usize>],
    pairs: &[TranslationPair],
) -> Result<(f64, Bleu), AttnError> {
    let references: Vec<Vec<usize>> = pairs.iter().map(|p| p.target.clone()).collect();
    let bleu = corpus_bleu(candidates, &references)?;
    let exact = candidates
        .iter()
        .zip(&references)
        .filter(|(c, r)| c == r)
        .count();
    Ok((exact as f64 / pairs.len() as f64, bleu))
}

/// Exact-sequence accuracy and corpus BLEU of translating `pairs` with
/// beam width `width`.
pub fn evaluate(
    net: &Seq2Seq,
    pairs: &[TranslationPair],
    width: usize,
) -> Result<(f64, Bleu), AttnError> {
    score(&translate_all(net, pairs, width)?, pairs)
}
