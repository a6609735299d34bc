//! The encoder–decoder's forward pass over a padded [`Batch`], and its
//! backward pass, each step of the forward pass undone in reverse order.

use ndarray::Array2;

use super::batch::{check_batch, Batch};
use super::model::Seq2Seq;
use crate::check::check_indices;
use crate::error::AttnError;
use crate::grad::Matrix;
use crate::linalg::linear;
use crate::masking::{causal_mask, key_padding_mask, Padding};
use crate::nn::{
    check_finite_parameters, check_logits, cross_entropy, embedding_forward, fingerprint,
    layer_norm_forward, Activation, BlockCache, Heads, LayerNormCache, Memory,
};

const EPS: f64 = 1e-5;

/// The forward pass's result: logits, cross-attention weights, and what the
/// backward pass needs.
pub struct Seq2SeqForward {
    pub(super) logits: Matrix,
    pub(super) fingerprint: u64,
    pub(super) batch: Batch,
    pub(super) lengths: (usize, usize), // S, T
    pub(super) encoder: Vec<BlockCache<f64>>,
    pub(super) encoder_ln: LayerNormCache<f64>,
    pub(super) memory: Matrix, // what the decoder attends to: BS×d, or B×d with the bottleneck
    pub(super) decoder: Vec<BlockCache<f64>>,
    pub(super) decoder_ln: LayerNormCache<f64>,
    pub(super) z: Matrix,
}

impl Seq2SeqForward {
    /// `BT×V`: row `b·T + i` scores the token after decoder input `i`.
    pub fn logits(&self) -> &Matrix {
        &self.logits
    }

    /// The `T×S` cross-attention weights of decoder `layer`, `head` and
    /// pair `b` (with the bottleneck, `T×1`).
    pub fn cross_weights(&self, layer: usize, b: usize, head: usize) -> Result<&Matrix, AttnError> {
        let heads = self
            .decoder
            .first()
            .and_then(|d| d.cross.as_ref())
            .map_or(0, |c| c.attention.heads.len())
            / self.batch.sources.len();
        let counts = [
            ("layer", layer, self.decoder.len()),
            ("pair", b, self.batch.sources.len()),
            ("head", head, heads),
        ];
        check_indices(&counts, "must be less than the forward pass's number of them")?;
        let cross = self.decoder[layer].cross.as_ref();
        let attention = &cross.expect("a decoder block has cross-attention").attention;
        attention.heads[b * heads + head].weights()
    }
}

impl Seq2Seq {
    /// The forward pass over a padded batch.
    pub fn forward(&self, batch: &Batch) -> Result<Seq2SeqForward, AttnError> {
        let (s, t) = self.check_batch(batch)?;
        check_finite_parameters(self)?;
        let (h, bottleneck) = (self.config.heads, self.config.bottleneck);
        // Each pair's key-padding masks: its source's real words, for the
        // encoder's s queries and the decoder's t.
        let real = |rows: usize| -> Result<Vec<Array2<bool>>, AttnError> {
            let lengths = batch.source_lengths.iter();
            lengths.map(|&len| key_padding_mask(rows, len, s, Padding::Right)).collect()
        };
        let (source_real, target_real) = (real(s)?, real(t)?);
        let mut x =
            embedding_forward(&batch.sources, &self.source_embeddings, &self.source_positions);
        let mut encoder = Vec::new();
        // ANCHOR: encoder
        for block in &self.encoder {
            // x ← x + MultiHead(LayerNorm(x)), each source seeing its real
            // words; x ← x + FFN(LayerNorm(x)).
            let keep = |b: usize| source_real[b].clone();
            let heads = Heads::new(s, s, h);
            let (out, cache) = block.forward(&x, heads, keep, Activation::Gelu, EPS)?;
            x = out;
            encoder.push(cache);
        }
        let (output, encoder_ln) =
            layer_norm_forward(&x, &self.encoder_ln.gamma, &self.encoder_ln.beta, EPS)?;
        let memory = match bottleneck {
            true => pool(&output, &batch.source_lengths, s),
            false => output,
        };
        // ANCHOR_END: encoder
        let tk = if bottleneck { 1 } else { s };
        let mut y =
            embedding_forward(&batch.inputs, &self.target_embeddings, &self.target_positions);
        let mut decoder = Vec::new();
        // ANCHOR: decoder
        for block in &self.decoder {
            // y ← y + MultiHead(LayerNorm(y)), causal;
            // y ← y + MultiHead(LayerNorm(y), memory), each target seeing
            // its source's real words; y ← y + FFN(LayerNorm(y)).
            let causal = (Heads::new(t, t, h), |_: usize| causal_mask(t, t));
            let keep = |i: usize| match bottleneck {
                true => Array2::from_elem((t, 1), true),
                false => target_real[i].clone(),
            };
            let heads = Heads::new(t, tk, h);
            let memory = Memory { x: &memory, heads, keep };
            let (out, cache) =
                block.forward_with_memory(&y, causal, memory, Activation::Gelu, EPS)?;
            y = out;
            decoder.push(cache);
        }
        // ANCHOR_END: decoder
        let (z, decoder_ln) =
            layer_norm_forward(&y, &self.decoder_ln.gamma, &self.decoder_ln.beta, EPS)?;
        let logits = linear("the logits", &z, &self.head.w, Some(&self.head.b))?;
        check_logits(&logits)?;
        Ok(Seq2SeqForward {
            logits,
            fingerprint: fingerprint(self, self.config),
            batch: batch.clone(),
            lengths: (s, t),
            encoder,
            encoder_ln,
            memory,
            decoder,
            decoder_ln,
            z,
        })
    }

