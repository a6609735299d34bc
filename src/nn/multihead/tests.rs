//! Multi-head attention's gradients against finite differences, and
//! grouped-query attention against heads computed one by one.

use super::*;
use crate::grad::{gradient_error, normal_matrix, Matrix};
use crate::rope_scaling::RopeScaling;
use ndarray::{Array1, Axis};
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

/// Two sequences, 3 queries over 4 keys each, `d = 6`, 2 heads, with
/// biases; the second sequence masks its last key. The loss is
/// `Σ out ⊙ R` for a fixed random `R`, so `dOut = R`.
#[test]
fn multi_head_gradients_with_biases_and_masks_match_finite_differences() {
    let mut rng = StdRng::seed_from_u64(5);
    let sizes = Heads::new(3, 4, 2);
    let x_q = normal_matrix(6, 6, &mut rng);
    let x_kv = normal_matrix(8, 6, &mut rng);
    let w: AttentionWeights<f64> = [(); 4].map(|_| normal_matrix(6, 6, &mut rng) * 0.5).into();
    let b: AttentionBiases<f64> =
        [(); 4].map(|_| normal_matrix(1, 6, &mut rng).row(0).to_owned()).into();
    let r = normal_matrix(6, 6, &mut rng);
    let keep = |seq: usize| Some(Array2::from_shape_fn((3, 4), |(_, j)| seq == 0 || j < 3));
    let with_biases = |w: &AttentionWeights<f64>, b: &AttentionBiases<f64>| AttentionWeights {
        biases: Some(b.clone()),
        ..w.clone()
    };
    let loss =
        |x_q: &Matrix, x_kv: &Matrix, w: &AttentionWeights<f64>, b: &AttentionBiases<f64>| {
            let (out, _) = mha_forward(x_q, x_kv, &with_biases(w, b), sizes, keep).unwrap();
            (out * &r).sum()
        };
    let (_, cache) = mha_forward(&x_q, &x_kv, &with_biases(&w, &b), sizes, keep).unwrap();
    let g = mha_backward(&cache, &x_q, &x_kv, &with_biases(&w, &b), sizes, &r).unwrap();
    let mut errors = vec![
        gradient_error(&g.dx_q, |x| loss(x, &x_kv, &w, &b), &x_q),
        gradient_error(&g.dx_kv, |x| loss(&x_q, x, &w, &b), &x_kv),
    ];
    for i in 0..4 {
        let with = |x: &Matrix| {
            let mut w = w.clone();
            *w.matrices_mut()[i] = x.clone();
            loss(&x_q, &x_kv, &w, &b)
        };
        errors.push(gradient_error(g.dw.matrices()[i], with, w.matrices()[i]));
        let db_all = g.dw.biases.as_ref().expect("the layer has biases");
        let db = db_all.vectors()[i].clone();
        let as_row = |v: Array1<f64>| v.insert_axis(Axis(0));
        let with = |x: &Matrix| {
            let mut vectors = b.vectors().map(|v| v.clone());
            vectors[i] = x.row(0).to_owned();
            loss(&x_q, &x_kv, &w, &vectors.into())
        };
        if i == 1 {
            // b_K adds q·b_K to every score of a row, which the softmax
            // ignores: its gradient is 0, analytically and numerically.
            let numeric = crate::grad::numerical_gradient(with, &as_row(b.b_k.clone()), 1e-5);
            let largest = db.iter().chain(&numeric).fold(0.0_f64, |m, v| m.max(v.abs()));
            assert!(largest < 1e-9, "dL/db_K = {db}, numerically {numeric}");
        } else {
            errors.push(gradient_error(&as_row(db), with, &as_row(b.vectors()[i].clone())));
        }
    }
    for (i, error) in errors.into_iter().enumerate() {
        assert!(error < 1e-6, "gradient {i}: relative error {error:e}");
    }
}

