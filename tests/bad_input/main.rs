//! Contract 4 of the book: bad input gets a clear, typed error. Never a
//! panic, never a hidden NaN, never a silently wrong answer. One test per
//! class of defect that a reader calling the crate could meet; each failed
//! on the crate before it was fixed.

mod accepted;
mod attention;
mod coverage;
mod early_chapters;
mod exercises;
#[cfg(feature = "gpu")]
mod gpu;
mod later_chapters;
mod layers;
mod lm;
mod loops;
mod measurements;
mod models;
mod nan_and_overflow;
mod pretrained;
mod public_api;
mod recent;
mod serving;
mod sizes;
mod vision;

use attn::model::{ModelConfig, Task, TrainConfig};
use ndarray::Array2;
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

fn rng() -> StdRng {
    StdRng::seed_from_u64(0)
}

/// A language model small enough to build in every test: learned
/// positions, a context of 6, a vocabulary of 8.
pub(crate) const SMALL_LM: attn::lm::LmConfig = attn::lm::LmConfig {
    vocab: 8,
    context: 6,
    d_model: 8,
    heads: 2,
    kv_heads: 2,
    layers: 1,
    d_ff: 16,
    positions: attn::lm::Positions::Learned,
    latent: None,
    ..attn::lm::SHAKESPEARE_MODEL
};

pub(crate) fn small() -> ModelConfig {
    ModelConfig { k: 2, d_model: 8, heads: 2, d_ff: 12, layers: 1 }
}

pub(crate) fn training(lr: f64) -> TrainConfig {
    TrainConfig {
        steps: 2,
        batch: 4,
        lr,
        warmup: 1,
        seed: u64::MAX, // seeds are any u64: derived seeds wrap, never overflow
        task: Task::REVERSE,
    }
}

pub(crate) fn narrow_copy() -> Array2<f32> {
    Array2::zeros((8, 4))
}
