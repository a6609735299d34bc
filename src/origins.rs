//! Where attention came from (chapter 1): attention pooling as kernel
//! regression, and the additive score of the first attention-based
//! translation model, beside the dot product that replaced it.
//!
//! | name | score of query `q` and key `k` | learned |
//! | --- | --- | --- |
//! | Nadaraya–Watson (Gaussian kernel) | `−(q − k)² / 2ρ²` | nothing (`ρ` is chosen) |
//! | additive (Bahdanau) | `uᵀ tanh(A_q q + A_k k)` | `A_q`, `A_k`, `u` |
//! | multiplicative (Luong) | `qᵀ W k`, or `qᵀ k` | `W`, or nothing |
//! | scaled dot product | `qᵀ k / √d_k` | nothing (the projections are) |
//!
//! Every one turns its scores into weights with the same softmax.

use ndarray::{Array1, Array2, ArrayRef1, ArrayRef2, Axis};
use ndarray_rand::rand::rngs::StdRng;

use crate::attention::{check_qkv, Attention};
use crate::check::{check_finite, check_not_empty, check_overflow, check_positive, check_size};
use crate::error::AttnError;
use crate::linalg::{linear, matmul};
use crate::nn::additive::{hidden, score};
use crate::projection::init_weight;
use crate::softmax::softmax_rows_in_place;

// ANCHOR: kernel_scores
/// The scores of Nadaraya–Watson kernel regression with a Gaussian kernel of
/// bandwidth `ρ`: query `x` against key `x_j` scores `−(x − x_j)² / 2ρ²`,
/// the higher the nearer. `n×m` for `n` queries and `m` keys.
pub fn kernel_scores(
    queries: &ArrayRef1<f32>,
    keys: &ArrayRef1<f32>,
    bandwidth: f32,
) -> Result<Array2<f32>, AttnError> {
    check_positive("bandwidth", f64::from(bandwidth))?;
    check_finite("queries", &queries.view().insert_axis(Axis(0)))?;
    check_finite("keys", &keys.view().insert_axis(Axis(0)))?;
    check_size("kernel weights", queries.len(), keys.len())?;
    let two_rho_squared = 2.0 * bandwidth * bandwidth;
    let scores = Array2::from_shape_fn((queries.len(), keys.len()), |(i, j)| {
        -(queries[i] - keys[j]).powi(2) / two_rho_squared
    });
    check_overflow("the kernel scores −(x − x_j)²/2ρ²", &scores)?;
    Ok(scores)
}
// ANCHOR_END: kernel_scores

/// Nadaraya–Watson kernel regression as attention: each query `x` (one of
/// `queries`, `n` of them) gets `ŷ(x) = Σ_j α(x, x_j) y_j`, a weighted
/// average of the `m` training targets `y_j`, with weights
/// `α(x, x_j) = softmax_j(−(x − x_j)² / 2ρ²)` ([`kernel_scores`]). The
/// queries are `x`, the keys the `x_j`, the values the `y_j`; nothing is
/// learned. Returns the `n` estimates (`output`, `n×1`) and the `n×m`
/// weights.
pub fn kernel_regression(
    queries: &ArrayRef1<f32>,
    keys: &ArrayRef1<f32>,
    values: &ArrayRef1<f32>,
    bandwidth: f32,
) -> Result<Attention, AttnError> {
    let column = |x: &ArrayRef1<f32>| x.to_owned().insert_axis(Axis(1)); // n×1
    let (q, k, v) = (column(queries), column(keys), column(values));
    check_qkv(&q, &k, &v)?;
    let mut scores = kernel_scores(queries, keys, bandwidth)?;
    softmax_rows_in_place(&mut scores)?;
    let weights = scores; // n×m: each row sums to 1
    let output = matmul(&weights, &v); // n×1
    Ok(Attention { output, weights })
}

