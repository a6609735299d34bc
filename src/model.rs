//! A tiny decoder-only Transformer, trained from scratch to reverse a
//! sequence of digits (chapter 11).
//!
//! The task: given `k` digits and a separator, `3 1 4 1 5 9 | `, produce the
//! digits reversed, `9 5 1 4 1 3`. Output `j` must copy input `k − 1 − j`:
//! a job for attention, whose query at one position can look up the key at
//! the mirrored position, and which a network without attention cannot do
//! with one fixed pattern.
//!
//! Decoder-only (GPT-style): one causal stack reads the prompt and writes the
//! answer, predicting each next token. It is the simplest model that solves
//! the task, and the one chapter 5's KV cache and chapter 9's pre-norm block
//! were written for.
//!
//! | step | shape (`B` sequences of `T` tokens, width `d`) |
//! | --- | --- |
//! | token + position embeddings | `BT×d` |
//! | `L` pre-norm blocks: causal multi-head attention, FFN | `BT×d` |
//! | final LayerNorm, linear head | `BT×vocabulary` |
//!
//! Everything is `f64`, with the backward passes of [`crate::grad`], and
//! deterministic: one seed gives the same weights on every machine that
//! rounds `f64` the same way.

use std::collections::HashSet;

use ndarray::{s, Array1, ArrayRef1, ArrayRef2, Axis};
use ndarray_rand::rand::{rngs::StdRng, Rng, SeedableRng};

use crate::error::AttnError;
use crate::grad::{
    attention_backward, attention_forward, cross_entropy, ffn_backward, ffn_forward,
    layer_norm_backward, layer_norm_forward, linear_backward, AttentionCache, FfnCache, FfnParams,
    LayerNormCache, Matrix,
};
use crate::masking::causal_mask;

/// The separator between the digits and their reversal.
pub const SEP: usize = 10;
/// Tokens: the digits 0–9 and the separator.
pub const VOCAB: usize = 11;
const EPS: f64 = 1e-5;

// ANCHOR: config
/// The sizes of the model and of the task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelConfig {
    /// Digits to reverse.
    pub k: usize,
    /// Token width.
    pub d_model: usize,
    /// Attention heads per block.
    pub heads: usize,
    /// Hidden width of the FFN.
    pub d_ff: usize,
    /// Number of blocks.
    pub layers: usize,
}

// ANCHOR_END: config

impl ModelConfig {
    /// Checks that every size is at least 1 and that the heads split
    /// `d_model` evenly.
    pub fn check(&self) -> Result<(), AttnError> {
        let sizes = [
            ("k", self.k),
            ("d_model", self.d_model),
            ("heads", self.heads),
            ("d_ff", self.d_ff),
        ];
        for (name, size) in sizes {
            if size == 0 {
                return Err(AttnError::InvalidArgument {
                    name,
                    value: 0.0,
                    requirement: "must be at least 1",
                });
            }
        }
        if self.d_model % self.heads != 0 {
            return Err(AttnError::HeadsDoNotDivide {
                d_model: self.d_model,
                h: self.heads,
            });
        }
        Ok(())
    }

    /// Tokens the model reads: `k` digits, the separator, `k − 1` answer
    /// digits (the last answer digit is only ever predicted).
    pub fn context(&self) -> usize {
        2 * self.k
    }
}

/// One pre-norm block's parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    /// LayerNorm before attention: scale and shift.
    pub ln1: [Array1<f64>; 2],
    /// Attention projections `W_Q, W_K, W_V, W_O`, each `d×d`, heads side by side.
    pub attn: [Matrix; 4],
    /// LayerNorm before the FFN.
    pub ln2: [Array1<f64>; 2],
    /// The FFN (GELU).
    pub ffn: FfnParams,
}

/// The model's parameters (and, with the same shapes, their gradients).
#[derive(Debug, Clone, PartialEq)]
pub struct TinyTransformer {
    /// The sizes.
    pub config: ModelConfig,
    /// Token embeddings, `VOCAB×d`.
    pub tokens: Matrix,
    /// Learned position embeddings, `context×d`.
    pub positions: Matrix,
    /// The blocks.
    pub blocks: Vec<Block>,
    /// Final LayerNorm.
    pub ln_f: [Array1<f64>; 2],
    /// Output projection `d×VOCAB` and its bias.
    pub head: (Matrix, Array1<f64>),
}

fn normal(rows: usize, cols: usize, std: f64, rng: &mut StdRng) -> Matrix {
    crate::grad::normal_matrix(rows, cols, rng) * std
}

impl TinyTransformer {
    /// A freshly initialised model: embeddings `N(0, 0.02²)` as in GPT-2,
    /// weight matrices `N(0, 1/fan-in)` as in chapter 3, LayerNorms the
    /// identity, biases 0.
    pub fn new(config: ModelConfig, seed: u64) -> Result<Self, AttnError> {
        config.check()?;
        let mut rng = StdRng::seed_from_u64(seed);
        let (d, f) = (config.d_model, config.d_ff);
        let ln = || [Array1::ones(d), Array1::zeros(d)];
        let blocks = (0..config.layers)
            .map(|_| Block {
                ln1: ln(),
                attn: [0, 1, 2, 3].map(|_| normal(d, d, 1.0 / (d as f64).sqrt(), &mut rng)),
                ln2: ln(),
                ffn: FfnParams {
                    w1: normal(d, f, 1.0 / (d as f64).sqrt(), &mut rng),
                    b1: Array1::zeros(f),
                    w2: normal(f, d, 1.0 / (f as f64).sqrt(), &mut rng),
                    b2: Array1::zeros(d),
                },
            })
            .collect();
        Ok(TinyTransformer {
            config,
            tokens: normal(VOCAB, d, 0.02, &mut rng),
            positions: normal(config.context(), d, 0.02, &mut rng),
            blocks,
            ln_f: ln(),
            head: (
                normal(d, VOCAB, 1.0 / (d as f64).sqrt(), &mut rng),
                Array1::zeros(VOCAB),
            ),
        })
    }

