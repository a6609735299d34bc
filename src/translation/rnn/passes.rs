//! The recurrent encoder–decoder's forward pass over a padded [`Batch`],
//! and its backward pass.

use ndarray::{s, Array2, Axis};

use super::RnnSeq2Seq;
use crate::error::AttnError;
use crate::grad::Matrix;
use crate::linalg::{linear, linear_backward};
use crate::nn::additive::{additive_backward, additive_forward, AdditiveCache};
use crate::nn::gru::{gru_backward, gru_forward, GruCache};
use crate::nn::{check_finite_parameters, check_same_model, fingerprint};
use crate::translation::batch::{check_batch, Batch};
use crate::translation::{source_vocab_size, TARGET_VOCAB};

/// The forward pass's result: logits, attention weights, and what the
/// backward pass needs.
pub struct RnnForward {
    logits: Matrix,
    fingerprint: u64,
    batch: Batch,
    encoder: (Vec<Matrix>, Vec<Matrix>, GruCache<f64>), // inputs, states, cache
    decoder: (Vec<Matrix>, Vec<Matrix>, GruCache<f64>),
    attention: Vec<AdditiveCache<f64>>, // one a pair; none without attention
    features: Matrix,                   // BT × 2d_h: [state ; context]
}

impl RnnForward {
    /// `BT×TARGET_VOCAB`: row `b·T + i` scores the token after decoder input `i`.
    pub fn logits(&self) -> &Matrix {
        &self.logits
    }

    /// The `T×S_b` attention weights of pair `b` over its real source words,
    /// or `None` for a model without attention.
    pub fn weights(&self, b: usize) -> Option<&Matrix> {
        self.attention.get(b).map(AdditiveCache::weights)
    }
}

/// Each step's embeddings of `tokens` (`B` sequences of length `L`): `L`
/// matrices of `B × d`.
fn steps(tokens: &[Vec<usize>], embeddings: &Matrix) -> Vec<Matrix> {
    let len = tokens.first().map_or(0, Vec::len);
    let shape = (tokens.len(), embeddings.ncols());
    (0..len).map(|t| Array2::from_shape_fn(shape, |(b, i)| embeddings[[tokens[b][t], i]])).collect()
}

/// The backward pass of [`steps`]: each row of each step's gradient is
/// added to its token's.
fn steps_backward(d_steps: &[Matrix], tokens: &[Vec<usize>], d_embeddings: &mut Matrix) {
    for (t, d) in d_steps.iter().enumerate() {
        for (b, sequence) in tokens.iter().enumerate() {
            d_embeddings.row_mut(sequence[t]).scaled_add(1.0, &d.row(b));
        }
    }
}

/// Row `b` of the first `len` states: `len × d_h`.
fn rows_of(states: &[Matrix], b: usize, len: usize) -> Matrix {
    let d = states.first().map_or(0, Array2::ncols);
    Array2::from_shape_fn((len, d), |(t, i)| states[t][[b, i]])
}

impl RnnSeq2Seq {
    // ANCHOR: rnn_forward
    /// The forward pass over a padded batch.
    pub fn forward(&self, batch: &Batch) -> Result<RnnForward, AttnError> {
        let vocabularies = (source_vocab_size(), TARGET_VOCAB);
        let (s, t) = check_batch(batch, self.config.max_lengths, vocabularies)?;
        check_finite_parameters(self)?;
        let (b, d_h) = (batch.sources.len(), self.config.d_state);
        // The encoder reads each source from a zero state; a sentence that
        // has ended keeps its state, so step S − 1 holds every last state.
        let xs = steps(&batch.sources, &self.source_embeddings);
        let zero = Array2::zeros((b, d_h));
        let (hs, encoder) = gru_forward(&xs, &zero, &batch.source_lengths, &self.encoder)?;
        let last = &hs[s - 1];
        // The decoder starts from the encoder's last state.
        let ys = steps(&batch.inputs, &self.target_embeddings);
        let (states, decoder) = gru_forward(&ys, last, &vec![t; b], &self.decoder)?;
        // Each decoder state beside its context.
        let mut features = Array2::zeros((b * t, 2 * d_h));
        let mut attention = Vec::new();
        for (pair, &len) in batch.source_lengths.iter().enumerate() {
            let rows = s![pair * t..(pair + 1) * t, ..];
            let q = rows_of(&states, pair, t); // T × d_h
            features.slice_mut(rows).slice_mut(s![.., ..d_h]).assign(&q);
            let mut context = features.slice_mut(rows);
            let mut context = context.slice_mut(s![.., d_h..]);
            match &self.attention {
                Some(w) => {
                    let k = rows_of(&hs, pair, len); // its real words only
                    let (o, cache) = additive_forward([&q, &k, &k], None, w)?;
                    context.assign(&o);
                    attention.push(cache);
                }
                None => context.assign(&last.row(pair)),
            }
        }
        let logits = linear("the logits", &features, &self.output.w, Some(&self.output.b))?;
        Ok(RnnForward {
            logits,
            fingerprint: fingerprint(self, self.config),
            batch: batch.clone(),
            encoder: (xs, hs, encoder),
            decoder: (ys, states, decoder),
            attention,
            features,
        })
    }
    // ANCHOR_END: rnn_forward

