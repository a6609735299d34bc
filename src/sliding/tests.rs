//! The sliding cache against attention under a window mask, over texts far
//! longer than the window; which tokens it keeps; and the positions
//! StreamingLLM gives them.

use super::*;
use crate::cache::KeyValueCache;
use crate::masking::masked_attention;
use crate::position::rope;
use ndarray::{s, Array2};
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

fn normal(rows: usize, cols: usize, seed: u64) -> Array2<f32> {
    crate::grad::normal_matrix(rows, cols, &mut StdRng::seed_from_u64(seed)).mapv(|x| x as f32)
}

/// Query `i` may see key `j` if `j` is a sink or among the last `window`
/// tokens up to `i`.
fn sink_window_mask(n: usize, sinks: usize, window: usize) -> Array2<bool> {
    Array2::from_shape_fn((n, n), |(i, j)| j <= i && (j < sinks || i - j < window))
}

// ANCHOR: window_test
/// With RoPE applied before caching, the ring buffer gives, at every one of
/// 300 steps, the row of attention under the window mask (window 8, and 2
/// sinks besides): 37 times the window, so the ring turns over and over.
#[test]
fn a_ring_buffer_is_attention_under_a_window_mask() {
    let (n, d) = (300, 4);
    for sinks in [0, 2] {
        let window = 8;
        let q = rope(&normal(n, d, 1), 0).unwrap();
        let k = rope(&normal(n, d, 2), 0).unwrap();
        let v = normal(n, d, 3);
        let full = masked_attention(&q, &k, &v, &sink_window_mask(n, sinks, window)).unwrap();
        let mut cache = SlidingCache::new(d, d, sinks, window).unwrap();
        for t in 0..n {
            cache.append(&k.row(t), &v.row(t)).unwrap();
            let out = cache.attend(&q.row(t)).unwrap();
            approx::assert_abs_diff_eq!(out, full.output.row(t), epsilon = 1e-5);
            assert_eq!(cache.len(), (t + 1).min(sinks + window));
        }
    }
}
// ANCHOR_END: window_test

/// The newest token is always kept and the oldest of the window goes:
/// after tokens 0 to 19 with 2 sinks and a window of 4, it holds 0, 1 and
/// 16 to 19; a cache that overwrote its newest row instead would hold 18
/// in place of 19.
#[test]
fn the_oldest_token_of_the_window_is_evicted() {
    let d = 2;
    let mut cache = SlidingCache::new(d, 1, 2, 4).unwrap();
    for t in 0..20 {
        cache.append(&Array1::zeros(d), &Array1::from_elem(1, t as f32)).unwrap();
        let held = cache.held();
        assert_eq!(held.last(), Some(&t), "the newest token is kept");
        // With equal scores the output is the mean of the values held.
        let mean = held.iter().sum::<usize>() as f32 / held.len() as f32;
        let out = cache.attend(&Array1::zeros(d)).unwrap();
        approx::assert_abs_diff_eq!(out[0], mean, epsilon = 1e-5);
    }
    assert_eq!(cache.held(), vec![0, 1, 16, 17, 18, 19]);
    assert_eq!(cache.seen(), 20);
    assert_eq!(cache.bytes(), 6 * (2 + 1) * 4);
}

// ANCHOR: sink_positions_test
/// StreamingLLM's positions: the keys cached before RoPE, turned by their
/// place in the cache. Equal to RoPE attention over just the tokens held,
/// numbered from 0; not equal, once tokens have been evicted, to turning
/// them by their places in the text (the sinks would sit further from the
/// query than any distance seen in training).
#[test]
fn sinks_and_window_take_positions_within_the_cache() {
    let (n, d, sinks, window) = (40, 4, 2, 6);
    let (q, k, v) = (normal(n, d, 4), normal(n, d, 5), normal(n, d, 6));
    let mut cache = SlidingCache::new(d, d, sinks, window).unwrap().at_cache_positions();
    for t in 0..n {
        cache.append(&k.row(t), &v.row(t)).unwrap();
        let held = cache.held();
        let got = cache.attend(&q.row(t)).unwrap();
        // Reference: the tokens held, renumbered 0, 1, 2, …
        let k_held = rope(&k.select(Axis(0), &held), 0).unwrap();
        let q_t = rope(&q.slice(s![t..=t, ..]), held.len() - 1).unwrap();
        let want = scaled_dot_product_attention(&q_t, &k_held, &v.select(Axis(0), &held)).unwrap();
        approx::assert_abs_diff_eq!(got, want.output.row(0), epsilon = 1e-5);
        // The pitfall: the same tokens at their positions in the text.
        let k_text = Array2::from_shape_fn((held.len(), d), |(j, c)| {
            rope(&k.slice(s![held[j]..=held[j], ..]), held[j]).unwrap()[(0, c)]
        });
        let q_text = rope(&q.slice(s![t..=t, ..]), t).unwrap();
        let text =
            scaled_dot_product_attention(&q_text, &k_text, &v.select(Axis(0), &held)).unwrap();
        let apart = (&got - &text.output.row(0)).iter().fold(0.0_f32, |m, x| m.max(x.abs()));
        if t < sinks + window {
            assert!(apart < 1e-5, "step {t}: nothing evicted, the same positions");
        } else {
            assert!(apart > 1e-3, "step {t}: positions in the cache must differ from the text's");
        }
    }
}
// ANCHOR_END: sink_positions_test

#[test]
fn bad_input_is_refused_by_name() {
    let e = SlidingCache::new(4, 4, 1, 0).unwrap_err().to_string();
    assert!(e.contains("window"), "{e}");
    assert!(SlidingCache::new(4, 4, usize::MAX, 1).is_err());
    let mut cache = SlidingCache::new(4, 2, 0, 3).unwrap();
    assert!(cache.attend(&Array1::zeros(4)).is_err(), "an empty cache");
    let e = cache.append(&Array1::zeros(3), &Array1::zeros(2)).unwrap_err();
    assert_eq!(e.to_string(), "the new key has width 3 but the cache expects width 4");
    let nan = Array1::from_elem(2, f32::NAN);
    assert!(cache.append(&Array1::zeros(4), &nan).is_err() && cache.is_empty());
    cache.append(&Array1::zeros(4), &Array1::zeros(2)).unwrap();
    assert!(cache.attend(&Array1::zeros(3)).is_err(), "a query of another width");
    let odd = SlidingCache::new(3, 1, 0, 2).unwrap();
    assert!(odd.attend_in_cache_positions(&Array1::zeros(3)).is_err());
}
