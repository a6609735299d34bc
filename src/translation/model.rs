//! An encoder–decoder Transformer for the number-words task, in `f64` with
//! the backward passes of [`crate::grad`]: pre-norm encoder layers
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
//! | linear head | `BT×TARGET_VOCAB` |

use ndarray::{s, Array1, Array2, ArrayRef2};
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

use super::{source_vocabulary, BOS, EOS, PAD, TARGET_VOCAB};
use crate::error::AttnError;
use crate::grad::{attention_backward, attention_forward, AttentionCache, FfnParams, Matrix};
use crate::model::Parameters;

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
}

/// Source tokens: [`PAD`], [`BOS`], [`EOS`], then the words.
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
    pub(crate) ffn: FfnParams,
}

/// A decoder layer: causal self-attention, cross-attention, then the FFN.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DecoderParams {
    pub(crate) self_attention: AttentionParams,
    pub(crate) cross_attention: AttentionParams,
    pub(crate) ln: [Array1<f64>; 2],
    pub(crate) ffn: FfnParams,
}

/// The encoder–decoder's parameters (and, with the same shapes, their
/// gradients). Private: every shape follows from the configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Seq2Seq {
    pub(crate) config: Seq2SeqConfig,
    pub(crate) source_embeddings: Matrix, // source vocabulary × d
    pub(crate) source_positions: Matrix,  // S × d
    pub(crate) target_embeddings: Matrix, // TARGET_VOCAB × d
    pub(crate) target_positions: Matrix,  // T × d
    pub(crate) encoder: Vec<EncoderParams>,
    pub(crate) encoder_ln: [Array1<f64>; 2],
    pub(crate) decoder: Vec<DecoderParams>,
    pub(crate) decoder_ln: [Array1<f64>; 2],
    pub(crate) head: (Matrix, Array1<f64>), // d × TARGET_VOCAB, and its bias
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
            source_embeddings: normal(source_vocab_size(), d, 0.02, rng),
            source_positions: normal(s, d, 0.02, rng),
            target_embeddings: normal(TARGET_VOCAB, d, 0.02, rng),
            target_positions: normal(t, d, 0.02, rng),
            encoder,
            encoder_ln: ln(),
            decoder,
            decoder_ln: ln(),
            head: (
                normal(d, TARGET_VOCAB, fan_in, rng),
                Array1::zeros(TARGET_VOCAB),
            ),
        })
    }

    /// The sizes it was built with.
    pub fn config(&self) -> Seq2SeqConfig {
        self.config
    }

    /// A model of the same shape with every parameter 0 (to hold gradients).
    pub fn zeros_like(&self) -> Self {
        let mut z = self.clone();
        for s in z.slices_mut() {
            s.fill(0.0);
        }
        z
    }
}

fn ffn_params(d: usize, f: usize, rng: &mut StdRng) -> FfnParams {
    FfnParams {
        w1: crate::grad::normal_matrix(d, f, rng) / (d as f64).sqrt(),
        b1: Array1::zeros(f),
        w2: crate::grad::normal_matrix(f, d, rng) / (f as f64).sqrt(),
        b2: Array1::zeros(d),
    }
}

fn check_config(c: &Seq2SeqConfig) -> Result<(), AttnError> {
    let sizes = [
        ("d_model", c.d_model),
        ("heads", c.heads),
        ("d_ff", c.d_ff),
        ("longest source", c.max_lengths.0),
        ("longest target", c.max_lengths.1),
    ];
    for (name, size) in sizes {
        if size == 0 || size > 4096 {
            return Err(AttnError::InvalidArgument {
                name,
                value: size as f64,
                requirement: "must be from 1 to 4096",
            });
        }
    }
    if c.layers > 64 {
        return Err(AttnError::InvalidArgument {
            name: "layers",
            value: c.layers as f64,
            requirement: "must be at most 64",
        });
    }
    if c.d_model % c.heads != 0 {
        return Err(AttnError::HeadsDoNotDivide {
            d_model: c.d_model,
            h: c.heads,
        });
    }
    Ok(())
}

