//! Chapter 4's measurement: the variance of each stage of freshly
//! initialised projections, on random tokens.

use ndarray::Array2;
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

use crate::error::ReportError;
use attn::error::AttnError;
use attn::projection::Projections;
use attn::scaling::{sample_variance, standard_normal};

/// Measured variances after projecting random tokens with
/// [`attn::projection::init_weight`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct InitStats {
    /// Variance of the entries of the token vectors `X` (drawn as `N(0, 1)`).
    pub x: f64,
    /// Variance of the entries of `Q = X_dec W_Q`.
    pub q: f64,
    /// Variance of the entries of `K = X_enc W_K`.
    pub k: f64,
    /// Variance of the cross-attention scores `QKᵀ/√d_k`.
    pub scores: f64,
}

/// Projects `tokens` random decoder and encoder tokens (`N(0, 1)` entries,
/// width `d_model`) with fresh projections to width `d_k`, and measures the
/// variance of each stage.
pub fn init_statistics(
    d_model: usize,
    d_k: usize,
    tokens: usize,
    seed: u64,
) -> Result<InitStats, ReportError> {
    let mut rng = StdRng::seed_from_u64(seed);
    if tokens == 0 || d_model == 0 {
        let (name, shape) = ("tokens (tokens×d_model)", (tokens, d_model));
        return Err(AttnError::Empty { name, shape }.into());
    }
    let p = Projections::new(d_model, d_k, d_k, &mut rng)?;
    let decoder = standard_normal(tokens, d_model, &mut rng);
    let encoder = standard_normal(tokens, d_model, &mut rng);
    let [w_q, w_k, _] = p.weights();
    let q = decoder.dot(w_q);
    let k = encoder.dot(w_k);
    let scores = q.dot(&k.t()) / (d_k as f32).sqrt();
    let var = |a: &Array2<f32>| sample_variance(&a.flatten());
    Ok(InitStats { x: var(&decoder)?, q: var(&q)?, k: var(&k)?, scores: var(&scores)? })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_sizes_are_errors_and_fresh_projections_keep_variance_near_1() {
        assert!(init_statistics(0, 4, 10, 1).is_err());
        assert!(init_statistics(4, 4, 0, 1).is_err());
        let s = init_statistics(64, 16, 500, 1).unwrap();
        for v in [s.x, s.q, s.k, s.scores] {
            assert!((0.8..1.2).contains(&v), "{s:?}");
        }
    }
}
