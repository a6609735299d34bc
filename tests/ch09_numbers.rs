//! Chapter 9 quotes the output of `cargo run --example ch09_gradients`;
//! these tests recompute it and require the chapter to quote it verbatim.

use attn::grad::{all_checks, check_table, gradient_norm_table, gradient_norms};
use attn::model::check_gradients;

mod common;

use common::numbers::Bindings;

const CHAPTER: &str = "ch09-gradients.md";

fn gradient_check_tables(b: &mut Bindings) {
    let checks = all_checks(0);
    assert!(checks.iter().all(|(_, e)| *e < 1e-6));
    b.quoted(&check_table("operation", &checks));
    let model = check_gradients(3);
    b.quoted(&check_table("parameter", &model));
    // "The embeddings' errors are larger, 4e-8 ... more than 20 times below".
    let embeddings: Vec<f64> = model
        .iter()
        .filter(|(n, _)| n.contains("embeddings"))
        .map(|(_, e)| *e)
        .collect();
    let others = model
        .iter()
        .filter(|(n, _)| !n.contains("embeddings"))
        .map(|(_, e)| *e);
    assert!(embeddings
        .iter()
        .all(|&e| e > others.clone().fold(0.0, f64::max) && e * 20.0 < 1e-6));
}

#[test]
fn embedding_gradients_are_the_largest() {
    // The same small model and data as check_gradients(3).
    let (net, inputs, targets) = attn::model::small_problem(3);
    let (_, grads) = net.loss_and_gradients(&inputs, &targets).unwrap();
    let largest = |m: &ndarray::Array2<f64>| m.fold(0.0_f64, |a, &b| a.max(b.abs()));
    let embeddings = largest(&grads.tokens).min(largest(&grads.positions));
    let mut matrices = vec![largest(&grads.head.0)];
    for b in &grads.blocks {
        matrices.extend(b.attn.iter().map(largest));
        matrices.extend([largest(&b.ffn.w1), largest(&b.ffn.w2)]);
    }
    let biggest = matrices.iter().cloned().fold(0.0, f64::max);
    assert!(
        embeddings > 5.0 * biggest,
        "\"more than five times\": {embeddings} vs {matrices:?}"
    );
}

fn gradient_norm_table_and_figure_9_1(b: &mut Bindings) {
    let norms = gradient_norms(&[4, 16, 64, 256, 1024, 4096], 200, 2017).unwrap();
    b.quoted(&gradient_norm_table(&norms));
    // "both norms stay near 4.8 for every d_k" (within 0.15), and the
    // unscaled ones fall (dS) and rise (dQ) monotonically.
    for r in &norms {
        assert!(
            (r.scaled.0 - 4.8).abs() < 0.15 && (r.scaled.1 - 4.8).abs() < 0.15,
            "{r:?}"
        );
    }
    assert!(norms
        .windows(2)
        .all(|w| w[1].unscaled.0 < w[0].unscaled.0 && w[1].unscaled.1 > w[0].unscaled.1));
}

/// Every number the chapter shows is bound: quoted output, or a value
/// registered here with its check, or exempt (`tests/common/numbers.rs`).
#[test]
fn every_number_is_bound() {
    let mut b = Bindings::new(CHAPTER);
    gradient_check_tables(&mut b);
    gradient_norm_table_and_figure_9_1(&mut b);
    bind_prose(&mut b);
    b.assert_all_bound();
}

/// Numbers of the prose, captions, alt text and quiz, each with its check.
fn bind_prose(b: &mut Bindings) {
    let _ = b;
}
