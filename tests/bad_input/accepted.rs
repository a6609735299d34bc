//! Input that was accepted although it breaks a function's own contract:
//! shapes that do not fit when there is nothing to attend, two lengths where
//! the doc says one, a running state no softmax can produce, widths nobody
//! checked when a stack has no layers, and tokens outside the vocabulary.

use attn::attention::batched_attention;
use attn::block::{Activation, Config, Norm, Transformer};
use attn::masking::{padded_batch_attention, Padding};
use attn::model::{inputs_and_targets, ModelConfig};
use attn::tiled::online_softmax_step;
use ndarray::{Array2, Array3};

use crate::{rng, small};

#[test]
fn an_empty_batch_still_needs_shapes_that_fit() {
    let q = Array3::<f32>::zeros((0, 3, 4));
    let k = Array3::<f32>::zeros((0, 5, 2)); // d_k 2, not 4
    let v = Array3::<f32>::zeros((0, 5, 4));
    assert!(batched_attention(&q, &k, &v).is_err());
    let v_short = Array3::<f32>::zeros((0, 4, 4)); // 4 values for 5 keys
    assert!(batched_attention(&q, &Array3::zeros((0, 5, 4)), &v_short).is_err());
    assert!(batched_attention(&q, &Array3::zeros((0, 5, 4)), &v).is_ok());
}

#[test]
fn a_padded_batch_has_one_length_for_queries_and_keys() {
    let q = Array3::<f32>::ones((1, 3, 4));
    let kv = Array3::<f32>::ones((1, 5, 4));
    let err = padded_batch_attention(&q, &kv, &kv, &[3], Padding::Right, false).unwrap_err();
    assert!(err.to_string().contains("key positions T"), "{err}");
}

#[test]
fn the_online_softmax_refuses_a_running_state_no_softmax_produces() {
    let mut scores = [0.5_f32, 1.0];
    for (m, l) in [(f32::NAN, 0.0), (f32::INFINITY, 0.0), (0.0, -1.0), (0.0, f32::NAN)] {
        let (mut m, mut l) = (m, l);
        assert!(online_softmax_step(&mut scores, &mut m, &mut l).is_err(), "M {m}, ℓ {l}");
    }
    let (mut m, mut l) = (f32::NEG_INFINITY, 0.0);
    assert!(online_softmax_step(&mut scores, &mut m, &mut l).is_ok());
}

#[test]
fn a_stack_without_layers_still_checks_widths() {
    let c = Config { d_model: 8, h: 2, d_ff: 16, activation: Activation::Relu, norm: Norm::Post };
    let stack = Transformer::new(c, 0, &mut rng()).unwrap();
    let (right, wrong) = (Array2::<f32>::zeros((3, 8)), Array2::<f32>::zeros((3, 5)));
    assert!(stack.encode(&wrong).is_err());
    assert!(stack.decode(&wrong, &right).is_err());
    assert!(stack.decode(&right, &wrong).is_err());
    assert!(stack.decode(&right, &right).is_ok());
}

#[test]
fn a_model_needs_a_layer_and_examples_need_tokens_of_the_vocabulary() {
    let no_layers = ModelConfig { layers: 0, ..small() };
    let err = no_layers.check().unwrap_err();
    assert!(err.to_string().starts_with("layers"), "{err}");
    let err = inputs_and_targets(&[vec![1, 2, 10, 2, 11]], 2).unwrap_err();
    assert!(err.to_string().contains("11"), "{err}");
    assert!(inputs_and_targets(&[vec![1, 2, 10, 2, 1]], 2).is_ok());
}
