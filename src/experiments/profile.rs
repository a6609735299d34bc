//! Where the fast kernel's time goes, and what each of its changes to
//! chapter 9's kernel saves (the appendix "Making it fast"). Each phase of
//! the inner loop runs alone over every tile of one call, on one thread,
//! done chapter 9's way and the fast kernel's way, and is timed: the scores
//! `Q_i K_jᵀ`, the exponentials with their row sums and the output's
//! rescaling, and the product `P_ij V_j`. Then the whole call at each of a
//! few tile sizes.

use std::time::Instant;

use gemm::Parallelism;
use ndarray::linalg::general_mat_mul;
use ndarray::{s, Array1, Array2, ArrayView2, ArrayViewMut2};
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

use super::roofline::MAX_REPEATED_WORK;
use crate::check::{check_nonzero, check_size, check_total};
use crate::error::AttnError;
use crate::fast::{exponentials, fast_attention_on, fast_attention_with, product, Tiles};
use crate::scaling::standard_normal;
use crate::tiled::{online_softmax_step, tiled_attention};

/// One phase's mean time in seconds, chapter 9's way, the portable
/// kernel's and the AVX-512 kernel's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Phase {
    /// `"scores"`, `"softmax"` or `"output"`.
    pub name: &'static str,
    /// With ndarray's product, or chapter 9's online softmax step.
    pub chapter_9: f64,
    /// With the `gemm` crate's product, or the fused exponentials: the
    /// portable kernel ([`crate::fast::Kernel::Portable`]).
    pub fast: f64,
    /// The same phase of [`crate::fast::Kernel::Avx512`], on a processor with it.
    pub avx512: Option<f64>,
}

/// A tile of `rows×cols` starting at query `i0` and key `j0`.
type TilePair = (usize, usize, usize, usize);

/// Every (query tile, key tile) pair of an `n×n` call, no mask.
fn tile_pairs(n: usize, tiles: Tiles) -> Vec<TilePair> {
    let mut pairs = Vec::new();
    for i0 in (0..n).step_by(tiles.query) {
        for j0 in (0..n).step_by(tiles.key) {
            pairs.push((i0, j0, tiles.query.min(n - i0), tiles.key.min(n - j0)));
        }
    }
    pairs
}

/// The mean seconds `f` takes over `repeats` runs, after one run to warm
/// the caches (the statistic of every timing in the appendix).
fn mean_of(repeats: usize, mut f: impl FnMut()) -> f64 {
    let never_fails = mean_of_calls(repeats, || {
        f();
        Ok::<_, AttnError>(())
    });
    never_fails.unwrap_or(f64::NAN)
}

/// [`mean_of`] a call that can fail: its first error, from the warm-up run
/// or a timed one, instead of a time.
fn mean_of_calls<T>(
    repeats: usize,
    mut f: impl FnMut() -> Result<T, AttnError>,
) -> Result<f64, AttnError> {
    f()?;
    let start = Instant::now();
    for _ in 0..repeats {
        f()?;
    }
    Ok(start.elapsed().as_secs_f64() / repeats as f64)
}

/// `c ← a·b` (or `c + a·b`) by ndarray, as chapter 9 does, or by `gemm`.
fn multiply(
    fast: bool,
    c: &mut ArrayViewMut2<f32>,
    a: ArrayView2<f32>,
    b: ArrayView2<f32>,
    add: bool,
) {
    if fast {
        product(c, a, b, add, Parallelism::None);
    } else {
        general_mat_mul(1.0, &a, &b, if add { 1.0 } else { 0.0 }, c);
    }
}

