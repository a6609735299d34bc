//! Chapter 21's widget: the flash kernel's WGSL, run by the page through
//! WebGPU on the reader's GPU, and what the crate computes for the same
//! inputs on the processor, in WebAssembly, to compare with.

use attn::error::AttnError;
use attn::masking::{causal_mask, masked_attention};
use attn::scaling::standard_normal;
use ndarray::Array2;
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

/// The kernel the page runs: the crate's own files, `common.wgsl` first.
pub const KERNEL: &str =
    concat!(include_str!("../../src/gpu/common.wgsl"), include_str!("../../src/gpu/flash.wgsl"));

/// The widget's lengths, `n = m = 2^e`: from 64 to 2,048 queries and keys.
pub const LOG2_N: std::ops::RangeInclusive<u32> = 6..=11;
const SEED: u64 = 21;

/// The widget's `Q`, `K` and `V`, `n × d` each, `N(0, 1)` entries drawn
/// from a fixed seed.
pub fn inputs(log2_n: u32, d: usize) -> Result<[Array2<f32>; 3], AttnError> {
    if !LOG2_N.contains(&log2_n) || !(1..=64).contains(&d) {
        return Err(AttnError::InvalidArgument {
            name: "the widget's log₂ n (and d)",
            value: f64::from(log2_n),
            requirement: "must be from 6 to 11, with d from 1 to 64",
        });
    }
    let n = 1 << log2_n;
    let mut rng = StdRng::seed_from_u64(SEED);
    Ok([0; 3].map(|_| standard_normal(n, d, &mut rng)))
}

/// The crate's attention on [`inputs`], causal or not (chapter 6's
/// `masked_attention`), and each query's log-sum-exp of its scores, as
/// the flash kernel returns them.
pub fn reference(
    log2_n: u32,
    d: usize,
    causal: bool,
) -> Result<(Array2<f32>, Vec<f32>), AttnError> {
    let [q, k, v] = inputs(log2_n, d)?;
    let n = q.nrows();
    let keep = if causal { causal_mask(n, n) } else { Array2::from_elem((n, n), true) };
    let output = masked_attention(&q, &k, &v, &keep)?.output;
    let sqrt_d = (d as f64).sqrt();
    let lse = (0..n)
        .map(|i| {
            let scores: Vec<f64> = (0..n)
                .filter(|&j| keep[[i, j]])
                .map(|j| f64::from(q.row(i).dot(&k.row(j))) / sqrt_d)
                .collect();
            let top = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            (top + scores.iter().map(|s| (s - top).exp()).sum::<f64>().ln()) as f32
        })
        .collect();
    Ok((output, lse))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The widget's lengths and widths, and nothing past them.
    #[test]
    fn the_inputs_refuse_lengths_and_widths_past_the_widgets() {
        assert_eq!(inputs(6, 4).unwrap()[0].dim(), (64, 4));
        for (log2_n, d) in [(5, 4), (12, 4), (6, 0), (6, 65)] {
            let e = inputs(log2_n, d).unwrap_err().to_string();
            assert!(e.contains("log₂ n"), "2^{log2_n}, d = {d}: {e}");
        }
        let (output, lse) = reference(6, 4, true).unwrap();
        assert_eq!((output.dim(), lse.len()), ((64, 4), 64));
        assert_eq!(output.row(0), inputs(6, 4).unwrap()[2].row(0), "the first query sees one key");
    }
}