/// With RoPE: two sequences of 4 tokens, causal, `d = 8`, 2 heads; plain
/// RoPE, and YaRN's, whose attention factor the gradients must carry.
#[test]
fn rotary_gradients_match_finite_differences() {
    let yarn = RopeScaling::Yarn {
        factor: 8.0,
        trained: 4,
        beta_fast: 4.0,
        beta_slow: 0.5,
        temperature: true,
    };
    for scaling in [RopeScaling::None, yarn] {
        rotary_gradients_match_finite_differences_with(scaling);
    }
}

fn rotary_gradients_match_finite_differences_with(scaling: RopeScaling) {
    let mut rng = StdRng::seed_from_u64(8);
    let sizes = Heads { rope: Some(scaling), ..Heads::new(4, 4, 2) };
    let x = normal_matrix(8, 8, &mut rng);
    let w: AttentionWeights<f64> = [(); 4].map(|_| normal_matrix(8, 8, &mut rng) * 0.5).into();
    let r = normal_matrix(8, 8, &mut rng);
    for (i, error) in causal_gradient_errors(&x, &w, sizes, &r).into_iter().enumerate() {
        assert!(error < 1e-6, "gradient {i}: relative error {error:e}");
    }
    let causal = |_: usize| Some(crate::masking::causal_mask(4, 4));
    // And the rotation is there: without it the output differs.
    let plain = Heads { rope: None, ..sizes };
    let (a, _) = mha_forward(&x, &x, &w, sizes, causal).unwrap();
    let (b, _) = mha_forward(&x, &x, &w, plain, causal).unwrap();
    assert!((&a - &b).iter().any(|d| d.abs() > 1e-3));
}

#[test]
fn a_layer_without_biases_has_no_bias_gradients() {
    let mut rng = StdRng::seed_from_u64(6);
    let sizes = Heads::new(2, 2, 1);
    let x = normal_matrix(2, 4, &mut rng);
    let w: AttentionWeights<f64> = [(); 4].map(|_| normal_matrix(4, 4, &mut rng)).into();
    let (out, cache) = mha_forward(&x, &x, &w, sizes, |_| None).unwrap();
    assert!(mha_backward(&cache, &x, &x, &w, sizes, &out).unwrap().dw.biases.is_none());
}

/// `W_K` and `W_V` of `g` key/value heads (`d × g·d_k`) for a layer of
/// `heads` heads, and the same weights with each group's columns repeated
/// for every head that reads it (`d × d`): the multi-head layer that
/// grouped-query attention must equal.
fn grouped_and_repeated(
    d: usize,
    heads: usize,
    g: usize,
    rng: &mut StdRng,
) -> (AttentionWeights<f64>, AttentionWeights<f64>) {
    let d_k = d / heads;
    let [w_q, w_o] = [(); 2].map(|_| normal_matrix(d, d, rng) * 0.5);
    let [w_k, w_v] = [(); 2].map(|_| normal_matrix(d, g * d_k, rng) * 0.5);
    let repeat = |w: &Matrix| {
        let mut out = Matrix::zeros((d, d));
        for h in 0..heads {
            let group = h / (heads / g);
            out.slice_mut(s![.., h * d_k..(h + 1) * d_k])
                .assign(&w.slice(s![.., group * d_k..(group + 1) * d_k]));
        }
        out
    };
    let repeated = [w_q.clone(), repeat(&w_k), repeat(&w_v), w_o.clone()];
    ([w_q, w_k, w_v, w_o].into(), repeated.into())
}

