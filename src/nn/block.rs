//! A pre-norm block, `x + Attention(LayerNorm(x))` then
//! `x + FFN(LayerNorm(x))`: its parameters, its forward pass and its
//! backward pass, once for every trained Transformer of the book: chapter
//! 12's digit reverser and chapter 16's language model, and chapter 13's
//! encoder and decoder, whose blocks also attend to the encoder's output
//! (cross-attention, between the two).

use ndarray::{Array2, ArrayRef2};

use super::latent::LatentWeights;
use super::layers::{Activation, FfnWeights, NormWeights};
use super::multihead::{AttentionWeights, Heads};
use super::sublayer::{
    attention_sublayer, attention_sublayer_backward, ffn_sublayer, ffn_sublayer_backward,
    latent_sublayer, latent_sublayer_backward, AttentionSublayerCache, FfnSublayerCache,
    SublayerGradients,
};
use crate::error::AttnError;
use crate::real::Real;

/// One pre-norm block's parameters (and, with the same shapes, their
/// gradients).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PreNormBlock<F> {
    /// LayerNorm before attention.
    pub(crate) ln1: NormWeights<F>,
    /// The attention's weights.
    pub(crate) attn: BlockAttention<F>,
    /// An encoder–decoder's decoder block's cross-attention (chapter 13).
    pub(crate) cross: Option<CrossAttention<F>>,
    /// LayerNorm before the FFN.
    pub(crate) ln2: NormWeights<F>,
    /// The FFN.
    pub(crate) ffn: FfnWeights<F>,
}

/// Cross-attention over an encoder's output, `x + MultiHead(LayerNorm(x),
/// memory)`: its LayerNorm and its weights.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CrossAttention<F> {
    pub(crate) ln: NormWeights<F>,
    pub(crate) w: AttentionWeights<F>,
}

/// An encoder's output as a decoder block's cross-attention reads it:
/// `memory` (`B·m × d`), the heads' sizes over it, and each pair's mask.
pub(crate) struct Memory<'a, F, K> {
    pub(crate) x: &'a ArrayRef2<F>,
    pub(crate) heads: Heads,
    pub(crate) keep: K,
}

/// A block's attention: multi-head (or grouped-query) attention's
/// projections `W_Q, W_K, W_V, W_O`, heads side by side, or latent
/// attention's weights.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum BlockAttention<F> {
    /// `W_Q` and `W_O` `d×d`, `W_K` and `W_V` `d × h_kv·d_k`.
    Heads(AttentionWeights<F>),
    /// Chapter 17's multi-head latent attention.
    Latent(LatentWeights<F>),
}

impl<F> BlockAttention<F> {
    /// Every matrix, in the order a weights file lists them.
    pub(crate) fn matrices(&self) -> Vec<&Array2<F>> {
        match self {
            BlockAttention::Heads(w) => w.matrices().into(),
            BlockAttention::Latent(w) => w.matrices().into(),
        }
    }

    /// [`Self::matrices`], each with its name in a weights file.
    pub(crate) fn named_matrices(&self) -> Vec<(&'static str, &Array2<F>)> {
        let names: &[&'static str] = match self {
            BlockAttention::Heads(_) => &["w_q", "w_k", "w_v", "w_o"],
            BlockAttention::Latent(_) => &LatentWeights::<F>::NAMES,
        };
        names.iter().copied().zip(self.matrices()).collect()
    }

    /// [`Self::matrices`], mutable.
    pub(crate) fn matrices_mut(&mut self) -> Vec<&mut Array2<F>> {
        match self {
            BlockAttention::Heads(w) => w.matrices_mut().into(),
            BlockAttention::Latent(w) => w.matrices_mut().into(),
        }
    }

    /// `W_O`, `h·d_v × d`: head `i`'s output meets rows `i·d_v..(i+1)·d_v`.
    pub(crate) fn w_o_mut(&mut self) -> &mut Array2<F> {
        match self {
            BlockAttention::Heads(w) => &mut w.w_o,
            BlockAttention::Latent(w) => &mut w.w_o,
        }
    }
}

