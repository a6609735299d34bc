//! Training the encoder–decoder with teacher forcing, translating with
//! greedy decoding or beam search, and scoring translations.

use ndarray_rand::rand::{rngs::StdRng, Rng, SeedableRng};

use super::batch::{batch, Batch};
use super::model::{Seq2Seq, Seq2SeqConfig};
use super::rnn::{RnnConfig, RnnForward, RnnSeq2Seq};
use super::{
    beam_search, corpus_bleu, translation_set, Bleu, Seq2SeqForward, SummaryPair, TranslationPair,
    BOS, EOS, NUMBER_VOCAB, TARGET_VOCAB,
};
use crate::check::{check_total, MAX_ENTRIES};
use crate::error::AttnError;
use crate::grad::Matrix;
use crate::nn::{log_softmax, smoothed_cross_entropy, warmup_cosine, Adam, Parameters};

/// A training or held-out example of an encoder–decoder task: source ids
/// and target ids, without `BOS` or `EOS`.
pub trait Example {
    /// The source's ids.
    fn source(&self) -> &[usize];
    /// The target's ids.
    fn target(&self) -> &[usize];
}

impl Example for TranslationPair {
    fn source(&self) -> &[usize] {
        &self.source
    }
    fn target(&self) -> &[usize] {
        &self.target
    }
}

impl Example for SummaryPair {
    fn source(&self) -> &[usize] {
        &self.source
    }
    fn target(&self) -> &[usize] {
        &self.target
    }
}

/// An encoder–decoder that the training loop and the decoders can drive:
/// the book's Transformer ([`Seq2Seq`]) and the recurrent models
/// ([`RnnSeq2Seq`]).
pub trait EncoderDecoder: Parameters<Real = f64> + Sized {
    /// What the forward pass keeps for the backward pass.
    type Forward;
    /// The longest source, in words, and the longest decoder input, in
    /// tokens including BOS.
    fn max_lengths(&self) -> (usize, usize);
    /// The forward pass over a padded batch.
    fn forward_pass(&self, batch: &Batch) -> Result<Self::Forward, AttnError>;
    /// The forward pass's logits, `BT × V` (the target vocabulary).
    fn logits_of(fwd: &Self::Forward) -> &Matrix;
    /// Every parameter's gradient, given the loss's gradient `dZ` with
    /// respect to the logits.
    fn backward_pass(&self, fwd: &Self::Forward, d_logits: &Matrix) -> Result<Self, AttnError>;
}

/// The sizes of an [`EncoderDecoder`], from which a fresh one is built.
pub trait ModelConfig: Copy {
    /// The model it configures.
    type Model: EncoderDecoder;
    /// A freshly initialised model, from `seed`.
    fn build(self, seed: u64) -> Result<Self::Model, AttnError>;
    /// The widest activation of one position of a batch.
    fn widest_activation(&self) -> usize;
}

impl EncoderDecoder for Seq2Seq {
    type Forward = Seq2SeqForward;
    fn max_lengths(&self) -> (usize, usize) {
        self.config.max_lengths
    }
    fn forward_pass(&self, batch: &Batch) -> Result<Seq2SeqForward, AttnError> {
        self.forward(batch)
    }
    fn logits_of(fwd: &Seq2SeqForward) -> &Matrix {
        fwd.logits()
    }
    fn backward_pass(&self, fwd: &Seq2SeqForward, d_logits: &Matrix) -> Result<Self, AttnError> {
        self.backward(fwd, d_logits)
    }
}

impl ModelConfig for Seq2SeqConfig {
    type Model = Seq2Seq;
    fn build(self, seed: u64) -> Result<Seq2Seq, AttnError> {
        Seq2Seq::new(self, seed)
    }
    fn widest_activation(&self) -> usize {
        self.d_model.max(self.d_ff).max(self.vocab.1)
    }
}

impl EncoderDecoder for RnnSeq2Seq {
    type Forward = RnnForward;
    fn max_lengths(&self) -> (usize, usize) {
        self.config.max_lengths
    }
    fn forward_pass(&self, batch: &Batch) -> Result<RnnForward, AttnError> {
        self.forward(batch)
    }
    fn logits_of(fwd: &RnnForward) -> &Matrix {
        fwd.logits()
    }
    fn backward_pass(&self, fwd: &RnnForward, d_logits: &Matrix) -> Result<Self, AttnError> {
        self.backward(fwd, d_logits)
    }
}

impl ModelConfig for RnnConfig {
    type Model = RnnSeq2Seq;
    fn build(self, seed: u64) -> Result<RnnSeq2Seq, AttnError> {
        RnnSeq2Seq::new(self, seed)
    }
    fn widest_activation(&self) -> usize {
        (3 * self.d_state).max(self.d_embed).max(TARGET_VOCAB)
    }
}

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
    vocab: NUMBER_VOCAB,
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
pub fn train_seq2seq<C: ModelConfig, P: Example>(
    config: C,
    training: &Seq2SeqTraining,
    pairs: &[P],
) -> Result<(C::Model, Vec<f64>), AttnError> {
    if pairs.is_empty() || training.batch == 0 {
        return Err(AttnError::InvalidArgument {
            name: "training pairs and batch size",
            value: pairs.len().min(training.batch) as f64,
            requirement: "must both be at least 1",
        });
    }
    check_total("the losses of every step", &[training.steps], MAX_ENTRIES)?;
    let mut net = config.build(training.seed)?;
    let (s, t) = net.max_lengths();
    let activations = [training.batch, s.max(t + 1), config.widest_activation()];
    check_total("a batch's activations", &activations, MAX_ENTRIES)?;
    let mut adam = Adam::new(&net, training.lr)?;
    let mut rng = StdRng::seed_from_u64(training.seed.wrapping_add(1));
    let mut losses = Vec::with_capacity(training.steps);
    for step in 0..training.steps {
        let chosen: Vec<&P> =
            (0..training.batch).map(|_| &pairs[rng.random_range(0..pairs.len())]).collect();
        let refs: Vec<(&[usize], &[usize])> =
            chosen.iter().map(|p| (p.source(), p.target())).collect();
        let batch = batch(&refs)?;
        let fwd = net.forward_pass(&batch)?;
        let logits = C::Model::logits_of(&fwd);
        let (loss, d_logits) =
            smoothed_cross_entropy(logits, &batch.targets, training.label_smoothing)?;
        let grads = net.backward_pass(&fwd, &d_logits)?;
        let factor = warmup_cosine(step, training.steps, training.warmup)?;
        adam.update(&mut net, &grads, factor)?;
        losses.push(loss);
    }
    Ok((net, losses))
}
// ANCHOR_END: train