    /// Every parameter tensor as a flat slice, in a fixed order (for the
    /// optimiser, and for saving).
    pub fn slices(&self) -> Vec<&[f64]> {
        let mut out: Vec<&[f64]> = vec![slice(&self.tokens), slice(&self.positions)];
        for b in &self.blocks {
            out.extend(b.ln1.iter().map(slice1));
            out.extend(b.attn.iter().map(slice));
            out.extend(b.ln2.iter().map(slice1));
            out.extend([
                slice(&b.ffn.w1),
                slice1(&b.ffn.b1),
                slice(&b.ffn.w2),
                slice1(&b.ffn.b2),
            ]);
        }
        out.extend(self.ln_f.iter().map(slice1));
        out.extend([slice(&self.head.0), slice1(&self.head.1)]);
        out
    }

    /// [`Self::slices`], mutable.
    pub fn slices_mut(&mut self) -> Vec<&mut [f64]> {
        let mut out: Vec<&mut [f64]> =
            vec![slice_mut(&mut self.tokens), slice_mut(&mut self.positions)];
        for b in &mut self.blocks {
            out.extend(b.ln1.iter_mut().map(slice1_mut));
            out.extend(b.attn.iter_mut().map(slice_mut));
            out.extend(b.ln2.iter_mut().map(slice1_mut));
            out.push(slice_mut(&mut b.ffn.w1));
            out.push(slice1_mut(&mut b.ffn.b1));
            out.push(slice_mut(&mut b.ffn.w2));
            out.push(slice1_mut(&mut b.ffn.b2));
        }
        out.extend(self.ln_f.iter_mut().map(slice1_mut));
        out.push(slice_mut(&mut self.head.0));
        out.push(slice1_mut(&mut self.head.1));
        out
    }

