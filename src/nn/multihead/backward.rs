//! The backward pass of multi-head attention (chapters 11 and 12): every
//! (sequence, head) pair's attention backward, then back through the
//! projections.

use ndarray::{Array2, ArrayRef2, Axis};
use rayon::prelude::*;
use std::ops::AddAssign;

use super::{
    head_slices, rotate_heads, AttentionBiases, AttentionWeights, HeadCache, Heads, MhaCache,
};
use crate::check::check_shape;
use crate::error::AttnError;
use crate::fast::fused_backward;
use crate::linalg::matmul;
use crate::masking::causal_mask;
use crate::nn::attention::{attention_backward, attention_forward, AttentionCache};
use crate::position::Rotation;
use crate::real::Real;

impl<F: Real> HeadCache<F> {
    /// The gradients `[dQ, dK, dV]` of the head's attention, given `dO`.
    fn backward(
        &self,
        [q, k, v]: [&ArrayRef2<F>; 3],
        d_o: &ArrayRef2<F>,
    ) -> Result<[Array2<F>; 3], AttnError> {
        let computed_again;
        let weights = match self {
            HeadCache::Weights(cache) => cache,
            HeadCache::Fused(kept) => match fused_backward([q, k, v], kept, d_o) {
                Some(Ok(gradients)) => return Ok(gradients),
                // The kernel refuses gradients that overflow: chapter 11's
                // backward pass computes them, not finite, from the
                // weights computed again, for the training's checks to
                // report as they would without the kernel.
                _ => {
                    computed_again = causal_weights([q, k, v]);
                    &computed_again
                }
            },
        };
        attention_backward(q, k, v, weights, d_o)
    }
}

/// The weights of causal attention of `q` over `k`, `v`, computed again
/// (not a number where the scores overflow).
fn causal_weights<F: Real>([q, k, v]: [&ArrayRef2<F>; 3]) -> AttentionCache<F> {
    let (keep, sqrt_d_k) = (causal_mask(q.nrows(), k.nrows()), F::of(q.ncols() as f64).sqrt());
    match attention_forward(q, k, v, Some(&keep), sqrt_d_k) {
        Ok((_, cache)) => cache,
        Err(_) => AttentionCache { p: Array2::from_elem(keep.dim(), F::nan()), sqrt_d_k },
    }
}

// ANCHOR: mha_backward
/// The gradients of [`mha_forward`](super::mha_forward)'s inputs and weights.
#[derive(Debug, Clone)]
pub struct MhaGradients<F> {
    /// `dX_q`; for self-attention the input's gradient is `dX_q + dX_kv`.
    pub dx_q: Array2<F>,
    /// `dX_kv`.
    pub dx_kv: Array2<F>,
    /// The weights' gradients, with the biases' if the layer has biases.
    pub dw: AttentionWeights<F>,
}

/// The backward pass of [`mha_forward`](super::mha_forward), given `dOut`: `cache` must be that
/// forward pass's, with the same inputs, weights and heads.
pub fn mha_backward<F: Real>(
    cache: &MhaCache<F>,
    x_q: &ArrayRef2<F>,
    x_kv: &ArrayRef2<F>,
    w: &AttentionWeights<F>,
    heads: Heads,
    d_out: &ArrayRef2<F>,
) -> Result<MhaGradients<F>, AttnError> {
    check_backward(cache, [x_q, x_kv], w, heads, d_out)?; // the forward pass's shapes
    let ([dq, dk, dv], dw_o) = mha_backward_to_projections(cache, &w.w_o, heads, d_out)?;
    let sum = |g: &ArrayRef2<F>| g.sum_axis(Axis(0)); // a bias's gradient: Σ over rows
    let biases = cache.biased.then(|| AttentionBiases::from([&*dq, &*dk, &*dv, d_out].map(sum)));
    Ok(MhaGradients {
        dx_q: matmul(&dq, &w.w_q.t()),
        dx_kv: matmul(&dk, &w.w_k.t()) + matmul(&dv, &w.w_v.t()),
        dw: AttentionWeights {
            w_q: matmul(&x_q.t(), &dq),
            w_k: matmul(&x_kv.t(), &dk),
            w_v: matmul(&x_kv.t(), &dv),
            w_o: dw_o,
            biases,
        },
    })
}

// ANCHOR_END: mha_backward

/// Checks [`mha_backward`]'s inputs against the shapes of the forward pass
/// `cache` came from: the same heads, inputs and weights, `dOut` the
/// output's shape.
fn check_backward<F>(
    cache: &MhaCache<F>,
    [x_q, x_kv]: [&ArrayRef2<F>; 2],
    w: &AttentionWeights<F>,
    heads: Heads,
    d_out: &ArrayRef2<F>,
) -> Result<(), AttnError> {
    heads.check([x_q, x_kv], w)?;
    check_shape("the cache's queries and X_q W_Q", cache.q.dim(), (x_q.nrows(), w.w_q.ncols()))?;
    check_shape("the cache's keys and X_kv W_K", cache.k.dim(), (x_kv.nrows(), w.w_k.ncols()))?;
    check_shape("dOut and the output", d_out.dim(), (x_q.nrows(), w.w_o.ncols()))
}

/// The backward pass of [`mha_from_projections`]: the gradients of the
/// projections `[dQ, dK, dV]` (before the rotations, if any) and `dW_O`.
pub(crate) fn mha_backward_to_projections<F: Real>(
    cache: &MhaCache<F>,
    w_o: &ArrayRef2<F>,
    heads: Heads,
    d_out: &ArrayRef2<F>,
) -> Result<([Array2<F>; 3], Array2<F>), AttnError> {
    let d_o = matmul(d_out, &w_o.t());
    let dw_o = matmul(&cache.o.t(), d_out);
    let (d_k, d_v) = (cache.q.ncols() / heads.h, cache.v.ncols() / heads.h_kv);
    let rows = |b, i| head_slices(b, i, [d_k, d_v], heads);
    // Each (sequence, head), `b·h + i`, on its own, shared out as forward.
    let grads: Vec<_> = (0..cache.heads.len())
        .into_par_iter()
        .map(|j| {
            let [rq, rk, rv, ro] = rows(j / heads.h, j % heads.h);
            let (q, k, v) = (cache.q.slice(rq), cache.k.slice(rk), cache.v.slice(rv));
            cache.heads[j].backward([&q, &k, &v], &d_o.slice(ro))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut dq = Array2::zeros(cache.q.dim());
    let mut dk = Array2::zeros(cache.k.dim());
    let mut dv = Array2::zeros(cache.v.dim());
    // ANCHOR: group_gradients
    // The heads of a group share its keys and values: their gradients add.
    for (j, [g_q, g_k, g_v]) in grads.into_iter().enumerate() {
        let [rq, rk, rv, _] = rows(j / heads.h, j % heads.h);
        dq.slice_mut(rq).assign(&g_q);
        dk.slice_mut(rk).add_assign(&g_k);
        dv.slice_mut(rv).add_assign(&g_v);
    }
    // ANCHOR_END: group_gradients
    if let Some(rope) = heads.rope {
        // Back through the rotations: a rotation's transpose is its inverse
        // (times YaRN's attention factor, if any, in both ways).
        rotate_heads(&mut dq, heads.n, heads.h, (Rotation::Back, rope))?;
        rotate_heads(&mut dk, heads.m, heads.h_kv, (Rotation::Back, rope))?;
    }
    Ok(([dq, dk, dv], dw_o))
}
