//! Chapter 3, exercise 1: scores of variance 1 whatever the entries' scale.

use crate::error::AttnError;

// ANCHOR: score_scale
/// What to divide `q · k` by so that it has variance 1, when the entries of
/// `q` and `k` are independent with mean 0 and standard deviations
/// `sigma_q` and `sigma_k`.
///
/// `Var(q · k) = d_k σ_q² σ_k²`, so the factor is `σ_q σ_k √d_k` (which is
/// `√d_k` for unit entries). A scale that `f64` cannot hold (∞, or 0 for
/// tiny `σ`) is an error too.
pub fn score_scale(sigma_q: f64, sigma_k: f64, d_k: usize) -> Result<f64, AttnError> {
    for (name, sigma) in [("sigma_q", sigma_q), ("sigma_k", sigma_k)] {
        if !(sigma.is_finite() && sigma > 0.0) {
            return Err(AttnError::InvalidArgument {
                name,
                value: sigma,
                requirement: "must be finite and > 0",
            });
        }
    }
    if d_k == 0 {
        return Err(AttnError::InvalidArgument {
            name: "d_k",
            value: 0.0,
            requirement: "must be at least 1",
        });
    }
    let scale = sigma_q * sigma_k * (d_k as f64).sqrt();
    if !(scale.is_finite() && scale > 0.0) {
        return Err(AttnError::InvalidArgument {
            name: "sigma_q",
            value: sigma_q,
            requirement: "times sigma_k and √d_k must be finite and > 0 in f64",
        });
    }
    Ok(scale)
}
// ANCHOR_END: score_scale

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scaling::{sample_variance, standard_normal};
    use ndarray::Axis;
    use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

    /// A score is a sum of d_k products q_i k_i, each of variance σ_q² σ_k²: the sum has variance
    /// d_k σ_q² σ_k², so dividing by its square root, σ_q σ_k √d_k, gives variance 1.
    // ANCHOR: score_scale_test
    #[test]
    fn dividing_by_the_scale_gives_unit_variance() {
        let (sigma_q, sigma_k, d_k) = (3.0, 0.5, 64);
        let mut rng = StdRng::seed_from_u64(2);
        let q = standard_normal(10_000, d_k, &mut rng) * sigma_q as f32;
        let k = standard_normal(10_000, d_k, &mut rng) * sigma_k as f32;
        let scale = score_scale(sigma_q, sigma_k, d_k).unwrap() as f32;
        let scores = (&q * &k).sum_axis(Axis(1)) / scale;
        let variance = sample_variance(&scores).unwrap();
        assert!((variance - 1.0).abs() < 0.05, "variance {variance}");
        // Dividing by √d_k alone leaves (σ_q σ_k)² = 2.25.
        let plain = (&q * &k).sum_axis(Axis(1)) / (d_k as f32).sqrt();
        assert!((sample_variance(&plain).unwrap() - 2.25).abs() < 0.1);
    }
    // ANCHOR_END: score_scale_test

    /// A standard deviation of 0 or NaN and a width d_k = 0 have no scale: return
    /// `AttnError::InvalidArgument { name, value, requirement }` for each, never a panic or a NaN.
    #[test]
    fn bad_arguments_are_errors() {
        assert!(score_scale(0.0, 1.0, 4).is_err(), "σ_q = 0 must be an error");
        assert!(score_scale(1.0, f64::NAN, 4).is_err(), "σ_k = NaN must be an error");
        assert!(score_scale(1.0, 1.0, 0).is_err(), "d_k = 0 must be an error");
    }
}
