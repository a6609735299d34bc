//! Chapter 13, exercises 1 and 2: greedy decoding written out, and the
//! lowest loss label smoothing allows.

use crate::error::AttnError;
use crate::translation::{next_log_probs, Seq2Seq, EOS};

// ANCHOR: greedy_translate
/// Greedy decoding as a plain loop: append the most probable next token
/// until the model writes EOS or the target reaches the model's longest.
/// Returns the tokens without EOS.
pub fn greedy_translate(net: &Seq2Seq, source: &[usize]) -> Result<Vec<usize>, AttnError> {
    let longest = net.config().max_lengths.1;
    let mut tokens = Vec::new();
    while tokens.len() < longest {
        let log_p = next_log_probs(net, source, &tokens)?;
        let mut best = 0;
        for (token, &lp) in log_p.iter().enumerate() {
            if lp > log_p[best] {
                best = token;
            }
        }
        if best == EOS {
            break;
        }
        tokens.push(best);
    }
    Ok(tokens)
}
// ANCHOR_END: greedy_translate

// ANCHOR: smoothing_floor
/// The lowest loss a model can reach under label smoothing `ε` over `v`
/// tokens.
///
/// The entropy of the smoothed target itself, reached when the model
/// predicts exactly `1 − ε + ε/v` for the right token and `ε/v` for
/// each other. `ε` outside `[0, 1]` and `v = 0` are errors.
pub fn smoothing_floor(epsilon: f64, v: usize) -> Result<f64, AttnError> {
    if !(0.0..=1.0).contains(&epsilon) {
        let requirement = "must be from 0 to 1";
        return Err(AttnError::InvalidArgument { name: "epsilon", value: epsilon, requirement });
    }
    crate::check::check_nonzero(&[("v", v)])?;
    let (right, other) = (1.0 - epsilon + epsilon / v as f64, epsilon / v as f64);
    let h = |p: f64| if p > 0.0 { -p * p.ln() } else { 0.0 }; // 0 ln 0 = 0
    Ok(h(right) + (v - 1) as f64 * h(other)) // the v − 1 others alike: no array of v
}
// ANCHOR_END: smoothing_floor

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grad::Matrix;
    use crate::nn::smoothed_cross_entropy;
    use crate::translation::{translate, translation_set, Seq2SeqConfig, TARGET_VOCAB};

    /// At each step take the next token's log-probabilities given the source and the tokens so
    /// far, and append the most probable (the first of equals, as a strict > finds it). Stop when
    /// that token is EOS, which is not appended, or when the target reaches the model's longest,
    /// `config().max_lengths.1`.
    #[test]
    fn the_loop_decodes_what_a_beam_of_one_decodes() {
        let config = Seq2SeqConfig {
            d_model: 8,
            heads: 2,
            d_ff: 16,
            layers: 1,
            max_lengths: (12, 8),
            bottleneck: false,
            vocab: crate::translation::NUMBER_VOCAB,
        };
        // Untrained models write arbitrary tokens, which is what makes the
        // comparison strict: both must pick the same one at every step.
        for seed in 0..3 {
            let net = Seq2Seq::new(config, seed).unwrap();
            for pair in translation_set(20, seed, &[]).unwrap() {
                let looped = greedy_translate(&net, &pair.source).unwrap();
                assert_eq!(looped, translate(&net, &pair.source, 1).unwrap());
                assert!(looped.len() <= config.max_lengths.1);
            }
        }
    }

    /// The lowest loss label smoothing allows is the cross-entropy of the smoothed target with
    /// itself, its entropy: 1 − ε + ε/V on the right token and ε/V on each of the V − 1 others, so
    /// the floor is −Σ p log p over those V probabilities. With ε = 0 it is 0.
    #[test]
    fn the_floor_is_the_loss_at_the_smoothed_target() {
        let (epsilon, v) = (0.1, TARGET_VOCAB);
        let p = |j: usize| {
            if j == 0 {
                1.0 - epsilon + epsilon / v as f64
            } else {
                epsilon / v as f64
            }
        };
        let z = Matrix::from_shape_fn((1, v), |(_, j)| p(j).ln());
        let (loss, _) = smoothed_cross_entropy(&z, &[Some(0)], epsilon).unwrap();
        assert!((loss - smoothing_floor(epsilon, v).unwrap()).abs() < 1e-12);
        assert_eq!(smoothing_floor(0.0, v).unwrap(), 0.0);
    }
}
