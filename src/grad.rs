//! Backward passes: for each operation of a Transformer, the forward pass
//! (keeping what the backward pass needs) and the backward pass, which maps
//! the gradient of the loss with respect to the output, `dY = ∂L/∂Y`, to
//! the gradients with respect to the inputs and parameters.
//!
//! Everything here is `f64`: the gradients are checked against central
//! finite differences, which need the extra precision, and chapter 12's tiny
//! model trains with them. The tests also check the `f64` forward passes
//! against the crate's `f32` ones.
//!
//! | operation | forward | backward |
//! | --- | --- | --- |
//! | softmax (rows) | `P = softmax(S)` | `dS = P ⊙ (dP − rowsum(dP ⊙ P))` |
//! | attention | `S = QKᵀ/√d_k`, `P = softmax(S)`, `O = PV` | `dV = PᵀdO`, `dP = dO Vᵀ`, `dQ = dS K/√d_k`, `dK = dSᵀQ/√d_k` |
//! | linear | `Y = XW + b` | `dX = dY Wᵀ`, `dW = XᵀdY`, `db = Σ_rows dY` |
//! | LayerNorm | `Y = x̂ γ + β`, `x̂ = (X − μ)/σ` | `dX = (dx̂ − mean(dx̂) − x̂ · mean(dx̂ ⊙ x̂)) / σ` |
//! | cross-entropy | `L = −mean log softmax(Z)[target]` | `dZ = (softmax(Z) − onehot) / count` |

use ndarray::{Array1, Array2, ArrayRef2, Axis};
use ndarray_rand::rand::rngs::StdRng;

use crate::error::AttnError;

/// A matrix of `f64`.
pub type Matrix = Array2<f64>;

// ANCHOR: softmax_backward
/// Row-wise stable softmax in `f64`; a row of all `−∞` gives zeros.
pub(crate) fn softmax(s: &ArrayRef2<f64>) -> Matrix {
    let mut p = s.to_owned();
    for mut row in p.rows_mut() {
        let max = row.fold(f64::NEG_INFINITY, |m, &x| m.max(x));
        if max == f64::NEG_INFINITY {
            row.fill(0.0);
            continue;
        }
        row.mapv_inplace(|x| (x - max).exp());
        let sum = row.sum();
        row.mapv_inplace(|e| e / sum);
    }
    p
}

/// The backward pass of a row-wise softmax: given `P = softmax(S)` and
/// `dP`, returns `dS`. Row by row, the Jacobian is `diag(p) − ppᵀ`
/// (chapter 3), so `ds = p ⊙ dp − p (pᵀdp) = p ⊙ (dp − pᵀdp)`, without ever
/// forming the `m×m` Jacobian.
pub(crate) fn softmax_backward(p: &ArrayRef2<f64>, dp: &ArrayRef2<f64>) -> Matrix {
    let p_dot_dp = (p * dp).sum_axis(Axis(1)).insert_axis(Axis(1)); // n×1: pᵀdp per row
    p * &*(dp - &*p_dot_dp)
}
// ANCHOR_END: softmax_backward

// ANCHOR: attention_backward
/// What the attention forward pass keeps for the backward pass.
#[derive(Debug, Clone)]
pub(crate) struct AttentionCache {
    /// The weights `P`, `n×m` (0 where masked).
    pub(crate) p: Matrix,
    /// The factor the scores were multiplied by, `1/√d_k` (or 1, unscaled).
    pub(crate) scale: f64,
}

/// `O = softmax(scale·QKᵀ, masked) V`; `keep` is `n×m` or `None`.
pub(crate) fn attention_forward(
    q: &ArrayRef2<f64>,
    k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
    keep: Option<&ArrayRef2<bool>>,
    scale: f64,
) -> (Matrix, AttentionCache) {
    let mut s = q.dot(&k.t()) * scale; // n×m
    if let Some(keep) = keep {
        s.zip_mut_with(keep, |s, &kept| {
            if !kept {
                *s = f64::NEG_INFINITY;
            }
        });
    }
    let p = softmax(&s);
    (p.dot(v), AttentionCache { p, scale })
}

/// Gradients of attention with respect to `Q`, `K` and `V`, given `dO`.
/// Masked weights are 0, so their `dS` is 0 too: the mask needs no extra
/// code here.
pub(crate) fn attention_backward(
    q: &ArrayRef2<f64>,
    k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
    cache: &AttentionCache,
    d_out: &ArrayRef2<f64>,
) -> (Matrix, Matrix, Matrix) {
    let p = &cache.p;
    let dv = p.t().dot(d_out); // m×d_v
    let dp = d_out.dot(&v.t()); // n×m
    let ds = softmax_backward(p, &dp) * cache.scale; // n×m, through S = scale·QKᵀ
    let dq = ds.dot(k); // n×d_k
    let dk = ds.t().dot(q); // m×d_k
    (dq, dk, dv)
}
// ANCHOR_END: attention_backward

