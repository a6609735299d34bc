//! Chapter 9 exercises: the online softmax on its own.

use ndarray::{Array1, ArrayRef1};

use crate::error::AttnError;
use crate::real::Real;
use crate::tiled::online_softmax_step; // the exercise writes this

// ANCHOR: online_softmax
/// Exercise 1: the softmax of a row read `chunk` entries at a time, keeping
/// between chunks only the running maximum `M` and the running sum `ℓ`.
/// A second pass then writes `exp(x_j − M) / ℓ`.
pub fn chunked_softmax(x: &ArrayRef1<f32>, chunk: usize) -> Result<Array1<f32>, AttnError> {
    if chunk == 0 {
        return Err(AttnError::InvalidArgument {
            name: "chunk",
            value: 0.0,
            requirement: "must be at least 1",
        });
    }
    let (mut max_so_far, mut l) = (f32::NEG_INFINITY, 0.0_f32);
    for (c, part) in x.to_vec().chunks(chunk).enumerate() {
        let mut scratch = part.to_vec(); // the step overwrites it with exponentials
        online_softmax_step(&mut scratch, &mut max_so_far, &mut l).map_err(|e| match e {
            AttnError::InvalidScore { position, value } => AttnError::InvalidScore {
                position: (0, c * chunk + position.1), // the position in the whole row
                value,
            },
            other => other,
        })?;
    }
    if l == 0.0 {
        return Ok(Array1::zeros(x.len())); // every entry −∞
    }
    Ok(x.mapv(|x_j| (x_j - max_so_far).exp_nonpositive() / l))
}
// ANCHOR_END: online_softmax

// ANCHOR: layers_to_reach
/// Exercise 3: how many stacked layers of local attention with window `w`
/// (each query sees itself and the `w − 1` keys before it) it takes before
/// the last of `n` positions can depend on the first.
///
/// Each layer lets a position see `w − 1` positions further back, so
/// `⌈(n − 1)/(w − 1)⌉` layers. No positions (`n = 0`) is an error.
pub fn layers_to_reach_first_token(n: usize, w: usize) -> Result<usize, AttnError> {
    crate::check::check_nonzero(&[("n", n)])?;
    if w < 2 {
        return Err(AttnError::InvalidArgument {
            name: "w",
            value: w as f64,
            requirement: "must be at least 2 for a layer to reach back at all",
        });
    }
    Ok((n - 1).div_ceil(w - 1))
}
// ANCHOR_END: layers_to_reach

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exercises::ch06::sliding_window_mask;
    use crate::softmax::softmax;
    use approx::assert_abs_diff_eq;
    use ndarray::{array, Array2};

    /// Keep a running maximum and a running sum of exponentials, rescaling the sum by e^(old max −
    /// new max) whenever the maximum grows; every chunk size, 1 included, must give the softmax
    /// within 1e-6. A row of −∞ (fully masked) gives all zeros, not NaN; a chunk size of 0 is an
    /// error.
    #[test]
    fn chunked_softmax_equals_softmax_for_every_chunk_size() {
        let x = array![3.0_f32, -1.0, 40.0, 0.5, 39.0, -7.0, 2.0];
        for chunk in 1..=8 {
            assert_abs_diff_eq!(
                chunked_softmax(&x, chunk).unwrap(),
                softmax(&x).unwrap(),
                epsilon = 1e-6
            );
        }
        let masked = array![f32::NEG_INFINITY, f32::NEG_INFINITY];
        assert_eq!(chunked_softmax(&masked, 1).unwrap(), array![0.0, 0.0]);
        assert!(chunked_softmax(&x, 0).is_err(), "a chunk of 0 must be an error");
    }

    /// Which positions each position's output can depend on after `layers`
    /// layers: the boolean product of the window mask with itself.
    fn reach(n: usize, w: usize, layers: usize) -> Array2<bool> {
        let mask = sliding_window_mask(n, w).unwrap();
        let mut reach = Array2::from_shape_fn((n, n), |(i, j)| i == j);
        for _ in 0..layers {
            reach = Array2::from_shape_fn((n, n), |(i, j)| {
                (0..n).any(|k| mask[[i, k]] && reach[[k, j]])
            });
        }
        reach
    }

    /// Each layer lets a token reach w − 1 positions further back, so the last of n tokens reaches
    /// the first after ⌈(n − 1)/(w − 1)⌉ layers (0 for one token). A window of 1 never reaches
    /// back: it is an error.
    #[test]
    fn a_stack_of_windows_reaches_back_one_window_a_layer() {
        for (n, w) in [(64, 8), (50, 2), (40, 40), (33, 5)] {
            let layers = layers_to_reach_first_token(n, w).unwrap();
            assert!(reach(n, w, layers)[[n - 1, 0]], "n = {n}, w = {w}");
            assert!(!reach(n, w, layers - 1)[[n - 1, 0]], "n = {n}, w = {w}");
        }
        assert!(layers_to_reach_first_token(10, 1).is_err(), "w = 1 must be an error");
        assert_eq!(layers_to_reach_first_token(1, 4).unwrap(), 0);
    }
}