/// What one block's forward pass keeps for its backward pass.
pub(crate) struct BlockCache<F> {
    pub(crate) attention: AttentionSublayerCache<F>,
    pub(crate) cross: Option<AttentionSublayerCache<F>>,
    ffn: FfnSublayerCache<F>,
}

impl<F: Real> PreNormBlock<F> {
    /// A block of width `d` with the attention `attn` and the FFN's
    /// matrices, its LayerNorms the identity and its biases 0.
    pub(crate) fn fresh(
        d: usize,
        attn: BlockAttention<F>,
        (w1, w2): (Array2<F>, Array2<F>),
    ) -> PreNormBlock<F> {
        let d_ff = w1.ncols();
        PreNormBlock {
            ln1: NormWeights::identity(d),
            attn,
            cross: None,
            ln2: NormWeights::identity(d),
            ffn: FfnWeights {
                w1,
                b1: ndarray::Array1::zeros(d_ff),
                w2,
                b2: ndarray::Array1::zeros(d),
            },
        }
    }
}

/// The weights a forward pass kept for head `head` of block `block` over
/// sequence `sequence` (named `what`: a sequence, an image) of the
/// `sequences` it read, from its blocks' caches; an error names an index
/// past the pass's count.
pub(crate) fn kept_weights<'a, F: Real>(
    blocks: &'a [BlockCache<F>],
    (what, sequences): (&'static str, usize),
    [block, sequence, head]: [usize; 3],
) -> Result<&'a Array2<F>, AttnError> {
    let heads = blocks.first().map_or(0, |b| b.attention.attention.heads.len()) / sequences.max(1);
    let counts =
        [("block", block, blocks.len()), (what, sequence, sequences), ("head", head, heads)];
    crate::check::check_indices(&counts, "must be less than the forward pass's number of them")?;
    blocks[block].attention.attention.heads[sequence * heads + head].weights()
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
        let (att, attention) = self.self_attention(x, heads, keep, eps)?;
        let x1 = att + x;
        // x₂ = x₁ + FFN(LayerNorm(x₁)).
        let (f, ffn) = ffn_sublayer(&x1, (&self.ln2, &self.ffn), activation, eps)?;
        let cross = None;
        Ok((x1 + &f, BlockCache { attention, cross, ffn }))
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
    ) -> Result<(Array2<F>, PreNormBlock<F>), AttnError> {
        let sublayer = (&self.ln2, &self.ffn);
        let (dx_ffn, ln2, ffn) = ffn_sublayer_backward(&cache.ffn, sublayer, activation, dx2)?;
        let dx1 = dx_ffn + dx2;
        let (dx, ln1, attn) = self.self_attention_backward(cache, heads, &dx1)?;
        let cross = None;
        let grads = PreNormBlock { ln1, attn, cross, ln2, ffn };
        Ok((dx1 + &dx, grads))
    }
}
// ANCHOR_END: block

impl<F: Real> PreNormBlock<F> {
    /// `MultiHead(LayerNorm(x))` (or latent attention), each sequence `b`
    /// under the mask `keep(b)`.
    fn self_attention(
        &self,
        x: &ArrayRef2<F>,
        heads: Heads,
        keep: impl Fn(usize) -> Array2<bool> + Sync,
        eps: F,
    ) -> Result<(Array2<F>, AttentionSublayerCache<F>), AttnError> {
        match &self.attn {
            BlockAttention::Heads(w) => {
                attention_sublayer(x, None, (&self.ln1, w), heads, keep, eps)
            }
            BlockAttention::Latent(w) => latent_sublayer(x, (&self.ln1, w), heads.n, keep, eps),
        }
    }

