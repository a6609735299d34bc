//! Multi-head attention in the training stack: its weights, its forward
//! pass over a batch of sequences (keeping what the backward pass needs),
//! and its backward pass. Chapter 5's layer runs it in `f32`; the models
//! of chapters 12 to 17 train with it.
//!
//! The steps, applied in turn: the projections `Q = X_q W_Q`, `K = X_kv
//! W_K`, `V = X_kv W_V` (with rotary positions, chapter 7, `Q` and `K`
//! turned by their positions); every sequence's every head attending on
//! its own rows and columns ([`attend_heads`]); the heads' outputs side by
//! side, `Concat(head₁ … head_h)`, times `W_O`.

use ndarray::{s, Array1, Array2, ArrayRef2, Ix2, SliceInfo, SliceInfoElem};
use rayon::prelude::*;
use std::ops::Range;

use super::attention::{attention_forward, attention_forward_biased, AttentionCache};
use crate::error::AttnError;
use crate::fast::{fused_causal, FastForward};
use crate::linalg::linear;
use crate::masking::causal_mask;
use crate::position::{alibi_slopes, Rotation};
use crate::real::Real;
use crate::rope_scaling::{RopeFrequencies, RopeScaling};

// ANCHOR: attention_weights
/// The weights of a multi-head attention layer, the heads' projections side
/// by side: head `i`'s queries are columns `i·d_k .. (i + 1)·d_k` of
/// `X_q W_Q`.
#[derive(Debug, Clone, PartialEq)]
pub struct AttentionWeights<F> {
    /// `d × h·d_k`: the queries.
    pub w_q: Array2<F>,
    /// `d × h·d_k`: the keys (narrower where heads share them).
    pub w_k: Array2<F>,
    /// `d × h·d_v`: the values (likewise).
    pub w_v: Array2<F>,
    /// `h·d_v × d`: the heads' outputs, side by side, back to `d`.
    pub w_o: Array2<F>,
    /// `b_Q, b_K, b_V, b_O`, for a layer that has them (chapter 15's).
    pub biases: Option<AttentionBiases<F>>,
}
// ANCHOR_END: attention_weights

/// The biases a multi-head layer may add after each projection.
#[derive(Debug, Clone, PartialEq)]
pub struct AttentionBiases<F> {
    /// Added to the queries, `h·d_k` long.
    pub b_q: Array1<F>,
    /// Added to the keys, `h_kv·d_k` long.
    pub b_k: Array1<F>,
    /// Added to the values, `h_kv·d_v` long.
    pub b_v: Array1<F>,
    /// Added to the output, `d` long.
    pub b_o: Array1<F>,
}

impl<F> AttentionWeights<F> {
    /// The four matrices, without biases.
    pub fn new(w_q: Array2<F>, w_k: Array2<F>, w_v: Array2<F>, w_o: Array2<F>) -> Self {
        AttentionWeights { w_q, w_k, w_v, w_o, biases: None }
    }

    /// `[W_Q, W_K, W_V, W_O]`, the order a weights file lists them in.
    pub fn matrices(&self) -> [&Array2<F>; 4] {
        [&self.w_q, &self.w_k, &self.w_v, &self.w_o]
    }

    /// [`Self::matrices`], mutable.
    pub fn matrices_mut(&mut self) -> [&mut Array2<F>; 4] {
        let AttentionWeights { w_q, w_k, w_v, w_o, .. } = self;
        [w_q, w_k, w_v, w_o]
    }
}

impl<F> From<[Array2<F>; 4]> for AttentionWeights<F> {
    /// `[W_Q, W_K, W_V, W_O]`, without biases.
    fn from([w_q, w_k, w_v, w_o]: [Array2<F>; 4]) -> Self {
        AttentionWeights::new(w_q, w_k, w_v, w_o)
    }
}

impl<F> From<[Array1<F>; 4]> for AttentionBiases<F> {
    /// `[b_Q, b_K, b_V, b_O]`.
    fn from([b_q, b_k, b_v, b_o]: [Array1<F>; 4]) -> Self {
        AttentionBiases { b_q, b_k, b_v, b_o }
    }
}

