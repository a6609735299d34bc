//! Softmax, attention and multi-head attention: forward passes that keep
//! what the backward passes need, and the backward passes.

use ndarray::{s, Array1, Array2, ArrayRef2, Axis, Ix2, SliceInfo, SliceInfoElem};
use rayon::prelude::*;
use std::ops::AddAssign;

use crate::masking::{attend, Scores};
use crate::error::AttnError;
use crate::linalg::matmul;
use crate::fast::{fused_backward, fused_causal, FastForward};
use crate::masking::causal_mask;
use crate::position::{rotate, Rotation};
use crate::projection::project;
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
    let dv = matmul(&p.t(), d_out); // m×d_v
    let dp = matmul(d_out, &v.t()); // n×m
    let ds = softmax_backward(p, &dp) / cache.sqrt_d_k; // n×m, through S = (Q/√d_k)Kᵀ
    let dq = matmul(&ds, k); // n×d_k
    let dk = matmul(&ds.t(), q); // m×d_k
    (dq, dk, dv)
}
// ANCHOR_END: attention_backward

/// The projections `W_Q, W_K, W_V, W_O` of a multi-head attention layer,
/// each `d×d`, the heads' columns side by side.
pub(crate) type Projections<F> = [Array2<F>; 4];

/// The biases `b_Q, b_K, b_V, b_O` (`d` each) of a layer that has them.
pub(crate) type Biases<F> = [Array1<F>; 4];

// ANCHOR: mha_forward
/// `x W + b` (`b` if any), or an error naming `what` if the product
/// overflowed.
pub(crate) fn affine<F: Real>(
    what: &'static str,
    x: &ArrayRef2<F>,
    w: &ArrayRef2<F>,
    b: Option<&Array1<F>>,
) -> Result<Array2<F>, AttnError> {
    let y = project(what, x, w)?;
    Ok(match b {
        Some(b) => y + b,
        None => y,
    })
}

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
    /// Key/value heads `h_kv`, a divisor of `heads`: query head `i` reads
    /// the keys and values of head `i / (heads/h_kv)`, and `W_K`, `W_V` are
    /// `d × h_kv·d_k`. `h_kv = heads` is multi-head attention, `h_kv = 1`
    /// multi-query attention, anything between grouped-query attention.
    pub(crate) groups: usize,
    /// Whether queries and keys are rotated by their positions (RoPE,
    /// chapter 7) after their projections: row `i` of each sequence is at
    /// position `i`.
    pub(crate) rotary: bool,
    /// Whether a head whose mask is the causal mask may attend through
    /// the appendix's fused kernel (in `f32`, which has it), keeping its
    /// output and log-sum-exps instead of its weights.
    pub(crate) fused: bool,
}

impl Heads {
    /// Multi-head attention's sizes: every head with its own keys and
    /// values, no rotation.
    pub(crate) fn new(tq: usize, tk: usize, heads: usize) -> Self {
        Heads {
            tq,
            tk,
            heads,
            groups: heads,
            rotary: false,
            fused: false,
        }
    }
}

/// Multi-head attention of `x_q` (`B·tq × d`) over `x_kv` (`B·tk × d`),
/// each sequence `b` on its own rows with the mask `keep(b)` (`tq×tk`, or
/// `None` for no mask): `Q = X_q W_Q + b_Q`, `K = X_kv W_K + b_K`,
/// `V = X_kv W_V + b_V`, head `i` attends with its `d_k = d/heads` columns,
/// and `concat(heads) W_O + b_O` mixes them. Self-attention passes the same
/// rows as `x_q` and `x_kv`.
pub(crate) fn mha_forward<F: Real>(
    x_q: &ArrayRef2<F>,
    x_kv: &ArrayRef2<F>,
    (w, b): (&Projections<F>, Option<&Biases<F>>),
    sizes: Heads,
    keep: impl Fn(usize) -> Option<Array2<bool>> + Sync,
) -> Result<(Array2<F>, MhaCache<F>), AttnError> {
    let bias = |i: usize| b.map(|b| &b[i]);
    let q = affine("the queries X_q W_Q", x_q, &w[0], bias(0))?; // B·tq × d
    let k = affine("the keys X_kv W_K", x_kv, &w[1], bias(1))?; // B·tk × d
    let v = affine("the values X_kv W_V", x_kv, &w[2], bias(2))?; // B·tk × d
    mha_from_projections([q, k, v], (&w[3], bias(3)), sizes, keep)
}

