//! Chapter 11's experiments on the backward passes: the size of the
//! gradients with and without the `1/√d_k` scale, and each backward pass
//! checked against central differences, with the tables the chapter prints.

use ndarray::{ArrayRef2, Axis};
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

use super::*;
use crate::check::{check_size, check_total, MAX_ENTRIES};
use crate::linalg::{matmul, LinearWeights};
use crate::nn::NormWeights;
use crate::softmax::softmax_rows;

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

// ANCHOR: gradient_norms
/// `‖dS‖` and `‖dQ‖` for one problem, its scores divided by `sqrt_d_k`.
fn norms([q, k, v, d_out]: [&Matrix; 4], sqrt_d_k: f64) -> Result<[f64; 2], AttnError> {
    let norm = |x: &Matrix| x.mapv(|a| a * a).sum().sqrt();
    let (_, cache) = attention_forward(q, k, v, None, sqrt_d_k)?;
    let ds = softmax_backward(&cache.p, &matmul(d_out, &v.t()))?;
    let [dq, _, _] = attention_backward(q, k, v, &cache, d_out)?;
    Ok([norm(&ds), norm(&dq)])
}

/// For each `d_k`, `trials` random problems (`Q`, `K`, `V`, `dO` all
/// `N(0, 1)`, 16 queries and 16 keys): the mean norms of the gradient with
/// respect to the scores and to `Q`, with and without scaling.
pub fn gradient_norms(
    d_ks: &[usize],
    trials: usize,
    seed: u64,
) -> Result<Vec<GradientNorms>, AttnError> {
    check_experiment(d_ks, trials)?; // sizes of at least 1, and not too large
    let mut rng = StdRng::seed_from_u64(seed);
    let mut row = |d_k: usize| -> Result<GradientNorms, AttnError> {
        let [mut unscaled, mut scaled] = [[0.0; 2]; 2];
        for _ in 0..trials {
            let [q, k] = [0; 2].map(|_| normal_matrix(16, d_k, &mut rng));
            let [v, d_out] = [0; 2].map(|_| normal_matrix(16, 16, &mut rng));
            for (sum, sqrt_d_k) in [(&mut unscaled, 1.0), (&mut scaled, (d_k as f64).sqrt())] {
                let [ds, dq] = norms([&q, &k, &v, &d_out], sqrt_d_k)?;
                *sum = [sum[0] + ds, sum[1] + dq];
            }
        }
        let mean = |s: [f64; 2]| (s[0] / trials as f64, s[1] / trials as f64);
        let (unscaled, scaled) = (mean(unscaled), mean(scaled));
        Ok(GradientNorms { d_k, unscaled, scaled })
    };
    d_ks.iter().map(|&d_k| row(d_k)).collect()
}
// ANCHOR_END: gradient_norms

/// How the gradient reaching each query is spread, with and without the
/// scale: the median and the largest of the per-query norms
/// `‖dQ_i‖` over every query of every trial, and the share of queries
/// whose norm is below [`VANISHED`].
#[derive(Debug, Clone, PartialEq)]
pub struct QueryGradients {
    /// Width of queries and keys.
    pub d_k: usize,
    /// Median `‖dQ_i‖`, the largest and the share below 0.01,
    /// unscaled.
    pub unscaled: (f64, f64, f64),
    /// The same, scaled by `1/√d_k`.
    pub scaled: (f64, f64, f64),
}

/// The threshold below which [`QueryGradients`] counts a query's gradient
/// as vanished.
pub const VANISHED: f64 = 0.01;

/// The problems of [`gradient_norms`] (same sizes, same seed, same draws),
/// seen query by query: the mean norm of `dQ` can grow while most queries'
/// gradients vanish, if a few grow large.
pub fn query_gradients(
    d_ks: &[usize],
    trials: usize,
    seed: u64,
) -> Result<Vec<QueryGradients>, AttnError> {
    check_experiment(d_ks, trials)?;
    let mut rng = StdRng::seed_from_u64(seed);
    let median_and_vanished = |mut xs: Vec<f64>| {
        xs.sort_by(f64::total_cmp);
        let vanished = xs.iter().filter(|&&x| x < VANISHED).count() as f64 / xs.len() as f64;
        (xs[xs.len() / 2], xs[xs.len() - 1], vanished)
    };
    let mut row = |d_k: usize| -> Result<QueryGradients, AttnError> {
        let [mut unscaled, mut scaled] = [Vec::new(), Vec::new()];
        for _ in 0..trials {
            let [q, k] = [0; 2].map(|_| normal_matrix(16, d_k, &mut rng));
            let [v, d_out] = [0; 2].map(|_| normal_matrix(16, 16, &mut rng));
            for (rows, sqrt_d_k) in [(&mut unscaled, 1.0), (&mut scaled, (d_k as f64).sqrt())] {
                let (_, cache) = attention_forward(&q, &k, &v, None, sqrt_d_k)?;
                let [dq, _, _] = attention_backward(&q, &k, &v, &cache, &d_out)?;
                rows.extend(dq.rows().into_iter().map(|r| r.dot(&r).sqrt()));
            }
        }
        let (unscaled, scaled) = (median_and_vanished(unscaled), median_and_vanished(scaled));
        Ok(QueryGradients { d_k, unscaled, scaled })
    };
    d_ks.iter().map(|&d_k| row(d_k)).collect()
}

