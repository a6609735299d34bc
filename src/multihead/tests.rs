//! Tests of `multihead`.

use super::*;
use crate::scaling::standard_normal;
use approx::assert_abs_diff_eq;
use ndarray::Array1;
use ndarray_rand::rand::SeedableRng;

fn layer_and_inputs(d_model: usize, h: usize) -> (MultiHeadAttention, Array2<f32>, Array2<f32>) {
    let mut rng = StdRng::seed_from_u64(11);
    let mha = MultiHeadAttention::new(d_model, h, &mut rng).unwrap();
    let x_q = standard_normal(5, d_model, &mut rng);
    let x_kv = standard_normal(7, d_model, &mut rng);
    (mha, x_q, x_kv)
}

/// The slow way, written independently of `forward`: for each head, slice
/// its columns out of the weight matrices, attend with an explicit
/// `1/√(d_model/h)`, and concatenate the results column by column.
fn per_head_loop(mha: &MultiHeadAttention, x_q: &Array2<f32>, x_kv: &Array2<f32>) -> Array2<f32> {
    let (d, h) = (mha.d_model(), mha.h);
    let d_head = d / h;
    let mut concat = Array2::<f32>::zeros((x_q.nrows(), d));
    for i in 0..h {
        let cols = s![.., i * d_head..(i + 1) * d_head];
        let q = x_q.dot(&mha.w.w_q.slice(cols));
        let k = x_kv.dot(&mha.w.w_k.slice(cols));
        let v = x_kv.dot(&mha.w.w_v.slice(cols));
        let mut scores = q.dot(&k.t()) / (d_head as f32).sqrt();
        for mut row in scores.rows_mut() {
            let max = row.fold(f32::MIN, |a, &b| a.max(b));
            row.mapv_inplace(|x| (x - max).exp());
            let sum = row.sum();
            row.mapv_inplace(|x| x / sum);
        }
        concat.slice_mut(cols).assign(&scores.dot(&v));
    }
    concat.dot(&mha.w.w_o)
}

#[test]
fn forward_equals_the_per_head_loop() {
    for (d_model, h) in [(16, 1), (16, 4), (24, 3), (64, 8)] {
        let (mha, x_q, x_kv) = layer_and_inputs(d_model, h);
        let fast = mha.forward(&x_q, &x_kv).unwrap();
        assert_eq!(fast.weights.dim(), (h, 5, 7));
        assert_abs_diff_eq!(fast.output, per_head_loop(&mha, &x_q, &x_kv), epsilon = 1e-5);
    }
}

#[test]
fn chapter_5s_form_equals_the_layer() {
    for (d_model, h) in [(16, 1), (16, 4), (24, 3), (64, 8)] {
        let (mha, x_q, x_kv) = layer_and_inputs(d_model, h);
        let small = multi_head_attention(&mha, &x_q, &x_kv).unwrap();
        let layer = mha.forward(&x_q, &x_kv).unwrap();
        assert_abs_diff_eq!(small.output, layer.output, epsilon = 1e-6);
        assert_abs_diff_eq!(small.weights, layer.weights, epsilon = 1e-7);
        let biases = [d_model; 4].map(|n| Array1::from_shape_fn(n, |i| 0.05 * i as f32 - 0.3));
        let biased = mha.with_biases(biases.into()).unwrap();
        let small = multi_head_attention(&biased, &x_q, &x_kv).unwrap();
        let layer = biased.forward(&x_q, &x_kv).unwrap();
        assert_abs_diff_eq!(small.output, layer.output, epsilon = 1e-6);
    }
    // A grouped layer's keys are narrower than its queries: chapter 5's
    // form refuses it, by the head's widths, rather than attend wrongly.
    let grouped = MultiHeadAttention::grouped(8, 4, 2, &mut StdRng::seed_from_u64(2)).unwrap();
    let x = standard_normal(3, 8, &mut StdRng::seed_from_u64(3));
    assert!(multi_head_attention(&grouped, &x, &x).is_err());
}

#[test]
fn scaling_by_sqrt_d_model_would_be_caught() {
    // The recurring bug: dividing by √d_model instead of √d_k. Rescaling
    // the queries by √d_k/√d_model reproduces it; the output must differ.
    let (mha, x_q, x_kv) = layer_and_inputs(64, 8);
    let right = mha.forward(&x_q, &x_kv).unwrap().output;
    let mut buggy = mha.clone();
    buggy.w.w_q.mapv_inplace(|w| w * (8.0_f32 / 64.0).sqrt());
    let wrong = buggy.forward(&x_q, &x_kv).unwrap().output;
    let gap = (&right - &wrong).mapv(f32::abs).fold(0.0_f32, |a, &b| a.max(b));
    assert!(gap > 1e-2, "a √d_model scale changes the output by {gap}");
}

#[test]
fn fused_projection_equals_three_projections() {
    let (mha, x, _) = layer_and_inputs(32, 4);
    let separate = mha.forward(&x, &x).unwrap();
    let fused = mha.forward_fused(&x).unwrap();
    assert_abs_diff_eq!(separate.output, fused.output, epsilon = 1e-5);
    assert_abs_diff_eq!(separate.weights, fused.weights, epsilon = 1e-6);
}

