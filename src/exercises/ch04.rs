//! Chapter 4, exercise 1: what too large an initialisation does to the
//! scores, measured.

use ndarray::Array2;
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

use crate::check::{check_positive, check_size};
use crate::error::AttnError;
use crate::scaling::{sample_variance, standard_normal};

// ANCHOR: score_variance
/// The variance of the scaled scores `QKᵀ/√d_k` when `tokens` random tokens
/// (`N(0, 1)` entries, width `d_model`) are projected to width `d_k` by
/// weights drawn from `N(0, weight_std²)`.
///
/// With `weight_std = 1/√d_model` (chapter 4's initialisation) it is about
/// 1; with `weight_std = 1`, about `d_model²`. Sizes whose matrices would
/// not fit in memory, and scores past `f32`, are errors.
pub fn scaled_score_variance(
    d_model: usize,
    d_k: usize,
    weight_std: f32,
    tokens: usize,
    seed: u64,
) -> Result<f64, AttnError> {
    for (name, size) in [("d_model", d_model), ("d_k", d_k), ("tokens", tokens)] {
        if size < 2 {
            return Err(AttnError::InvalidArgument {
                name,
                value: size as f64,
                requirement: "must be at least 2",
            });
        }
    }
    check_positive("weight_std", f64::from(weight_std))?;
    // W_Q, the tokens X, the queries X W_Q and the scores must fit in memory.
    for (rows, cols) in [(d_model, d_k), (tokens, d_model), (tokens, d_k), (tokens, tokens)] {
        check_size("a matrix the experiment builds", rows, cols)?;
    }
    let mut rng = StdRng::seed_from_u64(seed);
    let w_q: Array2<f32> = standard_normal(d_model, d_k, &mut rng) * weight_std;
    let w_k: Array2<f32> = standard_normal(d_model, d_k, &mut rng) * weight_std;
    let x_q = standard_normal(tokens, d_model, &mut rng);
    let x_kv = standard_normal(tokens, d_model, &mut rng);
    let scores = x_q.dot(&w_q).dot(&x_kv.dot(&w_k).t()) / (d_k as f32).sqrt();
    sample_variance(&scores.flatten())
}
// ANCHOR_END: score_variance

#[cfg(test)]
mod tests {
    use super::*;

    /// Project random inputs (unit variance) with weights drawn at the given scale, form the
    /// scores q·k / √d_k and return their sample variance. With weights of standard deviation
    /// 1/√d_model the projections keep unit variance and the scores come out near 1; with weights
    /// of 1 each projection's variance grows by d_model, and the scores' by d_model².
    // ANCHOR: score_variance_test
    #[test]
    fn unit_weights_give_scores_of_variance_d_model_squared() {
        let d_model = 64;
        let right = scaled_score_variance(d_model, 16, 1.0 / (d_model as f32).sqrt(), 500, 3);
        assert!((right.unwrap() - 1.0).abs() < 0.1);
        let too_large = scaled_score_variance(d_model, 16, 1.0, 500, 3).unwrap();
        let expected = (d_model * d_model) as f64;
        assert!((too_large / expected - 1.0).abs() < 0.1, "{too_large} vs {expected}");
    }
    // ANCHOR_END: score_variance_test

    /// d_model, d_k or the number of tokens below 2 (a variance needs two samples) and a weight
    /// scale that is not finite and > 0 are errors: return `AttnError::InvalidArgument { name,
    /// value, requirement }` for each.
    #[test]
    fn bad_arguments_are_errors() {
        assert!(scaled_score_variance(0, 16, 1.0, 500, 3).is_err(), "d_model = 0");
        assert!(scaled_score_variance(64, 16, f32::INFINITY, 500, 3).is_err(), "scale ∞");
        assert!(scaled_score_variance(64, 16, 1.0, 1, 3).is_err(), "one token");
    }
}
