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
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

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

// ANCHOR: gradient_norms
/// One row of the scaling experiment: mean Frobenius norms of `dS` (the
/// gradient reaching the scores) and of `dQ`, for attention with and
/// without the `1/√d_k` scale.
#[derive(Debug, Clone, PartialEq)]
pub struct GradientNorms {
    /// Width of queries and keys.
    pub d_k: usize,
    /// `‖dS‖` and `‖dQ‖`, unscaled.
    pub unscaled: (f64, f64),
    /// `‖dS‖` and `‖dQ‖`, scaled by `1/√d_k`.
    pub scaled: (f64, f64),
}

/// For each `d_k`, `trials` random problems (`Q`, `K`, `V`, `dO` all
/// `N(0, 1)`, 16 queries and 16 keys): the mean norms of the gradient with
/// respect to the scores and to `Q`, with and without scaling.
pub fn gradient_norms(
    d_ks: &[usize],
    trials: usize,
    seed: u64,
) -> Result<Vec<GradientNorms>, AttnError> {
    if trials == 0 || d_ks.contains(&0) {
        return Err(AttnError::InvalidArgument {
            name: "trials and every d_k",
            value: 0.0,
            requirement: "must be at least 1",
        });
    }
    let mut rng = StdRng::seed_from_u64(seed);
    let norm = |x: &Matrix| x.mapv(|a| a * a).sum().sqrt();
    Ok(d_ks
        .iter()
        .map(|&d_k| {
            let mut sums = [0.0; 4];
            for _ in 0..trials {
                let (q, k) = (
                    normal_matrix(16, d_k, &mut rng),
                    normal_matrix(16, d_k, &mut rng),
                );
                let (v, d_out) = (
                    normal_matrix(16, 16, &mut rng),
                    normal_matrix(16, 16, &mut rng),
                );
                for (slot, scale) in [(0, 1.0), (2, 1.0 / (d_k as f64).sqrt())] {
                    let (_, cache) = attention_forward(&q, &k, &v, None, scale);
                    let dp = d_out.dot(&v.t());
                    let ds = softmax_backward(&cache.p, &dp);
                    let (dq, _, _) = attention_backward(&q, &k, &v, &cache, &d_out);
                    sums[slot] += norm(&ds);
                    sums[slot + 1] += norm(&dq);
                }
            }
            let mean = |i: usize| sums[i] / trials as f64;
            GradientNorms {
                d_k,
                unscaled: (mean(0), mean(1)),
                scaled: (mean(2), mean(3)),
            }
        })
        .collect())
}
// ANCHOR_END: gradient_norms

/// The gradient-norm table chapter 11 prints.
pub fn gradient_norm_table(norms: &[GradientNorms]) -> String {
    let rows: Vec<Vec<String>> = norms
        .iter()
        .map(|r| {
            vec![
                r.d_k.to_string(),
                format!("{:.4}", r.unscaled.0),
                format!("{:.4}", r.scaled.0),
                format!("{:.2}", r.unscaled.1),
                format!("{:.2}", r.scaled.1),
            ]
        })
        .collect();
    let header = [
        "d_k",
        "‖dS‖ unscaled",
        "‖dS‖ scaled",
        "‖dQ‖ unscaled",
        "‖dQ‖ scaled",
    ];
    crate::show::table(&header, &rows)
}

/// A table of gradient checks, `(what, relative error)`, under `header`.
pub fn check_table(header: &str, checks: &[(&str, f64)]) -> String {
    let rows: Vec<Vec<String>> = checks
        .iter()
        .map(|(name, e)| vec![name.to_string(), format!("{e:.1e}")])
        .collect();
    crate::show::table(&[header, "relative error"], &rows)
}

// ANCHOR: checks
/// A random linear functional `L(Y) = Σ Y ⊙ R` turns any output `Y` into a
/// scalar loss whose gradient with respect to `Y` is exactly `R`.
fn probe_loss(y: &ArrayRef2<f64>, r: &ArrayRef2<f64>) -> f64 {
    (y * r).sum()
}

