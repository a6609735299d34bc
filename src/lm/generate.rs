//! Writing text: the model predicts the next token, a [`Sampler`] picks
//! one, and it is appended; with chapter 6's KV cache in every head of every
//! block, each new token costs one row of work instead of the whole prefix.

use ndarray::{s, Array1, Array2, ArrayRef2, Axis};
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

use super::model::LanguageModel;
use super::sample::Sampler;
use crate::decoder::{Positions, EPS};
use crate::error::AttnError;
use crate::kv_bytes::kv_bytes_per_token;
use crate::latent::{AbsorbedLatent, LatentAttention, LatentCache};
use crate::linalg::matmul;
use crate::nn::{ffn_sublayer, layer_norm_forward, AttentionWeights, BlockAttention};
use crate::position::{rotate, Rotation};
use crate::sliding::SlidingCache;

// ANCHOR: cache
/// A KV cache for every key/value head of every block: the keys and values
/// of the last `context` tokens the model has read, in a ring buffer
/// allocated once ([`SlidingCache`]). With grouped-query attention, the
/// query heads of a group read one; with latent attention, a block caches
/// one latent and rotary key a token ([`LatentCache`]).
#[derive(Debug, Clone)]
pub struct LmCache {
    blocks: Vec<BlockKv>,
    read: usize, // tokens read so far: the next one's position
    /// Whether keys are cached before RoPE and read at their positions
    /// within the cache, as StreamingLLM reads them (rotary models only).
    in_cache_positions: bool,
}

/// One block's cache.
#[derive(Debug, Clone)]
enum BlockKv {
    /// One per key/value head.
    Heads(Vec<SlidingCache>),
    /// The latents, and the block's attention with its up-projections
    /// absorbed, which reads them.
    Latent(Box<AbsorbedLatent>, LatentCache),
}

impl LmCache {
    /// How many tokens the model has read through the cache (with rotary
    /// positions, more than it holds once the window slides).
    pub fn read(&self) -> usize {
        self.read
    }

    /// How many tokens the cache holds.
    pub fn len(&self) -> usize {
        match self.blocks.first() {
            Some(BlockKv::Heads(heads)) => heads.first().map_or(0, SlidingCache::len),
            Some(BlockKv::Latent(_, latents)) => latents.len(),
            None => 0,
        }
    }

    /// Whether it holds none yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes of keys and values it holds per token: `2 · layers · d_kv`
    /// numbers of 4 bytes (a key and a value of every key/value head of
    /// every block, `d_kv = kv_heads · d_k`: `d` for multi-head attention),
    /// or `layers · (d_c + d_r)` with latent attention.
    pub fn bytes_per_token(model: &LanguageModel<f32>) -> usize {
        let c = model.config();
        kv_bytes_per_token(c.layers, c.kv_layout(), std::mem::size_of::<f32>())
            .expect("the model's sizes were checked: its cache fits in memory")
    }

    /// The bytes its keys and values (or latents) take, allocated at once.
    pub fn bytes(&self) -> usize {
        let block = |b: &BlockKv| match b {
            BlockKv::Heads(heads) => heads.iter().map(SlidingCache::bytes).sum(),
            BlockKv::Latent(_, latents) => latents.bytes(),
        };
        self.blocks.iter().map(block).sum()
    }
}
// ANCHOR_END: cache

// ANCHOR: step
impl LanguageModel<f32> {
    /// An empty cache for this model, with room for its context, allocated
    /// at once: [`LmCache::bytes_per_token`] times the context.
    pub fn new_cache(&self) -> LmCache {
        self.cache_keeping(0, self.config.context, false)
            .expect("a context's cache was checked with the model")
    }

