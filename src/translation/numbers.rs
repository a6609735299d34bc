//! The number-words task: source sentences, target digits, vocabularies.

use std::collections::HashSet;

use ndarray_rand::rand::{rngs::StdRng, Rng, SeedableRng};

use crate::error::AttnError;

const ONES: [&str; 20] = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
];
const TENS: [&str; 10] =
    ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"];

/// The words of `1 ≤ x ≤ 999`, ones before tens ("two and forty").
fn below_thousand(x: u32, words: &mut Vec<&'static str>) {
    let (hundreds, rest) = (x / 100, x % 100);
    if hundreds > 0 {
        words.extend([ONES[hundreds as usize], "hundred"]);
    }
    match rest {
        0 => {}
        1..=19 => words.push(ONES[rest as usize]),
        _ if rest % 10 == 0 => words.push(TENS[(rest / 10) as usize]),
        _ => words.extend([ONES[(rest % 10) as usize], "and", TENS[(rest / 10) as usize]]),
    }
}

/// The source sentence of `1 ≤ x ≤ 999,999`: "three hundred two and forty
/// thousand fifteen" for 342,015.
pub fn number_words(x: u32) -> Result<Vec<&'static str>, AttnError> {
    if !(1..=999_999).contains(&x) {
        return Err(AttnError::InvalidArgument {
            name: "number",
            value: f64::from(x),
            requirement: "must be from 1 to 999,999",
        });
    }
    let mut words = Vec::new();
    if x >= 1000 {
        below_thousand(x / 1000, &mut words);
        words.push("thousand");
    }
    if !x.is_multiple_of(1000) {
        below_thousand(x % 1000, &mut words);
    }
    Ok(words)
}

// ANCHOR: alignment
/// Which source word each target digit of `x` translates: `Some(j)` for
/// word `j`, `None` for a zero no word names (the 0 of "three hundred
/// five"). A digit is named by its ones, tens or teen word ("two and
/// forty" → 4 from "forty", 2 from "two"; "twelve" → both of 1 2); the
/// zeros of a round number come from the word that makes it round: 7 0 0
/// from "seven hundred", the three zeros of 21,000 from "thousand".
pub fn alignment(x: u32) -> Result<Vec<Option<usize>>, AttnError> {
    number_words(x)?; // checks the range
    let mut digits = Vec::new();
    let mut next_word = 0;
    for (group, value) in [(1000, x / 1000), (1, x % 1000)] {
        let padded = group == 1 && x >= 1000; // the low group writes all 3 digits
        let here = |i: usize| Some(next_word + i);
        let (hundreds, rest) = (value / 100, value % 100);
        let mut used = 0;
        let mut group_digits: Vec<Option<usize>> = Vec::new();
        if hundreds > 0 {
            group_digits.push(here(0)); // "seven" of "seven hundred"
            used = 2;
        } else if padded {
            group_digits.push(None);
        }
        let round = if hundreds > 0 { here(1) } else { None }; // "hundred"
        let (tens, ones) = match rest {
            0 => (round, round),
            1..=9 => (None, here(used)),
            10..=19 => (here(used), here(used)),
            _ if rest % 10 == 0 => (here(used), here(used)),
            _ => (here(used + 2), here(used)), // "two and forty"
        };
        used += match rest {
            0 => 0,
            1..=19 => 1,
            _ if rest % 10 == 0 => 1,
            _ => 3,
        };
        if hundreds > 0 || padded || rest >= 10 {
            group_digits.push(tens);
        }
        if value > 0 || padded {
            group_digits.push(ones);
        }
        if group == 1000 && value > 0 {
            used += 1; // "thousand"
            if x.is_multiple_of(1000) {
                group_digits.extend([here(used - 1); 3]); // 21,000: "thousand" → 0 0 0
            }
        }
        if value > 0 {
            // (a round thousand's low group: its zeros came with "thousand")
            digits.extend(group_digits);
            next_word += used;
        }
    }
    Ok(digits)
}
// ANCHOR_END: alignment

/// Every source word, in a fixed order: a word's id is its index plus 3
/// (after [`PAD`], [`BOS`] and [`EOS`]).
pub fn source_vocabulary() -> Vec<&'static str> {
    let mut words: Vec<&'static str> = ONES[1..].to_vec();
    words.extend(&TENS[2..]);
    words.extend(["hundred", "thousand", "and"]);
    words
}

/// Padding, in both vocabularies.
pub const PAD: usize = 0;
/// Beginning of sequence: the decoder's first input.
pub const BOS: usize = 1;
/// End of sequence: the decoder's last output.
pub const EOS: usize = 2;
/// Target tokens: [`PAD`], [`BOS`], [`EOS`], then the digits 0–9 (id 3–12).
pub const TARGET_VOCAB: usize = 13;
/// The longest source, in words ("nine hundred nine and ninety thousand
/// nine hundred nine and ninety" has eleven).
pub const LONGEST_SOURCE: usize = 11;