/// Largest relative error between attention's backward pass and central
/// differences, over `dQ`, `dK` and `dV`, on a random 4-query, 5-key problem
/// (with the causal mask if `masked`).
pub fn check_attention(seed: u64, masked: bool) -> f64 {
    let mut rng = StdRng::seed_from_u64(seed);
    let (n, m, d_k, d_v) = (4, 5, 3, 2);
    let q = normal_matrix(n, d_k, &mut rng);
    let k = normal_matrix(m, d_k, &mut rng);
    let v = normal_matrix(m, d_v, &mut rng);
    let r = normal_matrix(n, d_v, &mut rng);
    let keep = masked.then(|| crate::masking::causal_mask(n, m));
    let keep = keep.as_deref();
    let scale = 1.0 / (d_k as f64).sqrt();
    let loss = |q: &Matrix, k: &Matrix, v: &Matrix| {
        probe_loss(&attention_forward(q, k, v, keep, scale).0, &r)
    };
    let (_, cache) = attention_forward(&q, &k, &v, keep, scale);
    let (dq, dk, dv) = attention_backward(&q, &k, &v, &cache, &r);
    worst([
        gradient_error(&dq, |q| loss(q, &k, &v), &q),
        gradient_error(&dk, |k| loss(&q, k, &v), &k),
        gradient_error(&dv, |v| loss(&q, &k, v), &v),
    ])
}
// ANCHOR_END: checks

/// As [`check_attention`], for the row-wise softmax.
pub fn check_softmax(seed: u64) -> f64 {
    let mut rng = StdRng::seed_from_u64(seed);
    let s = normal_matrix(3, 6, &mut rng) * 3.0;
    let r = normal_matrix(3, 6, &mut rng);
    let analytic = softmax_backward(&softmax(&s), &r);
    gradient_error(&analytic, |s| probe_loss(&softmax(s), &r), &s)
}

/// As [`check_attention`], for a linear layer (`dX`, `dW`, `db`).
pub fn check_linear(seed: u64) -> f64 {
    let mut rng = StdRng::seed_from_u64(seed);
    let (x, w) = (normal_matrix(5, 4, &mut rng), normal_matrix(4, 3, &mut rng));
    let b = normal_matrix(1, 3, &mut rng);
    let r = normal_matrix(5, 3, &mut rng);
    let loss = |x: &Matrix, w: &Matrix, b: &Matrix| {
        probe_loss(&linear_forward(x, w, &b.row(0).to_owned()), &r)
    };
    let (dx, dw, db) = linear_backward(&x, &w, &r);
    worst([
        gradient_error(&dx, |x| loss(x, &w, &b), &x),
        gradient_error(&dw, |w| loss(&x, w, &b), &w),
        gradient_error(&db.insert_axis(Axis(0)), |b| loss(&x, &w, b), &b),
    ])
}

/// As [`check_attention`], for LayerNorm (`dX`, `dγ`, `dβ`).
pub fn check_layer_norm(seed: u64) -> f64 {
    let mut rng = StdRng::seed_from_u64(seed);
    let x = normal_matrix(4, 6, &mut rng) * 2.0 + 1.0;
    let (gamma, beta) = (normal_matrix(1, 6, &mut rng), normal_matrix(1, 6, &mut rng));
    let r = normal_matrix(4, 6, &mut rng);
    let loss = |x: &Matrix, g: &Matrix, b: &Matrix| {
        probe_loss(
            &layer_norm_forward(x, &g.row(0).to_owned(), &b.row(0).to_owned(), 1e-5).0,
            &r,
        )
    };
    let (_, cache) =
        layer_norm_forward(&x, &gamma.row(0).to_owned(), &beta.row(0).to_owned(), 1e-5);
    let (dx, dg, db) = layer_norm_backward(&cache, &gamma.row(0).to_owned(), &r);
    worst([
        gradient_error(&dx, |x| loss(x, &gamma, &beta), &x),
        gradient_error(&dg.insert_axis(Axis(0)), |g| loss(&x, g, &beta), &gamma),
        gradient_error(&db.insert_axis(Axis(0)), |b| loss(&x, &gamma, b), &beta),
    ])
}

/// As [`check_attention`], for the FFN with GELU (`dX`, `dW₁`, `dW₂`).
pub fn check_ffn(seed: u64) -> f64 {
    let mut rng = StdRng::seed_from_u64(seed);
    let (d, d_ff) = (3, 5);
    let p = FfnParams {
        w1: normal_matrix(d, d_ff, &mut rng),
        b1: normal_matrix(1, d_ff, &mut rng).row(0).to_owned(),
        w2: normal_matrix(d_ff, d, &mut rng),
        b2: normal_matrix(1, d, &mut rng).row(0).to_owned(),
    };
    let x = normal_matrix(4, d, &mut rng);
    let r = normal_matrix(4, d, &mut rng);
    let (_, cache) = ffn_forward(&x, &p);
    let (dx, grads) = ffn_backward(&cache, &p, &r);
    let loss = |x: &Matrix, p: &FfnParams| probe_loss(&ffn_forward(x, p).0, &r);
    let with_w1 = |w1: &Matrix| FfnParams {
        w1: w1.clone(),
        ..p.clone()
    };
    let with_w2 = |w2: &Matrix| FfnParams {
        w2: w2.clone(),
        ..p.clone()
    };
    worst([
        gradient_error(&dx, |x| loss(x, &p), &x),
        gradient_error(&grads.w1, |w| loss(&x, &with_w1(w)), &p.w1),
        gradient_error(&grads.w2, |w| loss(&x, &with_w2(w)), &p.w2),
    ])
}

