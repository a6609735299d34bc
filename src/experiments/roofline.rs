//! The appendix "Making it fast": this core's limits, measured, and where
//! each attention sits against them (the roofline model of Williams,
//! Waterman and Patterson, 2009). A kernel doing `F` floating-point
//! operations while moving `B` bytes to and from memory has arithmetic
//! intensity `I = F / B`; it can run no faster than
//! `min(peak FLOP/s, I × bandwidth)`.

use std::hint::black_box;
use std::time::Instant;

use crate::complexity::{activation_bytes, attention_flops, scores_bytes};

/// Independent accumulators of the FMA loop: enough to keep two FMA units
/// busy through their latency, in 8- or 16-lane vectors.
const LANES: usize = 16;
const CHAINS: usize = 8;

// ANCHOR: fma_peak
/// This core's f32 multiply-add rate, in GFLOP/s (a fused multiply-add is
/// 2 operations): `CHAINS × LANES` independent accumulators, each updated
/// `rounds` times with `a ← a·x + y`, which the compiler turns into vector
/// FMA instructions. The best of `repeats` runs.
pub fn fma_peak(rounds: usize, repeats: usize) -> f64 {
    let (x, y) = (black_box(0.999_999_f32), black_box(1e-7_f32));
    let mut best = f64::INFINITY;
    for _ in 0..repeats {
        let mut acc = [1.0_f32; LANES * CHAINS];
        let start = Instant::now();
        for _ in 0..rounds {
            for a in acc.iter_mut() {
                *a = a.mul_add(x, y);
            }
        }
        best = best.min(start.elapsed().as_secs_f64());
        black_box(&acc);
    }
    (2 * CHAINS * LANES * rounds) as f64 / best / 1e9
}
// ANCHOR_END: fma_peak

// ANCHOR: triad
/// This core's memory bandwidth, in GB/s, from the STREAM triad
/// `a[i] = b[i] + s·c[i]` over arrays of `len` floats, far larger than
/// the caches: 3 × 4 bytes move per element. The best of `repeats` runs.
pub fn triad_bandwidth(len: usize, repeats: usize) -> f64 {
    let b = vec![1.0_f32; len];
    let c = vec![2.0_f32; len];
    let mut a = vec![0.0_f32; len];
    let s = black_box(3.0_f32);
    let mut best = f64::INFINITY;
    for _ in 0..repeats {
        let start = Instant::now();
        for ((a, &b), &c) in a.iter_mut().zip(&b).zip(&c) {
            *a = b + s * c;
        }
        best = best.min(start.elapsed().as_secs_f64());
        black_box(&a);
    }
    (3 * 4 * len) as f64 / best / 1e9
}
// ANCHOR_END: triad

// ANCHOR: intensity
/// Arithmetic intensity (FLOPs per byte of memory traffic) of attention over
/// `n` tokens of width `d`, from chapter 8's cost model: `4n²d` FLOPs for
/// `QKᵀ` and `weights·V`. Every kernel reads `Q`, `K`, `V` and writes the
/// output (`4·n·d` floats); one that stores the `n×n` scores also writes
/// them, and reads and writes them again for the softmax and reads them for
/// `weights·V`: four passes.
pub fn attention_intensity(n: u64, d: u64, stores_scores: bool) -> f64 {
    let compulsory = activation_bytes(n, d);
    let scores = if stores_scores {
        4.0 * scores_bytes(n)
    } else {
        0.0
    };
    attention_flops(n, d) / (compulsory + scores)
}
// ANCHOR_END: intensity

/// The roofline: the most GFLOP/s a kernel of `intensity` can reach on a
/// core with `peak` GFLOP/s and `bandwidth` GB/s.
pub fn roofline(intensity: f64, peak: f64, bandwidth: f64) -> f64 {
    peak.min(intensity * bandwidth)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intensity_grows_with_n_only_without_the_stored_scores() {
        // Flash-style: 4n²d / (16nd) = n/4 FLOPs per byte.
        assert_eq!(attention_intensity(1024, 64, false), 256.0);
        assert_eq!(attention_intensity(4096, 64, false), 1024.0);
        // Storing the scores bounds it near 4n²d / (4 · 4n²) = d/4 = 16.
        let stored = attention_intensity(4096, 64, true);
        assert!(stored < 16.0 && stored > 10.0, "{stored}");
        assert_eq!(roofline(1.0, 100.0, 20.0), 20.0);
        assert_eq!(roofline(10.0, 100.0, 20.0), 100.0);
    }

    #[test]
    fn the_machine_measurements_are_positive_and_finite() {
        let peak = fma_peak(1000, 2);
        let bandwidth = triad_bandwidth(1 << 16, 2);
        assert!(peak.is_finite() && peak > 0.0);
        assert!(bandwidth.is_finite() && bandwidth > 0.0);
    }
}
