//! Chapter 11 quotes the output of `cargo run --example ch11_gradients`;
//! these tests recompute it and require the chapter to quote it verbatim.

use attn::grad::all_checks;
use attn::model::check_gradients;
use attn::nn::Parameters;
use report::ch11::{check_table, gradient_norm_table};

mod common;

use report::numbers::Bindings;

const CHAPTER: &str = "ch11-gradients.md";

fn gradient_check_tables(b: &mut Bindings) {
    let checks = all_checks(0).unwrap();
    let worst = checks.iter().map(|(_, e)| *e).fold(0.0, f64::max);
    b.at_most("1e-6", worst);
    // "With h = 10⁻⁵ both are about 10⁻¹⁰": the errors the checks measure.
    b.value("1e-10", worst, 1e-9);
    // The tests run seeds 0 to 9, and 0 to 19 for attention: the last seed
    // of each test's range (src/grad/tests.rs).
    let seeds = |test: &str| report::numbers::number_in_source("src/grad/tests.rs", test, "0..");
    let every = seeds("every_backward_pass_matches_finite_differences");
    let attention = seeds("attention_gradients_match_finite_differences_with_and_without_a_mask");
    b.exact("9", every - 1.0).exact("19", attention - 1.0);
    b.exact("1e-5", attn::grad::STEP);
    b.quoted(&check_table("operation", &checks));
    let model = check_gradients(3).unwrap();
    b.quoted(&check_table("parameter", &model));
    // "The embeddings' errors are larger, 4e-8 ... more than 20 times below".
    let embeddings: Vec<f64> =
        model.iter().filter(|(n, _)| n.contains("embeddings")).map(|(_, e)| *e).collect();
    let others = model.iter().filter(|(n, _)| !n.contains("embeddings")).map(|(_, e)| *e);
    assert!(embeddings.iter().all(|&e| e > others.clone().fold(0.0, f64::max) && e * 20.0 < 1e-6));
    b.value("4e-8", embeddings[0], 0.5e-8)
        .value("4e-8", embeddings[1], 0.5e-8)
        .at_least("20", 1e-6 / embeddings[0]);
    // The embeddings' standard deviation at initialisation.
    let (net, _, _) = attn::model::small_problem(3).unwrap();
    let tokens = net.named_slices()[0].1;
    let std = (tokens.iter().map(|x| x * x).sum::<f64>() / tokens.len() as f64).sqrt();
    b.value("0.02", std, 0.005);
    b.claim(
        "The embeddings' errors are larger",
        embeddings.iter().all(|&e| e > others.clone().fold(0.0, f64::max)),
    );
}

#[test]
fn embedding_gradients_are_the_largest() {
    // The same small model and data as check_gradients(3).
    let (net, inputs, targets) = attn::model::small_problem(3).unwrap();
    let (_, grads) = net.loss_and_gradients(&inputs, &targets).unwrap();
    let largest = |m: &[f64]| m.iter().fold(0.0_f64, |a, &b| a.max(b.abs()));
    let named = grads.named_slices();
    let of = |name: &str| largest(named.iter().find(|(n, _)| n == name).unwrap().1);
    let embeddings = of("tokens").min(of("positions"));
    // The weight matrices: W_Q, W_K, W_V, W_O and the FFN's of every block,
    // and the output head.
    let matrices: Vec<f64> = named
        .iter()
        .filter(|(n, _)| [".w_", ".w1", ".w2"].iter().any(|w| n.contains(w)))
        .chain(named.iter().filter(|(n, _)| n == "head.w"))
        .map(|(_, values)| largest(values))
        .collect();
    assert_eq!(matrices.len(), 2 * 6 + 1, "six matrices a block, and the head");
    let biggest = matrices.iter().cloned().fold(0.0, f64::max);
    assert!(embeddings > 5.0 * biggest, "\"more than five times\": {embeddings} vs {matrices:?}");
}

