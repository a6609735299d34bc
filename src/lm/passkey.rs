//! A passkey to find (Mohtashami and Jaggi, 2023): a short key of digits
//! placed in a long text of filler and asked for at its end. The filler
//! and the key are drawn at random, so that nothing but attention to the
//! key, however far back, can give the answer: the test of whether a
//! model's positions still work past the length it was trained on.
//!
//! A text of `len` tokens, its key `distance` tokens before the question:
//!
//! `filler… KEY d₁…d_k filler… ASK d₁…d_k`
//!
//! Token ids, for a vocabulary of `vocab` ids: [`KEY`] and [`ASK`] the two
//! markers, [`DIGITS`] the ten digits from [`FIRST_DIGIT`], the filler every
//! id after them. Each position's target is the next token on the answer
//! only (from `ASK` to the second last digit), none elsewhere: only
//! recall is scored or trained.

use super::model::LmConfig;
use super::train::{Batch, SplitMix64};
use crate::check::{check_total, MAX_ENTRIES};
use crate::error::AttnError;

/// The marker before the key.
pub const KEY: usize = 0;
/// The marker that asks for the key.
pub const ASK: usize = 1;
/// The id of the digit 0; the digit `d` is `FIRST_DIGIT + d`.
pub const FIRST_DIGIT: usize = 2;
/// Digits a key may use.
pub const DIGITS: usize = 10;
/// Digits in a key.
pub const KEY_DIGITS: usize = 4;

/// The fewest ids a vocabulary needs: the markers, the digits and two
/// fillers.
const SMALLEST_VOCAB: usize = FIRST_DIGIT + DIGITS + 2;

/// One passkey text: its tokens, each position's target (the next token on
/// the answer, `None` elsewhere), and the position of the key's first digit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Passkey {
    /// `len` token ids.
    pub tokens: Vec<usize>,
    /// `len` targets.
    pub targets: Vec<Option<usize>>,
    /// Where the key's first digit is.
    pub key_at: usize,
}

/// A passkey text of `len` tokens over a vocabulary of `vocab` ids, its
/// key's first digit `distance` tokens before the question's. `distance`
/// runs from `KEY_DIGITS + 1` (the key just before the question) to
/// `len − KEY_DIGITS − 1` (the key at the start).
pub fn passkey(
    rng: &mut SplitMix64,
    len: usize,
    distance: usize,
    vocab: usize,
) -> Result<Passkey, AttnError> {
    check_total("the passkey text", &[len], MAX_ENTRIES)?;
    if vocab < SMALLEST_VOCAB {
        return Err(AttnError::InvalidArgument {
            name: "vocab for a passkey",
            value: vocab as f64,
            requirement: "must hold the 2 markers, the 10 digits and at least 2 fillers (14)",
        });
    }
    if !distances(len).contains(&distance) {
        return Err(AttnError::InvalidArgument {
            name: "distance of the passkey",
            value: distance as f64,
            requirement: "must be from KEY_DIGITS + 1 to len − KEY_DIGITS − 1: the key, its \
                          marker and the question's must fit",
        });
    }
    let mut draw = |n: u64| (rng.next_u64() % n) as usize;
    let key: Vec<usize> = (0..KEY_DIGITS).map(|_| FIRST_DIGIT + draw(DIGITS as u64)).collect();
    let fillers = (vocab - SMALLEST_VOCAB + 2) as u64;
    let mut tokens: Vec<usize> = (0..len).map(|_| FIRST_DIGIT + DIGITS + draw(fillers)).collect();
    let ask = len - KEY_DIGITS - 1;
    let key_at = ask + 1 - distance;
    tokens[key_at - 1] = KEY;
    tokens[key_at..key_at + KEY_DIGITS].copy_from_slice(&key);
    tokens[ask] = ASK;
    tokens[ask + 1..].copy_from_slice(&key);
    let mut targets = vec![None; len];
    for p in ask..len - 1 {
        targets[p] = Some(tokens[p + 1]);
    }
    Ok(Passkey { tokens, targets, key_at })
}

/// The distances a key can have in a text of `len` tokens: from the key
/// just before the question to the key at the start (empty if the text
/// cannot hold the key, its marker and the question's).
fn distances(len: usize) -> std::ops::RangeInclusive<usize> {
    KEY_DIGITS + 1..=len.saturating_sub(KEY_DIGITS + 1)
}