    /// The loss of a batch (cross-entropy over its real target tokens) and
    /// its gradient with respect to every parameter.
    pub fn loss_and_gradients(&self, batch: &Batch) -> Result<(f64, Seq2Seq), AttnError> {
        let fwd = self.forward(batch)?;
        let (loss, d_logits) = cross_entropy(&fwd.logits, &batch.targets)?;
        Ok((loss, self.backward(&fwd, &d_logits)?))
    }

    /// The loss alone.
    pub fn loss(&self, batch: &Batch) -> Result<f64, AttnError> {
        Ok(cross_entropy(&self.forward(batch)?.logits, &batch.targets)?.0)
    }

    /// Checks the batch against the model ([`check_batch`]). Returns `(S, T)`.
    fn check_batch(&self, batch: &Batch) -> Result<(usize, usize), AttnError> {
        check_batch(batch, self.config.max_lengths, self.config.vocab)
    }
}

// ANCHOR: pool
/// The mean of each sequence's real rows: `BS×d` → `B×d`.
fn pool(x: &Matrix, lengths: &[usize], s: usize) -> Matrix {
    let mut pooled = Matrix::zeros((lengths.len(), x.ncols()));
    for (b, &len) in lengths.iter().enumerate() {
        let rows = x.slice(ndarray::s![b * s..b * s + len, ..]);
        pooled.row_mut(b).assign(&(rows.sum_axis(ndarray::Axis(0)) / len as f64));
    }
    pooled
}
// ANCHOR_END: pool

#[cfg(test)]
mod tests {
    use super::super::batch::batch;
    use super::super::model::Seq2SeqConfig;
    use super::super::number_pair;
    use super::*;

    fn small(bottleneck: bool) -> (Seq2Seq, Batch) {
        let config = Seq2SeqConfig::tiny(1, bottleneck);
        let pairs: Vec<_> = [342_015, 12, 700].map(|x| number_pair(x).unwrap()).to_vec();
        let refs: Vec<(&[usize], &[usize])> =
            pairs.iter().map(|p| (&p.source[..], &p.target[..])).collect();
        (Seq2Seq::new(config, 4).unwrap(), batch(&refs).unwrap())
    }

    /// Central differences on a few entries of every tensor.
    fn largest_error(bottleneck: bool) -> (f64, String) {
        let (net, batch) = small(bottleneck);
        // A small step: LayerNorm of 0.02-sized embeddings curves sharply.
        super::super::train::largest_gradient_error(&net, &batch, 1e-6)
    }

    #[test]
    fn the_backward_pass_matches_finite_differences() {
        for bottleneck in [false, true] {
            let (error, at) = largest_error(bottleneck);
            assert!(error < 1e-5, "bottleneck {bottleneck}: {at}, relative error {error:e}");
        }
    }

    #[test]
    fn padding_does_not_change_a_pair_s_logits() {
        let (net, both) = small(false);
        let change = super::super::train::padding_change(&net, &both);
        assert!(change < 1e-10, "{change:e}");
    }

    #[test]
    fn another_model_s_forward_pass_is_refused() {
        let (net, batch) = small(false);
        let (other, _) = small(true);
        let fwd = other.forward(&batch).unwrap();
        let d = Matrix::zeros(fwd.logits().dim());
        assert!(net.backward(&fwd, &d).is_err());
        assert!(fwd.cross_weights(0, 3, 0).is_err());
        assert_eq!(fwd.cross_weights(0, 0, 1).unwrap().dim(), (7, 1));
    }
}