/// Times the three phases of the loop at `n×d` with `tiles`, each three
/// ways, the mean of `repeats` runs (a few seconds at `n = 4096`); and,
/// on a processor with AVX-512, what that kernel does for every key tile
/// after a query tile's first: the scores with their weights, block by
/// block, against the maxima of the tiles before (no pass of the softmax's
/// own, no rescaling).
pub fn phases(
    n: usize,
    d: usize,
    tiles: Tiles,
    repeats: usize,
) -> Result<([Phase; 3], Option<f64>), AttnError> {
    check_run(n, d, &[tiles], repeats)?;
    let mut rng = StdRng::seed_from_u64(n as u64);
    let [q, k, v] = [(); 3].map(|_| standard_normal(n, d, &mut rng));
    let mut s_tile = Array2::<f32>::zeros((tiles.query, tiles.key));
    let mut out = Array2::<f32>::zeros((tiles.query, d));
    let mut max = Array1::<f32>::from_elem(tiles.query, f32::NEG_INFINITY);
    let mut sum = Array1::<f32>::zeros(tiles.query);
    let pairs = tile_pairs(n, tiles);
    let mut time = |fast: bool, phase: usize| {
        mean_of(repeats, || {
            for &(i0, j0, rows, cols) in &pairs {
                let mut s_ij = s_tile.slice_mut(s![..rows, ..cols]);
                match phase {
                    0 => {
                        let q_i = q.slice(s![i0..i0 + rows, ..]);
                        multiply(fast, &mut s_ij, q_i, k.slice(s![j0..j0 + cols, ..]).t(), false)
                    }
                    1 => {
                        for r in 0..rows {
                            let mut row = s_ij.row_mut(r);
                            let scores = row.as_slice_mut().expect("contiguous rows");
                            let alpha = if fast {
                                exponentials(scores, &mut max[r], &mut sum[r]).ok()
                            } else {
                                online_softmax_step(scores, &mut max[r], &mut sum[r]).ok()
                            };
                            // Scores of standard normal inputs are finite: never NaN.
                            let alpha = alpha.unwrap_or(f32::NAN);
                            out.row_mut(r).map_inplace(|o| *o *= alpha);
                        }
                    }
                    _ => {
                        let mut o_i = out.slice_mut(s![..rows, ..]);
                        let v_j = v.slice(s![j0..j0 + cols, ..]);
                        multiply(fast, &mut o_i, s_ij.view(), v_j, true)
                    }
                }
            }
        })
    };
    let names = ["scores", "softmax", "output"];
    let [chapter_9, fast] = [false, true].map(|fast| [0, 1, 2].map(|p| time(fast, p)));
    let avx512 = avx512_phases([&q, &k, &v], tiles, repeats);
    let three = [0, 1, 2].map(|p| Phase {
        name: names[p],
        chapter_9: chapter_9[p],
        fast: fast[p],
        avx512: avx512.map(|t| t[p]),
    });
    Ok((three, avx512.map(|t| t[3])))
}

/// Checks an experiment's sizes before anything is drawn: `n×d` inputs
/// that can be allocated, tiles of at least one row and column, at least
/// one run, and at most [`MAX_REPEATED_WORK`] entries of the scores over
/// all the runs (`n² × repeats × tile sizes`).
fn check_run(n: usize, d: usize, tiles: &[Tiles], repeats: usize) -> Result<(), AttnError> {
    check_nonzero(&[("n", n), ("d", d), ("repeats", repeats), ("tile sizes", tiles.len())])?;
    for t in tiles {
        check_nonzero(&[("query tile", t.query), ("key tile", t.key)])?;
    }
    check_size("the queries, keys and values", n, d)?;
    let work = [n, n, repeats, tiles.len()];
    check_total("the scores of every run (n² × repeats × tile sizes)", &work, MAX_REPEATED_WORK)?;
    Ok(())
}

/// [`phases`] of the AVX-512 kernel, where the processor has it.
fn avx512_phases([q, k, v]: [&Array2<f32>; 3], tiles: Tiles, repeats: usize) -> Option<[f64; 4]> {
    #[cfg(target_arch = "x86_64")]
    if crate::fast::avx512::available() {
        let slices = [q, k, v].map(|x| x.as_slice().expect("owned, standard layout"));
        let dims = [q.ncols(), v.ncols()];
        let time = |f: &mut dyn FnMut()| mean_of(repeats, f);
        let pairs = tile_pairs(q.nrows(), tiles);
        // SAFETY: `available` found AVX-512 on this processor.
        return Some(unsafe {
            crate::fast::avx512::phase_times(slices, dims, (tiles, &pairs), time)
        });
    }
    let _ = ([q, k, v], tiles, repeats);
    None
}

/// The whole call at `n×d` on one thread, the mean of `repeats` runs:
/// chapter 9's kernel, the portable kernel at [`crate::fast::FAST_TILES`], then
/// the fast kernel (the best this processor runs) with each of `tiles`.
pub fn whole_calls(
    n: usize,
    d: usize,
    tiles: &[Tiles],
    repeats: usize,
) -> Result<(f64, f64, Vec<f64>), AttnError> {
    check_run(n, d, tiles, repeats)?;
    let mut rng = StdRng::seed_from_u64(n as u64);
    let [q, k, v] = [(); 3].map(|_| standard_normal(n, d, &mut rng));
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().map_err(|_| {
        AttnError::InvalidArgument {
            name: "a one-thread pool",
            value: 1.0,
            requirement: "must start, to time one core (the system refused a thread)",
        }
    })?;
    let chapter_9 = mean_of_calls(repeats, || tiled_attention(&q, &k, &v, false))?;
    let kernel = crate::fast::Kernel::Portable;
    let portable_call = || fast_attention_on(&q, &k, &v, false, crate::fast::FAST_TILES, kernel);
    let portable = mean_of_calls(repeats, || pool.install(portable_call))?;
    let fast = tiles
        .iter()
        .map(|&t| {
            mean_of_calls(repeats, || pool.install(|| fast_attention_with(&q, &k, &v, false, t)))
        })
        .collect::<Result<Vec<f64>, AttnError>>()?;
    Ok((chapter_9, portable, fast))
}
