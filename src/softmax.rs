//! Softmax: turning a row of scores into a probability distribution.
//!
//! ```text
//! softmax(x)_j = exp(x_j) / Σ_l exp(x_l)
//! ```
//!
//! Evaluated literally, `exp` overflows `f32` once a score passes about 88.7,
//! and `inf / inf` is NaN. Subtracting the row's maximum first changes nothing
//! mathematically (the factor `exp(−max)` cancels) but keeps every exponent
//! `≤ 0`, so every `exp` lies in `[0, 1]` and the largest one is exactly 1.

use ndarray::{Array1, Array2, ArrayRef1, ArrayRef2};

use crate::error::AttnError;
use crate::real::Real;

// ANCHOR: naive_softmax
/// The textbook formula, `exp(x_j) / Σ_l exp(x_l)`, evaluated literally.
///
/// Kept only to show why it must not be used: `exp(1000.0_f32)` is `inf`.
pub fn naive_softmax(x: &ArrayRef1<f32>) -> Array1<f32> {
    let exps = x.mapv(f32::exp);
    let sum = exps.sum();
    exps / sum
}
// ANCHOR_END: naive_softmax

// ANCHOR: softmax
/// Numerically stable softmax of one row, in place:
/// `x_j ← exp(x_j − max) / Σ_l exp(x_l − max)`.
///
/// A row whose entries are all `−∞` (every key masked out) becomes all zeros:
/// there is nothing to attend to, and zeros, unlike NaN, are harmless later.
/// A NaN or `+∞` score has no weight that makes sense: it is an error.
pub fn softmax_in_place<F: Real>(x: &mut ArrayRef1<F>) -> Result<(), AttnError> {
    let max = row_max(x); // NaN if any entry is NaN
    if max.is_nan() || max == F::infinity() {
        return Err(invalid_score(0, x));
    }
    if max == F::neg_infinity() {
        x.fill(F::zero());
        return Ok(());
    }
    x.mapv_inplace(|x_j| (x_j - max).exp_nonpositive()); // every exponent ≤ 0
    let sum = x.sum(); // ≥ 1: the maximum contributes exp(0) = 1
    x.mapv_inplace(|e_j| e_j / sum);
    Ok(())
}

/// Stable softmax of each row of an `n×m` matrix of scores, in place; each
/// row then sums to 1 (or is all zeros, if it was all `−∞`).
pub fn softmax_rows_in_place<F: Real>(scores: &mut ArrayRef2<F>) -> Result<(), AttnError> {
    for (i, mut row) in scores.rows_mut().into_iter().enumerate() {
        softmax_in_place(&mut row).map_err(|_| invalid_score(i, &row))?;
    }
    Ok(())
}

/// [`softmax_rows_in_place`] on a copy: the scores are left as they were.
pub fn softmax_rows<F: Real>(scores: &ArrayRef2<F>) -> Result<Array2<F>, AttnError> {
    let mut weights = scores.to_owned();
    softmax_rows_in_place(&mut weights)?;
    Ok(weights)
}
// ANCHOR_END: softmax

/// The error for row `i` of scores, naming its first NaN or `+∞` entry.
fn invalid_score<F: Real>(i: usize, row: &ArrayRef1<F>) -> AttnError {
    let (j, &value) = row
        .iter()
        .enumerate()
        .find(|(_, s)| s.is_nan() || **s == F::infinity())
        .unwrap_or((0, &F::nan()));
    AttnError::InvalidScore { position: (i, j), value: value.wide() as f32 }
}

/// The largest entry of a row (`−∞` for an empty row, NaN if any entry is).
fn row_max<F: Real>(x: &ArrayRef1<F>) -> F {
    match x.as_slice() {
        Some(slice) => max_of(slice),
        None => max_of(&x.to_vec()), // a strided row: copy it once
    }
}

// ANCHOR: lanes
/// The largest entry of a slice, eight lanes at a time so that the compiler
/// can use vector instructions (a one-by-one maximum cannot be reordered).
/// A NaN entry makes the result NaN: it is not skipped, as `f32::max` would.
pub(crate) fn max_of<F: Real>(x: &[F]) -> F {
    // x_j > m is false for a NaN x_j, and for every x_j once m is NaN.
    let larger = |m: F, x_j: F| if x_j > m || x_j.is_nan() { x_j } else { m };
    let mut lanes = [F::neg_infinity(); 8];
    let chunks = x.chunks_exact(8);
    let rest = chunks.remainder();
    for chunk in chunks {
        for (m, &x_j) in lanes.iter_mut().zip(chunk) {
            *m = if m.is_nan() { *m } else { larger(*m, x_j) };
        }
    }
    rest.iter().chain(&lanes).fold(
        F::neg_infinity(),
        |m, &x_j| {
            if m.is_nan() {
                m
            } else {
                larger(m, x_j)
            }
        },
    )
}

/// The sum of a slice, eight lanes at a time (see [`max_of`]).
pub(crate) fn sum_of(x: &[f32]) -> f32 {
    let mut lanes = [0.0_f32; 8];
    let chunks = x.chunks_exact(8);
    let rest = chunks.remainder();
    for chunk in chunks {
        for (s, &x_j) in lanes.iter_mut().zip(chunk) {
            *s += x_j;
        }
    }
    lanes.iter().chain(rest).sum()
}
// ANCHOR_END: lanes

