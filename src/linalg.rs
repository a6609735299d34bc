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
#[cfg(target_arch = "x86_64")]
use crate::real::{as_f32, from_f32};

#[cfg(target_arch = "x86_64")]
pub(crate) mod avx512;

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
/// the training stack, forward and backward. For `f32` on a processor with
/// AVX-512, through this crate's kernel ([`matmul_avx512`]) wherever
/// `gemm` would run its general path: the same sums in the same order, so
/// the same bits, at twice the numbers per instruction. Otherwise through
/// `gemm`, or, built with the `blas` feature, through ndarray's product,
/// which that feature hands to the system's OpenBLAS (the appendix
/// compares the two).
pub(crate) fn matmul<F: Real>(a: &ArrayRef2<F>, b: &ArrayRef2<F>) -> Array2<F> {
    assert_eq!(a.ncols(), b.nrows(), "the layers' shapes are checked by their callers");
    if cfg!(feature = "blas") {
        return a.dot(b);
    }
    #[cfg(target_arch = "x86_64")]
    if let (Some(a), Some(b)) = (as_f32(a), as_f32(b)) {
        if avx512::available() && on_gemm_s_general_path(a.nrows(), a.ncols(), b.ncols()) {
            return from_f32(matmul_avx512(a, b));
        }
    }
    matmul_gemm(a, b)
}

// ANCHOR: chain
/// Whether `gemm` multiplies `m×k` by `k×n` with its general path, the
/// micro-kernel that sums each entry as one chain of multiply-adds in the
/// order of `k`. It takes other paths for a vector (`m` or `n` of 1), for
/// `k ≤ 2`, and for at most 16 × 16 entries of a row-major `A` by a
/// column-major `B`.
#[cfg(target_arch = "x86_64")]
fn on_gemm_s_general_path(m: usize, k: usize, n: usize) -> bool {
    m > 1 && n > 1 && k > 2 && m.saturating_mul(n) > 16 * 16
}

/// How many steps of `k` `gemm`'s general path sums in one chain (its
/// `kc`) for `m×k` by `k×n` in `f32` on a processor with FMA, where its
/// micro-kernel takes 16 rows by 6 columns: up to 512 for products of at
/// most 64 × 64 entries, otherwise what `gemm_common` derives from this
/// processor's level-1 cache, at least 512, split evenly over `k`.
#[cfg(target_arch = "x86_64")]
fn gemm_s_chain(m: usize, k: usize, n: usize) -> usize {
    match m <= 64 && n <= 64 {
        true => k.min(512),
        false => gemm_common::cache::kernel_params(m, n, k, 16, 6, size_of::<f32>()).kc,
    }
}
// ANCHOR_END: chain

/// [`matmul`] through the `gemm` crate, on any processor and for `f32` and
/// `f64`: the portable half of the pair [`matmul_avx512`] is tested equal to.
pub(crate) fn matmul_gemm<F: Real>(a: &ArrayRef2<F>, b: &ArrayRef2<F>) -> Array2<F> {
    let ((m, k), n) = (a.dim(), b.ncols());
    if k == 0 {
        return Array2::zeros((m, n)); // an empty sum
    }
    // Not zeroed first: `gemm` writes every entry of `c` and, not
    // accumulating, reads none (zeroing it was 4% of a training step).
    let mut uninit = Array2::<F>::uninit((m, n));
    // SAFETY: `MaybeUninit<F>` has `F`'s layout; no entry is read before
    // `gemm` writes it.
    let mut c = unsafe { uninit.raw_view_mut().cast::<F>().deref_into_view_mut() };
    match split(m, k, n) {
        Split::Gemm => product(&mut c, a.view(), b.view(), false, Parallelism::Rayon(0)),
        Split::Bands(rows) => {
            let bands: Vec<_> = c
                .axis_chunks_iter_mut(Axis(0), rows)
                .zip(a.axis_chunks_iter(Axis(0), rows))
                .collect();
            bands.into_par_iter().for_each(|(mut c, a)| {
                product(&mut c, a, b.view(), false, Parallelism::None);
            });
        }
        Split::None => product(&mut c, a.view(), b.view(), false, Parallelism::None),
    }
    // SAFETY: every entry was written.
    unsafe { uninit.assume_init() }
}

/// How [`matmul_gemm`] shares an `m×k` by `k×n` product among the pool's
/// threads.
enum Split {
    /// One product on one thread.
    None,
    /// Bands of this many rows, one product each.
    Bands(usize),
    /// `gemm`'s own threads.
    Gemm,
}

fn split(m: usize, k: usize, n: usize) -> Split {
    let work = m.saturating_mul(k).saturating_mul(n);
    // Asked only for a product worth splitting: the first call starts the pool.
    let threads = || rayon::current_num_threads();
    if work >= PARALLEL_FROM {
        Split::Gemm
    } else if work >= BANDS_FROM && threads() > 1 && m >= 2 * threads() {
        Split::Bands(m.div_ceil(threads()))
    } else {
        Split::None
    }
}