    /// The gradient of every parameter, given the forward pass and the
    /// loss's gradient with respect to its logits.
    pub fn backward(&self, fwd: &RnnForward, d_logits: &Matrix) -> Result<Self, AttnError> {
        check_same_model(fwd.fingerprint, self, self.config)?;
        if d_logits.dim() != fwd.logits.dim() || d_logits.iter().any(|x| !x.is_finite()) {
            return Err(AttnError::Mismatched {
                name: "d_logits",
                requirement: "must be finite and have the logits' shape",
            });
        }
        let mut grads = self.zeros_like();
        let d_features;
        (d_features, grads.output) = linear_backward(&fwd.features, &self.output.w, d_logits)?;
        let batch = &fwd.batch;
        let (xs, hs, encoder) = &fwd.encoder;
        let (ys, states, decoder) = &fwd.decoder;
        let (b, s, t, d_h) = (batch.sources.len(), xs.len(), ys.len(), self.config.d_state);
        let mut d_hs = vec![Array2::zeros((b, d_h)); s];
        let mut d_states = vec![Array2::zeros((b, d_h)); t];
        for (pair, &len) in batch.source_lengths.iter().enumerate() {
            let rows = d_features.slice(s![pair * t..(pair + 1) * t, ..]);
            let (d_state, d_context) = rows.split_at(Axis(1), d_h);
            let mut d_q = d_state.to_owned();
            match (&self.attention, &mut grads.attention) {
                (Some(w), Some(dw)) => {
                    let (q, k) = (rows_of(states, pair, t), rows_of(hs, pair, len));
                    let cache = &fwd.attention[pair];
                    let ([dq, dk, dv], d_weights) =
                        additive_backward(cache, [&q, &k, &k], w, &d_context)?;
                    d_q += &dq;
                    for (j, (dk, dv)) in dk.rows().into_iter().zip(dv.rows()).enumerate() {
                        d_hs[j].row_mut(pair).assign(&(&dk + &dv));
                    }
                    for (g, d) in dw.matrices_mut().into_iter().zip(d_weights) {
                        *g += &d;
                    }
                }
                // The context was the last state: every step's gradient goes to it.
                _ => d_hs[s - 1].row_mut(pair).assign(&d_context.sum_axis(Axis(0))),
            }
            for (i, row) in d_q.rows().into_iter().enumerate() {
                d_states[i].row_mut(pair).assign(&row);
            }
        }
        let (d_ys, d_last, d_decoder) = gru_backward(decoder, ys, &self.decoder, &d_states);
        d_hs[s - 1] += &d_last;
        let (d_xs, _, d_encoder) = gru_backward(encoder, xs, &self.encoder, &d_hs);
        for (g, d) in grads.decoder.matrices_mut().into_iter().zip(d_decoder) {
            *g = d;
        }
        for (g, d) in grads.encoder.matrices_mut().into_iter().zip(d_encoder) {
            *g = d;
        }
        steps_backward(&d_ys, &batch.inputs, &mut grads.target_embeddings);
        steps_backward(&d_xs, &batch.sources, &mut grads.source_embeddings);
        Ok(grads)
    }
}
