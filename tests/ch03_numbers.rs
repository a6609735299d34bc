//! Chapter 3 quotes the output of `cargo run --example ch03_self_cross`;
//! these tests recompute it and require the chapter to quote it verbatim.

use attn::projection::{init_statistics, Projections};
use attn::scaling::standard_normal;
use attn::show::shape;
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

mod common;

fn assert_quoted(block: &str) {
    common::assert_quoted("ch03-self-and-cross-attention.md", block);
}

#[test]
fn shape_walkthroughs() {
    // The example's sizes and seed: d_model 16, d_k = d_v = 8, m = 7, n = 5.
    let mut rng = StdRng::seed_from_u64(3);
    let p = Projections::new(16, 8, 8, &mut rng);
    let encoder = standard_normal(7, 16, &mut rng);
    let decoder = standard_normal(5, 16, &mut rng);
    for (x_q, x_kv) in [(&encoder, &encoder), (&decoder, &encoder)] {
        let (q, k, v) = (x_q.dot(&p.w_q), x_kv.dot(&p.w_k), x_kv.dot(&p.w_v));
        let a = p.attend(x_q, x_kv).unwrap();
        assert_eq!(a.weights.dim(), (x_q.nrows(), x_kv.nrows()));
        assert_quoted(&format!(
            "Q = X_q W_Q:  {} · {} = {}\nK = X_kv W_K: {} · {} = {}\nV = X_kv W_V: {} · {} = {}\n\
             weights = softmax(QKᵀ/√d_k): {}\noutput = weights · V: {}",
            shape(x_q),
            shape(&p.w_q),
            shape(&q),
            shape(x_kv),
            shape(&p.w_k),
            shape(&k),
            shape(x_kv),
            shape(&p.w_v),
            shape(&v),
            shape(&a.weights),
            shape(&a.output)
        ));
    }
    let err = p
        .cross_attention(&decoder, &standard_normal(7, 12, &mut rng))
        .unwrap_err();
    assert_quoted(&format!("```text\n{err}\n```"));
}

#[test]
fn initialisation_keeps_unit_variance() {
    let s = init_statistics(512, 64, 2000, 1);
    assert_quoted(&format!(
        "Var(X) = {:.3}, Var(Q) = {:.3}, Var(K) = {:.3}, Var(QKᵀ/√d_k) = {:.3}",
        s.x, s.q, s.k, s.scores
    ));
    // "Every stage stays at variance 1 (to within 2%)"
    for v in [s.x, s.q, s.k, s.scores] {
        assert!((v - 1.0).abs() < 0.02, "{s:?}");
    }
}