/// Checks the experiment's sizes: `trials` and every `d_k` at least 1,
/// the queries `16×d_k` small enough to allocate, and the random numbers
/// all the trials draw at most [`MAX_ENTRIES`], so that the work has a
/// bound a caller can see.
fn check_experiment(d_ks: &[usize], trials: usize) -> Result<(), AttnError> {
    if trials == 0 || d_ks.contains(&0) {
        return Err(AttnError::InvalidArgument {
            name: "trials and every d_k",
            value: 0.0,
            requirement: "must be at least 1",
        });
    }
    for &d_k in d_ks {
        check_size("the experiment's queries (16×d_k)", 16, d_k)?;
    }
    // Each trial draws Q and K (16×d_k each), V and dO (16×16 each).
    let per_trial =
        d_ks.iter().try_fold(0_usize, |sum, &d_k| sum.checked_add(32 * d_k.checked_add(16)?));
    let what = "the experiment's random numbers (trials × Σ 32·(d_k + 16))";
    check_total(what, &[trials, per_trial.unwrap_or(usize::MAX)], MAX_ENTRIES)?;
    Ok(())
}

// ANCHOR: checks
/// A random linear functional `L(Y) = Σ Y ⊙ R` turns any output `Y` into a
/// scalar loss whose gradient with respect to `Y` is exactly `R`. A forward
/// pass that failed gives NaN, which fails every check.
fn probe_loss(y: Result<&ArrayRef2<f64>, &AttnError>, r: &ArrayRef2<f64>) -> f64 {
    y.map_or(f64::NAN, |y| (y * r).sum())
}

/// Largest relative error between attention's backward pass and central
/// differences, over `dQ`, `dK` and `dV`, on a random 4-query, 5-key problem
/// (with the causal mask if `masked`).
pub fn check_attention(seed: u64, masked: bool) -> Result<f64, AttnError> {
    let mut rng = StdRng::seed_from_u64(seed);
    let (n, m, d_k, d_v) = (4, 5, 3, 2);
    let q = normal_matrix(n, d_k, &mut rng);
    let k = normal_matrix(m, d_k, &mut rng);
    let v = normal_matrix(m, d_v, &mut rng);
    let r = normal_matrix(n, d_v, &mut rng);
    let keep = masked.then(|| crate::masking::causal_mask(n, m));
    let keep = keep.as_deref();
    let sqrt_d_k = (d_k as f64).sqrt();
    let loss = |q: &Matrix, k: &Matrix, v: &Matrix| {
        let forward = attention_forward(q, k, v, keep, sqrt_d_k);
        probe_loss(forward.as_ref().map(|(o, _)| &**o), &r)
    };
    let (_, cache) = attention_forward(&q, &k, &v, keep, sqrt_d_k)?;
    let [dq, dk, dv] = attention_backward(&q, &k, &v, &cache, &r)?;
    Ok(worst([
        gradient_error(&dq, |q| loss(q, &k, &v), &q),
        gradient_error(&dk, |k| loss(&q, k, &v), &k),
        gradient_error(&dv, |v| loss(&q, &k, v), &v),
    ]))
}
// ANCHOR_END: checks

/// As [`check_attention`], for the row-wise softmax.
pub fn check_softmax(seed: u64) -> Result<f64, AttnError> {
    let mut rng = StdRng::seed_from_u64(seed);
    let s = normal_matrix(3, 6, &mut rng) * 3.0;
    let r = normal_matrix(3, 6, &mut rng);
    let analytic = softmax_backward(&softmax_rows(&s)?, &r)?;
    let loss = |s: &Matrix| probe_loss(softmax_rows(s).as_ref().map(|p| &**p), &r);
    Ok(gradient_error(&analytic, loss, &s))
}