/// [`mha_forward`] from the projections `[Q, K, V]`: each sequence and head
/// attends on its own rows and columns (a head's columns are a view: the
/// split of chapter 5 without a copy), and each head's output is written
/// into its columns of `O` (the merge), which `W_O` then mixes.
pub(crate) fn mha_from_projections<F: Real>(
    [mut q, mut k, v]: [Array2<F>; 3],
    (w_o, b_o): (&Array2<F>, Option<&Array1<F>>),
    sizes: Heads,
    keep: impl Fn(usize) -> Option<Array2<bool>> + Sync,
) -> Result<(Array2<F>, MhaCache<F>), AttnError> {
    let Heads { tq, tk, heads, .. } = sizes;
    let (d_k, d_v) = (q.ncols() / heads, v.ncols() / sizes.groups);
    if sizes.rotary {
        // RoPE (chapter 7): each head's queries and keys turned by their positions.
        rotate_heads(&mut q, tq, heads, Rotation::Forward);
        rotate_heads(&mut k, tk, sizes.groups, Rotation::Forward);
    }
    let sqrt_d_k = F::of(d_k as f64).sqrt();
    let rows = |b, h| head_slices(b, h, [d_k, d_v], sizes);
    let masks: Vec<_> = (0..q.nrows() / tq).map(keep).collect();
    // A sequence's heads take the fused kernel if asked and its mask is
    // the causal mask.
    let causal = (sizes.fused && tq == tk).then(|| causal_mask(tq, tk));
    let fused: Vec<bool> = masks
        .iter()
        .map(|m| causal.is_some() && m.as_ref() == causal.as_ref())
        .collect();
    // Every (sequence, head) attends on its own, so the pool's threads
    // share them out; `collect` keeps their order.
    let pairs: Vec<_> = (0..masks.len())
        .flat_map(|b| (0..heads).map(move |h| (b, h)))
        .collect();
    let outputs = pairs
        .par_iter()
        .map(|&(b, h)| {
            let [rq, rk, rv, _] = rows(b, h);
            let (q, k, v) = (q.slice(rq), k.slice(rk), v.slice(rv));
            if let Some(fused) = fused[b].then(|| fused_causal(&q, &k, &v)).flatten() {
                return fused.map(|(out, kept)| (out, HeadCache::Fused(kept)));
            }
            let (out, cache) = attention_forward(&q, &k, &v, masks[b].as_deref(), sqrt_d_k)?;
            Ok((out, HeadCache::Weights(cache)))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut o = Array2::zeros((q.nrows(), heads * d_v));
    let mut caches = Vec::new();
    for (&(b, h), (out, cache)) in pairs.iter().zip(outputs) {
        o.slice_mut(rows(b, h)[3]).assign(&out);
        caches.push(cache);
    }
    let out = affine("the output Concat(heads) W_O", &o, w_o, b_o)?;
    let biased = b_o.is_some();
    let heads = caches;
    Ok((
        out,
        MhaCache {
            q,
            k,
            v,
            heads,
            o,
            biased,
        },
    ))
}

// ANCHOR_END: mha_forward

// ANCHOR: mha_backward
/// What multi-head attention over a batch keeps for its backward pass: the
/// projections, each (sequence, head)'s weights, the heads' concatenated
/// output.
#[derive(Debug, Clone)]
pub(crate) struct MhaCache<F> {
    pub(crate) q: Array2<F>,
    pub(crate) k: Array2<F>,
    pub(crate) v: Array2<F>,
    /// One per (sequence, head), sequence-major: `b·heads + head`.
    pub(crate) heads: Vec<HeadCache<F>>,
    pub(crate) o: Array2<F>,
    /// Whether the projections added biases (so the backward pass returns
    /// their gradients).
    biased: bool,
}

/// What one head keeps for its backward pass.
#[derive(Debug, Clone)]
pub(crate) enum HeadCache<F> {
    /// Its weights, from chapter 2's attention.
    Weights(AttentionCache<F>),
    /// Its output and each query's log-sum-exp, from the fused kernel.
    Fused(FastForward),
}

impl<F: Real> HeadCache<F> {
    /// The head's weights, if it kept them (a fused head did not).
    pub(crate) fn weights(&self) -> Result<&Array2<F>, AttnError> {
        match self {
            HeadCache::Weights(cache) => Ok(&cache.p),
            HeadCache::Fused(_) => Err(AttnError::Mismatched {
                name: "attention weights",
                requirement: "are kept by a forward pass that computes them; \
                              one through the fused kernel keeps none",
            }),
        }
    }

    /// The gradients `[dQ, dK, dV]` of the head's attention, given `dO`.
    fn backward(&self, [q, k, v]: [&ArrayRef2<F>; 3], d_o: &ArrayRef2<F>) -> [Array2<F>; 3] {
        let computed_again;
        let weights = match self {
            HeadCache::Weights(cache) => cache,
            HeadCache::Fused(kept) => match fused_backward([q, k, v], kept, d_o) {
                Some(Ok(gradients)) => return gradients,
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
        let (dq, dk, dv) = attention_backward(q, k, v, weights, d_o);
        [dq, dk, dv]
    }
}

/// The weights of causal attention of `q` over `k`, `v`, computed again
/// (not a number where the scores overflow).
fn causal_weights<F: Real>([q, k, v]: [&ArrayRef2<F>; 3]) -> AttentionCache<F> {
    let (keep, sqrt_d_k) = (
        causal_mask(q.nrows(), k.nrows()),
        F::of(q.ncols() as f64).sqrt(),
    );
    match attention_forward(q, k, v, Some(&keep), sqrt_d_k) {
        Ok((_, cache)) => cache,
        Err(_) => AttentionCache {
            p: Array2::from_elem(keep.dim(), F::nan()),
            sqrt_d_k,
        },
    }
}

/// The gradients of [`mha_forward`]'s inputs and parameters.
pub(crate) struct MhaGradients<F> {
    /// `dX_q`; for self-attention the input's gradient is `dX_q + dX_kv`.
    pub(crate) dx_q: Array2<F>,
    /// `dX_kv`.
    pub(crate) dx_kv: Array2<F>,
    /// `[dW_Q, dW_K, dW_V, dW_O]`.
    pub(crate) dw: Projections<F>,
    /// `[db_Q, db_K, db_V, db_O]`, if the layer has biases.
    #[cfg_attr(
        not(test),
        expect(dead_code, reason = "no model trained in the book has biases yet")
    )]
    pub(crate) db: Option<Biases<F>>,
}

/// The backward pass of [`mha_forward`], given `dOut`.
pub(crate) fn mha_backward<F: Real>(
    cache: &MhaCache<F>,
    x_q: &ArrayRef2<F>,
    x_kv: &ArrayRef2<F>,
    w: &Projections<F>,
    sizes: Heads,
    d_out: &ArrayRef2<F>,
) -> MhaGradients<F> {
    let ([dq, dk, dv], dw_o) = mha_backward_to_projections(cache, &w[3], sizes, d_out);
    let db = cache.biased.then(|| {
        [&*dq, &*dk, &*dv, d_out].map(|g: &ArrayRef2<F>| g.sum_axis(Axis(0))) // Σ over rows
    });
    MhaGradients {
        dx_q: matmul(&dq, &w[0].t()),
        dx_kv: matmul(&dk, &w[1].t()) + matmul(&dv, &w[2].t()),
        dw: [
            matmul(&x_q.t(), &dq),
            matmul(&x_kv.t(), &dk),
            matmul(&x_kv.t(), &dv),
            dw_o,
        ],
        db,
    }
}

/// The backward pass of [`mha_from_projections`]: the gradients of the
/// projections `[dQ, dK, dV]` (before the rotations, if any) and `dW_O`.
pub(crate) fn mha_backward_to_projections<F: Real>(
    cache: &MhaCache<F>,
    w_o: &ArrayRef2<F>,
    sizes: Heads,
    d_out: &ArrayRef2<F>,
) -> ([Array2<F>; 3], Array2<F>) {
    let Heads { tq, tk, heads, .. } = sizes;
    let d_o = matmul(d_out, &w_o.t());
    let dw_o = matmul(&cache.o.t(), d_out);
    let (d_k, d_v) = (cache.q.ncols() / heads, cache.v.ncols() / sizes.groups);
    let rows = |b, h| head_slices(b, h, [d_k, d_v], sizes);
    // Each (sequence, head), `b·heads + h`, on its own, shared out as forward.
    let grads: Vec<_> = (0..cache.heads.len())
        .into_par_iter()
        .map(|i| {
            let [rq, rk, rv, ro] = rows(i / heads, i % heads);
            let (q, k, v) = (cache.q.slice(rq), cache.k.slice(rk), cache.v.slice(rv));
            cache.heads[i].backward([&q, &k, &v], &d_o.slice(ro))
        })
        .collect();
    let mut dq = Array2::zeros(cache.q.dim());
    let mut dk = Array2::zeros(cache.k.dim());
    let mut dv = Array2::zeros(cache.v.dim());
    // ANCHOR: group_gradients
    // The heads of a group share its keys and values: their gradients add.
    for (i, [g_q, g_k, g_v]) in grads.into_iter().enumerate() {
        let [rq, rk, rv, _] = rows(i / heads, i % heads);
        dq.slice_mut(rq).assign(&g_q);
        dk.slice_mut(rk).add_assign(&g_k);
        dv.slice_mut(rv).add_assign(&g_v);
    }
    // ANCHOR_END: group_gradients
    if sizes.rotary {
        // Back through the rotations: a rotation's transpose is its inverse.
        rotate_heads(&mut dq, tq, heads, Rotation::Back);
        rotate_heads(&mut dk, tk, sizes.groups, Rotation::Back);
    }
    ([dq, dk, dv], dw_o)
}
// ANCHOR_END: mha_backward

// ANCHOR: group_slices
/// Sequence `b`'s rows and head `h`'s columns: of the queries (`tq` rows a
/// sequence, `d_k` columns a head), of its group's keys and values (`tk`
/// rows; `d_k` and `d_v` columns), and of the heads' outputs (`d_v`).
fn head_slices(b: usize, h: usize, [d_k, d_v]: [usize; 2], sizes: Heads) -> [Slice2; 4] {
    let g = h / (sizes.heads / sizes.groups); // the group head h reads
    let (q_rows, kv_rows) = (
        b * sizes.tq..(b + 1) * sizes.tq,
        b * sizes.tk..(b + 1) * sizes.tk,
    );
    [
        s![q_rows.clone(), h * d_k..(h + 1) * d_k],
        s![kv_rows.clone(), g * d_k..(g + 1) * d_k],
        s![kv_rows, g * d_v..(g + 1) * d_v],
        s![q_rows, h * d_v..(h + 1) * d_v],
    ]
}
// ANCHOR_END: group_slices

/// A slice of a matrix's rows and columns.
type Slice2 = SliceInfo<[SliceInfoElem; 2], Ix2, Ix2>;

/// Rotates the rows of every sequence (`t` rows each) of `x`, head by head
/// (`d/heads` columns each), by their positions `0..t` within the sequence.
pub(super) fn rotate_heads<F: Real>(x: &mut Array2<F>, t: usize, heads: usize, way: Rotation) {
    let d_k = x.ncols() / heads;
    for b in 0..x.nrows() / t {
        for h in 0..heads {
            rotate(
                &mut x.slice_mut(s![b * t..(b + 1) * t, h * d_k..(h + 1) * d_k]),
                0,
                way,
            );
        }
    }
}

#[cfg(test)]
mod tests;
