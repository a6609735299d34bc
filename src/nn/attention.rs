//! One head's attention in the training stack: the softmax's and
//! attention's backward passes (chapter 11), and the forward pass that
//! keeps what they need.

use ndarray::{Array2, ArrayRef2, Axis};

use crate::error::AttnError;
use crate::linalg::matmul;
use crate::masking::{attend, Scores};
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