    /// Number of parameters.
    pub fn parameter_count(&self) -> usize {
        self.slices().iter().map(|s| s.len()).sum()
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

fn slice(m: &Matrix) -> &[f64] {
    m.as_slice().expect("parameters are contiguous")
}
fn slice1(a: &Array1<f64>) -> &[f64] {
    a.as_slice().expect("parameters are contiguous")
}
fn slice_mut(m: &mut Matrix) -> &mut [f64] {
    m.as_slice_mut().expect("parameters are contiguous")
}
fn slice1_mut(a: &mut Array1<f64>) -> &mut [f64] {
    a.as_slice_mut().expect("parameters are contiguous")
}

/// What one block's forward pass keeps for its backward pass.
struct BlockCache {
    ln1: LayerNormCache,
    a: Matrix,
    qkv: [Matrix; 3],
    heads: Vec<AttentionCache>, // one per (sequence, head)
    o: Matrix,
    ln2: LayerNormCache,
    ffn: FfnCache,
}

/// The forward pass's result: logits and what the backward pass needs.
pub struct Forward {
    /// `BT×VOCAB`.
    pub logits: Matrix,
    tokens: Vec<Vec<usize>>,
    heads: usize,
    blocks: Vec<BlockCache>,
    ln_f: LayerNormCache,
    z: Matrix,
}

// ANCHOR: forward
impl TinyTransformer {
    /// The forward pass over `B` sequences of equal length `T ≤ context`.
    pub fn forward(&self, batch: &[Vec<usize>]) -> Result<Forward, AttnError> {
        self.forward_through(batch, self.blocks.len())
    }

    /// The forward pass through the first `depth` blocks only, read out by
    /// the final LayerNorm and head as if the rest were absent (what the
    /// residual stream already predicts after `depth` blocks).
    pub fn forward_through(
        &self,
        batch: &[Vec<usize>],
        depth: usize,
    ) -> Result<Forward, AttnError> {
        self.check_batch(batch)?;
        if depth > self.blocks.len() {
            return Err(AttnError::InvalidArgument {
                name: "depth",
                value: depth as f32,
                requirement: "must be at most the model's number of blocks",
            });
        }
        let (t, d, h) = (batch[0].len(), self.config.d_model, self.config.heads);
        let d_k = d / h;
        let causal = causal_mask(t, t);
        // Token plus position embeddings: BT×d.
        let mut x = Matrix::zeros((batch.len() * t, d));
        for (b, sequence) in batch.iter().enumerate() {
            for (i, &token) in sequence.iter().enumerate() {
                let row = &self.tokens.row(token) + &self.positions.row(i);
                x.row_mut(b * t + i).assign(&row);
            }
        }
        let mut caches = Vec::new();
        for block in &self.blocks[..depth] {
            // x ← x + Attention(LayerNorm(x)) W_O, per sequence and head.
            let (a, ln1) = layer_norm_forward(&x, &block.ln1[0], &block.ln1[1], EPS);
            let qkv = [0, 1, 2].map(|i| a.dot(&block.attn[i]));
            let mut o = Matrix::zeros(x.dim());
            let mut heads = Vec::new();
            for b in 0..batch.len() {
                for head in 0..h {
                    let part = s![b * t..(b + 1) * t, head * d_k..(head + 1) * d_k];
                    let (out, cache) = attention_forward(
                        &qkv[0].slice(part),
                        &qkv[1].slice(part),
                        &qkv[2].slice(part),
                        Some(&causal),
                        1.0 / (d_k as f64).sqrt(),
                    );
                    o.slice_mut(part).assign(&out);
                    heads.push(cache);
                }
            }
            x = x + o.dot(&block.attn[3]);
            // x ← x + FFN(LayerNorm(x)).
            let (c, ln2) = layer_norm_forward(&x, &block.ln2[0], &block.ln2[1], EPS);
            let (f, ffn) = ffn_forward(&c, &block.ffn);
            x = x + f;
            caches.push(BlockCache {
                ln1,
                a,
                qkv,
                heads,
                o,
                ln2,
                ffn,
            });
        }
        let (z, ln_f) = layer_norm_forward(&x, &self.ln_f[0], &self.ln_f[1], EPS);
        let logits = z.dot(&self.head.0) + &self.head.1;
        Ok(Forward {
            logits,
            tokens: batch.to_vec(),
            heads: h,
            blocks: caches,
            ln_f,
            z,
        })
    }

    // ANCHOR_END: forward
    /// Checks that `batch` holds at least one sequence, that all have the
    /// same length, between 1 and the context, and that every token exists.
    fn check_batch(&self, batch: &[Vec<usize>]) -> Result<(), AttnError> {
        let Some(first) = batch.first() else {
            return Err(AttnError::Empty {
                name: "batch",
                shape: (0, 0),
            });
        };
        let t = first.len();
        if t == 0 || t > self.config.context() || batch.iter().any(|s| s.len() != t) {
            return Err(AttnError::InvalidArgument {
                name: "sequence length",
                value: t as f32,
                requirement:
                    "must be the same for every sequence, from 1 to the model's context (2k)",
            });
        }
        if let Some(&token) = batch.iter().flatten().find(|&&token| token >= VOCAB) {
            return Err(AttnError::InvalidArgument {
                name: "token",
                value: token as f32,
                requirement: "must be a digit 0–9 or the separator 10",
            });
        }
        Ok(())
    }
}

impl Forward {
    /// The `T×T` attention weights of `block`, `sequence` and `head`, as the
    /// forward pass kept them for the backward pass.
    pub fn weights(&self, block: usize, sequence: usize, head: usize) -> &Matrix {
        &self.blocks[block].heads[sequence * self.heads + head].p
    }
}

impl TinyTransformer {
    /// The backward pass: the gradient of the loss with respect to every
    /// parameter, given `dL/dlogits`. Each step undoes one step of
    /// [`Self::forward`], in reverse order.
    pub fn backward(
        &self,
        fwd: &Forward,
        d_logits: &ArrayRef2<f64>,
    ) -> Result<TinyTransformer, AttnError> {
        if d_logits.dim() != fwd.logits.dim() {
            return Err(AttnError::ShapesDiffer {
                what: "dL/dlogits and the logits",
                left: d_logits.dim(),
                right: fwd.logits.dim(),
            });
        }
        if fwd.blocks.len() != self.blocks.len() {
            return Err(AttnError::InvalidArgument {
                name: "forward pass depth",
                value: fwd.blocks.len() as f32,
                requirement: "must run through every block of this model (not forward_through)",
            });
        }
        let mut g = self.zeros_like();
        let (t, d, h) = (fwd.tokens[0].len(), self.config.d_model, self.config.heads);
        let d_k = d / h;
        let (dz, d_head, d_head_b) = linear_backward(&fwd.z, &self.head.0, d_logits);
        g.head = (d_head, d_head_b);
        let (mut dx, dg, db) = layer_norm_backward(&fwd.ln_f, &self.ln_f[0], &dz);
        g.ln_f = [dg, db];
        for (l, (block, cache)) in self.blocks.iter().zip(&fwd.blocks).enumerate().rev() {
            let gb = &mut g.blocks[l];
            // x₂ = x₁ + FFN(LayerNorm(x₁)): the residual passes dx through.
            let (dc, d_ffn) = ffn_backward(&cache.ffn, &block.ffn, &dx);
            gb.ffn = d_ffn;
            let (dx_ln2, dg2, db2) = layer_norm_backward(&cache.ln2, &block.ln2[0], &dc);
            gb.ln2 = [dg2, db2];
            dx += &dx_ln2;
            // x₁ = x + O W_O, O from attention per sequence and head.
            let d_o = dx.dot(&block.attn[3].t());
            gb.attn[3] = cache.o.t().dot(&dx);
            let mut d_qkv = [0, 1, 2].map(|_| Matrix::zeros(dx.dim()));
            for b in 0..fwd.tokens.len() {
                for head in 0..h {
                    let part = s![b * t..(b + 1) * t, head * d_k..(head + 1) * d_k];
                    let [q, k, v] = [0, 1, 2].map(|i| cache.qkv[i].slice(part));
                    let attention = &cache.heads[b * h + head];
                    let grads = attention_backward(&q, &k, &v, attention, &d_o.slice(part));
                    d_qkv[0].slice_mut(part).assign(&grads.0);
                    d_qkv[1].slice_mut(part).assign(&grads.1);
                    d_qkv[2].slice_mut(part).assign(&grads.2);
                }
            }
            let mut da = Matrix::zeros(dx.dim());
            for (i, d_x) in d_qkv.iter().enumerate() {
                da += &d_x.dot(&block.attn[i].t()); // back through X W_i
                gb.attn[i] = cache.a.t().dot(d_x);
            }
            let (dx_ln1, dg1, db1) = layer_norm_backward(&cache.ln1, &block.ln1[0], &da);
            gb.ln1 = [dg1, db1];
            dx += &dx_ln1;
        }
        // Embeddings: each row of dx goes to its token's and its position's row.
        for (b, sequence) in fwd.tokens.iter().enumerate() {
            for (i, &token) in sequence.iter().enumerate() {
                let row = dx.row(b * t + i);
                g.tokens.row_mut(token).scaled_add(1.0, &row);
                g.positions.row_mut(i).scaled_add(1.0, &row);
            }
        }
        Ok(g)
    }

    // ANCHOR: loss
    /// The loss on `inputs` with next-token `targets` (one per position,
    /// `None` where there is nothing to predict) and its gradient with
    /// respect to every parameter: forward, cross-entropy, backward.
    pub fn loss_and_gradients(
        &self,
        inputs: &[Vec<usize>],
        targets: &[Option<usize>],
    ) -> Result<(f64, TinyTransformer), AttnError> {
        let fwd = self.forward(inputs)?;
        Self::check_targets(&fwd, targets)?;
        let (loss, d_logits) = cross_entropy(&fwd.logits, targets);
        Ok((loss, self.backward(&fwd, &d_logits)?))
    }

    // ANCHOR_END: loss

    /// The loss alone, as [`Self::loss_and_gradients`] computes it.
    pub fn loss(&self, inputs: &[Vec<usize>], targets: &[Option<usize>]) -> Result<f64, AttnError> {
        let fwd = self.forward(inputs)?;
        Self::check_targets(&fwd, targets)?;
        Ok(cross_entropy(&fwd.logits, targets).0)
    }

    /// Checks one target (or `None`) per input position, each a token.
    fn check_targets(fwd: &Forward, targets: &[Option<usize>]) -> Result<(), AttnError> {
        if targets.len() != fwd.logits.nrows() || targets.iter().flatten().any(|&t| t >= VOCAB) {
            return Err(AttnError::InvalidArgument {
                name: "targets",
                value: targets.len() as f32,
                requirement: "must give one target token (or None) per input position",
            });
        }
        Ok(())
    }
}

// ANCHOR: task
/// `k` random digits followed by the separator and the digits reversed:
/// `2k + 1` tokens.
pub fn reversal_example(k: usize, rng: &mut StdRng) -> Vec<usize> {
    let digits: Vec<usize> = (0..k).map(|_| rng.random_range(0..10)).collect();
    let mut sequence = digits.clone();
    sequence.push(SEP);
    sequence.extend(digits.iter().rev());
    sequence
}
// ANCHOR_END: task

/// What the model learns to write after the separator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Task {
    /// The prompt's digits in reverse order ([`reversal_example`]).
    Reverse,
    /// The prompt's digits in increasing order (chapter 11's exercise 1,
    /// [`crate::exercises::ch11::sorting_example`]).
    Sort,
}

impl Task {
    /// One random example of the task: `k` digits, the separator, the answer.
    pub fn example(self, k: usize, rng: &mut StdRng) -> Vec<usize> {
        match self {
            Task::Reverse => reversal_example(k, rng),
            Task::Sort => crate::exercises::ch11::sorting_example(k, rng),
        }
    }
}

/// The model's inputs (all tokens but the last) and its targets (the next
/// token at each position, but only where the next token is an answer digit:
/// the digits of the prompt are random and cannot be predicted).
pub fn inputs_and_targets(
    examples: &[Vec<usize>],
    k: usize,
) -> (Vec<Vec<usize>>, Vec<Option<usize>>) {
    let inputs = examples.iter().map(|e| e[..2 * k].to_vec()).collect();
    let targets = examples
        .iter()
        .flat_map(|e| (0..2 * k).map(move |i| (i >= k).then(|| e[i + 1])))
        .collect();
    (inputs, targets)
}

/// A held-out set: `count` distinct examples of `task` from their own seed.
/// Training never draws one of these (see [`train`]).
pub fn held_out(
    task: Task,
    k: usize,
    count: usize,
    seed: u64,
) -> Result<Vec<Vec<usize>>, AttnError> {
    let possible = 10usize.checked_pow(k as u32).unwrap_or(usize::MAX);
    if count > possible / 2 {
        return Err(AttnError::InvalidArgument {
            name: "count",
            value: count as f32,
            requirement: "must be at most half the 10^k possible sequences",
        });
    }
    let mut rng = StdRng::seed_from_u64(seed);
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    while out.len() < count {
        let e = task.example(k, &mut rng);
        if seen.insert(e.clone()) {
            out.push(e);
        }
    }
    Ok(out)
}

// ANCHOR: adam
/// The Adam optimiser (Kingma and Ba, 2015): per parameter, running means of
/// the gradient (`m`) and of its square (`v`), bias-corrected.
pub struct Adam {
    /// Learning rate.
    pub lr: f64,
    /// Decay of `m` and `v`.
    pub betas: (f64, f64),
    /// Added to `√v̂`.
    pub eps: f64,
    m: Vec<Vec<f64>>,
    v: Vec<Vec<f64>>,
    step: i32,
    config: ModelConfig,
}

impl Adam {
    /// An optimiser for `model`'s parameters.
    pub fn new(model: &TinyTransformer, lr: f64) -> Self {
        let zeros: Vec<Vec<f64>> = model.slices().iter().map(|s| vec![0.0; s.len()]).collect();
        Adam {
            lr,
            betas: (0.9, 0.98),
            eps: 1e-9,
            m: zeros.clone(),
            v: zeros,
            step: 0,
            config: model.config,
        }
    }

