//! The cost model of one attention layer: FLOPs and memory as functions of
//! the sequence length `n` and the width `d` (one head, `d_k = d_v = d`, or
//! all heads together with `d = d_model`: in the matrix products `h`
//! cancels, chapter 5; the scores are `n²` per head).
//! A multiply-add counts as 2 FLOPs; the softmax's `n²` exponentials are not
//! FLOPs here; the appendix "Making it fast" measures them.

use crate::error::AttnError;

// ANCHOR: cost_model
/// FLOPs of the four projections (`Q`, `K`, `V` and the output), each an
/// `n×d` by `d×d` product: `4 · 2nd²`. Linear in `n`.
pub fn projection_flops(n: u64, d: u64) -> f64 {
    let (n, d) = (n as f64, d as f64); // counted in f64: no overflow for any n, d
    4.0 * 2.0 * n * d * d
}

/// FLOPs of attention proper: the scores `QKᵀ` (`2n²d`) and the weighted sum
/// of the values (`2n²d`). Quadratic in `n`.
pub fn attention_flops(n: u64, d: u64) -> f64 {
    let (n, d) = (n as f64, d as f64);
    2.0 * n * n * d + 2.0 * n * n * d
}

/// The length at which the two are equal: `8nd² = 4n²d` when `n = 2d`.
/// Shorter sequences spend most FLOPs in the projections, longer ones in
/// attention.
pub fn crossover_length(d: u64) -> f64 {
    2.0 * d as f64
}

// ANCHOR: block_cost
/// FLOPs of a block's feed-forward network (chapter 10): an `n×d` by `d×d_ff`
/// product and an `n×d_ff` by `d_ff×d` product, `2 · 2nd·d_ff`. With
/// `d_ff = 4d` that is `16nd²`.
pub fn feed_forward_flops(n: u64, d: u64, d_ff: u64) -> f64 {
    2.0 * 2.0 * n as f64 * d as f64 * d_ff as f64
}

/// The length at which a whole block's attention term equals its linear
/// terms: `8nd² + 4nd·d_ff = 4n²d` when `n = 2d + d_ff`, which is `6d` for
/// the usual `d_ff = 4d`.
pub fn block_crossover_length(d: u64, d_ff: u64) -> f64 {
    2.0 * d as f64 + d_ff as f64
}
// ANCHOR_END: block_cost

/// Bytes of the `n×n` scores (or weights) in `f32`: what naive attention
/// must hold at once, for each head.
pub fn scores_bytes(n: u64) -> f64 {
    4.0 * n as f64 * n as f64
}

/// Bytes of the `n×d` matrices `Q`, `K`, `V` and the output in `f32`: what
/// any attention must hold.
pub fn activation_bytes(n: u64, d: u64) -> f64 {
    4.0 * 4.0 * n as f64 * d as f64
}
// ANCHOR_END: cost_model

// ANCHOR: fit
/// The exponent `κ` of the power law `time ∝ n^κ` that fits the points
/// `(n, time)` best in the least-squares sense on a log-log scale: the slope
/// of the line through `(ln n, ln time)`. Quadratic cost shows as `κ ≈ 2`.
pub fn fitted_exponent(points: &[(f64, f64)]) -> Result<f64, AttnError> {
    let usable = |&(n, t): &(f64, f64)| n > 0.0 && t > 0.0 && n.is_finite() && t.is_finite();
    if points.len() < 2 || !points.iter().all(usable) {
        return Err(AttnError::InvalidArgument {
            name: "points",
            value: points.len() as f64,
            requirement: "must be at least 2, with positive, finite n and t",
        });
    }
    let logs: Vec<(f64, f64)> = points.iter().map(|&(n, t)| (n.ln(), t.ln())).collect();
    let count = logs.len() as f64;
    let mean_x = logs.iter().map(|p| p.0).sum::<f64>() / count;
    let mean_y = logs.iter().map(|p| p.1).sum::<f64>() / count;
    let covariance: f64 = logs.iter().map(|(x, y)| (x - mean_x) * (y - mean_y)).sum();
    let variance: f64 = logs.iter().map(|(x, _)| (x - mean_x).powi(2)).sum();
    if variance == 0.0 {
        return Err(AttnError::InvalidArgument {
            name: "points",
            value: points.len() as f64,
            requirement: "must have at least two different n",
        });
    }
    Ok(covariance / variance)
}
// ANCHOR_END: fit

#[cfg(test)]
mod tests {
    use super::*;
    use crate::multihead::multihead_flops;

    #[test]
    fn the_two_terms_add_up_to_the_layer_and_cross_at_2d() {
        for (n, d) in [(1, 1), (128, 64), (512, 512), (4096, 64)] {
            let layer = multihead_flops(n, n, d, 1).unwrap();
            assert_eq!(
                projection_flops(n as u64, d as u64) + attention_flops(n as u64, d as u64),
                layer
            );
        }
        for d in [64, 512, 4096] {
            let n = crossover_length(d) as u64;
            assert_eq!(projection_flops(n, d), attention_flops(n, d));
            assert!(projection_flops(n - 1, d) > attention_flops(n - 1, d));
            assert!(projection_flops(n + 1, d) < attention_flops(n + 1, d));
        }
    }

    #[test]
    fn the_fit_recovers_known_exponents() {
        for b in [1.0, 2.0, 2.5] {
            let points: Vec<(f64, f64)> =
                [128.0, 256.0, 1024.0, 4096.0_f64].iter().map(|&n| (n, 3e-9 * n.powf(b))).collect();
            assert!((fitted_exponent(&points).unwrap() - b).abs() < 1e-9);
        }
        assert!(fitted_exponent(&[(1.0, 2.0)]).is_err(), "one point has no slope");
        assert!(fitted_exponent(&[(4.0, 2.0), (4.0, 3.0)]).is_err(), "nor does one n");
    }

    #[test]
    fn sixteen_gibibytes_of_scores_at_65536() {
        assert_eq!(scores_bytes(65_536), (16u64 << 30) as f64);
        assert_eq!(scores_bytes(4096), (64u64 << 20) as f64);
        assert_eq!(activation_bytes(65_536, 64), (64u64 << 20) as f64);
    }

    #[test]
    fn counts_never_overflow() {
        let huge = projection_flops(u64::MAX, u64::MAX);
        assert!(huge.is_finite() && huge > 1e57);
        assert!(attention_flops(u64::MAX, u64::MAX).is_finite());
        assert!(block_crossover_length(u64::MAX, u64::MAX) > 1e19);
    }
}
