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
pub fn softmax_in_place(x: &mut ArrayRef1<f32>) {
    let max = x.fold(f32::NEG_INFINITY, |m, &x_j| m.max(x_j));
    if max == f32::NEG_INFINITY {
        x.fill(0.0);
        return;
    }
    x.mapv_inplace(|x_j| (x_j - max).exp()); // every exponent ≤ 0
    let sum = x.sum(); // ≥ 1: the maximum contributes exp(0) = 1
    x.mapv_inplace(|e_j| e_j / sum);
}

/// Stable softmax of each row of an `n×m` matrix of scores; each row of the
/// result sums to 1 (or is all zeros, if the row was all `−∞`).
pub fn softmax_rows(scores: &ArrayRef2<f32>) -> Array2<f32> {
    let mut weights = scores.to_owned();
    for mut row in weights.rows_mut() {
        softmax_in_place(&mut row);
    }
    weights
}
// ANCHOR_END: softmax

/// Stable softmax of one row, returning a new array (see [`softmax_in_place`]).
pub fn softmax(x: &ArrayRef1<f32>) -> Array1<f32> {
    let mut p = x.to_owned();
    softmax_in_place(&mut p);
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn naive_softmax_overflows_where_stable_softmax_is_exact() {
        let logits = array![1000.0_f32, -1000.0, 0.0];
        let naive = naive_softmax(&logits);
        assert!(naive[0].is_nan(), "exp(1000) = inf, and inf / inf = NaN");
        assert_eq!(softmax(&logits), array![1.0, 0.0, 0.0]);

        let ties = array![1000.0_f32, 1000.0];
        assert!(naive_softmax(&ties).iter().all(|p| p.is_nan()));
        assert_eq!(softmax(&ties), array![0.5, 0.5]);

        // At −1000 the naive form underflows instead: 0 / 0 is NaN too.
        let low = array![-1000.0_f32, -1000.0];
        assert!(naive_softmax(&low).iter().all(|p| p.is_nan()));
        assert_eq!(softmax(&low), array![0.5, 0.5]);
    }

    #[test]
    fn agrees_with_the_naive_form_where_that_is_safe() {
        let x = array![0.5_f32, -1.25, 2.0, 0.0];
        let (ours, naive) = (softmax(&x), naive_softmax(&x));
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
            for (a, b) in softmax(&x).iter().zip(&softmax(&shifted)) {
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
        let w = softmax_rows(&scores);
        assert!((w.row(0).sum() - 1.0).abs() < 1e-6);
        assert_eq!(w.row(1), array![0.0, 0.0, 0.0]);
        assert_eq!(w.row(2), array![0.0, 1.0, 0.0]);
        assert!(w.iter().all(|p| p.is_finite()));
    }
}
