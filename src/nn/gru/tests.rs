//! The GRU's gradients against finite differences.

use super::*;
use crate::grad::{gradient_error, normal_matrix, Matrix};
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

/// A GRU from `d_in` to `d_h`, weights of scale 0.5.
fn random_weights(d_in: usize, d_h: usize, rng: &mut StdRng) -> GruWeights<f64> {
    GruWeights {
        w: normal_matrix(d_in, 3 * d_h, rng) * 0.5,
        u: normal_matrix(d_h, 3 * d_h, rng) * 0.5,
        b: normal_matrix(1, 3 * d_h, rng) * 0.5,
    }
}

/// Three sequences of 5, 3 and 1 steps, `d_in = 3`, `d_h = 4`; the loss is
/// `Σ_t Σ h_t ⊙ R_t`, so each step's outside gradient is `R_t`.
#[test]
fn gru_gradients_match_finite_differences() {
    let mut rng = StdRng::seed_from_u64(29);
    let (b, t, d_in, d_h) = (3, 5, 3, 4);
    let lengths = [5, 3, 1];
    let w = random_weights(d_in, d_h, &mut rng);
    let xs: Vec<Matrix> = (0..t).map(|_| normal_matrix(b, d_in, &mut rng)).collect();
    let h0 = normal_matrix(b, d_h, &mut rng) * 0.5;
    let rs: Vec<Matrix> = (0..t).map(|_| normal_matrix(b, d_h, &mut rng)).collect();
    let loss = |xs: &[Matrix], h0: &Matrix, w: &GruWeights<f64>| {
        let (states, _) = gru_forward(xs, h0, &lengths, w).unwrap();
        states.iter().zip(&rs).map(|(h, r)| (h * r).sum()).sum::<f64>()
    };
    let (_, cache) = gru_forward(&xs, &h0, &lengths, &w).unwrap();
    let (dxs, dh0, dw) = gru_backward(&cache, &xs, &w, &rs);
    let mut errors = vec![("h0", gradient_error(&dh0, |h| loss(&xs, h, &w), &h0))];
    for step in 0..t {
        let with = |x: &Matrix| {
            let mut xs = xs.clone();
            xs[step] = x.clone();
            loss(&xs, &h0, &w)
        };
        errors.push(("x_t", gradient_error(&dxs[step], with, &xs[step])));
    }
    for (i, dw_i) in dw.iter().enumerate() {
        let with = |m: &Matrix| {
            let mut w = w.clone();
            *w.matrices_mut()[i] = m.clone();
            loss(&xs, &h0, &w)
        };
        let name = GruWeights::<f64>::NAMES[i];
        errors.push((name, gradient_error(dw_i, with, w.matrices()[i])));
    }
    for (name, error) in errors {
        assert!(error < 1e-6, "d{name}: relative error {error:e}");
    }
}

/// A sequence that has ended keeps its state, whatever the inputs after.
#[test]
fn an_ended_sequence_keeps_its_state() {
    let mut rng = StdRng::seed_from_u64(30);
    let w = random_weights(2, 3, &mut rng);
    let xs: Vec<Matrix> = (0..4).map(|_| normal_matrix(2, 2, &mut rng)).collect();
    let h0 = Matrix::zeros((2, 3));
    let (states, _) = gru_forward(&xs, &h0, &[4, 2], &w).unwrap();
    assert_eq!(states[1].row(1), states[3].row(1));
    assert_ne!(states[0].row(1), states[1].row(1), "its second step still counts");
    assert_ne!(states[1].row(0), states[3].row(0));
}

#[test]
fn shapes_that_do_not_fit_are_refused() {
    let mut rng = StdRng::seed_from_u64(31);
    let w = random_weights(2, 3, &mut rng);
    let xs = vec![Matrix::zeros((2, 2))];
    let h0 = Matrix::zeros((2, 3));
    let refused = |r: Result<_, AttnError>| matches!(r, Err(AttnError::Mismatched { .. }));
    assert!(refused(gru_forward(&xs, &h0, &[1], &w)));
    assert!(refused(gru_forward(&xs, &h0, &[1, 2], &w)));
    assert!(refused(gru_forward(&[Matrix::zeros((2, 5))], &h0, &[1, 1], &w)));
    assert!(refused(gru_forward(&xs, &Matrix::zeros((2, 4)), &[1, 1], &w)));
    assert!(gru_forward(&xs, &h0, &[1, 0], &w).is_ok());
}