/// As [`check_attention`], for a linear layer (`dX`, `dW`, `db`).
pub fn check_linear(seed: u64) -> Result<f64, AttnError> {
    let mut rng = StdRng::seed_from_u64(seed);
    let (x, w) = (normal_matrix(5, 4, &mut rng), normal_matrix(4, 3, &mut rng));
    let b = normal_matrix(1, 3, &mut rng);
    let r = normal_matrix(5, 3, &mut rng);
    let loss = |x: &Matrix, w: &Matrix, b: &Matrix| {
        let y = linear("Y", x, w, Some(&b.row(0).to_owned()));
        probe_loss(y.as_ref().map(|y| &**y), &r)
    };
    let (dx, LinearWeights { w: dw, b: db }) = linear_backward(&x, &w, &r)?;
    Ok(worst([
        gradient_error(&dx, |x| loss(x, &w, &b), &x),
        gradient_error(&dw, |w| loss(&x, w, &b), &w),
        gradient_error(&db.insert_axis(Axis(0)), |b| loss(&x, &w, b), &b),
    ]))
}

/// As [`check_attention`], for LayerNorm (`dX`, `dγ`, `dβ`).
pub fn check_layer_norm(seed: u64) -> Result<f64, AttnError> {
    let mut rng = StdRng::seed_from_u64(seed);
    let x = normal_matrix(4, 6, &mut rng) * 2.0 + 1.0;
    let (gamma, beta) = (normal_matrix(1, 6, &mut rng), normal_matrix(1, 6, &mut rng));
    let r = normal_matrix(4, 6, &mut rng);
    let loss = |x: &Matrix, g: &Matrix, b: &Matrix| {
        let y = layer_norm_forward(x, &g.row(0), &b.row(0), 1e-5).map(|(y, _)| y);
        probe_loss(y.as_ref().map(|y| &**y), &r)
    };
    let (_, cache) = layer_norm_forward(&x, &gamma.row(0), &beta.row(0), 1e-5)?;
    let (dx, NormWeights { gamma: dg, beta: db }) = layer_norm_backward(&cache, &gamma.row(0), &r)?;
    Ok(worst([
        gradient_error(&dx, |x| loss(x, &gamma, &beta), &x),
        gradient_error(&dg.insert_axis(Axis(0)), |g| loss(&x, g, &beta), &gamma),
        gradient_error(&db.insert_axis(Axis(0)), |b| loss(&x, &gamma, b), &beta),
    ]))
}

/// As [`check_attention`], for the FFN with GELU (`dX`, `dW₁`, `dW₂`).
pub fn check_ffn(seed: u64) -> Result<f64, AttnError> {
    let mut rng = StdRng::seed_from_u64(seed);
    let (d, d_ff) = (3, 5);
    let p = FfnWeights {
        w1: normal_matrix(d, d_ff, &mut rng),
        b1: normal_matrix(1, d_ff, &mut rng).row(0).to_owned(),
        w2: normal_matrix(d_ff, d, &mut rng),
        b2: normal_matrix(1, d, &mut rng).row(0).to_owned(),
    };
    let x = normal_matrix(4, d, &mut rng);
    let r = normal_matrix(4, d, &mut rng);
    let gelu = Activation::Gelu;
    let (_, cache) = ffn_forward(&x, &p, gelu)?;
    let (dx, grads) = ffn_backward(&cache, &p, gelu, &r)?;
    let loss = |x: &Matrix, p: &FfnWeights<f64>| {
        let y = ffn_forward(x, p, gelu).map(|(y, _)| y);
        probe_loss(y.as_ref().map(|y| &**y), &r)
    };
    let with_w1 = |w1: &Matrix| FfnWeights { w1: w1.clone(), ..p.clone() };
    let with_w2 = |w2: &Matrix| FfnWeights { w2: w2.clone(), ..p.clone() };
    Ok(worst([
        gradient_error(&dx, |x| loss(x, &p), &x),
        gradient_error(&grads.w1, |w| loss(&x, &with_w1(w)), &p.w1),
        gradient_error(&grads.w2, |w| loss(&x, &with_w2(w)), &p.w2),
    ]))
}

/// As [`check_attention`], for softmax cross-entropy with an ignored row.
pub fn check_cross_entropy(seed: u64) -> Result<f64, AttnError> {
    let mut rng = StdRng::seed_from_u64(seed);
    let z = normal_matrix(4, 5, &mut rng);
    let targets = [Some(1), None, Some(4), Some(0)];
    let (_, dz) = cross_entropy(&z, &targets)?;
    let loss = |z: &Matrix| cross_entropy(z, &targets).map_or(f64::NAN, |(l, _)| l);
    Ok(gradient_error(&dz, loss, &z))
}

/// Every check, as the chapter prints them: `(operation, largest relative
/// error)`.
pub fn all_checks(seed: u64) -> Result<Vec<(&'static str, f64)>, AttnError> {
    Ok(vec![
        ("softmax", check_softmax(seed)?),
        ("attention", check_attention(seed, false)?),
        ("attention, causal mask", check_attention(seed, true)?),
        ("linear layer", check_linear(seed)?),
        ("LayerNorm", check_layer_norm(seed)?),
        ("FFN (GELU)", check_ffn(seed)?),
        ("cross-entropy", check_cross_entropy(seed)?),
    ])
}
