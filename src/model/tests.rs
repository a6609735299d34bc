//! Tests of `model`.

use super::*;
use crate::nn::Adam;

fn small() -> ModelConfig {
    crate::model::gradcheck::SMALL
}

#[test]
fn bad_input_gets_a_clear_error() {
    let bad_heads = ModelConfig { heads: 3, ..small() };
    let err = TinyTransformer::new(bad_heads, 0).unwrap_err();
    assert_eq!(err, AttnError::HeadsDoNotDivide { d_model: 8, h: 3 });
    let net = TinyTransformer::new(small(), 0).unwrap();
    let err = net.forward(&[]).err().unwrap();
    assert_eq!(err.to_string(), "batch must hold at least one sequence, got 0");
    let bad_target = net.loss(&[vec![1, 2]], &[None, Some(12)]).unwrap_err();
    assert_eq!(
        bad_target.to_string(),
        "target must be less than the vocabulary's size (11), got 12"
    );
    let too_long = net.forward(&[vec![1; 5]]).err().unwrap();
    assert_eq!(too_long, AttnError::TooLong { what: "the sequences", len: 5, max: 4 });
    let ragged = net.forward(&[vec![1, 2], vec![3]]).err().unwrap();
    assert!(ragged.to_string().contains("got 2"));
    let unknown = net.forward(&[vec![1, 11]]).err().unwrap();
    assert_eq!(unknown.to_string(), "token must be less than the vocabulary's size (11), got 11");
    let err = net.loss(&[vec![1, 2]], &[None]).unwrap_err();
    assert!(err.to_string().starts_with("targets must give one target token"));
    assert!(held_out(Task::REVERSE, 2, 51, 0).is_err(), "51 distinct of 100 is more than half");
    assert!(accuracy(&net, &[vec![1, 2, 3]]).is_err(), "an example needs 2k + 1 tokens");
    let other = TinyTransformer::new(ModelConfig { d_model: 4, ..small() }, 0).unwrap();
    let mut net = net;
    let mut adam = Adam::new(&net, 0.1).unwrap();
    assert!(adam.update(&mut net, &other, 1.0).is_err(), "gradients of another model");
    let no_steps =
        TrainConfig { steps: 0, batch: 1, lr: 1e-3, warmup: 0, seed: 0, task: Task::REVERSE };
    assert!(train(small(), &no_steps, &[]).is_err());
}