// ANCHOR: linear_backward
/// `Y = XW + b`: `X` is `n×d_in`, `W` is `d_in×d_out`, `b` is `d_out`.
pub(crate) fn linear_forward(x: &ArrayRef2<f64>, w: &ArrayRef2<f64>, b: &Array1<f64>) -> Matrix {
    x.dot(w) + b
}

/// Gradients of `Y = XW + b`: `(dX, dW, db)`.
pub(crate) fn linear_backward(
    x: &ArrayRef2<f64>,
    w: &ArrayRef2<f64>,
    dy: &ArrayRef2<f64>,
) -> (Matrix, Matrix, Array1<f64>) {
    (dy.dot(&w.t()), x.t().dot(dy), dy.sum_axis(Axis(0)))
}
// ANCHOR_END: linear_backward

// ANCHOR: layer_norm_backward
/// What LayerNorm keeps for its backward pass.
#[derive(Debug, Clone)]
pub(crate) struct LayerNormCache {
    /// The normalised input `x̂ = (x − μ)/√(σ² + ε)`, `n×d`.
    pub(crate) x_hat: Matrix,
    /// `1/√(σ² + ε)` per row.
    pub(crate) inv_std: Array1<f64>,
}

/// LayerNorm over each row, as in chapter 10 (`ε` inside the square root).
pub(crate) fn layer_norm_forward(
    x: &ArrayRef2<f64>,
    gamma: &Array1<f64>,
    beta: &Array1<f64>,
    eps: f64,
) -> (Matrix, LayerNormCache) {
    let mean = x.mean_axis(Axis(1)).expect("d > 0").insert_axis(Axis(1));
    let centred = x - &*mean;
    let variance = centred.mapv(|c| c * c).mean_axis(Axis(1)).expect("d > 0");
    let inv_std = variance.mapv(|v| 1.0 / (v + eps).sqrt());
    let x_hat = centred * inv_std.view().insert_axis(Axis(1));
    let y = &x_hat * gamma + beta;
    (y, LayerNormCache { x_hat, inv_std })
}

/// Gradients of LayerNorm: `(dX, dγ, dβ)`. With `dx̂ = dY ⊙ γ`, each row's
/// `dx = (dx̂ − mean(dx̂) − x̂ · mean(dx̂ ⊙ x̂)) / σ`: the two means remove
/// the directions in which the normalisation cannot move its output
/// (shifting every feature, scaling every feature).
pub(crate) fn layer_norm_backward(
    cache: &LayerNormCache,
    gamma: &Array1<f64>,
    dy: &ArrayRef2<f64>,
) -> (Matrix, Array1<f64>, Array1<f64>) {
    let x_hat: &ArrayRef2<f64> = &cache.x_hat;
    let d_gamma = (dy * x_hat).sum_axis(Axis(0));
    let d_beta = dy.sum_axis(Axis(0));
    let dx_hat = dy * &**gamma;
    let mean_dx_hat = dx_hat
        .mean_axis(Axis(1))
        .expect("d > 0")
        .insert_axis(Axis(1));
    let mean_dx_hat_x_hat = (&*dx_hat * x_hat)
        .mean_axis(Axis(1))
        .expect("d > 0")
        .insert_axis(Axis(1));
    let dx = (dx_hat - &mean_dx_hat - x_hat * &*mean_dx_hat_x_hat)
        * cache.inv_std.view().insert_axis(Axis(1));
    (dx, d_gamma, d_beta)
}
// ANCHOR_END: layer_norm_backward

// ANCHOR: ffn_backward
/// GELU (tanh approximation) and its derivative.
pub fn gelu(x: f64) -> f64 {
    let c = (2.0 / std::f64::consts::PI).sqrt();
    0.5 * x * (1.0 + (c * (x + 0.044715 * x.powi(3))).tanh())
}

/// `d GELU(x) / dx` for the tanh approximation.
pub fn gelu_derivative(x: f64) -> f64 {
    let c = (2.0 / std::f64::consts::PI).sqrt();
    let t = (c * (x + 0.044715 * x.powi(3))).tanh();
    0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * c * (1.0 + 3.0 * 0.044715 * x * x)
}

/// The parameters of a feed-forward network `GELU(XW₁ + b₁)W₂ + b₂`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FfnParams {
    /// `d×d_ff`.
    pub(crate) w1: Matrix,
    /// `d_ff`.
    pub(crate) b1: Array1<f64>,
    /// `d_ff×d`.
    pub(crate) w2: Matrix,
    /// `d`.
    pub(crate) b2: Array1<f64>,
}

/// What the FFN keeps: its input, the pre-activation and the activation.
#[derive(Debug, Clone)]
pub(crate) struct FfnCache {
    x: Matrix,
    pre: Matrix,
    hidden: Matrix,
}

