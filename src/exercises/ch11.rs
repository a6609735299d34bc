//! Chapter 11, exercise 4: the backward pass of a softmax with temperature.

use ndarray::{Array2, ArrayRef2};

use crate::check::{check_finite, check_overflow};
use crate::error::AttnError;
use crate::grad::softmax_backward;

// ANCHOR: temperature_backward
/// Given `P = softmax(S/τ)` (row-wise) and `dP`, returns `dS`.
///
/// The chain rule adds one factor to chapter 11's softmax backward pass:
/// `ds = p ⊙ (dp − pᵀdp) / τ`. Shapes that differ, entries that are not
/// finite, a `τ` that is not finite and `> 0`, and a `dS` past `f64` (a
/// tiny `τ`) are errors.
pub fn softmax_temperature_backward(
    p: &ArrayRef2<f64>,
    dp: &ArrayRef2<f64>,
    tau: f64,
) -> Result<Array2<f64>, AttnError> {
    if p.dim() != dp.dim() {
        return Err(AttnError::ShapesDiffer {
            what: "the weights P and their gradient dP",
            left: p.dim(),
            right: dp.dim(),
        });
    }
    if !(tau.is_finite() && tau > 0.0) {
        return Err(AttnError::InvalidArgument {
            name: "tau",
            value: tau,
            requirement: "must be finite and > 0",
        });
    }
    check_finite("P", p)?;
    check_finite("dP", dp)?;
    let ds = softmax_backward(p, dp)? / tau;
    check_overflow("dS", &ds)?; // dividing by a tiny τ
    Ok(ds)
}
// ANCHOR_END: temperature_backward

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grad::check_gradient;
    use crate::softmax::softmax_rows;
    use ndarray_rand::rand::{rngs::StdRng, SeedableRng};
    use ndarray_rand::{rand_distr::StandardNormal, RandomExt};

    /// With P = softmax(S/τ) and dP the upstream gradient, the softmax's backward pass gives dZ =
    /// P ⊙ (dP − rowsum(dP ⊙ P)) for Z = S/τ; then dS = dZ / τ. The test compares your dS with
    /// central differences at τ = 0.5, 1 and 8.
    // ANCHOR: temperature_backward_test
    #[test]
    fn matches_central_differences() {
        let mut rng = StdRng::seed_from_u64(9);
        let s = Array2::random_using((3, 5), StandardNormal, &mut rng);
        let r = Array2::random_using((3, 5), StandardNormal, &mut rng);
        for tau in [0.5, 1.0, 8.0] {
            // L = Σ P ⊙ R, so dP = R.
            let loss = |s: &Array2<f64>| (softmax_rows(&(s / tau)).unwrap() * &r).sum();
            let p = softmax_rows(&(&s / tau)).unwrap();
            let ds = softmax_temperature_backward(&p, &r, tau).unwrap();
            assert!(check_gradient(&ds, loss, &s).unwrap() < 1e-6, "τ = {tau}");
        }
    }
    // ANCHOR_END: temperature_backward_test
}