// ANCHOR: additive
/// Additive attention's score (Bahdanau, Cho and Bengio, 2015):
/// `a(q, k) = uᵀ tanh(A_q q + A_k k)`, a one-hidden-layer network of the
/// query and the key together. With rows as vectors, `A_q` is `d_q×d_a`,
/// `A_k` is `d_k×d_a` and `u` has `d_a` entries (`d_a` hidden units);
/// queries and keys may have different widths.
#[derive(Debug, Clone, PartialEq)]
pub struct AdditiveScore {
    a_q: Array2<f32>, // d_q×d_a
    a_k: Array2<f32>, // d_k×d_a
    u: Array1<f32>,   // d_a
}

impl AdditiveScore {
    /// The `n×m` scores of queries `q` (`n×d_q`) and keys `k` (`m×d_k`):
    /// project each once, then one `tanh` per query, key and hidden unit.
    pub fn scores(&self, q: &ArrayRef2<f32>, k: &ArrayRef2<f32>) -> Result<Array2<f32>, AttnError> {
        self.check_inputs(q, k)?;
        let q_a = linear("the queries' hidden units q A_q", q, &self.a_q, None)?; // n×d_a
        let k_a = linear("the keys' hidden units k A_k", k, &self.a_k, None)?; // m×d_a
        let scores = Array2::from_shape_fn((q.nrows(), k.nrows()), |(i, j)| {
            score(&hidden(q_a.row(i), k_a.row(j)), &self.u) // uᵀ tanh(q_a,i + k_a,j)
        });
        check_overflow("the additive scores", &scores)?;
        Ok(scores)
    }
}
// ANCHOR_END: additive

impl AdditiveScore {
    /// A score with weights drawn as in chapter 4 (`N(0, 1/fan-in)`).
    pub fn new(d_q: usize, d_k: usize, d_a: usize, rng: &mut StdRng) -> Result<Self, AttnError> {
        let a_q = init_weight(d_q, d_a, rng)?;
        let a_k = init_weight(d_k, d_a, rng)?;
        let u = init_weight(d_a, 1, rng)?.column(0).to_owned();
        Ok(AdditiveScore { a_q, a_k, u })
    }

    /// `softmax(a(Q, K)) V`: the context vectors `c_i = Σ_j α_ij v_j`.
    pub fn attend(
        &self,
        q: &ArrayRef2<f32>,
        k: &ArrayRef2<f32>,
        v: &ArrayRef2<f32>,
    ) -> Result<Attention, AttnError> {
        if v.nrows() != k.nrows() {
            return Err(AttnError::KeyValueCountMismatch { keys: k.dim(), values: v.dim() });
        }
        check_finite("values", v)?;
        let mut weights = self.scores(q, k)?;
        softmax_rows_in_place(&mut weights)?;
        let output = matmul(&weights, v);
        check_overflow("the output", &output)?;
        Ok(Attention { output, weights })
    }
}

impl AdditiveScore {
    /// The largest score it can give any query and key: `Σ_l |u_l|`,
    /// since every `tanh` lies in `[−1, 1]`.
    pub fn bound(&self) -> f32 {
        self.u.iter().map(|u_l| u_l.abs()).sum()
    }

    fn check_inputs(&self, q: &ArrayRef2<f32>, k: &ArrayRef2<f32>) -> Result<(), AttnError> {
        check_not_empty("queries", q.dim())?;
        check_not_empty("keys", k.dim())?;
        for (name, x, w) in [("queries", q, &self.a_q), ("keys", k, &self.a_k)] {
            if x.ncols() != w.nrows() {
                return Err(AttnError::ModelWidthMismatch {
                    name,
                    d_model: w.nrows(),
                    shape: x.dim(),
                });
            }
            check_finite(name, x)?;
        }
        check_size("additive scores", q.nrows(), k.nrows())
    }
}

// ANCHOR: score_flops
/// FLOPs of the additive scores of `n` queries and `m` keys of width `d`
/// with `d_a` hidden units: the projections (`2n·d·d_a + 2m·d·d_a`), then
/// per query, key and hidden unit an addition and a multiply-add with `u`
/// (`3nm·d_a`), besides `nm·d_a` evaluations of `tanh`, not counted.
pub fn additive_score_flops(n: u64, m: u64, d: u64, d_a: u64) -> f64 {
    let (n, m, d, d_a) = (n as f64, m as f64, d as f64, d_a as f64);
    2.0 * n * d * d_a + 2.0 * m * d * d_a + 3.0 * n * m * d_a
}

