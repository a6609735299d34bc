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
//! The model is [`crate::decoder::Decoder`] in `f64`, by chapter 12's
//! recipe ([`ModelConfig`] says which): everything deterministic, one seed
//! giving the same weights on every machine that rounds `f64` the same way.

mod decode;
mod gradcheck;
mod task;
mod train;
mod weights;

use crate::check::check_model_sizes;
use crate::decoder::{Decoder, DecoderConfig, DecoderForward, Positions, Recipe};
use crate::error::AttnError;
use crate::nn::Activation;

pub use decode::most_probable;
pub use decode::{accuracy, greedy_decode};
pub use gradcheck::{check_gradients, small_problem, Problem};
pub use task::check_examples;
pub use task::{held_out, inputs_and_targets, reversal_example, InputsAndTargets, Task};
pub use train::{schedule, train, train_with, TrainConfig, BOOK_MODEL, BOOK_TRAINING, HELD_OUT};

/// The separator between the digits and their reversal.
pub const SEP: usize = 10;
/// Tokens: the digits 0–9 and the separator.
pub const VOCAB: usize = 11;
pub use crate::check::MAX_PARAMETERS;

/// The tiny Transformer: a decoder in `f64`.
pub type TinyTransformer = Decoder<f64>;

/// What its forward pass returns.
pub type Forward = DecoderForward<f64>;

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

/// The decoder such a model is: learned positions, GELU, and chapter 12's
/// recipe (biases, a head of its own, weights `N(0, 1/fan-in)`).
impl From<ModelConfig> for DecoderConfig {
    fn from(c: ModelConfig) -> DecoderConfig {
        DecoderConfig {
            vocab: VOCAB,
            context: c.context(),
            d_model: c.d_model,
            heads: c.heads,
            kv_heads: c.heads,
            layers: c.layers,
            d_ff: c.d_ff,
            positions: Positions::Learned,
            latent: None,
            activation: Activation::Gelu,
            recipe: Recipe::WithBiases,
        }
    }
}

impl ModelConfig {
    /// Checks that every size is at least 1, that the heads split
    /// `d_model` evenly and that the model fits in memory.
    pub fn check(&self) -> Result<(), AttnError> {
        let sizes = [
            ("k", self.k),
            ("d_model", self.d_model),
            ("heads", self.heads),
            ("d_ff", self.d_ff),
            ("layers", self.layers),
        ];
        check_model_sizes(&sizes, (self.d_model, self.heads))?;
        DecoderConfig::from(*self).check()
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
        DecoderConfig::from(*self).parameter_count()
    }

    /// The task's configuration of `model`, if it is a digit reverser's
    /// (a decoder of [`Self`]'s making); an error otherwise.
    pub fn of(model: &TinyTransformer) -> Result<ModelConfig, AttnError> {
        let c = model.config();
        let task = ModelConfig {
            k: c.context / 2,
            d_model: c.d_model,
            heads: c.heads,
            d_ff: c.d_ff,
            layers: c.layers,
        };
        if DecoderConfig::from(task) != c {
            return Err(AttnError::Mismatched {
                name: "model",
                requirement: "must be a digit reverser, made from a ModelConfig",
            });
        }
        Ok(task)
    }
}

#[cfg(test)]
mod tests;
