//! ROUGE (Lin, 2004): how much of a reference summary a candidate
//! recovers. ROUGE-N counts the reference's n-grams that the candidate
//! has (each at most as often as the candidate has it); ROUGE-L takes the
//! longest common subsequence, which rewards words in the reference's
//! order without asking them to be next to each other. Each is a recall
//! (over the reference), a precision (over the candidate) and their
//! harmonic mean, F1.

use super::bleu::{check_pairs, ngrams};
use crate::check::MAX_ENTRIES;
use crate::error::AttnError;

/// Recall, precision and F1 of one candidate against its reference.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rouge {
    /// Matches over the reference's n-grams (or length, for ROUGE-L).
    pub recall: f64,
    /// Matches over the candidate's n-grams (0 for an empty candidate).
    pub precision: f64,
    /// `2PR / (P + R)`, and 0 when both are 0.
    pub f1: f64,
}

impl Rouge {
    /// From `matches` of `candidate` and `reference` items.
    fn of(matches: usize, candidate: usize, reference: usize) -> Rouge {
        let ratio = |total: usize| match total {
            0 => 0.0,
            t => matches as f64 / t as f64,
        };
        let (recall, precision) = (ratio(reference), ratio(candidate));
        let f1 = match recall + precision {
            0.0 => 0.0,
            sum => 2.0 * precision * recall / sum,
        };
        Rouge { recall, precision, f1 }
    }
}

/// A reference must have at least `n` tokens: a recall over nothing
/// would be 0/0.
fn check_reference(reference: &[usize], n: usize) -> Result<(), AttnError> {
    if reference.len() < n.max(1) {
        return Err(AttnError::InvalidArgument {
            name: "reference",
            value: reference.len() as f64,
            requirement: "must have at least n tokens (at least 1)",
        });
    }
    Ok(())
}

// ANCHOR: rouge
/// ROUGE-N of `candidate` against `reference` (token ids), `n ≥ 1`.
pub fn rouge_n(candidate: &[usize], reference: &[usize], n: usize) -> Result<Rouge, AttnError> {
    if n == 0 {
        return Err(AttnError::InvalidArgument {
            name: "n",
            value: 0.0,
            requirement: "must be at least 1",
        });
    }
    check_reference(reference, n)?;
    let theirs = ngrams(candidate, n);
    let matches = ngrams(reference, n)
        .into_iter()
        .map(|(gram, count)| count.min(theirs.get(gram).copied().unwrap_or(0)))
        .sum();
    let grams = |tokens: &[usize]| (tokens.len() + 1).saturating_sub(n);
    Ok(Rouge::of(matches, grams(candidate), grams(reference)))
}

/// The length of the longest common subsequence of `x` and `y`: the
/// classic dynamic programme, one row at a time.
pub(crate) fn lcs_length(x: &[usize], y: &[usize]) -> usize {
    let mut previous = vec![0; y.len() + 1];
    for &a in x {
        let mut row = vec![0; y.len() + 1];
        for (j, &b) in y.iter().enumerate() {
            row[j + 1] = if a == b { previous[j] + 1 } else { row[j].max(previous[j + 1]) };
        }
        previous = row;
    }
    previous[y.len()]
}

/// ROUGE-L of `candidate` against `reference`: the longest common
/// subsequence over each one's length (Lin's F with β = 1).
pub fn rouge_l(candidate: &[usize], reference: &[usize]) -> Result<Rouge, AttnError> {
    check_reference(reference, 1)?;
    // The dynamic programme's work, one step per pair of tokens, bounded.
    let pairs = [candidate.len(), reference.len()];
    crate::check::check_total("the pairs of tokens ROUGE-L compares", &pairs, MAX_ENTRIES)?;
    let lcs = lcs_length(candidate, reference);
    Ok(Rouge::of(lcs, candidate.len(), reference.len()))
}
// ANCHOR_END: rouge

/// ROUGE-1, ROUGE-2 and ROUGE-L of a set of candidates, each the mean over
/// the pairs of its recall, precision and F1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RougeScores {
    /// ROUGE-1.
    pub one: Rouge,
    /// ROUGE-2.
    pub two: Rouge,
    /// ROUGE-L.
    pub l: Rouge,
}

