//! Writing text: the model predicts the next token, a [`Sampler`] picks
//! one, and it is appended; with chapter 6's KV cache in every head of every
//! block, each new token costs one row of work instead of the whole prefix.

use ndarray::{Array1, Array2, ArrayRef2, Axis};
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

use super::kv::{BlockCaches, LmCache};
use super::model::LanguageModel;
use super::sample::{check_logits, Sampler};
use crate::check::check_total;
use crate::decoder::{Positions, EPS};
use crate::error::AttnError;
use crate::nn::{check_finite_parameters, ffn_sublayer, layer_norm_forward};

/// The most tokens [`LanguageModel::generate`] holds (prompt and written
/// together) and [`LanguageModel::losses_through`] reads in one call: a
/// bound on the work a call can be asked for, about a fifth of the
/// complete works of Shakespeare.
pub const MAX_GENERATED: usize = 1 << 20;

/// The logits, if finite (sampling's check): an `Ok` holds no NaN and no
/// infinity.
pub(super) fn finite(logits: Array1<f32>) -> Result<Array1<f32>, AttnError> {
    check_logits(logits.as_slice().expect("a fresh row is contiguous"))?;
    Ok(logits)
}

// ANCHOR: step
impl LanguageModel<f32> {
    /// Reads `token` at the next position of `cache`, adds what every block
    /// caches of it, and returns the logits of the token after it: the last
    /// row of [`Self::forward`] over every token read so far. Without
    /// learned positions (rotary ones, say) the cache is a sliding window: once it holds `context`
    /// tokens, each step overwrites the oldest, and the result is the row of
    /// [`Self::forward_window`] (every block attending to the last `context`
    /// positions) over the whole text. It is not that of reading the last
    /// `context` tokens afresh.
    pub fn step(&self, token: usize, cache: &mut LmCache) -> Result<Array1<f32>, AttnError> {
        self.check_step(token, cache.read, cache)?;
        let logits = self.read_token(token, cache.read, cache).and_then(finite);
        if logits.is_ok() {
            cache.read += 1;
        }
        // A parameter that is not finite surfaces inside a block (as a key
        // that is not finite, say): the error names the parameter instead.
        logits.or_else(|error| self.blame_parameters(error))
    }

    /// [`Self::step`]'s work, once its arguments are checked: `token` read
    /// at `position`, each block attending through its cache.
    pub(super) fn read_token(
        &self,
        token: usize,
        position: usize,
        cache: &mut impl BlockCaches,
    ) -> Result<Array1<f32>, AttnError> {
        let eps = EPS as f32;
        let mut x = self.tokens.row(token).to_owned().insert_axis(Axis(0)); // 1×d
        if self.config.positions == Positions::Learned {
            x += &self.positions.row(position);
        }
        for (l, block) in self.blocks.iter().enumerate() {
            // x ← x + Attention(LayerNorm(x)), over the block's cache.
            let (a, _) = layer_norm_forward(&x, &block.ln1.gamma, &block.ln1.beta, eps)?;
            x += &cache.attend(l, &block.attn, &a, (self.config.heads, position))?;
            // x ← x + FFN(LayerNorm(x)).
            let activation = self.config.activation;
            let (f, _) = ffn_sublayer(&x, (&block.ln2, &block.ffn), activation, eps)?;
            x += &f;
        }
        Ok(self.read_out(&x)?.remove_axis(Axis(0)))
    }
    // ANCHOR_END: step

    /// An error that a parameter which is not finite explains becomes an
    /// error naming that parameter, which the caller can find. The
    /// parameters are read only on failure: reading them costs about as
    /// much as a step.
    pub(super) fn blame_parameters<T>(&self, error: AttnError) -> Result<T, AttnError> {
        check_finite_parameters(self)?;
        Err(error)
    }

    /// The logits of the token after the last of `tokens` (at most the
    /// context), recomputed over all of them: the last row of
    /// [`Self::forward`].
    pub fn next_logits(&self, tokens: &[usize]) -> Result<Array1<f32>, AttnError> {
        let fwd = self.forward(&[tokens.to_vec()])?;
        Ok(fwd.logits().row(tokens.len() - 1).to_owned())
    }

    /// The final LayerNorm and the output head.
    pub(super) fn read_out(&self, x: &ArrayRef2<f32>) -> Result<Array2<f32>, AttnError> {
        let (z, _) = layer_norm_forward(x, &self.ln_f.gamma, &self.ln_f.beta, EPS as f32)?;
        self.logits(&z)
    }
}

// ANCHOR: generate
/// How [`LanguageModel::generate`] computes each next token's logits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decoding {
    /// Through the KV cache: without learned positions, a sliding window of the
    /// last `context` tokens; with learned positions, while the text fits
    /// the context, and past it as [`Decoding::Recompute`] (learned
    /// positions cannot slide: every cached key was made at a position
    /// that shifts).
    Cached,
    /// The whole window of the last `context` tokens, every step.
    Recompute,
}

impl LanguageModel<f32> {
    /// `prompt` (at least one token) followed by `count` tokens, each
    /// drawn by `sampler` with a random source seeded by `seed`.
    pub fn generate(
        &self,
        prompt: &[usize],
        count: usize,
        sampler: &Sampler,
        seed: u64,
        decoding: Decoding,
    ) -> Result<Vec<usize>, AttnError> {
        if prompt.is_empty() {
            return Err(AttnError::InvalidArgument {
                name: "prompt",
                value: 0.0,
                requirement: "must hold at least one token",
            });
        }
        self.check_token_ids("prompt", prompt)?;
        let total = prompt.len().saturating_add(count);
        check_total("the prompt and the tokens to write", &[total], MAX_GENERATED)?;
        let context = self.config.context;
        let mut rng = StdRng::seed_from_u64(seed);
        let mut cache = self.new_cache();
        let mut tokens = prompt.to_vec();
        for _ in 0..count {
            let slides = self.config.positions != Positions::Learned;
            let logits = if decoding == Decoding::Cached && (slides || tokens.len() <= context) {
                let mut logits = None;
                while cache.read < tokens.len() {
                    logits = Some(self.step(tokens[cache.read], &mut cache)?);
                }
                logits.expect("the cache was behind by at least the newest token")
            } else {
                self.next_logits(&tokens[tokens.len().saturating_sub(context)..])?
            };
            let next = sampler.sample(logits.as_slice().expect("contiguous"), &mut rng)?;
            tokens.push(next);
        }
        Ok(tokens)
    }
}
// ANCHOR_END: generate
