//! A freshly initialised decoder, by either recipe. The draws are `f64`,
//! rounded to the model's float type, so that an `f32` and an `f64` model
//! of one seed hold the same numbers.

use ndarray::Array1;
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

use super::{Decoder, DecoderConfig, LatentSizes, Recipe};
use crate::error::AttnError;
use crate::grad::normal_weights as normal;
use crate::linalg::LinearWeights;
use crate::nn::latent::LatentWeights;
use crate::nn::{AttentionWeights, BlockAttention, NormWeights, PreNormBlock};
use crate::real::Real;

impl<F: Real> Decoder<F> {
    /// A freshly initialised model of `config` (checked), by its recipe:
    /// chapter 12's draws every matrix `N(0, 1/fan-in)` and the embeddings
    /// `N(0, 0.02²)`; chapter 16's, GPT-2's, draws every matrix
    /// `N(0, 0.02²)`, except the two that write into the residual stream
    /// (`W_O` and the FFN's `W₂`), `N(0, 0.02²/(2·layers))`. Every `γ` is 1,
    /// every `β` and bias 0.
    pub fn new(config: impl Into<DecoderConfig>, seed: u64) -> Result<Self, AttnError> {
        let config = config.into();
        config.check()?;
        let mut rng = StdRng::seed_from_u64(seed);
        Ok(match config.recipe {
            Recipe::WithBiases => fan_in(config, &mut rng),
            Recipe::Tied => gpt2(config, &mut rng),
        })
    }
}

/// Chapter 12's initialisation, in its order of draws: the blocks, then
/// the embeddings and the head.
fn fan_in<F: Real>(config: DecoderConfig, rng: &mut StdRng) -> Decoder<F> {
    let (d, f, v) = (config.d_model, config.d_ff, config.vocab);
    let by_fan_in = |rows: usize| 1.0 / (rows as f64).sqrt();
    let blocks = (0..config.layers)
        .map(|_| {
            let [w_q, w_k, w_v, w_o] = [0; 4].map(|_| normal(rng, d, d, by_fan_in(d)));
            let w1 = normal(rng, d, f, by_fan_in(d));
            let w2 = normal(rng, f, d, by_fan_in(f));
            let attention = AttentionWeights::new(w_q, w_k, w_v, w_o);
            PreNormBlock::fresh(d, BlockAttention::Heads(attention), (w1, w2))
        })
        .collect();
    let tokens = normal(rng, v, d, 0.02);
    let positions = normal(rng, config.learned_positions(), d, 0.02);
    let head = LinearWeights { w: normal(rng, d, v, by_fan_in(d)), b: Array1::zeros(v) };
    Decoder { config, tokens, positions, blocks, ln_f: NormWeights::identity(d), head: Some(head) }
}

/// GPT-2's initialisation's standard deviation, for every weight but those
/// that write into the residual stream (`W_O`, the FFN's `W₂`), which get
/// `GPT2_STD / √(2·layers)`.
pub const GPT2_STD: f64 = 0.02;

/// GPT-2's initialisation, in chapter 16's order of draws: the embeddings,
/// then the blocks.
fn gpt2<F: Real>(config: DecoderConfig, rng: &mut StdRng) -> Decoder<F> {
    let (d, f, d_kv) = (config.d_model, config.d_ff, config.d_kv());
    let residual = GPT2_STD / (2.0 * config.layers as f64).sqrt();
    let tokens = normal(rng, config.vocab, d, GPT2_STD);
    let positions = normal(rng, config.learned_positions(), d, GPT2_STD);
    let blocks = (0..config.layers)
        .map(|_| {
            let attention = match config.latent {
                None => {
                    let [w_q, w_k, w_v, w_o] =
                        [(d, GPT2_STD), (d_kv, GPT2_STD), (d_kv, GPT2_STD), (d, residual)]
                            .map(|(cols, std)| normal(rng, d, cols, std));
                    BlockAttention::Heads(AttentionWeights::new(w_q, w_k, w_v, w_o))
                }
                Some(LatentSizes { d_c, d_r }) => BlockAttention::Latent(LatentWeights {
                    w_q: normal(rng, d, d, GPT2_STD),
                    w_qr: normal(rng, d, config.heads * d_r, GPT2_STD),
                    w_dkv: normal(rng, d, d_c, GPT2_STD),
                    w_kr: normal(rng, d, d_r, GPT2_STD),
                    w_uk: normal(rng, d_c, d, GPT2_STD),
                    w_uv: normal(rng, d_c, d, GPT2_STD),
                    w_o: normal(rng, d, d, residual),
                }),
            };
            let w1 = normal(rng, d, f, GPT2_STD);
            let w2 = normal(rng, f, d, residual);
            PreNormBlock::fresh(d, attention, (w1, w2))
        })
        .collect();
    Decoder { config, tokens, positions, blocks, ln_f: NormWeights::identity(d), head: None }
}
