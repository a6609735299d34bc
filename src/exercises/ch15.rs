//! Chapter 15: attention in a trained model.

use ndarray::ArrayRef2;

use crate::check::{check_finite, check_nonzero};
use crate::error::AttnError;

// ANCHOR: parameters_by_hand
/// Exercise 1: the parameters of a BERT-style encoder from its sizes alone.
///
/// Three embedding tables and their LayerNorm, then per layer four
/// `d×d` projections with biases, the FFN `d → d_ff → d` with biases, and
/// two LayerNorms (`γ` and `β` each). A size of 0, and sizes whose count
/// overflows `usize`, are errors.
pub fn bert_parameters(
    vocabulary: usize,
    positions: usize,
    d: usize,
    d_ff: usize,
    layers: usize,
) -> Result<usize, AttnError> {
    let sizes = [("vocabulary", vocabulary), ("positions", positions), ("d", d)];
    check_nonzero(&sizes)?;
    check_nonzero(&[("d_ff", d_ff), ("layers", layers)])?;
    // The formula in checked arithmetic: None when a step overflows.
    let count = || {
        let embeddings = vocabulary.checked_add(positions)?.checked_add(2)?.checked_mul(d)?;
        let embeddings = embeddings.checked_add(d.checked_mul(2)?)?;
        let attention = d.checked_mul(d)?.checked_add(d)?.checked_mul(4)?;
        let ffn = d.checked_mul(d_ff)?.checked_mul(2)?.checked_add(d_ff)?.checked_add(d)?;
        let layer = attention.checked_add(ffn)?.checked_add(d.checked_mul(4)?)?;
        embeddings.checked_add(layers.checked_mul(layer)?)
    };
    count().ok_or(AttnError::InvalidArgument {
        name: "d",
        value: d as f64,
        requirement: "with these sizes gives a parameter count that overflows usize",
    })
}
// ANCHOR_END: parameters_by_hand

// ANCHOR: self_weight
/// Exercise 2: the mean weight a head puts on each token's own position,
/// the diagonal of its `n×n` weights. Weights that are not square (or
/// empty) or not finite are errors.
pub fn self_weight(w: &ArrayRef2<f32>) -> Result<f64, AttnError> {
    let n = w.nrows();
    if n == 0 || w.ncols() != n {
        return Err(AttnError::ShapesDiffer {
            what: "a head's weights and a square",
            left: w.dim(),
            right: (n.max(1), n.max(1)),
        });
    }
    check_finite("a head's weights", w)?;
    Ok(w.diag().iter().map(|&x| f64::from(x)).sum::<f64>() / n as f64)
}
// ANCHOR_END: self_weight

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{array, Array2};

    /// Count the embedding tables (vocabulary, positions and 2 token types, each d wide) and their
    /// LayerNorm (2d); then per layer: four d × d projections with biases, the FFN (d × d_ff and
    /// d_ff × d with biases) and two LayerNorms (2d each).
    #[test]
    fn a_one_layer_toy_counts_by_hand() {
        // vocabulary 10, 4 positions, d = 2, d_ff = 3, one layer:
        // tables (10 + 4 + 2)·2 = 32, LayerNorm 4; attention 4·(4 + 2) = 24;
        // FFN 6 + 3 + 6 + 2 = 17; two LayerNorms 8.
        assert_eq!(bert_parameters(10, 4, 2, 3, 1).unwrap(), 32 + 4 + 24 + 17 + 8);
    }

    /// The weight a token gives itself is the diagonal of the square weight matrix; return its
    /// mean. A matrix that is not square has no diagonal of that meaning: return
    /// `AttnError::ShapesDiffer`.
    #[test]
    fn self_weight_reads_the_diagonal() {
        assert_eq!(self_weight(&Array2::<f32>::eye(3)).unwrap(), 1.0);
        let w = array![[0.5_f32, 0.5], [1.0, 0.0]];
        assert_eq!(self_weight(&w).unwrap(), 0.25);
        assert!(self_weight(&Array2::<f32>::zeros((2, 3))).is_err(), "2×3 is not square");
    }
}
