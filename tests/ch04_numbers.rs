//! Chapter 4 quotes the output of `cargo run --example ch04_self_cross`;
//! these tests recompute it and require the chapter to quote it verbatim.

use attn::projection::Projections;
use attn::scaling::standard_normal;
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};
use report::ch04::init_statistics;
use report::show::shape;

mod common;

use report::numbers::Bindings;

const CHAPTER: &str = "ch04-self-and-cross-attention.md";

fn shape_walkthroughs(b: &mut Bindings) {
    // The example's sizes and seed: d_model 16, d_k = d_v = 8, m = 7, n = 5.
    let mut rng = StdRng::seed_from_u64(3);
    let p = Projections::new(16, 8, 8, &mut rng).unwrap();
    let encoder = standard_normal(7, 16, &mut rng);
    let decoder = standard_normal(5, 16, &mut rng);
    for (x_q, x_kv) in [(&encoder, &encoder), (&decoder, &encoder)] {
        let (q, k, v) =
            (x_q.dot(p.weights()[0]), x_kv.dot(p.weights()[1]), x_kv.dot(p.weights()[2]));
        let a = p.attend(x_q, x_kv).unwrap();
        assert_eq!(a.weights.dim(), (x_q.nrows(), x_kv.nrows()));
        b.quoted(&format!(
            "Q = X_q W_Q:  {} · {} = {}\nK = X_kv W_K: {} · {} = {}\nV = X_kv W_V: {} · {} = {}\n\
             weights = softmax(QKᵀ/√d_k): {}\noutput = weights · V: {}",
            shape(x_q),
            shape(p.weights()[0]),
            shape(&q),
            shape(x_kv),
            shape(p.weights()[1]),
            shape(&k),
            shape(x_kv),
            shape(p.weights()[2]),
            shape(&v),
            shape(&a.weights),
            shape(&a.output)
        ));
    }
    // Figure 4.1: 5 decoder queries over 7 encoder keys, weights from 0.01
    // to 0.57.
    let cross = p.attend(&decoder, &encoder).unwrap().weights;
    b.exact("5", cross.nrows() as f64)
        .exact("7", cross.ncols() as f64)
        .exact("4", cross.nrows() as f64 - 1.0)
        .exact("6", cross.ncols() as f64 - 1.0)
        .rounded("0.01", cross.fold(1.0_f32, |a, &w| a.min(w)) as f64)
        .rounded("0.57", cross.fold(0.0_f32, |a, &w| a.max(w)) as f64);
    let err = p.cross_attention(&decoder, &standard_normal(7, 12, &mut rng)).unwrap_err();
    b.quoted(&format!("```text\n{err}\n```"));
}

fn initialisation_keeps_unit_variance(b: &mut Bindings) {
    let (d_model, d_k, tokens, seed) = (512, 64, 2000, 1);
    let s = init_statistics(d_model, d_k, tokens, seed).unwrap();
    b.quoted(&format!(
        "== Variances at initialisation (d_model = {d_model}, d_k = {d_k}, {tokens} tokens, seed {seed}) ==\n\
         Var(X) = {:.3}, Var(Q) = {:.3}, Var(K) = {:.3}, Var(QKᵀ/√d_k) = {:.3}",
        s.x, s.q, s.k, s.scores
    ));
    // "Every stage stays at variance 1 (to within 2%)"
    let worst = [s.x, s.q, s.k, s.scores].iter().map(|v| (v - 1.0).abs()).fold(0.0, f64::max);
    let unit = worst < 0.02;
    b.at_most("2%", 100.0 * worst);
    b.claim("Every stage stays at variance 1", unit);
    // The measured width, which exercise 1 reuses.
    b.exact("512", d_model as f64);
}

/// Every number the chapter shows is bound: quoted output, or a value
/// registered here with its check, or exempt (`tests/common/numbers.rs`).
#[test]
fn every_number_is_bound() {
    let mut b = Bindings::new(CHAPTER);
    shape_walkthroughs(&mut b);
    initialisation_keeps_unit_variance(&mut b);
    b.assert_all_bound();
}