/// FLOPs of the dot-product scores `QKᵀ`: one matrix product, `2nmd`.
pub fn dot_score_flops(n: u64, m: u64, d: u64) -> f64 {
    2.0 * n as f64 * m as f64 * d as f64
}
// ANCHOR_END: score_flops

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scaling::standard_normal;
    use approx::assert_abs_diff_eq;
    use ndarray::array;
    use ndarray_rand::rand::SeedableRng;

    // ANCHOR: kernel_regression_test
    #[test]
    fn kernel_weights_prefer_near_keys_and_sum_to_one() {
        let keys = array![0.0_f32, 1.0, 2.0, 3.0];
        let values = array![0.0_f32, 10.0, 20.0, 30.0];
        let a = kernel_regression(&array![1.0_f32, 1.5], &keys, &values, 0.5).unwrap();
        for row in a.weights.rows() {
            assert_abs_diff_eq!(row.sum(), 1.0, epsilon = 1e-6);
        }
        // Query 1.0: its own key weighs most, its neighbours equally.
        let w = a.weights.row(0);
        assert!(w[1] > w[0] && w[0] == w[2] && w[2] > w[3]);
        // Query 1.5 sits between keys 1 and 2: the estimate is 15.
        assert_abs_diff_eq!(a.output[[1, 0]], 15.0, epsilon = 1e-4);
        // A tiny bandwidth is the nearest neighbour, a huge one the mean.
        let near = kernel_regression(&array![2.9_f32], &keys, &values, 1e-3).unwrap();
        assert_abs_diff_eq!(near.output[[0, 0]], 30.0, epsilon = 1e-4);
        let far = kernel_regression(&array![2.9_f32], &keys, &values, 1e4).unwrap();
        assert_abs_diff_eq!(far.output[[0, 0]], 15.0, epsilon = 1e-3);
    }
    // ANCHOR_END: kernel_regression_test

    #[test]
    fn additive_scores_are_the_formula_and_stay_within_their_bound() {
        let mut rng = StdRng::seed_from_u64(3);
        let score = AdditiveScore::new(3, 2, 4, &mut rng).unwrap();
        let (q, k) = (standard_normal(2, 3, &mut rng), standard_normal(5, 2, &mut rng));
        let s = score.scores(&q, &k).unwrap();
        let by_hand = |i: usize, j: usize| {
            let hidden = (q.row(i).dot(&score.a_q) + k.row(j).dot(&score.a_k)).mapv(f32::tanh);
            hidden.dot(&score.u)
        };
        for ((i, j), &s_ij) in s.indexed_iter() {
            assert_abs_diff_eq!(s_ij, by_hand(i, j), epsilon = 1e-6);
        }
        let huge = q.mapv(|x| x * 1e6);
        let bound = score.bound();
        assert!(score.scores(&huge, &k).unwrap().iter().all(|s| s.abs() <= bound));
        let v = standard_normal(5, 4, &mut rng);
        let a = score.attend(&q, &k, &v).unwrap();
        assert_eq!((a.weights.dim(), a.output.dim()), ((2, 5), (2, 4)));
        assert!(score.scores(&k, &k).is_err(), "keys are 2 wide, queries 3");
    }

    #[test]
    fn bad_input_is_an_error() {
        let x = array![1.0_f32, 2.0];
        assert!(kernel_regression(&x, &x, &x, 0.0).is_err());
        assert!(kernel_regression(&x, &x, &array![1.0_f32], 1.0).is_err());
        assert!(kernel_regression(&array![f32::NAN], &x, &x, 1.0).is_err());
        assert!(kernel_regression(&x, &array![1e30_f32, 0.0], &x, 1e-30).is_err());
        assert!(AdditiveScore::new(0, 2, 2, &mut StdRng::seed_from_u64(0)).is_err());
    }
}
