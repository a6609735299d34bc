//! Chapter 14, exercises 1 and 2: one step of a gated recurrent unit, and
//! how a row of attention weights spreads over a run of words.

use ndarray::{s, Array2, ArrayView1};

use crate::check::check_not_empty;
use crate::error::AttnError;

// ANCHOR: gru_step
/// Exercise 1: one step of a GRU, for a batch. `x` is `B × d_in`, `h` the
/// previous state `B × d_h`; `w` (`d_in × 3d_h`), `u` (`d_h × 3d_h`) and
/// `b` (`1 × 3d_h`) hold the gates' weights side by side, in the order
/// `z`, `r`, `ĥ`:
///
/// `z = σ(x W_z + h U_z + b_z)`, `r = σ(x W_r + h U_r + b_r)`,
/// `ĥ = tanh(x W_h + (r ⊙ h) U_h + b_h)`, `h_t = z ⊙ h + (1 − z) ⊙ ĥ`.
/// An empty `x` or `h`, shapes that do not fit, and a state that is not
/// finite are errors.
pub fn gru_step(
    x: &Array2<f64>,
    h: &Array2<f64>,
    w: &Array2<f64>,
    u: &Array2<f64>,
    b: &Array2<f64>,
) -> Result<Array2<f64>, AttnError> {
    check_not_empty("x", x.dim())?;
    check_not_empty("h", h.dim())?; // so h holds its d_h numbers, and 3d_h cannot overflow
    let (batch, d_in, d_h) = (x.nrows(), x.ncols(), h.ncols());
    let shapes = [("h", h, (batch, d_h)), ("W", w, (d_in, 3 * d_h)), ("U", u, (d_h, 3 * d_h))];
    for (what, m, want) in shapes.into_iter().chain([("b", b, (1, 3 * d_h))]) {
        if m.dim() != want {
            return Err(AttnError::ShapesDiffer { what, left: m.dim(), right: want });
        }
    }
    let gate = |m: &Array2<f64>, g: usize| m.slice(s![.., g * d_h..(g + 1) * d_h]).to_owned();
    let sigmoid = |a: f64| 1.0 / (1.0 + (-a).exp());
    let from_x = x.dot(w) + b; // B × 3d_h, the three gates' input parts
    let z = (gate(&from_x, 0) + h.dot(&gate(u, 0))).mapv(sigmoid);
    let r = (gate(&from_x, 1) + h.dot(&gate(u, 1))).mapv(sigmoid);
    let candidate = (gate(&from_x, 2) + (&r * h).dot(&gate(u, 2))).mapv(f64::tanh);
    let next = &z * h + (1.0 - &z) * &candidate;
    match next.iter().find(|v| !v.is_finite()) {
        Some(&bad) => Err(AttnError::InvalidArgument {
            name: "x, h and the weights",
            value: bad,
            requirement: "must give a finite state (finite inputs of moderate size)",
        }),
        None => Ok(next),
    }
}
// ANCHOR_END: gru_step

