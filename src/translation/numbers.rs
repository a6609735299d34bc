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
const TENS: [&str; 10] = [
    "", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
];

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
        _ => words.extend([
            ONES[(rest % 10) as usize],
            "and",
            TENS[(rest / 10) as usize],
        ]),
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
    if x % 1000 > 0 {
        below_thousand(x % 1000, &mut words);
    }
    Ok(words)
}

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
        .map(|w| {
            vocabulary
                .iter()
                .position(|v| *v == w)
                .map_or(PAD, |i| i + 3)
        })
        .collect();
    let target = x
        .to_string()
        .bytes()
        .map(|b| (b - b'0') as usize + 3)
        .collect();
    Ok(TranslationPair {
        number: x,
        source,
        target,
    })
}

/// `count` distinct pairs of numbers drawn uniformly from 1 to 999,999
/// (seeded), none of them in `exclude` (a held-out set, say).
pub fn translation_set(
    count: usize,
    seed: u64,
    exclude: &[TranslationPair],
) -> Result<Vec<TranslationPair>, AttnError> {
    if count > 500_000 {
        return Err(AttnError::InvalidArgument {
            name: "count",
            value: count as f64,
            requirement: "must be at most half of the 999,999 numbers",
        });
    }
    let excluded: HashSet<u32> = exclude.iter().map(|p| p.number).collect();
    let mut rng = StdRng::seed_from_u64(seed);
    let mut seen = HashSet::new();
    let mut pairs = Vec::with_capacity(count);
    while pairs.len() < count {
        let x = rng.random_range(1..=999_999);
        if !excluded.contains(&x) && seen.insert(x) {
            pairs.push(number_pair(x)?);
        }
    }
    Ok(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_written_ones_before_tens() {
        let words = |x| number_words(x).unwrap().join(" ");
        assert_eq!(
            words(342_015),
            "three hundred two and forty thousand fifteen"
        );
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
        assert!(p
            .source
            .iter()
            .all(|&id| id >= 3 && id < 3 + source_vocabulary().len()));
        // Every word of every number is in the vocabulary.
        for x in [
            1, 19, 20, 99, 100, 101, 110, 999, 1000, 1001, 99_999, 100_000,
        ] {
            assert!(
                number_pair(x).unwrap().source.iter().all(|&id| id != PAD),
                "{x}"
            );
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
        assert!(translation_set(600_000, 1, &[]).is_err());
    }
}
