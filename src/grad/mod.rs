//! Checking backward passes (chapter 11): central finite differences, the
//! relative error between two gradients, and the chapter's experiments. The
//! backward passes themselves are the training stack's, in [`crate::nn`];
//! the checks run them in `f64`, whose precision finite differences need.

use ndarray::{Array2, ArrayRef2};
use ndarray_rand::rand::rngs::StdRng;

use crate::check::check_finite;
use crate::error::AttnError;
pub(crate) use crate::linalg::{linear, linear_backward};
pub(crate) use crate::nn::{
    attention_backward, attention_forward, cross_entropy, ffn_backward, ffn_forward,
    layer_norm_backward, layer_norm_forward, softmax_backward, Activation, FfnWeights,
};

/// A matrix of `f64`.
pub type Matrix = Array2<f64>;

// ANCHOR: numerical_gradient
/// The gradient of `f` at `x` by central differences,
/// `(f(x + δ·e_ij) − f(x − δ·e_ij)) / 2δ`, one entry at a time. Its error is
/// `O(δ²)` plus rounding of order `ε_f64 / δ`; `δ = 1e-5` balances them.
pub(crate) fn numerical_gradient(
    f: impl Fn(&Matrix) -> f64,
    x: &ArrayRef2<f64>,
    delta: f64,
) -> Matrix {
    let mut x = x.to_owned();
    let mut grad = Matrix::zeros(x.dim());
    for idx in 0..x.len() {
        let (i, j) = (idx / x.ncols(), idx % x.ncols());
        let original = x[[i, j]];
        x[[i, j]] = original + delta;
        let plus = f(&x);
        x[[i, j]] = original - delta;
        let minus = f(&x);
        x[[i, j]] = original;
        grad[[i, j]] = (plus - minus) / (2.0 * delta);
    }
    grad
}

/// How far apart two gradients are, relative to their size:
/// `max |a − b| / max(max |a|, max |b|)`. Entry-by-entry relative errors
/// would blow up on entries that are nearly 0 in both; this does not.
pub(crate) fn max_relative_error(a: &ArrayRef2<f64>, b: &ArrayRef2<f64>) -> f64 {
    let largest = |x: &ArrayRef2<f64>| x.fold(0.0_f64, |m, &v| m.max(v.abs()));
    let difference = a.iter().zip(b.iter()).fold(0.0_f64, |m, (&x, &y)| m.max((x - y).abs()));
    difference / largest(a).max(largest(b)).max(1e-300)
}

// ANCHOR_END: numerical_gradient

// ANCHOR: check_gradient
/// The step `δ` of the central differences every gradient check uses.
pub const STEP: f64 = 1e-5;

/// How far an analytic gradient is from the central differences of `f` at
/// `x` (step [`STEP`]), in the sense of [`max_relative_error`].
pub(crate) fn gradient_error(
    analytic: &ArrayRef2<f64>,
    f: impl Fn(&Matrix) -> f64,
    x: &ArrayRef2<f64>,
) -> f64 {
    max_relative_error(analytic, &numerical_gradient(f, x, STEP))
}

/// The largest relative error between `analytic` and the central
/// differences of `f` at `x` (step [`STEP`]), for code outside the crate
/// (chapter 11's exercises check their backward passes with it); an error if the shapes
/// differ, or if `x`, `analytic` or `f` near `x` is not finite.
pub fn check_gradient(
    analytic: &ArrayRef2<f64>,
    f: impl Fn(&Matrix) -> f64,
    x: &ArrayRef2<f64>,
) -> Result<f64, AttnError> {
    check_point(analytic, x)?;
    let numerical = numerical_gradient(&f, x, STEP);
    let error = max_relative_error(analytic, &numerical);
    check_near(f(&x.to_owned()), &numerical, error)?;
    Ok(error)
}

// ANCHOR_END: check_gradient

/// [`check_gradient`]'s point: `x` and `analytic` of one shape, finite.
fn check_point(analytic: &ArrayRef2<f64>, x: &ArrayRef2<f64>) -> Result<(), AttnError> {
    if analytic.dim() != x.dim() {
        return Err(AttnError::ShapesDiffer {
            what: "the analytic gradient and the point x",
            left: analytic.dim(),
            right: x.dim(),
        });
    }
    check_finite("x", x)?;
    check_finite("the analytic gradient", analytic)
}

/// [`check_gradient`]'s `f` at `x`, every central difference (a NaN of
/// `f` at one `x ± δ` makes one NaN entry, which a largest error taken
/// with `max` would skip) and the error: all finite.
fn check_near(at_x: f64, numerical: &ArrayRef2<f64>, error: f64) -> Result<(), AttnError> {
    let requirement = "must be finite";
    if !at_x.is_finite() {
        return Err(AttnError::InvalidArgument { name: "f at x", value: at_x, requirement });
    }
    check_finite("f near x (its central differences)", numerical)?;
    match error.is_finite() {
        true => Ok(()),
        false => Err(AttnError::InvalidArgument {
            name: "the relative error",
            value: error,
            requirement,
        }),
    }
}

/// The largest of several errors.
fn worst(errors: impl IntoIterator<Item = f64>) -> f64 {
    errors.into_iter().fold(0.0, f64::max)
}

/// Seeded `N(0, 1)` entries in `f64`.
pub(crate) fn normal_matrix(rows: usize, cols: usize, rng: &mut StdRng) -> Matrix {
    use ndarray_rand::rand_distr::StandardNormal;
    use ndarray_rand::RandomExt;
    Matrix::random_using((rows, cols), StandardNormal, rng)
}

/// Seeded `N(0, std²)` entries, drawn in `f64` and rounded to `F`, so that
/// an `f32` and an `f64` model of one seed hold the same numbers.
pub(crate) fn normal_weights<F: crate::real::Real>(
    rng: &mut StdRng,
    rows: usize,
    cols: usize,
    std: f64,
) -> ndarray::Array2<F> {
    (normal_matrix(rows, cols, rng) * std).mapv(F::of)
}

mod checks;
pub use checks::*;

#[cfg(test)]
mod tests;
