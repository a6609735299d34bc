//! One head's attention in the training stack: the softmax's and
//! attention's backward passes (chapter 11), and the forward pass that
//! keeps what they need.

use ndarray::{Array2, ArrayRef2, Axis};

use crate::check::{check_finite, check_positive, check_shape};
use crate::error::AttnError;
use crate::linalg::matmul;
use crate::masking::{attend, Scores};
use crate::real::Real;

// ANCHOR: softmax_backward
/// The backward pass of a row-wise softmax: given `P = softmax(S)` and
/// `dP`, returns `dS`. Row by row, the Jacobian is `diag(p) − ppᵀ`
/// (chapter 3), so `ds = p ⊙ dp − p (pᵀdp) = p ⊙ (dp − pᵀdp)`, without ever
/// forming the `m×m` Jacobian. `P` and `dP` must have one shape.
pub fn softmax_backward<F: Real>(
    p: &ArrayRef2<F>,
    dp: &ArrayRef2<F>,
) -> Result<Array2<F>, AttnError> {
    check_shape("dP and the weights P", dp.dim(), p.dim())?;
    check_finite("dP", dp)?; // NaN in would be NaN out, silently
    let p_dot_dp = (p * dp).sum_axis(Axis(1)).insert_axis(Axis(1)); // n×1: pᵀdp per row
    Ok(p * &*(dp - &*p_dot_dp))
}
// ANCHOR_END: softmax_backward

// ANCHOR: attention_forward
/// What the attention forward pass keeps for the backward pass.
#[derive(Debug, Clone)]
pub struct AttentionCache<F> {
    /// The weights `P`, `n×m` (0 where masked).
    pub(crate) p: Array2<F>,
    /// What the scores were divided by, `√d_k` (or 1, unscaled).
    pub(crate) sqrt_d_k: F,
}

/// `O = softmax(QKᵀ/√d_k, masked) V`, chapter 2's computation
/// ([`crate::attention`]), in `f32` or `f64`; `keep` is `n×m` or `None`,
/// and `sqrt_d_k` what the scores are divided by (1 for unscaled scores).
/// Returns the output and what [`attention_backward`] needs.
pub fn attention_forward<F: Real>(
    q: &ArrayRef2<F>,
    k: &ArrayRef2<F>,
    v: &ArrayRef2<F>,
    keep: Option<&ArrayRef2<bool>>,
    sqrt_d_k: F,
) -> Result<(Array2<F>, AttentionCache<F>), AttnError> {
    check_qkv_shapes(q, k, v)?;
    check_positive("√d_k", sqrt_d_k.wide())?;
    let change = keep.map_or(Scores::Plain, Scores::Masked);
    let (p, o) = attend(q, k, v, sqrt_d_k, change)?;
    Ok((o, AttentionCache { p, sqrt_d_k }))
}
// ANCHOR_END: attention_forward

/// [`attention_forward`] with an additive `bias` on the scores (`n×m`,
/// finite or `−∞` for a dropped key): ALiBi's, in a language model that
/// uses it. The backward pass is [`attention_backward`]'s: a constant
/// added to the scores changes no derivative.
pub(crate) fn attention_forward_biased<F: Real>(
    q: &ArrayRef2<F>,
    k: &ArrayRef2<F>,
    v: &ArrayRef2<F>,
    bias: &ArrayRef2<F>,
    sqrt_d_k: F,
) -> Result<(Array2<F>, AttentionCache<F>), AttnError> {
    check_qkv_shapes(q, k, v)?;
    check_positive("√d_k", sqrt_d_k.wide())?;
    let (p, o) = attend(q, k, v, sqrt_d_k, Scores::Biased(bias))?;
    Ok((o, AttentionCache { p, sqrt_d_k }))
}

// ANCHOR: attention_backward

/// Gradients of attention with respect to `Q`, `K` and `V`, given `dO`.
/// Masked weights are 0, so their `dS` is 0 too: the mask needs no extra
/// code here.
pub fn attention_backward<F: Real>(
    q: &ArrayRef2<F>,
    k: &ArrayRef2<F>,
    v: &ArrayRef2<F>,
    cache: &AttentionCache<F>,
    d_out: &ArrayRef2<F>,
) -> Result<[Array2<F>; 3], AttnError> {
    check_backward(q, k, v, cache, d_out)?; // the shapes of the forward pass
    let p = &cache.p;
    let dv = matmul(&p.t(), d_out); // m×d_v
    let dp = matmul(d_out, &v.t()); // n×m
    let ds = softmax_backward(p, &dp)? / cache.sqrt_d_k; // n×m, through S = (Q/√d_k)Kᵀ
    let dq = matmul(&ds, k); // n×d_k
    let dk = matmul(&ds.t(), q); // m×d_k
    Ok([dq, dk, dv])
}
// ANCHOR_END: attention_backward

impl<F> AttentionCache<F> {
    /// The weights `P` the forward pass computed, `n×m`.
    pub fn weights(&self) -> &Array2<F> {
        &self.p
    }
}

/// Checks that `Q` (`n×d_k`), `K` (`m×d_k`) and `V` (`m×d_v`) fit.
fn check_qkv_shapes<F>(
    q: &ArrayRef2<F>,
    k: &ArrayRef2<F>,
    v: &ArrayRef2<F>,
) -> Result<(), AttnError> {
    if k.ncols() != q.ncols() {
        return Err(AttnError::KeyWidthMismatch { queries: q.dim(), keys: k.dim() });
    }
    if v.nrows() != k.nrows() {
        return Err(AttnError::KeyValueCountMismatch { keys: k.dim(), values: v.dim() });
    }
    Ok(())
}

/// Checks a backward pass's inputs against the forward pass's shapes:
/// `Q`, `K`, `V` as they were, the weights `n×m`, `dO` `n×d_v`.
fn check_backward<F>(
    q: &ArrayRef2<F>,
    k: &ArrayRef2<F>,
    v: &ArrayRef2<F>,
    cache: &AttentionCache<F>,
    d_out: &ArrayRef2<F>,
) -> Result<(), AttnError> {
    check_qkv_shapes(q, k, v)?;
    check_shape("the cache's weights and n×m", cache.p.dim(), (q.nrows(), k.nrows()))?;
    check_shape("dO and the output (n×d_v)", d_out.dim(), (q.nrows(), v.ncols()))
}
