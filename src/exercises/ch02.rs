//! Chapter 2 exercises: softmax temperature, attention over a batch one
//! item at a time (the crate's own is
//! [`crate::attention::batched_attention`]), and the softmax's shift
//! invariance.

use ndarray::{Array1, Array3, ArrayRef1, ArrayRef3, Axis};

use crate::attention::scaled_dot_product_attention;
use crate::check::{check_total, MAX_ENTRIES};
use crate::error::AttnError;
use crate::softmax::softmax;

// ANCHOR: temperature
/// Exercise 1: softmax at temperature `τ`, `softmax(x / τ)`.
///
/// `τ → 0` approaches a hard lookup (all weight on the largest score);
/// `τ → ∞` approaches the uniform distribution. `τ` must be finite and `> 0`,
/// and large enough that `x / τ` stays finite.
pub fn softmax_with_temperature(x: &ArrayRef1<f32>, tau: f32) -> Result<Array1<f32>, AttnError> {
    if !(tau.is_finite() && tau > 0.0) {
        return Err(AttnError::InvalidArgument {
            name: "temperature",
            value: f64::from(tau),
            requirement: "must be finite and > 0",
        });
    }
    let scaled = x.mapv(|x_j| x_j / tau);
    if x.iter().zip(&scaled).any(|(a, b)| a.is_finite() && !b.is_finite()) {
        return Err(AttnError::InvalidArgument {
            name: "temperature",
            value: f64::from(tau),
            requirement: "is so small that x / τ overflows f32",
        });
    }
    softmax(&scaled)
}
// ANCHOR_END: temperature

// ANCHOR: per_item
/// Exercise 2: attention over a batch, one item at a time: output `i` is
/// `Attention(Q_i, K_i, V_i)`, for `Q`: `B×n×d_k`, `K`: `B×m×d_k` and `V`:
/// `B×m×d_v`; the result is `B×n×d_v`. The batch sizes must agree, and the
/// result must fit in memory.
pub fn attention_per_item(
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
    let shape = (b, q.len_of(Axis(1)), v.len_of(Axis(2)));
    check_total("the output (B×n×d_v)", &[shape.0, shape.1, shape.2], MAX_ENTRIES)?;
    let mut output = Array3::zeros(shape);
    for i in 0..b {
        let item = |x: &ArrayRef3<f32>| x.index_axis(Axis(0), i).to_owned();
        let attention = scaled_dot_product_attention(&item(q), &item(k), &item(v))?;
        output.index_axis_mut(Axis(0), i).assign(&attention.output);
    }
    Ok(output)
}
// ANCHOR_END: per_item

// ANCHOR: shift_gap
/// Exercise 3: the largest change a shift `c` of every score makes to the
/// softmax, `max_j |softmax(s + c)_j − softmax(s)_j|`: zero in exact
/// arithmetic, a rounding error in `f32`. `c` must be finite.
pub fn shift_gap(s: &ArrayRef1<f32>, c: f32) -> Result<f32, AttnError> {
    if !c.is_finite() {
        return Err(AttnError::InvalidArgument {
            name: "c",
            value: f64::from(c),
            requirement: "must be finite",
        });
    }
    let (shifted, plain) = (softmax(&s.mapv(|s_j| s_j + c))?, softmax(s)?);
    Ok(shifted.iter().zip(&plain).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max))
}
// ANCHOR_END: shift_gap

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attention::batched_attention;
    use crate::scaling::standard_normal;
    use ndarray::{array, Array3};
    use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

    /// τ = 1 must give exactly `softmax(x)`: divide every score by τ, then call the crate's
    /// `softmax`. τ = 0, a negative τ, NaN and ∞ are errors: return `AttnError::InvalidArgument {
    /// name, value, requirement }` with the τ you were given as `value` (as f64), so that the
    /// message shows it (the test looks for "-1").
    #[test]
    fn temperature_one_is_plain_softmax_and_limits_behave() {
        let x = array![2.0_f32, 0.0, 1.0, -1.0];
        assert_eq!(softmax_with_temperature(&x, 1.0).unwrap(), softmax(&x).unwrap());

        let cold = softmax_with_temperature(&x, 0.01).unwrap();
        assert!(cold[0] > 0.999_999, "τ → 0 puts all weight on the max");
        let hot = softmax_with_temperature(&x, 1.0e4).unwrap();
        assert!(hot.iter().all(|p| (p - 0.25).abs() < 1e-3), "τ → ∞ is uniform");

        for bad in [0.0, -1.0, f32::NAN, f32::INFINITY] {
            assert!(softmax_with_temperature(&x, bad).is_err(), "τ = {bad} must be an error");
        }
        // The error names what was passed; its wording is the writer's own
        // (a learner's answer need not call τ "temperature").
        let message = softmax_with_temperature(&x, -1.0).unwrap_err().to_string();
        assert!(message.contains("-1"), "{message}");
    }

    /// Take item i of Q, K and V (`index_axis(Axis(0), i)`), attend with the
    /// chapter's `scaled_dot_product_attention`, and write its output into item i
    /// of a B × n × d_v result. Batch sizes that differ are an error:
    /// `AttnError::BatchSizeMismatch { queries, keys, values }`.
    #[test]
    fn each_item_is_attended_on_its_own() {
        let mut rng = StdRng::seed_from_u64(2);
        let random = |b, rows, cols, rng: &mut StdRng| {
            let flat = standard_normal(b * rows, cols, rng);
            Array3::from_shape_vec((b, rows, cols), flat.into_iter().collect()).unwrap()
        };
        let (q, k, v) =
            (random(3, 4, 5, &mut rng), random(3, 6, 5, &mut rng), random(3, 6, 2, &mut rng));
        let ours = attention_per_item(&q, &k, &v).unwrap();
        assert_eq!(ours.dim(), (3, 4, 2), "B × n × d_v");
        assert_eq!(ours, batched_attention(&q, &k, &v).unwrap().output);
        let fewer_keys = random(2, 6, 5, &mut rng);
        assert!(attention_per_item(&q, &fewer_keys, &v).is_err(), "3 query items, 2 key items");
    }

    /// Shift every score by c (`mapv`), take the crate's `softmax` of the shifted
    /// and of the plain scores, and return the largest absolute difference of
    /// the two. c = 0 gives exactly 0; other shifts, up to ±100, a rounding
    /// error below 1e-5. A NaN or infinite c is an error.
    #[test]
    fn a_shift_changes_the_weights_by_rounding_only() {
        let s = array![2.1_f32, 0.3, 1.7, -1.3, 0.25];
        assert_eq!(shift_gap(&s, 0.0).unwrap(), 0.0, "c = 0");
        for c in [-99.9, -1.7, 0.55, 3.1, 99.9] {
            let gap = shift_gap(&s, c).unwrap();
            assert!(gap < 1e-5, "c = {c}: the weights moved by {gap}");
        }
        for bad in [f32::NAN, f32::INFINITY] {
            assert!(shift_gap(&s, bad).is_err(), "c = {bad} must be an error");
        }
    }
}
