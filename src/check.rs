//! The checks every public function runs on what it is given, each
//! returning the [`AttnError`] that names the argument: shapes that are
//! empty or do not fit, sizes beyond memory, numbers that are not finite,
//! results that overflowed. The public ones are for a reader's own
//! functions too (the exercises' solutions use them).

use crate::error::{AttnError, Shape};

/// Checks that `x`, computed from finite inputs, is finite: an entry that is
/// not means `f32` overflowed on the way.
pub fn check_overflow<F: crate::real::Real>(
    what: &'static str,
    x: &ndarray::ArrayRef2<F>,
) -> Result<(), AttnError> {
    check_overflow_at(what, x, (0, 0))
}

/// [`check_overflow`] for a block of a larger matrix whose first entry is at
/// `offset`: the error names the entry's position in the whole.
pub(crate) fn check_overflow_at<F: crate::real::Real>(
    what: &'static str,
    x: &ndarray::ArrayRef2<F>,
    offset: (usize, usize),
) -> Result<(), AttnError> {
    if all_finite(x) {
        return Ok(()); // the position is looked for only on failure
    }
    match x.indexed_iter().find(|(_, v)| !v.is_finite()) {
        Some(((i, j), &value)) => Err(AttnError::Overflow {
            what,
            position: (offset.0 + i, offset.1 + j),
            value: value.wide() as f32,
        }),
        None => Ok(()),
    }
}

/// Whether every entry of `x` is finite: one branch-free pass, which the
/// compiler vectorises (a search that stops at the first bad entry would
/// not be).
fn all_finite<F: crate::real::Real>(x: &ndarray::ArrayRef2<F>) -> bool {
    match x.as_slice_memory_order() {
        Some(all) => all.iter().fold(true, |ok, v| ok & v.is_finite()),
        None => x.iter().fold(true, |ok, v| ok & v.is_finite()),
    }
}

/// The most entries a matrix the crate builds from sizes alone may have:
/// 2^30, 4 GiB of `f32`. A larger request is an error rather than an
/// allocation failure, which would abort the process.
pub const MAX_ENTRIES: usize = 1 << 30;

/// The most parameters a model the crate builds from a configuration may
/// have: 2^27, 1 GiB of `f64` (and as much again for each of the gradient
/// and Adam's two moments).
pub const MAX_PARAMETERS: usize = 1 << 27;

/// Checks that an array of shape `sizes` has at most `limit` entries (their
/// product, computed without overflow), and each size too; returns the
/// count. Every function that allocates from its caller's sizes checks
/// them here, as a whole: each size can be reasonable and their product
/// not, and a product of zero can hide a size that is not (`count` empty
/// rows are still `count` allocations).
pub fn check_total(what: &'static str, sizes: &[usize], limit: usize) -> Result<usize, AttnError> {
    let product = sizes.iter().try_fold(1_usize, |p, &s| p.checked_mul(s));
    match product {
        Some(total) if total <= limit && sizes.iter().all(|&s| s <= limit) => Ok(total),
        _ => Err(AttnError::TooLarge { what, sizes: sizes.to_vec(), limit }),
    }
}

/// Checks a model's parameter count (`None`: it does not even fit a
/// `usize`) against [`MAX_PARAMETERS`]; the error names the count, or the
/// configuration's `[layers, d_model, d_ff]` when there is none.
pub(crate) fn check_parameters(count: Option<usize>, sizes: [usize; 3]) -> Result<(), AttnError> {
    let what = "the model's parameters";
    match count {
        Some(count) => check_total(what, &[count], MAX_PARAMETERS).map(|_| ()),
        None => Err(AttnError::TooLarge { what, sizes: sizes.to_vec(), limit: MAX_PARAMETERS }),
    }
}

/// Checks that a `rows×cols` matrix to be built has at most [`MAX_ENTRIES`].
pub fn check_size(name: &'static str, rows: usize, cols: usize) -> Result<(), AttnError> {
    check_total(name, &[rows, cols], MAX_ENTRIES).map(|_| ())
}

