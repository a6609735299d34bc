//! The training loss with label smoothing (Szegedy, Vanhoucke, Ioffe,
//! Shlens and Wojna, 2016), as the original Transformer trained with it.

use ndarray::ArrayRef2;

use crate::error::AttnError;
use crate::grad::{cross_entropy, softmax, Matrix};

// ANCHOR: label_smoothing
/// Cross-entropy against a smoothed target: instead of all probability on
/// the right token, `1 − ε` on it and `ε` spread evenly over all `V` tokens,
///
/// `L = (1 − ε) · (−ln p_target) + ε · mean_v (−ln p_v)`,
///
/// averaged over the rows whose `target` is `Some`. The gradient is
/// `softmax(Z) − (1 − ε)·onehot − ε/V` on those rows, over their count;
/// with `ε = 0` this is exactly [`cross_entropy`]. Returns `L` and `dZ`.
pub(crate) fn smoothed_cross_entropy(
    logits: &ArrayRef2<f64>,
    targets: &[Option<usize>],
    epsilon: f64,
) -> Result<(f64, Matrix), AttnError> {
    if !(0.0..1.0).contains(&epsilon) {
        return Err(AttnError::InvalidArgument {
            name: "label smoothing ε",
            value: epsilon,
            requirement: "must be at least 0 and below 1",
        });
    }
    let (hard_loss, hard_grad) = cross_entropy(logits, targets);
    if epsilon == 0.0 {
        return Ok((hard_loss, hard_grad));
    }
    let p = softmax(logits);
    let v = logits.ncols() as f64;
    let count = targets.iter().flatten().count().max(1) as f64;
    let (mut uniform_loss, mut uniform_grad) = (0.0, Matrix::zeros(logits.dim()));
    for (i, target) in targets.iter().enumerate() {
        if target.is_some() {
            let row = p.row(i);
            uniform_loss -= row
                .iter()
                .map(|&x| x.max(f64::MIN_POSITIVE).ln())
                .sum::<f64>()
                / v;
            uniform_grad
                .row_mut(i)
                .assign(&row.mapv(|x| (x - 1.0 / v) / count));
        }
    }
    let loss = (1.0 - epsilon) * hard_loss + epsilon * uniform_loss / count;
    Ok((loss, hard_grad * (1.0 - epsilon) + uniform_grad * epsilon))
}
// ANCHOR_END: label_smoothing

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grad::gradient_error;

    fn logits() -> Matrix {
        Matrix::from_shape_fn((3, 5), |(i, j)| ((i * 5 + j) as f64 * 0.7).sin() * 2.0)
    }

    #[test]
    fn the_gradient_matches_finite_differences() {
        let targets = [Some(1), None, Some(4)];
        let z = logits();
        let (_, dz) = smoothed_cross_entropy(&z, &targets, 0.1).unwrap();
        let error = gradient_error(
            &dz,
            |z| smoothed_cross_entropy(z, &targets, 0.1).unwrap().0,
            &z,
        );
        assert!(error < 1e-6, "relative error {error:e}");
        assert!(
            dz.row(1).iter().all(|&g| g == 0.0),
            "no target, no gradient"
        );
    }

    #[test]
    fn zero_is_plain_cross_entropy_and_the_smoothed_optimum_is_not_one_hot() {
        let targets = [Some(0), Some(2), Some(3)];
        let z = logits();
        assert_eq!(
            smoothed_cross_entropy(&z, &targets, 0.0).unwrap(),
            cross_entropy(&z, &targets)
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
}