/// The FFN's forward pass, with GELU.
pub(crate) fn ffn_forward(x: &ArrayRef2<f64>, p: &FfnParams) -> (Matrix, FfnCache) {
    let pre = linear_forward(x, &p.w1, &p.b1); // n×d_ff
    let hidden = pre.mapv(gelu);
    let y = linear_forward(&hidden, &p.w2, &p.b2); // n×d
    (
        y,
        FfnCache {
            x: x.to_owned(),
            pre,
            hidden,
        },
    )
}

/// The FFN's backward pass: `dX` and the parameters' gradients.
pub(crate) fn ffn_backward(
    cache: &FfnCache,
    p: &FfnParams,
    dy: &ArrayRef2<f64>,
) -> (Matrix, FfnParams) {
    let (d_hidden, w2, b2) = linear_backward(&cache.hidden, &p.w2, dy);
    let d_pre = d_hidden * &cache.pre.mapv(gelu_derivative); // chain rule through GELU
    let (dx, w1, b1) = linear_backward(&cache.x, &p.w1, &d_pre);
    (dx, FfnParams { w1, b1, w2, b2 })
}
// ANCHOR_END: ffn_backward

// ANCHOR: cross_entropy
/// Softmax cross-entropy, averaged over the rows whose `target` is `Some`:
/// `L = −mean log softmax(Z)[target]`. Returns `L` and `dZ`, which is
/// `(softmax(Z) − onehot(target)) / count` on those rows and 0 elsewhere.
pub(crate) fn cross_entropy(logits: &ArrayRef2<f64>, targets: &[Option<usize>]) -> (f64, Matrix) {
    let p = softmax(logits);
    let count = targets.iter().flatten().count().max(1) as f64;
    let mut loss = 0.0;
    let mut d_logits = Matrix::zeros(logits.dim());
    for (i, target) in targets.iter().enumerate() {
        if let Some(t) = *target {
            loss -= p[[i, t]].max(f64::MIN_POSITIVE).ln();
            let mut row = d_logits.row_mut(i);
            row.assign(&p.row(i));
            row[t] -= 1.0;
            row.mapv_inplace(|g| g / count);
        }
    }
    (loss / count, d_logits)
}
// ANCHOR_END: cross_entropy

// ANCHOR: numerical_gradient
/// The gradient of `f` at `x` by central differences,
/// `(f(x + δ·e_ij) − f(x − δ·e_ij)) / 2δ`, one entry at a time. Its error is
/// `O(δ²)` plus rounding of order `ε_f64 / δ`; `δ = 1e-5` balances them.
pub(crate) fn numerical_gradient(
    f: impl Fn(&Matrix) -> f64,
    x: &ArrayRef2<f64>,
    delta: f64,
) -> Matrix {
    let mut x = x.to_owned();
    let mut grad = Matrix::zeros(x.dim());
    for idx in 0..x.len() {
        let (i, j) = (idx / x.ncols(), idx % x.ncols());
        let original = x[[i, j]];
        x[[i, j]] = original + delta;
        let plus = f(&x);
        x[[i, j]] = original - delta;
        let minus = f(&x);
        x[[i, j]] = original;
        grad[[i, j]] = (plus - minus) / (2.0 * delta);
    }
    grad
}

/// How far apart two gradients are, relative to their size:
/// `max |a − b| / max(max |a|, max |b|)`. Entry-by-entry relative errors
/// would blow up on entries that are nearly 0 in both; this does not.
pub(crate) fn max_relative_error(a: &ArrayRef2<f64>, b: &ArrayRef2<f64>) -> f64 {
    let largest = |x: &ArrayRef2<f64>| x.fold(0.0_f64, |m, &v| m.max(v.abs()));
    let difference = a
        .iter()
        .zip(b.iter())
        .fold(0.0_f64, |m, (&x, &y)| m.max((x - y).abs()));
    difference / largest(a).max(largest(b)).max(1e-300)
}

/// The step `δ` of the central differences every gradient check uses.
pub const STEP: f64 = 1e-5;

/// How far an analytic gradient is from the central differences of `f` at
/// `x` (step [`STEP`]), in the sense of [`max_relative_error`].
pub(crate) fn gradient_error(
    analytic: &ArrayRef2<f64>,
    f: impl Fn(&Matrix) -> f64,
    x: &ArrayRef2<f64>,
) -> f64 {
    max_relative_error(analytic, &numerical_gradient(f, x, STEP))
}

/// The largest of several errors.
fn worst(errors: impl IntoIterator<Item = f64>) -> f64 {
    errors.into_iter().fold(0.0, f64::max)
}
// ANCHOR_END: numerical_gradient

/// Seeded `N(0, 1)` entries in `f64`.
pub(crate) fn normal_matrix(rows: usize, cols: usize, rng: &mut StdRng) -> Matrix {
    use ndarray_rand::rand_distr::StandardNormal;
    use ndarray_rand::RandomExt;
    Matrix::random_using((rows, cols), StandardNormal, rng)
}

mod checks;
pub use checks::*;

#[cfg(test)]
mod tests;
