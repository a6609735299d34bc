//! The recurrent encoder–decoders that attention was invented for, on the
//! number-words task: a GRU (Cho et al., 2014) reads the source, a second
//! GRU writes the target, and the output layer sees the decoder's state
//! beside a *context* vector. Without attention the context is the
//! encoder's last state, the whole sentence in one vector (Cho et al.'s
//! encoder–decoder); with attention it is an additive-attention average of
//! every encoder state (Bahdanau, Cho and Bengio, 2015), asked by the
//! decoder's current state.
//!
//! | step | shape (`B` pairs, sources padded to `S`, targets to `T`) |
//! | --- | --- |
//! | source embeddings, encoder GRU from 0 | `S` states of `B×d_h` |
//! | target embeddings, decoder GRU from the encoder's last state | `T` states of `B×d_h` |
//! | context: the last encoder state, or additive attention over all `S` | `BT×d_h` |
//! | output layer over `[state ; context]` | `BT×TARGET_VOCAB` |

mod passes;

use ndarray::{Array1, Array2};
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

pub use passes::RnnForward;

use super::{source_vocab_size, TARGET_VOCAB};
use crate::check::{check_config_sizes, check_parameters};
use crate::error::AttnError;
use crate::grad::{normal_matrix, Matrix};
use crate::linalg::LinearWeights;
use crate::nn::additive::AdditiveWeights;
use crate::nn::gru::GruWeights;
use crate::nn::{read_checkpoint, read_header, write_checkpoint, zeroed, Parameters};

/// The sizes of a recurrent encoder–decoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RnnConfig {
    /// Width of the word and digit embeddings.
    pub d_embed: usize,
    /// Width of the GRUs' states.
    pub d_state: usize,
    /// Width of additive attention's hidden layer.
    pub d_attention: usize,
    /// The context is additive attention over every encoder state (else
    /// the encoder's last state).
    pub attention: bool,
    /// The longest source, in words, and the longest decoder input, in
    /// tokens including BOS.
    pub max_lengths: (usize, usize),
}

/// The book's recurrent model: embeddings of 32, states of 64, attention's
/// hidden layer of 32; with attention it has about as many parameters as
/// the book's Transformer.
pub const BOOK_RNN: RnnConfig =
    RnnConfig { d_embed: 32, d_state: 64, d_attention: 32, attention: true, max_lengths: (12, 8) };

impl RnnConfig {
    /// The number of parameters, or `None` if it does not fit in a `usize`.
    pub fn parameter_count(&self) -> Option<usize> {
        let (e, h, a) = (self.d_embed, self.d_state, self.d_attention);
        let embeddings = (source_vocab_size() + TARGET_VOCAB).checked_mul(e)?;
        let gru = e.checked_add(h)?.checked_add(1)?.checked_mul(3)?.checked_mul(h)?;
        let attention = match self.attention {
            true => h.checked_mul(2)?.checked_add(1)?.checked_mul(a)?,
            false => 0,
        };
        let output = h.checked_mul(2)?.checked_add(1)?.checked_mul(TARGET_VOCAB)?;
        [embeddings, gru, gru, attention, output].into_iter().try_fold(0_usize, usize::checked_add)
    }
}

/// A recurrent encoder–decoder's parameters (and, with the same shapes,
/// their gradients). Private: every shape follows from the configuration.
#[derive(Debug, Clone)]
pub struct RnnSeq2Seq {
    pub(crate) config: RnnConfig,
    pub(crate) source_embeddings: Matrix, // source vocabulary × d_embed
    pub(crate) target_embeddings: Matrix, // TARGET_VOCAB × d_embed
    pub(crate) encoder: GruWeights<f64>,
    pub(crate) decoder: GruWeights<f64>,
    pub(crate) attention: Option<AdditiveWeights<f64>>,
    /// The output layer: `2d_state × TARGET_VOCAB`, and its bias.
    pub(crate) output: LinearWeights<f64>,
}