/// Source tokens: [`PAD`], [`BOS`], [`EOS`], then the 30 words of
/// [`source_vocabulary`].
pub const SOURCE_VOCAB: usize = 33;

/// The number task's vocabularies, `(source, target)`.
pub const NUMBER_VOCAB: (usize, usize) = (SOURCE_VOCAB, TARGET_VOCAB);

/// One example: source word ids and target digit ids, without BOS or EOS.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TranslationPair {
    /// The number.
    pub number: u32,
    /// Source word ids (index in [`source_vocabulary`] plus 3).
    pub source: Vec<usize>,
    /// Target ids: digit `d` is `d + 3`.
    pub target: Vec<usize>,
}

/// The pair of `x`: its words and its digits, as ids.
pub fn number_pair(x: u32) -> Result<TranslationPair, AttnError> {
    let vocabulary = source_vocabulary();
    let source = number_words(x)?
        .into_iter()
        .map(|w| vocabulary.iter().position(|v| *v == w).map_or(PAD, |i| i + 3))
        .collect();
    let target = x.to_string().bytes().map(|b| (b - b'0') as usize + 3).collect();
    Ok(TranslationPair { number: x, source, target })
}

/// A random number from 1 to 999,999 whose six digits are drawn one by
/// one: 0 with probability ½, else 1 to 9 evenly (a draw of 0 is redrawn).
/// Zeros make numbers shorter and rounder, so sources of every length from
/// one word to eleven occur, where uniform numbers are nearly all six
/// digits long.
fn random_number(rng: &mut StdRng) -> u32 {
    loop {
        let x = (0..6).fold(0, |x, _| {
            let digit = if rng.random_bool(0.5) { 0 } else { rng.random_range(1..=9) };
            10 * x + digit
        });
        if x > 0 {
            return x;
        }
    }
}

/// `count` distinct pairs of random numbers (seeded; each digit 0 with
/// probability ½), none of them in `exclude` (a held-out set, say).
pub fn translation_set(
    count: usize,
    seed: u64,
    exclude: &[TranslationPair],
) -> Result<Vec<TranslationPair>, AttnError> {
    if count > 100_000 {
        return Err(AttnError::InvalidArgument {
            name: "count",
            value: count as f64,
            requirement: "must be at most 100,000 (a tenth of the numbers)",
        });
    }
    let excluded: HashSet<u32> = exclude.iter().map(|p| p.number).collect();
    if excluded.len() > 100_000 {
        // With at most a tenth of the numbers excluded and a tenth asked
        // for, the draws below end after a few times `count` tries.
        return Err(AttnError::InvalidArgument {
            name: "excluded numbers",
            value: excluded.len() as f64,
            requirement: "must be at most 100,000 distinct numbers (a tenth of the numbers)",
        });
    }
    let mut rng = StdRng::seed_from_u64(seed);
    let mut seen = HashSet::new();
    let mut pairs = Vec::with_capacity(count);
    while pairs.len() < count {
        let x = random_number(&mut rng);
        if !excluded.contains(&x) && seen.insert(x) {
            pairs.push(number_pair(x)?);
        }
    }
    Ok(pairs)
}

