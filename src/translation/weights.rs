//! Saving and reading the encoder–decoder's weights, in the checkpoint
//! format of [`crate::nn`].

use super::model::{check_config, Seq2Seq, Seq2SeqConfig};

use crate::error::AttnError;
use crate::nn::{read_checkpoint, read_header, write_checkpoint};

impl Seq2SeqConfig {
    /// A model small enough for unit tests: `d_model` 8, 2 heads, `d_ff` 12.
    #[cfg(test)]
    pub(crate) fn tiny(layers: usize, bottleneck: bool) -> Self {
        let (d_model, heads, d_ff, max_lengths) = (8, 2, 12, (12, 8));
        Seq2SeqConfig {
            d_model,
            heads,
            d_ff,
            layers,
            max_lengths,
            bottleneck,
            vocab: super::NUMBER_VOCAB,
        }
    }

    /// The number of parameters of a model of this configuration, or
    /// `None` if it does not fit in a `usize`.
    pub fn parameter_count(&self) -> Option<usize> {
        let (d, f, l) = (self.d_model, self.d_ff, self.layers);
        let (s, t) = self.max_lengths;
        let (v_s, v_t) = self.vocab;
        let rows = v_s.checked_add(v_t)?.checked_add(s)?.checked_add(t)?;
        let embeddings = rows.checked_mul(d)?;
        let attention = d.checked_mul(d)?.checked_mul(4)?.checked_add(2 * d)?;
        let ffn = d.checked_mul(f)?.checked_mul(2)?.checked_add(f + 3 * d)?;
        let encoder = attention.checked_add(ffn)?.checked_mul(l)?;
        let decoder = attention.checked_mul(2)?.checked_add(ffn)?.checked_mul(l)?;
        let rest = d.checked_mul(v_t.checked_add(4)?)?.checked_add(v_t)?;
        [embeddings, encoder, decoder, rest].into_iter().try_fold(0_usize, usize::checked_add)
    }
}

impl Seq2Seq {
    /// The weights as text, with the header `seq2seq d_model heads d_ff
    /// layers longest_source longest_target bottleneck source_vocabulary
    /// target_vocabulary` (`bottleneck` 0 or 1); an error names a weight
    /// that is not finite as an `f32`.
    pub fn to_text(&self) -> Result<String, AttnError> {
        let c = self.config;
        let header = format!(
            "seq2seq {} {} {} {} {} {} {} {} {}",
            c.d_model,
            c.heads,
            c.d_ff,
            c.layers,
            c.max_lengths.0,
            c.max_lengths.1,
            u8::from(c.bottleneck),
            c.vocab.0,
            c.vocab.1
        );
        write_checkpoint(&header, self)
    }

    /// Reads what [`Self::to_text`] wrote, trusting nothing in the file.
    pub fn from_text(text: &str) -> Result<Self, AttnError> {
        let invalid = |reason: String| AttnError::InvalidWeights { reason };
        let header = read_header(text, "seq2seq ")?;
        let [d_model, heads, d_ff, layers, s, t, bottleneck, v_s, v_t] = header[..] else {
            return Err(invalid(format!("the header has {} numbers, expected 9", header.len())));
        };
        if bottleneck > 1 {
            return Err(invalid(format!("header: bottleneck is {bottleneck}, not 0 or 1")));
        }
        let config = Seq2SeqConfig {
            d_model,
            heads,
            d_ff,
            layers,
            max_lengths: (s, t),
            bottleneck: bottleneck == 1,
            vocab: (v_s, v_t),
        };
        check_config(&config).map_err(|e| invalid(format!("header: {e}")))?;
        let tensors = 10 + 30 * layers; // layers ≤ 64: checked above
        read_checkpoint(text, tensors, config.parameter_count(), || Seq2Seq::new(config, 0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::Parameters;

    #[test]
    fn weights_survive_a_round_trip_and_the_count_is_the_model_s() {
        for bottleneck in [false, true] {
            let config = Seq2SeqConfig::tiny(2, bottleneck);
            let net = Seq2Seq::new(config, 3).unwrap();
            let total: usize = net.slices().iter().map(|s| s.len()).sum();
            assert_eq!(config.parameter_count(), Some(total));
            assert_eq!(net.slices().len(), 10 + 30 * 2);
            let back = Seq2Seq::from_text(&net.to_text().unwrap()).unwrap();
            assert_eq!(back.to_text().unwrap(), net.to_text().unwrap());
            assert_eq!(back.config(), config);
        }
        assert!(Seq2Seq::from_text("seq2seq 8 2 12 2 12 8 7 33 13\n").is_err());
        assert!(Seq2Seq::from_text("seq2seq 8 2 12 2 12 8 0 33\n").is_err());
        assert!(Seq2Seq::from_text("seq2seq 4096 1 4096 64 4096 4096 0 33 13\n1 2\n").is_err());
        assert!(Seq2Seq::from_text("seq2seq 8 2 12 2 12 8 0 0 13\n").is_err());
    }
}
