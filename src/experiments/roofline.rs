//! The appendix "Making it fast": this core's limits, measured, and where
//! each attention sits against them (the roofline model of Williams,
//! Waterman and Patterson, 2009). A kernel doing `F` floating-point
//! operations while moving `B` bytes to and from memory has arithmetic
//! intensity `I = F / B`; it can run no faster than
//! `min(peak FLOP/s, I × bandwidth)`.

use std::hint::black_box;
use std::time::Instant;

use crate::check::{check_nonzero, check_size, check_total};
use crate::complexity::{activation_bytes, attention_flops, scores_bytes};
use crate::error::AttnError;

/// The most inner-loop steps one of the appendix's measurements may run
/// (vector lanes × rounds × repeats, or array entries × repeats): 2^40,
/// minutes on one core (or `usize::MAX` where that is less, as in
/// WebAssembly). A larger request is an error before the first.
pub const MAX_REPEATED_WORK: usize =
    if (usize::MAX as u64) < 1 << 40 { usize::MAX } else { (1_u64 << 40) as usize };

/// Checks a timing loop's counts: each at least 1, their product (the
/// steps it runs) at most [`MAX_REPEATED_WORK`].
fn check_loop(what: &'static str, counts: &[(&'static str, usize)]) -> Result<usize, AttnError> {
    check_nonzero(counts)?;
    let sizes: Vec<usize> = counts.iter().map(|&(_, c)| c).collect();
    check_total(what, &sizes, MAX_REPEATED_WORK)
}

/// Independent chains of multiply-adds in the FMA loops, each a vector
/// register. A core with two FMA units whose result takes 4 cycles needs
/// 2 × 4 = 8 chains in flight to start a multiply-add on each unit every
/// cycle; with exactly 8, any cycle the loop loses shows as a lower peak.
/// 12 leave half as many again to spare.
pub const CHAINS: usize = 12;

/// `f32` lanes of a 512-bit AVX-512 vector.
pub const LANES_512: usize = 16;

/// `f32` lanes of a 256-bit AVX2 vector.
pub const LANES_256: usize = 8;

/// Vector registers of AVX-512 (`zmm0` to `zmm31`); AVX2 has half as many.
pub const REGISTERS_512: usize = 32;

/// Lanes of the vectors the build may use: 512-bit with AVX-512, 256-bit
/// without. The portable loop updates [`CHAINS`] vectors of them, which
/// fit the registers either way: 12 of AVX-512's 32 (or 24 of 256 bits,
/// where the compiler prefers those), 12 of AVX2's 16.
pub const LANES: usize = if cfg!(target_feature = "avx512f") { LANES_512 } else { LANES_256 };

// The chains, `x` and `y` fit the registers: none waits on the stack.
const _: () = assert!(2 * CHAINS + 2 <= REGISTERS_512 && CHAINS + 2 <= REGISTERS_512 / 2);

// ANCHOR: fma_peak
/// This core's f32 multiply-add rate, in GFLOP/s (a fused multiply-add is
/// 2 operations): `CHAINS × LANES` independent accumulators, each updated
/// `rounds` times with `a ← a·x + y`, which the compiler turns into
/// `CHAINS` chains of vector FMA instructions. The mean of `repeats` runs.
pub fn fma_peak(rounds: usize, repeats: usize) -> Result<f64, AttnError> {
    let lanes = ("lanes", CHAINS * LANES);
    let steps = check_loop("the FMA loop", &[lanes, ("rounds", rounds), ("repeats", repeats)])?;
    let (x, y) = (black_box(0.999_999_f32), black_box(1e-7_f32));
    let mut seconds = 0.0;
    for _ in 0..repeats {
        let mut acc = [1.0_f32; LANES * CHAINS];
        let start = Instant::now();
        for _ in 0..rounds {
            for a in acc.iter_mut() {
                *a = a.mul_add(x, y);
            }
        }
        seconds += start.elapsed().as_secs_f64();
        black_box(&acc);
    }
    Ok(2.0 * steps as f64 / seconds / 1e9)
}
// ANCHOR_END: fma_peak

// ANCHOR: fma_peak_512
/// This core's f32 multiply-add rate with its widest vectors, 512-bit
/// AVX-512, in GFLOP/s: the loop of [`fma_peak`] written with explicit
/// AVX-512 instructions (`_mm512_fmadd_ps`, 16 lanes each), because the
/// compiler may prefer narrower vectors for the portable loop (it does on
/// Intel's recent server cores, where 512-bit instructions can lower the
/// clock). `None` on a processor without AVX-512.
pub fn fma_peak_512(rounds: usize, repeats: usize) -> Result<Option<f64>, AttnError> {
    let lanes = ("lanes", CHAINS * LANES_512);
    let steps = check_loop("the FMA loop", &[lanes, ("rounds", rounds), ("repeats", repeats)])?;
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") {
        // SAFETY: the processor has AVX-512F, checked just above.
        let seconds = unsafe { fma_512_seconds(rounds, repeats) };
        return Ok(Some(2.0 * steps as f64 / seconds / 1e9));
    }
    let _ = steps;
    Ok(None)
}