/// A training batch for a model of `config`: `count` passkey texts as long
/// as its context, each key at a distance drawn at random over every
/// distance the context allows; the targets side by side, as the training
/// step takes them.
pub fn passkey_batch(
    config: &LmConfig,
    rng: &mut SplitMix64,
    count: usize,
) -> Result<(Batch, Vec<Option<usize>>), AttnError> {
    check_total("the passkey batch", &[count, config.context], MAX_ENTRIES)?;
    let (shortest, farthest) = distances(config.context).into_inner();
    if count == 0 || farthest < shortest {
        return Err(AttnError::InvalidArgument {
            name: "passkey texts per batch",
            value: count as f64,
            requirement: "must be at least 1, for a context of at least 2·KEY_DIGITS + 2",
        });
    }
    let (mut inputs, mut targets) = (Vec::with_capacity(count), Vec::new());
    for _ in 0..count {
        let distance = shortest + (rng.next_u64() % (farthest - shortest + 1) as u64) as usize;
        let text = passkey(rng, config.context, distance, config.vocab)?;
        inputs.push(text.tokens);
        targets.extend(text.targets);
    }
    Ok((inputs, targets))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lm::SHAKESPEARE_MODEL;

    #[test]
    fn the_key_appears_twice_and_only_the_answer_is_scored() {
        let mut rng = SplitMix64::new(7);
        for (len, distance) in [(64, 5), (64, 59), (512, 300), (12, 7)] {
            let text = passkey(&mut rng, len, distance, 84).unwrap();
            let t = &text.tokens;
            assert_eq!(t.len(), len);
            let ask = len - KEY_DIGITS - 1;
            assert_eq!(ask + 1 - text.key_at, distance);
            let count = |id: usize| t.iter().filter(|&&x| x == id).count();
            assert_eq!((count(KEY), count(ASK)), (1, 1));
            assert_eq!((t[text.key_at - 1], t[ask]), (KEY, ASK));
            assert_eq!(t[text.key_at..text.key_at + KEY_DIGITS], t[ask + 1..]);
            let is_digit = |x: usize| (FIRST_DIGIT..FIRST_DIGIT + DIGITS).contains(&x);
            assert_eq!(t.iter().filter(|&&x| is_digit(x)).count(), 2 * KEY_DIGITS);
            assert!(t.iter().all(|&x| x < 84));
            let scored: Vec<usize> = (0..len).filter(|&p| text.targets[p].is_some()).collect();
            assert_eq!(scored, (ask..len - 1).collect::<Vec<_>>());
            assert!(scored.iter().all(|&p| text.targets[p] == Some(t[p + 1])));
        }
    }

    #[test]
    fn one_seed_one_text_and_keys_vary() {
        let key = |seed| {
            let text = passkey(&mut SplitMix64::new(seed), 64, 30, 84).unwrap();
            text.tokens[text.key_at..text.key_at + KEY_DIGITS].to_vec()
        };
        assert_eq!(key(1), key(1));
        let keys: std::collections::BTreeSet<_> = (0..50).map(key).collect();
        assert!(keys.len() > 45, "{} distinct keys of 50", keys.len());
    }

    #[test]
    fn a_batch_spreads_its_keys_over_the_context() {
        let mut rng = SplitMix64::new(3);
        let (inputs, targets) = passkey_batch(&SHAKESPEARE_MODEL, &mut rng, 200).unwrap();
        assert_eq!(targets.len(), 200 * 64);
        let at: Vec<usize> =
            inputs.iter().map(|t| t.iter().position(|&x| x == KEY).unwrap()).collect();
        assert!(at.iter().min() < Some(&5) && at.iter().max() > Some(&50), "{at:?}");
    }

    #[test]
    fn what_cannot_hold_a_passkey_is_refused_naming_it() {
        let mut rng = SplitMix64::new(0);
        let name = |r: Result<Passkey, AttnError>| match r {
            Err(AttnError::InvalidArgument { name, .. }) => name,
            other => panic!("{other:?}"),
        };
        assert!(name(passkey(&mut rng, 64, 4, 84)).contains("distance"));
        assert!(name(passkey(&mut rng, 64, 60, 84)).contains("distance"));
        assert!(name(passkey(&mut rng, 8, 5, 84)).contains("distance"));
        assert!(name(passkey(&mut rng, 64, 30, 13)).contains("vocab"));
        assert!(matches!(passkey(&mut rng, usize::MAX, 30, 84), Err(AttnError::TooLarge { .. })));
        let tiny = LmConfig { context: 9, ..SHAKESPEARE_MODEL };
        assert!(passkey_batch(&tiny, &mut rng, 1).is_err());
        assert!(passkey_batch(&SHAKESPEARE_MODEL, &mut rng, 0).is_err());
    }
}
