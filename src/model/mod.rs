//! A tiny decoder-only Transformer, trained from scratch to reverse a
//! sequence of digits (chapter 12).
//!
//! The task: given `k` digits and a separator, `3 1 4 1 5 9 | `, produce the
//! digits reversed, `9 5 1 4 1 3`. Output `j` must copy input `k − 1 − j`:
//! a job for attention, whose query at one position can look up the key at
//! the mirrored position, and which a network without attention cannot do
//! with one fixed pattern.
//!
//! Decoder-only (GPT-style): one causal stack reads the prompt and writes the
//! answer, predicting each next token. It is the simplest model that solves
//! the task, and the one chapter 6's KV cache and chapter 10's pre-norm block
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

mod decode;
mod forward;
mod gradcheck;
mod task;
mod train;
mod weights;

use ndarray::Array1;
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

use crate::check::{check_model_sizes, check_parameters};
use crate::error::AttnError;
use crate::grad::Matrix;
use crate::nn::{zeroed, BlockAttention, FfnParams, Parameters, PreNormBlock};

pub use decode::most_probable;
pub use decode::{accuracy, greedy_decode};
pub use forward::Forward;
pub use gradcheck::{check_gradients, small_problem, Problem};
pub use task::check_examples;
pub use task::{held_out, inputs_and_targets, reversal_example, InputsAndTargets, Task};
pub use train::{schedule, train, train_with, TrainConfig, BOOK_MODEL, BOOK_TRAINING, HELD_OUT};

/// The separator between the digits and their reversal.
pub const SEP: usize = 10;
/// Tokens: the digits 0–9 and the separator.
pub const VOCAB: usize = 11;
const EPS: f64 = 1e-5;
pub use crate::check::MAX_PARAMETERS;

// ANCHOR: config
/// The sizes of the model and of the task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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
            ("layers", self.layers),
        ];
        check_model_sizes(&sizes, (self.d_model, self.heads))?;
        check_parameters(
            self.parameter_count(),
            [self.layers, self.d_model, self.d_ff],
        )
    }

    /// Tokens the model reads: `k` digits, the separator, `k − 1` answer
    /// digits (the last answer digit is only ever predicted). [`Self::check`]
    /// keeps `k` small enough for `2k` to fit.
    pub fn context(&self) -> usize {
        self.k.saturating_mul(2)
    }

    /// The number of parameters a model of this configuration has, or
    /// `None` if it does not fit in a `usize`.
    pub fn parameter_count(&self) -> Option<usize> {
        let (d, f, v) = (self.d_model, self.d_ff, VOCAB);
        let d_f = d.checked_mul(f)?;
        let block = [
            d.checked_mul(4)?,
            d.checked_mul(d)?.checked_mul(4)?,
            d_f,
            f,
            d_f,
            d,
        ]
        .into_iter()
        .try_fold(0_usize, usize::checked_add)?; // LayerNorms, W_Q..W_O, FFN
        let embeddings = self.k.checked_mul(2)?.checked_add(v)?.checked_mul(d)?;
        let head = d.checked_mul(v + 2)?.checked_add(v)?; // W, bias, final LayerNorm
        block
            .checked_mul(self.layers)?
            .checked_add(embeddings)?
            .checked_add(head)
    }
}

/// One pre-norm block's parameters.
pub(crate) type Block = PreNormBlock<f64>;

impl Parameters for TinyTransformer {
    type Real = f64;
    fn slices(&self) -> Vec<&[f64]> {
        TinyTransformer::slices(self)
    }
    fn slices_mut(&mut self) -> Vec<&mut [f64]> {
        TinyTransformer::slices_mut(self)
    }
    fn named_slices(&self) -> Vec<(String, &[f64])> {
        TinyTransformer::named_slices(self)
    }
}

/// The model's parameters (and, with the same shapes, their gradients).
/// The fields are private: every tensor's shape follows from `config`, and
/// only [`TinyTransformer::new`], [`TinyTransformer::from_text`] and the
/// optimiser write them.
#[derive(Debug, Clone, PartialEq)]
pub struct TinyTransformer {
    /// The sizes.
    config: ModelConfig,
    /// Token embeddings, `VOCAB×d`.
    tokens: Matrix,
    /// Learned position embeddings, `context×d`.
    positions: Matrix,
    /// The blocks.
    blocks: Vec<Block>,
    /// Final LayerNorm.
    ln_f: [Array1<f64>; 2],
    /// Output projection `d×VOCAB` and its bias.
    head: (Matrix, Array1<f64>),
}

fn normal(rows: usize, cols: usize, std: f64, rng: &mut StdRng) -> Matrix {
    crate::grad::normal_matrix(rows, cols, rng) * std
}

impl TinyTransformer {
    /// A freshly initialised model: embeddings `N(0, 0.02²)` as in GPT-2,
    /// weight matrices `N(0, 1/fan-in)` as in chapter 4, LayerNorms the
    /// identity, biases 0.
    pub fn new(config: ModelConfig, seed: u64) -> Result<Self, AttnError> {
        config.check()?;
        let mut rng = StdRng::seed_from_u64(seed);
        let (d, f) = (config.d_model, config.d_ff);
        let ln = || [Array1::ones(d), Array1::zeros(d)];
        let blocks = (0..config.layers)
            .map(|_| Block {
                ln1: ln(),
                attn: BlockAttention::Heads(
                    [0, 1, 2, 3].map(|_| normal(d, d, 1.0 / (d as f64).sqrt(), &mut rng)),
                ),
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
            out.extend(b.attn.matrices().into_iter().map(slice));
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
            out.extend(b.attn.matrices_mut().into_iter().map(slice_mut));
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

    /// The sizes it was built with.
    pub fn config(&self) -> ModelConfig {
        self.config
    }

    /// Every parameter tensor's name and values, in [`Self::slices`] order:
    /// `"token embeddings"`, `"block 1 W_Q"`, `"block 2 FFN b₁"`,
    /// `"final LayerNorm γ"`, `"output head"`, …
    pub fn named_slices(&self) -> Vec<(String, &[f64])> {
        let mut names = vec!["token embeddings".to_string(), "position embeddings".into()];
        for l in 1..=self.blocks.len() {
            let per_block = [
                "LayerNorm 1 γ",
                "LayerNorm 1 β",
                "W_Q",
                "W_K",
                "W_V",
                "W_O",
                "LayerNorm 2 γ",
                "LayerNorm 2 β",
                "FFN W₁",
                "FFN b₁",
                "FFN W₂",
                "FFN b₂",
            ];
            names.extend(per_block.iter().map(|p| format!("block {l} {p}")));
        }
        names.extend(
            [
                "final LayerNorm γ",
                "final LayerNorm β",
                "output head",
                "output head bias",
            ]
            .map(String::from),
        );
        names.into_iter().zip(self.slices()).collect()
    }

    /// A model of the same shape with every parameter 0 (to hold gradients).
    pub fn zeros_like(&self) -> Self {
        zeroed(self)
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

#[cfg(test)]
mod tests;
