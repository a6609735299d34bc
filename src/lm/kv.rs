//! The language model's KV cache: a cache of keys and values for every head
//! of every block (chapter 16), shared by the query heads of a group, or
//! replaced by latents (chapter 17), and what one block's attention does
//! with it for the newest token.

use ndarray::{s, Array2, ArrayRef2};

use super::alibi::AlibiCache;
use super::model::{LanguageModel, LmConfig};
use crate::cache::{KeyValueCache, KvCache};
use crate::decoder::Positions;
use crate::error::AttnError;
use crate::kv_bytes::kv_bytes_per_token;
use crate::latent::{AbsorbedLatent, LatentAttention, LatentCache};
use crate::nn::{head_columns, head_slices, AttentionWeights, BlockAttention, Heads};
use crate::position::{alibi_slopes, Rotation};
use crate::rope_scaling::{RopeFrequencies, RopeScaling};
use crate::sliding::SlidingCache;

// ANCHOR: cache
/// A KV cache for every block of a language model, and how many tokens it
/// has read: the position of the next.
#[derive(Debug)]
pub struct LmCache {
    pub(super) blocks: Vec<BlockKv>,
    pub(super) read: usize,
    /// The configuration of the model that made it: any other refuses it.
    pub(super) made_for: LmConfig,
}
// ANCHOR_END: cache

/// One block's cache.
#[derive(Debug)]
pub(super) enum BlockKv {
    /// A cache of keys and values for every key/value head; `turn` holds
    /// RoPE's frequencies if the step turns queries and keys at their
    /// positions in the text (rotary positions), none otherwise (the
    /// caches turn them when read, or positions are not rotary).
    Heads { caches: Vec<Box<dyn KeyValueCache>>, turn: Option<RopeFrequencies> },
    /// The latents, and the block's attention with its up-projections
    /// absorbed, which reads them (chapter 17).
    Latent(Box<AbsorbedLatent>, LatentCache),
}

// ANCHOR: heads_step
/// One block's multi-head attention for the newest token, whose normalised
/// vector is `a` (`1×d`): every head's query, key and value; each head
/// appends its key and value to its own cache and attends over what the
/// cache holds; the heads' outputs side by side, times `W_O`. With rotary
/// positions, each head's query and key are turned by the token's
/// `position` first, with RoPE's frequencies `rope`.
fn heads_step(
    w: &AttentionWeights<f32>,
    a: &ArrayRef2<f32>,
    caches: &mut [impl KeyValueCache],
    position: Option<(usize, &RopeFrequencies)>,
) -> Result<Array2<f32>, AttnError> {
    let (mut q, mut k, v) = (w.queries(a)?, w.keys(a)?, w.values(a)?); // 1×d each
    let d_k = q.ncols() / caches.len();
    let mut o = Array2::zeros((1, q.ncols()));
    for (i, cache) in caches.iter_mut().enumerate() {
        let head = s![.., head_columns(i, d_k)]; // head i's columns
        if let Some((p, rope)) = position {
            rope.turn(&mut q.slice_mut(head), p, Rotation::Forward);
            rope.turn(&mut k.slice_mut(head), p, Rotation::Forward);
        }
        cache.append(&k.slice(head).row(0), &v.slice(head).row(0))?;
        let out = cache.attend(&q.slice(head).row(0))?;
        o.slice_mut(head).row_mut(0).assign(&out);
    }
    w.output(&o)
}
// ANCHOR_END: heads_step

// ANCHOR: grouped_step
/// [`heads_step`] with `h` query heads sharing the caches of `h_kv`
/// key/value heads (chapter 17): each key/value head appends its key and
/// value once, and every query head of its group attends over them.
fn grouped_step(
    w: &AttentionWeights<f32>,
    a: &ArrayRef2<f32>,
    caches: &mut [impl KeyValueCache],
    (h, position): (usize, Option<(usize, &RopeFrequencies)>),
) -> Result<Array2<f32>, AttnError> {
    let (mut q, mut k, v) = (w.queries(a)?, w.keys(a)?, w.values(a)?); // 1×d, 1×h_kv·d_k
    let heads = Heads { h_kv: caches.len(), ..Heads::new(1, 1, h) };
    let (d_k, per_group) = (q.ncols() / h, h / heads.h_kv);
    let mut o = Array2::zeros((1, q.ncols()));
    for i in 0..h {
        let [rq, rk, rv, ro] = head_slices(0, i, [d_k, d_k], heads); // its group's keys
        let cache = &mut caches[i / per_group];
        if i % per_group == 0 {
            // The group's first head brings its key and value.
            if let Some((p, rope)) = position {
                rope.turn(&mut k.slice_mut(rk), p, Rotation::Forward);
            }
            cache.append(&k.slice(rk).row(0), &v.slice(rv).row(0))?;
        }
        if let Some((p, rope)) = position {
            rope.turn(&mut q.slice_mut(rq), p, Rotation::Forward);
        }
        o.slice_mut(ro).row_mut(0).assign(&cache.attend(&q.slice(rq).row(0))?);
    }
    w.output(&o)
}
// ANCHOR_END: grouped_step

