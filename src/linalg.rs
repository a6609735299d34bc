//! The matrix product at the bottom of the crate: every product of every
//! layer, in `f32` or `f64`, through the `gemm` crate (or, built with the
//! `blas` feature, the system's OpenBLAS), and the tiles of the appendix
//! "Making it fast". The appendix measured `gemm` faster than ndarray's
//! own products on the tiles' shapes; on the training stack's shapes it is
//! as fast on one thread and splits large products over the threads of
//! the pool.

use gemm::Parallelism;
use ndarray::{Array1, Array2, ArrayRef2, ArrayView2, ArrayViewMut2, Axis};
use rayon::prelude::*;

use crate::check::{check_finite, check_overflow, check_size};
use crate::error::AttnError;
use crate::real::Real;

/// Multiply-adds (`m·k·n`) from which [`matmul`] splits a product over the
/// pool's threads: below it, starting the threads costs more than they
/// save (measured on 2 cores: 2.3× faster at 4096×384×384, 2.3× slower at
/// 256×64×64, even at 1024×128×512).
const PARALLEL_FROM: usize = 1 << 27;

/// Multiply-adds from which [`matmul`], below [`PARALLEL_FROM`], gives each
/// of the pool's threads its own band of rows, each band one product on
/// one thread: the training stack's products (768×128×128 for chapter 16's
/// model) are too small for `gemm`'s own threads but large enough for this.
/// Each entry of the result is the same sum in the same order, so the bits
/// do not depend on the number of threads.
const BANDS_FROM: usize = 1 << 20;

/// `c ← a·b`, or `c ← c + a·b` with `accumulate`, through the `gemm`
/// crate, which this appendix measured faster than ndarray's products on
/// the tiles' shapes (an inner dimension of only `d_k`). Any strides. With
/// `Parallelism::Rayon(0)` it splits the product over the current pool's
/// threads; the tiles use `Parallelism::None`, as each runs on one thread.
pub(crate) fn product<F: Real>(
    c: &mut ArrayViewMut2<F>,
    a: ArrayView2<F>,
    b: ArrayView2<F>,
    accumulate: bool,
    threads: Parallelism,
) {
    let ((m, k), (k_b, n)) = (a.dim(), b.dim());
    assert!(k == k_b && c.dim() == (m, n), "tile shapes are fixed by the loops");
    let (cs, as_, bs) = (c.strides(), a.strides(), b.strides());
    let (c_rs, c_cs) = (cs[0], cs[1]);
    // SAFETY: the three views are valid for their shapes and strides, the
    // shapes agree (checked above), and `c` is borrowed mutably, so it does
    // not alias `a` or `b`.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            c.as_mut_ptr(),
            c_cs,
            c_rs,
            accumulate,
            a.as_ptr(),
            as_[1],
            as_[0],
            b.as_ptr(),
            bs[1],
            bs[0],
            F::one(),
            F::one(), // c ← 1·c + 1·a·b (c is read only with `accumulate`)
            false,
            false,
            false,
            threads,
        );
    }
}

/// `a·b` (`m×k` times `k×n`, any strides, e.g. a transposed view): the
/// product every layer computes, in attention's core, the projections and
/// the training stack, forward and backward. Through `gemm`, or, built
/// with the `blas` feature, through ndarray's product, which that feature
/// hands to the system's OpenBLAS (the appendix compares the two).
pub(crate) fn matmul<F: Real>(a: &ArrayRef2<F>, b: &ArrayRef2<F>) -> Array2<F> {
    let ((m, k), n) = (a.dim(), b.ncols());
    assert_eq!(k, b.nrows(), "the layers' shapes are checked by their callers");
    if cfg!(feature = "blas") {
        return a.dot(b);
    }
    let mut c = Array2::zeros((m, n));
    let work = m.saturating_mul(k).saturating_mul(n);
    // Asked only for a product worth splitting: the first call starts the pool.
    let threads = || rayon::current_num_threads();
    if work >= PARALLEL_FROM {
        product(&mut c.view_mut(), a.view(), b.view(), false, Parallelism::Rayon(0));
    } else if work >= BANDS_FROM && threads() > 1 && m >= 2 * threads() {
        let rows = m.div_ceil(threads());
        let bands: Vec<_> =
            c.axis_chunks_iter_mut(Axis(0), rows).zip(a.axis_chunks_iter(Axis(0), rows)).collect();
        bands.into_par_iter().for_each(|(mut c, a)| {
            product(&mut c, a, b.view(), false, Parallelism::None);
        });
    } else {
        product(&mut c.view_mut(), a.view(), b.view(), false, Parallelism::None);
    }
    c
}

/// `a·b` (`m×k` times `k×n`, any strides): the crate's matrix product,
/// the one every layer runs, for a caller who wants to time or reuse it.
/// Errors: inner sizes that differ ([`AttnError::ProductShapes`]), a
/// product too large to allocate, non-finite entries, or an overflow.
pub fn matrix_product<F: Real>(a: &ArrayRef2<F>, b: &ArrayRef2<F>) -> Result<Array2<F>, AttnError> {
    if a.ncols() != b.nrows() {
        return Err(AttnError::ProductShapes { a: a.dim(), b: b.dim() });
    }
    check_size("the product a·b", a.nrows(), b.ncols())?;
    check_finite("a", a)?;
    check_finite("b", b)?;
    let c = matmul(a, b);
    check_overflow("the product a·b", &c)?;
    Ok(c)
}