fn gradient_norm_table_and_figure_9_1(b: &mut Bindings) {
    let norms = report::ch11::gradient_norm_experiment().unwrap();
    b.exact("200", report::ch11::TRIALS as f64);
    // Query by query: the median grows, then falls from d_k = 256 on; the
    // mean grows throughout; scaled, the median stays near 1 and none
    // vanishes.
    let queries = report::ch11::query_gradient_experiment().unwrap();
    b.quoted(&report::ch11::query_gradient_table(&queries));
    let medians: Vec<f64> = queries.iter().map(|r| r.unscaled.0).collect();
    let peak = medians.iter().cloned().fold(0.0, f64::max);
    let from_256 = queries.iter().position(|r| r.d_k == 256).unwrap();
    let grows_then_vanishes = medians[1] > medians[0]
        && medians[from_256 - 1..].windows(2).all(|w| w[1] < w[0])
        && medians[medians.len() - 1] < 1e-3 * peak;
    let near_one = queries.iter().all(|r| (r.scaled.0 - 1.0).abs() < 0.1 && r.scaled.2 == 0.0);
    let widest = &queries[queries.len() - 1];
    let mean_grows = norms.windows(2).all(|w| w[1].unscaled.1 > w[0].unscaled.1);
    let grows_to_16_then_falls =
        medians[1] > medians[0] && medians[1..].windows(2).all(|w| w[1] < w[0]);
    b.claim("grows at first and then vanishes", grows_then_vanishes)
        .claim("grows from $d_k = 4$ to 16, then falls", grows_to_16_then_falls)
        .claim("at every wider width, collapsing from 256 on", grows_then_vanishes)
        .rounded("26%", 100.0 * (1.0 - widest.unscaled.2))
        .rounded("388.22", widest.unscaled.1)
        .claim("the median stays near 1 at every width", near_one)
        .claim("where the growing $\\lVert dQ \\rVert$ comes from", mean_grows)
        .claim("falls below 0.01", near_one);
    let (first, last) = (&norms[0], &norms[norms.len() - 1]);
    b.rounded("5.1", first.unscaled.0)
        .rounded("1.0", last.unscaled.0)
        .rounded("9.8", first.unscaled.1)
        .rounded("67", last.unscaled.1);
    for r in &norms {
        b.value("4.8", r.scaled.0, 0.15).value("4.8", r.scaled.1, 0.15);
    }
    let falls = norms.windows(2).all(|w| w[1].unscaled.0 < w[0].unscaled.0);
    let rises = norms.windows(2).all(|w| w[1].unscaled.1 > w[0].unscaled.1);
    let level =
        norms.iter().all(|r| (r.scaled.0 - 4.8).abs() < 0.15 && (r.scaled.1 - 4.8).abs() < 0.15);
    b.claim("shrinks as $d_k$ grows", falls)
        .claim("so the norm of $dQ$ grows instead", rises)
        .claim("both norms stay near 4.8", level)
        .claim(
            "unscaled it falls from 5.1 to 1.0; scaled it stays near 4.8",
            falls && level,
        )
        .claim(
            "unscaled it rises from 9.8 to 67; scaled it stays near 4.8",
            rises && level,
        )
        .claim(
            "as $d_k$ grows a thousand-fold, the\ngradient at the scores shrinks about five-fold and the gradient at the\nqueries grows about seven-fold",
            falls
                && rises
                && (900..1100).contains(&(last.d_k / first.d_k))
                && (4.5..5.5).contains(&(first.unscaled.0 / last.unscaled.0))
                && (6.5..7.5).contains(&(last.unscaled.1 / first.unscaled.1)),
        );
    b.quoted(&gradient_norm_table(&norms));
    // "both norms stay near 4.8 for every d_k" (within 0.15), and the
    // unscaled ones fall (dS) and rise (dQ) monotonically.
    for r in &norms {
        assert!((r.scaled.0 - 4.8).abs() < 0.15 && (r.scaled.1 - 4.8).abs() < 0.15, "{r:?}");
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
    b.assert_all_bound();
}