/// [`heads_step`] with a cache a head, [`grouped_step`] with fewer.
pub(super) fn attend_heads(
    w: &AttentionWeights<f32>,
    a: &ArrayRef2<f32>,
    caches: &mut [impl KeyValueCache],
    (h, position): (usize, Option<(usize, &RopeFrequencies)>),
) -> Result<Array2<f32>, AttnError> {
    if caches.len() == h {
        heads_step(w, a, caches, position)
    } else {
        grouped_step(w, a, caches, (h, position))
    }
}

/// What a step of the model needs of its caches: each block's attention
/// for the newest token (`a`, `1×d`) at `position`, over what the block
/// caches. [`LmCache`] is one; so is a sequence of a paged cache.
pub(super) trait BlockCaches {
    /// Block `layer`'s attention, with `h` query heads.
    fn attend(
        &mut self,
        layer: usize,
        attention: &BlockAttention<f32>,
        a: &ArrayRef2<f32>,
        h_position: (usize, usize),
    ) -> Result<Array2<f32>, AttnError>;
}

impl BlockCaches for LmCache {
    fn attend(
        &mut self,
        layer: usize,
        attention: &BlockAttention<f32>,
        a: &ArrayRef2<f32>,
        h_position: (usize, usize),
    ) -> Result<Array2<f32>, AttnError> {
        self.blocks[layer].attend(attention, a, h_position)
    }
}

impl BlockKv {
    /// The block's attention for the newest token (`a`, `1×d`) at
    /// `position`, through this cache.
    pub(super) fn attend(
        &mut self,
        attention: &BlockAttention<f32>,
        a: &ArrayRef2<f32>,
        (h, position): (usize, usize),
    ) -> Result<Array2<f32>, AttnError> {
        match (attention, self) {
            (BlockAttention::Heads(w), BlockKv::Heads { caches, turn }) => {
                attend_heads(w, a, caches, (h, turn.as_ref().map(|rope| (position, rope))))
            }
            // Latent attention decodes over its latents, absorbed.
            (BlockAttention::Latent(_), BlockKv::Latent(absorbed, latents)) => {
                Ok(absorbed.step(&a.row(0), latents)?.insert_axis(ndarray::Axis(0)))
            }
            _ => Err(mismatched_cache()),
        }
    }
}

impl LmCache {
    /// How many tokens the model has read through the cache (without
    /// learned positions, more than it holds once the window slides).
    pub fn read(&self) -> usize {
        self.read
    }