    /// The backward pass of [`Self::self_attention`], given `dL/dx₁`:
    /// `(dx, dLayerNorm, dAttention)`.
    fn self_attention_backward(
        &self,
        cache: &BlockCache<F>,
        heads: Heads,
        dx1: &ArrayRef2<F>,
    ) -> Result<SublayerGradients<F, BlockAttention<F>>, AttnError> {
        match &self.attn {
            BlockAttention::Heads(w) => {
                let sublayer = (&self.ln1, w);
                let ((dx, ln1, dw), _) =
                    attention_sublayer_backward(&cache.attention, None, sublayer, heads, dx1)?;
                Ok((dx, ln1, BlockAttention::Heads(dw)))
            }
            BlockAttention::Latent(w) => {
                let sublayer = (&self.ln1, w);
                let (dx, ln1, dw) =
                    latent_sublayer_backward(&cache.attention, sublayer, heads.n, dx1)?;
                Ok((dx, ln1, BlockAttention::Latent(dw)))
            }
        }
    }

    /// [`Self::forward`] for a decoder block with cross-attention (chapter
    /// 13): `x₁ = x + MultiHead(LayerNorm(x))`, then `x₂ = x₁ +
    /// MultiHead(LayerNorm(x₁), memory)`, then `x₂ + FFN(LayerNorm(x₂))`.
    pub(crate) fn forward_with_memory(
        &self,
        x: &ArrayRef2<F>,
        (heads, keep): (Heads, impl Fn(usize) -> Array2<bool> + Sync),
        memory: Memory<'_, F, impl Fn(usize) -> Array2<bool> + Sync>,
        activation: Activation,
        eps: F,
    ) -> Result<(Array2<F>, BlockCache<F>), AttnError> {
        let cross_weights = self.cross_weights()?;
        let (att, attention) = self.self_attention(x, heads, keep, eps)?;
        let x1 = att + x;
        let sublayer = (&cross_weights.ln, &cross_weights.w);
        let (c, cross) =
            attention_sublayer(&x1, Some(memory.x), sublayer, memory.heads, memory.keep, eps)?;
        let x2 = c + &x1;
        let (f, ffn) = ffn_sublayer(&x2, (&self.ln2, &self.ffn), activation, eps)?;
        let cross = Some(cross);
        Ok((x2 + &f, BlockCache { attention, cross, ffn }))
    }

    /// The backward pass of [`Self::forward_with_memory`]: the gradient
    /// reaching `x`, the parameters' gradients, and the gradient reaching
    /// the memory.
    pub(crate) fn backward_with_memory(
        &self,
        cache: &BlockCache<F>,
        heads: Heads,
        memory: (&ArrayRef2<F>, Heads),
        activation: Activation,
        dx3: &ArrayRef2<F>,
    ) -> Result<MemoryGradients<F>, AttnError> {
        let (cross_weights, cross_cache) = match (&self.cross, &cache.cross) {
            (Some(w), Some(c)) => (w, c),
            _ => return Err(no_cross_attention()),
        };
        let sublayer = (&self.ln2, &self.ffn);
        let (dx_ffn, ln2, ffn) = ffn_sublayer_backward(&cache.ffn, sublayer, activation, dx3)?;
        let dx2 = dx_ffn + dx3;
        let sublayer = (&cross_weights.ln, &cross_weights.w);
        let ((dx, ln, w), d_memory) =
            attention_sublayer_backward(cross_cache, Some(memory.0), sublayer, memory.1, &dx2)?;
        let dx1 = dx + &dx2;
        let (dx, ln1, attn) = self.self_attention_backward(cache, heads, &dx1)?;
        let cross = Some(CrossAttention { ln, w });
        let grads = PreNormBlock { ln1, attn, cross, ln2, ffn };
        let d_memory = d_memory.ok_or_else(no_cross_attention)?;
        Ok((dx1 + &dx, grads, d_memory))
    }

    /// The block's cross-attention, or an error if it has none.
    fn cross_weights(&self) -> Result<&CrossAttention<F>, AttnError> {
        self.cross.as_ref().ok_or_else(no_cross_attention)
    }

