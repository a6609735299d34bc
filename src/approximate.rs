//! Two cheaper, approximate attentions, and what they give up.
//!
//! - **Local (sliding-window) attention**: query `i` sees only the last `w`
//!   keys, `i − w + 1 ..= i`. Exact within the window, blind beyond it.
//!   Cost `O(n·w·d)` instead of `O(n²·d)`.
//! - **Linear attention** (Katharopoulos et al., 2020): replace
//!   `exp(q·k)` by `φ(q)·φ(k)` for a positive feature map `φ`; the sums
//!   over keys can then be computed once, `Σ_j φ(k_j) v_jᵀ`, in `O(n·d²)`.
//!   It is a different attention, not an approximation that improves with
//!   more compute.

use ndarray::{s, Array1, Array2, ArrayRef2, Axis};

use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

use crate::attention::check_qkv;
use crate::check::{check_not_empty, check_overflow, check_size};
use crate::error::AttnError;
use crate::linalg::matmul;
use crate::masking::{causal_mask, masked_attention, window_mask};
use crate::position::sinusoidal;
use crate::scaling::standard_normal;

// ANCHOR: local
/// Causal sliding-window attention: query `i` attends to keys
/// `max(0, i + 1 − w) ..= i`, with the usual scaled softmax. Queries are
/// processed in blocks of `w`, each against the `2w − 1` keys it can reach,
/// so the cost is `O(n·w·d)`. Requires `n = m` and `w ≥ 1`.
pub fn local_attention(
    q: &ArrayRef2<f32>,
    k: &ArrayRef2<f32>,
    v: &ArrayRef2<f32>,
    w: usize,
) -> Result<Array2<f32>, AttnError> {
    check_self_attention(q, k, v)?;
    if w == 0 {
        return Err(AttnError::InvalidArgument {
            name: "window",
            value: 0.0,
            requirement: "must be at least 1 (a token always sees itself)",
        });
    }
    let n = q.nrows();
    let mut output = Array2::zeros((n, v.ncols()));
    for i0 in (0..n).step_by(w) {
        let i1 = (i0 + w).min(n);
        let j0 = (i0 + 1).saturating_sub(w); // the first key query i0 may see
        let keep = window_mask(i0..i1, j0..i1, 0, w)?; // keys i − w + 1 ..= i
        let keys = s![j0..i1, ..];
        let a = masked_attention(&q.slice(s![i0..i1, ..]), &k.slice(keys), &v.slice(keys), &keep)?;
        output.slice_mut(s![i0..i1, ..]).assign(&a.output);
    }
    Ok(output)
}
// ANCHOR_END: local

// ANCHOR: linear
/// The feature map of linear attention, `φ(x) = elu(x) + 1`: `x + 1` for
/// `x > 0` and `eˣ` otherwise. Always positive, so the normaliser below is
/// never 0.
pub fn elu_plus_one(x: f32) -> f32 {
    if x > 0.0 {
        x + 1.0
    } else {
        x.exp()
    }
}

/// Non-causal linear attention: `out_i = φ(q_i)ᵀ U / φ(q_i)ᵀ z` with
/// `U = Σ_j φ(k_j) v_jᵀ` (`d_k×d_v`) and `z = Σ_j φ(k_j)` (`d_k`), both
/// computed once for all queries. Cost `O((n + m)·d_k·d_v)`.
pub fn linear_attention(
    q: &ArrayRef2<f32>,
    k: &ArrayRef2<f32>,
    v: &ArrayRef2<f32>,
) -> Result<Array2<f32>, AttnError> {
    check_qkv(q, k, v)?;
    let (phi_q, phi_k) = (q.mapv(elu_plus_one), k.mapv(elu_plus_one));
    let u = matmul(&phi_k.t(), v); // d_k×d_v
    let z = phi_k.sum_axis(Axis(0)); // d_k
    let numerator = matmul(&phi_q, &u); // n×d_v
    let denominator = phi_q.dot(&z); // n
    denominator.iter().try_for_each(|&d| check_normaliser(d))?;
    let output = numerator / denominator.insert_axis(Axis(1));
    check_overflow("linear attention's output", &output)?;
    Ok(output)
}

// ANCHOR_END: linear

