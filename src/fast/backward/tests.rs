//! The fast backward pass against chapter 11's, in `f64`.

use super::super::tests::kernels;
use super::super::{forward_with, Tiles};
use super::*;
use crate::masking::causal_mask;
use crate::nn::{attention_backward, attention_forward};
use crate::scaling::standard_normal;
use ndarray_rand::rand::{rngs::StdRng, Rng, SeedableRng};

/// Chapter 11's gradients of attention, in `f64`: `(dQ, dK, dV)`.
fn reference([q, k, v, d_out]: [&Array2<f32>; 4], causal: bool) -> [Array2<f64>; 3] {
    let wide = |x: &Array2<f32>| x.mapv(f64::from);
    let (q, k, v, d_out) = (wide(q), wide(k), wide(v), wide(d_out));
    let mask = causal.then(|| causal_mask(q.nrows(), k.nrows()));
    let sqrt_d_k = (q.ncols() as f64).sqrt();
    let (_, cache) = attention_forward(&q, &k, &v, mask.as_deref(), sqrt_d_k).unwrap();
    attention_backward(&q, &k, &v, &cache, &d_out).unwrap()
}

/// The largest difference between `fast` and `exact`, relative to the
/// largest entry of `exact`, or to 1 if all are smaller (a gradient that is
/// exactly 0, as `dQ` with a single key, comes out as rounding).
fn relative_gap(fast: &Array2<f32>, exact: &Array2<f64>) -> f64 {
    let scale = exact.iter().fold(1.0_f64, |m, x| m.max(x.abs()));
    let gap = fast.iter().zip(exact).fold(0.0_f64, |m, (a, b)| m.max((f64::from(*a) - b).abs()));
    gap / scale
}

// ANCHOR: backward_test
/// At every shape of chapter 9's tests (queries and keys of different
/// numbers, lengths that are no multiple of the tiles, `d_v ≠ d_k`),
/// causal and not, with small tiles and the fast kernel's own, on each
/// kernel, the gradients equal chapter 11's within the rounding of 32-bit
/// floats.
#[test]
fn the_fast_backward_pass_equals_chapter_11s() {
    let mut rng = StdRng::seed_from_u64(28);
    for (n, m, d_k, d_v) in crate::tiled::tests::SHAPES {
        let q = standard_normal(n, d_k, &mut rng);
        let k = standard_normal(m, d_k, &mut rng);
        let v = standard_normal(m, d_v, &mut rng);
        let d_out = standard_normal(n, d_v, &mut rng);
        for causal in [false, true] {
            let exact = reference([&q, &k, &v, &d_out], causal);
            for (tiles, kernel) in [Tiles { query: 16, key: 8 }, super::super::FAST_TILES]
                .into_iter()
                .flat_map(|t| kernels().into_iter().map(move |k| (t, k)))
            {
                let forward = forward_with(&q, &k, &v, causal, tiles).unwrap();
                let (dq, dk, dv) =
                    fast_attention_backward_on([&q, &k, &v], &forward, &d_out, tiles, kernel)
                        .unwrap();
                for (name, fast, exact) in
                    [("dQ", &dq, &exact[0]), ("dK", &dk, &exact[1]), ("dV", &dv, &exact[2])]
                {
                    let gap = relative_gap(fast, exact);
                    assert!(
                        gap < 1e-5,
                        "{name}, n = {n}, m = {m}, causal {causal}, {tiles:?}, {kernel:?}: {gap:e}"
                    );
                }
            }
        }
    }
}
// ANCHOR_END: backward_test

/// The backward pass gives the same bits on one, two and three threads:
/// every sum is taken in one order, whatever the threads. With 7 key
/// tiles and with 19, the AVX-512 kernel's bands are 7 and 8.
#[test]
fn one_two_and_three_threads_give_the_same_bits() {
    let mut rng = StdRng::seed_from_u64(29);
    let d = 32;
    let tiles = Tiles { query: 64, key: 32 };
    for (n, m) in [(300, 200), (200, 600)] {
        let q = standard_normal(n, d, &mut rng);
        let k = standard_normal(m, d, &mut rng);
        let v = standard_normal(m, d, &mut rng);
        let d_out = standard_normal(n, d, &mut rng);
        for kernel in kernels() {
            let run = |threads: usize| {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
                pool.install(|| {
                    let forward = forward_with(&q, &k, &v, true, tiles).unwrap();
                    fast_attention_backward_on([&q, &k, &v], &forward, &d_out, tiles, kernel)
                        .unwrap()
                })
            };
            let one = run(1);
            for threads in [2, 3] {
                assert_eq!(one, run(threads), "{kernel:?}, n = {n}, m = {m}, {threads} threads");
            }
        }
    }
}

#[test]
fn bad_input_is_refused_by_name() {
    let mut rng = StdRng::seed_from_u64(30);
    let q = standard_normal(5, 4, &mut rng);
    let k = standard_normal(6, 4, &mut rng);
    let v = standard_normal(6, 3, &mut rng);
    let forward = forward_with(&q, &k, &v, false, Tiles { query: 2, key: 2 }).unwrap();
    let e = |d_out: &Array2<f32>| {
        fast_attention_backward(&q, &k, &v, &forward, d_out).unwrap_err().to_string()
    };
    assert!(e(&Array2::zeros((5, 4))).contains("dO"));
    let mut nan = Array2::zeros((5, 3));
    nan[[1, 1]] = f32::NAN;
    assert!(e(&nan).contains("dO"));
    let other = standard_normal(7, 4, &mut rng);
    let err = fast_attention_backward(&other, &k, &v, &forward, &Array2::zeros((7, 3)))
        .unwrap_err()
        .to_string();
    assert!(err.contains("saved output"), "{err}");
}

/// Any shape and any tiles, causal or not, in 96 cases drawn from a fixed
/// seed: chapter 11's gradients. (The crate's tests do without proptest,
/// so that the chapters' examples never wait for it to compile; its
/// property tests are in `checks/`.)
#[test]
fn at_any_shape_and_any_tiles() {
    let mut draw = StdRng::seed_from_u64(28);
    for case in 0..96 {
        let (n, m) = (draw.random_range(1..40), draw.random_range(1..40));
        let (d_k, d_v) = (draw.random_range(1..9), draw.random_range(1..9));
        let tiles = Tiles { query: draw.random_range(1..12), key: draw.random_range(1..12) };
        let causal = draw.random_bool(0.5);
        let mut rng = StdRng::seed_from_u64(draw.random_range(0..1000));
        let q = standard_normal(n, d_k, &mut rng);
        let k = standard_normal(m, d_k, &mut rng);
        let v = standard_normal(m, d_v, &mut rng);
        let d_out = standard_normal(n, d_v, &mut rng);
        let forward = forward_with(&q, &k, &v, causal, tiles).unwrap();
        let exact = reference([&q, &k, &v, &d_out], causal);
        for kernel in kernels() {
            let (dq, dk, dv) =
                fast_attention_backward_on([&q, &k, &v], &forward, &d_out, tiles, kernel).unwrap();
            for (fast, exact) in [(&dq, &exact[0]), (&dk, &exact[1]), (&dv, &exact[2])] {
                assert!(
                    relative_gap(fast, exact) < 1e-4,
                    "case {case}: n {n}, m {m}, d_k {d_k}, d_v {d_v}, {tiles:?}, causal {causal}, \
                     {kernel:?}: relative gap {}",
                    relative_gap(fast, exact)
                );
            }
        }
    }
}
