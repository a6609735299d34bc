//! The summarisation task: a sentence of colour words in runs, summarised
//! by a count and a colour for each run ("red red red blue blue blue blue"
//! → "3 red 4 blue"). Every target token sums up a span of the source (a
//! whole run) rather than translating one word, and the summary is shorter
//! than its source: each run has at least three words and two summary
//! tokens.

use std::ops::Range;

use ndarray_rand::rand::{rngs::StdRng, Rng, SeedableRng};

use super::numbers::PAD;
use crate::check::MAX_ENTRIES;
use crate::error::AttnError;

/// The source words: each word's id is its index plus 3 (after `PAD`,
/// `BOS` and `EOS`).
pub const COLOURS: [&str; 6] = ["red", "blue", "green", "yellow", "black", "white"];

/// The shortest and longest run.
pub const RUN_LENGTHS: Range<usize> = 3..8;

/// Target tokens: `PAD`, `BOS`, `EOS`, the counts 1 to 9 (ids 3 to 11; the
/// runs use 3 to 7),
/// then the colours (ids 12 to 17).
pub const SUMMARY_VOCAB: usize = 12 + COLOURS.len();

/// One example: the runs, the source ids and the summary's ids (without
/// `BOS` or `EOS`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SummaryPair {
    /// Each run's colour (index in [`COLOURS`]) and length.
    pub runs: Vec<(usize, usize)>,
    /// Source ids: colour `c` is `c + 3`.
    pub source: Vec<usize>,
    /// Summary ids: count `k` is `k + 2`, colour `c` is `c + 12`.
    pub target: Vec<usize>,
}

/// The pair of `runs` (colour, length in [`RUN_LENGTHS`]): two summary
/// tokens a run. There must be a run, and no run of the colour of the run
/// before it (the two would read as one longer run).
pub fn summary_pair(runs: &[(usize, usize)]) -> Result<SummaryPair, AttnError> {
    if runs.is_empty() {
        return Err(AttnError::InvalidArgument {
            name: "runs",
            value: 0.0,
            requirement: "must hold at least one run: a summary of nothing is no pair",
        });
    }
    for (i, &(colour, length)) in runs.iter().enumerate() {
        let repeated = i > 0 && runs[i - 1].0 == colour;
        if colour >= COLOURS.len() || !RUN_LENGTHS.contains(&length) || repeated {
            return Err(AttnError::InvalidArgument {
                name: "run",
                value: i as f64,
                requirement: "must have a colour below 6, other than the run before's, and a \
                              length from 3 to 7",
            });
        }
    }
    let source =
        runs.iter().flat_map(|&(colour, length)| std::iter::repeat_n(colour + 3, length)).collect();
    let target = runs.iter().flat_map(|&(colour, length)| [length + 2, colour + 12]).collect();
    Ok(SummaryPair { runs: runs.to_vec(), source, target })
}

/// The source positions each summary token sums up: its run's span, for
/// both the count and the colour. A pair whose fields disagree (built by
/// hand, not by [`summary_pair`]) is refused.
pub fn spans(pair: &SummaryPair) -> Result<Vec<Range<usize>>, AttnError> {
    if summary_pair(&pair.runs).as_ref() != Ok(pair) {
        return Err(AttnError::Mismatched {
            name: "summary pair",
            requirement: "must have the source and target of its runs, each run of 3 to 7 \
                          words and a colour below 6",
        });
    }
    let mut start = 0;
    let mut spans = Vec::new();
    for &(_, length) in &pair.runs {
        spans.extend([start..start + length, start..start + length]);
        start += length;
    }
    Ok(spans)
}

/// `count` random pairs (seeded): `runs.start` to `runs.end − 1` runs, each
/// of a colour other than its neighbour's and of a length in
/// [`RUN_LENGTHS`], every choice uniform. Pairs may repeat; the summary is
/// never as long as its source.
pub fn summary_set(
    count: usize,
    seed: u64,
    runs: Range<usize>,
) -> Result<Vec<SummaryPair>, AttnError> {
    if runs.is_empty() || runs.start == 0 {
        return Err(AttnError::InvalidArgument {
            name: "runs",
            value: runs.start as f64,
            requirement: "must be a range of at least one run, from 1",
        });
    }
    // The longest source a pair can have, for every pair: checked first.
    let longest = (runs.end - 1).saturating_mul(RUN_LENGTHS.end - 1);
    crate::check::check_total("the summary pairs' sources", &[count, longest], MAX_ENTRIES)?;
    let mut rng = StdRng::seed_from_u64(seed);
    (0..count)
        .map(|_| {
            let n = rng.random_range(runs.clone());
            let mut chosen: Vec<(usize, usize)> = Vec::with_capacity(n);
            for _ in 0..n {
                let previous = chosen.last().map(|&(c, _)| c);
                let colour = loop {
                    let c = rng.random_range(0..COLOURS.len());
                    if Some(c) != previous {
                        break c;
                    }
                };
                chosen.push((colour, rng.random_range(RUN_LENGTHS)));
            }
            summary_pair(&chosen)
        })
        .collect()
}

/// The words of a source or summary, for printing: `PAD` and unknown ids
/// as `?`.
pub fn summary_words(ids: &[usize], source: bool) -> Vec<String> {
    ids.iter()
        .map(|&id| match (source, id) {
            (_, PAD) => "?".to_string(),
            (true, 3..=8) => COLOURS[id - 3].to_string(),
            (false, 3..=11) => (id - 2).to_string(),
            (false, 12..=17) => COLOURS[id - 12].to_string(),
            _ => "?".to_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sentence_and_its_summary() {
        let pair = summary_pair(&[(0, 3), (1, 4)]).unwrap();
        assert_eq!(summary_words(&pair.source, true).join(" "), "red red red blue blue blue blue");
        assert_eq!(summary_words(&pair.target, false).join(" "), "3 red 4 blue");
        assert_eq!(spans(&pair).unwrap(), vec![0..3, 0..3, 3..7, 3..7]);
        let mut edited = pair.clone();
        edited.runs[1].1 = 8;
        assert!(spans(&edited).is_err(), "runs that disagree with the source");
        edited.runs[1].1 = 4;
        edited.source.pop();
        assert!(spans(&edited).is_err(), "a source that disagrees with the runs");
        assert!(summary_pair(&[(6, 3)]).is_err());
        assert!(summary_pair(&[(0, 0)]).is_err());
        assert!(summary_pair(&[(0, 2)]).is_err(), "a summary as long as its source");
    }

    #[test]
    fn random_sets_are_seeded_and_keep_their_promises() {
        let set = summary_set(500, 7, 1..5).unwrap();
        assert_eq!(set, summary_set(500, 7, 1..5).unwrap());
        assert_ne!(set, summary_set(500, 8, 1..5).unwrap());
        for pair in &set {
            assert!((1..5).contains(&pair.runs.len()));
            assert!(pair.runs.windows(2).all(|w| w[0].0 != w[1].0));
            assert!(pair.runs.iter().all(|r| RUN_LENGTHS.contains(&r.1)));
            assert!(pair.target.len() < pair.source.len());
            assert_eq!(spans(pair).unwrap().len(), pair.target.len());
        }
        // Every number of runs and every run length occurs.
        for n in 1..5 {
            assert!(set.iter().any(|p| p.runs.len() == n));
        }
        for length in RUN_LENGTHS {
            assert!(set.iter().any(|p| p.runs.iter().any(|r| r.1 == length)));
        }
        assert!(summary_set(3, 1, 0..2).is_err());
        assert!(summary_set(3, 1, 2..2).is_err());
    }
}
