//! The language model: chapter 12's decoder ([`Decoder`]), configured by
//! chapter 16's recipe and sized to train on a CPU.

use crate::decoder::{Decoder, DecoderConfig, DecoderForward, Positions, Recipe};
use crate::error::AttnError;
use crate::nn::Activation;
use crate::real::Real;
use crate::rope_scaling::RopeScaling;

/// A decoder-only language model: a [`Decoder`], in `f32` unless said.
pub type LanguageModel<F = f32> = Decoder<F>;

/// A language model's configuration.
pub type LmConfig = DecoderConfig;

/// What a language model's forward pass returns.
pub type LmForward<F> = DecoderForward<F>;

// ANCHOR: config
/// The book's language model: 4 blocks of 4 heads, 128 wide, reading 64
/// characters, over Shakespeare's 84 characters, by nanoGPT's recipe
/// (GPT-2's initialisation and exact GELU, no biases, the token embedding
/// as the output head).
pub const SHAKESPEARE_MODEL: LmConfig = DecoderConfig {
    vocab: 84,
    context: 64,
    d_model: 128,
    heads: 4,
    kv_heads: 4,
    layers: 4,
    d_ff: 512,
    positions: Positions::Learned,
    latent: None,
    activation: Activation::GeluErf,
    recipe: Recipe::Tied,
};
// ANCHOR_END: config

impl<F: Real> LanguageModel<F> {
    /// The same weights reading `context` tokens at once: for a model with
    /// no table of positions (rotary ones, ALiBi or none), whose weights do
    /// not depend on the context. An error for learned positions, or for a
    /// context its configuration refuses.
    pub fn with_context(&self, context: usize) -> Result<Self, AttnError> {
        if self.config.positions == Positions::Learned {
            return Err(AttnError::Mismatched {
                name: "another context for this model",
                requirement: "needs a model without learned positions: their table has \
                              `context` rows",
            });
        }
        self.with_config(LmConfig { context, ..self.config })
    }

    /// The same weights reading `context` tokens at once with rotary
    /// positions scaled as `scaling` says: a rotary model has no table of
    /// positions, so only its frequencies and the length it reads change.
    /// An error for a model with learned positions, or for a scaling or
    /// context its configuration refuses.
    pub fn with_scaled_rope(
        &self,
        context: usize,
        scaling: RopeScaling,
    ) -> Result<Self, AttnError> {
        if self.config.positions.rope().is_none() {
            return Err(AttnError::Mismatched {
                name: "a scaled RoPE for this model",
                requirement: "needs a model with rotary positions: learned ones have a table of \
                              `context` rows",
            });
        }
        self.with_config(LmConfig {
            context,
            positions: Positions::ScaledRotary(scaling),
            ..self.config
        })
    }

    /// The same weights under `config`, which the caller derived from this
    /// model's by changing nothing the weights' shapes depend on; checked.
    fn with_config(&self, config: LmConfig) -> Result<Self, AttnError> {
        config.check()?;
        Ok(LanguageModel { config, ..self.clone() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decoder::LatentSizes;
    use crate::nn::Parameters;

    #[test]
    fn the_book_model_has_the_parameters_its_formula_counts() {
        let model = LanguageModel::<f32>::new(SHAKESPEARE_MODEL, 1).unwrap();
        assert_eq!(model.parameter_count(), 806_528);
        assert_eq!(SHAKESPEARE_MODEL.parameter_count(), Some(806_528));
        let decayed = model.matrices().iter().filter(|&&m| m).count();
        assert_eq!(decayed, 2 + 4 * 6); // embeddings, W_Q..W_O, W₁, W₂
    }

    #[test]
    fn an_f32_and_an_f64_model_of_one_seed_hold_the_same_numbers() {
        let config = LmConfig {
            vocab: 5,
            context: 4,
            d_model: 8,
            heads: 2,
            kv_heads: 2,
            layers: 2,
            d_ff: 16,
            ..SHAKESPEARE_MODEL
        };
        let a = LanguageModel::<f32>::new(config, 3).unwrap();
        let b = LanguageModel::<f64>::new(config, 3).unwrap();
        for (x, y) in a.slices().iter().zip(b.slices()) {
            assert!(x.iter().zip(y).all(|(x, y)| *x == *y as f32));
        }
    }

    #[test]
    fn bad_sizes_are_refused_by_name() {
        let e = |c: LmConfig| LanguageModel::<f32>::new(c, 0).unwrap_err().to_string();
        assert!(e(LmConfig { heads: 3, ..SHAKESPEARE_MODEL }).contains("heads"));
        assert!(e(LmConfig { vocab: 0, ..SHAKESPEARE_MODEL }).contains("vocab"));
        let huge = LmConfig { layers: 1 << 40, ..SHAKESPEARE_MODEL };
        assert!(e(huge).contains("parameters"));
        let long = LmConfig { context: 1 << 40, positions: Positions::Rotary, ..SHAKESPEARE_MODEL };
        assert!(e(long).contains("KV cache"));
        let odd =
            LmConfig { d_model: 12, heads: 4, positions: Positions::Rotary, ..SHAKESPEARE_MODEL };
        assert!(e(odd).contains("even"));
        let rotary = LmConfig { positions: Positions::Rotary, ..SHAKESPEARE_MODEL };
        assert_eq!(rotary.parameter_count(), Some(806_528 - 64 * 128));
    }

    #[test]
    fn latent_attention_counts_its_parameters_and_refuses_what_it_cannot_be() {
        let latent = LmConfig {
            positions: Positions::Rotary,
            latent: Some(LatentSizes { d_c: 64, d_r: 16 }),
            ..SHAKESPEARE_MODEL
        };
        // Per block, attention's 4·128² become 2·128² + 128·4·16 + 128·64
        // + 128·16 + 2·64·128: 2,048 more.
        assert_eq!(latent.parameter_count(), Some(806_528 - 64 * 128 + 4 * 2_048));
        let model = LanguageModel::<f32>::new(latent, 1).unwrap();
        assert_eq!(model.parameter_count(), latent.parameter_count().unwrap());
        let e = |c: LmConfig| LanguageModel::<f32>::new(c, 0).unwrap_err().to_string();
        let learned = LmConfig { positions: Positions::Learned, ..latent };
        assert!(e(learned).contains("rotary"));
        assert!(e(LmConfig { kv_heads: 2, ..latent }).contains("kv_heads"));
        let odd = LmConfig { latent: Some(LatentSizes { d_c: 64, d_r: 3 }), ..latent };
        assert!(e(odd).contains("d_r"));
        let empty = LmConfig { latent: Some(LatentSizes { d_c: 0, d_r: 16 }), ..latent };
        assert!(e(empty).contains("d_c"));
        let sinks =
            model.new_cache_forgetting(crate::lm::Forgetting::Sinks { sinks: 4, window: 60 });
        assert!(sinks.unwrap_err().to_string().contains("sinks"));
    }
}