    /// How many tokens the cache holds.
    pub fn len(&self) -> usize {
        match self.blocks.first() {
            Some(BlockKv::Heads { caches, .. }) => caches.first().map_or(0, |c| c.len()),
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

    /// The bytes its latents take, allocated at once, with latent
    /// attention (`None` for caches of keys and values).
    pub fn latent_bytes(&self) -> Option<usize> {
        let block = |b: &BlockKv| match b {
            BlockKv::Heads { .. } => None,
            BlockKv::Latent(_, latents) => Some(latents.bytes()),
        };
        self.blocks.iter().map(block).sum()
    }
}

impl LanguageModel<f32> {
    /// An empty cache for this model, with room for its context, allocated
    /// at once: [`LmCache::bytes_per_token`] times the context. With
    /// learned positions it is chapter 6's cache in every head; with any
    /// other (rotary, ALiBi or none) a ring buffer of the last `context`
    /// tokens, which slides.
    pub fn new_cache(&self) -> LmCache {
        self.cache_keeping(0, self.config.context, false)
            .expect("a context's cache was checked with the model")
    }

    /// An empty cache that keeps the first `sinks` tokens and the last
    /// `window` in every key/value head of every block (a ring buffer,
    /// without learned positions), read at the text's positions or at the
    /// cache's.
    pub(super) fn cache_keeping(
        &self,
        sinks: usize,
        window: usize,
        in_cache_positions: bool,
    ) -> Result<LmCache, AttnError> {
        let c = self.config;
        let (d_k, rope) = (c.d_model / c.heads, c.positions.rope());
        if in_cache_positions && rope != Some(RopeScaling::None) {
            return Err(AttnError::Mismatched {
                name: "positions within the cache",
                requirement: "need plain rotary positions (RoPE without scaling)",
            });
        }
        let slopes = match c.positions {
            Positions::Alibi => alibi_slopes(c.heads)?,
            _ => Vec::new(),
        };
        let store = |head: usize| -> Result<Box<dyn KeyValueCache>, AttnError> {
            if c.positions == Positions::Learned {
                return Ok(Box::new(KvCache::with_capacity(d_k, d_k, window)?));
            }
            if c.positions == Positions::Alibi {
                let ring = SlidingCache::new(d_k, d_k, sinks, window)?;
                return Ok(Box::new(AlibiCache::new(ring, slopes[head])));
            }
            let ring = SlidingCache::new(d_k, d_k, sinks, window)?;
            Ok(match in_cache_positions {
                true => Box::new(ring.at_cache_positions()),
                false => Box::new(ring),
            })
        };
        let mut blocks = Vec::with_capacity(c.layers);
        for block in &self.blocks {
            blocks.push(match &block.attn {
                BlockAttention::Heads(_) => BlockKv::Heads {
                    caches: (0..c.kv_heads).map(store).collect::<Result<_, _>>()?,
                    turn: match (rope, in_cache_positions) {
                        (Some(scaling), false) => Some(RopeFrequencies::of_heads(d_k, scaling)?),
                        _ => None,
                    },
                },
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
        Ok(LmCache { blocks, read: 0, made_for: self.config })
    }

    /// Checks that `cache` was made for this model and that `token` can be
    /// read at `position`.
    pub(super) fn check_step(
        &self,
        token: usize,
        position: usize,
        cache: &LmCache,
    ) -> Result<(), AttnError> {
        let c = self.config;
        self.check_cache(cache)?;
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

impl LanguageModel<f32> {
    /// Checks that `cache` was made by a model of this one's configuration:
    /// a cache of a wider or narrower model would be read at the wrong
    /// widths.
    pub(super) fn check_cache(&self, cache: &LmCache) -> Result<(), AttnError> {
        if cache.made_for != self.config {
            return Err(mismatched_cache());
        }
        Ok(())
    }
}

/// The error of a cache made for another model.
pub(super) fn mismatched_cache() -> AttnError {
    AttnError::Mismatched {
        name: "cache",
        requirement: "must be made by this model's new_cache, new_cache_forgetting or \
                      new_paged_cache (a model of another configuration holds keys of other \
                      widths)",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scaling::standard_normal;
    use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

    /// Chapter 16's step, one cache a head, is chapter 17's grouped step
    /// with as many key/value heads as heads, bit for bit, with and without
    /// rotation.
    #[test]
    fn the_grouped_step_with_a_group_a_head_is_the_multi_head_step() {
        let mut rng = StdRng::seed_from_u64(5);
        let (d, h) = (8, 4);
        let w: AttentionWeights<f32> = [(); 4].map(|_| standard_normal(d, d, &mut rng)).into();
        let yarn = RopeScaling::Yarn {
            factor: 4.0,
            trained: 2,
            beta_fast: 2.0,
            beta_slow: 0.5,
            temperature: true,
        };
        let [plain, scaled] = [RopeScaling::None, yarn].map(|s| RopeFrequencies::of_heads(2, s));
        let [plain, scaled] = [plain.unwrap(), scaled.unwrap()];
        for position in [None, Some((3, &plain)), Some((3, &scaled))] {
            let new = || -> Vec<Box<dyn KeyValueCache>> {
                (0..h).map(|_| Box::new(KvCache::new(2, 2)) as Box<dyn KeyValueCache>).collect()
            };
            let (mut a_caches, mut b_caches) = (new(), new());
            for _ in 0..5 {
                let a = standard_normal(1, d, &mut rng);
                let one = heads_step(&w, &a, &mut a_caches, position).unwrap();
                let other = grouped_step(&w, &a, &mut b_caches, (h, position)).unwrap();
                assert_eq!(one, other);
            }
        }
    }
}