    /// One update: `θ ← θ − lr · m̂ / (√v̂ + ε)`, scaled by `lr_factor`
    /// (the schedule).
    pub fn update(
        &mut self,
        model: &mut TinyTransformer,
        grads: &TinyTransformer,
        lr_factor: f64,
    ) -> Result<(), AttnError> {
        if model.config != self.config || grads.config != self.config {
            return Err(AttnError::InvalidArgument {
                name: "model and gradients",
                value: 0.0,
                requirement: "must have the configuration the optimiser was made for",
            });
        }
        self.step += 1;
        let (b1, b2) = self.betas;
        let (c1, c2) = (1.0 - b1.powi(self.step), 1.0 - b2.powi(self.step));
        let lr = self.lr * lr_factor;
        for (((theta, g), m), v) in model
            .slices_mut()
            .into_iter()
            .zip(grads.slices())
            .zip(&mut self.m)
            .zip(&mut self.v)
        {
            for i in 0..theta.len() {
                m[i] = b1 * m[i] + (1.0 - b1) * g[i];
                v[i] = b2 * v[i] + (1.0 - b2) * g[i] * g[i];
                theta[i] -= lr * (m[i] / c1) / ((v[i] / c2).sqrt() + self.eps);
            }
        }
        Ok(())
    }
}
// ANCHOR_END: adam

// ANCHOR: book_config
/// The model chapter 11 trains: 8 digits, width 32, 2 heads, 2 blocks.
pub const BOOK_MODEL: ModelConfig = ModelConfig {
    k: 8,
    d_model: 32,
    heads: 2,
    d_ff: 128,
    layers: 2,
};
/// How chapter 11 trains it: 600 steps of 64 sequences, peak learning rate
/// 3·10⁻³ after 30 warm-up steps.
pub const BOOK_TRAINING: TrainConfig = TrainConfig {
    steps: 600,
    batch: 64,
    lr: 3e-3,
    warmup: 30,
    seed: 1,
    task: Task::Reverse,
};
/// How chapter 11's exercise 1 trains the same model to sort: the same
/// steps, data sizes and seed, only the task differs.
pub const BOOK_SORT_TRAINING: TrainConfig = TrainConfig {
    task: Task::Sort,
    ..BOOK_TRAINING
};
/// The held-out set: 1000 distinct examples, seed 99.
pub const HELD_OUT: (usize, u64) = (1000, 99);
// ANCHOR_END: book_config

/// How to train.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrainConfig {
    /// Optimiser steps.
    pub steps: usize,
    /// Sequences per step.
    pub batch: usize,
    /// Peak learning rate.
    pub lr: f64,
    /// Steps of linear warm-up from 0 to `lr`, after which it decays as a
    /// cosine to 0 at `steps`.
    pub warmup: usize,
    /// Seed of the initialisation and of the training data.
    pub seed: u64,
    /// The task the training examples are drawn from.
    pub task: Task,
}

