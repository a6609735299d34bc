//! The two recipes of one decoder.

use super::*;
use crate::lm::SHAKESPEARE_MODEL;
use crate::model::{ModelConfig, BOOK_MODEL};

#[test]
fn each_recipe_has_the_parameters_its_formula_counts() {
    // Chapter 12's: biases, a shift in every LayerNorm, a head of its own.
    let reverser = Decoder::<f64>::new(BOOK_MODEL, 1).unwrap();
    assert_eq!(reverser.parameter_count(), 26_443);
    assert_eq!(ModelConfig::of(&reverser).unwrap(), BOOK_MODEL);
    // Chapter 16's: none of them, the head tied to the token embedding.
    let writer = Decoder::<f32>::new(SHAKESPEARE_MODEL, 1).unwrap();
    assert_eq!(writer.parameter_count(), 806_528);
    assert!(ModelConfig::of(&Decoder::<f64>::new(SHAKESPEARE_MODEL, 1).unwrap()).is_err());
    // What AdamW decays: the embeddings and the products' matrices.
    let decayed = writer.matrices().iter().filter(|&&m| m).count();
    assert_eq!(decayed, 2 + 4 * 6);
    let decayed = reverser.matrices().iter().filter(|&&m| m).count();
    assert_eq!(decayed, 2 + 2 * 6 + 1); // and the head's W, not its b
}

#[test]
fn a_tied_model_keeps_its_shifts_and_biases_at_zero() {
    let config = DecoderConfig {
        vocab: 5,
        context: 4,
        d_model: 8,
        heads: 2,
        kv_heads: 2,
        layers: 1,
        d_ff: 8,
        ..SHAKESPEARE_MODEL
    };
    let model = Decoder::<f64>::new(config, 3).unwrap();
    let (_, grads) =
        model.loss_and_gradients(&[vec![1, 2, 3]], &[Some(2), Some(3), Some(4)]).unwrap();
    let zero = |x: &ndarray::Array1<f64>| x.iter().all(|&v| v == 0.0);
    assert!(zero(&grads.ln_f.beta) && zero(&grads.blocks[0].ffn.b1));
    assert!(grads.head.is_none() && model.head.is_none());
}