// ANCHOR: projections
impl<F: Real> AttentionWeights<F> {
    /// The queries `Q = X_q W_Q` (`+ b_Q`), every head's side by side.
    pub fn queries(&self, x_q: &ArrayRef2<F>) -> Result<Array2<F>, AttnError> {
        let b = self.biases.as_ref().map(|b| &b.b_q);
        linear("the queries X_q W_Q", x_q, &self.w_q, b)
    }

    /// The keys `K = X_kv W_K` (`+ b_K`).
    pub fn keys(&self, x_kv: &ArrayRef2<F>) -> Result<Array2<F>, AttnError> {
        let b = self.biases.as_ref().map(|b| &b.b_k);
        linear("the keys X_kv W_K", x_kv, &self.w_k, b)
    }

    /// The values `V = X_kv W_V` (`+ b_V`).
    pub fn values(&self, x_kv: &ArrayRef2<F>) -> Result<Array2<F>, AttnError> {
        let b = self.biases.as_ref().map(|b| &b.b_v);
        linear("the values X_kv W_V", x_kv, &self.w_v, b)
    }

    /// The output `Concat(heads) W_O` (`+ b_O`).
    pub fn output(&self, concat: &ArrayRef2<F>) -> Result<Array2<F>, AttnError> {
        let b = self.biases.as_ref().map(|b| &b.b_o);
        linear("the output Concat(heads) W_O", concat, &self.w_o, b)
    }
}
// ANCHOR_END: projections

impl<F> AttentionBiases<F> {
    /// `[b_Q, b_K, b_V, b_O]`.
    pub fn vectors(&self) -> [&Array1<F>; 4] {
        [&self.b_q, &self.b_k, &self.b_v, &self.b_o]
    }
}

/// How multi-head attention runs over a batch of sequences stacked row on
/// row: `n` query rows and `m` key rows per sequence, `h` query heads
/// sharing `h_kv` key/value heads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Heads {
    /// Query rows per sequence.
    pub(crate) n: usize,
    /// Key (and value) rows per sequence.
    pub(crate) m: usize,
    /// Query heads.
    pub(crate) h: usize,
    /// Key/value heads, a divisor of `h`: query head `i` reads the keys and
    /// values of head `i / (h / h_kv)`. `h_kv = h` is multi-head attention,
    /// `h_kv = 1` multi-query attention, anything between grouped-query
    /// attention (chapter 17).
    pub(crate) h_kv: usize,
    /// Whether queries and keys are turned by their positions (RoPE,
    /// chapter 7) after their projections, and with which frequencies: row
    /// `i` of each sequence is at position `i`.
    pub(crate) rope: Option<RopeScaling>,
    /// Whether each head's scores are less `slope·|i − j|` (ALiBi, chapter
    /// 7), head `i` with the `i`-th of [`alibi_slopes`]`(h)`.
    pub(crate) alibi: bool,
    /// Whether a head whose mask is the causal mask may attend through the
    /// appendix's fused kernel (in `f32`, which has it), keeping its output
    /// and log-sum-exps instead of its weights.
    pub(crate) fused: bool,
}

impl Heads {
    /// Multi-head attention's sizes: every head with its own keys and
    /// values, no rotation, no fused kernel.
    pub fn new(n: usize, m: usize, h: usize) -> Self {
        Heads { n, m, h, h_kv: h, rope: None, alibi: false, fused: false }
    }

    /// The same heads sharing `h_kv` key/value heads (grouped-query
    /// attention, chapter 17).
    pub fn with_kv_heads(self, h_kv: usize) -> Self {
        Heads { h_kv, ..self }
    }

    /// The same heads, their queries and keys turned by their positions
    /// (RoPE, chapter 7), with frequencies as `scaling` has them.
    pub fn rotary(self, scaling: RopeScaling) -> Self {
        Heads { rope: Some(scaling), ..self }
    }