/// The log-probabilities of every next target token after `prefix`, for
/// the source `source`.
pub fn next_log_probs<M: EncoderDecoder>(
    net: &M,
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
    let fwd = net.forward_pass(&one)?;
    Ok(log_softmax(&M::logits_of(&fwd).row(t - 1)).to_vec())
}

/// Translates `source` by beam search of `width` (1: greedy), stopping at
/// EOS or at the model's longest target. Returns the tokens without EOS.
pub fn translate<M: EncoderDecoder>(
    net: &M,
    source: &[usize],
    width: usize,
) -> Result<Vec<usize>, AttnError> {
    let max_len = net.max_lengths().1;
    let best = beam_search(|prefix| next_log_probs(net, source, prefix), EOS, width, max_len)?;
    let mut tokens = best.tokens;
    if tokens.last() == Some(&EOS) {
        tokens.pop();
    }
    Ok(tokens)
}

/// Translates every source of `pairs` with beam width `width`.
pub fn translate_all<M: EncoderDecoder, P: Example>(
    net: &M,
    pairs: &[P],
    width: usize,
) -> Result<Vec<Vec<usize>>, AttnError> {
    pairs.iter().map(|p| translate(net, p.source(), width)).collect()
}

/// Exact-sequence accuracy and corpus BLEU of `candidates`, one for each
/// pair of `pairs`.
pub fn score<P: Example>(candidates: &[Vec<usize>], pairs: &[P]) -> Result<(f64, Bleu), AttnError> {
    let references: Vec<Vec<usize>> = pairs.iter().map(|p| p.target().to_vec()).collect();
    let bleu = corpus_bleu(candidates, &references)?;
    let exact = candidates.iter().zip(&references).filter(|(c, r)| c == r).count();
    Ok((exact as f64 / pairs.len() as f64, bleu))
}

/// Exact-sequence accuracy and corpus BLEU of translating `pairs` with
/// beam width `width`.
pub fn evaluate<M: EncoderDecoder, P: Example>(
    net: &M,
    pairs: &[P],
    width: usize,
) -> Result<(f64, Bleu), AttnError> {
    score(&translate_all(net, pairs, width)?, pairs)
}

/// The largest relative error, and where, between the backward pass's
/// gradient of the batch's cross-entropy and central differences of step
/// `delta`, on the first, middle and last entry of every tensor.
#[cfg(test)]
pub(crate) fn largest_gradient_error<M: EncoderDecoder + Clone>(
    net: &M,
    batch: &Batch,
    delta: f64,
) -> (f64, String) {
    use crate::nn::cross_entropy;
    let loss = |net: &M| {
        let fwd = net.forward_pass(batch).unwrap();
        cross_entropy(M::logits_of(&fwd), &batch.targets).unwrap()
    };
    let fwd = net.forward_pass(batch).unwrap();
    let grads = net.backward_pass(&fwd, &loss(net).1).unwrap();
    let names: Vec<String> = net.named_slices().into_iter().map(|(n, _)| n).collect();
    let mut worst = (0.0, String::new());
    for (t, values) in grads.slices().iter().enumerate() {
        for i in [0, values.len() / 2, values.len() - 1] {
            let at = |x: f64| {
                let mut probe = net.clone();
                probe.slices_mut()[t][i] = x;
                loss(&probe).0
            };
            let x = net.slices()[t][i];
            let numeric = (at(x + delta) - at(x - delta)) / (2.0 * delta);
            let error = (numeric - values[i]).abs() / numeric.abs().max(values[i].abs()).max(1e-4);
            if error > worst.0 {
                worst = (error, format!("{} [{i}]: {} vs {numeric}", names[t], values[i]));
            }
        }
    }
    worst
}

/// The largest change in the logits of the pair of 12 (the second pair of
/// `both`) between translating it in `both` and alone: padding must not
/// reach a pair's logits.
#[cfg(test)]
pub(crate) fn padding_change<M: EncoderDecoder>(net: &M, both: &Batch) -> f64 {
    let p = super::number_pair(12).unwrap();
    assert_eq!(both.sources[1][..p.source.len()], p.source[..], "the second pair is 12");
    let alone = batch(&[(&p.source[..], &p.target[..])]).unwrap();
    let (t_alone, t_both) = (alone.inputs[0].len(), both.inputs[0].len());
    let l_alone = M::logits_of(&net.forward_pass(&alone).unwrap()).clone();
    let l_both = M::logits_of(&net.forward_pass(both).unwrap()).clone();
    let cells = (0..t_alone).flat_map(|i| (0..l_alone.ncols()).map(move |v| (i, v)));
    cells.map(|(i, v)| (l_alone[[i, v]] - l_both[[t_both + i, v]]).abs()).fold(0.0, f64::max)
}
