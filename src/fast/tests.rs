//! Tests of `fast`.

use super::*;
use crate::masking::{causal_mask, masked_attention};
use crate::multihead::MultiHeadAttention;
use crate::scaled_dot_product_attention;
use crate::scaling::standard_normal;
use approx::assert_abs_diff_eq;
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

/// The kernels this processor runs: both, where it has AVX-512.
pub(super) fn kernels() -> Vec<Kernel> {
    let mut kernels = vec![Kernel::Portable];
    if Kernel::best() == Kernel::Avx512 {
        kernels.push(Kernel::Avx512);
    }
    kernels
}

/// Tiles that leave ragged edges: queries not a multiple of 16 (the
/// AVX-512 kernel's lanes) nor of 6 (its micro-kernel's rows).
const ODD_TILES: Tiles = Tiles { query: 37, key: 45 };

#[test]
fn fast_attention_equals_naive_attention_with_and_without_the_mask() {
    let mut rng = StdRng::seed_from_u64(77);
    for (n, m, d_k, d_v) in crate::tiled::tests::SHAPES {
        let q = standard_normal(n, d_k, &mut rng);
        let k = standard_normal(m, d_k, &mut rng);
        let v = standard_normal(m, d_v, &mut rng);
        let plain = scaled_dot_product_attention(&q, &k, &v).unwrap().output;
        let causal = masked_attention(&q, &k, &v, &causal_mask(n, m)).unwrap().output;
        for kernel in kernels() {
            for tiles in [FAST_TILES, ODD_TILES] {
                let fast = |masked| fast_attention_on(&q, &k, &v, masked, tiles, kernel).unwrap();
                assert_abs_diff_eq!(fast(false), plain, epsilon = 1e-5);
                assert_abs_diff_eq!(fast(true), causal, epsilon = 1e-5);
            }
        }
    }
}

#[test]
fn this_processor_runs_the_kernel_it_is_offered() {
    let q = Array2::from_elem((3, 4), 0.5_f32);
    let best = fast_attention_on(&q, &q, &q, false, FAST_TILES, Kernel::best());
    assert!(best.is_ok());
    if Kernel::best() == Kernel::Portable {
        let err = fast_attention_on(&q, &q, &q, false, FAST_TILES, Kernel::Avx512);
        assert!(matches!(err, Err(AttnError::Mismatched { name: "kernel", .. })));
    }
}

#[test]
fn the_fast_multihead_layer_equals_the_layer_of_chapter_5() {
    use crate::multihead::fast_multihead;
    let mut rng = StdRng::seed_from_u64(9);
    for (n, m, d_model, h) in [(7, 7, 32, 4), (130, 70, 64, 8), (300, 300, 48, 3)] {
        let layer = MultiHeadAttention::new(d_model, h, &mut rng).unwrap();
        let x_q = standard_normal(n, d_model, &mut rng);
        let x_kv = standard_normal(m, d_model, &mut rng);
        let expected = layer.forward(&x_q, &x_kv).unwrap().output;
        assert_abs_diff_eq!(fast_multihead(&layer, &x_q, &x_kv).unwrap(), expected, epsilon = 1e-5);
    }
    let layer = MultiHeadAttention::new(8, 2, &mut rng).unwrap();
    let wrong = Array2::<f32>::zeros((3, 6));
    assert!(fast_multihead(&layer, &wrong, &wrong).is_err());
}

#[test]
fn one_thread_and_two_give_the_same_bits() {
    let mut rng = StdRng::seed_from_u64(5);
    let (q, k, v) = (
        standard_normal(300, 32, &mut rng),
        standard_normal(300, 32, &mut rng),
        standard_normal(300, 16, &mut rng),
    );
    for kernel in kernels() {
        let on = |threads| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| fast_attention_on(&q, &k, &v, true, ODD_TILES, kernel).unwrap())
        };
        assert_eq!(on(1), on(2));
    }
}

#[test]
fn growing_scores_are_rescaled_and_overflow_is_an_error() {
    let (n, m, d) = (3, 1000, 2);
    let q = Array2::from_elem((n, d), 10.0_f32);
    let k = Array2::from_shape_fn((m, d), |(j, _)| j as f32 / 10.0);
    let v = Array2::from_shape_fn((m, 1), |(j, _)| (j % 7) as f32);
    let naive = scaled_dot_product_attention(&q, &k, &v).unwrap().output;
    for kernel in kernels() {
        let fast = fast_attention_on(&q, &k, &v, false, ODD_TILES, kernel).unwrap();
        assert_abs_diff_eq!(fast, naive, epsilon = 1e-4);
        // Query 1's scores overflow to +∞ from key 0 on, in the first tile.
        let ones = Array2::from_elem((3, 2), 1.0_f32);
        let mut huge = ones.clone();
        huge.row_mut(1).fill(3e38);
        let err = fast_attention_on(&huge, &ones, &ones, false, ODD_TILES, kernel);
        assert!(
            matches!(err, Err(AttnError::Overflow { position: (1, 0), value, .. }) if value == f32::INFINITY),
            "{kernel:?}: {err:?}"
        );
        // Every score overflows from key 100 on: in the third key tile,
        // after two tiles have set every query's maximum.
        let keys = Array2::from_shape_fn((200, 2), |(j, _)| if j < 100 { 1.0 } else { 3e38 });
        let err = fast_attention_on(&ones, &keys, &keys, false, ODD_TILES, kernel);
        assert!(
            matches!(err, Err(AttnError::Overflow { position: (0, 90), value, .. }) if value == f32::INFINITY),
            "{kernel:?}: {err:?}"
        );
    }
}

#[test]
fn a_key_tile_keeps_the_running_maxima_unless_its_scores_rise_far_above_them() {
    // Scores rise by 0.5 a key tile (within the lag allowed), then jump by
    // 100 in the fourth (beyond it: e^100 overflows f32), for queries that
    // see them all.
    let (m, tiles) = (240, Tiles { query: 16, key: 48 });
    let q = Array2::from_elem((16, 1), 1.0_f32);
    let k = Array2::from_shape_fn((m, 1), |(j, _)| match j / 48 {
        3 => 100.0 + (j % 5) as f32,
        t => 0.5 * t as f32 + (j % 3) as f32,
    });
    let v = Array2::from_shape_fn((m, 2), |(j, c)| ((j * (c + 3)) % 11) as f32);
    let naive = scaled_dot_product_attention(&q, &k, &v).unwrap().output;
    for kernel in kernels() {
        let fast = fast_attention_on(&q, &k, &v, false, tiles, kernel).unwrap();
        assert_abs_diff_eq!(fast, naive, epsilon = 1e-5);
    }
    // The same keys under the causal mask, one query a key, in ragged
    // tiles: tiles below the diagonal keep their maxima, the others not.
    let q = Array2::from_elem((m, 1), 1.0_f32);
    let causal = masked_attention(&q, &k, &v, &causal_mask(m, m)).unwrap().output;
    for kernel in kernels() {
        let fast = fast_attention_on(&q, &k, &v, true, ODD_TILES, kernel).unwrap();
        assert_abs_diff_eq!(fast, causal, epsilon = 1e-5);
    }
}