// ANCHOR: train
/// The learning-rate factor at `step`: linear warm-up, then cosine decay.
pub fn schedule(step: usize, c: &TrainConfig) -> f64 {
    if step < c.warmup {
        return (step + 1) as f64 / c.warmup as f64;
    }
    let progress = (step - c.warmup) as f64 / (c.steps - c.warmup).max(1) as f64;
    0.5 * (1.0 + (std::f64::consts::PI * progress).cos())
}

/// Trains a fresh model on random examples of `c.task`, never drawing one of
/// `exclude` (the held-out set). Returns the model and the loss of every step.
pub fn train(
    model: ModelConfig,
    c: &TrainConfig,
    exclude: &[Vec<usize>],
) -> Result<(TinyTransformer, Vec<f64>), AttnError> {
    train_with(model, c, exclude, |_, _| {})
}

/// [`train`], calling `after_step(step, model)` after every step (to
/// measure held-out accuracy while training, say).
pub fn train_with(
    model: ModelConfig,
    c: &TrainConfig,
    exclude: &[Vec<usize>],
    mut after_step: impl FnMut(usize, &TinyTransformer),
) -> Result<(TinyTransformer, Vec<f64>), AttnError> {
    c.check()?;
    let mut net = TinyTransformer::new(model, c.seed)?;
    let mut adam = Adam::new(&net, c.lr);
    let mut rng = StdRng::seed_from_u64(c.seed + 1);
    let excluded: HashSet<&Vec<usize>> = exclude.iter().collect();
    let mut losses = Vec::with_capacity(c.steps);
    for step in 0..c.steps {
        let mut examples = Vec::with_capacity(c.batch);
        while examples.len() < c.batch {
            let e = c.task.example(model.k, &mut rng);
            if !excluded.contains(&e) {
                examples.push(e);
            }
        }
        let (inputs, targets) = inputs_and_targets(&examples, model.k);
        let (loss, grads) = net.loss_and_gradients(&inputs, &targets)?;
        adam.update(&mut net, &grads, schedule(step, c))?;
        losses.push(loss);
        after_step(step, &net);
    }
    Ok((net, losses))
}

// ANCHOR_END: train

impl TrainConfig {
    /// Checks that there is at least one step of at least one sequence, a
    /// positive learning rate, and a warm-up no longer than the training.
    pub fn check(&self) -> Result<(), AttnError> {
        if self.steps == 0
            || self.batch == 0
            || self.warmup > self.steps
            || self.lr.is_nan()
            || self.lr <= 0.0
        {
            return Err(AttnError::InvalidArgument {
                name: "training configuration",
                value: self.lr as f32,
                requirement: "needs steps ≥ 1, batch ≥ 1, warmup ≤ steps and a learning rate > 0",
            });
        }
        Ok(())
    }
}

// ANCHOR: greedy
/// Greedy decoding: for each prompt (`k` digits and the separator), append
/// the most probable next token `k` times. Returns the `k` generated tokens
/// of each prompt.
pub fn greedy_decode(
    net: &TinyTransformer,
    prompts: &[Vec<usize>],
) -> Result<Vec<Vec<usize>>, AttnError> {
    let mut sequences: Vec<Vec<usize>> = prompts.to_vec();
    for _ in 0..net.config.k {
        let logits = net.forward(&sequences)?.logits;
        let t = sequences[0].len();
        for (b, sequence) in sequences.iter_mut().enumerate() {
            let last = logits.row(b * t + t - 1);
            sequence.push(most_probable(&last));
        }
    }
    Ok(sequences
        .iter()
        .map(|s| s[prompts[0].len()..].to_vec())
        .collect())
}

/// The token with the largest logit in `logits` (the first, on a tie).
fn most_probable(logits: &ArrayRef1<f64>) -> usize {
    (0..VOCAB).fold(0, |best, j| if logits[j] > logits[best] { j } else { best })
}

// ANCHOR_END: greedy

