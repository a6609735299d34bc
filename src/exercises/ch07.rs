//! Chapter 7 exercises: the online softmax on its own.

use ndarray::{Array1, ArrayRef1};

use crate::error::AttnError;
use crate::softmax::exp_nonpositive;
use crate::tiled::online_softmax_step;

// ANCHOR: online_softmax
/// Exercise 2: the softmax of a row read `chunk` entries at a time, keeping
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
    for part in x.to_vec().chunks(chunk) {
        let mut scratch = part.to_vec(); // the step overwrites it with exponentials
        online_softmax_step(&mut scratch, &mut max_so_far, &mut l);
    }
    if l == 0.0 {
        return Ok(Array1::zeros(x.len())); // every entry −∞
    }
    Ok(x.mapv(|x_j| exp_nonpositive(x_j - max_so_far) / l))
}
// ANCHOR_END: online_softmax

#[cfg(test)]
mod tests {
    use super::*;
    use crate::softmax::softmax;
    use approx::assert_abs_diff_eq;
    use ndarray::array;

    #[test]
    fn chunked_softmax_equals_softmax_for_every_chunk_size() {
        let x = array![3.0_f32, -1.0, 40.0, 0.5, 39.0, -7.0, 2.0];
        for chunk in 1..=8 {
            assert_abs_diff_eq!(
                chunked_softmax(&x, chunk).unwrap(),
                softmax(&x),
                epsilon = 1e-6
            );
        }
        let masked = array![f32::NEG_INFINITY, f32::NEG_INFINITY];
        assert_eq!(chunked_softmax(&masked, 1).unwrap(), array![0.0, 0.0]);
        assert!(chunked_softmax(&x, 0).is_err());
    }
}