#[test]
fn split_then_merge_is_the_identity() {
    let x = Array2::from_shape_fn((3, 8), |(i, j)| (10 * i + j) as f32);
    let heads = split_heads(&x, 4).unwrap();
    assert_eq!(heads.dim(), (4, 3, 2));
    assert_eq!(heads[[1, 2, 0]], x[[2, 2]]); // head 1 holds columns 2..4
    assert_eq!(merge_heads(&heads), x);
    for g in 0..4 {
        // The views the layer attends with: head g's columns, no copy.
        assert_eq!(heads.index_axis(Axis(0), g), x.slice(s![.., 2 * g..2 * (g + 1)]));
    }
    assert_eq!(split_heads(&x, 3).unwrap_err(), AttnError::HeadsDoNotDivide { d_model: 8, h: 3 });
}

#[test]
fn heads_must_divide_d_model() {
    let mut rng = StdRng::seed_from_u64(1);
    let err = MultiHeadAttention::new(512, 7, &mut rng).unwrap_err();
    assert_eq!(
        err.to_string(),
        "d_model = 512 cannot be split into h = 7 equal heads (512 is not a multiple of 7)"
    );
    assert!(MultiHeadAttention::new(512, 0, &mut rng).is_err());
    assert!(multihead_flops(4, 4, 512, 0).is_err());
}

#[test]
fn cost_formulas() {
    let (mha, _, _) = layer_and_inputs(64, 8);
    assert_eq!(mha.parameters(), 4 * 64 * 64);
    let (n, m, d) = (5, 7, 512);
    // 4·n·d² + 4·m·d² + 4·n·m·d, whatever the number of heads.
    let formula = (4 * n * d * d + 4 * m * d * d + 4 * n * m * d) as f64;
    for h in [1, 2, 8, 64] {
        assert_eq!(multihead_flops(n, m, d, h), Ok(formula), "h = {h}");
    }
}

/// A grouped layer with `g` key/value heads equals the multi-head layer
/// whose key and value heads are copies of their group's (`g = 4`, 2, 1
/// for 4 heads), fused or not, with and without a mask; `g` must divide `h`.
#[test]
fn a_grouped_layer_is_a_multi_head_layer_with_copied_keys_and_values() {
    let mut rng = StdRng::seed_from_u64(31);
    let (d, h, n) = (8, 4, 5);
    let x = crate::grad::normal_matrix(n, d, &mut rng).mapv(|v| v as f32);
    let causal = crate::masking::causal_mask(n, n);
    for g in [4, 2, 1] {
        let layer = MultiHeadAttention::grouped(d, h, g, &mut rng).unwrap();
        assert_eq!((layer.h(), layer.kv_heads()), (h, g));
        assert_eq!(layer.parameters(), 2 * d * d + 2 * d * (g * d / h));
        let mha = layer.to_multi_head();
        assert_eq!(mha.kv_heads(), h);
        // Built by hand: head i's keys are its group's columns.
        let d_k = d / h;
        for i in 0..h {
            let group = i / (h / g);
            let cols = |j: usize| s![.., j * d_k..(j + 1) * d_k];
            assert_eq!(mha.weights().w_k.slice(cols(i)), layer.weights().w_k.slice(cols(group)));
            assert_eq!(mha.weights().w_v.slice(cols(i)), layer.weights().w_v.slice(cols(group)));
        }
        let same = |a: &MultiHeadOutput, b: &MultiHeadOutput| {
            approx::assert_abs_diff_eq!(a.output, b.output, epsilon = 1e-6);
            approx::assert_abs_diff_eq!(a.weights, b.weights, epsilon = 1e-6);
        };
        same(&layer.forward(&x, &x).unwrap(), &mha.forward(&x, &x).unwrap());
        same(&layer.forward_fused(&x).unwrap(), &mha.forward(&x, &x).unwrap());
        same(
            &layer.forward_masked(&x, &x, &causal).unwrap(),
            &mha.forward_masked(&x, &x, &causal).unwrap(),
        );
        let widths = [d, g * d / h, g * d / h, d];
        let biases = widths.map(|n| Array1::from_shape_fn(n, |i| 0.1 * i as f32 - 0.2));
        let biased = layer.clone().with_biases(biases.into()).unwrap();
        let copies = biased.to_multi_head();
        same(&biased.forward(&x, &x).unwrap(), &copies.forward(&x, &x).unwrap());
    }
    for g in [0, 3] {
        let e = MultiHeadAttention::grouped(d, h, g, &mut rng).unwrap_err();
        assert!(e.to_string().contains("must divide the number of heads"), "{e}");
    }
    let wrong = [(8, 8), (8, 8), (8, 4), (8, 8)].map(Array2::<f32>::zeros);
    let e = MultiHeadAttention::from_weights(wrong.into(), 4).unwrap_err();
    assert!(e.to_string().contains("W_K, W_V: d_model × h_kv·d_k"), "{e}");
}
