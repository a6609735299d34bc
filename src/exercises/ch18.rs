//! Chapter 18, exercises 2 and 3: longer than trained.

use ndarray::Array2;

use crate::error::AttnError;

// ANCHOR: interpolated
/// Exercise 2: position interpolation's frequencies from RoPE's: every
/// `ω_f` divided by the scale factor `s`, so that position `s·p` turns
/// each pair as far as position `p` did in training. `factor` must be
/// finite and at least 1, and every `ω_f` finite and above 0.
pub fn interpolated(omega: &[f64], factor: f64) -> Result<Vec<f64>, AttnError> {
    if !(factor.is_finite() && factor >= 1.0) {
        return Err(AttnError::InvalidArgument {
            name: "scale factor s",
            value: factor,
            requirement: "must be finite and at least 1",
        });
    }
    if let Some(&bad) = omega.iter().find(|w| !(w.is_finite() && **w > 0.0)) {
        return Err(AttnError::InvalidArgument {
            name: "a frequency ω_f",
            value: bad,
            requirement: "must be finite and above 0",
        });
    }
    Ok(omega.iter().map(|w| w / factor).collect())
}
// ANCHOR_END: interpolated

// ANCHOR: row_entropies
/// Exercise 3: the entropy `−Σ_j a_ij·ln a_ij` (nats) of each row `i` of
/// attention weights `a` (`n × n`, each row a distribution: no weight
/// negative or not finite, each row summing to 1 within `1e-4`). A row
/// spread evenly over `m` keys has entropy `ln m`; a row on one key, 0.
pub fn row_entropies(weights: &Array2<f32>) -> Result<Vec<f64>, AttnError> {
    let mut entropies = Vec::with_capacity(weights.nrows());
    for row in weights.rows() {
        let sum: f64 = row.iter().map(|&a| a as f64).sum();
        if row.iter().any(|a| !(a.is_finite() && *a >= 0.0)) || (sum - 1.0).abs() > 1e-4 {
            return Err(AttnError::InvalidArgument {
                name: "a row of attention weights (its sum)",
                value: sum,
                requirement: "must be finite weights of at least 0 that sum to 1",
            });
        }
        let entropy = row.iter().filter(|&&a| a > 0.0).map(|&a| -(a as f64) * (a as f64).ln());
        entropies.push(entropy.sum());
    }
    Ok(entropies)
}
// ANCHOR_END: row_entropies

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rope_scaling::{RopeFrequencies, RopeScaling};

    /// Divide each frequency by the factor. A factor below 1 or not finite,
    /// and a frequency that is 0, negative or not finite, are errors.
    #[test]
    fn interpolation_divides_every_frequency_by_the_factor() {
        for (d, factor) in [(32, 8.0), (64, 4.0), (2, 2.5), (128, 1.0)] {
            let plain = RopeFrequencies::new(d, 10000.0, RopeScaling::None).unwrap();
            let scaled = RopeFrequencies::new(d, 10000.0, RopeScaling::Linear { factor }).unwrap();
            let mine = interpolated(plain.omega(), factor).unwrap();
            assert_eq!(mine, scaled.omega(), "d = {d}, s = {factor}");
        }
        for factor in [0.5, f64::NAN, f64::INFINITY] {
            assert!(interpolated(&[1.0], factor).is_err(), "s = {factor}");
        }
        for w in [0.0, -1.0, f64::NAN] {
            assert!(interpolated(&[1.0, w], 2.0).is_err(), "ω = {w}");
        }
    }

    /// `−Σ a·ln a` over each row, skipping zeros (0·ln 0 is 0). A causal
    /// row spread evenly over its i + 1 keys has entropy ln(i + 1). Negative
    /// or non-finite weights and rows that do not sum to 1 are errors.
    #[test]
    fn entropy_is_zero_on_one_key_and_ln_m_on_m_keys() {
        let n = 6;
        let uniform =
            Array2::from_shape_fn((n, n), |(i, j)| if j <= i { 1.0 / (i + 1) as f32 } else { 0.0 });
        let got = row_entropies(&uniform).unwrap();
        for (i, h) in got.iter().enumerate() {
            approx::assert_abs_diff_eq!(*h, ((i + 1) as f64).ln(), epsilon = 1e-6);
        }
        let one_key = Array2::from_shape_fn((3, 3), |(_, j)| if j == 0 { 1.0 } else { 0.0 });
        assert_eq!(row_entropies(&one_key).unwrap(), vec![0.0; 3]);
        let mut bad = uniform.clone();
        bad[[2, 0]] = -0.1;
        assert!(row_entropies(&bad).is_err(), "a negative weight");
        bad[[2, 0]] = f32::NAN;
        assert!(row_entropies(&bad).is_err(), "a NaN weight");
        let half = uniform.mapv(|a| a / 2.0);
        assert!(row_entropies(&half).is_err(), "rows summing to 1/2");
    }
}