/// Checks that an input has at least one row and one column.
pub fn check_not_empty(name: &'static str, s: Shape) -> Result<(), AttnError> {
    if s.0 == 0 || s.1 == 0 {
        return Err(AttnError::Empty { name, shape: s });
    }
    Ok(())
}

/// Checks that token vectors `x` are non-empty, `d_model` wide and finite.
pub fn check_model_width(
    name: &'static str,
    x: &ndarray::ArrayRef2<f32>,
    d_model: usize,
) -> Result<(), AttnError> {
    let s = x.dim();
    check_not_empty(name, s)?;
    if s.1 != d_model {
        return Err(AttnError::ModelWidthMismatch { name, d_model, shape: s });
    }
    check_finite(name, x)
}

/// Checks that an input holds only finite numbers.
pub fn check_finite<F: crate::real::Real>(
    name: &'static str,
    x: &ndarray::ArrayRef2<F>,
) -> Result<(), AttnError> {
    if all_finite(x) {
        return Ok(()); // the entry is looked for only on failure
    }
    match x.iter().find(|v| !v.is_finite()) {
        Some(&bad) => Err(AttnError::InvalidArgument {
            name,
            value: bad.wide(),
            requirement: "must hold only finite numbers",
        }),
        None => Ok(()),
    }
}

/// Checks a model's sizes: each at least 1, and `heads` dividing
/// `d_model` evenly (each `(name, size)` named in the error).
pub(crate) fn check_model_sizes(
    sizes: &[(&'static str, usize)],
    (d_model, heads): (usize, usize),
) -> Result<(), AttnError> {
    check_nonzero(sizes)?;
    if !d_model.is_multiple_of(heads) {
        return Err(AttnError::HeadsDoNotDivide { d_model, h: heads });
    }
    Ok(())
}

/// Checks that every `(name, size)` is at least 1: a size of 0 would give an
/// empty result that looks like an answer.
pub fn check_nonzero(sizes: &[(&'static str, usize)]) -> Result<(), AttnError> {
    match sizes.iter().find(|(_, size)| *size == 0) {
        Some(&(name, _)) => {
            Err(AttnError::InvalidArgument { name, value: 0.0, requirement: "must be at least 1" })
        }
        None => Ok(()),
    }
}

/// Every `(name, size)` from 1 to 4096: the sizes of a model's
/// configuration.
pub(crate) fn check_config_sizes(sizes: &[(&'static str, usize)]) -> Result<(), AttnError> {
    match sizes.iter().find(|&&(_, size)| size == 0 || size > 4096) {
        Some(&(name, size)) => Err(AttnError::InvalidArgument {
            name,
            value: size as f64,
            requirement: "must be from 1 to 4096",
        }),
        None => Ok(()),
    }
}

/// Checks that each `(name, index, count)` has `index < count`; the error
/// names the first index that does not, with `requirement` (less than
/// what).
pub(crate) fn check_indices(
    indices: &[(&'static str, usize, usize)],
    requirement: &'static str,
) -> Result<(), AttnError> {
    match indices.iter().find(|(_, index, count)| index >= count) {
        Some(&(name, index, _)) => {
            Err(AttnError::InvalidArgument { name, value: index as f64, requirement })
        }
        None => Ok(()),
    }
}

/// Checks that `got` has the shape `want`; the error names `what` and both.
pub(crate) fn check_shape(what: &'static str, got: Shape, want: Shape) -> Result<(), AttnError> {
    if got == want {
        return Ok(());
    }
    Err(AttnError::ShapesDiffer { what, left: got, right: want })
}

/// Checks that a scale, a rate or a width `value`, named `name`, is finite
/// and positive.
pub fn check_positive(name: &'static str, value: f64) -> Result<(), AttnError> {
    if value.is_finite() && value > 0.0 {
        return Ok(());
    }
    Err(AttnError::InvalidArgument { name, value, requirement: "must be finite and > 0" })
}
