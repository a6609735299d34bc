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
use crate::nn::{zeroed, FfnParams, Parameters};

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
pub fn source_vocab_size() -> usize {
    3 + source_vocabulary().len()
}

/// One attention sub-layer's parameters: LayerNorm `[γ, β]` and
/// `[W_Q, W_K, W_V, W_O]`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AttentionParams {
    pub(crate) ln: [Array1<f64>; 2],
    pub(crate) w: [Matrix; 4],
}

/// An encoder layer: self-attention, then the FFN with its LayerNorm.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct EncoderParams {
    pub(crate) attention: AttentionParams,
    pub(crate) ln: [Array1<f64>; 2],
    pub(crate) ffn: FfnParams<f64>,
}

/// A decoder layer: causal self-attention, cross-attention, then the FFN.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DecoderParams {
    pub(crate) self_attention: AttentionParams,
    pub(crate) cross_attention: AttentionParams,
    pub(crate) ln: [Array1<f64>; 2],
    pub(crate) ffn: FfnParams<f64>,
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
    pub(crate) encoder: Vec<EncoderParams>,
    pub(crate) encoder_ln: [Array1<f64>; 2],
    pub(crate) decoder: Vec<DecoderParams>,
    pub(crate) decoder_ln: [Array1<f64>; 2],
    pub(crate) head: (Matrix, Array1<f64>), // d × target vocabulary, and its bias
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
        let ln = || [Array1::ones(d), Array1::zeros(d)];
        let attention = |rng: &mut StdRng| AttentionParams {
            ln: ln(),
            w: [0, 1, 2, 3].map(|_| normal(d, d, fan_in, rng)),
        };
        let encoder: Vec<EncoderParams> = (0..config.layers)
            .map(|_| EncoderParams {
                attention: attention(rng),
                ln: ln(),
                ffn: ffn_params(d, f, rng),
            })
            .collect();
        let decoder: Vec<DecoderParams> = (0..config.layers)
            .map(|_| DecoderParams {
                self_attention: attention(rng),
                cross_attention: attention(rng),
                ln: ln(),
                ffn: ffn_params(d, f, rng),
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
            head: (
                normal(d, config.vocab.1, fan_in, rng),
                Array1::zeros(config.vocab.1),
            ),
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

fn ffn_params(d: usize, f: usize, rng: &mut StdRng) -> FfnParams<f64> {
    FfnParams {
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
        return Err(AttnError::HeadsDoNotDivide {
            d_model: c.d_model,
            h: c.heads,
        });
    }
    check_parameters(c.parameter_count(), [c.layers, c.d_model, c.d_ff])
}

impl Parameters for Seq2Seq {
    type Real = f64;
    fn slices(&self) -> Vec<&[f64]> {
        self.named_slices().into_iter().map(|(_, s)| s).collect()
    }

    fn slices_mut(&mut self) -> Vec<&mut [f64]> {
        fn m(x: &mut Matrix) -> &mut [f64] {
            x.as_slice_mut().expect("parameters are contiguous")
        }
        fn v(x: &mut Array1<f64>) -> &mut [f64] {
            x.as_slice_mut().expect("parameters are contiguous")
        }
        let mut out = vec![
            m(&mut self.source_embeddings),
            m(&mut self.source_positions),
            m(&mut self.target_embeddings),
            m(&mut self.target_positions),
        ];
        fn attention<'a>(a: &'a mut AttentionParams, out: &mut Vec<&'a mut [f64]>) {
            let [g, b] = &mut a.ln;
            out.extend([v(g), v(b)]);
            out.extend(a.w.iter_mut().map(m));
        }
        for e in &mut self.encoder {
            attention(&mut e.attention, &mut out);
            let [g, b] = &mut e.ln;
            out.extend([v(g), v(b), m(&mut e.ffn.w1), v(&mut e.ffn.b1)]);
            out.extend([m(&mut e.ffn.w2), v(&mut e.ffn.b2)]);
        }
        let [g, b] = &mut self.encoder_ln;
        out.extend([v(g), v(b)]);
        for d in &mut self.decoder {
            attention(&mut d.self_attention, &mut out);
            attention(&mut d.cross_attention, &mut out);
            let [g, b] = &mut d.ln;
            out.extend([v(g), v(b), m(&mut d.ffn.w1), v(&mut d.ffn.b1)]);
            out.extend([m(&mut d.ffn.w2), v(&mut d.ffn.b2)]);
        }
        let [g, b] = &mut self.decoder_ln;
        out.extend([v(g), v(b), m(&mut self.head.0), v(&mut self.head.1)]);
        out
    }

    fn named_slices(&self) -> Vec<(String, &[f64])> {
        fn m(x: &Matrix) -> &[f64] {
            x.as_slice().expect("parameters are contiguous")
        }
        fn v(x: &Array1<f64>) -> &[f64] {
            x.as_slice().expect("parameters are contiguous")
        }
        let mut out: Vec<(String, &[f64])> = vec![
            ("source embeddings".into(), m(&self.source_embeddings)),
            ("source positions".into(), m(&self.source_positions)),
            ("target embeddings".into(), m(&self.target_embeddings)),
            ("target positions".into(), m(&self.target_positions)),
        ];
        fn attention(name: String, a: &AttentionParams) -> Vec<(String, &[f64])> {
            let mut named = vec![
                (format!("{name} LayerNorm γ"), v(&a.ln[0])),
                (format!("{name} LayerNorm β"), v(&a.ln[1])),
            ];
            for (w, x) in ["W_Q", "W_K", "W_V", "W_O"].iter().zip(&a.w) {
                named.push((format!("{name} {w}"), m(x)));
            }
            named
        }
        fn ffn<'a>(
            name: String,
            ln: &'a [Array1<f64>; 2],
            f: &'a FfnParams<f64>,
        ) -> Vec<(String, &'a [f64])> {
            vec![
                (format!("{name} FFN LayerNorm γ"), v(&ln[0])),
                (format!("{name} FFN LayerNorm β"), v(&ln[1])),
                (format!("{name} FFN W₁"), m(&f.w1)),
                (format!("{name} FFN b₁"), v(&f.b1)),
                (format!("{name} FFN W₂"), m(&f.w2)),
                (format!("{name} FFN b₂"), v(&f.b2)),
            ]
        }
        for (l, e) in self.encoder.iter().enumerate() {
            out.extend(attention(
                format!("encoder {} self-attention", l + 1),
                &e.attention,
            ));
            out.extend(ffn(format!("encoder {}", l + 1), &e.ln, &e.ffn));
        }
        out.push(("encoder LayerNorm γ".into(), v(&self.encoder_ln[0])));
        out.push(("encoder LayerNorm β".into(), v(&self.encoder_ln[1])));
        for (l, d) in self.decoder.iter().enumerate() {
            out.extend(attention(
                format!("decoder {} self-attention", l + 1),
                &d.self_attention,
            ));
            out.extend(attention(
                format!("decoder {} cross-attention", l + 1),
                &d.cross_attention,
            ));
            out.extend(ffn(format!("decoder {}", l + 1), &d.ln, &d.ffn));
        }
        out.push(("decoder LayerNorm γ".into(), v(&self.decoder_ln[0])));
        out.push(("decoder LayerNorm β".into(), v(&self.decoder_ln[1])));
        out.push(("output head".into(), m(&self.head.0)));
        out.push(("output head bias".into(), v(&self.head.1)));
        out
    }
}