    /// An empty cache that keeps the first `sinks` tokens and the last
    /// `window` in every key/value head of every block, read at the text's
    /// positions or at the cache's.
    pub(super) fn cache_keeping(
        &self,
        sinks: usize,
        window: usize,
        in_cache_positions: bool,
    ) -> Result<LmCache, AttnError> {
        let c = self.config;
        let d_k = c.d_model / c.heads;
        let mut blocks = Vec::with_capacity(c.layers);
        for block in &self.blocks {
            blocks.push(match &block.attn {
                BlockAttention::Heads(_) => BlockKv::Heads(
                    (0..c.kv_heads)
                        .map(|_| SlidingCache::new(d_k, d_k, sinks, window))
                        .collect::<Result<Vec<_>, _>>()?,
                ),
                BlockAttention::Latent(w) => {
                    // The latent cache keeps its rotary keys turned at their
                    // positions in the text, and no sinks.
                    if sinks > 0 {
                        return Err(AttnError::InvalidArgument {
                            name: "sinks with latent attention",
                            value: sinks as f64,
                            requirement: "must be 0: a latent cache keeps a window only",
                        });
                    }
                    if in_cache_positions {
                        return Err(AttnError::Mismatched {
                            name: "positions within the cache with latent attention",
                            requirement: "are not offered: a latent cache keeps its rotary keys turned at their positions in the text",
                        });
                    }
                    let absorbed = LatentAttention::from_weights(w.clone())?.absorbed();
                    let latents = absorbed.new_cache(window)?;
                    BlockKv::Latent(Box::new(absorbed), latents)
                }
            });
        }
        Ok(LmCache {
            blocks,
            read: 0,
            in_cache_positions,
        })
    }

    /// Reads `token` at the next position of `cache`, adds what every block
    /// caches of it (its key and value in every key/value head, or its
    /// latent), and returns the logits of the token after it: the last row
    /// of [`Self::forward`] over every token read so far. With rotary
    /// positions the cache is a sliding window: once it holds `context`
    /// tokens, each step overwrites the oldest, and the result is the row of
    /// [`Self::forward_window`] (every block attending to the last `context`
    /// positions) over the whole text. It is not that of reading the last
    /// `context` tokens afresh.
    pub fn step(&self, token: usize, cache: &mut LmCache) -> Result<Array1<f32>, AttnError> {
        let position = cache.read;
        self.check_step(token, position, cache)?;
        let eps = EPS as f32;
        let mut x = if self.config.positions == Positions::Rotary {
            self.tokens.row(token).to_owned()
        } else {
            &self.tokens.row(token) + &self.positions.row(position)
        }
        .insert_axis(Axis(0));
        let in_cache_positions = cache.in_cache_positions;
        for (block, kv) in self.blocks.iter().zip(&mut cache.blocks) {
            // x ← x + Attention(LayerNorm(x)), over the block's cache.
            let (a, _) = layer_norm_forward(&x, &block.ln1.gamma, &block.ln1.beta, eps);
            x += &match (&block.attn, kv) {
                (BlockAttention::Heads(w), BlockKv::Heads(kv_caches)) => {
                    self.heads_step(&a, w, kv_caches, position, in_cache_positions)?
                }
                // Latent attention decodes over its latents, absorbed.
                (BlockAttention::Latent(_), BlockKv::Latent(absorbed, latents)) => {
                    absorbed.step(&a.row(0), latents)?.insert_axis(Axis(0))
                }
                _ => return Err(mismatched_cache()),
            };
            // x ← x + FFN(LayerNorm(x)).
            let activation = self.config.activation;
            let (f, _) = ffn_sublayer(&x, (&block.ln2, &block.ffn), activation, eps)?;
            x += &f;
        }
        cache.read += 1;
        Ok(self.read_out(&x)?.remove_axis(Axis(0)))
    }

