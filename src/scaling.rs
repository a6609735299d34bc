//! Why scale by `√d_k`, measured rather than asserted.
//!
//! If `q` and `k` have independent entries with mean 0 and variance 1, then
//! `q·k = Σ_i q_i k_i` is a sum of `d_k` independent terms, each with mean 0
//! and variance `E[q_i²] E[k_i²] = 1`, so `E[q·k] = 0` and `Var(q·k) = d_k`;
//! dividing by `√d_k` brings the variance back to 1. The experiments here
//! sample that, then follow the consequence through softmax: large scores
//! saturate it, and its Jacobian `diag(p) − ppᵀ` vanishes.

use ndarray::{Array1, Array2, ArrayRef1, Axis};
use ndarray_rand::rand::rngs::StdRng;
use ndarray_rand::rand::SeedableRng;
use ndarray_rand::rand_distr::StandardNormal;
use ndarray_rand::RandomExt;

use crate::check::{check_finite, check_not_empty, check_size};
use crate::error::AttnError;
use crate::linalg::matmul;
use crate::real::Real;
use crate::softmax::softmax;

/// The key widths every experiment sweeps: 4, 8, …, 1024.
pub const D_KS: [usize; 9] = [4, 8, 16, 32, 64, 128, 256, 512, 1024];

/// The seed of the chapter's experiments.
pub const SEED: u64 = 2017;

/// Pairs `(q, k)` sampled per `d_k` in experiment 1.
pub const VARIANCE_SAMPLES: usize = 10_000;

/// Scores per row (keys per query) in experiments 2 and 3: `m = 16`.
pub const KEYS_PER_QUERY: usize = 16;

/// Rows of scores averaged per `d_k` in experiments 2 and 3.
pub const SATURATION_TRIALS: usize = 2_000;

/// An `rows×cols` matrix of independent standard normal samples.
pub fn standard_normal(rows: usize, cols: usize, rng: &mut StdRng) -> Array2<f32> {
    Array2::random_using((rows, cols), StandardNormal, rng)
}

/// The unbiased sample variance of `xs` (computed in `f64`): an error for
/// fewer than two samples (it divides by `n − 1`) or any that is not
/// finite.
pub fn sample_variance(xs: &ArrayRef1<f32>) -> Result<f64, AttnError> {
    if xs.len() < 2 {
        let (value, requirement) = (xs.len() as f64, "must be at least 2 for a sample variance");
        return Err(AttnError::InvalidArgument { name: "samples", value, requirement });
    }
    check_finite("samples", &xs.view().insert_axis(Axis(0)))?;
    let n = xs.len() as f64;
    let mean = xs.iter().map(|&x| x as f64).sum::<f64>() / n;
    Ok(xs.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / (n - 1.0))
}

// ANCHOR: variance
/// One row of experiment 1: the sample variance of `q·k` and of `q·k/√d_k`.
#[derive(Debug, Clone, PartialEq)]
pub struct VarianceRow {
    /// The width of `q` and `k`.
    pub d_k: usize,
    /// Sample variance of `q·k` (theory: `d_k`).
    pub unscaled: f64,
    /// Sample variance of `q·k / √d_k` (theory: 1).
    pub scaled: f64,
}

/// Experiment 1: for each `d_k` in [`D_KS`], draw `samples` pairs `(q, k)`
/// with i.i.d. `N(0, 1)` entries and measure the variance of their dot
/// product, unscaled and scaled (`samples` at least 2).
pub fn variance_experiment(samples: usize, seed: u64) -> Result<Vec<VarianceRow>, AttnError> {
    let widest = D_KS.iter().copied().max().unwrap_or(1);
    check_size("the experiment's queries (samples × d_k)", samples, widest)?;
    let mut rng = StdRng::seed_from_u64(seed);
    D_KS.iter()
        .map(|&d_k| {
            let q = standard_normal(samples, d_k, &mut rng);
            let k = standard_normal(samples, d_k, &mut rng);
            let dots: Array1<f32> = (&q * &k).sum_axis(Axis(1)); // row i: q_i·k_i
            let scaled = &dots / (d_k as f32).sqrt();
            let (unscaled, scaled) = (sample_variance(&dots)?, sample_variance(&scaled)?);
            Ok(VarianceRow { d_k, unscaled, scaled })
        })
        .collect()
}
// ANCHOR_END: variance

// ANCHOR: jacobian
/// The Jacobian of softmax, `∂p_i/∂s_j = p_i (δ_ij − p_j)`, i.e.
/// `J = diag(p) − ppᵀ` (`m×m`), given `p = softmax(s)`.
pub fn softmax_jacobian(p: &ArrayRef1<f32>) -> Result<Array2<f32>, AttnError> {
    check_size("the Jacobian (m×m)", p.len(), p.len())?;
    let column = p.view().insert_axis(Axis(1)); // m×1
    let row = p.view().insert_axis(Axis(0)); // 1×m
    check_finite("p", &row)?;
    Ok(Array2::from_diag(&p.view()) - matmul(&column, &row))
}
// ANCHOR_END: jacobian

/// The entropy `−Σ p_j ln p_j` of a distribution, in nats (`0 ln 0 = 0`).
pub fn entropy<F: Real>(p: &ArrayRef1<F>) -> f64 {
    p.iter().map(|p_j| p_j.wide()).filter(|&p_j| p_j > 0.0).map(|p_j| -p_j * p_j.ln()).sum()
}

