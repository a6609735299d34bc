use attn::model::{inputs_and_targets, small_problem, train, ModelConfig, Task, TinyTransformer};
use attn::nn::Adam;
use attn::AttnError;
use ndarray::Array2;
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

use crate::{small, training};

/// Class 4: the weights loader refuses what it cannot trust (the details
/// are tested in `src/model/weights.rs`).
#[test]
fn the_weights_loader_refuses_huge_sizes_non_finite_values_and_trailing_content() {
    let text = TinyTransformer::new(small(), 1).unwrap().to_text().unwrap();
    let first = text.lines().nth(1).unwrap().split(' ').next().unwrap();
    assert!(TinyTransformer::from_text(&text.replacen(first, "NaN", 1)).is_err());
    assert!(TinyTransformer::from_text(&(text.clone() + "0 0 0\n")).is_err());
    let huge = "tiny-transformer 4 65536 2 262144 4\n";
    assert!(matches!(TinyTransformer::from_text(huge), Err(AttnError::InvalidWeights { .. })));
    assert!(TinyTransformer::from_text(&text).is_ok());
}

/// Class 5: training cannot hang, and cannot turn the parameters NaN.
#[test]
fn training_refuses_what_would_hang_or_poison_it() {
    // k = 2 has 100 possible examples; excluding all of them would leave
    // the loop drawing forever.
    let mut rng = StdRng::seed_from_u64(3);
    let mut all: Vec<Vec<usize>> =
        (0..2000).map(|_| Task::REVERSE.example(2, &mut rng).unwrap()).collect();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 100);
    let err = train(small(), &training(1e-3), &all).unwrap_err();
    assert!(err.to_string().starts_with("excluded examples must be at most half"));
    assert!(train(small(), &training(1e-3), &all[..50]).is_ok());
    for lr in [f64::INFINITY, f64::NAN, 0.0, -1.0] {
        let err = train(small(), &training(lr), &[]).unwrap_err();
        assert!(err.to_string().starts_with("learning rate must be finite"), "{lr}");
    }
    // Adam refuses a non-finite learning rate or gradient.
    let mut net = TinyTransformer::new(small(), 0).unwrap();
    assert!(Adam::new(&net, f64::INFINITY).is_err());
    let mut adam = Adam::new(&net, 1e-3).unwrap();
    let (_, grads) =
        net.loss_and_gradients(&[vec![1, 2, 10, 2]], &[None, None, Some(2), Some(1)]).unwrap();
    assert!(adam.update(&mut net, &grads, f64::NAN).is_err());
    assert!(adam.update(&mut net, &grads, f64::INFINITY).is_err());
    assert!(adam.update(&mut net, &grads, 1.0).is_ok());
    // The whole-model gradient check's problem takes any seed.
    assert!(small_problem(u64::MAX).is_ok());
}

/// Class 8: the model's helpers check their arguments.
#[test]
fn model_helpers_check_what_they_are_given() {
    let net = TinyTransformer::new(small(), 0).unwrap();
    let other = TinyTransformer::new(small(), 1).unwrap();
    let inputs = vec![vec![1, 2, 10, 2]];
    let fwd = other.forward(&inputs).unwrap();
    let d_logits = Array2::<f64>::zeros(fwd.logits().dim());
    let err = net.backward(&fwd, &d_logits).unwrap_err();
    assert_eq!(
        err.to_string(),
        "forward pass must come from this model, with its current parameters"
    );
    // Gradients of another model's shape: named, with no made-up number.
    let mut adam = Adam::new(&net, 1e-3).unwrap();
    let small_net = TinyTransformer::new(ModelConfig { d_model: 4, ..small() }, 0).unwrap();
    let mut net2 = net.clone();
    let err = adam.update(&mut net2, &small_net, 1.0).unwrap_err();
    assert_eq!(
        err.to_string(),
        "model and gradients must have the tensors the optimiser was made for"
    );
    assert!(net.backward(&net.forward(&inputs).unwrap(), &d_logits).is_ok());
    let fwd = net.forward(&inputs).unwrap();
    assert!(fwd.weights(0, 0, 0).is_ok());
    assert!(fwd.weights(1, 0, 0).is_err(), "one block only");
    assert!(fwd.weights(0, 1, 0).is_err(), "one sequence only");
    assert!(fwd.weights(0, 0, 2).is_err(), "two heads only");
    assert_eq!(
        fwd.weights(0, 0, 2).unwrap_err().to_string(),
        "head must be less than the forward pass's number of them, got 2"
    );
    let short = inputs_and_targets(&[vec![1, 2]], 2).unwrap_err();
    assert_eq!(
        short.to_string(),
        "example length must be 2k + 1 tokens: k digits, the separator, k answer digits, got 2"
    );
}

#[test]
fn the_reverser_s_accuracy_refuses_examples_it_cannot_score() {
    use attn::model::accuracy;
    let net = TinyTransformer::new(small(), 0).unwrap(); // k = 2: examples of 5 tokens
    let e = accuracy(&net, &[]).unwrap_err();
    assert!(matches!(e, AttnError::Empty { name: "examples", .. }), "{e}");
    let e = accuracy(&net, &[vec![1, 2, 10, 2]]).unwrap_err();
    assert!(matches!(e, AttnError::InvalidArgument { name: "example length", .. }), "{e}");
    let e = accuracy(&net, &[vec![1, 2, 10, 2, 11]]).unwrap_err();
    assert!(matches!(e, AttnError::InvalidArgument { name: "token", .. }), "{e}");
    let (exact, digits) = accuracy(&net, &[vec![1, 2, 10, 2, 1]]).unwrap();
    assert!((0.0..=1.0).contains(&exact) && (0.0..=1.0).contains(&digits));
}
