//! Chapter 1's experiments and printed tables: kernel regression on a
//! seeded toy problem, the cost of the two scores, and how sharp each can
//! make its weights.

use crate::error::ReportError;
use ndarray::Array1;
use ndarray_rand::rand::{rngs::StdRng, Rng, SeedableRng};
use ndarray_rand::rand_distr::{Distribution, Normal};

use crate::show::table;
use attn::error::AttnError;
use attn::origins::{additive_score_flops, dot_score_flops, kernel_regression, AdditiveScore};
use attn::scaling::standard_normal;
use attn::softmax::softmax_rows_in_place;
use ndarray::Array2;

/// The function the toy problem samples: `sin(2x) + x/2`.
pub fn truth(x: f32) -> f32 {
    (2.0 * x).sin() + 0.5 * x
}

/// The bandwidths chapter 1 compares: too small, about right, too large.
pub const BANDWIDTHS: [f32; 3] = [0.05, 0.3, 2.0];

/// The standard deviation of the training targets' noise.
pub const NOISE_STD: f32 = 0.3;

/// Figure 1.2's three queries.
pub const PROBES: [f32; 3] = [1.0, 2.5, 4.0];

/// The score-cost table's sequence lengths and width.
pub const COST_LENGTHS: [u64; 2] = [128, 1024];
/// The score-cost table's width `d` (and the additive score's hidden units).
pub const COST_WIDTH: u64 = 64;

/// The sharpness experiment: `m` keys of width `d`, the query multiplied by
/// each of `SCALES`, and its seed.
pub const SHARPNESS_KEYS: usize = 16;
/// The width of the sharpness experiment's query and keys.
pub const SHARPNESS_WIDTH: usize = 8;
/// The factors the sharpness experiment multiplies the query by.
pub const SCALES: [f32; 4] = [1.0, 4.0, 16.0, 64.0];

/// `count` training points: `x` uniform in `[0, 5)`, sorted, and
/// `y = truth(x)` plus Gaussian noise of standard deviation [`NOISE_STD`]
/// (seeded).
pub fn training_set(count: usize, seed: u64) -> Result<(Array1<f32>, Array1<f32>), ReportError> {
    let mut rng = StdRng::seed_from_u64(seed);
    let noise = Normal::new(0.0_f32, NOISE_STD).map_err(|_| {
        ReportError::Attn(AttnError::InvalidArgument {
            name: "noise",
            value: f64::from(NOISE_STD),
            requirement: "must be a valid standard deviation",
        })
    })?;
    let mut x: Vec<f32> = (0..count).map(|_| rng.random_range(0.0..5.0)).collect();
    x.sort_by(f32::total_cmp);
    let y = x.iter().map(|&x| truth(x) + noise.sample(&mut rng)).collect();
    Ok((Array1::from(x), y))
}

/// `count` evenly spaced queries across `[0, 5]`.
pub fn queries(count: usize) -> Array1<f32> {
    Array1::linspace(0.0, 5.0, count)
}

/// For each bandwidth: the mean squared error of the estimates against the
/// true function at the queries, and the mean over queries of the largest
/// weight one training point gets.
pub fn bandwidth_table(
    x: &Array1<f32>,
    y: &Array1<f32>,
    queries: &Array1<f32>,
) -> Result<String, ReportError> {
    let mut rows = Vec::new();
    for rho in BANDWIDTHS {
        let a = kernel_regression(queries, x, y, rho)?;
        let error = queries
            .iter()
            .zip(a.output.column(0))
            .map(|(&q, &e)| ((e - truth(q)) as f64).powi(2))
            .sum::<f64>()
            / queries.len() as f64;
        let top = a
            .weights
            .rows()
            .into_iter()
            .map(|r| r.fold(0.0_f32, |m, &w| m.max(w)) as f64)
            .sum::<f64>()
            / queries.len() as f64;
        rows.push(vec![format!("{rho}"), format!("{error:.3}"), format!("{top:.2}")]);
    }
    let header = ["bandwidth ρ", "squared error", "largest weight"];
    Ok(table(&header, &rows))
}

