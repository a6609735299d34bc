//! Masked attention: some keys are hidden from some queries.
//!
//! A mask is an `n×m` matrix of booleans, `true` where query `i` may attend
//! to key `j`. Masked scores are set to `−∞` before the softmax, so they get
//! weight exactly 0; a row with every key masked gets all-zero weights and a
//! zero output (see [`crate::softmax::softmax_in_place`]), never NaN.
//!
//! The same mask can be written in additive form, a matrix `B` of `0` (keep)
//! and `−∞` (drop) added to the scores; [`biased_attention`] takes any such
//! bias, which chapter 7 reuses for ALiBi's distance penalty.
//!
//! For autoregressive decoding, [`crate::cache::KvCache`] keeps the keys
//! and values of the tokens generated so far, so each new token costs one
//! query's attention instead of a rerun over the whole prefix.

use std::ops::Range;

use ndarray::{Array2, ArrayRef1, ArrayRef2, ArrayRef3, Axis};

use crate::attention::{check_qkv, for_each_item, Attention, BatchedAttention};
use crate::check::{check_overflow, check_size};
use crate::error::AttnError;
use crate::linalg::matmul;
use crate::real::Real;
use crate::softmax::softmax_rows_in_place;

// ANCHOR: causal
/// The causal mask for `n` queries and `m` keys: query `i` may attend to
/// keys `0..=i` (aligned at the top left, as PyTorch's `is_causal`).
pub fn causal_mask(n: usize, m: usize) -> Array2<bool> {
    Array2::from_shape_fn((n, m), |(i, j)| j <= i)
}
// ANCHOR_END: causal

/// The band of a sliding window over `n` positions: position `i` may attend
/// to itself and the `window − 1` positions before it, `i − window < j ≤ i`
/// (chapters 9 and 16). `window` must be at least 1.
pub fn band_mask(n: usize, window: usize) -> Result<Array2<bool>, AttnError> {
    window_mask(0..n, 0..n, 0, window)
}

/// The band of [`band_mask`] with, besides it, the first `sinks` positions
/// visible to every query after them (attention sinks, chapter 17):
/// `j ≤ i` and (`j < sinks` or `i − j < window`).
pub fn sinks_and_window_mask(
    n: usize,
    sinks: usize,
    window: usize,
) -> Result<Array2<bool>, AttnError> {
    window_mask(0..n, 0..n, sinks, window)
}

/// The rows `queries` and columns `keys` (positions in the text) of
/// [`sinks_and_window_mask`]: the mask a block of queries of a longer text
/// attends under, without building the whole.
pub fn window_mask(
    queries: Range<usize>,
    keys: Range<usize>,
    sinks: usize,
    window: usize,
) -> Result<Array2<bool>, AttnError> {
    if window == 0 {
        return Err(AttnError::InvalidArgument {
            name: "window",
            value: 0.0,
            requirement: "must be at least 1: every position sees itself",
        });
    }
    check_size("the window's mask", queries.len(), keys.len())?;
    let (i0, j0) = (queries.start, keys.start);
    Ok(Array2::from_shape_fn((queries.len(), keys.len()), |(r, c)| {
        let (i, j) = (i0 + r, j0 + c);
        j <= i && (j < sinks || i - j < window)
    }))
}

/// The causal mask aligned at the bottom right, for `n` new queries that
/// are the last `n` of `m` keys (a prompt's chunk after a cached prefix):
/// query `i` may attend to keys `0..=m − n + i`. With `n = m` it is
/// [`causal_mask`]; more queries than keys is an error.
pub fn causal_mask_bottom_right(n: usize, m: usize) -> Result<Array2<bool>, AttnError> {
    if n > m {
        return Err(AttnError::InvalidArgument {
            name: "n",
            value: n as f64,
            requirement: "must be at most m: the new queries are the last n of the m keys",
        });
    }
    check_size("causal mask", n, m)?;
    Ok(Array2::from_shape_fn((n, m), |(i, j)| j <= m - n + i))
}

// ANCHOR: additive
/// The additive form of a boolean mask: `0` where a key is kept, `−∞` where
/// it is dropped. Adding it to the scores has the same effect as
/// [`masked_fill`] with `−∞`.
pub fn additive_mask(keep: &ArrayRef2<bool>) -> Array2<f32> {
    keep.mapv(|keep_ij| if keep_ij { 0.0 } else { f32::NEG_INFINITY })
}
// ANCHOR_END: additive

// ANCHOR: masked_fill
/// Overwrites every score whose key is dropped (`keep[i, j] == false`) with
/// `fill`. The crate always fills with `−∞`; the chapter also tries `−1e9`.
/// `keep` must have the scores' shape `n×m`.
pub fn masked_fill<F: Real>(
    scores: &mut ArrayRef2<F>,
    keep: &ArrayRef2<bool>,
    fill: F,
) -> Result<(), AttnError> {
    if keep.dim() != scores.dim() {
        return Err(AttnError::MaskShapeMismatch { scores: scores.dim(), mask: keep.dim() });
    }
    scores.zip_mut_with(keep, |s, &keep_ij| {
        if !keep_ij {
            *s = fill;
        }
    });
    Ok(())
}
// ANCHOR_END: masked_fill

