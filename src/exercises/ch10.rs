//! Chapter 10, exercise 1: the parameters of one encoder layer, counted from
//! the formula.

use crate::error::AttnError;

// ANCHOR: encoder_parameters
/// The parameters of one encoder layer with bias-free attention (as in this
/// crate).
///
/// `4d²` in attention, `2·d·d_ff + d_ff + d` in the FFN (two
/// matrices and their biases), `4d` in the two LayerNorms (`γ` and `β`).
/// A size of 0, and sizes whose count overflows `usize`, are errors.
pub fn encoder_layer_parameters(d_model: usize, d_ff: usize) -> Result<usize, AttnError> {
    crate::check::check_nonzero(&[("d_model", d_model), ("d_ff", d_ff)])?;
    let count = || {
        let attention = d_model.checked_mul(d_model)?.checked_mul(4)?;
        let ffn =
            d_model.checked_mul(d_ff)?.checked_mul(2)?.checked_add(d_ff)?.checked_add(d_model)?;
        attention.checked_add(ffn)?.checked_add(d_model.checked_mul(4)?)
    };
    count().ok_or(AttnError::InvalidArgument {
        name: "d_model",
        value: d_model as f64,
        requirement: "with d_ff gives a parameter count that overflows usize",
    })
}
// ANCHOR_END: encoder_parameters

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::{Activation, Config, EncoderLayer, Norm};
    use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

    /// The crate's encoder layer has bias-free attention: four d_model × d_model projections. Its
    /// feed-forward network has two matrices (d_model × d_ff and d_ff × d_model) and their biases,
    /// and its two LayerNorms a γ and a β of d_model each. Count with checked arithmetic: sizes
    /// whose count overflows usize are an error (`AttnError::InvalidArgument`).
    // ANCHOR: encoder_parameters_test
    #[test]
    fn the_formula_counts_what_the_layer_holds() {
        for (d_model, h, d_ff) in [(512, 8, 2048), (32, 4, 128), (8, 2, 8)] {
            let c = Config { d_model, h, d_ff, activation: Activation::Relu, norm: Norm::Post };
            let layer = EncoderLayer::new(c, &mut StdRng::seed_from_u64(0)).unwrap();
            let (w1, b1, w2, b2) = layer.ffn().weights();
            let ffn = w1.len() + b1.len() + w2.len() + b2.len();
            let norms: usize = layer
                .layer_norms()
                .iter()
                .map(|ln| ln.parameters().0.len() + ln.parameters().1.len())
                .sum();
            let held = layer.attention().parameters() + ffn + norms;
            assert_eq!(encoder_layer_parameters(d_model, d_ff).unwrap(), held);
        }
        assert!(encoder_layer_parameters(usize::MAX, 2).is_err());
    }
    // ANCHOR_END: encoder_parameters_test
}