/// Frobenius norm `√(Σ_ij a_ij²)` of a matrix.
pub fn frobenius_norm(a: &Array2<f32>) -> f64 {
    a.iter().map(|&x| (x as f64).powi(2)).sum::<f64>().sqrt()
}

// ANCHOR: saturation_stats
/// Softmax statistics of one row of scores, averaged over many rows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SoftmaxStats {
    /// Mean of the largest weight, `max_j p_j` (1 = one-hot, `1/m` = uniform).
    pub max_weight: f64,
    /// Mean entropy in nats (0 = one-hot, `ln m` = uniform).
    pub entropy: f64,
    /// Mean Frobenius norm of the Jacobian `∂p/∂s`.
    pub jacobian_norm: f64,
}

/// Averages [`SoftmaxStats`] over rows of scores.
fn softmax_stats(scores: &Array2<f32>) -> Result<SoftmaxStats, AttnError> {
    let (mut max_weight, mut h, mut norm) = (0.0, 0.0, 0.0);
    for s in scores.rows() {
        let p = softmax(&s)?;
        max_weight += p.fold(0.0_f32, |a, &b| a.max(b)) as f64;
        h += entropy(&p);
        norm += frobenius_norm(&softmax_jacobian(&p)?);
    }
    let rows = scores.nrows() as f64;
    Ok(SoftmaxStats {
        max_weight: max_weight / rows,
        entropy: h / rows,
        jacobian_norm: norm / rows,
    })
}

// ANCHOR_END: saturation_stats

// ANCHOR: saturation
/// One row of experiments 2 and 3, for one `d_k`.
#[derive(Debug, Clone, PartialEq)]
pub struct SaturationRow {
    /// The width of queries and keys.
    pub d_k: usize,
    /// Scores `q·k_j`.
    pub unscaled: SoftmaxStats,
    /// Scores `q·k_j / √d_k`.
    pub scaled: SoftmaxStats,
}

/// Experiments 2 and 3: for each `d_k` in [`D_KS`], `trials` queries each
/// scored against its own `m` keys (all entries i.i.d. `N(0, 1)`); softmax
/// statistics of the unscaled and the scaled rows of scores.
pub fn saturation_experiment(
    m: usize,
    trials: usize,
    seed: u64,
) -> Result<Vec<SaturationRow>, AttnError> {
    check_not_empty("scores of the experiment (trials×m)", (trials, m))?;
    check_size("scores of the experiment (trials×m)", trials, m)?;
    check_size("keys of the experiment (m×d_k)", m, D_KS[D_KS.len() - 1])?;
    let mut rng = StdRng::seed_from_u64(seed);
    D_KS.iter()
        .map(|&d_k| {
            let mut scores = Array2::<f32>::zeros((trials, m));
            for mut row in scores.rows_mut() {
                let q = standard_normal(1, d_k, &mut rng);
                let k = standard_normal(m, d_k, &mut rng);
                row.assign(&matmul(&q, &k.t()).row(0)); // s_j = q·k_j
            }
            let scaled = &scores / (d_k as f32).sqrt();
            Ok(SaturationRow {
                d_k,
                unscaled: softmax_stats(&scores)?,
                scaled: softmax_stats(&scaled)?,
            })
        })
        .collect()
}
// ANCHOR_END: saturation

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn jacobian_matches_central_differences() {
        let s = array![0.3_f32, -1.2, 2.0, 0.7];
        let j = softmax_jacobian(&softmax(&s).unwrap()).unwrap();
        let h = 1e-2_f32;
        for col in 0..s.len() {
            let (mut plus, mut minus) = (s.clone(), s.clone());
            plus[col] += h;
            minus[col] -= h;
            let numeric = (softmax(&plus).unwrap() - softmax(&minus).unwrap()) / (2.0 * h);
            for row in 0..s.len() {
                let (a, b) = (j[[row, col]], numeric[row]);
                assert!((a - b).abs() < 1e-3, "J[{row},{col}] = {a}, numeric {b}");
            }
        }
    }

    // ANCHOR: jacobian_extremes
    #[test]
    fn jacobian_of_one_hot_and_uniform() {
        // One-hot: the gradient vanishes entirely.
        let one_hot = array![0.0_f32, 1.0, 0.0];
        assert!(frobenius_norm(&softmax_jacobian(&one_hot).unwrap()) == 0.0);
        // Uniform over m: J = I/m − 11ᵀ/m², norm √(m−1)/m.
        let m = 4.0_f32;
        let uniform = Array1::from_elem(4, 1.0 / m);
        let norm = frobenius_norm(&softmax_jacobian(&uniform).unwrap());
        assert!((norm - ((m - 1.0).sqrt() / m) as f64).abs() < 1e-6);
    }
    // ANCHOR_END: jacobian_extremes

    #[test]
    fn entropy_of_uniform_and_one_hot() {
        assert!((entropy(&Array1::from_elem(16, 1.0 / 16.0)) - 16f64.ln()).abs() < 1e-6);
        assert_eq!(entropy(&array![0.0_f32, 1.0, 0.0]), 0.0);
    }
}
