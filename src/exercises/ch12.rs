//! Chapter 12, exercise 1: sort instead of reverse.

use ndarray_rand::rand::{rngs::StdRng, Rng};

use crate::check::{check_total, MAX_ENTRIES};
use crate::error::AttnError;
use crate::model::{Task, TrainConfig, BOOK_TRAINING, SEP};

// ANCHOR: sorting_example
/// `k` random digits followed by the separator and the same digits in
/// increasing order: `2k + 1` tokens.
///
/// Where the `j`-th answer digit comes from depends on the digits themselves, not on `j` alone.
/// A `k` whose tokens would not fit in memory is an error.
pub fn sorting_example(k: usize, rng: &mut StdRng) -> Result<Vec<usize>, AttnError> {
    check_total("the example's 2k + 1 tokens", &[k, 2], MAX_ENTRIES)?; // 2k, without overflow
    let digits: Vec<usize> = (0..k).map(|_| rng.random_range(0..10)).collect();
    let mut sorted = digits.clone();
    sorted.sort_unstable();
    let mut sequence = digits;
    sequence.push(SEP);
    sequence.extend(sorted);
    Ok(sequence)
}
// ANCHOR_END: sorting_example

/// Sorting, as a task the model can train on.
pub const SORT: Task = Task::new("Sort", sorting_example);

/// How the exercise trains chapter 12's model to sort: the same steps, data
/// sizes and seed as [`BOOK_TRAINING`], only the task differs.
pub const BOOK_SORT_TRAINING: TrainConfig = TrainConfig { task: SORT, ..BOOK_TRAINING };

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray_rand::rand::SeedableRng;

    /// An example is k digits, the separator SEP, then the same k digits in ascending order: 2k +
    /// 1 tokens, SEP at index k, and each digit as often in the answer as in the prompt.
    #[test]
    fn the_answer_is_the_prompt_sorted() {
        let mut rng = StdRng::seed_from_u64(3);
        for k in [1, 2, 8, 13] {
            let e = sorting_example(k, &mut rng).unwrap();
            assert_eq!(e.len(), 2 * k + 1);
            assert_eq!(e[k], SEP);
            let (prompt, answer) = (&e[..k], &e[k + 1..]);
            assert!(answer.windows(2).all(|w| w[0] <= w[1]), "{e:?}");
            let count = |xs: &[usize], d| xs.iter().filter(|&&x| x == d).count();
            assert!((0..10).all(|d| count(prompt, d) == count(answer, d)), "{e:?}");
        }
    }
}
