//! Softmax, attention and multi-head attention: forward passes that keep
//! what the backward passes need, and the backward passes.

use ndarray::{s, Array2, ArrayRef2, Axis};

use crate::attention::{attend, Scores};
use crate::error::AttnError;
use crate::real::Real;

// ANCHOR: softmax_backward
/// The backward pass of a row-wise softmax: given `P = softmax(S)` and
/// `dP`, returns `dS`. Row by row, the Jacobian is `diag(p) − ppᵀ`
/// (chapter 3), so `ds = p ⊙ dp − p (pᵀdp) = p ⊙ (dp − pᵀdp)`, without ever
/// forming the `m×m` Jacobian.
pub(crate) fn softmax_backward<F: Real>(p: &ArrayRef2<F>, dp: &ArrayRef2<F>) -> Array2<F> {
    let p_dot_dp = (p * dp).sum_axis(Axis(1)).insert_axis(Axis(1)); // n×1: pᵀdp per row
    p * &*(dp - &*p_dot_dp)
}
// ANCHOR_END: softmax_backward

// ANCHOR: attention_backward
/// What the attention forward pass keeps for the backward pass.
#[derive(Debug, Clone)]
pub(crate) struct AttentionCache<F> {
    /// The weights `P`, `n×m` (0 where masked).
    pub(crate) p: Array2<F>,
    /// What the scores were divided by, `√d_k` (or 1, unscaled).
    pub(crate) sqrt_d_k: F,
}

/// `O = softmax(QKᵀ/√d_k, masked) V`, chapter 2's computation
/// ([`crate::attention`]); `keep` is `n×m` or `None`.
pub(crate) fn attention_forward<F: Real>(
    q: &ArrayRef2<F>,
    k: &ArrayRef2<F>,
    v: &ArrayRef2<F>,
    keep: Option<&ArrayRef2<bool>>,
    sqrt_d_k: F,
) -> Result<(Array2<F>, AttentionCache<F>), AttnError> {
    let change = keep.map_or(Scores::Plain, Scores::Masked);
    let (p, o) = attend(q, k, v, sqrt_d_k, change)?;
    Ok((o, AttentionCache { p, sqrt_d_k }))
}

/// Gradients of attention with respect to `Q`, `K` and `V`, given `dO`.
/// Masked weights are 0, so their `dS` is 0 too: the mask needs no extra
/// code here.
pub(crate) fn attention_backward<F: Real>(
    q: &ArrayRef2<F>,
    k: &ArrayRef2<F>,
    v: &ArrayRef2<F>,
    cache: &AttentionCache<F>,
    d_out: &ArrayRef2<F>,
) -> (Array2<F>, Array2<F>, Array2<F>) {
    let p = &cache.p;
    let dv = p.t().dot(d_out); // m×d_v
    let dp = d_out.dot(&v.t()); // n×m
    let ds = softmax_backward(p, &dp) / cache.sqrt_d_k; // n×m, through S = (Q/√d_k)Kᵀ
    let dq = ds.dot(k); // n×d_k
    let dk = ds.t().dot(q); // m×d_k
    (dq, dk, dv)
}
// ANCHOR_END: attention_backward

// ANCHOR: multi_head
/// The projections `W_Q, W_K, W_V, W_O` of a multi-head attention layer,
/// each `d×d`, the heads' columns side by side.
pub(crate) type Projections<F> = [Array2<F>; 4];

/// The sizes of multi-head attention over a batch of `B` sequences: `tq`
/// query rows and `tk` key rows per sequence, `heads` heads.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Heads {
    /// Query rows per sequence.
    pub(crate) tq: usize,
    /// Key (and value) rows per sequence.
    pub(crate) tk: usize,
    /// Heads.
    pub(crate) heads: usize,
}

/// What multi-head attention over a batch keeps for its backward pass: the
/// projections, each (sequence, head)'s weights, the heads' concatenated
/// output.
#[derive(Debug, Clone)]
pub(crate) struct MhaCache<F> {
    pub(crate) q: Array2<F>,
    pub(crate) k: Array2<F>,
    pub(crate) v: Array2<F>,
    /// One per (sequence, head), sequence-major: `b·heads + head`.
    pub(crate) heads: Vec<AttentionCache<F>>,
    pub(crate) o: Array2<F>,
}

/// Multi-head attention of `x_q` (`B·tq × d`) over `x_kv` (`B·tk × d`),
/// each sequence `b` on its own rows with the mask `keep(b)` (`tq×tk`):
/// `Q = X_q W_Q`, `K = X_kv W_K`, `V = X_kv W_V`, head `i` attends with its
/// `d_k = d/heads` columns, and `concat(heads) W_O` mixes them. Self-attention
/// passes the same rows as `x_q` and `x_kv`.
pub(crate) fn mha_forward<F: Real>(
    x_q: &ArrayRef2<F>,
    x_kv: &ArrayRef2<F>,
    w: &Projections<F>,
    Heads { tq, tk, heads }: Heads,
    keep: impl Fn(usize) -> Array2<bool>,
) -> Result<(Array2<F>, MhaCache<F>), AttnError> {
    let (q, k, v) = (x_q.dot(&w[0]), x_kv.dot(&w[1]), x_kv.dot(&w[2]));
    let d_k = q.ncols() / heads;
    let sqrt_d_k = F::of(d_k as f64).sqrt();
    let mut o = Array2::zeros(q.dim());
    let mut caches = Vec::new();
    for b in 0..x_q.nrows() / tq {
        let mask = keep(b);
        for h in 0..heads {
            let cols = h * d_k..(h + 1) * d_k;
            let rq = s![b * tq..(b + 1) * tq, cols.clone()];
            let rk = s![b * tk..(b + 1) * tk, cols];
            let (out, cache) = attention_forward(
                &q.slice(rq),
                &k.slice(rk),
                &v.slice(rk),
                Some(&mask),
                sqrt_d_k,
            )?;
            o.slice_mut(rq).assign(&out);
            caches.push(cache);
        }
    }
    let out = o.dot(&w[3]);
    let heads = caches;
    Ok((out, MhaCache { q, k, v, heads, o }))
}

/// The backward pass of [`mha_forward`]:
/// `(dX_q, dX_kv, [dW_Q, dW_K, dW_V, dW_O])`. For self-attention the input's
/// gradient is `dX_q + dX_kv`.
pub(crate) fn mha_backward<F: Real>(
    cache: &MhaCache<F>,
    x_q: &ArrayRef2<F>,
    x_kv: &ArrayRef2<F>,
    w: &Projections<F>,
    Heads { tq, tk, heads }: Heads,
    d_out: &ArrayRef2<F>,
) -> (Array2<F>, Array2<F>, Projections<F>) {
    let d_o = d_out.dot(&w[3].t());
    let dw_o = cache.o.t().dot(d_out);
    let d_k = cache.q.ncols() / heads;
    let mut dq = Array2::zeros(cache.q.dim());
    let mut dk = Array2::zeros(cache.k.dim());
    let mut dv = Array2::zeros(cache.v.dim());
    for b in 0..x_q.nrows() / tq {
        for h in 0..heads {
            let cols = h * d_k..(h + 1) * d_k;
            let rq = s![b * tq..(b + 1) * tq, cols.clone()];
            let rk = s![b * tk..(b + 1) * tk, cols];
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
// ANCHOR_END: multi_head
