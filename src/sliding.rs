//! Forgetting keys: a KV cache that keeps only the last `window` tokens (a
//! sliding window, as Longformer and Mistral attend) and, besides them, the
//! first `sinks` tokens (attention sinks, StreamingLLM), in a ring buffer
//! of `sinks + window` rows allocated once. Chapter 6's [`KvCache`] grows
//! with the text; this one never does. Both are a [`KeyValueCache`].
//!
//! [`KvCache`]: crate::cache::KvCache

use ndarray::{s, Array1, Array2, ArrayRef1, Axis};

use crate::cache::{check_new_token, KeyValueCache};
use crate::check::check_size;
use crate::error::AttnError;
use crate::position::{rotate, Rotation};
use crate::scaled_dot_product_attention;

// ANCHOR: sliding_cache
/// The keys and values of the first `sinks` tokens and of the last `window`
/// tokens: a ring buffer of `sinks + window` rows. Once full, each new token
/// overwrites the oldest token of the window; the sinks are never
/// overwritten.
#[derive(Debug, Clone)]
pub struct SlidingCache {
    k: Array2<f32>, // (sinks + window) × d_k, allocated at once
    v: Array2<f32>, // (sinks + window) × d_v
    sinks: usize,
    window: usize,
    seen: usize, // tokens appended so far
    /// Whether keys are turned by their places in the cache when read
    /// (StreamingLLM), instead of carrying their places in the text.
    in_cache_positions: bool,
}

impl SlidingCache {
    /// An empty cache for keys of width `d_k` and values of width `d_v` that
    /// keeps `sinks` first tokens and a window of the last `window` (at
    /// least 1).
    pub fn new(d_k: usize, d_v: usize, sinks: usize, window: usize) -> Result<Self, AttnError> {
        if window == 0 {
            return Err(AttnError::InvalidArgument {
                name: "window",
                value: 0.0,
                requirement: "must be at least 1: the newest token is always kept",
            });
        }
        let rows = sinks.saturating_add(window);
        check_size("the cached keys", rows, d_k)?;
        check_size("the cached values", rows, d_v)?;
        let (k, v) = (Array2::zeros((rows, d_k)), Array2::zeros((rows, d_v)));
        let in_cache_positions = false;
        Ok(SlidingCache { k, v, sinks, window, seen: 0, in_cache_positions })
    }

    /// The row of the ring that token `t` (counted from 0) is written to:
    /// its own row if it is a sink, else the window's rows in turn.
    fn slot(&self, t: usize) -> usize {
        if t < self.sinks {
            t
        } else {
            self.sinks + (t - self.sinks) % self.window
        }
    }
}
// ANCHOR_END: sliding_cache

// ANCHOR: sliding_attend
impl KeyValueCache for SlidingCache {
    /// Appends the next token's key `k_t` and value `v_t`, over the oldest
    /// token of the window once the cache is full.
    fn append(&mut self, k_t: &ArrayRef1<f32>, v_t: &ArrayRef1<f32>) -> Result<(), AttnError> {
        check_new_token(k_t, v_t, (self.k.ncols(), self.v.ncols()))?;
        let row = self.slot(self.seen);
        self.k.row_mut(row).assign(k_t);
        self.v.row_mut(row).assign(v_t);
        self.seen += 1;
        Ok(())
    }

    /// Attends with `q_t` over every token held. The rows are in the ring's
    /// order, not the text's: attention does not depend on the keys' order,
    /// so this holds for keys that carry their own positions (RoPE applied
    /// before they were cached) or none.
    fn attend(&self, q_t: &ArrayRef1<f32>) -> Result<Array1<f32>, AttnError> {
        if self.in_cache_positions {
            return self.attend_in_cache_positions(q_t);
        }
        let n = self.len();
        let (k, v) = (self.k.slice(s![..n, ..]), self.v.slice(s![..n, ..]));
        let q_t = q_t.to_owned().insert_axis(Axis(0)); // 1×d_k
        let a = scaled_dot_product_attention(&q_t, &k, &v)?;
        Ok(a.output.row(0).to_owned())
    }

    /// How many tokens it holds: at most `sinks + window`.
    fn len(&self) -> usize {
        self.seen.min(self.k.nrows())
    }
}
// ANCHOR_END: sliding_attend