/// Exact-sequence accuracy (every digit right) and per-digit accuracy of
/// greedy decoding on `examples` (each `2k + 1` tokens).
pub fn accuracy(net: &TinyTransformer, examples: &[Vec<usize>]) -> Result<(f64, f64), AttnError> {
    let k = net.config.k;
    check_examples(examples, k)?;
    let prompts: Vec<Vec<usize>> = examples.iter().map(|e| e[..=k].to_vec()).collect();
    let outputs = greedy_decode(net, &prompts)?;
    let (mut exact, mut digits) = (0, 0);
    for (out, e) in outputs.iter().zip(examples) {
        let right = out.iter().zip(&e[k + 1..]).filter(|(a, b)| a == b).count();
        digits += right;
        exact += usize::from(right == k);
    }
    Ok((
        exact as f64 / examples.len() as f64,
        digits as f64 / (examples.len() * k) as f64,
    ))
}

/// Checks that there is at least one example and each has `2k + 1` tokens.
fn check_examples(examples: &[Vec<usize>], k: usize) -> Result<(), AttnError> {
    if examples.is_empty() || examples.iter().any(|e| e.len() != 2 * k + 1) {
        return Err(AttnError::InvalidArgument {
            name: "examples",
            value: examples.len() as f32,
            requirement: "must be at least one, each of 2k + 1 tokens",
        });
    }
    Ok(())
}

impl TinyTransformer {
    /// The weights as text: a header line `tiny-transformer k d_model heads
    /// d_ff layers`, then one line per tensor (in [`Self::slices`] order)
    /// of its values, space-separated, each rounded to `f32` and written as
    /// the shortest decimal that reads back to that `f32` (Rust's `{}`
    /// formatting). Rounding to `f32` halves the file; the book reports
    /// accuracy for the weights as saved.
    pub fn to_text(&self) -> String {
        let c = self.config;
        let mut text = format!(
            "tiny-transformer {} {} {} {} {}\n",
            c.k, c.d_model, c.heads, c.d_ff, c.layers
        );
        for tensor in self.slices() {
            let values: Vec<String> = tensor.iter().map(|&x| format!("{}", x as f32)).collect();
            text += &values.join(" ");
            text.push('\n');
        }
        text
    }

    /// Reads what [`Self::to_text`] wrote.
    pub fn from_text(text: &str) -> Result<Self, AttnError> {
        let invalid = |reason: String| AttnError::InvalidWeights { reason };
        let mut lines = text.lines();
        let header: Vec<usize> = lines
            .next()
            .and_then(|l| l.strip_prefix("tiny-transformer "))
            .ok_or_else(|| invalid("not a tiny-transformer file".into()))?
            .split_whitespace()
            .map(|w| w.parse().map_err(|e| invalid(format!("header: {e}"))))
            .collect::<Result<_, _>>()?;
        let [k, d_model, heads, d_ff, layers] = header[..] else {
            return Err(invalid(format!(
                "the header has {} numbers, expected 5",
                header.len()
            )));
        };
        let mut model = TinyTransformer::new(
            ModelConfig {
                k,
                d_model,
                heads,
                d_ff,
                layers,
            },
            0,
        )?;
        for (i, tensor) in model.slices_mut().into_iter().enumerate() {
            let line = lines
                .next()
                .ok_or_else(|| invalid(format!("tensor {i} is missing")))?;
            let values: Vec<f64> = line
                .split_whitespace()
                .map(|w| {
                    w.parse::<f32>()
                        .map(f64::from)
                        .map_err(|e| invalid(format!("tensor {i}: {e}")))
                })
                .collect::<Result<_, _>>()?;
            if values.len() != tensor.len() {
                let reason = format!(
                    "tensor {i} has {} values, expected {}",
                    values.len(),
                    tensor.len()
                );
                return Err(invalid(reason));
            }
            tensor.copy_from_slice(&values);
        }
        Ok(model)
    }
}

/// Mean attention weight on the mirrored input position: for the answer's
/// `j`-th prediction (query position `k + j`), the weight on key `k − 1 − j`,
/// the digit it must output next. Per block and head, averaged over
/// `examples`.
pub fn mirror_attention(
    net: &TinyTransformer,
    examples: &[Vec<usize>],
) -> Result<Vec<Vec<f64>>, AttnError> {
    let k = net.config.k;
    check_examples(examples, k)?;
    let (inputs, _) = inputs_and_targets(examples, k);
    let fwd = net.forward(&inputs)?;
    let mirror = |block, head| {
        let per_sequence = (0..inputs.len()).map(|b| {
            let w = fwd.weights(block, b, head);
            (0..k).map(|j| w[[k + j, k - 1 - j]]).sum::<f64>() / k as f64
        });
        per_sequence.sum::<f64>() / inputs.len() as f64
    };
    Ok(per_block_and_head(net, mirror))
}

/// `f(block, head)` for every block and head of `net`, one row a block.
fn per_block_and_head<T>(net: &TinyTransformer, f: impl Fn(usize, usize) -> T) -> Vec<Vec<T>> {
    let (layers, heads) = (net.config.layers, net.config.heads);
    (0..layers)
        .map(|l| (0..heads).map(|h| f(l, h)).collect())
        .collect()
}

/// Where an answer step's attention goes among the prompt digits, by value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DigitAttention {
    /// Weight on the prompt positions holding the digit to output next.
    pub on_target: f64,
    /// Weight on the prompt positions holding smaller digits.
    pub on_smaller: f64,
    /// Weight on the prompt positions holding larger digits.
    pub on_larger: f64,
}