/// [`matmul`] through this crate's own AVX-512 kernel, for `f32` on a
/// processor that has it ([`avx512::available`]): bands of rows over the
/// pool's threads where [`matmul_gemm`] would split the product, each
/// entry summed in chains as long as `gemm`'s ([`gemm_s_chain`], from the
/// rows of a band as `gemm` sees them). The pair is tested bit for bit
/// equal wherever [`matmul`] chooses this one.
#[cfg(target_arch = "x86_64")]
pub(crate) fn matmul_avx512(a: &ArrayRef2<f32>, b: &ArrayRef2<f32>) -> Array2<f32> {
    let ((m, k), n) = (a.dim(), b.ncols());
    let mut c = Array2::uninit((m, n));
    let (threads, band) = match split(m, k, n) {
        Split::None => (1, m),
        Split::Bands(rows) => (m.div_ceil(rows), rows),
        Split::Gemm => (rayon::current_num_threads(), m),
    };
    let threads = threads.min(m / avx512::MR).max(1);
    let chain = gemm_s_chain(band, k, n);
    // SAFETY: `MaybeUninit<f32>` has `f32`'s layout, and `product` writes
    // every entry of `c` before it is read (it never reads what it has
    // not written).
    let view = unsafe { c.raw_view_mut().cast::<f32>().deref_into_view_mut() };
    avx512::product(view, a.view(), b.view(), threads, chain);
    // SAFETY: every entry was written.
    unsafe { c.assume_init() }
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

    /// The product's shapes in chapter 16's training step (`B·T = 768`
    /// rows; `d = 128`, `d_ff = 512`, 84 characters, a head's 64 × 32),
    /// with the weights' gradients `Xᵀ dY` and the inputs' `dY Wᵀ`
    /// transposed, and ragged shapes that fill no block or panel.
    #[cfg(target_arch = "x86_64")]
    const TRAINING_SHAPES: [(usize, usize, usize); 12] = [
        (768, 128, 128),
        (768, 128, 512),
        (768, 512, 128),
        (768, 128, 84),
        (128, 768, 128),
        (512, 768, 128),
        (64, 32, 64),
        (64, 64, 32),
        (1, 1, 1),
        (7, 129, 65),
        (13, 300, 17),
        (5, 0, 3),
    ];

    /// Checks `got` against `want` within 8 units of `f32`'s rounding per
    /// term of each sum: `|Δc_ij| ≤ 8·k·ε·Σ_p |a_ip||b_pj|`.
    #[cfg(target_arch = "x86_64")]
    fn assert_close(got: &Array2<f32>, want: &Array2<f32>, a: ArrayView2<f32>, b: ArrayView2<f32>) {
        let bound =
            a.mapv(f32::abs).dot(&b.mapv(f32::abs)) * (8.0 * a.ncols() as f32 * f32::EPSILON);
        for ((g, w), e) in got.iter().zip(want).zip(&bound) {
            assert!((g - w).abs() <= *e, "{g} against {w}, bound {e}");
        }
    }

    /// Whether this processor runs the AVX-512 kernel; if not, says so.
    #[cfg(target_arch = "x86_64")]
    fn avx512_here() -> bool {
        let here = avx512::available();
        if !here {
            eprintln!("this processor has no AVX-512: only gemm's product runs here");
        }
        here
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_avx512_product_has_gemm_s_bits_wherever_matmul_chooses_it() {
        if !avx512_here() {
            return;
        }
        let f32s = |x: Array2<f64>| x.mapv(|v| v as f32);
        let long = [(64, 1000, 64), (100, 1100, 70), (700, 2000, 20), (17, 9, 17), (2, 5, 200)];
        let pool = |threads| rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        for (i, &(m, k, n)) in TRAINING_SHAPES.iter().chain(&long).enumerate() {
            let (a, b) = (f32s(normal(m, k, 2 * i as u64)), f32s(normal(k, n, 2 * i as u64 + 1)));
            let (a_t, b_t) = (a.t().to_owned(), b.t().to_owned()); // read through transposed views
            for (a, b) in [(a.view(), b.view()), (a_t.t(), b.view()), (a.view(), b_t.t())] {
                for threads in [1, 2, 3] {
                    let (got, want) =
                        pool(threads).install(|| (matmul_avx512(&a, &b), matmul_gemm(&a, &b)));
                    assert_eq!(got.dim(), (m, n));
                    match on_gemm_s_general_path(m, k, n) {
                        true => assert!(got == want, "{m}×{k}×{n} on {threads} threads"),
                        false => assert_close(&got, &want, a, b),
                    }
                    assert!(pool(threads).install(|| matmul(&a, &b)) == want);
                }
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_avx512_product_has_the_same_bits_on_one_two_and_three_threads() {
        if !avx512_here() {
            return;
        }
        let f32s = |x: Array2<f64>| x.mapv(|v| v as f32);
        let (a, b) = (f32s(normal(770, 300, 8)), f32s(normal(300, 130, 9)));
        let pool = |threads| rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let one = pool(1).install(|| matmul_avx512(&a, &b));
        for threads in [2, 3] {
            assert!(pool(threads).install(|| matmul_avx512(&a, &b)) == one, "{threads} threads");
        }
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
