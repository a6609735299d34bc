//! The gradient check of the whole model (chapter 11).

use ndarray::{Array1, Axis};
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

use super::{inputs_and_targets, reversal_example, ModelConfig, TinyTransformer};
use crate::error::AttnError;
use crate::grad::Matrix;

/// The small model of the gradient check and of the model's unit tests:
/// 2-digit tasks, 2 blocks of width 8 with 2 heads.
pub(crate) const SMALL: ModelConfig = ModelConfig {
    k: 2,
    d_model: 8,
    heads: 2,
    d_ff: 12,
    layers: 2,
};

/// The gradient check's problem: a small model (2 blocks of width 8, 2
/// heads) from `seed`, and three 2-digit reversal examples as inputs and
/// targets.
pub fn small_problem(seed: u64) -> Result<Problem, AttnError> {
    let config = SMALL;
    let mut rng = StdRng::seed_from_u64(seed.wrapping_add(1)); // any seed, even u64::MAX
    let examples: Vec<Vec<usize>> = (0..3)
        .map(|_| reversal_example(config.k, &mut rng))
        .collect();
    let (inputs, targets) = inputs_and_targets(&examples, config.k)?;
    let net = TinyTransformer::new(config, seed)?;
    Ok((net, inputs, targets))
}

/// A model with its inputs and their next-token targets.
pub type Problem = (TinyTransformer, Vec<Vec<usize>>, Vec<Option<usize>>);

/// The output head of chapter 12's model, which has one of its own.
fn head(net: &mut TinyTransformer) -> &mut crate::linalg::LinearWeights<f64> {
    net.head
        .as_mut()
        .expect("chapter 12's recipe gives the model a head")
}

// ANCHOR: check_gradients
/// A parameter matrix of the model, picked out for a gradient check.
type Pick = fn(&mut TinyTransformer) -> &mut Matrix;
/// A parameter vector of the model (a bias, LayerNorm's γ or β).
type PickVector = fn(&mut TinyTransformer) -> &mut Array1<f64>;

/// Checks the whole model's backward pass against central differences on
/// [`small_problem`], every kind of parameter: the four attention
/// projections, both FFN matrices and their biases, both embeddings, the
/// output head and its bias, and LayerNorm's scale and shift. Returns
/// `(parameter, largest relative error)`.
pub fn check_gradients(seed: u64) -> Result<Vec<(&'static str, f64)>, AttnError> {
    let (net, inputs, targets) = small_problem(seed)?;
    // A perturbed model whose loss overflows has no finite difference: NaN.
    let loss_of = |net: &TinyTransformer| net.loss(&inputs, &targets).unwrap_or(f64::NAN);
    let (_, mut grads) = net.loss_and_gradients(&inputs, &targets)?;
    let picks: [(&'static str, Pick); 9] = [
        ("W_Q, block 1", |n| {
            n.blocks[0].attn.matrices_mut().swap_remove(0)
        }),
        ("W_K, block 1", |n| {
            n.blocks[0].attn.matrices_mut().swap_remove(1)
        }),
        ("W_V, block 2", |n| {
            n.blocks[1].attn.matrices_mut().swap_remove(2)
        }),
        ("W_O, block 2", |n| {
            n.blocks[1].attn.matrices_mut().swap_remove(3)
        }),
        ("FFN W₁, block 1", |n| &mut n.blocks[0].ffn.w1),
        ("FFN W₂, block 2", |n| &mut n.blocks[1].ffn.w2),
        ("token embeddings", |n| &mut n.tokens),
        ("position embeddings", |n| &mut n.positions),
        ("output head", |n| &mut head(n).w),
    ];
    let vector_picks: [(&'static str, PickVector); 7] = [
        ("FFN b₁, block 1", |n| &mut n.blocks[0].ffn.b1),
        ("FFN b₂, block 2", |n| &mut n.blocks[1].ffn.b2),
        ("LayerNorm γ, block 1", |n| &mut n.blocks[0].ln1.gamma),
        ("LayerNorm β, block 2", |n| &mut n.blocks[1].ln2.beta),
        ("final LayerNorm γ", |n| &mut n.ln_f.gamma),
        ("final LayerNorm β", |n| &mut n.ln_f.beta),
        ("output head bias", |n| &mut head(n).b),
    ];
    // The error of one parameter: `at` is its value, `analytic` its gradient
    // from the backward pass, `set` writes a perturbed value into a model.
    let error_of = |at: Matrix, analytic: Matrix, set: &dyn Fn(&mut TinyTransformer, &Matrix)| {
        let loss_with = |m: &Matrix| {
            let mut perturbed = net.clone();
            set(&mut perturbed, m);
            loss_of(&perturbed)
        };
        crate::grad::gradient_error(&analytic, loss_with, &at)
    };
    let mut checks: Vec<(&'static str, f64)> = picks
        .iter()
        .map(|&(name, pick)| {
            let (at, analytic) = (pick(&mut net.clone()).clone(), pick(&mut grads).clone());
            (name, error_of(at, analytic, &|n, m| *pick(n) = m.clone()))
        })
        .collect();
    // A vector is checked as a 1×len matrix.
    let as_row = |v: &Array1<f64>| v.clone().insert_axis(Axis(0));
    checks.extend(vector_picks.iter().map(|&(name, pick)| {
        let (at, analytic) = (as_row(pick(&mut net.clone())), as_row(pick(&mut grads)));
        (
            name,
            error_of(at, analytic, &|n, m| *pick(n) = m.row(0).to_owned()),
        )
    }));
    Ok(checks)
}
// ANCHOR_END: check_gradients

#[cfg(test)]
mod tests {
    use super::*;

    // ANCHOR: model_gradient_test
    #[test]
    fn the_whole_model_backward_matches_finite_differences() {
        for (name, error) in check_gradients(3).unwrap() {
            assert!(error < 1e-6, "{name}: relative error {error:e}");
        }
    }
    // ANCHOR_END: model_gradient_test
}
