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
//! For autoregressive decoding, [`KvCache`] keeps the keys and values of the
//! tokens generated so far, so each new token costs one query's attention
//! instead of a rerun over the whole prefix.

use std::ops::Range;

use ndarray::{Array1, Array2, ArrayRef1, ArrayRef2, ArrayRef3, Axis};

use crate::attention::{check_qkv, for_each_item, Attention, BatchedAttention};
use crate::error::{check_overflow, check_size, AttnError};
use crate::scaled_dot_product_attention;
use crate::softmax::softmax_rows_in_place;

// ANCHOR: causal
/// The causal mask for `n` queries and `m` keys: query `i` may attend to
/// keys `0..=i` (aligned at the top left, as PyTorch's `is_causal`).
pub fn causal_mask(n: usize, m: usize) -> Array2<bool> {
    Array2::from_shape_fn((n, m), |(i, j)| j <= i)
}
// ANCHOR_END: causal

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
pub fn masked_fill(
    scores: &mut ArrayRef2<f32>,
    keep: &ArrayRef2<bool>,
    fill: f32,
) -> Result<(), AttnError> {
    if keep.dim() != scores.dim() {
        return Err(AttnError::MaskShapeMismatch {
            scores: scores.dim(),
            mask: keep.dim(),
        });
    }
    scores.zip_mut_with(keep, |s, &keep_ij| {
        if !keep_ij {
            *s = fill;
        }
    });
    Ok(())
}
// ANCHOR_END: masked_fill

/// The `n×m` scores `QKᵀ/√d_k`, after checking that `Q`, `K`, `V` fit and that
/// a mask or bias of shape `mask` has one entry per score.
fn checked_scores(
    q: &ArrayRef2<f32>,
    k: &ArrayRef2<f32>,
    v: &ArrayRef2<f32>,
    mask: (usize, usize),
) -> Result<Array2<f32>, AttnError> {
    check_qkv(q, k, v)?;
    let scores_shape = (q.nrows(), k.nrows());
    if mask != scores_shape {
        return Err(AttnError::MaskShapeMismatch {
            scores: scores_shape,
            mask,
        });
    }
    let d_k = q.ncols() as f32;
    let scores = (q / d_k.sqrt()).dot(&k.t()); // as chapter 2: scale the queries
    check_overflow("the scores QKᵀ/√d_k", &scores)?;
    Ok(scores)
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
    let mut scores = checked_scores(q, k, v, keep.dim())?; // n×m
    masked_fill(&mut scores, keep, f32::NEG_INFINITY)?;
    softmax_rows_in_place(&mut scores)?;
    let weights = scores; // dropped keys get exactly 0
    let output = weights.dot(v); // n×d_v
    check_overflow("the output", &output)?;
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
    check_bias(bias)?;
    let mut scores = checked_scores(q, k, v, bias.dim())? + bias; // n×m
    softmax_rows_in_place(&mut scores)?; // a score of +∞ would be an error
    let weights = scores;
    let output = weights.dot(v);
    check_overflow("the output", &output)?;
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
        return Err(AttnError::InvalidArgument {
            name: "len",
            value: len as f64,
            requirement: "must be at most the padded length",
        });
    }
    Ok(match side {
        Padding::Right => 0..len,
        Padding::Left => padded_len - len..padded_len,
    })
}

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
    Ok(Array2::from_shape_fn((n, padded_len), |(_, j)| {
        real.contains(&j)
    }))
}
// ANCHOR_END: padding

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

// ANCHOR: kv_cache
/// The keys and values of every token generated so far: `t×d_k` and `t×d_v`.
#[derive(Debug, Clone)]
pub struct KvCache {
    k: Array2<f32>,
    v: Array2<f32>,
}

impl KvCache {
    /// An empty cache for keys of width `d_k` and values of width `d_v`.
    pub fn new(d_k: usize, d_v: usize) -> Self {
        KvCache {
            k: Array2::zeros((0, d_k)),
            v: Array2::zeros((0, d_v)),
        }
    }

    /// How many tokens the cache holds.
    pub fn len(&self) -> usize {
        self.k.nrows()
    }