/// For the answer's `j`-th prediction (query position `k + j`), how the
/// attention weight over the `k` prompt digits splits by value: on digits
/// equal to the one to output next, smaller, larger. A lookup by content
/// puts its weight on the first, wherever those digits sit. Per block and
/// head, averaged over the answer steps and `examples`.
pub fn digit_attention(
    net: &TinyTransformer,
    examples: &[Vec<usize>],
) -> Result<Vec<Vec<DigitAttention>>, AttnError> {
    let k = net.config.k;
    check_examples(examples, k)?;
    let (inputs, _) = inputs_and_targets(examples, k);
    let fwd = net.forward(&inputs)?;
    let split = |block, head| {
        let mut sums = [0.0; 3];
        for (b, e) in examples.iter().enumerate() {
            let w = fwd.weights(block, b, head);
            for j in 0..k {
                let target = e[k + 1 + j];
                for (i, &digit) in e[..k].iter().enumerate() {
                    let slot = match digit.cmp(&target) {
                        std::cmp::Ordering::Equal => 0,
                        std::cmp::Ordering::Less => 1,
                        std::cmp::Ordering::Greater => 2,
                    };
                    sums[slot] += w[[k + j, i]];
                }
            }
        }
        let n = (examples.len() * k) as f64;
        DigitAttention {
            on_target: sums[0] / n,
            on_smaller: sums[1] / n,
            on_larger: sums[2] / n,
        }
    };
    Ok(per_block_and_head(net, split))
}

/// The weight a uniform head would put on the prompt positions holding the
/// digit to output next: at answer step `j` the query sees `k + j + 1`
/// keys. The baseline for [`digit_attention`]'s `on_target`.
pub fn uniform_target_share(examples: &[Vec<usize>], k: usize) -> Result<f64, AttnError> {
    check_examples(examples, k)?;
    let mut total = 0.0;
    for e in examples {
        for j in 0..k {
            let matches = e[..k].iter().filter(|&&d| d == e[k + 1 + j]).count();
            total += matches as f64 / (k + j + 1) as f64;
        }
    }
    Ok(total / (examples.len() * k) as f64)
}

/// How often the residual stream after the first `depth` blocks, read out
/// through the final LayerNorm and head, already predicts the right answer
/// digit (teacher-forced, every answer position of every example).
pub fn accuracy_after(
    net: &TinyTransformer,
    examples: &[Vec<usize>],
    depth: usize,
) -> Result<f64, AttnError> {
    let k = net.config.k;
    check_examples(examples, k)?;
    let (inputs, targets) = inputs_and_targets(examples, k);
    let logits = net.forward_through(&inputs, depth)?.logits;
    let (mut right, mut total) = (0, 0);
    for (row, target) in logits.rows().into_iter().zip(&targets) {
        if let Some(t) = *target {
            right += usize::from(most_probable(&row) == t);
            total += 1;
        }
    }
    Ok(right as f64 / total as f64)
}

/// The gradient check's problem: a small model (2 blocks of width 8, 2
/// heads) from `seed`, and three 2-digit reversal examples as inputs and
/// targets.
pub fn small_problem(seed: u64) -> (TinyTransformer, Vec<Vec<usize>>, Vec<Option<usize>>) {
    let config = ModelConfig {
        k: 2,
        d_model: 8,
        heads: 2,
        d_ff: 12,
        layers: 2,
    };
    let mut rng = StdRng::seed_from_u64(seed + 1);
    let examples: Vec<Vec<usize>> = (0..3)
        .map(|_| reversal_example(config.k, &mut rng))
        .collect();
    let (inputs, targets) = inputs_and_targets(&examples, config.k);
    let net = TinyTransformer::new(config, seed).expect("a valid configuration");
    (net, inputs, targets)
}

// ANCHOR: check_gradients
/// A parameter matrix of the model, picked out for a gradient check.
type Pick = fn(&mut TinyTransformer) -> &mut Matrix;
/// A parameter vector of the model (a bias, LayerNorm's γ or β).
type PickVector = fn(&mut TinyTransformer) -> &mut Array1<f64>;