impl RnnSeq2Seq {
    /// A freshly initialised model: embeddings `N(0, 1)`, matrices
    /// `N(0, 1/fan-in)`, biases 0.
    pub fn new(config: RnnConfig, seed: u64) -> Result<Self, AttnError> {
        check_config(&config)?;
        let rng = &mut StdRng::seed_from_u64(seed);
        let (e, h, a) = (config.d_embed, config.d_state, config.d_attention);
        let normal =
            |rows, cols, rng: &mut StdRng| normal_matrix(rows, cols, rng) / (rows as f64).sqrt();
        let gru = |rng: &mut StdRng| GruWeights {
            w: normal(e, 3 * h, rng),
            u: normal(h, 3 * h, rng),
            b: Array2::zeros((1, 3 * h)),
        };
        let (encoder, decoder) = (gru(rng), gru(rng));
        let attention = config.attention.then(|| AdditiveWeights {
            a_q: normal(h, a, rng),
            a_k: normal(h, a, rng),
            u: normal(a, 1, rng),
        });
        Ok(RnnSeq2Seq {
            config,
            source_embeddings: normal_matrix(source_vocab_size(), e, rng),
            target_embeddings: normal_matrix(TARGET_VOCAB, e, rng),
            encoder,
            decoder,
            attention,
            output: LinearWeights {
                w: normal(2 * h, TARGET_VOCAB, rng),
                b: Array1::zeros(TARGET_VOCAB),
            },
        })
    }

    /// The sizes it was built with.
    pub fn config(&self) -> RnnConfig {
        self.config
    }

    /// A model of the same shape with every parameter 0 (to hold gradients).
    pub fn zeros_like(&self) -> Self {
        zeroed(self)
    }

    /// The weights as text, with the header `rnn-seq2seq d_embed d_state
    /// d_attention attention longest_source longest_target` (`attention`
    /// 0 or 1); an error names a weight that is not finite as an `f32`.
    pub fn to_text(&self) -> Result<String, AttnError> {
        let c = self.config;
        let header = format!(
            "rnn-seq2seq {} {} {} {} {} {}",
            c.d_embed,
            c.d_state,
            c.d_attention,
            u8::from(c.attention),
            c.max_lengths.0,
            c.max_lengths.1
        );
        write_checkpoint(&header, self)
    }

    /// Reads what [`Self::to_text`] wrote, trusting nothing in the file.
    pub fn from_text(text: &str) -> Result<Self, AttnError> {
        let invalid = |reason: String| AttnError::InvalidWeights { reason };
        let header = read_header(text, "rnn-seq2seq ")?;
        let [d_embed, d_state, d_attention, attention, s, t] = header[..] else {
            return Err(invalid(format!("the header has {} numbers, expected 6", header.len())));
        };
        if attention > 1 {
            return Err(invalid(format!("header: attention is {attention}, not 0 or 1")));
        }
        let config = RnnConfig {
            d_embed,
            d_state,
            d_attention,
            attention: attention == 1,
            max_lengths: (s, t),
        };
        check_config(&config).map_err(|e| invalid(format!("header: {e}")))?;
        let tensors = 10 + 3 * attention;
        read_checkpoint(text, tensors, config.parameter_count(), || RnnSeq2Seq::new(config, 0))
    }
}

fn check_config(c: &RnnConfig) -> Result<(), AttnError> {
    let sizes = [
        ("d_embed", c.d_embed),
        ("d_state", c.d_state),
        ("d_attention", c.d_attention),
        ("longest source", c.max_lengths.0),
        ("longest target", c.max_lengths.1),
    ];
    check_config_sizes(&sizes)?;
    check_parameters(c.parameter_count(), [c.d_embed, c.d_state, c.d_attention])
}

impl Parameters for RnnSeq2Seq {
    type Real = f64;

    fn slices(&self) -> Vec<&[f64]> {
        self.named_slices().into_iter().map(|(_, s)| s).collect()
    }

    fn slices_mut(&mut self) -> Vec<&mut [f64]> {
        fn flat(x: &mut Matrix) -> &mut [f64] {
            x.as_slice_mut().expect("parameters are contiguous")
        }
        let RnnSeq2Seq {
            source_embeddings,
            target_embeddings,
            encoder,
            decoder,
            attention,
            output,
            ..
        } = self;
        let mut out = vec![flat(source_embeddings), flat(target_embeddings)];
        out.extend(encoder.matrices_mut().map(flat));
        out.extend(decoder.matrices_mut().map(flat));
        if let Some(a) = attention {
            out.extend(a.matrices_mut().map(flat));
        }
        out.push(flat(&mut output.w));
        out.push(output.b.as_slice_mut().expect("parameters are contiguous"));
        out
    }