    /// Whether the cache holds no token yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// One decoding step: append the new token's key `k_t` and value `v_t`,
    /// then attend with its query `q_t` over all cached tokens. No mask is
    /// needed: the cache holds only the past and the present.
    pub fn step(
        &mut self,
        q_t: &ArrayRef1<f32>,
        k_t: &ArrayRef1<f32>,
        v_t: &ArrayRef1<f32>,
    ) -> Result<Array1<f32>, AttnError> {
        let row = |x: &ArrayRef1<f32>| x.to_owned().insert_axis(Axis(0)); // 1×d
        let (q_t, k_t, v_t) = (row(q_t), row(k_t), row(v_t));
        let widths = [
            ("key", &k_t, self.k.ncols()),
            ("value", &v_t, self.v.ncols()),
        ];
        for (name, x, cached) in widths {
            if x.ncols() != cached {
                return Err(AttnError::CacheWidthMismatch {
                    name,
                    cached,
                    new: x.ncols(),
                });
            }
        }
        check_qkv(&q_t, &k_t, &v_t)?; // the query's width, finite numbers
        self.k.push_row(k_t.row(0)).expect("width checked above");
        self.v.push_row(v_t.row(0)).expect("width checked above");
        let a = scaled_dot_product_attention(&q_t, &self.k, &self.v)?; // 1×d_v
        Ok(a.output.row(0).to_owned())
    }
}
// ANCHOR_END: kv_cache

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
        return Err(AttnError::NotSelfAttention {
            queries: q.nrows(),
            keys: k.nrows(),
        });
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

/// The most tokens [`cumulative_flops`] sums over.
pub const MAX_DECODED_TOKENS: u64 = 1 << 24;
// ANCHOR_END: decode_flops