    /// The same heads, each one's scores less `slope·|i − j|` (ALiBi,
    /// chapter 7).
    pub fn alibi(self) -> Self {
        Heads { alibi: true, ..self }
    }

    /// Checks these heads against the inputs and weights of a multi-head
    /// attention: the sizes at least 1, `h_kv` dividing `h`, the inputs
    /// whole sequences of one batch, the weights of these heads' widths
    /// (the products check the inputs' widths), even heads for RoPE.
    fn check<F>(
        &self,
        [x_q, x_kv]: [&ArrayRef2<F>; 2],
        w: &AttentionWeights<F>,
    ) -> Result<(), AttnError> {
        let Heads { n, m, h, h_kv, rope, .. } = *self;
        let sizes = n > 0 && m > 0 && h > 0 && h_kv > 0 && h % h_kv == 0;
        let sequences =
            |rows: usize, per: usize| (per > 0 && rows.is_multiple_of(per)).then(|| rows / per);
        let batch =
            sequences(x_q.nrows(), n).is_some_and(|b| Some(b) == sequences(x_kv.nrows(), m));
        let (d_k, d_v) = (w.w_q.ncols() / h.max(1), w.w_v.ncols() / h_kv.max(1));
        let widths = d_k > 0
            && w.w_q.ncols() == h * d_k
            && w.w_k.ncols() == h_kv * d_k
            && w.w_v.ncols() == h_kv * d_v
            && w.w_o.nrows() == h * d_v
            && !(rope.is_some() && d_k % 2 == 1);
        if sizes && batch && widths {
            return Ok(());
        }
        Err(AttnError::Mismatched {
            name: "multi-head attention's heads",
            requirement:
                "must divide the inputs into whole sequences (n query rows and m key rows \
                          each) and the weights into h query heads and h_kv key/value heads (h_kv \
                          dividing h; an even d_k with RoPE)",
        })
    }
}

// ANCHOR: head_columns
/// Head `i`'s columns of a matrix whose heads sit side by side, `width`
/// columns each: `i·width .. (i + 1)·width` (chapter 5's split, as a range).
pub(crate) fn head_columns(i: usize, width: usize) -> Range<usize> {
    i * width..(i + 1) * width
}
// ANCHOR_END: head_columns

// ANCHOR: mha_forward
/// Multi-head attention of `x_q` (`B·n × d`) over `x_kv` (`B·m × d`), each
/// sequence `b` on its own rows with the mask `keep(b)` (`n×m`, or `None`):
/// `Q = X_q W_Q + b_Q`, `K = X_kv W_K + b_K`, `V = X_kv W_V + b_V`, every
/// head attends with its own `d_k` columns, and `Concat(heads) W_O + b_O`
/// mixes them. Self-attention passes the same rows as `x_q` and `x_kv`.
pub fn mha_forward<F: Real>(
    x_q: &ArrayRef2<F>,
    x_kv: &ArrayRef2<F>,
    w: &AttentionWeights<F>,
    heads: Heads,
    keep: impl Fn(usize) -> Option<Array2<bool>> + Sync,
) -> Result<(Array2<F>, MhaCache<F>), AttnError> {
    heads.check([x_q, x_kv], w)?;
    let q = w.queries(x_q)?; // B·n × h·d_k
    let k = w.keys(x_kv)?; // B·m × h·d_k (narrower where heads share keys)
    let v = w.values(x_kv)?; // B·m × h·d_v (likewise)
    let b_o = w.biases.as_ref().map(|b| &b.b_o);
    mha_from_projections([q, k, v], (&w.w_o, b_o), heads, keep)
}
// ANCHOR_END: mha_forward

