//! Chapter 6 exercises: a sliding-window (local) causal mask.

use ndarray::Array2;

use crate::error::AttnError;

// ANCHOR: sliding_window
/// Exercise 1: query `i` may attend to keys `i − w + 1, …, i`, the last `w`
/// positions including itself. `w` must be at least 1, and the `n×n` mask
/// must fit in memory.
pub fn sliding_window_mask(n: usize, w: usize) -> Result<Array2<bool>, AttnError> {
    if w == 0 {
        return Err(AttnError::InvalidArgument {
            name: "window",
            value: 0.0,
            requirement: "must be at least 1 (a token always sees itself)",
        });
    }
    crate::check::check_size("the window's mask", n, n)?; // n×n must fit in memory
    Ok(Array2::from_shape_fn((n, n), |(i, j)| j <= i && i - j < w))
}
// ANCHOR_END: sliding_window

#[cfg(test)]
mod tests {
    use super::*;
    use crate::masking::{causal_mask, masked_attention};
    use crate::scaling::standard_normal;
    use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

    /// Entry (i, j) is true when key j is visible to query i: j ≤ i and i − j < w. A window as
    /// long as the sequence (or longer) is the causal mask; a window of 1 lets each token see only
    /// itself. A window of 0 would hide every key: it is an error (`AttnError::InvalidArgument`).
    #[test]
    fn a_wide_window_is_the_causal_mask_and_a_window_of_one_is_the_identity() {
        assert_eq!(sliding_window_mask(6, 6).unwrap(), causal_mask(6, 6));
        assert_eq!(sliding_window_mask(6, 100).unwrap(), causal_mask(6, 6));
        let one = sliding_window_mask(5, 1).unwrap();
        assert_eq!(one, Array2::from_shape_fn((5, 5), |(i, j)| i == j));
        let x = standard_normal(5, 3, &mut StdRng::seed_from_u64(1));
        assert_eq!(masked_attention(&x, &x, &x, &one).unwrap().output, x);
        assert!(sliding_window_mask(3, 0).is_err(), "a window of 0 must be an error");
    }

    /// Query i sees keys i − w + 1 … i, fewer at the start of the sequence (no key before 0):
    /// count from i back, not from 0 forward.
    #[test]
    fn each_query_sees_at_most_w_keys_ending_at_itself() {
        let m = sliding_window_mask(8, 3).unwrap();
        for (i, row) in m.rows().into_iter().enumerate() {
            let seen: Vec<usize> = (0..8).filter(|&j| row[j]).collect();
            let expected: Vec<usize> = (i.saturating_sub(2)..=i).collect();
            assert_eq!(seen, expected, "the keys query {i} sees (w = 3)");
        }
    }
}