/// The decode-cost table the chapter prints: for each `n`, the FLOPs for
/// token `n` and for all `n` tokens, without and with the cache, in GFLOP.
pub fn decode_cost_table(ns: &[u64], d: u64) -> Result<String, AttnError> {
    let giga = |flops: f64| format!("{:.3}", flops / 1e9);
    let rows: Vec<Vec<String>> = ns
        .iter()
        .map(|&n| {
            let (one_without, one_with) = (
                flops_per_token_without_cache(n, d),
                flops_per_token_with_cache(n, d),
            );
            let all_without = cumulative_flops(n, d, flops_per_token_without_cache)?;
            let all_with = cumulative_flops(n, d, flops_per_token_with_cache)?;
            Ok(vec![
                n.to_string(),
                giga(one_without),
                giga(one_with),
                giga(all_without),
                giga(all_with),
                format!("{:.0}×", all_without / all_with),
            ])
        })
        .collect::<Result<_, AttnError>>()?;
    Ok(crate::show::table(
        &[
            "n",
            "token n, no cache",
            "token n, cache",
            "all n, no cache",
            "all n, cache",
            "saved",
        ],
        &rows,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attention::{batched_attention, worked_example};
    use crate::scaling::standard_normal;
    use crate::softmax::{naive_softmax, softmax_rows};
    use approx::assert_abs_diff_eq;
    use ndarray::{array, s, Array3};
    use ndarray_rand::rand::{rngs::StdRng, Rng, SeedableRng};

    #[test]
    fn an_all_true_mask_changes_nothing() {
        let (q, k, v) = worked_example();
        let all = Array2::from_elem((3, 4), true);
        let masked = masked_attention(&q, &k, &v, &all).unwrap();
        assert_eq!(masked, scaled_dot_product_attention(&q, &k, &v).unwrap());
    }

    // ANCHOR: fully_masked_test
    #[test]
    fn masked_keys_get_zero_weight_and_a_fully_masked_row_is_zero() {
        let (q, k, v) = worked_example();
        let mut keep = causal_mask(3, 4);
        keep.row_mut(2).fill(false); // query 2 may see nothing
        let a = masked_attention(&q, &k, &v, &keep).unwrap();
        assert_eq!(a.weights.slice(s![0, 1..]), array![0.0, 0.0, 0.0]);
        assert!((a.weights.row(1).sum() - 1.0).abs() < 1e-6);
        assert_eq!(a.weights.row(2), array![0.0, 0.0, 0.0, 0.0]);
        assert_eq!(a.output.row(2), array![0.0, 0.0]);
        assert!(a.output.iter().all(|x| x.is_finite()));
    }
    // ANCHOR_END: fully_masked_test

    #[test]
    fn boolean_and_additive_masks_agree() {
        let mut rng = StdRng::seed_from_u64(5);
        for _ in 0..100 {
            let (n, m, d) = (rng.random_range(1..8), rng.random_range(1..8), 4);
            let q = standard_normal(n, d, &mut rng);
            let k = standard_normal(m, d, &mut rng);
            let v = standard_normal(m, 3, &mut rng);
            let keep = Array2::from_shape_fn((n, m), |_| rng.random_bool(0.6));
            let boolean = masked_attention(&q, &k, &v, &keep).unwrap();
            let additive = biased_attention(&q, &k, &v, &additive_mask(&keep)).unwrap();
            assert_eq!(boolean, additive, "0 and −∞ added give the same scores");
        }
    }

    // ANCHOR: minus_1e9_test
    #[test]
    fn minus_1e9_leaks_where_minus_infinity_does_not() {
        let all_masked = Array2::from_elem((1, 4), false);
        let scores = array![[3.0_f32, 40.0, -25.0, 100.0]];

        // −∞: the row is all zeros (our softmax) …
        let mut s = scores.clone();
        masked_fill(&mut s, &all_masked, f32::NEG_INFINITY).unwrap();
        assert_eq!(softmax_rows(&s).unwrap(), array![[0.0, 0.0, 0.0, 0.0]]);
        // … where the textbook softmax gives NaN (−∞ − (−∞) is NaN).
        assert!(naive_softmax(&s.row(0)).iter().all(|p| p.is_nan()));

        // −1e9 written over the scores: every key ties, the weights are
        // uniform, and the output is the mean of values meant to be hidden.
        let mut s = scores.clone();
        masked_fill(&mut s, &all_masked, -1e9).unwrap();
        assert_eq!(softmax_rows(&s).unwrap(), array![[0.25, 0.25, 0.25, 0.25]]);

        // −1e9 added: near 1e9, neighbouring f32 numbers are 64 apart, so
        // the scores are rounded to multiples of 64 and the largest wins.
        assert_eq!(3.0_f32 + -1e9, -1e9);
        let w = softmax_rows(&(scores.clone() - 1e9)).unwrap();
        assert_eq!(w[[0, 3]], 1.0);

        // Large scores: an added −1e9 no longer hides a masked score of 5e9.
        let big = array![[3.0e9_f32, 2.5e9, 5.0e9]];
        let keep = array![[true, true, false]];
        let minus_1e9 = additive_mask(&keep).mapv(|b| b.max(-1e9));
        assert_eq!(
            softmax_rows(&(&big + &minus_1e9)).unwrap().row(0),
            array![0.0, 0.0, 1.0]
        );
        let minus_inf = additive_mask(&keep);
        assert_eq!(
            softmax_rows(&(&big + &minus_inf)).unwrap().row(0),
            array![1.0, 0.0, 0.0]
        );
    }
    // ANCHOR_END: minus_1e9_test

    /// A random self-attention problem of `t` tokens.
    fn random_qkv(t: usize, rng: &mut StdRng) -> (Array2<f32>, Array2<f32>, Array2<f32>) {
        let d = rng.random_range(1..6);
        let d_v = rng.random_range(1..6);
        (
            standard_normal(t, d, rng),
            standard_normal(t, d, rng),
            standard_normal(t, d_v, rng),
        )
    }

    /// A random `b×t×d` batch.
    fn random_batch(shape: (usize, usize, usize), rng: &mut StdRng) -> Array3<f32> {
        let (b, t, d) = shape;
        standard_normal(b * t, d, rng)
            .into_shape_with_order(shape)
            .expect("b·t rows of width d")
    }

    // ANCHOR: property_tests
    #[test]
    fn changing_future_tokens_never_changes_earlier_outputs() {
        let mut rng = StdRng::seed_from_u64(11);
        for _ in 0..300 {
            let n = rng.random_range(2..12);
            let (q, k, v) = random_qkv(n, &mut rng);
            let before = masked_attention(&q, &k, &v, &causal_mask(n, n)).unwrap();
            // Rewrite every token from position `t` on.
            let t = rng.random_range(1..n);
            let (mut q2, mut k2, mut v2) = (q.clone(), k.clone(), v.clone());
            for x in [&mut q2, &mut k2, &mut v2] {
                let fresh = standard_normal(n - t, x.ncols(), &mut rng);
                x.slice_mut(s![t.., ..]).assign(&fresh);
            }
            let after = masked_attention(&q2, &k2, &v2, &causal_mask(n, n)).unwrap();
            assert_eq!(
                before.output.slice(s![..t, ..]),
                after.output.slice(s![..t, ..]),
                "outputs before position {t} changed"
            );
        }
    }

    #[test]
    fn a_padded_batch_matches_each_sequence_run_alone() {
        let mut rng = StdRng::seed_from_u64(12);
        for case in 0..200 {
            let (b, t, d) = (rng.random_range(1..5), rng.random_range(1..10), 4);
            let lengths: Vec<usize> = (0..b).map(|_| rng.random_range(1..=t)).collect();
            let side = [Padding::Right, Padding::Left][case % 2];
            let causal = rng.random_bool(0.5);
            let q = random_batch((b, t, d), &mut rng);
            let k = random_batch((b, t, d), &mut rng);
            let v = random_batch((b, t, d), &mut rng);
            let batch = padded_batch_attention(&q, &k, &v, &lengths, side, causal).unwrap();
            for (i, &len) in lengths.iter().enumerate() {
                let real = real_positions(len, t, side).unwrap();
                let alone = |x: &Array3<f32>| x.slice(s![i, real.clone(), ..]).to_owned();
                let keep = match causal {
                    true => causal_mask(len, len),
                    false => Array2::from_elem((len, len), true),
                };
                let expected = masked_attention(&alone(&q), &alone(&k), &alone(&v), &keep).unwrap();
                let got = batch.output.slice(s![i, real.clone(), ..]);
                assert_abs_diff_eq!(got, expected.output.view(), epsilon = 1e-6);
                let got_w = batch.weights.slice(s![i, real.clone(), real.clone()]);
                assert_abs_diff_eq!(got_w, expected.weights.view(), epsilon = 1e-6);
            }
        }
    }

    #[test]
    fn every_row_with_a_kept_key_sums_to_one_and_every_other_row_is_zero() {
        let mut rng = StdRng::seed_from_u64(13);
        for _ in 0..300 {
            let (n, m) = (rng.random_range(1..10), rng.random_range(1..10));
            let (q, _, _) = random_qkv(n, &mut rng);
            let k = standard_normal(m, q.ncols(), &mut rng);
            let v = standard_normal(m, 2, &mut rng);
            let keep = Array2::from_shape_fn((n, m), |_| rng.random_bool(0.3));
            let a = masked_attention(&q, &k, &v, &keep).unwrap();
            for (w, kept) in a.weights.rows().into_iter().zip(keep.rows()) {
                if kept.iter().any(|&x| x) {
                    assert!((w.sum() - 1.0).abs() < 1e-5, "row sums to {}", w.sum());
                } else {
                    assert!(w.iter().all(|&x| x == 0.0));
                }
                for (&w_j, &keep_j) in w.iter().zip(kept) {
                    assert!(keep_j || w_j == 0.0, "a dropped key got weight {w_j}");
                }
            }
            assert!(a.output.iter().all(|x| x.is_finite()));
        }
    }
    // ANCHOR_END: property_tests

    #[test]
    fn left_padding_with_a_causal_mask_gives_zero_rows_for_padding_queries() {
        let keep = key_padding_mask(5, 3, 5, Padding::Left).unwrap() & causal_mask(5, 5);
        // Queries 0 and 1 are padding, and every key they may see is padding.
        assert!(keep.row(0).iter().chain(keep.row(1)).all(|&x| !x));
        assert_eq!(keep.row(4), array![false, false, true, true, true]);
        let mut rng = StdRng::seed_from_u64(3);
        let x = standard_normal(5, 4, &mut rng);
        let a = masked_attention(&x, &x, &x, &keep).unwrap();
        assert_eq!(a.output.slice(s![..2, ..]), Array2::<f32>::zeros((2, 4)));
    }

    #[test]
    fn padding_masks_hide_the_padding_keys() {
        let right = key_padding_mask(2, 3, 5, Padding::Right).unwrap();
        assert_eq!(right.row(1), array![true, true, true, false, false]);
        let left = key_padding_mask(2, 3, 5, Padding::Left).unwrap();
        assert_eq!(left.row(0), array![false, false, true, true, true]);
        let err = key_padding_mask(2, 6, 5, Padding::Left).unwrap_err();
        assert_eq!(
            err.to_string(),
            "len must be at most the padded length, got 6"
        );
    }

    #[test]
    fn a_mask_of_the_wrong_shape_names_both_shapes() {
        let (q, k, v) = worked_example();
        let err = masked_attention(&q, &k, &v, &causal_mask(4, 4)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the mask is 4×4 but the scores are 3×4 (n queries × m keys)"
        );
        let err = biased_attention(&q, &k, &v, &Array2::zeros((3, 5))).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the mask is 3×5 but the scores are 3×4 (n queries × m keys)"
        );
    }

    #[test]
    fn batch_and_lengths_must_agree() {
        let x = Array3::<f32>::ones((2, 3, 4));
        let err = padded_batch_attention(&x, &x, &x, &[3], Padding::Right, false).unwrap_err();
        assert_eq!(
            err.to_string(),
            "lengths must give one length per batch item, got 1"
        );
        let unpadded = padded_batch_attention(&x, &x, &x, &[3, 3], Padding::Right, false);
        assert_eq!(unpadded.unwrap(), batched_attention(&x, &x, &x).unwrap());
    }

    // ANCHOR: kv_cache_test
    #[test]
    fn decoding_with_a_cache_reproduces_full_causal_attention() {
        let mut rng = StdRng::seed_from_u64(21);
        for n in [1, 2, 7, 33, 100] {
            let (q, k, v) = random_qkv(n, &mut rng);
            let full = masked_attention(&q, &k, &v, &causal_mask(n, n)).unwrap();
            let incremental = decode_with_cache(&q, &k, &v).unwrap();
            assert_abs_diff_eq!(incremental, full.output, epsilon = 1e-6);
        }
    }
    // ANCHOR_END: kv_cache_test

    #[test]
    fn the_cache_checks_widths() {
        let mut cache = KvCache::new(4, 2);
        assert!(cache.is_empty());
        let (q_t, v_t) = (array![1.0, 0.0, 0.0, 0.0], array![1.0, 2.0]);
        let err = cache.step(&q_t, &array![1.0, 0.0, 0.0], &v_t).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the new key has width 3 but the cache expects width 4"
        );
        assert!(cache.is_empty(), "a rejected token is not appended");
        let nan_value = cache.step(&q_t, &q_t, &array![f32::NAN, 0.0]);
        assert!(
            nan_value.is_err() && cache.is_empty(),
            "nor is a non-finite one"
        );
        let wide_query = cache.step(&array![1.0, 0.0], &q_t, &v_t).unwrap_err();
        assert!(wide_query
            .to_string()
            .starts_with("keys have d_k = 4 but queries have d_k = 2"));
        let out = cache.step(&q_t, &q_t, &v_t).unwrap();
        assert_eq!(out, v_t, "one token attends to itself only");
        assert_eq!(cache.len(), 1);
        let (q, k) = (Array2::<f32>::zeros((3, 4)), Array2::<f32>::zeros((2, 4)));
        let err = decode_with_cache(&q, &k, &Array2::zeros((2, 1))).unwrap_err();
        assert_eq!(
            err,
            AttnError::NotSelfAttention {
                queries: 3,
                keys: 2
            }
        );
    }

    #[test]
    fn decode_flops_match_their_closed_forms() {
        let d = 512;
        for n in [1_u64, 2, 10, 1024, 4096] {
            let without = cumulative_flops(n, d, flops_per_token_without_cache).unwrap();
            let with = cumulative_flops(n, d, flops_per_token_with_cache).unwrap();
            let sum_t = n * (n + 1) / 2;
            let sum_t2 = n * (n + 1) * (2 * n + 1) / 6;
            assert_eq!(without, (8 * d * d * sum_t + 4 * d * sum_t2) as f64);
            assert_eq!(with, (8 * d * d * n + 4 * d * sum_t) as f64);
        }
        // Summing u64::MAX tokens one by one would never finish.
        assert!(cumulative_flops(u64::MAX, 0, flops_per_token_with_cache).is_err());
        // At t = 1 there is nothing to reuse: both cost the same.
        assert_eq!(
            flops_per_token_with_cache(1, d),
            flops_per_token_without_cache(1, d)
        );
    }
}