// ANCHOR: mha_from_projections
/// [`mha_forward`] from the projections `[Q, K, V]`: the rotations, if
/// any, then [`attend_heads`], then the output projection.
pub(crate) fn mha_from_projections<F: Real>(
    [mut q, mut k, v]: [Array2<F>; 3],
    (w_o, b_o): (&Array2<F>, Option<&Array1<F>>),
    heads: Heads,
    keep: impl Fn(usize) -> Option<Array2<bool>> + Sync,
) -> Result<(Array2<F>, MhaCache<F>), AttnError> {
    if let Some(rope) = heads.rope {
        // RoPE (chapter 7): each head's queries and keys turned by their positions.
        rotate_heads(&mut q, heads.n, heads.h, (Rotation::Forward, rope))?;
        rotate_heads(&mut k, heads.m, heads.h_kv, (Rotation::Forward, rope))?;
    }
    let (o, per_head) = attend_heads([&q, &k, &v], heads, keep)?;
    let out = linear("the output Concat(heads) W_O", &o, w_o, b_o)?;
    let cache = MhaCache { q, k, v, heads: per_head, o, biased: b_o.is_some() };
    Ok((out, cache))
}
// ANCHOR_END: mha_from_projections

/// Every (sequence, head) attends on its own: the query rows of sequence
/// `b` and the columns of head `i` (a view, the split of chapter 5 without
/// a copy) over its group's keys and values, under the mask `keep(b)`.
/// Returns the heads' outputs side by side (the merge, `B·n × h·d_v`) and
/// what each head keeps, sequence-major (`b·h + i`).
pub(crate) fn attend_heads<F: Real>(
    [q, k, v]: [&Array2<F>; 3],
    heads: Heads,
    keep: impl Fn(usize) -> Option<Array2<bool>> + Sync,
) -> Result<(Array2<F>, Vec<HeadCache<F>>), AttnError> {
    let (d_k, d_v) = (q.ncols() / heads.h, v.ncols() / heads.h_kv);
    let sqrt_d_k = F::of(d_k as f64).sqrt();
    let rows = |b, i| head_slices(b, i, [d_k, d_v], heads);
    let masks: Vec<_> = (0..q.nrows() / heads.n).map(keep).collect();
    // A sequence's heads take the fused kernel if asked and its mask is
    // the causal mask.
    let causal = (heads.fused && heads.n == heads.m).then(|| causal_mask(heads.n, heads.m));
    let fused: Vec<bool> = masks
        .iter()
        .map(|m| !heads.alibi && causal.is_some() && m.as_ref() == causal.as_ref())
        .collect();
    let slopes = match heads.alibi {
        true => alibi_slopes(heads.h)?.into_iter().map(|s| F::of(f64::from(s))).collect(),
        false => Vec::new(),
    };
    // Every (sequence, head) attends on its own, so the pool's threads
    // share them out; `collect` keeps their order.
    let pairs: Vec<_> = (0..masks.len()).flat_map(|b| (0..heads.h).map(move |i| (b, i))).collect();
    let outputs = pairs
        .par_iter()
        .map(|&(b, i)| {
            let [rq, rk, rv, _] = rows(b, i);
            let (q, k, v) = (q.slice(rq), k.slice(rk), v.slice(rv));
            if let Some(fused) = fused[b].then(|| fused_causal(&q, &k, &v)).flatten() {
                return fused.map(|(out, kept)| (out, HeadCache::Fused(kept)));
            }
            let (out, cache) = match heads.alibi {
                true => {
                    let bias = alibi_scores(masks[b].as_deref(), (heads.n, heads.m), slopes[i]);
                    attention_forward_biased(&q, &k, &v, &bias, sqrt_d_k)?
                }
                false => attention_forward(&q, &k, &v, masks[b].as_deref(), sqrt_d_k)?,
            };
            Ok((out, HeadCache::Weights(cache)))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut o = Array2::zeros((q.nrows(), heads.h * d_v));
    let mut caches = Vec::with_capacity(pairs.len());
    for (&(b, i), (out, cache)) in pairs.iter().zip(outputs) {
        o.slice_mut(rows(b, i)[3]).assign(&out);
        caches.push(cache);
    }
    Ok((o, caches))
}

/// ALiBi's bias for one head of `slope` over `n` queries and `m` keys,
/// query `i` and key `j` at positions `i` and `j`: `−slope·|i − j|` where
/// `keep` keeps the key (every key without a mask), `−∞` where it drops it.
fn alibi_scores<F: Real>(
    keep: Option<&ArrayRef2<bool>>,
    (n, m): (usize, usize),
    slope: F,
) -> Array2<F> {
    Array2::from_shape_fn((n, m), |(i, j)| match keep.is_none_or(|keep| keep[[i, j]]) {
        true => -slope * F::of(i.abs_diff(j) as f64),
        false => F::neg_infinity(),
    })
}

/// What multi-head attention over a batch keeps for its backward pass: the
/// projections, each (sequence, head)'s weights, the heads' concatenated
/// output.
#[derive(Debug, Clone)]
pub struct MhaCache<F> {
    pub(crate) q: Array2<F>,
    pub(crate) k: Array2<F>,
    pub(crate) v: Array2<F>,
    /// One per (sequence, head), sequence-major: `b·h + i`.
    pub(crate) heads: Vec<HeadCache<F>>,
    pub(crate) o: Array2<F>,
    /// Whether the projections added biases (so the backward pass returns
    /// their gradients).
    biased: bool,
}

/// What one head keeps for its backward pass.
#[derive(Debug, Clone)]
pub enum HeadCache<F> {
    /// Its weights, from chapter 2's attention.
    Weights(AttentionCache<F>),
    /// Its output and each query's log-sum-exp, from the fused kernel.
    Fused(FastForward),
}

impl<F: Real> HeadCache<F> {
    /// The head's weights, if it kept them (a fused head did not).
    pub(crate) fn weights(&self) -> Result<&Array2<F>, AttnError> {
        match self {
            HeadCache::Weights(cache) => Ok(&cache.p),
            HeadCache::Fused(_) => Err(AttnError::Mismatched {
                name: "attention weights",
                requirement: "are kept by a forward pass that computes them; \
                              one through the fused kernel keeps none",
            }),
        }
    }
}

// ANCHOR: group_slices
/// Sequence `b`'s rows and head `i`'s columns: of the queries (`n` rows a
/// sequence, `d_k` columns a head), of its group's keys and values (`m`
/// rows; `d_k` and `d_v` columns), and of the heads' outputs (`d_v`).
pub(crate) fn head_slices(b: usize, i: usize, [d_k, d_v]: [usize; 2], heads: Heads) -> [Slice2; 4] {
    let g = i / (heads.h / heads.h_kv); // the group head i reads
    let (q_rows, kv_rows) = (b * heads.n..(b + 1) * heads.n, b * heads.m..(b + 1) * heads.m);
    [
        s![q_rows.clone(), head_columns(i, d_k)],
        s![kv_rows.clone(), head_columns(g, d_k)],
        s![kv_rows, head_columns(g, d_v)],
        s![q_rows, head_columns(i, d_v)],
    ]
}
// ANCHOR_END: group_slices

/// A slice of a matrix's rows and columns.
pub(crate) type Slice2 = SliceInfo<[SliceInfoElem; 2], Ix2, Ix2>;

/// Rotates the rows of every sequence (`t` rows each) of `x`, head by head
/// (`d/h` columns each), by their positions `0..t` within the sequence,
/// with RoPE's frequencies as `scaling` has them.
pub(crate) fn rotate_heads<F: Real>(
    x: &mut Array2<F>,
    t: usize,
    h: usize,
    (way, scaling): (Rotation, RopeScaling),
) -> Result<(), AttnError> {
    let d_k = x.ncols() / h;
    let rope = RopeFrequencies::of_heads(d_k, scaling)?;
    for b in 0..x.nrows() / t {
        for i in 0..h {
            rope.turn(&mut x.slice_mut(s![b * t..(b + 1) * t, i * d_k..(i + 1) * d_k]), 0, way);
        }
    }
    Ok(())
}

mod backward;

pub(crate) use backward::mha_backward_to_projections;
pub use backward::{mha_backward, MhaGradients};

#[cfg(test)]
mod tests;