// ANCHOR: causal_linear
/// Causal linear attention: the same with prefix sums, `U_i = Σ_{j≤i}
/// φ(k_j) v_jᵀ` and `z_i = Σ_{j≤i} φ(k_j)`, updated once per token like a
/// recurrent network's state. Cost `O(n·d_k·d_v)`; requires `n = m`.
pub fn causal_linear_attention(
    q: &ArrayRef2<f32>,
    k: &ArrayRef2<f32>,
    v: &ArrayRef2<f32>,
) -> Result<Array2<f32>, AttnError> {
    check_self_attention(q, k, v)?;
    let (phi_q, phi_k) = (q.mapv(elu_plus_one), k.mapv(elu_plus_one));
    let mut u = Array2::<f32>::zeros((q.ncols(), v.ncols())); // the state U_i
    let mut z = Array1::<f32>::zeros(q.ncols()); // the normaliser z_i
    let mut output = Array2::zeros((q.nrows(), v.ncols()));
    for i in 0..q.nrows() {
        let (phi_k_i, v_i) = (phi_k.row(i), v.row(i));
        for (mut u_row, &phi) in u.rows_mut().into_iter().zip(&phi_k_i) {
            u_row.scaled_add(phi, &v_i); // U += φ(k_i) v_iᵀ
        }
        z += &phi_k_i;
        let phi_q_i = phi_q.row(i);
        let normaliser = phi_q_i.dot(&z);
        check_normaliser(normaliser)?;
        output.row_mut(i).assign(&(phi_q_i.dot(&u) / normaliser));
    }
    check_overflow("linear attention's output", &output)?;
    Ok(output)
}
// ANCHOR_END: causal_linear

/// φ is positive, so the normaliser `φ(q_i)·z` is too, unless `f32`
/// underflows (entries far below 0, where `eˣ` rounds to 0) or overflows.
fn check_normaliser(d: f32) -> Result<(), AttnError> {
    if d > 0.0 && d.is_finite() {
        return Ok(());
    }
    Err(AttnError::InvalidArgument {
        name: "linear attention's normaliser φ(q_i)·z",
        value: f64::from(d),
        requirement: "must be positive and finite (entries of Q or K far below 0 make it \
                      underflow to 0, huge ones overflow)",
    })
}

/// Checks `Q`, `K`, `V` as [`check_qkv`] does, and that there is one key
/// per query (self-attention), as a causal method needs.
fn check_self_attention(
    q: &ArrayRef2<f32>,
    k: &ArrayRef2<f32>,
    v: &ArrayRef2<f32>,
) -> Result<(), AttnError> {
    check_qkv(q, k, v)?;
    if q.nrows() != k.nrows() {
        return Err(AttnError::NotSelfAttention { queries: q.nrows(), keys: k.nrows() });
    }
    Ok(())
}

/// The relative error `‖Ô − O‖ / ‖O‖` (Frobenius norms) of an approximation
/// `Ô` of the exact output `O`; the two must have the same shape.
pub fn relative_error(approx: &ArrayRef2<f32>, exact: &ArrayRef2<f32>) -> Result<f64, AttnError> {
    if approx.dim() != exact.dim() {
        return Err(AttnError::ShapesDiffer {
            what: "the approximation and the exact output",
            left: approx.dim(),
            right: exact.dim(),
        });
    }
    let norm = |x: &ArrayRef2<f32>| x.iter().map(|&a| (a as f64).powi(2)).sum::<f64>().sqrt();
    let (difference, reference) = (norm(&(approx - exact)), norm(exact));
    if !(reference > 0.0 && reference.is_finite() && difference.is_finite()) {
        return Err(AttnError::InvalidArgument {
            name: "the exact output's norm",
            value: reference,
            requirement: "must be finite and > 0, and the approximation finite, for a relative \
                          error",
        });
    }
    Ok(difference / reference)
}

/// An approximate attention with `V` fixed: `(Q, K) ↦ output`.
type Approximation<'a> = dyn Fn(&Array2<f32>, &Array2<f32>) -> Result<Array2<f32>, AttnError> + 'a;

/// The windows the error experiment tries.
pub const WINDOWS: [usize; 6] = [16, 32, 64, 128, 256, 512];

/// One row of the error experiment: a method and its relative error against
/// exact causal attention on two kinds of input.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorRow {
    /// `"local, w = 64"` or `"linear (elu + 1)"`.
    pub method: String,
    /// On random queries and keys: no structure to exploit.
    pub random: f64,
    /// On queries and keys that prefer nearby positions.
    pub local: f64,
}

impl ErrorRow {
    /// A method's row from its errors `[random, local]`.
    fn of(method: String, [random, local]: [f64; 2]) -> Self {
        ErrorRow { method, random, local }
    }
}

