//! The KV cache (chapter 6): the keys and values of the tokens read so far,
//! so that each new token costs one query's attention instead of a rerun
//! over the whole prefix; and what every cache of the book offers the
//! attention that reads it ([`KeyValueCache`]): chapter 6's, which grows
//! with the text, and the ring buffers of chapters 16 and 17, which keep a
//! window ([`crate::sliding::SlidingCache`]).

use ndarray::{Array1, Array2, ArrayRef1, ArrayRef2, Axis};

use crate::attention::check_qkv;
use crate::check::{check_finite, check_size};
use crate::error::AttnError;
use crate::scaled_dot_product_attention;

// ANCHOR: kv_cache
/// The keys and values of every token read so far: `t×d_k` and `t×d_v`.
#[derive(Debug, Clone)]
pub struct KvCache {
    k: Array2<f32>,
    v: Array2<f32>,
}

impl KvCache {
    /// An empty cache for keys of width `d_k` and values of width `d_v`.
    pub fn new(d_k: usize, d_v: usize) -> Self {
        let (k, v) = (Array2::zeros((0, d_k)), Array2::zeros((0, d_v))); // no token yet
        KvCache { k, v }
    }

    /// One decoding step: append the new token's key `k_t` and value `v_t`,
    /// then attend with its query `q_t` over the past and the present.
    pub fn step(
        &mut self,
        q_t: &ArrayRef1<f32>,
        k_t: &ArrayRef1<f32>,
        v_t: &ArrayRef1<f32>,
    ) -> Result<Array1<f32>, AttnError> {
        check_new_token(k_t, v_t, (self.k.ncols(), self.v.ncols()))?;
        let row = |x: &ArrayRef1<f32>| x.to_owned().insert_axis(Axis(0)); // 1×d
        check_qkv(&row(q_t), &row(k_t), &row(v_t))?; // and the query, before appending
        self.append(k_t, v_t)?;
        self.attend(q_t)
    }

    /// Appends a token's key `k_t` and value `v_t`, `d_k` and `d_v` wide.
    pub fn append(&mut self, k_t: &ArrayRef1<f32>, v_t: &ArrayRef1<f32>) -> Result<(), AttnError> {
        check_new_token(k_t, v_t, (self.k.ncols(), self.v.ncols()))?;
        self.k.push_row(k_t.view()).expect("width checked");
        self.v.push_row(v_t.view()).expect("width checked");
        Ok(())
    }

    /// Attends with the query `q_t` over every cached token.
    pub fn attend(&self, q_t: &ArrayRef1<f32>) -> Result<Array1<f32>, AttnError> {
        let q_t = q_t.to_owned().insert_axis(Axis(0)); // 1×d_k
        let a = scaled_dot_product_attention(&q_t, &self.k, &self.v)?; // checks q_t
        Ok(a.output.row(0).to_owned())
    }
}
// ANCHOR_END: kv_cache

impl KvCache {
    /// An empty cache with room for `tokens` keys and values, allocated at
    /// once: appending up to `tokens` allocates nothing more.
    pub fn with_capacity(d_k: usize, d_v: usize, tokens: usize) -> Result<Self, AttnError> {
        check_size("the cached keys", tokens, d_k)?;
        check_size("the cached values", tokens, d_v)?;
        let mut cache = KvCache::new(d_k, d_v);
        for x in [&mut cache.k, &mut cache.v] {
            x.reserve_rows(tokens).map_err(|_| AttnError::TooLarge {
                what: "the KV cache",
                sizes: vec![tokens, x.ncols()],
                limit: crate::check::MAX_ENTRIES,
            })?;
        }
        Ok(cache)
    }

    /// How many tokens the cache holds.
    pub fn len(&self) -> usize {
        self.k.nrows()
    }

    /// Whether the cache holds no token yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The width of its keys, `d_k`.
    pub fn width(&self) -> usize {
        self.k.ncols()
    }

    /// The cached keys, `t×d_k`, oldest first.
    pub fn keys(&self) -> &ArrayRef2<f32> {
        &self.k
    }
}

