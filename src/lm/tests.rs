//! The language model's backward pass against finite differences, and its
//! forward pass against what it must not see.

use ndarray::Array2;

use super::*;
use crate::grad::gradient_error;
use crate::nn::Parameters;

const SMALL: LmConfig = LmConfig {
    vocab: 7,
    context: 5,
    d_model: 8,
    heads: 2,
    layers: 2,
    d_ff: 12,
};

/// A small `f64` model whose weights are large enough (`N(0, 0.5²)`, `γ`
/// around 1) for every path to matter, and a batch of two windows.
fn problem() -> (LanguageModel<f64>, Vec<Vec<usize>>, Vec<Vec<usize>>) {
    let mut model = LanguageModel::<f64>::new(SMALL, 11).unwrap();
    for (t, tensor) in model.slices_mut().into_iter().enumerate() {
        for (i, x) in tensor.iter_mut().enumerate() {
            *x = if *x == 1.0 {
                1.0 + 0.1 * ((t + i) % 5) as f64
            } else {
                *x * 25.0
            };
        }
    }
    let inputs = vec![vec![1, 4, 6, 0, 4], vec![3, 3, 2, 5, 1]];
    let targets = vec![vec![4, 6, 0, 4, 2], vec![3, 2, 5, 1, 1]];
    (model, inputs, targets)
}

#[test]
fn every_gradient_matches_finite_differences() {
    let (model, inputs, targets) = problem();
    let (_, grads) = model.loss_and_gradients(&inputs, &targets).unwrap();
    let names = model.named_slices();
    for (t, (name, values)) in names.iter().enumerate() {
        let x = Array2::from_shape_vec((1, values.len()), values.to_vec()).unwrap();
        let analytic =
            Array2::from_shape_vec((1, values.len()), grads.slices()[t].to_vec()).unwrap();
        let loss = |x: &Array2<f64>| {
            let mut m = model.clone();
            m.slices_mut()[t].copy_from_slice(x.as_slice().unwrap());
            m.loss(&inputs, &targets).unwrap()
        };
        let error = gradient_error(&analytic, loss, &x);
        assert!(error < 1e-6, "{name}: relative error {error:e}");
    }
}

#[test]
fn a_position_sees_only_itself_and_the_past() {
    let (model, inputs, _) = problem();
    let before = model.forward(&inputs).unwrap().logits().clone();
    let mut changed = inputs.clone();
    changed[0][3] = 2; // a later token of sequence 0
    let after = model.forward(&changed).unwrap().logits().clone();
    for row in 0..10 {
        let same = before.row(row) == after.row(row);
        assert_eq!(same, !(3..5).contains(&row), "row {row}");
    }
}

#[test]
fn bad_batches_are_refused_by_name() {
    let (model, inputs, targets) = problem();
    let e = |r: Result<f64, crate::AttnError>| r.unwrap_err().to_string();
    assert!(e(model.loss(&[vec![0; 6]], &[vec![0; 6]])).contains("6"));
    assert!(e(model.loss(&[vec![7]], &[vec![0]])).contains("token"));
    assert!(e(model.loss(&[], &[])).contains("batch"));
    assert!(e(model.loss(&[vec![1, 2], vec![1]], &[vec![1, 2], vec![1]])).contains("length"));
    assert!(e(model.loss(&inputs, &targets[..1])).contains("targets"));
    let mut nan = model.clone();
    nan.slices_mut()[3][0] = f64::NAN;
    assert!(e(nan.loss(&inputs, &targets)).contains("blocks.0.w_q"));
}