// ANCHOR: in_cache_positions
impl SlidingCache {
    /// The same cache, its keys cached before RoPE and turned when read by
    /// their places in the cache, as StreamingLLM does: the `j`-th token
    /// held (oldest first) at position `j`, the query at the newest's,
    /// `len − 1`. The distances between tokens then stay within what the
    /// model saw in training, however far the text has run.
    pub fn at_cache_positions(self) -> Self {
        SlidingCache { in_cache_positions: true, ..self }
    }

    fn attend_in_cache_positions(&self, q_t: &ArrayRef1<f32>) -> Result<Array1<f32>, AttnError> {
        crate::position::check_even("d_k with rotary positions", self.k.ncols())?;
        let (held, mut k, v) = self.held_in_order(); // oldest first
        rotate(&mut k, 0, Rotation::Forward); // positions 0 .. len − 1
        let mut q = q_t.to_owned().insert_axis(Axis(0));
        rotate(&mut q, held.len().saturating_sub(1), Rotation::Forward);
        let a = scaled_dot_product_attention(&q, &k, &v)?;
        Ok(a.output.row(0).to_owned())
    }
}
// ANCHOR_END: in_cache_positions

impl SlidingCache {
    /// The tokens it holds, counted from 0 in the text, oldest first: the
    /// sinks, then the window.
    pub fn held(&self) -> Vec<usize> {
        let sinks = 0..self.seen.min(self.sinks);
        let window = self.seen.saturating_sub(self.window).max(self.sinks)..self.seen;
        sinks.chain(window).collect()
    }

    /// The tokens held, oldest first, and their keys and values in that
    /// order.
    pub(crate) fn held_in_order(&self) -> (Vec<usize>, Array2<f32>, Array2<f32>) {
        let held = self.held();
        let rows: Vec<usize> = held.iter().map(|&t| self.slot(t)).collect();
        (held, self.k.select(Axis(0), &rows), self.v.select(Axis(0), &rows))
    }

    /// Attends with `q_t` over every token held, each key's first `d_v`
    /// columns being its value too, the scores divided by `scale`: latent
    /// attention caches one row a token, `[c | k^R]`, whose latent `c` is
    /// both a key and a value (a cache made with values of width 0).
    pub(crate) fn attend_keys_as_values(
        &self,
        q_t: &ArrayRef1<f32>,
        d_v: usize,
        scale: f32,
    ) -> Result<Array1<f32>, AttnError> {
        attend_rows_as_values(q_t, self.k.slice(s![..self.len(), ..]), d_v, scale)
    }

    /// How many tokens it holds: at most `sinks + window`.
    pub fn len(&self) -> usize {
        KeyValueCache::len(self)
    }

    /// Whether it holds none yet.
    pub fn is_empty(&self) -> bool {
        self.seen == 0
    }

    /// How many tokens have been appended, held or not.
    pub fn seen(&self) -> usize {
        self.seen
    }

    /// The width of its keys, `d_k`.
    pub fn width(&self) -> usize {
        self.k.ncols()
    }

    /// The bytes its keys and values take: `(sinks + window)·(d_k + d_v)`
    /// numbers of 4 bytes, from the first token on.
    pub fn bytes(&self) -> usize {
        (self.k.len() + self.v.len()) * std::mem::size_of::<f32>()
    }
}

/// Attends with `q_t` over `rows` as keys, their first `d_v` columns as
/// values, the scores divided by `scale`: what latent attention reads of
/// its cache, a ring buffer or a pool's blocks.
pub(crate) fn attend_rows_as_values(
    q_t: &ArrayRef1<f32>,
    rows: ndarray::ArrayView2<f32>,
    d_v: usize,
    scale: f32,
) -> Result<Array1<f32>, AttnError> {
    let v = rows.slice(s![.., ..d_v.min(rows.ncols())]);
    let q_t = q_t.to_owned().insert_axis(Axis(0));
    let (_, o) = crate::masking::attend(&q_t, &rows, &v, scale, crate::masking::Scores::Plain)?;
    Ok(o.row(0).to_owned())
}

#[cfg(test)]
mod tests;
