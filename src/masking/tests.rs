//! Tests of `masking`.

use super::*;
use crate::attention::{batched_attention, worked_example};
use crate::scaled_dot_product_attention;
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

#[test]
fn chapter_2s_attention_is_the_engine_s_without_a_change_bit_for_bit() {
    let mut rng = StdRng::seed_from_u64(21);
    for _ in 0..50 {
        let (n, m) = (rng.random_range(1..12), rng.random_range(1..12));
        let (d_k, d_v) = (rng.random_range(1..9), rng.random_range(1..9));
        let q = standard_normal(n, d_k, &mut rng) * 3.0;
        let k = standard_normal(m, d_k, &mut rng);
        let v = standard_normal(m, d_v, &mut rng);
        let small = scaled_dot_product_attention(&q, &k, &v).unwrap();
        let sqrt_d_k = (d_k as f32).sqrt();
        let (weights, output) = attend(&q, &k, &v, sqrt_d_k, Scores::Plain).unwrap();
        assert_eq!((small.weights, small.output), (weights, output));
    }
}

// ANCHOR: fully_masked_test
/// Row `i` of `a` is a fully masked row done right: zero weights, a zero
/// output, and nothing NaN anywhere.
fn fully_masked_row_is_zero(a: &crate::attention::Attention, i: usize) -> bool {
    a.weights.row(i).iter().all(|&w| w == 0.0)
        && a.output.row(i).iter().all(|&o| o == 0.0)
        && a.output.iter().all(|x| x.is_finite())
}

#[test]
fn masked_keys_get_zero_weight_and_a_fully_masked_row_is_zero() {
    let (q, k, v) = worked_example();
    let mut keep = causal_mask(3, 4);
    keep.row_mut(2).fill(false); // query 2 may see nothing
    let a = masked_attention(&q, &k, &v, &keep).unwrap();
    assert_eq!(a.weights.slice(s![0, 1..]), array![0.0, 0.0, 0.0]);
    assert!((a.weights.row(1).sum() - 1.0).abs() < 1e-6);
    assert!(fully_masked_row_is_zero(&a, 2));
}
// ANCHOR_END: fully_masked_test

/// The mutation a tutorial makes: masked scores filled with −1e9 instead of
/// −∞. The fully-masked-row check must catch it.
#[test]
fn a_minus_1e9_fill_fails_the_fully_masked_row_check() {
    let (q, k, v) = worked_example();
    let mut keep = causal_mask(3, 4);
    keep.row_mut(2).fill(false);
    let filled_with = |fill: f32| additive_mask(&keep).mapv(|b| b.max(fill));
    let minus_inf = biased_attention(&q, &k, &v, &filled_with(f32::NEG_INFINITY)).unwrap();
    assert!(fully_masked_row_is_zero(&minus_inf, 2));
    let minus_1e9 = biased_attention(&q, &k, &v, &filled_with(-1e9)).unwrap();
    assert!(!fully_masked_row_is_zero(&minus_1e9, 2));
}

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

    // −1e9 added: the same constant added to every score, which softmax
    // ignores (chapter 2). In f64, where rounding near 1e9 is tiny, the
    // weights are the unmasked row's; f32 rounds each score to a multiple
    // of 64 first (3 − 1e9 is −1e9), which only coarsens the same answer.
    let wide = scores.mapv(f64::from);
    let unmasked = softmax_rows(&wide).unwrap();
    let shifted = softmax_rows(&(&wide - 1e9)).unwrap();
    assert_abs_diff_eq!(shifted, unmasked, epsilon = 1e-6);
    assert_eq!(3.0_f32 + -1e9, -1e9);
    let w = softmax_rows(&(scores.clone() - 1e9)).unwrap();
    assert_eq!(w[[0, 3]], 1.0);
    assert!(unmasked[[0, 3]] > 0.99);

    // Large scores: an added −1e9 no longer hides a masked score of 5e9.
    let big = array![[3.0e9_f32, 2.5e9, 5.0e9]];
    let keep = array![[true, true, false]];
    let minus_1e9 = additive_mask(&keep).mapv(|b| b.max(-1e9));
    assert_eq!(softmax_rows(&(&big + &minus_1e9)).unwrap().row(0), array![0.0, 0.0, 1.0]);
    let minus_inf = additive_mask(&keep);
    assert_eq!(softmax_rows(&(&big + &minus_inf)).unwrap().row(0), array![1.0, 0.0, 0.0]);
}
// ANCHOR_END: minus_1e9_test

/// A random self-attention problem of `t` tokens.
fn random_qkv(t: usize, rng: &mut StdRng) -> (Array2<f32>, Array2<f32>, Array2<f32>) {
    let d = rng.random_range(1..6);
    let d_v = rng.random_range(1..6);
    (standard_normal(t, d, rng), standard_normal(t, d, rng), standard_normal(t, d_v, rng))
}

/// A random `b×t×d` batch.
fn random_batch(shape: (usize, usize, usize), rng: &mut StdRng) -> Array3<f32> {
    let (b, t, d) = shape;
    standard_normal(b * t, d, rng).into_shape_with_order(shape).expect("b·t rows of width d")
}

// ANCHOR: causal_property
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
// ANCHOR_END: causal_property

// ANCHOR: padding_property
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
// ANCHOR_END: padding_property

// ANCHOR: rows_property
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
// ANCHOR_END: rows_property

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
    assert_eq!(err.to_string(), "len must be at most the padded length (5), got 6");
}

#[test]
fn a_mask_of_the_wrong_shape_names_both_shapes() {
    let (q, k, v) = worked_example();
    let err = masked_attention(&q, &k, &v, &causal_mask(4, 4)).unwrap_err();
    assert_eq!(err.to_string(), "the mask is 4×4 but the scores are 3×4 (n queries × m keys)");
    let err = biased_attention(&q, &k, &v, &Array2::zeros((3, 5))).unwrap_err();
    assert_eq!(err.to_string(), "the mask is 3×5 but the scores are 3×4 (n queries × m keys)");
}

#[test]
fn batch_and_lengths_must_agree() {
    let x = Array3::<f32>::ones((2, 3, 4));
    let err = padded_batch_attention(&x, &x, &x, &[3], Padding::Right, false).unwrap_err();
    assert_eq!(err.to_string(), "lengths must give one length per batch item, got 1");
    let unpadded = padded_batch_attention(&x, &x, &x, &[3, 3], Padding::Right, false);
    assert_eq!(unpadded.unwrap(), batched_attention(&x, &x, &x).unwrap());
}

#[test]
fn the_bottom_right_mask_lets_the_last_query_see_every_key() {
    assert_eq!(causal_mask_bottom_right(4, 4).unwrap(), causal_mask(4, 4));
    let keep = causal_mask_bottom_right(2, 5).unwrap();
    assert_eq!(keep, array![[true, true, true, true, false], [true; 5]]);
    let kept: Vec<usize> =
        keep.rows().into_iter().map(|r| r.iter().filter(|&&k| k).count()).collect();
    assert_eq!(kept, [4, 5]);
    let err = causal_mask_bottom_right(3, 2).unwrap_err().to_string();
    assert!(err.contains("n") && err.contains('3'), "{err}");
}