/// Stable softmax of one row, returning a new array (see [`softmax_in_place`]).
pub fn softmax<F: Real>(x: &ArrayRef1<F>) -> Result<Array1<F>, AttnError> {
    let mut p = x.to_owned();
    softmax_in_place(&mut p)?;
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{array, Axis};

    #[test]
    fn naive_softmax_overflows_where_stable_softmax_is_exact() {
        let logits = array![1000.0_f32, -1000.0, 0.0];
        let naive = naive_softmax(&logits);
        assert!(naive[0].is_nan(), "exp(1000) = inf, and inf / inf = NaN");
        assert_eq!(softmax(&logits).unwrap(), array![1.0, 0.0, 0.0]);

        let ties = array![1000.0_f32, 1000.0];
        assert!(naive_softmax(&ties).iter().all(|p| p.is_nan()));
        assert_eq!(softmax(&ties).unwrap(), array![0.5, 0.5]);

        // At −1000 the naive form underflows instead: 0 / 0 is NaN too.
        let low = array![-1000.0_f32, -1000.0];
        assert!(naive_softmax(&low).iter().all(|p| p.is_nan()));
        assert_eq!(softmax(&low).unwrap(), array![0.5, 0.5]);
    }

    #[test]
    fn row_max_sees_every_entry() {
        for n in [1, 7, 8, 9, 17, 64] {
            for at in 0..n {
                let mut x = Array1::from_elem(n, -1.0_f32);
                x[at] = 2.0;
                assert_eq!(row_max(&x), 2.0);
                let strided = Array2::from_shape_fn((n, 2), |(i, _)| x[i]);
                assert_eq!(row_max(&strided.column(0)), 2.0);
                x[at] = f32::NAN; // NaN anywhere is seen, not skipped
                assert!(row_max(&x).is_nan(), "n = {n}, at {at}");
                let strided = Array2::from_shape_fn((n, 2), |(i, _)| x[i]);
                assert!(row_max(&strided.column(0)).is_nan(), "n = {n}, at {at}");
            }
        }
        assert_eq!(row_max(&Array1::<f32>::zeros(0)), f32::NEG_INFINITY);
    }

    #[test]
    fn agrees_with_the_naive_form_where_that_is_safe() {
        let x = array![0.5_f32, -1.25, 2.0, 0.0];
        let (ours, naive) = (softmax(&x).unwrap(), naive_softmax(&x));
        for (a, b) in ours.iter().zip(&naive) {
            assert!((a - b).abs() < 1e-7, "{a} vs {b}");
        }
    }

    // ANCHOR: shift_invariance
    #[test]
    fn softmax_is_shift_invariant() {
        let x = array![0.5_f32, -1.25, 2.0, 0.0];
        for c in [-50.0_f32, -3.0, 7.5, 80.0] {
            let shifted = x.mapv(|x_j| x_j + c);
            for (a, b) in softmax(&x).unwrap().iter().zip(&softmax(&shifted).unwrap()) {
                assert!((a - b).abs() < 1e-6, "shift by {c}: {a} vs {b}");
            }
        }
    }
    // ANCHOR_END: shift_invariance

    #[test]
    fn naive_softmax_fails_the_shift_by_100_of_exercise_3() {
        let x = array![0.5_f32, -1.25, 2.0, 0.0];
        let shifted = naive_softmax(&x.mapv(|x_j| x_j + 100.0));
        assert!(shifted.iter().all(|p| p.is_nan()), "{shifted}");
    }

    #[test]
    fn rows_sum_to_one_and_a_fully_masked_row_is_zero() {
        let inf = f32::INFINITY;
        let scores = array![[1.0_f32, 2.0, 3.0], [-inf, -inf, -inf], [-inf, 0.0, -inf]];
        let w = softmax_rows(&scores).unwrap();
        assert!((w.row(0).sum() - 1.0).abs() < 1e-6);
        assert_eq!(w.row(1), array![0.0, 0.0, 0.0]);
        assert_eq!(w.row(2), array![0.0, 1.0, 0.0]);
        assert!(w.iter().all(|p| p.is_finite()));
    }

    #[test]
    fn a_nan_or_infinite_score_let_through_would_make_its_whole_row_nan() {
        // The stable formula with a maximum that skips NaN (`f32::max`),
        // as it would run without the check.
        let unchecked = |x: &Array1<f32>| {
            let max = x.iter().fold(f32::NEG_INFINITY, |m, &x_j| m.max(x_j));
            let e = x.mapv(|x_j| (x_j - max).exp());
            &e / e.sum()
        };
        for (bad, column) in [(f32::NAN, 1), (f32::INFINITY, 2)] {
            let mut x = array![0.5_f32, 1.0, -2.0];
            x[column] = bad;
            assert!(unchecked(&x).iter().all(|p| p.is_nan()), "{bad}: {}", unchecked(&x));
            let mut scores = x.clone().insert_axis(Axis(0));
            scores.push_row(x.view()).unwrap();
            let err = softmax_rows_in_place(&mut scores).unwrap_err();
            assert!(matches!(err, AttnError::InvalidScore { position: (0, c), .. } if c == column));
        }
    }
}
