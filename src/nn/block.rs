//! A pre-norm decoder block, `x + Attention(LayerNorm(x))` then
//! `x + FFN(LayerNorm(x))`: its parameters, its forward pass and its
//! backward pass, once for every decoder-only model of the book (chapter
//! 12's digit reverser, chapter 15's language model).

use ndarray::{Array2, ArrayRef2};

use super::attention::{Heads, Projections};
use super::latent::LatentWeights;
use super::layers::{Activation, FfnParams};
use super::sublayer::{
    attention_sublayer, attention_sublayer_backward, ffn_sublayer, ffn_sublayer_backward,
    latent_sublayer, latent_sublayer_backward, AttentionSublayerCache, FfnSublayerCache, Norm,
};
use crate::error::AttnError;
use crate::real::Real;

/// One pre-norm block's parameters (and, with the same shapes, their
/// gradients).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PreNormBlock<F> {
    /// LayerNorm before attention: `[γ, β]`.
    pub(crate) ln1: Norm<F>,
    /// The attention's weights.
    pub(crate) attn: BlockAttention<F>,
    /// LayerNorm before the FFN.
    pub(crate) ln2: Norm<F>,
    /// The FFN.
    pub(crate) ffn: FfnParams<F>,
}

/// A block's attention: multi-head (or grouped-query) attention's
/// projections `W_Q, W_K, W_V, W_O`, heads side by side, or latent
/// attention's weights.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum BlockAttention<F> {
    /// `W_Q` and `W_O` `d×d`, `W_K` and `W_V` `d × h_kv·d_k`.
    Heads(Projections<F>),
    /// Chapter 16's multi-head latent attention.
    Latent(LatentWeights<F>),
}

impl<F> BlockAttention<F> {
    /// Every matrix, in the order a weights file lists them.
    pub(crate) fn matrices(&self) -> Vec<&Array2<F>> {
        match self {
            BlockAttention::Heads(w) => w.iter().collect(),
            BlockAttention::Latent(w) => w.matrices().into(),
        }
    }

    /// [`Self::matrices`], mutable.
    pub(crate) fn matrices_mut(&mut self) -> Vec<&mut Array2<F>> {
        match self {
            BlockAttention::Heads(w) => w.iter_mut().collect(),
            BlockAttention::Latent(w) => w.matrices_mut().into(),
        }
    }

    /// `W_O`, `h·d_v × d`: head `i`'s output meets rows `i·d_v..(i+1)·d_v`.
    pub(crate) fn w_o_mut(&mut self) -> &mut Array2<F> {
        match self {
            BlockAttention::Heads(w) => &mut w[3],
            BlockAttention::Latent(w) => &mut w.w_o,
        }
    }
}

/// What one block's forward pass keeps for its backward pass.
pub(crate) struct BlockCache<F> {
    pub(crate) attention: AttentionSublayerCache<F>,
    ffn: FfnSublayerCache<F>,
}

// ANCHOR: block
impl<F: Real> PreNormBlock<F> {
    /// The block's forward pass over `x` (`B·T × d`), each sequence `b`
    /// attending under the mask `keep(b)`.
    pub(crate) fn forward(
        &self,
        x: &ArrayRef2<F>,
        heads: Heads,
        keep: impl Fn(usize) -> Array2<bool> + Sync,
        activation: Activation,
        eps: F,
    ) -> Result<(Array2<F>, BlockCache<F>), AttnError> {
        // x₁ = x + MultiHead(LayerNorm(x)), each sequence alone.
        let (att, attention) = match &self.attn {
            BlockAttention::Heads(w) => {
                attention_sublayer(x, None, (&self.ln1, w), heads, keep, eps)?
            }
            BlockAttention::Latent(w) => latent_sublayer(x, (&self.ln1, w), heads.tq, keep, eps)?,
        };
        let x1 = att + x;
        // x₂ = x₁ + FFN(LayerNorm(x₁)).
        let (f, ffn) = ffn_sublayer(&x1, (&self.ln2, &self.ffn), activation, eps);
        Ok((x1 + &f, BlockCache { attention, ffn }))
    }

    /// The backward pass: given `dL/dx₂`, the gradient reaching `x` and
    /// the block's parameters' gradients. Each residual passes its
    /// gradient through unchanged, and adds the sub-layer's.
    pub(crate) fn backward(
        &self,
        cache: &BlockCache<F>,
        heads: Heads,
        activation: Activation,
        dx2: &ArrayRef2<F>,
    ) -> (Array2<F>, PreNormBlock<F>) {
        let sublayer = (&self.ln2, &self.ffn);
        let (dx_ffn, ln2, ffn) = ffn_sublayer_backward(&cache.ffn, sublayer, activation, dx2);
        let dx1 = dx_ffn + dx2;
        let (dx_att, ln1, attn) = match &self.attn {
            BlockAttention::Heads(w) => {
                let sublayer = (&self.ln1, w);
                let (dx, _, ln1, dw) =
                    attention_sublayer_backward(&cache.attention, None, sublayer, heads, &dx1);
                (dx, ln1, BlockAttention::Heads(dw))
            }
            BlockAttention::Latent(w) => {
                let sublayer = (&self.ln1, w);
                let (dx, ln1, dw) =
                    latent_sublayer_backward(&cache.attention, sublayer, heads.tq, &dx1);
                (dx, ln1, BlockAttention::Latent(dw))
            }
        };
        (
            dx1 + &dx_att,
            PreNormBlock {
                ln1,
                attn,
                ln2,
                ffn,
            },
        )
    }
}
// ANCHOR_END: block

/// Removes the heads `removed`, each `(block, head)` counted from 1, from
/// `blocks` of `heads` heads each: a head's output is dropped before `W_O`
/// by zeroing the rows of `W_O` that multiply it, as chapter 14 removes a
/// head of a pretrained model. An error names a block or head that does
/// not exist.
pub(crate) fn remove_heads<F: Real>(
    blocks: &mut [PreNormBlock<F>],
    heads: usize,
    removed: &[(usize, usize)],
) -> Result<(), AttnError> {
    for &(block, head) in removed {
        for (name, value, count) in [("block", block, blocks.len()), ("head", head, heads)] {
            if !(1..=count).contains(&value) {
                return Err(AttnError::OutOfRange {
                    name,
                    value,
                    requirement: "to remove must exist: counted from 1, at most the model's \
                                  number",
                    limit: count,
                });
            }
        }
        let w_o = blocks[block - 1].attn.w_o_mut();
        let d_k = w_o.nrows() / heads;
        w_o.rows_mut()
            .into_iter()
            .skip((head - 1) * d_k)
            .take(d_k)
            .for_each(|mut row| row.fill(F::zero()));
    }
    Ok(())
}
