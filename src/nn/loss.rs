//! The training loss: softmax cross-entropy, with label smoothing
//! (Szegedy, Vanhoucke, Ioffe, Shlens and Wojna, 2016) as the original
//! Transformer trained with it, and the log-probabilities a decoder ranks
//! its next tokens by.

use ndarray::{Array1, Array2, ArrayRef1, ArrayRef2};

use crate::error::AttnError;
use crate::real::Real;
use crate::softmax::softmax_rows;

// ANCHOR: cross_entropy
/// Softmax cross-entropy, averaged over the rows whose `target` is `Some`:
/// `L = −mean log softmax(Z)[target]`. Returns `L` and `dZ`, which is
/// `(softmax(Z) − onehot(target)) / count` on those rows and 0 elsewhere.
pub fn cross_entropy<F: Real>(
    logits: &ArrayRef2<F>,
    targets: &[Option<usize>],
) -> Result<(F, Array2<F>), AttnError> {
    check_targets(logits, targets)?;
    let p = softmax_rows(logits)?;
    let count = F::of(targets.iter().flatten().count().max(1) as f64);
    let mut loss = F::zero();
    let mut d_logits = Array2::zeros(logits.dim());
    for (i, target) in targets.iter().enumerate() {
        if let Some(t) = *target {
            loss -= p[[i, t]].max(F::min_positive_value()).ln();
            let mut row = d_logits.row_mut(i);
            row.assign(&p.row(i));
            row[t] -= F::one();
            row.mapv_inplace(|g| g / count);
        }
    }
    Ok((loss / count, d_logits))
}
// ANCHOR_END: cross_entropy

/// Checks one target per row of `logits`, each a column of it (or `None`).
fn check_targets<F>(logits: &ArrayRef2<F>, targets: &[Option<usize>]) -> Result<(), AttnError> {
    crate::check::check_not_empty("logits", logits.dim())?;
    if targets.len() != logits.nrows() {
        return Err(AttnError::ShapesDiffer {
            what: "the targets and the logits' rows",
            left: (targets.len(), 1),
            right: (logits.nrows(), 1),
        });
    }
    match targets.iter().flatten().find(|&&t| t >= logits.ncols()) {
        Some(&t) => Err(AttnError::InvalidArgument {
            name: "target",
            value: t as f64,
            requirement: "must be a column of the logits (below their width, the vocabulary)",
        }),
        None => Ok(()),
    }
}

// ANCHOR: label_smoothing
/// Cross-entropy against a smoothed target: instead of all probability on
/// the right token, `1 − ε` on it and `ε` spread evenly over all `V` tokens,
///
/// `L = (1 − ε) · (−ln p_target) + ε · mean_v (−ln p_v)`,
///
/// averaged over the rows whose `target` is `Some`. The gradient is
/// `softmax(Z) − (1 − ε)·onehot − ε/V` on those rows, over their count;
/// with `ε = 0` this is exactly the plain cross-entropy. Returns `L` and `dZ`.
pub fn smoothed_cross_entropy<F: Real>(
    logits: &ArrayRef2<F>,
    targets: &[Option<usize>],
    epsilon: F,
) -> Result<(F, Array2<F>), AttnError> {
    if !(epsilon >= F::zero() && epsilon < F::one()) {
        return Err(AttnError::InvalidArgument {
            name: "label smoothing ε",
            value: epsilon.wide(),
            requirement: "must be at least 0 and below 1",
        });
    }
    let (hard_loss, hard_grad) = cross_entropy(logits, targets)?;
    if epsilon == F::zero() {
        return Ok((hard_loss, hard_grad));
    }
    let p = softmax_rows(logits)?;
    let v = F::of(logits.ncols() as f64);
    let count = F::of(targets.iter().flatten().count().max(1) as f64);
    let (mut uniform_loss, mut uniform_grad) = (F::zero(), Array2::zeros(logits.dim()));
    for (i, target) in targets.iter().enumerate() {
        if target.is_some() {
            let row = p.row(i);
            let log_sum = row
                .iter()
                .map(|&x| x.max(F::min_positive_value()).ln())
                .fold(F::zero(), |a, b| a + b);
            uniform_loss -= log_sum / v;
            uniform_grad.row_mut(i).assign(&row.mapv(|x| (x - F::one() / v) / count));
        }
    }
    let loss = (F::one() - epsilon) * hard_loss + epsilon * uniform_loss / count;
    Ok((loss, hard_grad * (F::one() - epsilon) + uniform_grad * epsilon))
}
// ANCHOR_END: label_smoothing

/// `log softmax(z)`, stably: `z − (max + ln Σ exp(z − max))`.
pub(crate) fn log_softmax<F: Real>(z: &ArrayRef1<F>) -> Array1<F> {
    let max = z.fold(F::neg_infinity(), |m, &x| m.max(x));
    let log_sum = z.iter().map(|&x| (x - max).exp()).fold(F::zero(), |a, b| a + b).ln() + max;
    z.mapv(|x| x - log_sum)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grad::gradient_error;

    type Matrix = Array2<f64>;

    fn logits() -> Matrix {
        Matrix::from_shape_fn((3, 5), |(i, j)| ((i * 5 + j) as f64 * 0.7).sin() * 2.0)
    }

    #[test]
    fn the_gradient_matches_finite_differences() {
        let targets = [Some(1), None, Some(4)];
        let z = logits();
        let (_, dz) = smoothed_cross_entropy(&z, &targets, 0.1).unwrap();
        let error =
            gradient_error(&dz, |z| smoothed_cross_entropy(z, &targets, 0.1).unwrap().0, &z);
        assert!(error < 1e-6, "relative error {error:e}");
        assert!(dz.row(1).iter().all(|&g| g == 0.0), "no target, no gradient");
    }

    #[test]
    fn zero_is_plain_cross_entropy_and_the_smoothed_optimum_is_not_one_hot() {
        let targets = [Some(0), Some(2), Some(3)];
        let z = logits();
        assert_eq!(
            smoothed_cross_entropy(&z, &targets, 0.0).unwrap(),
            cross_entropy(&z, &targets).unwrap()
        );
        // At the smoothed target itself, p = 0.92 on the right token and
        // 0.02 elsewhere (ε = 0.1, V = 5), the gradient vanishes.
        let p = |j: usize| if j == 0 { 0.92_f64 } else { 0.02 };
        let z = Matrix::from_shape_fn((1, 5), |(_, j)| p(j).ln());
        let (_, dz) = smoothed_cross_entropy(&z, &[Some(0)], 0.1).unwrap();
        assert!(dz.iter().all(|g| g.abs() < 1e-12), "{dz}");
        assert!(smoothed_cross_entropy(&z, &[Some(0)], 1.0).is_err());
        assert!(smoothed_cross_entropy(&z, &[Some(0)], -0.1).is_err());
    }

    #[test]
    fn log_softmax_is_the_log_of_the_softmax_and_does_not_overflow() {
        let z = ndarray::array![1000.0_f64, 999.0, -5.0];
        let p = crate::softmax::softmax(&z).unwrap();
        let log_p = log_softmax(&z);
        for (l, p) in log_p.iter().zip(&p) {
            assert!((l.exp() - p).abs() < 1e-12, "{log_p} vs {p}");
        }
    }
}