/// The seconds of `repeats` runs of `rounds` rounds of `CHAINS`
/// independent multiply-adds of `LANES_512` lanes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn fma_512_seconds(rounds: usize, repeats: usize) -> f64 {
    use std::arch::x86_64::{_mm512_fmadd_ps, _mm512_set1_ps};
    let (x, y) = (_mm512_set1_ps(black_box(0.999_999_f32)), _mm512_set1_ps(black_box(1e-7_f32)));
    let mut seconds = 0.0;
    for _ in 0..repeats {
        let mut acc = [_mm512_set1_ps(1.0); CHAINS];
        let start = Instant::now();
        for _ in 0..rounds {
            for a in acc.iter_mut() {
                *a = _mm512_fmadd_ps(*a, x, y);
            }
        }
        seconds += start.elapsed().as_secs_f64();
        black_box(&acc);
    }
    seconds
}
// ANCHOR_END: fma_peak_512

// ANCHOR: triad
/// This core's memory bandwidth, in GB/s, from the STREAM triad
/// `a[i] = b[i] + s·c[i]` over arrays of `len` floats, far larger than
/// the caches: 3 × 4 bytes move per element. The mean of `repeats` runs,
/// after one that touches every page.
pub fn triad_bandwidth(len: usize, repeats: usize) -> Result<f64, AttnError> {
    check_size("the triad's arrays", 3, len)?;
    let steps = check_loop("the triad", &[("len", len), ("repeats", repeats)])?;
    let b = vec![1.0_f32; len];
    let c = vec![2.0_f32; len];
    let mut a = vec![0.0_f32; len];
    let s = black_box(3.0_f32);
    let mut seconds = 0.0;
    for ((a, &b), &c) in a.iter_mut().zip(&b).zip(&c) {
        *a = b + s * c;
    }
    for _ in 0..repeats {
        let start = Instant::now();
        for ((a, &b), &c) in a.iter_mut().zip(&b).zip(&c) {
            *a = b + s * c;
        }
        seconds += start.elapsed().as_secs_f64();
        black_box(&a);
    }
    Ok(3.0 * 4.0 * steps as f64 / seconds / 1e9)
}
// ANCHOR_END: triad

// ANCHOR: intensity
/// Bytes of memory traffic of attention over `n` tokens of width `d`.
/// Every kernel reads `Q`, `K`, `V` and writes the output (`4·n·d`
/// floats); one that stores the `n×n` scores also writes them, and reads
/// and writes them again for the softmax and reads them for `weights·V`:
/// four passes.
pub fn attention_bytes(n: u64, d: u64, stores_scores: bool) -> f64 {
    let scores = if stores_scores { 4.0 * scores_bytes(n) } else { 0.0 };
    activation_bytes(n, d) + scores
}

/// Arithmetic intensity (FLOPs per byte of memory traffic) of attention,
/// from chapter 8's cost model: `4n²d` FLOPs for `QKᵀ` and `weights·V`.
pub fn attention_intensity(n: u64, d: u64, stores_scores: bool) -> Result<f64, AttnError> {
    check_counts(&[("n", n), ("d", d)])?; // no 0/0
    Ok(attention_flops(n, d) / attention_bytes(n, d, stores_scores))
}
// ANCHOR_END: intensity

// ANCHOR: causal_work
/// The FLOPs credited to causal attention: half of `4n²d`, the query–key
/// pairs on or below the diagonal (`n(n + 1)/2`, to within `n` of
/// `n²/2`), whatever a kernel computes in the tiles the diagonal crosses.
/// Its bytes are [`attention_bytes`]: `Q`, `K`, `V` and the output still
/// move whole, so its intensity is half the plain one's, `n/8`.
pub fn causal_attention_flops(n: u64, d: u64) -> f64 {
    attention_flops(n, d) / 2.0
}
// ANCHOR_END: causal_work

// ANCHOR: tiled_intensity
/// Arithmetic intensity of a fused kernel (one that never stores the
/// scores) with query tiles of `query_tile` rows: it reads `Q` and writes
/// the output once, but reads `K` and `V` once for every query tile, so
/// `4n²d` FLOPs move `8nd + 8nd·⌈n / query_tile⌉` bytes: about
/// `query_tile / 2` FLOPs per byte, however long the sequence.
pub fn tiled_intensity(n: u64, d: u64, query_tile: u64) -> Result<f64, AttnError> {
    check_counts(&[("n", n), ("d", d), ("query_tile", query_tile)])?;
    let tiles = n.div_ceil(query_tile) as f64;
    let bytes = 8.0 * n as f64 * d as f64 * (1.0 + tiles);
    Ok(attention_flops(n, d) / bytes)
}
// ANCHOR_END: tiled_intensity