// ANCHOR: run_spread
/// Exercise 2: how one row of attention weights over a source spreads
/// over the run of words `start..end` that a summary token stands for:
/// the share of the weight on the run, and the entropy `−Σ p_j ln p_j` of
/// the weights inside it, rescaled to sum to 1 (`ln L` when they are even
/// over a run of `L` words, 0 when one word has them all). The run must
/// lie in the row, its weights be finite and `≥ 0`, and hold some weight.
pub fn run_spread(
    weights: ArrayView1<f64>,
    start: usize,
    end: usize,
) -> Result<(f64, f64), AttnError> {
    if start >= end || end > weights.len() {
        return Err(AttnError::InvalidArgument {
            name: "run's end",
            value: end as f64,
            requirement: "must be after its start and at most the row's length",
        });
    }
    let run = weights.slice(s![start..end]);
    if let Some(&w) = run.iter().find(|&&w| !(w >= 0.0 && w.is_finite())) {
        let requirement = "must be finite and ≥ 0 (a negative weight is no weight)";
        return Err(AttnError::InvalidArgument {
            name: "weight on the run",
            value: w,
            requirement,
        });
    }
    let share: f64 = run.sum();
    if !(share > 0.0 && share.is_finite()) {
        return Err(AttnError::InvalidArgument {
            name: "weight on the run",
            value: share,
            requirement: "must be finite and > 0",
        });
    }
    let entropy = run.iter().map(|&w| w / share).filter(|&p| p > 0.0).map(|p| -p * p.ln()).sum();
    Ok((share, entropy))
}
// ANCHOR_END: run_spread

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_abs_diff_eq;
    use ndarray::{array, Array1};

    /// Compute the three gates' inputs with one product each, `x W + b` and `h U`, and cut them
    /// into `d_h`-wide column blocks in the order z, r, ĥ; the candidate reads `r ⊙ h`, not `h`.
    /// The state keeps `z` of the old one: `h_t = z ⊙ h + (1 − z) ⊙ ĥ`.
    #[test]
    fn one_step_follows_the_formulas() {
        // d_in = 1, d_h = 1, so every product is a product of numbers.
        let (x, h) = (array![[0.5], [-1.0]], array![[0.3], [0.8]]);
        let w = array![[0.2, -0.4, 0.9]];
        let u = array![[0.7, 0.1, -0.6]];
        let b = array![[0.05, -0.1, 0.2]];
        let got = gru_step(&x, &h, &w, &u, &b).unwrap();
        let sigmoid = |a: f64| 1.0 / (1.0 + (-a).exp());
        for i in 0..2 {
            let (x, h) = (x[[i, 0]], h[[i, 0]]);
            let z = sigmoid(x * 0.2 + h * 0.7 + 0.05);
            let r = sigmoid(x * -0.4 + h * 0.1 - 0.1);
            let candidate = (x * 0.9 + r * h * -0.6 + 0.2).tanh();
            let want = z * h + (1.0 - z) * candidate;
            assert_abs_diff_eq!(got[[i, 0]], want, epsilon = 1e-12);
        }
    }

    /// The update gate decides: a large bias b_z makes z ≈ 1 and keeps the old state; a very
    /// negative one makes z ≈ 0 and the state becomes the candidate `tanh(x W_h + (r ⊙ h) U_h +
    /// b_h)`. With every weight 0, z = r = ½ and ĥ = 0, so the state halves.
    #[test]
    fn the_update_gate_keeps_or_replaces_the_state() {
        let x = array![[1.0, -2.0], [0.5, 0.25]];
        let h = array![[0.4, -0.3, 0.9], [-0.7, 0.2, 0.1]];
        let (d_in, d_h) = (2, 3);
        let w = Array2::from_shape_fn((d_in, 3 * d_h), |(i, j)| 0.1 * (i + j) as f64 - 0.3);
        let u = Array2::from_shape_fn((d_h, 3 * d_h), |(i, j)| 0.05 * (i * j) as f64 - 0.2);
        let with_bias = |b_z: f64| {
            let b = Array2::from_shape_fn((1, 3 * d_h), |(_, j)| if j < d_h { b_z } else { 0.0 });
            gru_step(&x, &h, &w, &u, &b).unwrap()
        };
        assert_abs_diff_eq!(with_bias(50.0), h, epsilon = 1e-12);
        let replaced = with_bias(-50.0);
        assert!(replaced.iter().all(|v| v.abs() < 1.0), "a candidate is a tanh: {replaced}");
        let zero = |rows, cols| Array2::zeros((rows, cols));
        let halved = gru_step(&x, &h, &zero(d_in, 3 * d_h), &zero(d_h, 3 * d_h), &zero(1, 3 * d_h));
        assert_abs_diff_eq!(halved.unwrap(), &h / 2.0, epsilon = 1e-12);
    }

    /// Every shape is checked before any product: `h` must be `B × d_h` for the B rows of `x`,
    /// `W` `d_in × 3d_h`, `U` `d_h × 3d_h` and `b` `1 × 3d_h`. Return
    /// `AttnError::ShapesDiffer { what, left: its shape, right: the shape it needs }`, `what`
    /// being "h", "W", "U" or "b". A state that is not finite (a NaN input, or weights so large
    /// that a product overflows) is `AttnError::InvalidArgument`, never an `Ok`.
    #[test]
    fn shapes_that_disagree_are_errors() {
        let (x, h) = (Array2::zeros((2, 3)), Array2::zeros((2, 4)));
        let (w, u, b) = (Array2::zeros((3, 12)), Array2::zeros((4, 12)), Array2::zeros((1, 12)));
        assert!(gru_step(&x, &h, &w, &u, &b).is_ok());
        let name = |r: Result<Array2<f64>, AttnError>| match r {
            Err(AttnError::ShapesDiffer { what, .. }) => what,
            other => panic!("expected ShapesDiffer, got {other:?}"),
        };
        assert_eq!(name(gru_step(&x, &Array2::zeros((3, 4)), &w, &u, &b)), "h");
        assert_eq!(name(gru_step(&x, &h, &Array2::zeros((3, 9)), &u, &b)), "W");
        assert_eq!(name(gru_step(&x, &h, &w, &Array2::zeros((4, 9)), &b)), "U");
        assert_eq!(name(gru_step(&x, &h, &w, &u, &Array2::zeros((1, 9)))), "b");
        let nan = Array2::from_elem((2, 3), f64::NAN);
        assert!(matches!(gru_step(&nan, &h, &w, &u, &b), Err(AttnError::InvalidArgument { .. })));
        // x W overflows to +∞ and h U to −∞: their sum is NaN.
        let (x, h) = (Array2::from_elem((2, 3), 1e10), Array2::from_elem((2, 4), -1e10));
        let (w, u) = (Array2::from_elem((3, 12), 1e300), Array2::from_elem((4, 12), 1e300));
        assert!(matches!(gru_step(&x, &h, &w, &u, &b), Err(AttnError::InvalidArgument { .. })));
    }

    /// The share is the sum of the run's weights; rescale them by it to sum to 1, then take
    /// `−Σ p ln p` over the weights that are not 0 (0 ln 0 counts as 0). Even weights over L
    /// words give ln L, all the weight on one word gives 0.
    #[test]
    fn even_weights_give_ln_l_and_one_word_gives_zero() {
        let row = Array1::from(vec![0.1, 0.2, 0.2, 0.2, 0.2, 0.1]);
        let (share, entropy) = run_spread(row.view(), 1, 5).unwrap();
        assert_abs_diff_eq!(share, 0.8, epsilon = 1e-12);
        assert_abs_diff_eq!(entropy, 4f64.ln(), epsilon = 1e-12);
        let one = Array1::from(vec![0.0, 0.0, 0.7, 0.0, 0.3]);
        let (share, entropy) = run_spread(one.view(), 1, 4).unwrap();
        assert_eq!((share, entropy), (0.7, 0.0));
        // Rescaling: the weights inside the run count, not the rest.
        let uneven = Array1::from(vec![0.5, 0.25, 0.25]);
        let (_, entropy) = run_spread(uneven.view(), 1, 3).unwrap();
        assert_abs_diff_eq!(entropy, 2f64.ln(), epsilon = 1e-12);
    }

    /// A run that is empty (end ≤ start) or reaches past the row is an error naming "run's end";
    /// so is a run whose weights sum to 0 or to something not finite, naming "weight on the run":
    /// `AttnError::InvalidArgument { name, value, requirement }`.
    #[test]
    fn runs_outside_the_row_or_without_weight_are_errors() {
        let row = Array1::from(vec![0.0, 0.0, 0.5, 0.5]);
        let name = |r: Result<(f64, f64), AttnError>| match r {
            Err(AttnError::InvalidArgument { name, .. }) => name,
            other => panic!("expected InvalidArgument, got {other:?}"),
        };
        assert_eq!(name(run_spread(row.view(), 2, 2)), "run's end");
        assert_eq!(name(run_spread(row.view(), 3, 5)), "run's end");
        assert_eq!(name(run_spread(row.view(), 0, 2)), "weight on the run");
        let nan = Array1::from(vec![f64::NAN, 0.5]);
        assert_eq!(name(run_spread(nan.view(), 0, 2)), "weight on the run");
    }
}
