//! Chapter 1 exercises: softmax temperature and batched attention.

use ndarray::{Array1, Array3, ArrayRef1, ArrayRef3, Axis};

use crate::attention::scaled_dot_product_attention;
use crate::error::AttnError;
use crate::softmax::softmax;

// ANCHOR: temperature
/// Exercise 1: softmax at temperature `τ`, `softmax(x / τ)`.
///
/// `τ → 0` approaches a hard lookup (all weight on the largest score);
/// `τ → ∞` approaches the uniform distribution. `τ` must be finite and `> 0`.
pub fn softmax_with_temperature(x: &ArrayRef1<f32>, tau: f32) -> Result<Array1<f32>, AttnError> {
    if !(tau.is_finite() && tau > 0.0) {
        return Err(AttnError::InvalidArgument {
            name: "temperature",
            value: tau,
            requirement: "must be finite and > 0",
        });
    }
    Ok(softmax(&x.mapv(|x_j| x_j / tau)))
}
// ANCHOR_END: temperature

// ANCHOR: batched
/// Exercise 2: attention over a batch of `b` independent problems.
///
/// `Q`: `b×n×d_k`, `K`: `b×m×d_k`, `V`: `b×m×d_v` → output `b×n×d_v`.
/// Each batch item is attended on its own with the 2-D function.
pub fn batched_attention(
    q: &ArrayRef3<f32>,
    k: &ArrayRef3<f32>,
    v: &ArrayRef3<f32>,
) -> Result<Array3<f32>, AttnError> {
    let b = q.len_of(Axis(0));
    if k.len_of(Axis(0)) != b || v.len_of(Axis(0)) != b {
        return Err(AttnError::BatchSizeMismatch {
            queries: b,
            keys: k.len_of(Axis(0)),
            values: v.len_of(Axis(0)),
        });
    }
    let (n, d_v) = (q.len_of(Axis(1)), v.len_of(Axis(2)));
    let mut output = Array3::zeros((b, n, d_v));
    for i in 0..b {
        let a = scaled_dot_product_attention(
            &q.index_axis(Axis(0), i),
            &k.index_axis(Axis(0), i),
            &v.index_axis(Axis(0), i),
        )?;
        output.index_axis_mut(Axis(0), i).assign(&a.output);
    }
    Ok(output)
}
// ANCHOR_END: batched

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attention::worked_example;
    use ndarray::{array, stack};

    #[test]
    fn temperature_one_is_plain_softmax_and_limits_behave() {
        let x = array![2.0_f32, 0.0, 1.0, -1.0];
        assert_eq!(softmax_with_temperature(&x, 1.0).unwrap(), softmax(&x));

        let cold = softmax_with_temperature(&x, 0.01).unwrap();
        assert!(cold[0] > 0.999_999, "τ → 0 puts all weight on the max");
        let hot = softmax_with_temperature(&x, 1.0e4).unwrap();
        assert!(
            hot.iter().all(|p| (p - 0.25).abs() < 1e-3),
            "τ → ∞ is uniform"
        );

        for bad in [0.0, -1.0, f32::NAN, f32::INFINITY] {
            assert!(softmax_with_temperature(&x, bad).is_err());
        }
        assert_eq!(
            softmax_with_temperature(&x, -1.0).unwrap_err().to_string(),
            "temperature must be finite and > 0, got -1"
        );
    }

    #[test]
    fn batched_attention_equals_one_call_per_item() {
        let (q, k, v) = worked_example();
        let q2 = q.mapv(|x| -0.5 * x + 1.0); // a second, different problem
        let qb = stack![Axis(0), q, q2];
        let kb = stack![Axis(0), k, k];
        let vb = stack![Axis(0), v, v];
        let out = batched_attention(&qb, &kb, &vb).unwrap();
        assert_eq!(out.dim(), (2, 3, 2));
        let first = scaled_dot_product_attention(&q, &k, &v).unwrap().output;
        let second = scaled_dot_product_attention(&q2, &k, &v).unwrap().output;
        assert_eq!(out.index_axis(Axis(0), 0), first);
        assert_eq!(out.index_axis(Axis(0), 1), second);

        let err = batched_attention(&qb, &kb, &vb.slice(ndarray::s![..1, .., ..])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "batch sizes differ: queries 2, keys 2, values 1"
        );
    }
}
