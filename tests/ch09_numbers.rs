//! Chapter 9 quotes the output of `cargo run --example ch09_gradients`;
//! these tests recompute it and require the chapter to quote it verbatim.

use attn::grad::{all_checks, gradient_norms};
use attn::model::check_gradients;
use attn::show::table;

mod common;

fn assert_quoted(block: &str) {
    common::assert_quoted("ch09-gradients.md", block);
}

#[test]
fn gradient_check_tables() {
    let checks = all_checks(0);
    assert!(checks.iter().all(|(_, e)| *e < 1e-6));
    let rows: Vec<Vec<String>> = checks
        .iter()
        .map(|(n, e)| vec![n.to_string(), format!("{e:.1e}")])
        .collect();
    assert_quoted(&table(&["operation", "relative error"], &rows));

    let model = check_gradients(3);
    let rows: Vec<Vec<String>> = model
        .iter()
        .map(|(n, e)| vec![n.to_string(), format!("{e:.1e}")])
        .collect();
    assert_quoted(&table(&["parameter", "relative error"], &rows));
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
    use attn::grad::cross_entropy;
    use attn::model::{inputs_and_targets, reversal_example, ModelConfig, TinyTransformer};
    use ndarray_rand::rand::{rngs::StdRng, SeedableRng};
    // The same small model and data as check_gradients(3).
    let config = ModelConfig {
        k: 2,
        d_model: 8,
        heads: 2,
        d_ff: 12,
        layers: 2,
    };
    let net = TinyTransformer::new(config, 3);
    let mut rng = StdRng::seed_from_u64(4);
    let examples: Vec<Vec<usize>> = (0..3).map(|_| reversal_example(2, &mut rng)).collect();
    let (inputs, targets) = inputs_and_targets(&examples, 2);
    let fwd = net.forward(&inputs);
    let grads = net.backward(&fwd, &cross_entropy(&fwd.logits, &targets).1);
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

#[test]
fn gradient_norm_table_and_figure_9_1() {
    let norms = gradient_norms(&[4, 16, 64, 256, 1024, 4096], 200, 2017);
    let rows: Vec<Vec<String>> = norms
        .iter()
        .map(|r| {
            vec![
                r.d_k.to_string(),
                format!("{:.4}", r.unscaled.0),
                format!("{:.4}", r.scaled.0),
                format!("{:.2}", r.unscaled.1),
                format!("{:.2}", r.scaled.1),
            ]
        })
        .collect();
    assert_quoted(&table(
        &[
            "d_k",
            "‖dS‖ unscaled",
            "‖dS‖ scaled",
            "‖dQ‖ unscaled",
            "‖dQ‖ scaled",
        ],
        &rows,
    ));
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