/// Grouped-query attention with `g` groups equals multi-head attention
/// whose key and value heads are copies of their group's, at `g = heads`
/// (multi-head), `g = 2` (grouped) and `g = 1` (multi-query), with and
/// without a mask and RoPE: the same outputs, and gradients of the shared
/// weights that are the sums over the copies.
#[test]
fn grouped_query_attention_is_multi_head_attention_with_shared_keys_and_values() {
    let mut rng = StdRng::seed_from_u64(21);
    let (d, heads, t) = (8, 4, 5);
    let x = normal_matrix(2 * t, d, &mut rng);
    let r = normal_matrix(2 * t, d, &mut rng);
    for g in [4, 2, 1] {
        for (rotary, masked) in [(false, false), (false, true), (true, true)] {
            let (grouped, repeated) = grouped_and_repeated(d, heads, g, &mut rng);
            let keep = |_: usize| masked.then(|| crate::masking::causal_mask(t, t));
            let plain =
                Heads { rope: rotary.then_some(RopeScaling::None), ..Heads::new(t, t, heads) };
            let sizes = Heads { h_kv: g, ..plain };
            let (a, cache_a) = mha_forward(&x, &x, &grouped, sizes, keep).unwrap();
            let (b, cache_b) = mha_forward(&x, &x, &repeated, plain, keep).unwrap();
            approx::assert_abs_diff_eq!(a, b, epsilon = 1e-12);
            let ga = mha_backward(&cache_a, &x, &x, &grouped, sizes, &r).unwrap();
            let gb = mha_backward(&cache_b, &x, &x, &repeated, plain, &r).unwrap();
            approx::assert_abs_diff_eq!(
                &ga.dx_q + &ga.dx_kv,
                &gb.dx_q + &gb.dx_kv,
                epsilon = 1e-12
            );
            for i in [1, 2] {
                // A shared column block's gradient: the sum over its copies.
                let d_k = d / heads;
                for group in 0..g {
                    let mut sum = Matrix::zeros((d, d_k));
                    for h in group * (heads / g)..(group + 1) * (heads / g) {
                        sum += &gb.dw.matrices()[i].slice(s![.., h * d_k..(h + 1) * d_k]);
                    }
                    let got = ga.dw.matrices()[i].slice(s![.., group * d_k..(group + 1) * d_k]);
                    approx::assert_abs_diff_eq!(got, sum, epsilon = 1e-12);
                }
            }
            for i in [0, 3] {
                approx::assert_abs_diff_eq!(
                    ga.dw.matrices()[i],
                    gb.dw.matrices()[i],
                    epsilon = 1e-12
                );
            }
        }
    }
}

// ANCHOR: grouped_test
/// Head by head, from the definition: head `h` attends with its own
/// columns of `X W_Q` over its group's columns of `X W_K` and `X W_V`.
fn heads_one_by_one(x: &Matrix, w: &AttentionWeights<f64>, heads: usize, g: usize) -> Matrix {
    let d_k = w.w_q.ncols() / heads;
    let cols = |i: usize| s![.., i * d_k..(i + 1) * d_k];
    let mut concat = Matrix::zeros((x.nrows(), w.w_q.ncols()));
    for h in 0..heads {
        let group = h / (heads / g);
        let q = x.dot(&w.w_q.slice(cols(h)));
        let k = x.dot(&w.w_k.slice(cols(group)));
        let v = x.dot(&w.w_v.slice(cols(group)));
        let (o, _) = attention_forward(&q, &k, &v, None, (d_k as f64).sqrt()).unwrap();
        concat.slice_mut(cols(h)).assign(&o);
    }
    concat.dot(&w.w_o)
}

/// Each head reads its own group's keys and values: the layer equals the
/// heads computed one by one, at `g = heads` (where sharing one head among
/// all would fail), `g = 2` and `g = 1`.
#[test]
fn every_head_reads_its_own_group() {
    let mut rng = StdRng::seed_from_u64(22);
    let (d, heads, t) = (8, 4, 5);
    let x = normal_matrix(t, d, &mut rng);
    for g in [4, 2, 1] {
        let (w, _) = grouped_and_repeated(d, heads, g, &mut rng);
        let sizes = Heads { h_kv: g, ..Heads::new(t, t, heads) };
        let (out, _) = mha_forward(&x, &x, &w, sizes, |_| None).unwrap();
        approx::assert_abs_diff_eq!(out, heads_one_by_one(&x, &w, heads, g), epsilon = 1e-12);
    }
}
// ANCHOR_END: grouped_test

