//! Bad-input tests for the cost models of chapters 1, 5, 6 and 8 and the
//! appendix's measurements: a cost is finite for any size; a ratio's
//! divisor of 0, a loop of no runs or of more work than the bound, and
//! sizes that cannot be allocated are errors.

use attn::experiments::profile::{phases, whole_calls};
use attn::experiments::roofline::*;
use attn::fast::{Tiles, FAST_TILES};

/// Costs counted in `f64` are finite for every size, the largest included.
#[test]
fn costs_are_finite_for_any_size() {
    use attn::cache::{flops_per_token_with_cache, flops_per_token_without_cache};
    use attn::complexity::*;
    use attn::origins::{additive_score_flops, dot_score_flops};
    let m = u64::MAX;
    let costs = [
        flops_per_token_with_cache(m, m),
        flops_per_token_without_cache(m, m),
        attention_flops(m, m),
        crossover_length(m),
        feed_forward_flops(m, m, m),
        block_crossover_length(m, m),
        scores_bytes(m),
        activation_bytes(m, m),
        additive_score_flops(m, m, m, m),
        dot_score_flops(m, m, m),
        attention_bytes(m, m, true),
        causal_attention_flops(m, m),
        backward_flops(m, m),
        backward_bytes(m, m),
    ];
    assert!(costs.iter().all(|c| c.is_finite() && *c > 0.0), "{costs:?}");
    assert_eq!(attention_flops(2, 3), 48.0);
    let flops = attn::multihead::multihead_flops(usize::MAX, usize::MAX, 1 << 20, 4).unwrap();
    assert!(flops.is_finite());
    assert!(attn::multihead::multihead_flops(4, 4, 6, 4).is_err(), "4 heads do not divide 6");
}

/// Ratios whose divisor would be 0, and a roofline of values that are not
/// finite, are errors (a query tile of 0 divided by zero, and n·d
/// overflowed, in a panic before).
#[test]
fn ratios_refuse_sizes_they_would_divide_by_zero() {
    assert_eq!(attention_intensity(1024, 64, false).unwrap(), 256.0);
    assert!(attention_intensity(0, 64, false).is_err(), "0/0");
    assert!(backward_intensity(64, 0).is_err());
    let e = tiled_intensity(8, 4, 0).unwrap_err().to_string();
    assert!(e.contains("query_tile"), "{e}");
    assert!(tiled_intensity(u64::MAX, u64::MAX, 1).unwrap().is_finite(), "n·d past u64");
    assert!(naive_product_intensity(u64::MAX, 2).unwrap().is_finite());
    assert!(naive_product_intensity(0, 2).is_err());
    assert_eq!(roofline(2.0, 100.0, 10.0).unwrap(), 20.0);
    for bad in [f64::NAN, -1.0, f64::INFINITY] {
        assert!(roofline(bad, 100.0, 10.0).is_err(), "intensity {bad}");
        assert!(roofline(2.0, bad, 10.0).is_err(), "peak {bad}");
        assert!(roofline(2.0, 100.0, bad).is_err(), "bandwidth {bad}");
    }
}

/// The timing loops: no runs, or more work than [`MAX_REPEATED_WORK`], or
/// arrays that cannot be allocated, are errors before the first run.
#[test]
fn timing_loops_refuse_no_runs_and_unbounded_work() {
    assert!(fma_peak(100, 1).unwrap() > 0.0);
    assert!(fma_peak_512(100, 1).unwrap().is_none_or(|p| p > 0.0));
    for (rounds, repeats) in [(0, 1), (100, 0), (1 << 40, 1), (usize::MAX, usize::MAX)] {
        assert!(fma_peak(rounds, repeats).is_err(), "{rounds} × {repeats}");
        assert!(fma_peak_512(rounds, repeats).is_err(), "{rounds} × {repeats}");
    }
    assert!(triad_bandwidth(1024, 1).unwrap() > 0.0);
    for (len, repeats) in [(0, 1), (1024, 0), (1 << 40, 1), (1 << 28, 1 << 20)] {
        assert!(triad_bandwidth(len, repeats).is_err(), "{len} × {repeats}");
    }
    let small = Tiles { query: 4, key: 4 };
    assert!(phases(8, 4, small, 1).is_ok());
    assert!(whole_calls(8, 4, &[small], 1).is_ok());
    let no_tile = Tiles { query: 0, key: 4 };
    for (n, d, tiles, repeats) in
        [(0, 4, small, 1), (8, 4, no_tile, 1), (8, 4, small, 0), (1 << 40, 64, FAST_TILES, 1)]
    {
        assert!(phases(n, d, tiles, repeats).is_err(), "{n}×{d} {tiles:?} × {repeats}");
        assert!(whole_calls(n, d, &[tiles], repeats).is_err(), "{n}×{d} {tiles:?}");
    }
    assert!(whole_calls(8, 4, &[], 1).is_err(), "no tile sizes to time");
    assert!(phases(1 << 20, 1, small, 1 << 10).is_err(), "more work than the bound");
    assert!(attn::cache::KvCache::with_capacity(64, 64, 1 << 40).is_err());
}