impl Parameters for Seq2Seq {
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
            f: &'a FfnParams,
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

/// What multi-head attention over a padded batch keeps for its backward
/// pass: the projections, each (sequence, head)'s weights, the heads'
/// concatenated output.
pub(crate) struct MhaCache {
    pub(crate) q: Matrix,
    pub(crate) k: Matrix,
    pub(crate) v: Matrix,
    pub(crate) heads: Vec<AttentionCache>,
    pub(crate) o: Matrix,
}

/// Multi-head attention of `x_q` (`B·tq × d`) over `x_kv` (`B·tk × d`), each
/// sequence `b` on its own rows with the mask `keep(b)` (`tq×tk`).
pub(crate) fn mha_forward(
    x_q: &ArrayRef2<f64>,
    x_kv: &ArrayRef2<f64>,
    w: &[Matrix; 4],
    (tq, tk, heads): (usize, usize, usize),
    keep: impl Fn(usize) -> Array2<bool>,
) -> (Matrix, MhaCache) {
    let (q, k, v) = (x_q.dot(&w[0]), x_kv.dot(&w[1]), x_kv.dot(&w[2]));
    let d_k = q.ncols() / heads;
    let mut o = Matrix::zeros(q.dim());
    let mut caches = Vec::new();
    for b in 0..x_q.nrows() / tq {
        let mask = keep(b);
        for h in 0..heads {
            let cols = h * d_k..(h + 1) * d_k;
            let (rq, rk) = (
                s![b * tq..(b + 1) * tq, cols.clone()],
                s![b * tk..(b + 1) * tk, cols],
            );
            let (out, cache) = attention_forward(
                &q.slice(rq),
                &k.slice(rk),
                &v.slice(rk),
                Some(&mask),
                1.0 / (d_k as f64).sqrt(),
            );
            o.slice_mut(rq).assign(&out);
            caches.push(cache);
        }
    }
    let out = o.dot(&w[3]);
    (
        out,
        MhaCache {
            q,
            k,
            v,
            heads: caches,
            o,
        },
    )
}

/// The backward pass of [`mha_forward`]: `(dX_q, dX_kv, [dW_Q, dW_K, dW_V, dW_O])`.
pub(crate) fn mha_backward(
    cache: &MhaCache,
    x_q: &ArrayRef2<f64>,
    x_kv: &ArrayRef2<f64>,
    w: &[Matrix; 4],
    (tq, tk, heads): (usize, usize, usize),
    d_out: &ArrayRef2<f64>,
) -> (Matrix, Matrix, [Matrix; 4]) {
    let d_o = d_out.dot(&w[3].t());
    let dw_o = cache.o.t().dot(d_out);
    let d_k = cache.q.ncols() / heads;
    let (mut dq, mut dk, mut dv) = (
        Matrix::zeros(cache.q.dim()),
        Matrix::zeros(cache.k.dim()),
        Matrix::zeros(cache.v.dim()),
    );
    for b in 0..x_q.nrows() / tq {
        for h in 0..heads {
            let cols = h * d_k..(h + 1) * d_k;
            let (rq, rk) = (
                s![b * tq..(b + 1) * tq, cols.clone()],
                s![b * tk..(b + 1) * tk, cols],
            );
            let (g_q, g_k, g_v) = attention_backward(
                &cache.q.slice(rq),
                &cache.k.slice(rk),
                &cache.v.slice(rk),
                &cache.heads[b * heads + h],
                &d_o.slice(rq),
            );
            dq.slice_mut(rq).assign(&g_q);
            dk.slice_mut(rk).assign(&g_k);
            dv.slice_mut(rk).assign(&g_v);
        }
    }
    let dx_q = dq.dot(&w[0].t());
    let dx_kv = dk.dot(&w[1].t()) + dv.dot(&w[2].t());
    let dw = [x_q.t().dot(&dq), x_kv.t().dot(&dk), x_kv.t().dot(&dv), dw_o];
    (dx_q, dx_kv, dw)
}

/// A padded batch: sources padded with [`PAD`] to the longest, decoder
/// inputs `BOS target` and outputs `target EOS` padded likewise, and each
/// pair's real lengths.
#[derive(Debug, Clone, PartialEq)]
pub struct Batch {
    /// `B×S` source ids.
    pub sources: Vec<Vec<usize>>,
    /// `B×T` decoder inputs.
    pub inputs: Vec<Vec<usize>>,
    /// `B·T` next-token targets, `None` at padding.
    pub targets: Vec<Option<usize>>,
    /// Real source lengths.
    pub source_lengths: Vec<usize>,
}

/// Pads `pairs` (source ids, target ids) into a [`Batch`].
pub fn batch(pairs: &[(&[usize], &[usize])]) -> Result<Batch, AttnError> {
    if pairs.is_empty() || pairs.iter().any(|(s, _)| s.is_empty()) {
        return Err(AttnError::InvalidArgument {
            name: "pairs",
            value: pairs.len() as f64,
            requirement: "must be at least one, each with a non-empty source",
        });
    }
    let s_max = pairs.iter().map(|(s, _)| s.len()).max().unwrap_or(0);
    let t_max = pairs.iter().map(|(_, t)| t.len() + 1).max().unwrap_or(0);
    let pad = |x: Vec<usize>, len: usize| {
        let mut x = x;
        x.resize(len, PAD);
        x
    };
    let mut out = Batch {
        sources: Vec::new(),
        inputs: Vec::new(),
        targets: Vec::new(),
        source_lengths: Vec::new(),
    };
    for (source, target) in pairs {
        out.sources.push(pad(source.to_vec(), s_max));
        out.source_lengths.push(source.len());
        let mut input = vec![BOS];
        input.extend_from_slice(target);
        out.inputs.push(pad(input, t_max));
        let mut next: Vec<Option<usize>> = target.iter().map(|&t| Some(t)).collect();
        next.push(Some(EOS));
        next.resize(t_max, None);
        out.targets.extend(next);
    }
    Ok(out)
}