// ANCHOR: store
/// What the attention that reads a cache needs of it: chapter 6's
/// [`KvCache`], which grows with the text, is one, and so is the ring
/// buffer of a sliding window, which keeps the last tokens only.
pub trait KeyValueCache: std::fmt::Debug + Send + Sync {
    /// Appends the newest token's key `k_t` and value `v_t`.
    fn append(&mut self, k_t: &ArrayRef1<f32>, v_t: &ArrayRef1<f32>) -> Result<(), AttnError>;
    /// Attends with the query `q_t` over the tokens it holds.
    fn attend(&self, q_t: &ArrayRef1<f32>) -> Result<Array1<f32>, AttnError>;
    /// How many tokens it holds.
    fn len(&self) -> usize;
    /// Whether it holds none.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
// ANCHOR_END: store

/// A boxed cache is a cache: a model keeps one box a head, whatever the
/// kind of cache in it.
impl<C: KeyValueCache + ?Sized> KeyValueCache for Box<C> {
    fn append(&mut self, k_t: &ArrayRef1<f32>, v_t: &ArrayRef1<f32>) -> Result<(), AttnError> {
        (**self).append(k_t, v_t)
    }
    fn attend(&self, q_t: &ArrayRef1<f32>) -> Result<Array1<f32>, AttnError> {
        (**self).attend(q_t)
    }
    fn len(&self) -> usize {
        (**self).len()
    }
}

impl KeyValueCache for KvCache {
    fn append(&mut self, k_t: &ArrayRef1<f32>, v_t: &ArrayRef1<f32>) -> Result<(), AttnError> {
        KvCache::append(self, k_t, v_t)
    }
    fn attend(&self, q_t: &ArrayRef1<f32>) -> Result<Array1<f32>, AttnError> {
        KvCache::attend(self, q_t)
    }
    fn len(&self) -> usize {
        KvCache::len(self)
    }
}

/// Checks a token's key and value before a cache keeps them: widths
/// `(d_k, d_v)`, finite numbers.
pub(crate) fn check_new_token(
    k_t: &ArrayRef1<f32>,
    v_t: &ArrayRef1<f32>,
    (d_k, d_v): (usize, usize),
) -> Result<(), AttnError> {
    for (name, x, cached) in [("key", k_t, d_k), ("value", v_t, d_v)] {
        if x.len() != cached {
            return Err(AttnError::CacheWidthMismatch { name, cached, new: x.len() });
        }
        check_finite(name, &x.view().insert_axis(Axis(0)))?;
    }
    Ok(())
}

// ANCHOR: decode
/// Runs `n` decoding steps through a [`KvCache`], one row of `Q`, `K`, `V`
/// per step, and stacks the outputs: `n×d_v`. Equal to causal attention over
/// the whole sequence, computed one token at a time.
pub fn decode_with_cache(
    q: &ArrayRef2<f32>,
    k: &ArrayRef2<f32>,
    v: &ArrayRef2<f32>,
) -> Result<Array2<f32>, AttnError> {
    check_qkv(q, k, v)?;
    if q.nrows() != k.nrows() {
        return Err(AttnError::NotSelfAttention { queries: q.nrows(), keys: k.nrows() });
    }
    let mut cache = KvCache::new(k.ncols(), v.ncols());
    let mut output = Array2::zeros((q.nrows(), v.ncols()));
    for t in 0..q.nrows() {
        let out_t = cache.step(&q.row(t), &k.row(t), &v.row(t))?;
        output.row_mut(t).assign(&out_t);
    }
    Ok(output)
}
// ANCHOR_END: decode

// ANCHOR: decode_flops
/// FLOPs to generate the `t`-th token (`t ≥ 1`) of one attention layer of
/// width `d` (one head, `d_k = d_v = d`) **without** a cache: rerun the whole
/// layer on the `t`-token prefix. A multiply-add counts as 2 FLOPs; the
/// softmax is left out.
///
/// `4 · 2td²` (project Q, K, V and the output for all `t` tokens)
/// `+ 2t²d` (scores `QKᵀ`) `+ 2t²d` (weights times `V`).
pub fn flops_per_token_without_cache(t: u64, d: u64) -> f64 {
    let (t, d) = (t as f64, d as f64); // counted in f64: no overflow for any t, d
    4.0 * 2.0 * t * d * d + 2.0 * t * t * d + 2.0 * t * t * d
}

/// FLOPs to generate the `t`-th token **with** a cache: project only the new
/// token, and attend with one query over `t` cached keys.
///
/// `4 · 2d²` (project Q, K, V and the output for one token)
/// `+ 2td` (one row of scores) `+ 2td` (one row of weights times `V`).
pub fn flops_per_token_with_cache(t: u64, d: u64) -> f64 {
    let (t, d) = (t as f64, d as f64);
    4.0 * 2.0 * d * d + 2.0 * t * d + 2.0 * t * d
}

/// Total FLOPs to generate `n` tokens, `Σ_{t=1}^{n} per_token(t, d)`, summed
/// token by token (so `n` is at most [`MAX_DECODED_TOKENS`]).
pub fn cumulative_flops(n: u64, d: u64, per_token: fn(u64, u64) -> f64) -> Result<f64, AttnError> {
    if n > MAX_DECODED_TOKENS {
        return Err(AttnError::InvalidArgument {
            name: "n",
            value: n as f64,
            requirement: "must be at most 2^24 tokens, since the sum is taken token by token",
        });
    }
    Ok((1..=n).map(|t| per_token(t, d)).sum())
}

/// The most tokens [`cumulative_flops`] sums over, one at a time: a bound
/// on its running time, far above the context of any model in this book.
pub const MAX_DECODED_TOKENS: u64 = 1 << 24;
// ANCHOR_END: decode_flops

#[cfg(test)]
mod tests;
