//! Induction heads (Elhage et al., 2021; Olsson et al., 2022): heads that,
//! at a token seen before, attend to the token that followed it then, and
//! so copy it. Measured on sequences of random tokens repeated once, which
//! only copying can predict.

use ndarray::Array2;

use super::model::LanguageModel;
use super::train::SplitMix64;
use crate::error::AttnError;
use crate::nn::log_softmax;
use crate::real::Real;

/// `count` sequences of `half` random tokens (of a vocabulary of `vocab`)
/// followed by the same `half` tokens again.
pub fn repeated_sequences(seed: u64, count: usize, half: usize, vocab: usize) -> Vec<Vec<usize>> {
    let mut rng = SplitMix64::new(seed);
    (0..count)
        .map(|_| {
            let first: Vec<usize> =
                (0..half).map(|_| (rng.next_u64() % vocab.max(1) as u64) as usize).collect();
            first.iter().chain(&first).copied().collect()
        })
        .collect()
}

// ANCHOR: scores
/// What a model does on repeated sequences.
#[derive(Debug, Clone, PartialEq)]
pub struct InductionScores {
    /// The mean loss of predicting the first half's tokens 1 to `half − 1`
    /// (random: the best guess is no better than chance).
    pub first_half_loss: f64,
    /// The mean loss of predicting the repeat's tokens 1 to `half − 1`, each
    /// of which appeared earlier.
    pub repeat_loss: f64,
    /// Per block and head: the mean attention from a repeated token (at
    /// `half + j`) to the token after its first occurrence (at `j + 1`).
    pub prefix_matching: Array2<f64>,
    /// Per block and head: the mean attention from each position to the one
    /// before it.
    pub previous_token: Array2<f64>,
}

/// [`InductionScores`] of `model` on `sequences`, each a half repeated once.
pub fn induction_scores<F: Real>(
    model: &LanguageModel<F>,
    sequences: &[Vec<usize>],
) -> Result<InductionScores, AttnError> {
    let (t, half) = check_repeated(sequences)?; // length t = 2·half, the halves equal
    let fwd = model.forward(sequences)?;
    let logits = fwd.logits();
    let (mut first, mut repeat) = (0.0, 0.0);
    for (b, s) in sequences.iter().enumerate() {
        // Row b·t + i predicts token i + 1.
        let loss = |i: usize| -log_softmax(&logits.row(b * t + i))[s[i + 1]].wide();
        first += (0..half - 1).map(loss).sum::<f64>();
        repeat += (half..t - 1).map(loss).sum::<f64>();
    }
    let per_half = (sequences.len() * (half - 1)) as f64;
    let config = model.config();
    let mut prefix = Array2::zeros((config.layers, config.heads));
    let mut previous = Array2::zeros((config.layers, config.heads));
    for l in 0..config.layers {
        for h in 0..config.heads {
            for b in 0..sequences.len() {
                let p = fwd.weights(l, b, h)?;
                prefix[[l, h]] += (half..t).map(|i| p[[i, i - half + 1]].wide()).sum::<f64>();
                previous[[l, h]] += (1..t).map(|i| p[[i, i - 1]].wide()).sum::<f64>();
            }
        }
    }
    let count = sequences.len() as f64;
    Ok(InductionScores {
        first_half_loss: first / per_half,
        repeat_loss: repeat / per_half,
        prefix_matching: prefix / (count * half as f64),
        previous_token: previous / (count * (t - 1) as f64),
    })
}
// ANCHOR_END: scores

/// Checks that `sequences` all have one even length `t ≥ 4` and their
/// second half equal to their first; returns `(t, t/2)`.
fn check_repeated(sequences: &[Vec<usize>]) -> Result<(usize, usize), AttnError> {
    let t = sequences.first().map_or(0, Vec::len);
    if t < 4 || !t.is_multiple_of(2) {
        return Err(AttnError::InvalidArgument {
            name: "repeated sequence length",
            value: t as f64,
            requirement: "must be even and at least 4 (a half, then the half again)",
        });
    }
    let half = t / 2;
    if let Some(s) = sequences.iter().find(|s| s.len() != t || s[..half] != s[half..]) {
        return Err(AttnError::InvalidArgument {
            name: "sequence",
            value: s.len() as f64,
            requirement: "must all be of one length, their second half a copy of their first",
        });
    }
    Ok((t, half))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lm::{LmConfig, Positions, SHAKESPEARE_MODEL};

    const SMALL: LmConfig = LmConfig {
        vocab: 10,
        context: 8,
        d_model: 8,
        heads: 2,
        kv_heads: 2,
        layers: 2,
        d_ff: 16,
        positions: Positions::Learned,
        latent: None,
        ..SHAKESPEARE_MODEL
    };

    #[test]
    fn repeated_sequences_repeat_and_stay_in_the_vocabulary() {
        let s = repeated_sequences(3, 5, 4, 10);
        assert_eq!(s.len(), 5);
        assert!(s.iter().all(|s| s.len() == 8 && s[..4] == s[4..] && s.iter().all(|&t| t < 10)));
        assert_ne!(s[0], s[1]);
        assert_eq!(s, repeated_sequences(3, 5, 4, 10));
    }

    /// In an untrained model every causal row is near uniform: the weight on
    /// one key of row `i` is about `1/(i + 1)`, which the scores average.
    #[test]
    fn an_untrained_model_attends_about_uniformly() {
        let model = LanguageModel::<f64>::new(SMALL, 2).unwrap();
        let s = induction_scores(&model, &repeated_sequences(1, 6, 4, 10)).unwrap();
        let uniform_prefix = (4..8).map(|i| 1.0 / (i + 1) as f64).sum::<f64>() / 4.0;
        let uniform_previous = (1..8).map(|i| 1.0 / (i + 1) as f64).sum::<f64>() / 7.0;
        for (&p, &q) in s.prefix_matching.iter().zip(&s.previous_token) {
            assert!((p - uniform_prefix).abs() < 0.01, "{p} vs {uniform_prefix}");
            assert!((q - uniform_previous).abs() < 0.01, "{q} vs {uniform_previous}");
        }
        let ln10 = 10f64.ln();
        assert!((s.first_half_loss - ln10).abs() < 0.05 && (s.repeat_loss - ln10).abs() < 0.05);
    }

    #[test]
    fn sequences_that_do_not_repeat_are_refused() {
        let model = LanguageModel::<f64>::new(SMALL, 2).unwrap();
        let e = |s: Vec<Vec<usize>>| induction_scores(&model, &s).unwrap_err().to_string();
        assert!(e(vec![vec![1, 2, 3, 1, 2, 4]]).contains("copy"));
        assert!(e(vec![vec![1, 2, 1]]).contains("even"));
    }
}