// ANCHOR: error_experiment
/// Relative errors of local attention (each window in [`WINDOWS`]) and of
/// causal linear attention against exact causal attention, for `n` tokens
/// of width 64, on random queries and keys and on `Q = K = 2·PE` (chapter
/// 7's encoding), whose scores fall with distance.
pub fn error_experiment(n: usize, seed: u64) -> Result<Vec<ErrorRow>, AttnError> {
    let d = 64;
    check_not_empty("the experiment's tokens (n×64)", (n, d))?;
    check_size("the experiment's causal mask", n, n)?;
    let mut rng = StdRng::seed_from_u64(seed);
    let v = standard_normal(n, d, &mut rng);
    let (q, k) = (standard_normal(n, d, &mut rng), standard_normal(n, d, &mut rng));
    let random = (q, k);
    let pe = sinusoidal(n, d)? * 2.0;
    let positional = (pe.clone(), pe);
    let errors = |approximate: &Approximation| -> Result<[f64; 2], AttnError> {
        let mut out = [0.0; 2];
        for (error, (q, k)) in out.iter_mut().zip([&random, &positional]) {
            let exact = masked_attention(q, k, &v, &causal_mask(n, n))?;
            *error = relative_error(&approximate(q, k)?, &exact.output)?;
        }
        Ok(out)
    };
    let mut rows = Vec::new();
    for w in WINDOWS {
        let local = errors(&|q, k| local_attention(q, k, &v, w))?;
        rows.push(ErrorRow::of(format!("local, w = {w}"), local));
    }
    let linear = errors(&|q, k| causal_linear_attention(q, k, &v))?;
    rows.push(ErrorRow::of("linear (elu + 1)".into(), linear));
    Ok(rows)
}
// ANCHOR_END: error_experiment

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_abs_diff_eq;

    fn qkv(n: usize, seed: u64) -> (Array2<f32>, Array2<f32>, Array2<f32>) {
        let mut rng = StdRng::seed_from_u64(seed);
        let q = standard_normal(n, 16, &mut rng);
        let k = standard_normal(n, 16, &mut rng);
        (q, k, standard_normal(n, 8, &mut rng))
    }

    #[test]
    fn local_attention_is_masked_attention_with_a_window_mask() {
        for (n, w) in [(1, 1), (10, 1), (10, 3), (37, 8), (64, 64), (100, 7)] {
            let (q, k, v) = qkv(n, n as u64);
            // Query i sees keys i − w + 1 to i (written out here, an
            // independent reference for the crate's masks).
            let keep = Array2::from_shape_fn((n, n), |(i, j)| j <= i && i - j < w);
            let expected = masked_attention(&q, &k, &v, &keep).unwrap().output;
            let got = local_attention(&q, &k, &v, w).unwrap();
            assert_abs_diff_eq!(got, expected, epsilon = 1e-6);
        }
        // A window as long as the sequence is full causal attention.
        let (q, k, v) = qkv(50, 1);
        let causal = masked_attention(&q, &k, &v, &causal_mask(50, 50)).unwrap().output;
        let local = local_attention(&q, &k, &v, 50).unwrap();
        assert_abs_diff_eq!(local, causal, epsilon = 1e-6);
        assert!(relative_error(&local, &causal).unwrap() < 1e-6);
        let err = relative_error(&local, &causal.t()).unwrap_err();
        assert!(err.to_string().ends_with("must have the same shape, but they are 50×8 and 8×50"));
    }

    /// Linear attention written the quadratic way: weights `φ(q_i)·φ(k_j)`,
    /// normalised per row, with an optional causal mask.
    fn quadratic_form(
        q: &Array2<f32>,
        k: &Array2<f32>,
        v: &Array2<f32>,
        causal: bool,
    ) -> Array2<f32> {
        let mut w = q.mapv(elu_plus_one).dot(&k.mapv(elu_plus_one).t());
        for ((i, j), w_ij) in w.indexed_iter_mut() {
            if causal && j > i {
                *w_ij = 0.0;
            }
        }
        let sums = w.sum_axis(Axis(1)).insert_axis(Axis(1));
        (w / sums).dot(v)
    }

    #[test]
    fn linear_attention_equals_its_quadratic_form() {
        let (q, k, v) = qkv(40, 3);
        assert_abs_diff_eq!(
            linear_attention(&q, &k, &v).unwrap(),
            quadratic_form(&q, &k, &v, false),
            epsilon = 1e-5
        );
        assert_abs_diff_eq!(
            causal_linear_attention(&q, &k, &v).unwrap(),
            quadratic_form(&q, &k, &v, true),
            epsilon = 1e-5
        );
    }

    #[test]
    fn arguments_are_checked() {
        let (q, k, v) = qkv(5, 4);
        assert!(local_attention(&q, &k, &v, 0).is_err());
        let err =
            causal_linear_attention(&q, &k.slice(s![..3, ..]), &v.slice(s![..3, ..])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "causal attention needs one key per query, but there are 5 queries and 3 keys"
        );
    }
}