    fn named_slices(&self) -> Vec<(String, &[f64])> {
        fn flat(x: &Matrix) -> &[f64] {
            x.as_slice().expect("parameters are contiguous")
        }
        let mut out: Vec<(String, &[f64])> = vec![
            ("source embeddings".into(), flat(&self.source_embeddings)),
            ("target embeddings".into(), flat(&self.target_embeddings)),
        ];
        for (name, gru) in [("encoder", &self.encoder), ("decoder", &self.decoder)] {
            for (w, m) in GruWeights::<f64>::NAMES.iter().zip(gru.matrices()) {
                out.push((format!("{name} GRU {w}"), flat(m)));
            }
        }
        if let Some(a) = &self.attention {
            for (w, m) in AdditiveWeights::<f64>::NAMES.iter().zip(a.matrices()) {
                out.push((format!("attention {w}"), flat(m)));
            }
        }
        out.push(("output layer".into(), flat(&self.output.w)));
        let bias = self.output.b.as_slice().expect("parameters are contiguous");
        out.push(("output layer bias".into(), bias));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::train::{largest_gradient_error, padding_change};
    use super::super::{batch, number_pair, Batch};
    use super::*;

    fn small(attention: bool) -> (RnnSeq2Seq, Batch) {
        let config =
            RnnConfig { d_embed: 5, d_state: 6, d_attention: 4, attention, max_lengths: (12, 8) };
        let pairs: Vec<_> = [342_015, 12, 700].map(|x| number_pair(x).unwrap()).to_vec();
        let refs: Vec<(&[usize], &[usize])> =
            pairs.iter().map(|p| (&p.source[..], &p.target[..])).collect();
        (RnnSeq2Seq::new(config, 4).unwrap(), batch(&refs).unwrap())
    }

    #[test]
    fn the_backward_pass_matches_finite_differences() {
        for attention in [false, true] {
            let (net, batch) = small(attention);
            let (error, at) = largest_gradient_error(&net, &batch, 1e-5);
            assert!(error < 1e-6, "attention {attention}: {at}, relative error {error:e}");
        }
    }

    #[test]
    fn padding_does_not_change_a_pair_s_logits() {
        for attention in [false, true] {
            let (net, both) = small(attention);
            let change = padding_change(&net, &both);
            assert!(change < 1e-12, "attention {attention}: {change:e}");
        }
    }

    #[test]
    fn weights_survive_a_round_trip_and_the_count_is_the_model_s() {
        for attention in [false, true] {
            let (net, _) = small(attention);
            assert_eq!(net.config().parameter_count(), Some(net.parameter_count()));
            let back = RnnSeq2Seq::from_text(&net.to_text().unwrap()).unwrap();
            assert_eq!(back.to_text().unwrap(), net.to_text().unwrap());
            assert_eq!(back.config(), net.config());
        }
        assert!(RnnSeq2Seq::from_text("rnn-seq2seq 5 6 4 2 12 8\n").is_err());
        assert!(RnnSeq2Seq::from_text("rnn-seq2seq 5 6 4 1 12 8\n1 2\n").is_err());
        assert!(RnnSeq2Seq::from_text("seq2seq 8 2 12 2 12 8 0\n").is_err());
    }

    #[test]
    fn a_forward_pass_of_another_model_or_a_bad_batch_is_refused() {
        let (net, good) = small(true);
        let (other, _) = small(false);
        let fwd = other.forward(&good).unwrap();
        assert!(net.backward(&fwd, &Matrix::zeros(fwd.logits().dim())).is_err());
        assert!(fwd.weights(0).is_none());
        let fwd = net.forward(&good).unwrap();
        assert_eq!(fwd.weights(0).unwrap().dim(), (7, 7)); // 342,015: 6 digits + EOS, 7 words
        assert!(net.backward(&fwd, &Matrix::zeros((1, 1))).is_err());
        let mut bad = good.clone();
        bad.sources[0][0] = source_vocab_size();
        assert!(net.forward(&bad).is_err());
        let too_small = RnnConfig { d_state: 0, ..net.config() };
        assert!(RnnSeq2Seq::new(too_small, 1).is_err());
    }
}
