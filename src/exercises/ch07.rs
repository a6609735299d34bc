//! Chapter 7 exercises: RoPE in the "rotate half" layout.

use ndarray::{Array2, ArrayRef2};

use crate::check::{check_finite, check_overflow};
use crate::error::AttnError;
use crate::position::{check_even, check_positions, frequencies};

// ANCHOR: rope_half_split
/// Exercise 1: RoPE with dimension `f` paired with `f + d/2` (the layout of
/// GPT-NeoX and of Hugging Face's Llama, "rotate half") instead of `2f` with
/// `2f + 1`. Pair `f` still turns by `pos · ω_f`. An odd width, positions
/// past `usize`, and rows that are not finite or overflow when turned are
/// errors.
pub fn rope_half_split(
    x: &ArrayRef2<f32>,
    first_position: usize,
) -> Result<Array2<f32>, AttnError> {
    check_even("d_k", x.ncols())?;
    check_positions(first_position, x.nrows())?;
    check_finite("x", x)?;
    let half = x.ncols() / 2;
    let omega = frequencies(x.ncols())?;
    let mut out = x.to_owned();
    for (r, mut row) in out.rows_mut().into_iter().enumerate() {
        let pos = (first_position + r) as f64;
        for f in 0..half {
            let (sin, cos) = (pos * omega[f]).sin_cos();
            let (sin, cos) = (sin as f32, cos as f32);
            let (a, b) = (row[f], row[f + half]);
            row[f] = a * cos - b * sin;
            row[f + half] = a * sin + b * cos;
        }
    }
    check_overflow("the rotated rows", &out)?; // a·cos − b·sin of huge a, b
    Ok(out)
}
// ANCHOR_END: rope_half_split

#[cfg(test)]
mod tests {
    use super::*;
    use crate::position::rope;
    use crate::scaling::standard_normal;
    use approx::assert_abs_diff_eq;
    use ndarray::Axis;
    use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

    /// In the half-split layout dimension f pairs with dimension f + d/2 (not with f + 1), and
    /// pair f still turns by position · ω_f, chapter 7's frequencies. An odd width has no halves:
    /// it is an error.
    #[test]
    fn the_two_layouts_differ_only_by_an_ordering_of_the_dimensions() {
        let x = standard_normal(20, 16, &mut StdRng::seed_from_u64(8));
        // Interleaved dimension 2f ↔ half-split dimension f; 2f + 1 ↔ f + 8.
        let to_half: Vec<usize> = (0..16).step_by(2).chain((1..16).step_by(2)).collect();
        let interleaved = rope(&x, 4).unwrap().select(Axis(1), &to_half);
        let half = rope_half_split(&x.select(Axis(1), &to_half), 4).unwrap();
        assert_abs_diff_eq!(interleaved, half, epsilon = 1e-6);
        // Without reordering, the same weights give different results.
        let mixed = rope_half_split(&x, 4).unwrap();
        assert!((&mixed - &rope(&x, 4).unwrap()).iter().any(|d| d.abs() > 1e-2));
        assert!(rope_half_split(&x.select(Axis(1), &[0, 1, 2]), 0).is_err());
    }
}
