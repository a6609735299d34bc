//! An encoder–decoder Transformer for the number-words task, in `f64` with
//! the backward passes of [`crate::nn`]: pre-norm encoder layers
//! (self-attention with a key-padding mask, FFN), pre-norm decoder layers
//! (causal self-attention, cross-attention over the encoder's output with
//! the source's padding mask, FFN), and a linear head over the target
//! tokens. With `bottleneck`, the decoder's cross-attention sees one vector
//! instead of the encoder's output: its mean over the real source tokens,
//! the fixed-size summary of the encoder–decoders before attention.
//!
//! | step | shape (`B` pairs, sources padded to `S`, targets to `T`) |
//! | --- | --- |
//! | source embeddings + positions, `N` encoder layers, LayerNorm | `BS×d` |
//! | target embeddings + positions, `N` decoder layers, LayerNorm | `BT×d` |
//! | linear head | `BT×V` (the target vocabulary) |

use ndarray::Array1;
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

use super::source_vocabulary;
use crate::check::{check_config_sizes, check_parameters};
use crate::error::AttnError;
use crate::grad::Matrix;
use crate::linalg::LinearWeights;
use crate::nn::{
    flat, flat_mut, zeroed, AttentionWeights, BlockAttention, CrossAttention, FfnWeights,
    NormWeights, Parameters, PreNormBlock,
};

/// The sizes of the encoder–decoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Seq2SeqConfig {
    /// Token width.
    pub d_model: usize,
    /// Attention heads per layer.
    pub heads: usize,
    /// Hidden width of the FFNs.
    pub d_ff: usize,
    /// Layers in the encoder, and in the decoder.
    pub layers: usize,
    /// The longest source, in words, and the longest target, in tokens
    /// including BOS: the sizes of the position tables.
    pub max_lengths: (usize, usize),
    /// The decoder sees one pooled vector of the encoder's output instead
    /// of all of it.
    pub bottleneck: bool,
    /// The sizes of the source and the target vocabularies, `PAD`, `BOS`
    /// and `EOS` included.
    pub vocab: (usize, usize),
}

/// Source tokens of the number task: [`super::PAD`], [`super::BOS`],
/// [`super::EOS`], then the words ([`super::SOURCE_VOCAB`]).
pub(crate) fn source_vocab_size() -> usize {
    3 + source_vocabulary().len()
}

/// The encoder–decoder's parameters (and, with the same shapes, their
/// gradients). Private: every shape follows from the configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Seq2Seq {
    pub(crate) config: Seq2SeqConfig,
    pub(crate) source_embeddings: Matrix, // source vocabulary × d
    pub(crate) source_positions: Matrix,  // S × d
    pub(crate) target_embeddings: Matrix, // target vocabulary × d
    pub(crate) target_positions: Matrix,  // T × d
    /// Self-attention and the FFN.
    pub(crate) encoder: Vec<PreNormBlock<f64>>,
    pub(crate) encoder_ln: NormWeights<f64>,
    /// Causal self-attention, cross-attention over the encoder's output,
    /// and the FFN.
    pub(crate) decoder: Vec<PreNormBlock<f64>>,
    pub(crate) decoder_ln: NormWeights<f64>,
    /// `d ×` target vocabulary, and its bias.
    pub(crate) head: LinearWeights<f64>,
}

impl Seq2Seq {
    /// A freshly initialised model: embeddings `N(0, 0.02²)`, matrices
    /// `N(0, 1/fan-in)`, LayerNorms the identity, biases 0.
    pub fn new(config: Seq2SeqConfig, seed: u64) -> Result<Self, AttnError> {
        check_config(&config)?;
        let rng = &mut StdRng::seed_from_u64(seed);
        let (d, f) = (config.d_model, config.d_ff);
        let normal = |rows, cols, std: f64, rng: &mut StdRng| {
            crate::grad::normal_matrix(rows, cols, rng) * std
        };
        let fan_in = 1.0 / (d as f64).sqrt();
        let ln = || NormWeights::identity(d);
        let attention = |rng: &mut StdRng| {
            let [w_q, w_k, w_v, w_o] = [0; 4].map(|_| normal(d, d, fan_in, rng));
            AttentionWeights::new(w_q, w_k, w_v, w_o)
        };
        let block = |attn, cross, rng: &mut StdRng| PreNormBlock {
            ln1: ln(),
            attn: BlockAttention::Heads(attn),
            cross,
            ln2: ln(),
            ffn: ffn_params(d, f, rng),
        };
        let encoder: Vec<_> = (0..config.layers)
            .map(|_| {
                let attn = attention(rng);
                block(attn, None, rng)
            })
            .collect();
        let decoder: Vec<_> = (0..config.layers)
            .map(|_| {
                let attn = attention(rng);
                let cross = Some(CrossAttention { ln: ln(), w: attention(rng) });
                block(attn, cross, rng)
            })
            .collect();
        let (s, t) = config.max_lengths;
        Ok(Seq2Seq {
            config,
            source_embeddings: normal(config.vocab.0, d, 0.02, rng),
            source_positions: normal(s, d, 0.02, rng),
            target_embeddings: normal(config.vocab.1, d, 0.02, rng),
            target_positions: normal(t, d, 0.02, rng),
            encoder,
            encoder_ln: ln(),
            decoder,
            decoder_ln: ln(),
            head: LinearWeights {
                w: normal(d, config.vocab.1, fan_in, rng),
                b: Array1::zeros(config.vocab.1),
            },
        })
    }

