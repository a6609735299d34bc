//! The gradient check of the whole model (chapter 11).

use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

use super::{inputs_and_targets, reversal_example, ModelConfig, TinyTransformer};
use crate::error::AttnError;
use crate::grad::{gradient_error, Matrix};
use crate::nn::{flat_mut, AttentionWeights, BlockAttention};

/// The small model of the gradient check and of the model's unit tests:
/// 2-digit tasks, 2 blocks of width 8 with 2 heads.
pub(crate) const SMALL: ModelConfig =
    ModelConfig { k: 2, d_model: 8, heads: 2, d_ff: 12, layers: 2 };

/// The gradient check's problem: a small model (2 blocks of width 8, 2
/// heads) from `seed`, and three 2-digit reversal examples as inputs and
/// targets.
pub fn small_problem(seed: u64) -> Result<Problem, AttnError> {
    let config = SMALL;
    let mut rng = StdRng::seed_from_u64(seed.wrapping_add(1)); // any seed, even u64::MAX
    let examples: Vec<Vec<usize>> = (0..3).map(|_| reversal_example(config.k, &mut rng)).collect();
    let (inputs, targets) = inputs_and_targets(&examples, config.k)?;
    let net = TinyTransformer::new(config, seed)?;
    Ok((net, inputs, targets))
}

/// A model with its inputs and their next-token targets.
pub type Problem = (TinyTransformer, Vec<Vec<usize>>, Vec<Option<usize>>);

/// The attention weights of block `l` of chapter 12's model.
fn attention(net: &mut TinyTransformer, l: usize) -> &mut AttentionWeights<f64> {
    match &mut net.blocks[l].attn {
        BlockAttention::Heads(w) => w,
        BlockAttention::Latent(_) => unreachable!("chapter 12's model has multi-head attention"),
    }
}

/// The output head of chapter 12's model, which has one of its own.
fn head(net: &mut TinyTransformer) -> &mut crate::linalg::LinearWeights<f64> {
    net.head.as_mut().expect("chapter 12's recipe gives the model a head")
}

/// A parameter tensor of the model, picked out for a gradient check.
type Pick = fn(&mut TinyTransformer) -> &mut [f64];

// ANCHOR: check_gradients
/// Checks the whole model's backward pass against central differences on
/// [`small_problem`], for every kind of parameter: `(parameter, largest
/// relative error)`.
pub fn check_gradients(seed: u64) -> Result<Vec<(&'static str, f64)>, AttnError> {
    let (net, inputs, targets) = small_problem(seed)?;
    // A perturbed model whose loss overflows has no finite difference: NaN.
    let loss_of = |net: &TinyTransformer| net.loss(&inputs, &targets).unwrap_or(f64::NAN);
    let (_, mut grads) = net.loss_and_gradients(&inputs, &targets)?;
    let picks: [(&'static str, Pick); 16] = [
        ("W_Q, block 1", |n| flat_mut(&mut attention(n, 0).w_q)),
        ("W_K, block 1", |n| flat_mut(&mut attention(n, 0).w_k)),
        ("W_V, block 2", |n| flat_mut(&mut attention(n, 1).w_v)),
        ("W_O, block 2", |n| flat_mut(&mut attention(n, 1).w_o)),
        ("FFN W₁, block 1", |n| flat_mut(&mut n.blocks[0].ffn.w1)),
        ("FFN W₂, block 2", |n| flat_mut(&mut n.blocks[1].ffn.w2)),
        ("token embeddings", |n| flat_mut(&mut n.tokens)),
        ("position embeddings", |n| flat_mut(&mut n.positions)),
        ("output head", |n| flat_mut(&mut head(n).w)),
        ("FFN b₁, block 1", |n| flat_mut(&mut n.blocks[0].ffn.b1)),
        ("FFN b₂, block 2", |n| flat_mut(&mut n.blocks[1].ffn.b2)),
        ("LayerNorm γ, block 1", |n| flat_mut(&mut n.blocks[0].ln1.gamma)),
        ("LayerNorm β, block 2", |n| flat_mut(&mut n.blocks[1].ln2.beta)),
        ("final LayerNorm γ", |n| flat_mut(&mut n.ln_f.gamma)),
        ("final LayerNorm β", |n| flat_mut(&mut n.ln_f.beta)),
        ("output head bias", |n| flat_mut(&mut head(n).b)),
    ];
    // Each tensor is checked as one row of its entries.
    let row = |x: &[f64]| Matrix::from_shape_vec((1, x.len()), x.to_vec()).expect("a row");
    let error = |&(name, pick): &(&'static str, Pick), grads: &mut TinyTransformer| {
        let (at, analytic) = (row(pick(&mut net.clone())), row(pick(grads)));
        let loss_with = |x: &Matrix| {
            let mut perturbed = net.clone();
            pick(&mut perturbed).copy_from_slice(x.as_slice().expect("a row"));
            loss_of(&perturbed)
        };
        (name, gradient_error(&analytic, loss_with, &at))
    };
    Ok(picks.iter().map(|p| error(p, &mut grads)).collect())
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