// ANCHOR: backward_intensity
/// The FLOPs of attention's backward pass over `n` tokens of width `d`:
/// five products of `2n²d` (`S` again, `dP`, `dV`, `dQ`, `dK`), two and a
/// half times the forward pass's `4n²d`, as FlashAttention-2 counts it.
/// A kernel that recomputes more (the crate's does seven products) is
/// still credited with these.
pub fn backward_flops(n: u64, d: u64) -> f64 {
    2.5 * attention_flops(n, d)
}

/// Bytes of a fused backward pass: it reads `Q`, `K`, `V`, the output and
/// its gradient and writes `dQ`, `dK`, `dV` (`8·n·d` floats), and never
/// stores the `n×n` weights.
pub fn backward_bytes(n: u64, d: u64) -> f64 {
    2.0 * activation_bytes(n, d)
}

/// Arithmetic intensity of a fused backward pass: `10n²d / 32nd = 5n/16`.
pub fn backward_intensity(n: u64, d: u64) -> Result<f64, AttnError> {
    check_counts(&[("n", n), ("d", d)])?;
    Ok(backward_flops(n, d) / backward_bytes(n, d))
}
// ANCHOR_END: backward_intensity

/// Arithmetic intensity of one of naive attention's two products, `QKᵀ` or
/// `weights·V`: `2n²d` FLOPs while the `n×n` matrix is written or read once
/// and the `n×d` operands move, `4n² + 8nd` bytes; about `d/2` for long
/// sequences.
pub fn naive_product_intensity(n: u64, d: u64) -> Result<f64, AttnError> {
    check_counts(&[("n", n), ("d", d)])?;
    Ok(attention_flops(n, d) / 2.0 / (scores_bytes(n) + 8.0 * n as f64 * d as f64))
}

/// Checks that sizes a ratio divides by are at least 1.
fn check_counts(sizes: &[(&'static str, u64)]) -> Result<(), AttnError> {
    let sizes: Vec<_> =
        sizes.iter().map(|&(name, x)| (name, x.min(usize::MAX as u64) as usize)).collect();
    check_nonzero(&sizes)
}

/// The roofline: the most GFLOP/s a kernel of `intensity` can reach on a
/// core with `peak` GFLOP/s and `bandwidth` GB/s (each finite and at least
/// 0).
pub fn roofline(intensity: f64, peak: f64, bandwidth: f64) -> Result<f64, AttnError> {
    for (name, value) in [("intensity", intensity), ("peak", peak), ("bandwidth", bandwidth)] {
        if !(value.is_finite() && value >= 0.0) {
            let requirement = "must be finite and at least 0";
            return Err(AttnError::InvalidArgument { name, value, requirement });
        }
    }
    Ok(peak.min(intensity * bandwidth))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intensity_grows_with_n_only_without_the_stored_scores() {
        // Flash-style: 4n²d / (16nd) = n/4 FLOPs per byte.
        assert_eq!(attention_intensity(1024, 64, false).unwrap(), 256.0);
        assert_eq!(attention_intensity(4096, 64, false).unwrap(), 1024.0);
        // Causal: half the FLOPs over the same bytes, n/8.
        let causal = causal_attention_flops(4096, 64) / attention_bytes(4096, 64, false);
        assert_eq!(causal, 4096.0 / 8.0);
        assert_eq!(2.0 * causal_attention_flops(4096, 64), attention_flops(4096, 64));
        // Storing the scores bounds it near 4n²d / (4 · 4n²) = d/4 = 16.
        let stored = attention_intensity(4096, 64, true).unwrap();
        assert!(stored < 16.0 && stored > 10.0, "{stored}");
        // Re-reading K and V for each query tile: about query_tile / 2.
        let tiled = tiled_intensity(4096, 64, 256).unwrap();
        assert!((tiled - 256.0 / 2.0 * 16.0 / 17.0).abs() < 1e-9, "{tiled}");
        assert_eq!(tiled_intensity(4096, 64, 4096).unwrap(), 4096.0 / 4.0);
        assert!((naive_product_intensity(1 << 20, 64).unwrap() - 32.0).abs() < 0.01);
        // The backward pass: 10n²d FLOPs over 8nd floats, 5n/16.
        assert_eq!(backward_flops(1024, 64), 10.0 * 1024.0 * 1024.0 * 64.0);
        assert_eq!(backward_intensity(4096, 64).unwrap(), 5.0 * 4096.0 / 16.0);
        assert_eq!(roofline(1.0, 100.0, 20.0).unwrap(), 20.0);
        assert_eq!(roofline(10.0, 100.0, 20.0).unwrap(), 100.0);
    }

    #[test]
    fn the_machine_measurements_are_positive_and_finite() {
        let peak = fma_peak(1000, 2).unwrap();
        if let Some(wide) = fma_peak_512(1000, 2).unwrap() {
            assert!(wide.is_finite() && wide > 0.0);
        }
        let bandwidth = triad_bandwidth(1 << 16, 2).unwrap();
        assert!(peak.is_finite() && peak > 0.0);
        assert!(bandwidth.is_finite() && bandwidth > 0.0);
    }
}