    /// The sizes it was built with.
    pub fn config(&self) -> Seq2SeqConfig {
        self.config
    }

    /// A model of the same shape with every parameter 0 (to hold gradients).
    pub fn zeros_like(&self) -> Self {
        zeroed(self)
    }
}

fn ffn_params(d: usize, f: usize, rng: &mut StdRng) -> FfnWeights<f64> {
    FfnWeights {
        w1: crate::grad::normal_matrix(d, f, rng) / (d as f64).sqrt(),
        b1: Array1::zeros(f),
        w2: crate::grad::normal_matrix(f, d, rng) / (f as f64).sqrt(),
        b2: Array1::zeros(d),
    }
}

pub(crate) fn check_config(c: &Seq2SeqConfig) -> Result<(), AttnError> {
    let sizes = [
        ("d_model", c.d_model),
        ("heads", c.heads),
        ("d_ff", c.d_ff),
        ("longest source", c.max_lengths.0),
        ("longest target", c.max_lengths.1),
        ("source vocabulary", c.vocab.0),
        ("target vocabulary", c.vocab.1),
    ];
    check_config_sizes(&sizes)?;
    if c.layers > 64 {
        return Err(AttnError::InvalidArgument {
            name: "layers",
            value: c.layers as f64,
            requirement: "must be at most 64",
        });
    }
    if !c.d_model.is_multiple_of(c.heads) {
        return Err(AttnError::HeadsDoNotDivide { d_model: c.d_model, h: c.heads });
    }
    check_parameters(c.parameter_count(), [c.layers, c.d_model, c.d_ff])
}

impl Parameters for Seq2Seq {
    type Real = f64;
    fn slices(&self) -> Vec<&[f64]> {
        self.named_slices().into_iter().map(|(_, s)| s).collect()
    }

    fn slices_mut(&mut self) -> Vec<&mut [f64]> {
        let mut out = vec![
            flat_mut(&mut self.source_embeddings),
            flat_mut(&mut self.source_positions),
            flat_mut(&mut self.target_embeddings),
            flat_mut(&mut self.target_positions),
        ];
        for e in &mut self.encoder {
            out.extend(e.tensors_mut(true));
        }
        out.extend([flat_mut(&mut self.encoder_ln.gamma), flat_mut(&mut self.encoder_ln.beta)]);
        for d in &mut self.decoder {
            out.extend(d.tensors_mut(true));
        }
        out.extend([
            flat_mut(&mut self.decoder_ln.gamma),
            flat_mut(&mut self.decoder_ln.beta),
            flat_mut(&mut self.head.w),
            flat_mut(&mut self.head.b),
        ]);
        out
    }

    fn named_slices(&self) -> Vec<(String, &[f64])> {
        let mut out: Vec<(String, &[f64])> = vec![
            ("source_embeddings".into(), flat(&self.source_embeddings)),
            ("source_positions".into(), flat(&self.source_positions)),
            ("target_embeddings".into(), flat(&self.target_embeddings)),
            ("target_positions".into(), flat(&self.target_positions)),
        ];
        fn blocks<'a>(name: &str, blocks: &'a [PreNormBlock<f64>]) -> Vec<(String, &'a [f64])> {
            let mut out = Vec::new();
            for (l, b) in blocks.iter().enumerate() {
                let named = b.tensors(true).into_iter();
                out.extend(named.map(|(n, x)| (format!("{name}.{l}.{n}"), x)));
            }
            out
        }
        out.extend(blocks("encoder", &self.encoder));
        out.push(("encoder_ln.gamma".into(), flat(&self.encoder_ln.gamma)));
        out.push(("encoder_ln.beta".into(), flat(&self.encoder_ln.beta)));
        out.extend(blocks("decoder", &self.decoder));
        out.push(("decoder_ln.gamma".into(), flat(&self.decoder_ln.gamma)));
        out.push(("decoder_ln.beta".into(), flat(&self.decoder_ln.beta)));
        out.push(("head.w".into(), flat(&self.head.w)));
        out.push(("head.b".into(), flat(&self.head.b)));
        out
    }
}
