//! Additive attention's gradients against finite differences.

use super::*;
use crate::grad::{gradient_error, normal_matrix, Matrix};
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

/// Three queries over five keys (the last two masked for the first query),
/// `d_q = 3`, `d_k = 2`, `d_a = 4`, `d_v = 2`; the loss is `Σ O ⊙ R`.
#[test]
fn additive_gradients_match_finite_differences() {
    let mut rng = StdRng::seed_from_u64(33);
    let mut m = |rows, cols| normal_matrix(rows, cols, &mut rng);
    let w = AdditiveWeights { a_q: m(3, 4), a_k: m(2, 4), u: m(4, 1) };
    let (q, k, v, r) = (m(3, 3), m(5, 2), m(5, 2), m(3, 2));
    let mut keep = Array2::from_elem((3, 5), true);
    keep[[0, 3]] = false;
    keep[[0, 4]] = false;
    let loss = |[q, k, v]: [&Matrix; 3], w: &AdditiveWeights<f64>| {
        let (out, _) = additive_forward([q, k, v], Some(&keep), w).unwrap();
        (out * &r).sum()
    };
    let (_, cache) = additive_forward([&q, &k, &v], Some(&keep), &w).unwrap();
    let ([dq, dk, dv], dw) = additive_backward(&cache, [&q, &k, &v], &w, &r).unwrap();
    let mut errors = vec![
        ("q", gradient_error(&dq, |x| loss([x, &k, &v], &w), &q)),
        ("k", gradient_error(&dk, |x| loss([&q, x, &v], &w), &k)),
        ("v", gradient_error(&dv, |x| loss([&q, &k, x], &w), &v)),
    ];
    for (i, dw_i) in dw.iter().enumerate() {
        let with = |x: &Matrix| {
            let mut w = w.clone();
            *w.matrices_mut()[i] = x.clone();
            loss([&q, &k, &v], &w)
        };
        let name = AdditiveWeights::<f64>::NAMES[i];
        errors.push((name, gradient_error(dw_i, with, w.matrices()[i])));
    }
    for (name, error) in errors {
        assert!(error < 1e-6, "d{name}: relative error {error:e}");
    }
    // The masked keys get no weight, and so no gradient from query 0.
    assert_eq!(cache.p[[0, 3]], 0.0);
    // Shapes that do not fit are refused by name.
    let refused = |r: Result<_, AttnError>| matches!(r, Err(AttnError::Mismatched { .. }));
    assert!(refused(additive_forward([&k, &k, &v], None, &w)));
    assert!(refused(additive_forward([&q, &k, &r], None, &w)));
    assert!(refused(additive_forward([&q, &k, &v], Some(&keep.t().to_owned()), &w)));
}
