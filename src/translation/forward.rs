//! The encoder–decoder's forward pass over a padded [`Batch`], and its
//! backward pass, each step of the forward pass undone in reverse order.

use ndarray::Array2;

use super::batch::{check_batch, Batch};
use super::model::Seq2Seq;
use crate::check::check_indices;
use crate::error::AttnError;
use crate::linalg::matmul;
use crate::grad::Matrix;
use crate::nn::{
    attention_sublayer, check_finite_parameters, check_logits, cross_entropy, embedding_forward,
    ffn_sublayer, fingerprint, layer_norm_forward, Activation, AttentionSublayerCache,
    FfnSublayerCache, Heads, LayerNormCache,
};

const EPS: f64 = 1e-5;

/// What one encoder layer keeps.
pub(super) struct EncoderCache {
    pub(super) attention: AttentionSublayerCache<f64>,
    pub(super) ffn: FfnSublayerCache<f64>,
}

/// What one decoder layer keeps.
pub(super) struct DecoderCache {
    pub(super) self_attention: AttentionSublayerCache<f64>,
    pub(super) cross_attention: AttentionSublayerCache<f64>,
    pub(super) ffn: FfnSublayerCache<f64>,
}

/// The forward pass's result: logits, cross-attention weights, and what the
/// backward pass needs.
pub struct Seq2SeqForward {
    pub(super) logits: Matrix,
    pub(super) fingerprint: u64,
    pub(super) batch: Batch,
    pub(super) lengths: (usize, usize), // S, T
    pub(super) encoder: Vec<EncoderCache>,
    pub(super) encoder_ln: LayerNormCache<f64>,
    pub(super) memory: Matrix, // what the decoder attends to: BS×d, or B×d with the bottleneck
    pub(super) decoder: Vec<DecoderCache>,
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
            .map_or(0, |d| d.cross_attention.attention.heads.len())
            / self.batch.sources.len();
        let counts = [
            ("layer", layer, self.decoder.len()),
            ("pair", b, self.batch.sources.len()),
            ("head", head, heads),
        ];
        check_indices(
            &counts,
            "must be less than the forward pass's number of them",
        )?;
        let attention = &self.decoder[layer].cross_attention.attention;
        attention.heads[b * heads + head].weights()
    }
}

impl Seq2Seq {
    /// The forward pass over a padded batch.
    pub fn forward(&self, batch: &Batch) -> Result<Seq2SeqForward, AttnError> {
        let (s, t) = self.check_batch(batch)?;
        check_finite_parameters(self)?;
        let (h, bottleneck) = (self.config.heads, self.config.bottleneck);
        let real = |len: usize, rows: usize| Array2::from_shape_fn((rows, s), |(_, j)| j < len);
        let mut x = embedding_forward(
            &batch.sources,
            &self.source_embeddings,
            &self.source_positions,
        );
        let mut encoder = Vec::new();
        // ANCHOR: encoder
        for e in &self.encoder {
            // x ← x + MultiHead(LayerNorm(x)), each source seeing its real words.
            let keep = |b: usize| real(batch.source_lengths[b], s);
            let heads = Heads::new(s, s, h);
            let sublayer = (&e.attention.ln, &e.attention.w);
            let (att, attention) = attention_sublayer(&x, None, sublayer, heads, keep, EPS)?;
            x += &att;
            // x ← x + FFN(LayerNorm(x)).
            let (f, ffn) = ffn_sublayer(&x, (&e.ln, &e.ffn), Activation::Gelu, EPS);
            x += &f;
            encoder.push(EncoderCache { attention, ffn });
        }
        let (output, encoder_ln) =
            layer_norm_forward(&x, &self.encoder_ln[0], &self.encoder_ln[1], EPS);
        let memory = match bottleneck {
            true => pool(&output, &batch.source_lengths, s),
            false => output,
        };
        // ANCHOR_END: encoder
        let tk = if bottleneck { 1 } else { s };
        let mut y = embedding_forward(
            &batch.inputs,
            &self.target_embeddings,
            &self.target_positions,
        );
        let mut decoder = Vec::new();
        // ANCHOR: decoder
        for d in &self.decoder {
            // y ← y + MultiHead(LayerNorm(y)), causal.
            let causal = |_: usize| Array2::from_shape_fn((t, t), |(i, j)| j <= i);
            let heads = Heads::new(t, t, h);
            let sublayer = (&d.self_attention.ln, &d.self_attention.w);
            let (out, self_attention) = attention_sublayer(&y, None, sublayer, heads, causal, EPS)?;
            y += &out;
            // y ← y + MultiHead(LayerNorm(y), memory): cross-attention.
            let keep = |i: usize| match bottleneck {
                true => Array2::from_elem((t, 1), true),
                false => real(batch.source_lengths[i], t),
            };
            let heads = Heads::new(t, tk, h);
            let sublayer = (&d.cross_attention.ln, &d.cross_attention.w);
            let (out, cross_attention) =
                attention_sublayer(&y, Some(&memory), sublayer, heads, keep, EPS)?;
            y += &out;
            // y ← y + FFN(LayerNorm(y)).
            let (f, ffn) = ffn_sublayer(&y, (&d.ln, &d.ffn), Activation::Gelu, EPS);
            y += &f;
            decoder.push(DecoderCache {
                self_attention,
                cross_attention,
                ffn,
            });
        }
        // ANCHOR_END: decoder
        let (z, decoder_ln) = layer_norm_forward(&y, &self.decoder_ln[0], &self.decoder_ln[1], EPS);
        let logits = matmul(&z, &self.head.0) + &self.head.1;
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
        pooled
            .row_mut(b)
            .assign(&(rows.sum_axis(ndarray::Axis(0)) / len as f64));
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
        let refs: Vec<(&[usize], &[usize])> = pairs
            .iter()
            .map(|p| (&p.source[..], &p.target[..]))
            .collect();
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
            assert!(
                error < 1e-5,
                "bottleneck {bottleneck}: {at}, relative error {error:e}"
            );
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
