//! The decoder-only Transformer (GPT), once for the whole book: chapter
//! 12's digit reverser and chapter 16's language model are two
//! configurations of [`Decoder`].
//!
//! | step | shape (`B` sequences of `T` tokens, width `d`, `V` tokens) |
//! | --- | --- |
//! | token (+ position) embeddings | `BT×d` |
//! | `L` pre-norm blocks: causal multi-head attention, FFN | `BT×d` |
//! | final LayerNorm, then the output head | `BT×V` |
//!
//! Generic over the float type ([`crate::real::Real`]): the models train
//! in `f32` or `f64`, and their gradients are checked in `f64`.

mod config;
mod forward;
mod init;

use ndarray::Array2;

use crate::linalg::LinearWeights;
use crate::nn::{flat, flat_mut, NormWeights, Parameters, PreNormBlock};
use crate::real::Real;

pub use config::{DecoderConfig, LatentSizes, Positions, Recipe};
pub use forward::EPS;
pub use forward::{AttentionPath, DecoderForward};
pub use init::GPT2_STD;

// ANCHOR: model
/// A decoder-only Transformer that predicts the next token: token
/// embeddings (and, with learned positions, position embeddings), pre-norm
/// blocks of causal multi-head attention and a feed-forward network, a
/// final LayerNorm, and an output head. The fields are private: every
/// tensor's shape follows from `config`, and only the constructors, the
/// weights files and the optimiser write them.
#[derive(Debug, Clone, PartialEq)]
pub struct Decoder<F: Real = f32> {
    pub(crate) config: DecoderConfig,
    /// Token embeddings `E`, `V×d`.
    pub(crate) tokens: Array2<F>,
    /// Learned position embeddings, `context×d` (`0×d` with rotary positions).
    pub(crate) positions: Array2<F>,
    pub(crate) blocks: Vec<PreNormBlock<F>>,
    /// The final LayerNorm.
    pub(crate) ln_f: NormWeights<F>,
    /// The output head `W`, `d×V`, and its bias: `None` when the head is the
    /// token embedding itself (tied), and the logits are `z Eᵀ`.
    pub(crate) head: Option<LinearWeights<F>>,
}
// ANCHOR_END: model

impl<F: Real> Decoder<F> {
    /// The sizes it was built with.
    pub fn config(&self) -> DecoderConfig {
        self.config
    }

    /// A model of the same shape with every parameter 0 (to hold gradients).
    pub fn zeros_like(&self) -> Self {
        crate::nn::zeroed(self)
    }

    /// For each tensor of [`Parameters::slices`], whether it is a matrix
    /// (the embeddings and the weights of products), which AdamW decays,
    /// rather than a LayerNorm's scale or shift or a bias, which it does not.
    pub fn matrices(&self) -> Vec<bool> {
        crate::nn::matrices_of(self)
    }

    /// The same model without the heads `removed`, each `(block, head)`
    /// counted from 1: a head's output is dropped before `W_O` by zeroing
    /// the rows of `W_O` that multiply it, as chapter 15 removes a head of a
    /// pretrained model. An error names a block or head that does not exist.
    pub fn without_heads(&self, removed: &[(usize, usize)]) -> Result<Self, crate::AttnError> {
        let mut model = self.clone();
        crate::nn::remove_heads(&mut model.blocks, self.config.heads, removed)?;
        Ok(model)
    }

    /// Every parameter tensor, named, in a fixed order (chapter 16's
    /// recipe holds its shifts and biases at 0, outside the parameters).
    fn tensors(&self) -> Vec<(String, &[F])> {
        let biases = self.config.recipe == Recipe::WithBiases;
        let mut out = vec![("tokens".to_string(), flat(&self.tokens))];
        if self.config.positions == Positions::Learned {
            out.push(("positions".into(), flat(&self.positions)));
        }
        for (l, b) in self.blocks.iter().enumerate() {
            let named = b.tensors(biases).into_iter();
            out.extend(named.map(|(name, x)| (format!("blocks.{l}.{name}"), x)));
        }
        out.push(("ln_f.gamma".into(), flat(&self.ln_f.gamma)));
        if biases {
            out.push(("ln_f.beta".into(), flat(&self.ln_f.beta)));
        }
        if let Some(head) = &self.head {
            out.push(("head.w".into(), flat(&head.w)));
            out.push(("head.b".into(), flat(&head.b)));
        }
        out
    }
}

impl<F: Real> Parameters for Decoder<F> {
    type Real = F;

    fn slices(&self) -> Vec<&[F]> {
        self.tensors().into_iter().map(|(_, s)| s).collect()
    }

    fn slices_mut(&mut self) -> Vec<&mut [F]> {
        let biases = self.config.recipe == Recipe::WithBiases;
        let mut out = vec![flat_mut(&mut self.tokens)];
        if self.config.positions == Positions::Learned {
            out.push(flat_mut(&mut self.positions));
        }
        for b in &mut self.blocks {
            out.extend(b.tensors_mut(biases));
        }
        out.push(flat_mut(&mut self.ln_f.gamma));
        if biases {
            out.push(flat_mut(&mut self.ln_f.beta));
        }
        if let Some(head) = &mut self.head {
            out.push(flat_mut(&mut head.w));
            out.push(flat_mut(&mut head.b));
        }
        out
    }

    fn named_slices(&self) -> Vec<(String, &[F])> {
        self.tensors()
    }
}

#[cfg(test)]
mod tests;