// ANCHOR: attend
/// What is done to the scores before the softmax.
#[derive(Clone, Copy)]
pub(crate) enum Scores<'a, F> {
    /// Nothing.
    Plain,
    /// Dropped keys (`false`) set to `−∞` (chapter 6's masks), `n×m`.
    Masked(&'a ArrayRef2<bool>),
    /// An additive bias added (chapter 7's ALiBi), `n×m`.
    Biased(&'a ArrayRef2<F>),
}

/// The attention every layer of the crate runs, in `f32` or `f64` (the
/// callers check the shapes): chapter 2's steps, with the scores changed
/// as `change` says before the softmax. Scores `QKᵀ/√d_k`, weights
/// `softmax(scores)` row by row, output `weights · V`; returns `(weights,
/// output)`. Without a change it is
/// [`scaled_dot_product_attention`](crate::scaled_dot_product_attention),
/// bit for bit (tested). (Chapter 11 also runs it with `√d_k` replaced by
/// 1, unscaled.)
pub(crate) fn attend<F: Real>(
    q: &ArrayRef2<F>,
    k: &ArrayRef2<F>,
    v: &ArrayRef2<F>,
    sqrt_d_k: F,
    change: Scores<'_, F>,
) -> Result<(Array2<F>, Array2<F>), AttnError> {
    check_size("the scores QKᵀ", q.nrows(), k.nrows())?; // n×m must fit in memory
    let q_scaled = q / sqrt_d_k; // scale n×d_k queries, not n×m scores: same result
    let mut scores = matmul(&q_scaled, &k.t()); // n×m: how well query i matches key j
    check_overflow("the scores QKᵀ/√d_k", &scores)?; // huge finite Q, K can overflow
    match change {
        Scores::Plain => {}
        Scores::Masked(keep) => masked_fill(&mut scores, keep, F::neg_infinity())?, // weight exactly 0
        Scores::Biased(bias) => scores.zip_mut_with(bias, |s, &b| *s += b),
    }
    softmax_rows_in_place(&mut scores)?;
    let weights = scores; // n×m: each row sums to 1
    let output = matmul(&weights, v); // n×d_v: each row a weighted average of values
    check_overflow("the output", &output)?;
    Ok((weights, output))
}
// ANCHOR_END: attend

/// Checks that `Q`, `K`, `V` fit and that a mask or bias of shape `mask` has
/// one entry per score.
fn check_masked(
    q: &ArrayRef2<f32>,
    k: &ArrayRef2<f32>,
    v: &ArrayRef2<f32>,
    mask: (usize, usize),
) -> Result<(), AttnError> {
    check_qkv(q, k, v)?;
    let scores_shape = (q.nrows(), k.nrows());
    if mask != scores_shape {
        return Err(AttnError::MaskShapeMismatch { scores: scores_shape, mask });
    }
    Ok(())
}

// ANCHOR: masked_attention
/// `softmax(QKᵀ/√d_k with dropped scores set to −∞) V`; `keep` is `n×m`.
///
/// A query whose every key is dropped gets zero weights and a zero output.
pub fn masked_attention(
    q: &ArrayRef2<f32>,
    k: &ArrayRef2<f32>,
    v: &ArrayRef2<f32>,
    keep: &ArrayRef2<bool>,
) -> Result<Attention, AttnError> {
    check_masked(q, k, v, keep.dim())?; // Q, K, V fit, and keep is n×m
    let sqrt_d_k = (q.ncols() as f32).sqrt();
    // Chapter 2's computation, with the dropped scores set to −∞ (as
    // masked_fill does) before the softmax: their weights are exactly 0.
    let (weights, output) = attend(q, k, v, sqrt_d_k, Scores::Masked(keep))?;
    Ok(Attention { output, weights })
}
// ANCHOR_END: masked_attention

// ANCHOR: biased_attention
/// `softmax(QKᵀ/√d_k + B) V` for an `n×m` additive bias `B`: a mask in
/// additive form ([`additive_mask`]) or a position bias (ALiBi, chapter 7).
pub fn biased_attention(
    q: &ArrayRef2<f32>,
    k: &ArrayRef2<f32>,
    v: &ArrayRef2<f32>,
    bias: &ArrayRef2<f32>,
) -> Result<Attention, AttnError> {
    check_bias(bias)?; // finite or −∞: a bias of +∞ or NaN is an error
    check_masked(q, k, v, bias.dim())?; // Q, K, V fit, and the bias is n×m
    let sqrt_d_k = (q.ncols() as f32).sqrt();
    let (weights, output) = attend(q, k, v, sqrt_d_k, Scores::Biased(bias))?;
    Ok(Attention { output, weights })
}
// ANCHOR_END: biased_attention

/// Checks that a bias holds finite numbers or `−∞` (a dropped key) only.
fn check_bias(bias: &ArrayRef2<f32>) -> Result<(), AttnError> {
    match bias.iter().find(|b| b.is_nan() || **b == f32::INFINITY) {
        Some(&bad) => Err(AttnError::InvalidArgument {
            name: "bias",
            value: f64::from(bad),
            requirement: "must hold finite numbers, or −∞ for a dropped key",
        }),
        None => Ok(()),
    }
}

/// Chapter 6's experiment: one row of `scores` with every key masked, in
/// four ways. Returns the weights (`1×m` each) for: `−∞` with the stable
/// softmax, `−∞` with the textbook softmax, `−1e9` written over the scores,
/// and `−1e9` added to them.
pub fn fully_masked_row(scores: &ArrayRef1<f32>) -> Result<[Array2<f32>; 4], AttnError> {
    let scores = scores.to_owned().insert_axis(Axis(0)); // 1×m
    let none = Array2::from_elem(scores.dim(), false);
    let filled = |fill: f32| {
        let mut s = scores.clone();
        masked_fill(&mut s, &none, fill).map(|()| s)
    };
    let minus_inf = filled(f32::NEG_INFINITY)?;
    let textbook = crate::softmax::naive_softmax(&minus_inf.row(0)).insert_axis(Axis(0));
    Ok([
        crate::softmax::softmax_rows(&minus_inf)?,
        textbook,
        crate::softmax::softmax_rows(&filled(-1e9)?)?,
        crate::softmax::softmax_rows(&(&scores - 1e9))?,
    ])
}

// ANCHOR: padding
/// Where a short sequence's padding goes when it is stored in a longer row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Padding {
    /// Real tokens first, padding after: `a b c _ _`.
    Right,
    /// Padding first, real tokens last: `_ _ a b c` (common for decoding,
    /// so that every sequence's newest token is in the last column).
    Left,
}

