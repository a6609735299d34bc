//! Chapter 11's backward passes are the reader's to call: each is public,
//! agrees with finite differences when called the way a reader would, and
//! refuses inputs that do not fit with an error naming them.

use attn::linalg::linear_backward;
use attn::nn::{
    attention_backward, attention_forward, cross_entropy, layer_norm_backward, layer_norm_forward,
    mha_backward, mha_forward, softmax_backward, AttentionWeights, Heads,
};
use ndarray::{array, Array1, Array2};

/// A deterministic matrix with entries spread over (−1, 1).
fn m(rows: usize, cols: usize, seed: usize) -> Array2<f64> {
    Array2::from_shape_fn((rows, cols), |(i, j)| {
        (((i * 7 + j * 13 + seed * 29) % 17) as f64 / 8.5) - 1.0
    })
}

#[test]
fn attention_backward_matches_a_finite_difference_through_the_public_api() {
    let (q, k, v, r) = (m(3, 4, 1), m(5, 4, 2), m(5, 2, 3), m(3, 2, 4));
    let sqrt_d_k = 2.0;
    // L = Σ O ⊙ R, so dO = R.
    let loss =
        |q: &Array2<f64>| (attention_forward(q, &k, &v, None, sqrt_d_k).unwrap().0 * &r).sum();
    let (_, cache) = attention_forward(&q, &k, &v, None, sqrt_d_k).unwrap();
    let [dq, _, _] = attention_backward(&q, &k, &v, &cache, &r).unwrap();
    let h = 1e-6;
    for ((i, j), &analytic) in dq.indexed_iter() {
        let (mut up, mut down) = (q.clone(), q.clone());
        up[[i, j]] += h;
        down[[i, j]] -= h;
        let numeric = (loss(&up) - loss(&down)) / (2.0 * h);
        assert!((numeric - analytic).abs() < 1e-8, "dQ[{i},{j}]: {numeric} vs {analytic}");
    }
}

#[test]
fn attention_passes_name_what_does_not_fit() {
    let (q, k, v) = (m(3, 4, 1), m(5, 4, 2), m(5, 2, 3));
    let narrow_keys = m(5, 3, 2);
    assert!(attention_forward(&q, &narrow_keys, &v, None, 2.0).is_err());
    let err = attention_forward(&q, &k, &v, None, 0.0).unwrap_err().to_string();
    assert!(err.contains("√d_k"), "{err}");
    let (_, cache) = attention_forward(&q, &k, &v, None, 2.0).unwrap();
    let err = attention_backward(&q, &k, &v, &cache, &m(3, 3, 4)).unwrap_err().to_string();
    assert!(err.contains("dO"), "{err}");
    let err = attention_backward(&m(2, 4, 1), &k, &v, &cache, &m(2, 2, 4)).unwrap_err().to_string();
    assert!(err.contains("weights"), "{err}");
    let err = softmax_backward(&m(2, 3, 1), &m(3, 2, 1)).unwrap_err().to_string();
    assert!(err.contains("dP"), "{err}");
}

#[test]
fn layer_norm_and_linear_name_what_does_not_fit() {
    let x = m(4, 6, 1);
    let (gamma, beta) = (Array1::ones(6), Array1::zeros(6));
    let err = layer_norm_forward(&x, &Array1::ones(5), &beta, 1e-5).unwrap_err().to_string();
    assert!(err.contains("γ"), "{err}");
    let err = layer_norm_forward(&x, &gamma, &beta, 0.0).unwrap_err().to_string();
    assert!(err.contains("ε"), "{err}");
    let (_, cache) = layer_norm_forward(&x, &gamma, &beta, 1e-5).unwrap();
    let err = layer_norm_backward(&cache, &gamma, &m(4, 5, 2)).unwrap_err().to_string();
    assert!(err.contains("dY"), "{err}");
    let err = linear_backward(&x, &m(6, 3, 2), &m(4, 2, 3)).unwrap_err().to_string();
    assert!(err.contains("dY"), "{err}");
}

#[test]
fn cross_entropy_names_targets_that_do_not_fit() {
    let logits = array![[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]];
    let (loss, d_logits) = cross_entropy(&logits, &[Some(2), None]).unwrap();
    assert!(loss > 0.0 && d_logits.row(1).iter().all(|&g| g == 0.0));
    let err = cross_entropy(&logits, &[Some(2)]).unwrap_err().to_string();
    assert!(err.contains("targets"), "{err}");
    let err = cross_entropy(&logits, &[Some(3), None]).unwrap_err().to_string();
    assert!(err.contains("target") && err.contains('3'), "{err}");
}

#[test]
fn multi_head_passes_name_heads_that_do_not_fit() {
    let (d, h, t) = (4, 2, 3);
    let w = AttentionWeights::new(m(d, d, 1), m(d, d, 2), m(d, d, 3), m(d, d, 4));
    let x = m(t, d, 5);
    let heads = Heads::new(t, t, h);
    let (out, cache) = mha_forward(&x, &x, &w, heads, |_| None).unwrap();
    assert_eq!(out.dim(), (t, d));
    let err = mha_forward(&x, &x, &w, Heads::new(t, t, 3), |_| None).unwrap_err().to_string();
    assert!(err.contains("heads"), "{err}");
    let err = mha_forward(&x, &x, &w, Heads::new(2, 2, h), |_| None).unwrap_err().to_string();
    assert!(err.contains("heads"), "{err}");
    let err = mha_backward(&cache, &x, &x, &w, heads, &m(t, d + 1, 6)).unwrap_err().to_string();
    assert!(err.contains("dOut"), "{err}");
    let g = mha_backward(&cache, &x, &x, &w, heads, &m(t, d, 6)).unwrap();
    assert_eq!(g.dw.matrices()[0].dim(), (d, d));
}
