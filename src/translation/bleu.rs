//! Corpus BLEU (Papineni, Roukos, Ward and Zhu, 2002): how many of the
//! candidate translations' n-grams, n = 1 to 4, appear in the references,
//! with a penalty for candidates that are too short.

use std::collections::HashMap;

use crate::error::AttnError;

/// Corpus BLEU and its parts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bleu {
    /// `BP · exp(Σ_n ¼ ln p_n)`, between 0 and 1.
    pub score: f64,
    /// The modified n-gram precisions `p_1 … p_4`.
    pub precisions: [f64; 4],
    /// For each `n`, the clipped matches and the candidate n-grams whose
    /// ratio is `p_n`.
    pub counts: [(usize, usize); 4],
    /// The candidates' total length `c` and the references' `r`.
    pub lengths: (usize, usize),
    /// The brevity penalty: 1 if the candidates are longer than the
    /// references in total, else `exp(1 − r/c)`.
    pub brevity_penalty: f64,
}

/// The n-grams of `tokens` and how often each occurs.
pub(super) fn ngrams(tokens: &[usize], n: usize) -> HashMap<&[usize], usize> {
    let mut counts = HashMap::new();
    for gram in tokens.windows(n) {
        *counts.entry(gram).or_insert(0) += 1;
    }
    counts
}

/// At least one candidate, and one reference for each: what every score
/// of a set of candidates needs.
pub(super) fn check_pairs(
    candidates: &[Vec<usize>],
    references: &[Vec<usize>],
) -> Result<(), AttnError> {
    if candidates.len() != references.len() || candidates.is_empty() {
        return Err(AttnError::InvalidArgument {
            name: "candidates",
            value: candidates.len() as f64,
            requirement: "must be at least one, with one reference each",
        });
    }
    Ok(())
}

/// Corpus BLEU of `candidates` against one reference each. Precision `p_n`
/// sums over the whole corpus the candidate n-grams found in the
/// reference, each counted at most as often as the reference has it
/// ("clipped"), and divides by all candidate n-grams. No smoothing: if some
/// `p_n` is 0, or there are no n-grams of some order, the score is 0.
pub fn corpus_bleu(
    candidates: &[Vec<usize>],
    references: &[Vec<usize>],
) -> Result<Bleu, AttnError> {
    check_pairs(candidates, references)?;
    let mut precisions = [0.0; 4];
    let mut counts = [(0, 0); 4];
    for ((n, p_n), count) in (1..=4).zip(precisions.iter_mut()).zip(counts.iter_mut()) {
        let (mut matched, mut total) = (0, 0);
        for (candidate, reference) in candidates.iter().zip(references) {
            let reference_counts = ngrams(reference, n);
            for (gram, count) in ngrams(candidate, n) {
                matched += count.min(reference_counts.get(gram).copied().unwrap_or(0));
                total += count;
            }
        }
        *count = (matched, total);
        *p_n = if total == 0 { 0.0 } else { matched as f64 / total as f64 };
    }
    let c: usize = candidates.iter().map(Vec::len).sum();
    let r: usize = references.iter().map(Vec::len).sum();
    let brevity_penalty = if c == 0 {
        0.0
    } else if c > r {
        1.0
    } else {
        (1.0 - r as f64 / c as f64).exp()
    };
    let score = if precisions.contains(&0.0) {
        0.0
    } else {
        brevity_penalty * (precisions.iter().map(|p| p.ln()).sum::<f64>() / 4.0).exp()
    };
    Ok(Bleu { score, precisions, counts, lengths: (c, r), brevity_penalty })
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_abs_diff_eq;

    #[test]
    fn a_worked_example_computed_by_hand() {
        // Candidate 3 4 2 0 5 for 3 4 2 0 1 5; candidate 7 0 0 for 7 0 0.
        // 1-grams: 5 of 5 and 3 of 3. 2-grams: 34 42 20 of 34 42 20 05, and
        // 70 00: 5 of 6. 3-grams: 342 420 of 342 420 205, and 700: 3 of 4.
        // 4-grams: 3420 of 3420 4205: 1 of 2. Lengths c = 8, r = 9.
        let candidates = vec![vec![3, 4, 2, 0, 5], vec![7, 0, 0]];
        let references = vec![vec![3, 4, 2, 0, 1, 5], vec![7, 0, 0]];
        let bleu = corpus_bleu(&candidates, &references).unwrap();
        assert_eq!(bleu.precisions, [1.0, 5.0 / 6.0, 0.75, 0.5]);
        assert_eq!(bleu.counts, [(8, 8), (5, 6), (3, 4), (1, 2)]);
        assert_eq!(bleu.lengths, (8, 9));
        assert_abs_diff_eq!(bleu.brevity_penalty, (-0.125f64).exp(), epsilon = 1e-12);
        let by_hand = (-0.125f64).exp() * (5.0 / 6.0 * 0.75 * 0.5f64).powf(0.25);
        assert_abs_diff_eq!(bleu.score, by_hand, epsilon = 1e-12);
        assert_abs_diff_eq!(bleu.score, 0.6598, epsilon = 1e-4);
    }

    #[test]
    fn clipping_perfect_and_empty_cases() {
        // "0 0 0 0" against "0 1 2 3": one 0 in the reference, so one match.
        let clipped = corpus_bleu(&[vec![0, 0, 0, 0]], &[vec![0, 1, 2, 3]]).unwrap();
        assert_eq!(clipped.precisions[0], 0.25);
        assert_eq!(clipped.score, 0.0, "no 2-gram matches");
        let same = vec![vec![1, 2, 3, 4, 5]];
        assert_eq!(corpus_bleu(&same, &same).unwrap().score, 1.0);
        let empty = corpus_bleu(&[vec![]], &[vec![1, 2, 3, 4]]).unwrap();
        assert_eq!(empty.score, 0.0);
        assert!(corpus_bleu(&[], &[]).is_err());
        assert!(corpus_bleu(&same, &[]).is_err());
    }
}