/// The positions that hold real tokens when a sequence of `len` tokens is
/// padded to `padded_len` (at least `len`).
pub fn real_positions(
    len: usize,
    padded_len: usize,
    side: Padding,
) -> Result<Range<usize>, AttnError> {
    if len > padded_len {
        return Err(AttnError::OutOfRange {
            name: "len",
            value: len,
            requirement: "must be at most the padded length",
            limit: padded_len,
        });
    }
    Ok(match side {
        Padding::Right => 0..len,
        Padding::Left => padded_len - len..padded_len,
    })
}

// ANCHOR_END: padding

// ANCHOR: key_padding
/// The key-padding mask for `n` queries over a padded sequence: every query
/// may attend to the real keys and to none of the padding keys.
pub fn key_padding_mask(
    n: usize,
    len: usize,
    padded_len: usize,
    side: Padding,
) -> Result<Array2<bool>, AttnError> {
    check_size("key-padding mask", n, padded_len)?;
    let real = real_positions(len, padded_len, side)?;
    Ok(Array2::from_shape_fn((n, padded_len), |(_, j)| real.contains(&j)))
}
// ANCHOR_END: key_padding

// ANCHOR: padded_batch
/// Self-attention over a padded batch: `Q`, `K`, `V` are `b×T×d`, item `i`
/// holds `lengths[i]` real tokens padded to `T` on `side`. Each query sees only
/// real keys, and with `causal` only keys at or before its own position.
///
/// Outputs at padding positions carry no meaning (with left padding and
/// `causal`, they are zero: those queries see no real key at all).
pub fn padded_batch_attention(
    q: &ArrayRef3<f32>,
    k: &ArrayRef3<f32>,
    v: &ArrayRef3<f32>,
    lengths: &[usize],
    side: Padding,
    causal: bool,
) -> Result<BatchedAttention, AttnError> {
    if lengths.len() != q.len_of(Axis(0)) {
        return Err(AttnError::InvalidArgument {
            name: "lengths",
            value: lengths.len() as f64,
            requirement: "must give one length per batch item",
        });
    }
    if q.len_of(Axis(1)) != k.len_of(Axis(1)) {
        return Err(AttnError::InvalidArgument {
            name: "key positions T",
            value: k.len_of(Axis(1)) as f64,
            requirement: "must equal the query positions T: self-attention over one padded length",
        });
    }
    for_each_item(q, k, v, |i, q_i, k_i, v_i| {
        let (n, t) = (q_i.nrows(), k_i.nrows());
        let mut keep = key_padding_mask(n, lengths[i], t, side)?;
        if causal {
            keep = keep & causal_mask(n, t);
        }
        masked_attention(&q_i, &k_i, &v_i, &keep)
    })
}
// ANCHOR_END: padded_batch

#[cfg(test)]
mod tests;