/// Checks the whole model's backward pass against central differences on
/// [`small_problem`], every kind of parameter: the four attention
/// projections, both FFN matrices and their biases, both embeddings, the
/// output head and its bias, and LayerNorm's scale and shift. Returns
/// `(parameter, largest relative error)`.
pub fn check_gradients(seed: u64) -> Vec<(&'static str, f64)> {
    let (net, inputs, targets) = small_problem(seed);
    let loss_of = |net: &TinyTransformer| net.loss(&inputs, &targets).expect("a valid problem");
    let (_, mut grads) = net
        .loss_and_gradients(&inputs, &targets)
        .expect("a valid problem");
    let picks: [(&'static str, Pick); 9] = [
        ("W_Q, block 1", |n| &mut n.blocks[0].attn[0]),
        ("W_K, block 1", |n| &mut n.blocks[0].attn[1]),
        ("W_V, block 2", |n| &mut n.blocks[1].attn[2]),
        ("W_O, block 2", |n| &mut n.blocks[1].attn[3]),
        ("FFN W₁, block 1", |n| &mut n.blocks[0].ffn.w1),
        ("FFN W₂, block 2", |n| &mut n.blocks[1].ffn.w2),
        ("token embeddings", |n| &mut n.tokens),
        ("position embeddings", |n| &mut n.positions),
        ("output head", |n| &mut n.head.0),
    ];
    let vector_picks: [(&'static str, PickVector); 7] = [
        ("FFN b₁, block 1", |n| &mut n.blocks[0].ffn.b1),
        ("FFN b₂, block 2", |n| &mut n.blocks[1].ffn.b2),
        ("LayerNorm γ, block 1", |n| &mut n.blocks[0].ln1[0]),
        ("LayerNorm β, block 2", |n| &mut n.blocks[1].ln2[1]),
        ("final LayerNorm γ", |n| &mut n.ln_f[0]),
        ("final LayerNorm β", |n| &mut n.ln_f[1]),
        ("output head bias", |n| &mut n.head.1),
    ];
    // The error of one parameter: `at` is its value, `analytic` its gradient
    // from the backward pass, `set` writes a perturbed value into a model.
    let error_of = |at: Matrix, analytic: Matrix, set: &dyn Fn(&mut TinyTransformer, &Matrix)| {
        let loss_with = |m: &Matrix| {
            let mut perturbed = net.clone();
            set(&mut perturbed, m);
            loss_of(&perturbed)
        };
        crate::grad::gradient_error(&analytic, loss_with, &at)
    };
    let mut checks: Vec<(&'static str, f64)> = picks
        .iter()
        .map(|&(name, pick)| {
            let (at, analytic) = (pick(&mut net.clone()).clone(), pick(&mut grads).clone());
            (name, error_of(at, analytic, &|n, m| *pick(n) = m.clone()))
        })
        .collect();
    // A vector is checked as a 1×len matrix.
    let as_row = |v: &Array1<f64>| v.clone().insert_axis(Axis(0));
    checks.extend(vector_picks.iter().map(|&(name, pick)| {
        let (at, analytic) = (as_row(pick(&mut net.clone())), as_row(pick(&mut grads)));
        (
            name,
            error_of(at, analytic, &|n, m| *pick(n) = m.row(0).to_owned()),
        )
    }));
    checks
}
// ANCHOR_END: check_gradients

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> ModelConfig {
        ModelConfig {
            k: 2,
            d_model: 8,
            heads: 2,
            d_ff: 12,
            layers: 2,
        }
    }

    // ANCHOR: model_gradient_test
    #[test]
    fn the_whole_model_backward_matches_finite_differences() {
        for (name, error) in check_gradients(3) {
            assert!(error < 1e-6, "{name}: relative error {error:e}");
        }
    }
    // ANCHOR_END: model_gradient_test

    #[test]
    fn weights_survive_a_round_trip_through_text() {
        let net = TinyTransformer::new(small(), 5).unwrap();
        let back = TinyTransformer::from_text(&net.to_text()).unwrap();
        assert_eq!(back.to_text(), net.to_text(), "saving is idempotent");
        let (a, b) = (net.slices().concat(), back.slices().concat());
        assert!(
            a.iter()
                .zip(&b)
                .all(|(x, y)| (x - y).abs() <= 1e-7 * x.abs()),
            "f32 rounding only"
        );
        assert!(TinyTransformer::from_text("hello").is_err());
        let truncated: String = net.to_text().lines().take(3).collect::<Vec<_>>().join("\n");
        let err = TinyTransformer::from_text(&truncated).unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot read the weights: tensor 2 is missing"
        );
    }

    #[test]
    fn the_task_and_its_targets() {
        let mut rng = StdRng::seed_from_u64(1);
        let e = reversal_example(4, &mut rng);
        assert_eq!(e.len(), 9);
        assert_eq!(e[4], SEP);
        assert!((0..4).all(|i| e[5 + i] == e[3 - i]));
        let (inputs, targets) = inputs_and_targets(std::slice::from_ref(&e), 4);
        assert_eq!(inputs[0], e[..8].to_vec());
        assert_eq!(&targets[..4], &[None, None, None, None]);
        assert_eq!(targets[4], Some(e[5]));
        assert_eq!(targets[7], Some(e[8]));
        let test = held_out(Task::Reverse, 4, 50, 9).unwrap();
        let distinct: HashSet<_> = test.iter().collect();
        assert_eq!(distinct.len(), 50);
    }

    #[test]
    fn adam_moves_each_parameter_by_about_lr_on_its_first_step() {
        let mut net = TinyTransformer::new(small(), 2).unwrap();
        let before = net.clone();
        let mut grads = net.zeros_like();
        grads.tokens.fill(3.0);
        let mut adam = Adam::new(&net, 0.01);
        adam.update(&mut net, &grads, 1.0).unwrap();
        let moved = &before.tokens - &net.tokens;
        assert!(
            moved.iter().all(|&m| (m - 0.01).abs() < 1e-9),
            "m̂/√v̂ = 1 on step 1"
        );
        assert_eq!(net.positions, before.positions, "zero gradient, no move");
    }

    #[test]
    fn bad_input_gets_a_clear_error() {
        let bad_heads = ModelConfig {
            heads: 3,
            ..small()
        };
        let err = TinyTransformer::new(bad_heads, 0).unwrap_err();
        assert_eq!(err, AttnError::HeadsDoNotDivide { d_model: 8, h: 3 });
        let net = TinyTransformer::new(small(), 0).unwrap();
        let err = net.forward(&[]).err().unwrap();
        assert_eq!(
            err,
            AttnError::Empty {
                name: "batch",
                shape: (0, 0)
            }
        );
        let too_long = net.forward(&[vec![1; 5]]).err().unwrap();
        assert!(too_long
            .to_string()
            .starts_with("sequence length must be the same for every sequence"));
        let ragged = net.forward(&[vec![1, 2], vec![3]]).err().unwrap();
        assert!(ragged.to_string().contains("got 2"));
        let unknown = net.forward(&[vec![1, 11]]).err().unwrap();
        assert_eq!(
            unknown.to_string(),
            "token must be a digit 0–9 or the separator 10, got 11"
        );
        let err = net.loss(&[vec![1, 2]], &[None]).unwrap_err();
        assert!(err
            .to_string()
            .starts_with("targets must give one target token"));
        assert!(
            held_out(Task::Reverse, 2, 51, 0).is_err(),
            "51 distinct of 100 is more than half"
        );
        assert!(
            accuracy(&net, &[vec![1, 2, 3]]).is_err(),
            "an example needs 2k + 1 tokens"
        );
        let other = TinyTransformer::new(
            ModelConfig {
                d_model: 4,
                ..small()
            },
            0,
        )
        .unwrap();
        let mut net = net;
        let mut adam = Adam::new(&net, 0.1);
        assert!(
            adam.update(&mut net, &other, 1.0).is_err(),
            "gradients of another model"
        );
        let no_steps = TrainConfig {
            steps: 0,
            batch: 1,
            lr: 1e-3,
            warmup: 0,
            seed: 0,
            task: Task::Reverse,
        };
        assert!(train(small(), &no_steps, &[]).is_err());
    }
}