/// `per_length` distinct pairs of every source length in `lengths` (in
/// words), drawn evenly (seeded) from the numbers of that length that are
/// not in `exclude`, in the order of `lengths`. A set balanced by length,
/// so that long sources are as common as short ones.
pub fn balanced_set(
    per_length: usize,
    lengths: &[usize],
    seed: u64,
    exclude: &[TranslationPair],
) -> Result<Vec<TranslationPair>, AttnError> {
    use ndarray_rand::rand::seq::SliceRandom;
    // The task has 999,999 numbers of 1 to 11 words: a length or a count
    // beyond them is an error before anything is built for it.
    if let Some(&len) = lengths.iter().find(|&&l| l > LONGEST_SOURCE) {
        return Err(AttnError::OutOfRange {
            name: "source length",
            value: len,
            requirement: "must be at most the longest source, in words",
            limit: LONGEST_SOURCE,
        });
    }
    crate::check::check_total("the balanced pairs", &[per_length, lengths.len()], 999_999)?;
    let excluded: HashSet<u32> = exclude.iter().map(|p| p.number).collect();
    let mut by_length: Vec<Vec<u32>> = vec![Vec::new(); lengths.iter().max().map_or(0, |l| l + 1)];
    for x in 1..=999_999 {
        let len = number_words(x)?.len();
        if len < by_length.len() && !excluded.contains(&x) {
            by_length[len].push(x);
        }
    }
    let mut rng = StdRng::seed_from_u64(seed);
    let mut pairs = Vec::with_capacity(per_length.saturating_mul(lengths.len()));
    for (i, &len) in lengths.iter().enumerate() {
        let pool = &mut by_length[len];
        if pool.len() < per_length || lengths[..i].contains(&len) {
            return Err(AttnError::InvalidArgument {
                name: "pairs per source length",
                value: per_length as f64,
                requirement: "must be at most the numbers of each length (outside the \
                              excluded ones), each length asked for once",
            });
        }
        pool.shuffle(&mut rng);
        for &x in &pool[..per_length] {
            pairs.push(number_pair(x)?);
        }
    }
    Ok(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_source_has_eleven_words() {
        let longest = (1..=999_999).map(|x| number_words(x).unwrap().len()).max();
        assert_eq!(longest, Some(LONGEST_SOURCE));
    }

    #[test]
    fn numbers_are_written_ones_before_tens() {
        let words = |x| number_words(x).unwrap().join(" ");
        assert_eq!(words(342_015), "three hundred two and forty thousand fifteen");
        assert_eq!(words(12), "twelve");
        assert_eq!(words(40), "forty");
        assert_eq!(words(700), "seven hundred");
        assert_eq!(words(21_000), "one and twenty thousand");
        assert_eq!(
            words(999_999),
            "nine hundred nine and ninety thousand nine hundred nine and ninety"
        );
        assert!(number_words(0).is_err() && number_words(1_000_000).is_err());
    }

    #[test]
    fn pairs_map_words_to_digits() {
        let p = number_pair(342_015).unwrap();
        assert_eq!(p.target, vec![6, 7, 5, 3, 4, 8], "3 4 2 0 1 5, each + 3");
        assert_eq!(p.source.len(), 7);
        assert!(p.source.iter().all(|&id| id >= 3 && id < 3 + source_vocabulary().len()));
        // Every word of every number is in the vocabulary.
        for x in [1, 19, 20, 99, 100, 101, 110, 999, 1000, 1001, 99_999, 100_000] {
            assert!(number_pair(x).unwrap().source.iter().all(|&id| id != PAD), "{x}");
        }
    }

    #[test]
    fn every_digit_aligns_to_the_word_that_names_it() {
        let show = |x: u32| {
            let words = number_words(x).unwrap();
            alignment(x)
                .unwrap()
                .iter()
                .map(|a| a.map_or("–", |j| words[j]))
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert_eq!(show(342_015), "three forty two – fifteen fifteen");
        assert_eq!(show(700), "seven hundred hundred");
        assert_eq!(show(305), "three – five");
        assert_eq!(show(21_000), "twenty one thousand thousand thousand");
        assert_eq!(show(12), "twelve twelve");
        assert_eq!(show(40), "forty forty");
        assert_eq!(show(7), "seven");
        assert_eq!(show(1_005), "one – – five");
        assert_eq!(show(100_100), "one hundred hundred one hundred hundred");
        // One entry per digit, for every length of number.
        for x in [1, 9, 10, 99, 100, 999, 1_000, 10_001, 999_999, 500_000] {
            assert_eq!(alignment(x).unwrap().len(), x.to_string().len(), "{x}");
        }
    }

    #[test]
    fn a_set_is_distinct_seeded_and_avoids_the_held_out_numbers() {
        let held_out = translation_set(200, 7, &[]).unwrap();
        let train = translation_set(1000, 8, &held_out).unwrap();
        let numbers: HashSet<u32> = train.iter().map(|p| p.number).collect();
        assert_eq!(numbers.len(), 1000);
        assert!(held_out.iter().all(|p| !numbers.contains(&p.number)));
        assert_eq!(train, translation_set(1000, 8, &held_out).unwrap());
        assert!(translation_set(100_001, 1, &[]).is_err());
    }

    #[test]
    fn the_source_vocabulary_has_source_vocab_entries() {
        assert_eq!(3 + source_vocabulary().len(), SOURCE_VOCAB);
        assert_eq!(NUMBER_VOCAB, (SOURCE_VOCAB, TARGET_VOCAB));
    }

    #[test]
    fn a_balanced_set_has_as_many_pairs_of_each_length_and_avoids_the_held_out() {
        let lengths = [3, 4, 11];
        let held_out = balanced_set(5, &lengths, 1, &[]).unwrap();
        let train = balanced_set(795, &lengths, 2, &held_out).unwrap();
        for (set, per) in [(&held_out, 5), (&train, 795)] {
            for len in lengths {
                assert_eq!(set.iter().filter(|p| p.source.len() == len).count(), per);
            }
            let distinct: HashSet<u32> = set.iter().map(|p| p.number).collect();
            assert_eq!(distinct.len(), set.len());
        }
        assert!(train.iter().all(|p| !held_out.contains(p)));
        assert_eq!(balanced_set(5, &lengths, 1, &[]).unwrap(), held_out);
        // 801 numbers have 4 words: 5 held out leave 796, not 797.
        assert!(balanced_set(797, &[4], 2, &held_out).is_err());
        assert!(balanced_set(1, &[10], 2, &[]).is_err(), "no number has 10 words");
        assert!(balanced_set(1, &[3, 3], 2, &[]).is_err());
    }
}