    /// Every tensor of the block, named, in the order a weights file lists
    /// them: with `biases`, the LayerNorms' shifts and the FFN's biases too.
    pub(crate) fn tensors(&self, biases: bool) -> Vec<(String, &[F])> {
        let mut out: Vec<(String, &[F])> = Vec::new();
        fn push<'a, F>(out: &mut Vec<(String, &'a [F])>, name: &str, x: &'a [F]) {
            out.push((name.to_string(), x));
        }
        push(&mut out, "ln1.gamma", flat(&self.ln1.gamma));
        if biases {
            push(&mut out, "ln1.beta", flat(&self.ln1.beta));
        }
        for (name, w) in self.attn.named_matrices() {
            push(&mut out, name, flat(w));
        }
        if let Some(c) = &self.cross {
            push(&mut out, "cross.ln.gamma", flat(&c.ln.gamma));
            if biases {
                push(&mut out, "cross.ln.beta", flat(&c.ln.beta));
            }
            for (name, w) in
                ["cross.w_q", "cross.w_k", "cross.w_v", "cross.w_o"].into_iter().zip(c.w.matrices())
            {
                push(&mut out, name, flat(w));
            }
        }
        push(&mut out, "ln2.gamma", flat(&self.ln2.gamma));
        if biases {
            push(&mut out, "ln2.beta", flat(&self.ln2.beta));
        }
        push(&mut out, "w1", flat(&self.ffn.w1));
        if biases {
            push(&mut out, "b1", flat(&self.ffn.b1));
        }
        push(&mut out, "w2", flat(&self.ffn.w2));
        if biases {
            push(&mut out, "b2", flat(&self.ffn.b2));
        }
        out
    }

    /// [`Self::tensors`]' values, mutable, in the same order.
    pub(crate) fn tensors_mut(&mut self, biases: bool) -> Vec<&mut [F]> {
        let mut out = vec![flat_mut(&mut self.ln1.gamma)];
        if biases {
            out.push(flat_mut(&mut self.ln1.beta));
        }
        out.extend(self.attn.matrices_mut().into_iter().map(|w| flat_mut(w)));
        if let Some(c) = &mut self.cross {
            out.push(flat_mut(&mut c.ln.gamma));
            if biases {
                out.push(flat_mut(&mut c.ln.beta));
            }
            out.extend(c.w.matrices_mut().into_iter().map(|w| flat_mut(w)));
        }
        out.push(flat_mut(&mut self.ln2.gamma));
        if biases {
            out.push(flat_mut(&mut self.ln2.beta));
        }
        out.push(flat_mut(&mut self.ffn.w1));
        if biases {
            out.push(flat_mut(&mut self.ffn.b1));
        }
        out.push(flat_mut(&mut self.ffn.w2));
        if biases {
            out.push(flat_mut(&mut self.ffn.b2));
        }
        out
    }
}

/// A parameter tensor as a flat slice.
pub(crate) fn flat<F>(a: &ndarray::ArrayRef<F, impl ndarray::Dimension>) -> &[F] {
    a.as_slice().expect("parameters are contiguous")
}

/// [`flat`], mutable.
pub(crate) fn flat_mut<F>(a: &mut ndarray::ArrayRef<F, impl ndarray::Dimension>) -> &mut [F] {
    a.as_slice_mut().expect("parameters are contiguous")
}

/// What [`PreNormBlock::backward_with_memory`] returns: the gradient
/// reaching the block's input, its parameters' gradients, and the gradient
/// reaching the memory.
pub(crate) type MemoryGradients<F> = (Array2<F>, PreNormBlock<F>, Array2<F>);

/// The error of a block without cross-attention asked to attend to a memory.
fn no_cross_attention() -> AttnError {
    AttnError::Mismatched {
        name: "block",
        requirement: "must have cross-attention to attend to an encoder's output",
    }
}

/// Removes the heads `removed`, each `(block, head)` counted from 1, from
/// `blocks` of `heads` heads each: a head's output is dropped before `W_O`
/// by zeroing the rows of `W_O` that multiply it, as chapter 15 removes a
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