/// A linear layer's weights: `W`, `d_in×d_out`, and its bias `b`, `d_out`.
#[derive(Debug, Clone, PartialEq)]
pub struct LinearWeights<F> {
    /// `W`, `d_in×d_out`.
    pub w: Array2<F>,
    /// `b`, `d_out`.
    pub b: Array1<F>,
}

// ANCHOR: linear
/// The linear layer, `Y = X W + b`: `X` is `n×d_in`, `W` is `d_in×d_out`,
/// `b` is `d_out` long, or absent. Every projection of the crate is one:
/// attention's queries, keys, values and output, the feed-forward
/// network's two layers, a model's output head. `what` names `Y` in the
/// error if the product overflowed (finite inputs with huge entries can
/// give an infinite product); shapes that do not fit are an error too.
pub fn linear<F: Real>(
    what: &'static str,
    x: &ArrayRef2<F>,
    w: &ArrayRef2<F>,
    b: Option<&Array1<F>>,
) -> Result<Array2<F>, AttnError> {
    if x.ncols() != w.nrows() {
        let (a, b) = (x.dim(), w.dim());
        return Err(AttnError::ProductShapes { a, b });
    }
    if let Some(b) = b.filter(|b| b.len() != w.ncols()) {
        let (left, right) = ((1, w.ncols()), (1, b.len()));
        let what = "W's columns and b";
        return Err(AttnError::ShapesDiffer { what, left, right });
    }
    let y = matmul(x, w); // n×d_out
    let y = match b {
        Some(b) => y + b,
        None => y,
    };
    check_overflow(what, &y)?;
    Ok(y)
}

// ANCHOR_END: linear

// ANCHOR: linear_backward
/// The gradients of `Y = X W + b` given `dY`: `dX = dY Wᵀ`, and the
/// weights' gradients `dW = Xᵀ dY` and `db = Σ_rows dY` (chapter 11).
pub fn linear_backward<F: Real>(
    x: &ArrayRef2<F>,
    w: &ArrayRef2<F>,
    dy: &ArrayRef2<F>,
) -> Result<(Array2<F>, LinearWeights<F>), AttnError> {
    if x.ncols() != w.nrows() || dy.dim() != (x.nrows(), w.ncols()) {
        let (what, left, right) = ("dY and X W", dy.dim(), (x.nrows(), w.ncols()));
        return Err(AttnError::ShapesDiffer { what, left, right });
    }
    check_finite("dY", dy)?; // NaN in would be NaN gradients out, in an Ok
    let grads = LinearWeights { w: matmul(&x.t(), dy), b: dy.sum_axis(Axis(0)) };
    let dx = matmul(dy, &w.t());
    check_overflow("dX = dY Wᵀ", &dx)?;
    check_overflow("dW = Xᵀ dY", &grads.w)?;
    Ok((dx, grads))
}
// ANCHOR_END: linear_backward

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

    fn normal(rows: usize, cols: usize, seed: u64) -> Array2<f64> {
        crate::grad::normal_matrix(rows, cols, &mut StdRng::seed_from_u64(seed))
    }

    #[test]
    fn products_equal_ndarray_s_for_every_layout_and_empty_shapes() {
        for (m, k, n) in [(1, 1, 1), (5, 3, 7), (64, 33, 17), (0, 4, 3), (3, 0, 4), (3, 4, 0)] {
            let (a, b) = (normal(m, k, 1), normal(k, n, 2));
            let (a_t, b_t) = (a.t().to_owned(), b.t().to_owned());
            let want = a.dot(&b);
            for got in [matmul(&a, &b), matmul(&a_t.t(), &b), matmul(&a, &b_t.t())] {
                approx::assert_abs_diff_eq!(got, want, epsilon = 1e-12);
            }
            let f32s = |x: &Array2<f64>| x.mapv(|v| v as f32);
            let got = matmul(&f32s(&a), &f32s(&b)).mapv(f64::from);
            approx::assert_abs_diff_eq!(got, want, epsilon = 1e-4);
        }
    }

    #[test]
    fn the_public_product_names_what_is_wrong() {
        let (a, b) = (normal(2, 3, 5), normal(4, 2, 6));
        assert_eq!(matrix_product(&a, &b), Err(AttnError::ProductShapes { a: (2, 3), b: (4, 2) }));
        let b = normal(3, 2, 7);
        assert_eq!(matrix_product(&a, &b).unwrap(), matmul(&a, &b));
        let mut bad = a.clone();
        bad[(1, 2)] = f64::NAN;
        assert!(matches!(
            matrix_product(&bad, &b),
            Err(AttnError::InvalidArgument { name: "a", .. })
        ));
        let huge = Array2::from_elem((1, 1), f32::MAX);
        assert!(matches!(matrix_product(&huge, &huge), Err(AttnError::Overflow { .. })));
    }

    #[test]
    fn a_product_split_over_threads_has_the_bits_of_one_thread() {
        // 2^27 multiply-adds: above the threshold, so split.
        let (a, b) = (normal(512, 512, 3), normal(512, 512, 4));
        let pool = |threads| rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let one = pool(1).install(|| matmul(&a, &b));
        let two = pool(2).install(|| matmul(&a, &b));
        assert_eq!(one, two);
        let mut none = Array2::zeros((512, 512));
        product(&mut none.view_mut(), a.view(), b.view(), false, Parallelism::None);
        assert_eq!(one, none);
    }
}