/// As [`check_attention`], for softmax cross-entropy with an ignored row.
pub fn check_cross_entropy(seed: u64) -> f64 {
    let mut rng = StdRng::seed_from_u64(seed);
    let z = normal_matrix(4, 5, &mut rng);
    let targets = [Some(1), None, Some(4), Some(0)];
    let (_, dz) = cross_entropy(&z, &targets);
    gradient_error(&dz, |z| cross_entropy(z, &targets).0, &z)
}

/// Every check, as the chapter prints them: `(operation, largest relative
/// error)`.
pub fn all_checks(seed: u64) -> Vec<(&'static str, f64)> {
    vec![
        ("softmax", check_softmax(seed)),
        ("attention", check_attention(seed, false)),
        ("attention, causal mask", check_attention(seed, true)),
        ("linear layer", check_linear(seed)),
        ("LayerNorm", check_layer_norm(seed)),
        ("FFN (GELU)", check_ffn(seed)),
        ("cross-entropy", check_cross_entropy(seed)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tolerance of every check: central differences with `δ = 1e-5`
    /// in `f64` are good to about `1e-10`; a wrong formula is off by O(1).
    const TOLERANCE: f64 = 1e-6;

    // ANCHOR: attention_gradient_test
    #[test]
    fn attention_gradients_match_finite_differences_with_and_without_a_mask() {
        for seed in 0..20 {
            assert!(check_attention(seed, false) < TOLERANCE, "seed {seed}");
            assert!(
                check_attention(seed, true) < TOLERANCE,
                "seed {seed}, masked"
            );
        }
    }
    // ANCHOR_END: attention_gradient_test

    #[test]
    fn every_backward_pass_matches_finite_differences() {
        for seed in 0..10 {
            for (name, error) in all_checks(seed) {
                assert!(error < TOLERANCE, "{name}, seed {seed}: {error:e}");
            }
        }
    }

    #[test]
    fn gelu_derivative_matches_finite_differences() {
        for i in 0..=80 {
            let x = i as f64 / 10.0 - 4.0;
            let numeric = (gelu(x + 1e-6) - gelu(x - 1e-6)) / 2e-6;
            assert!((gelu_derivative(x) - numeric).abs() < 1e-8, "x = {x}");
        }
    }

    #[test]
    fn cross_entropy_ignores_rows_without_a_target_and_is_ln_classes_when_uniform() {
        let z = Matrix::zeros((2, 5));
        let (loss, dz) = cross_entropy(&z, &[Some(3), None]);
        assert!((loss - 5f64.ln()).abs() < 1e-12);
        assert!(dz.row(1).iter().all(|&g| g == 0.0));
    }

    #[test]
    fn the_f64_forward_passes_agree_with_the_crate() {
        let mut rng = StdRng::seed_from_u64(96);
        let (q, k, v) = (
            normal_matrix(5, 8, &mut rng),
            normal_matrix(6, 8, &mut rng),
            normal_matrix(6, 3, &mut rng),
        );
        let f32s = |x: &Matrix| x.mapv(|a| a as f32);
        let ours = attention_forward(&q, &k, &v, None, 1.0 / 8f64.sqrt()).0;
        let crate_f32 = crate::scaled_dot_product_attention(&f32s(&q), &f32s(&k), &f32s(&v))
            .unwrap()
            .output;
        assert!((ours.mapv(|a| a as f32) - crate_f32)
            .iter()
            .all(|d| d.abs() < 1e-5));
        let x = normal_matrix(3, 8, &mut rng);
        let ln = crate::block::LayerNorm::new(8).forward(&f32s(&x)).unwrap();
        let ours = layer_norm_forward(&x, &Array1::ones(8), &Array1::zeros(8), 1e-5).0;
        assert!((ours.mapv(|a| a as f32) - ln)
            .iter()
            .all(|d| d.abs() < 1e-5));
        assert!((gelu(0.7) as f32 - crate::block::gelu(0.7)).abs() < 1e-6);
    }
}
