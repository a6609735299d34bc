//! Multi-head attention over a padded batch, each sequence on its own rows
//! with its own mask, in `f64`, and its backward pass.

use ndarray::{s, Array2, ArrayRef2};

use crate::grad::{attention_backward, attention_forward, AttentionCache, Matrix};

/// What multi-head attention over a padded batch keeps for its backward
/// pass: the projections, each (sequence, head)'s weights, the heads'
/// concatenated output.
pub(crate) struct MhaCache {
    pub(crate) q: Matrix,
    pub(crate) k: Matrix,
    pub(crate) v: Matrix,
    pub(crate) heads: Vec<AttentionCache>,
    pub(crate) o: Matrix,
}

/// Multi-head attention of `x_q` (`B·tq × d`) over `x_kv` (`B·tk × d`), each
/// sequence `b` on its own rows with the mask `keep(b)` (`tq×tk`).
pub(crate) fn mha_forward(
    x_q: &ArrayRef2<f64>,
    x_kv: &ArrayRef2<f64>,
    w: &[Matrix; 4],
    (tq, tk, heads): (usize, usize, usize),
    keep: impl Fn(usize) -> Array2<bool>,
) -> (Matrix, MhaCache) {
    let (q, k, v) = (x_q.dot(&w[0]), x_kv.dot(&w[1]), x_kv.dot(&w[2]));
    let d_k = q.ncols() / heads;
    let mut o = Matrix::zeros(q.dim());
    let mut caches = Vec::new();
    for b in 0..x_q.nrows() / tq {
        let mask = keep(b);
        for h in 0..heads {
            let cols = h * d_k..(h + 1) * d_k;
            let (rq, rk) = (
                s![b * tq..(b + 1) * tq, cols.clone()],
                s![b * tk..(b + 1) * tk, cols],
            );
            let (out, cache) = attention_forward(
                &q.slice(rq),
                &k.slice(rk),
                &v.slice(rk),
                Some(&mask),
                1.0 / (d_k as f64).sqrt(),
            );
            o.slice_mut(rq).assign(&out);
            caches.push(cache);
        }
    }
    let out = o.dot(&w[3]);
    (
        out,
        MhaCache {
            q,
            k,
            v,
            heads: caches,
            o,
        },
    )
}

/// The backward pass of [`mha_forward`]: `(dX_q, dX_kv, [dW_Q, dW_K, dW_V, dW_O])`.
pub(crate) fn mha_backward(
    cache: &MhaCache,
    x_q: &ArrayRef2<f64>,
    x_kv: &ArrayRef2<f64>,
    w: &[Matrix; 4],
    (tq, tk, heads): (usize, usize, usize),
    d_out: &ArrayRef2<f64>,
) -> (Matrix, Matrix, [Matrix; 4]) {
    let d_o = d_out.dot(&w[3].t());
    let dw_o = cache.o.t().dot(d_out);
    let d_k = cache.q.ncols() / heads;
    let (mut dq, mut dk, mut dv) = (
        Matrix::zeros(cache.q.dim()),
        Matrix::zeros(cache.k.dim()),
        Matrix::zeros(cache.v.dim()),
    );
    for b in 0..x_q.nrows() / tq {
        for h in 0..heads {
            let cols = h * d_k..(h + 1) * d_k;
            let (rq, rk) = (
                s![b * tq..(b + 1) * tq, cols.clone()],
                s![b * tk..(b + 1) * tk, cols],
            );
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