    /// One block's multi-head (or grouped-query) attention for the token
    /// at `position`, whose normalised vector is `a` (`1×d`), with the
    /// projections `w`: each key/value head appends the token's key and
    /// value to its cache, and each query head attends over its group's.
    fn heads_step(
        &self,
        a: &Array2<f32>,
        w: &AttentionWeights<f32>,
        kv_caches: &mut [SlidingCache],
        position: usize,
        in_cache_positions: bool,
    ) -> Result<Array2<f32>, AttnError> {
        let rotary = self.config.positions == Positions::Rotary;
        // Rotate by the text's positions here, or by the cache's when reading.
        let turn = rotary && !in_cache_positions;
        // Queries 1×d; keys and values 1 × kv_heads·d_k.
        let [mut q, mut k, v] = [&w.w_q, &w.w_k, &w.w_v].map(|w| matmul(a, w));
        let mut o = Array2::zeros((1, self.config.d_model));
        let per_group = self.config.heads / self.config.kv_heads; // query heads per KV head
        for (g, head_cache) in kv_caches.iter_mut().enumerate() {
            let d_k = head_cache.width();
            let cols = |i: usize| s![.., i * d_k..(i + 1) * d_k];
            if turn {
                // The new key turned by its own position; the cached keys
                // keep the turn of theirs.
                rotate(&mut k.slice_mut(cols(g)), position, Rotation::Forward);
            }
            let row = |x: &Array2<f32>, i| x.slice(cols(i)).row(0).to_owned();
            head_cache.append(&row(&k, g), &row(&v, g))?;
            for h in g * per_group..(g + 1) * per_group {
                if turn {
                    rotate(&mut q.slice_mut(cols(h)), position, Rotation::Forward);
                }
                let out = if rotary && !turn {
                    head_cache.attend_in_cache_positions(&row(&q, h))?
                } else {
                    head_cache.attend(&row(&q, h))?
                };
                o.slice_mut(cols(h)).row_mut(0).assign(&out);
            }
        }
        Ok(matmul(&o, &w.w_o))
    }
    // ANCHOR_END: step

    /// The logits of the token after the last of `tokens` (at most the
    /// context), recomputed over all of them: the last row of
    /// [`Self::forward`].
    pub fn next_logits(&self, tokens: &[usize]) -> Result<Array1<f32>, AttnError> {
        let fwd = self.forward(&[tokens.to_vec()])?;
        Ok(fwd.logits().row(tokens.len() - 1).to_owned())
    }

    /// The final LayerNorm and the output head.
    fn read_out(&self, x: &ArrayRef2<f32>) -> Result<Array2<f32>, AttnError> {
        let (z, _) = layer_norm_forward(x, &self.ln_f.gamma, &self.ln_f.beta, EPS as f32);
        self.logits(&z)
    }

    fn check_step(&self, token: usize, position: usize, cache: &LmCache) -> Result<(), AttnError> {
        let c = self.config;
        let fits = |b: &BlockKv| match b {
            BlockKv::Heads(heads) => c.latent.is_none() && heads.len() == c.kv_heads,
            BlockKv::Latent(..) => c.latent.is_some(),
        };
        if cache.blocks.len() != c.layers || !cache.blocks.iter().all(fits) {
            return Err(mismatched_cache());
        }
        if position >= c.context && c.positions == Positions::Learned {
            return Err(AttnError::TooLong {
                what: "the cached tokens and the new one",
                len: position + 1,
                max: c.context,
            });
        }
        if token >= c.vocab {
            return Err(AttnError::OutOfRange {
                name: "token",
                value: token,
                requirement: "must be less than the vocabulary's size",
                limit: c.vocab,
            });
        }
        Ok(())
    }
}

/// The error of a cache made for another model.
fn mismatched_cache() -> AttnError {
    AttnError::Mismatched {
        name: "cache",
        requirement: "must be made by this model's new_cache (one per key/value head, or one \
                      of latents, in every block)",
    }
}

// ANCHOR: generate
/// How [`LanguageModel::generate`] computes each next token's logits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decoding {
    /// Through the KV cache: with rotary positions, a sliding window of the
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
        let context = self.config.context;
        let mut rng = StdRng::seed_from_u64(seed);
        let mut cache = self.new_cache();
        let mut tokens = prompt.to_vec();
        for _ in 0..count {
            let slides = self.config.positions == Positions::Rotary;
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
