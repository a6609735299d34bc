//! The tasks the tiny Transformer learns: examples, and the model's inputs
//! and targets (chapter 12).

use std::collections::HashSet;

use ndarray_rand::rand::{rngs::StdRng, Rng, SeedableRng};

use super::SEP;
use crate::check::{check_total, MAX_ENTRIES};
use crate::error::AttnError;

// ANCHOR: task
/// `k` random digits followed by the separator and the digits reversed:
/// `2k + 1` tokens.
pub fn reversal_example(k: usize, rng: &mut StdRng) -> Vec<usize> {
    let digits: Vec<usize> = (0..k).map(|_| rng.random_range(0..10)).collect();
    let mut sequence = digits.clone();
    sequence.push(SEP);
    sequence.extend(digits.iter().rev());
    sequence
}
// ANCHOR_END: task

/// What the model learns to write after the separator: a name, and a
/// function that draws one example (`k` digits, the separator, the answer).
/// The crate defines [`Task::REVERSE`]; chapter 12's exercise 1 defines a
/// task of its own the same way, with [`Task::new`].
#[derive(Clone, Copy)]
pub struct Task {
    name: &'static str,
    example: fn(usize, &mut StdRng) -> Result<Vec<usize>, AttnError>,
}

impl Task {
    /// The prompt's digits in reverse order ([`reversal_example`]).
    pub const REVERSE: Task = Task::new("Reverse", |k, rng| Ok(reversal_example(k, rng)));

    /// A task named `name` whose examples `example(k, rng)` draws (an error
    /// for a `k` it cannot draw).
    pub const fn new(
        name: &'static str,
        example: fn(usize, &mut StdRng) -> Result<Vec<usize>, AttnError>,
    ) -> Task {
        Task { name, example }
    }

    /// The task's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// One random example of the task: `k` digits, the separator, the
    /// answer. A `k` whose `2k + 1` tokens would not fit in memory is an
    /// error.
    pub fn example(self, k: usize, rng: &mut StdRng) -> Result<Vec<usize>, AttnError> {
        check_total("the example's 2k + 1 tokens", &[k, 2], MAX_ENTRIES)?;
        (self.example)(k, rng)
    }
}

/// Tasks are told apart by name.
impl PartialEq for Task {
    fn eq(&self, other: &Task) -> bool {
        self.name == other.name
    }
}

impl std::fmt::Debug for Task {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// `B` input sequences, and one next-token target (or `None`) per position.
pub type InputsAndTargets = (Vec<Vec<usize>>, Vec<Option<usize>>);

/// The model's inputs (all tokens but the last) and its targets (the next
/// token at each position, but only where the next token is an answer digit:
/// the digits of the prompt are random and cannot be predicted).
pub fn inputs_and_targets(
    examples: &[Vec<usize>],
    k: usize,
) -> Result<InputsAndTargets, AttnError> {
    check_examples(examples, k)?;
    let inputs = examples.iter().map(|e| e[..2 * k].to_vec()).collect();
    let targets =
        examples.iter().flat_map(|e| (0..2 * k).map(move |i| (i >= k).then(|| e[i + 1]))).collect();
    Ok((inputs, targets))
}

/// Checks that there is at least one example and each has `2k + 1` tokens.
pub fn check_examples(examples: &[Vec<usize>], k: usize) -> Result<(), AttnError> {
    if examples.is_empty() {
        return Err(AttnError::Empty { name: "examples", shape: (0, 2 * k + 1) });
    }
    if let Some(e) = examples.iter().find(|e| Some(e.len()) != k.checked_mul(2).map(|n| n + 1)) {
        return Err(AttnError::InvalidArgument {
            name: "example length",
            value: e.len() as f64,
            requirement: "must be 2k + 1 tokens: k digits, the separator, k answer digits",
        });
    }
    if let Some(&token) = examples.iter().flatten().find(|&&t| t >= super::VOCAB) {
        return Err(AttnError::InvalidArgument {
            name: "token",
            value: token as f64,
            requirement: "must be a digit 0–9 or the separator 10",
        });
    }
    Ok(())
}

/// A held-out set: `count` distinct examples of `task` from their own seed.
/// Training never draws one of these (see [`crate::model::train`]).
pub fn held_out(
    task: Task,
    k: usize,
    count: usize,
    seed: u64,
) -> Result<Vec<Vec<usize>>, AttnError> {
    let possible = u32::try_from(k).ok().and_then(|k| 10usize.checked_pow(k)).unwrap_or(usize::MAX); // no `as u32`: k = 2³² + 1 must not wrap to 1
    if count > possible / 2 {
        return Err(AttnError::InvalidArgument {
            name: "count",
            value: count as f64,
            requirement: "must be at most half the 10^k possible sequences",
        });
    }
    let tokens = k.checked_mul(2).map_or(usize::MAX, |t| t.saturating_add(1)); // 2k + 1 each
    check_total("the held-out examples' tokens", &[count, tokens], MAX_ENTRIES)?;
    let mut rng = StdRng::seed_from_u64(seed);
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    while out.len() < count {
        let e = task.example(k, &mut rng)?;
        if seen.insert(e.clone()) {
            out.push(e);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_task_and_its_targets() {
        let mut rng = StdRng::seed_from_u64(1);
        let e = reversal_example(4, &mut rng);
        assert_eq!(e.len(), 9);
        assert_eq!(e[4], SEP);
        assert!((0..4).all(|i| e[5 + i] == e[3 - i]));
        let (inputs, targets) = inputs_and_targets(std::slice::from_ref(&e), 4).unwrap();
        assert_eq!(inputs[0], e[..8].to_vec());
        assert_eq!(&targets[..4], &[None, None, None, None]);
        assert_eq!(targets[4], Some(e[5]));
        assert_eq!(targets[7], Some(e[8]));
        let test = held_out(Task::REVERSE, 4, 50, 9).unwrap();
        let distinct: HashSet<_> = test.iter().collect();
        assert_eq!(distinct.len(), 50);
    }
}