/// FLOPs of the additive and the dot-product scores for `n = m` tokens of
/// width `d`, with `d_a = d` hidden units, in MFLOP, and their ratio.
pub fn score_cost_table(ns: &[u64], d: u64) -> String {
    let rows: Vec<Vec<String>> = ns
        .iter()
        .map(|&n| {
            let (additive, dot) = (additive_score_flops(n, n, d, d), dot_score_flops(n, n, d));
            vec![
                n.to_string(),
                format!("{:.1}", additive / 1e6),
                format!("{:.1}", dot / 1e6),
                format!("{:.2}", additive / dot),
            ]
        })
        .collect();
    table(&["n = m", "additive (MFLOP)", "dot (MFLOP)", "ratio"], &rows)
}

/// The sharpness experiment as the chapter prints it.
pub fn sharpness_table(rows: &[SharpnessRow]) -> String {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![format!("{}", r.scale), format!("{:.3}", r.dot), format!("{:.3}", r.additive)]
        })
        .collect();
    table(&["query scale", "dot product", "additive"], &cells)
}

/// One row of the sharpness experiment: the largest weight a query gives
/// any of `m` keys when the query is multiplied by `scale`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SharpnessRow {
    /// The factor the query was multiplied by.
    pub scale: f32,
    /// The largest weight with scaled dot-product scores.
    pub dot: f32,
    /// The largest weight with additive scores.
    pub additive: f32,
}

/// Chapter 1's comparison of what the two scores compute: one random query
/// and `m` random keys of width `d` (seeded), an additive score with `d`
/// hidden units; the largest weight as the query grows by each of `scales`.
/// Dot-product scores grow with the query without limit; additive scores
/// stay within `±bound`, so their weights cannot become one-hot.
pub fn sharpness_experiment(
    m: usize,
    d: usize,
    scales: &[f32],
    seed: u64,
) -> Result<(Vec<SharpnessRow>, f32), ReportError> {
    let mut rng = StdRng::seed_from_u64(seed);
    if m == 0 || d == 0 {
        let (name, shape) = ("keys (m×d)", (m, d));
        return Err(AttnError::Empty { name, shape }.into());
    }
    let (q, k) = (standard_normal(1, d, &mut rng), standard_normal(m, d, &mut rng));
    let additive = AdditiveScore::new(d, d, d, &mut rng)?;
    let largest = |mut s: Array2<f32>| -> Result<f32, AttnError> {
        softmax_rows_in_place(&mut s)?;
        Ok(s.fold(0.0_f32, |a, &w| a.max(w)))
    };
    let rows = scales
        .iter()
        .map(|&scale| {
            let q = &q * scale;
            Ok(SharpnessRow {
                scale,
                dot: largest(q.dot(&k.t()) / (d as f32).sqrt())?,
                additive: largest(additive.scores(&q, &k)?)?,
            })
        })
        .collect::<Result<_, AttnError>>()?;
    Ok((rows, additive.bound()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_scores_sharpen_without_limit_and_additive_ones_do_not() {
        let (rows, bound) = sharpness_experiment(16, 8, &[1.0, 4.0, 16.0, 64.0], 1).unwrap();
        assert!(rows.windows(2).all(|w| w[1].dot >= w[0].dot));
        assert!(rows[3].dot > 0.99);
        // With scores in [−B, B], no weight exceeds e^B / (e^B + 15 e^−B).
        let b = bound as f64;
        let ceiling = b.exp() / (b.exp() + 15.0 * (-b).exp());
        assert!(rows.iter().all(|r| (r.additive as f64) <= ceiling + 1e-6));
    }

    #[test]
    fn no_keys_is_an_error() {
        assert!(sharpness_experiment(0, 4, &[1.0], 0).is_err());
    }
}