/// The grouped layer's gradients against finite differences (`h_kv = 2`
/// and `h_kv = 1`, causal, RoPE).
#[test]
fn grouped_gradients_match_finite_differences() {
    let mut rng = StdRng::seed_from_u64(23);
    let (d, heads, t) = (8, 4, 4);
    let x = normal_matrix(2 * t, d, &mut rng);
    let r = normal_matrix(2 * t, d, &mut rng);
    for g in [2, 1] {
        let (w, _) = grouped_and_repeated(d, heads, g, &mut rng);
        let sizes = Heads { h_kv: g, rope: Some(RopeScaling::None), ..Heads::new(t, t, heads) };
        let errors = causal_gradient_errors(&x, &w, sizes, &r);
        for (i, error) in errors.into_iter().enumerate() {
            assert!(error < 1e-6, "g = {g}, gradient {i}: relative error {error:e}");
        }
    }
}

/// Relative errors of causal self-attention's gradients against finite
/// differences, for the loss `Σ out ⊙ R`: the input's, then `W_Q` to `W_O`'s.
fn causal_gradient_errors(
    x: &Matrix,
    w: &AttentionWeights<f64>,
    sizes: Heads,
    r: &Matrix,
) -> Vec<f64> {
    let causal = |_: usize| Some(crate::masking::causal_mask(sizes.n, sizes.m));
    let loss = |x: &Matrix, w: &AttentionWeights<f64>| {
        let (out, _) = mha_forward(x, x, w, sizes, causal).unwrap();
        (out * r).sum()
    };
    let (_, cache) = mha_forward(x, x, w, sizes, causal).unwrap();
    let g = mha_backward(&cache, x, x, w, sizes, r).unwrap();
    let mut errors = vec![gradient_error(&(&g.dx_q + &g.dx_kv), |x| loss(x, w), x)];
    for i in 0..4 {
        let with = |m: &Matrix| {
            let mut w = w.clone();
            *w.matrices_mut()[i] = m.clone();
            loss(x, &w)
        };
        errors.push(gradient_error(g.dw.matrices()[i], with, w.matrices()[i]));
    }
    errors
}

/// Heads allowed the fused kernel take it where the mask is causal, and
/// give what chapter 2's attention gives, forward and backward, within
/// `f32`'s rounding; a head with another mask keeps its weights.
#[test]
fn fused_heads_attend_as_heads_that_keep_their_weights() {
    let mut rng = StdRng::seed_from_u64(21);
    let (t, d, heads) = (9, 8, 2);
    let f32s = |x: Matrix| x.mapv(|v| v as f32);
    let x = f32s(normal_matrix(2 * t, d, &mut rng));
    let w: AttentionWeights<f32> =
        [(); 4].map(|_| f32s(normal_matrix(d, d, &mut rng) * 0.5)).into();
    let r = f32s(normal_matrix(2 * t, d, &mut rng));
    // The first sequence causal, the second a window of 3.
    let keep =
        |b: usize| Some(Array2::from_shape_fn((t, t), |(i, j)| j <= i && (b == 0 || i - j < 3)));
    let weights = Heads::new(t, t, heads);
    let fused = Heads { fused: true, ..weights };
    let (out_w, cache_w) = mha_forward(&x, &x, &w, weights, keep).unwrap();
    let (out_f, cache_f) = mha_forward(&x, &x, &w, fused, keep).unwrap();
    approx::assert_abs_diff_eq!(out_w, out_f, epsilon = 1e-5);
    let kinds: Vec<bool> = cache_f.heads.iter().map(|h| matches!(h, HeadCache::Fused(_))).collect();
    assert_eq!(kinds, [true, true, false, false]);
    assert!(cache_f.heads[0].weights().is_err() && cache_f.heads[2].weights().is_ok());
    let g_w = mha_backward(&cache_w, &x, &x, &w, weights, &r).unwrap();
    let g_f = mha_backward(&cache_f, &x, &x, &w, fused, &r).unwrap();
    approx::assert_abs_diff_eq!(g_w.dx_q, g_f.dx_q, epsilon = 1e-4);
    approx::assert_abs_diff_eq!(g_w.dx_kv, g_f.dx_kv, epsilon = 1e-4);
    for (a, b) in g_w.dw.matrices().into_iter().zip(g_f.dw.matrices()) {
        approx::assert_abs_diff_eq!(a, b, epsilon = 1e-4);
    }
}
