//! Pre-norm sub-layers, `x + F(LayerNorm(x))`, the pieces every block of
//! chapters 12 and 13 is made of: self-attention, cross-attention over an
//! encoder's output, and the FFN. Each returns `F(LayerNorm(x))` (the
//! caller adds the residual) with what its backward pass needs, and the
//! backward pass returns the gradient reaching `x` through `F` (the caller
//! adds the residual's own).

use ndarray::{Array2, ArrayRef2};

use super::latent::{latent_backward, latent_forward, LatentWeights};
use super::layers::{
    ffn_backward, ffn_forward, layer_norm_backward, layer_norm_forward, Activation, FfnCache,
    FfnWeights, LayerNormCache, NormWeights,
};
use super::multihead::{mha_backward, mha_forward, AttentionWeights, Heads, MhaCache};
use crate::error::AttnError;
use crate::real::Real;

/// What a sub-layer's backward pass returns: the gradient reaching its
/// input `x` (through `F`), and the gradients of its LayerNorm's weights
/// and of its own weights `W`, each in the weights' own type.
pub(crate) type SublayerGradients<F, W> = (Array2<F>, NormWeights<F>, W);

/// An attention sub-layer's gradients.
pub(crate) type AttentionGradients<F> = SublayerGradients<F, AttentionWeights<F>>;

/// What an attention sub-layer keeps: its LayerNorm, the normalised input
/// `a` and the attention's own cache.
pub(crate) struct AttentionSublayerCache<F> {
    ln: LayerNormCache<F>,
    a: Array2<F>,
    pub(crate) attention: MhaCache<F>,
}

// ANCHOR: attention_sublayer
/// `MultiHead(LayerNorm(x), memory)`: self-attention when `memory` is
/// `None`, cross-attention over `memory` (not normalised here) otherwise.
pub(crate) fn attention_sublayer<F: Real>(
    x: &ArrayRef2<F>,
    memory: Option<&ArrayRef2<F>>,
    (ln, w): (&NormWeights<F>, &AttentionWeights<F>),
    heads: Heads,
    keep: impl Fn(usize) -> Array2<bool> + Sync,
    eps: F,
) -> Result<(Array2<F>, AttentionSublayerCache<F>), AttnError> {
    let (a, ln_cache) = layer_norm_forward(x, &ln.gamma, &ln.beta, eps)?;
    let kv: &ArrayRef2<F> = memory.unwrap_or(&a); // the keys' and values' input
    let (out, attention) = mha_forward(&a, kv, w, heads, |b| Some(keep(b)))?;
    Ok((out, AttentionSublayerCache { ln: ln_cache, a, attention }))
}

// ANCHOR_END: attention_sublayer

/// The backward pass of [`attention_sublayer`]: its gradients, and
/// `dMemory`, the gradient reaching the memory. For self-attention, `a` is both the queries' and the keys' input,
/// so both gradients reach `x`, and `dMemory` is `None`.
pub(crate) fn attention_sublayer_backward<F: Real>(
    cache: &AttentionSublayerCache<F>,
    memory: Option<&ArrayRef2<F>>,
    (ln, w): (&NormWeights<F>, &AttentionWeights<F>),
    heads: Heads,
    dy: &ArrayRef2<F>,
) -> Result<(AttentionGradients<F>, Option<Array2<F>>), AttnError> {
    let kv: &ArrayRef2<F> = memory.unwrap_or(&cache.a);
    let g = mha_backward(&cache.attention, &cache.a, kv, w, heads, dy)?;
    let (da, d_memory) = match memory {
        None => (g.dx_q + g.dx_kv, None),
        Some(_) => (g.dx_q, Some(g.dx_kv)),
    };
    let (dx, d_ln) = layer_norm_backward(&cache.ln, &ln.gamma, &da)?;
    Ok(((dx, d_ln, g.dw), d_memory))
}

/// `LatentAttention(LayerNorm(x))`, causal self-attention over sequences of
/// `t` tokens ([`latent_forward`]).
pub(crate) fn latent_sublayer<F: Real>(
    x: &ArrayRef2<F>,
    (ln, w): (&NormWeights<F>, &LatentWeights<F>),
    t: usize,
    keep: impl Fn(usize) -> Array2<bool> + Sync,
    eps: F,
) -> Result<(Array2<F>, AttentionSublayerCache<F>), AttnError> {
    let (a, ln_cache) = layer_norm_forward(x, &ln.gamma, &ln.beta, eps)?;
    let (out, attention) = latent_forward(&a, w, t, |b| Some(keep(b)))?;
    Ok((out, AttentionSublayerCache { ln: ln_cache, a, attention }))
}

/// The backward pass of [`latent_sublayer`]: `(dX, [dγ, dβ], dW)`.
pub(crate) fn latent_sublayer_backward<F: Real>(
    cache: &AttentionSublayerCache<F>,
    (ln, w): (&NormWeights<F>, &LatentWeights<F>),
    t: usize,
    dy: &ArrayRef2<F>,
) -> Result<SublayerGradients<F, LatentWeights<F>>, AttnError> {
    let (da, dw) = latent_backward(&cache.attention, &cache.a, w, t, dy)?;
    let (dx, d_ln) = layer_norm_backward(&cache.ln, &ln.gamma, &da)?;
    Ok((dx, d_ln, dw))
}

/// What an FFN sub-layer keeps.
pub(crate) struct FfnSublayerCache<F> {
    ln: LayerNormCache<F>,
    ffn: FfnCache<F>,
}

/// `FFN(LayerNorm(x))`.
pub(crate) fn ffn_sublayer<F: Real>(
    x: &ArrayRef2<F>,
    (ln, p): (&NormWeights<F>, &FfnWeights<F>),
    activation: Activation,
    eps: F,
) -> Result<(Array2<F>, FfnSublayerCache<F>), AttnError> {
    let (c, ln_cache) = layer_norm_forward(x, &ln.gamma, &ln.beta, eps)?;
    let (f, ffn) = ffn_forward(&c, p, activation)?;
    Ok((f, FfnSublayerCache { ln: ln_cache, ffn }))
}

/// The backward pass of [`ffn_sublayer`]: `(dX, [dγ, dβ], the FFN's
/// gradients)`.
pub(crate) fn ffn_sublayer_backward<F: Real>(
    cache: &FfnSublayerCache<F>,
    (ln, p): (&NormWeights<F>, &FfnWeights<F>),
    activation: Activation,
    dy: &ArrayRef2<F>,
) -> Result<SublayerGradients<F, FfnWeights<F>>, AttnError> {
    let (dc, d_ffn) = ffn_backward(&cache.ffn, p, activation, dy)?;
    let (dx, d_ln) = layer_norm_backward(&cache.ln, &ln.gamma, &dc)?;
    Ok((dx, d_ln, d_ffn))
}