/// [`RougeScores`] of `candidates` against one reference each (every
/// reference at least 2 tokens long, for ROUGE-2).
pub fn mean_rouge(
    candidates: &[Vec<usize>],
    references: &[Vec<usize>],
) -> Result<RougeScores, AttnError> {
    check_pairs(candidates, references)?;
    let mut sums = [[0.0; 3]; 3];
    for (c, r) in candidates.iter().zip(references) {
        for (sum, score) in
            sums.iter_mut().zip([rouge_n(c, r, 1)?, rouge_n(c, r, 2)?, rouge_l(c, r)?])
        {
            for (s, x) in sum.iter_mut().zip([score.recall, score.precision, score.f1]) {
                *s += x;
            }
        }
    }
    let mean = |[recall, precision, f1]: [f64; 3]| {
        let k = candidates.len() as f64;
        Rouge { recall: recall / k, precision: precision / k, f1: f1 / k }
    };
    Ok(RougeScores { one: mean(sums[0]), two: mean(sums[1]), l: mean(sums[2]) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_abs_diff_eq;

    /// Words as ids, each new word the next id.
    fn ids(sentences: &[&str]) -> Vec<Vec<usize>> {
        let mut vocab: Vec<&str> = Vec::new();
        let mut id = |w| match vocab.iter().position(|&v| v == w) {
            Some(i) => i,
            None => {
                vocab.push(w);
                vocab.len() - 1
            }
        };
        sentences.iter().map(|s| s.split_whitespace().map(&mut id).collect()).collect()
    }

    /// Lin (2004), section 3.1: against the reference "police killed the
    /// gunman", "police kill the gunman" and "the gunman kill police" have
    /// the same ROUGE-2 (one bigram of three, "the gunman"), but ROUGE-L
    /// tells them apart: a common subsequence of 3 words ("police the
    /// gunman") against 2 ("the gunman"), 0.75 against 0.5.
    #[test]
    fn lins_example_rouge_2_ties_and_rouge_l_does_not() {
        let s =
            ids(&["police killed the gunman", "police kill the gunman", "the gunman kill police"]);
        let (s2, s3) = (rouge_n(&s[1], &s[0], 2).unwrap(), rouge_n(&s[2], &s[0], 2).unwrap());
        assert_eq!(s2.recall, 1.0 / 3.0);
        assert_eq!(s2, s3);
        assert_eq!(rouge_l(&s[1], &s[0]).unwrap().f1, 0.75);
        assert_eq!(rouge_l(&s[2], &s[0]).unwrap().f1, 0.5);
        // ROUGE-1 by hand: "police", "the", "gunman" of 4 words, both ways.
        let one = rouge_n(&s[2], &s[0], 1).unwrap();
        assert_eq!((one.recall, one.precision, one.f1), (0.75, 0.75, 0.75));
    }

    #[test]
    fn matches_are_clipped_and_the_edges_are_defined() {
        // "the the the" for "the cat": one "the" in the reference.
        let s = ids(&["the cat", "the the the"]);
        let r = rouge_n(&s[1], &s[0], 1).unwrap();
        assert_eq!((r.recall, r.precision), (0.5, 1.0 / 3.0));
        assert_abs_diff_eq!(r.f1, 0.4, epsilon = 1e-12);
        // "the dog" for "the the cat": the candidate's one "the" matches once.
        let s2 = ids(&["the the cat", "the dog"]);
        assert_eq!(rouge_n(&s2[1], &s2[0], 1).unwrap().recall, 1.0 / 3.0);
        // An empty candidate recovers nothing; a reference too short for
        // its n-grams, or n = 0, is refused by name.
        assert_eq!(rouge_l(&[], &s[0]).unwrap().f1, 0.0);
        assert_eq!(rouge_n(&[], &s[0], 2).unwrap().recall, 0.0);
        let refused = |e: Result<Rouge, AttnError>, name: &str| {
            assert!(matches!(e, Err(AttnError::InvalidArgument { name: n, .. }) if n == name));
        };
        refused(rouge_n(&s[1], &[7], 2), "reference");
        refused(rouge_l(&s[1], &[]), "reference");
        refused(rouge_n(&s[1], &s[0], 0), "n");
        assert_eq!(lcs_length(&[1, 2, 3, 4, 5], &[2, 9, 4, 5, 1]), 3);
        // A candidate shorter than its reference: recall over the reference.
        let s3 = ids(&["police killed the gunman", "the gunman"]);
        let l = rouge_l(&s3[1], &s3[0]).unwrap();
        assert_eq!((l.recall, l.precision), (0.5, 1.0));
    }

    #[test]
    fn the_means_average_every_pair() {
        let s =
            ids(&["police killed the gunman", "police kill the gunman", "the gunman kill police"]);
        let scores =
            mean_rouge(&[s[1].clone(), s[0].clone()], &[s[0].clone(), s[0].clone()]).unwrap();
        assert_eq!(scores.l.f1, (0.75 + 1.0) / 2.0);
        assert_eq!(scores.two.recall, (1.0 / 3.0 + 1.0) / 2.0);
        assert!(mean_rouge(&[], &[]).is_err());
        assert!(mean_rouge(&s, &s[..1]).is_err());
    }
}
