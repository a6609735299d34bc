//! Latent attention's gradients against finite differences.

use super::*;
use crate::grad::{gradient_error, normal_matrix, Matrix};
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

/// A layer of `heads` heads of width `d_h`, latent `d_c`, rotary `d_r`.
pub(crate) fn random_weights(
    d: usize,
    heads: usize,
    [d_h, d_c, d_r]: [usize; 3],
    rng: &mut StdRng,
) -> LatentWeights<f64> {
    let mut w = |rows, cols| normal_matrix(rows, cols, rng) * 0.5;
    LatentWeights {
        w_q: w(d, heads * d_h),
        w_qr: w(d, heads * d_r),
        w_dkv: w(d, d_c),
        w_kr: w(d, d_r),
        w_uk: w(d_c, heads * d_h),
        w_uv: w(d_c, heads * d_h),
        w_o: w(heads * d_h, d),
    }
}

/// Two causal sequences of 4 tokens, `d = 6`, 2 heads of 3, a latent of 4
/// and rotary parts of 2. The loss is `Σ out ⊙ R`, so `dOut = R`.
#[test]
fn latent_gradients_match_finite_differences() {
    let mut rng = StdRng::seed_from_u64(31);
    let (d, t) = (6, 4);
    let w = random_weights(d, 2, [3, 4, 2], &mut rng);
    let x = normal_matrix(2 * t, d, &mut rng);
    let r = normal_matrix(2 * t, d, &mut rng);
    let causal = |_: usize| Some(crate::masking::causal_mask(t, t));
    let loss = |x: &Matrix, w: &LatentWeights<f64>| {
        let (out, _) = latent_forward(x, w, t, causal).unwrap();
        (out * &r).sum()
    };
    let (_, cache) = latent_forward(&x, &w, t, causal).unwrap();
    let (dx, dw) = latent_backward(&cache, &x, &w, t, &r).unwrap();
    let mut errors = vec![("x", gradient_error(&dx, |x| loss(x, &w), &x))];
    for i in 0..7 {
        let with = |m: &Matrix| {
            let mut w = w.clone();
            *w.matrices_mut()[i] = m.clone();
            loss(&x, &w)
        };
        let name = LatentWeights::<f64>::NAMES[i];
        errors.push((name, gradient_error(dw.matrices()[i], with, w.matrices()[i])));
    }
    for (name, error) in errors {
        assert!(error < 1e-6, "d{name}: relative error {error:e}");
    }
}
