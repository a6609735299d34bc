//! Induction heads (Elhage et al., 2021; Olsson et al., 2022): heads that,
//! at a token seen before, attend to the token that followed it then, and
//! so copy it. Measured on sequences of random tokens repeated once, which
//! only copying can predict.

use ndarray::Array2;

use super::model::{LanguageModel, LmConfig};
use super::train::{Batch, SplitMix64};
use crate::check::{check_nonzero, check_total, MAX_ENTRIES};
use crate::error::AttnError;
use crate::nn::log_softmax;
use crate::real::Real;

/// `count` sequences of `half` random tokens (of a vocabulary of `vocab`,
/// at least 1) followed by the same `half` tokens again; at most
/// [`MAX_ENTRIES`] tokens in all.
pub fn repeated_sequences(
    seed: u64,
    count: usize,
    half: usize,
    vocab: usize,
) -> Result<Vec<Vec<usize>>, AttnError> {
    check_nonzero(&[("vocab", vocab)])?;
    check_total("the repeated sequences", &[count, half, 2], MAX_ENTRIES)?;
    let mut rng = SplitMix64::new(seed);
    Ok((0..count)
        .map(|_| {
            let first: Vec<usize> =
                (0..half).map(|_| (rng.next_u64() % vocab as u64) as usize).collect();
            first.iter().chain(&first).copied().collect()
        })
        .collect())
}

// ANCHOR: periodic
/// A training batch for a model of `config`: `count` sequences as long as
/// its context `T`, each position's target the token after it (the last
/// position predicts nothing). Each sequence is a random segment of `L`
/// tokens, `L` drawn from `T/16` to `T/2`, read over and over: after the
/// first `L`, every token can be predicted by copying, and, as `L` varies,
/// only by matching tokens, not positions. The data of chapter 16's
/// positive control for induction heads.
pub fn periodic_training_batch(
    config: &LmConfig,
    rng: &mut SplitMix64,
    count: usize,
) -> Result<(Batch, Vec<Option<usize>>), AttnError> {
    let (t, vocab) = (config.context, config.vocab as u64);
    if count == 0 || count.checked_mul(t).is_none_or(|n| n > MAX_BATCH_TOKENS) {
        return Err(AttnError::InvalidArgument {
            name: "periodic sequences per batch",
            value: count as f64,
            requirement: "must be at least 1, and with the context at most 2^20 tokens",
        });
    }
    if t < 32 {
        return Err(AttnError::InvalidArgument {
            name: "context",
            value: t as f64,
            requirement: "must be at least 32 to hold segments of T/16 to T/2 tokens",
        });
    }
    let (shortest, longest) = (t / 16, t / 2);
    let mut inputs = Vec::with_capacity(count);
    for _ in 0..count {
        let l = shortest + (rng.next_u64() % (longest - shortest + 1) as u64) as usize;
        let segment: Vec<usize> = (0..l).map(|_| (rng.next_u64() % vocab) as usize).collect();
        inputs.push(segment.iter().cycle().take(t).copied().collect::<Vec<_>>());
    }
    let targets =
        inputs.iter().flat_map(|s| s[1..].iter().map(|&x| Some(x)).chain([None])).collect();
    Ok((inputs, targets))
}
// ANCHOR_END: periodic

/// The most tokens one batch of [`periodic_training_batch`] may hold.
const MAX_BATCH_TOKENS: usize = 1 << 20;

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
        let s = repeated_sequences(3, 5, 4, 10).unwrap();
        assert_eq!(s.len(), 5);
        assert!(s.iter().all(|s| s.len() == 8 && s[..4] == s[4..] && s.iter().all(|&t| t < 10)));
        assert_ne!(s[0], s[1]);
        assert_eq!(s, repeated_sequences(3, 5, 4, 10).unwrap());
    }

    /// In an untrained model every causal row is near uniform: the weight on
    /// one key of row `i` is about `1/(i + 1)`, which the scores average.
    #[test]
    fn an_untrained_model_attends_about_uniformly() {
        let model = LanguageModel::<f64>::new(SMALL, 2).unwrap();
        let s = induction_scores(&model, &repeated_sequences(1, 6, 4, 10).unwrap()).unwrap();
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
    fn periodic_batches_repeat_a_segment_and_predict_the_next_token() {
        let config = LmConfig { vocab: 7, context: 64, ..SMALL };
        let mut rng = SplitMix64::new(5);
        let (inputs, targets) = periodic_training_batch(&config, &mut rng, 40).unwrap();
        assert_eq!((inputs.len(), targets.len()), (40, 40 * 64));
        let mut periods = Vec::new();
        for (b, s) in inputs.iter().enumerate() {
            assert!(s.len() == 64 && s.iter().all(|&t| t < 7));
            // The segment's length: the shortest period the sequence has.
            let l = (1..=64).find(|&l| (l..64).all(|i| s[i] == s[i - l])).unwrap();
            periods.push(l);
            let row = &targets[b * 64..(b + 1) * 64];
            assert!(row[..63].iter().zip(&s[1..]).all(|(t, &x)| *t == Some(x)));
            assert_eq!(row[63], None);
        }
        // Drawn from T/16 = 4 to T/2 = 32 (a random segment can have a
        // shorter period only by chance: rare over 7 tokens and 4 or more).
        assert!(periods.iter().all(|&l| l <= 32));
        assert!(periods.iter().filter(|&&l| l >= 4).count() >= 38);
        assert!(periods.iter().collect::<std::collections::BTreeSet<_>>().len() > 10);
        // Fresh draws each time.
        assert_ne!(periodic_training_batch(&config, &mut rng, 40).unwrap().0, inputs);
    }

    #[test]
    fn periodic_batches_refuse_what_cannot_hold_them() {
        let config = LmConfig { context: 64, ..SMALL };
        let e = |c: &LmConfig, n: usize| {
            periodic_training_batch(c, &mut SplitMix64::new(1), n).unwrap_err().to_string()
        };
        assert!(e(&config, 0).contains("periodic sequences per batch"));
        assert!(e(&config, 1 << 40).contains("2^20"));
        assert!(e(&config, usize::MAX).contains("2^20"));
        assert!(e(&LmConfig { context: 16, ..SMALL }, 2).contains("context"));
    }

    #[test]
    fn sequences_that_do_not_repeat_are_refused() {
        let model = LanguageModel::<f64>::new(SMALL, 2).unwrap();
        let e = |s: Vec<Vec<usize>>| induction_scores(&model, &s).unwrap_err().to_string();
        assert!(e(vec![vec![1, 2, 3, 1, 2, 4]]).contains("copy"));
        assert!(e(vec![vec![1, 2, 1]]).contains("even"));
    }
}
