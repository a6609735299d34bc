//! Chapter 5 quotes the output of `cargo run --example ch05_multihead`;
//! these tests recompute it and require the chapter to quote it verbatim.

use attn::multihead::{
    merge_heads, multi_head_attention, multihead_flops, split_heads, MultiHeadAttention,
};
use attn::scaling::standard_normal;
use ndarray::{Array1, Axis};
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};
use regex::Regex;
use report::ch05::{embed_words, head_entropies, scaled_by_sqrt_d_model, BASE_D_MODEL, BASE_HEADS};
use report::show::shape;

const WORDS: [&str; 7] = ["The", "cat", "sat", "on", "the", "mat", "."];

mod common;

use report::numbers::{captured, repository_file, Bindings};

const CHAPTER: &str = "ch05-multi-head-attention.md";

fn layer() -> MultiHeadAttention {
    MultiHeadAttention::new(32, 4, &mut StdRng::seed_from_u64(4)).unwrap()
}

fn shapes_block(b: &mut Bindings) {
    let (x, mha) = (embed_words(&WORDS, 32, 2024), layer());
    let q = x.dot(&mha.weights().w_q);
    let heads = split_heads(&q, 4).unwrap();
    let out = mha.forward(&x, &x).unwrap();
    b.quoted(&format!(
        "X:                       {}\nQ = X W_Q:               {}\n\
         split heads:             {:?} (h, n, d_k)\nweights, per head:       {:?} (h, n, m)\n\
         merged heads:            {}\noutput = Concat · W_O:   {}",
        shape(&x),
        shape(&q),
        heads.dim(),
        out.weights.dim(),
        shape(&merge_heads(&heads)),
        shape(&out.output)
    ));
    let err = MultiHeadAttention::new(512, 7, &mut StdRng::seed_from_u64(0)).unwrap_err();
    b.quoted(&format!("```text\n{err}\n```"));
}

fn the_sqrt_d_model_bug_factor(b: &mut Bindings) {
    b.quoted(&format!("$\\sqrt{{8}} \\approx {:.1}$", 8f64.sqrt()));
}

fn cost_block(b: &mut Bindings) {
    let mut block = format!("parameters: 4 · 32² = {}", layer().parameters());
    for h in [1, 8, 64] {
        block += &format!(
            "\nFLOPs, n = m = 512, d_model = 512, h = {h:>2}: {}",
            multihead_flops(512, 512, 512, h).unwrap()
        );
    }
    b.quoted(&block);
    b.quoted(&format!("$4 \\cdot 512^2 = {}$", "1{,}048{,}576"));
    let base = MultiHeadAttention::new(512, 8, &mut StdRng::seed_from_u64(0)).unwrap();
    assert_eq!(base.parameters(), 1_048_576);
}

fn entropy_block_and_figure_claims(b: &mut Bindings) {
    let (x, mha) = (embed_words(&WORDS, 32, 2024), layer());
    let w = mha.forward(&x, &x).unwrap().weights;
    let mut block = String::new();
    for (i, e) in head_entropies(&w).unwrap().iter().enumerate() {
        block += &format!("head {}: {e:.3}\n", i + 1);
    }
    b.quoted(&block);
    // "The" (row 0) and "the" (row 4) have identical rows in every head.
    for head in w.outer_iter() {
        assert_eq!(head.row(0), head.row(4));
    }
    // Alt text: "weights between 0.01 and 0.49".
    let (lo, hi) = w.fold((1.0_f32, 0.0_f32), |(lo, hi), &x| (lo.min(x), hi.max(x)));
    b.rounded("0.01", lo as f64).rounded("0.49", hi as f64);
    // "The average is flatter than any single head": higher entropy.
    let average = w.mean_axis(Axis(0)).unwrap().insert_axis(Axis(0));
    let avg_entropy = head_entropies(&average).unwrap()[0];
    assert!(head_entropies(&w).unwrap().iter().all(|&e| e < avg_entropy));
}

/// The shapes `(d_model, h)` at which `src/multihead/tests.rs` compares the
/// layer with its per-head loop and with chapter 5's form (both tests use
/// the same list), and the per-head comparison's tolerance.
fn per_head_check() -> (Vec<(usize, usize)>, f64) {
    let text = repository_file("src/multihead/tests.rs");
    let list = Regex::new(r"for \(d_model, h\) in \[([^\]]+)\]").unwrap();
    let lists: Vec<&str> = list.captures_iter(&text).map(|c| c.get(1).unwrap().as_str()).collect();
    assert!(lists.len() >= 2 && lists.iter().all(|l| *l == lists[0]), "{lists:?}");
    let pair = Regex::new(r"\((\d+), (\d+)\)").unwrap();
    let shapes = pair
        .captures_iter(lists[0])
        .map(|c| (c[1].parse().unwrap(), c[2].parse().unwrap()))
        .collect();
    let tolerance = captured(
        "src/multihead/tests.rs",
        r"per_head_loop\(&mha, &x_q, &x_kv\), epsilon = ([0-9.e-]+)",
    )[0];
    (shapes, tolerance)
}

/// The √d_model bug ([`scaled_by_sqrt_d_model`]) applied to the layer at
/// each shape of the per-head check, with that check's inputs, against
/// chapter 5's form of the unchanged layer: the heads `h` at which the
/// output moves by more than the check's tolerance, and the smallest such
/// move over the tolerance.
fn sqrt_d_model_failures() -> (Vec<usize>, f64) {
    let (shapes, tolerance) = per_head_check();
    let (mut failing, mut margin) = (Vec::new(), f64::INFINITY);
    for (d_model, h) in shapes {
        let mut rng = StdRng::seed_from_u64(11);
        let layer = MultiHeadAttention::new(d_model, h, &mut rng).unwrap();
        let x_q = standard_normal(5, d_model, &mut rng);
        let x_kv = standard_normal(7, d_model, &mut rng);
        let right = multi_head_attention(&layer, &x_q, &x_kv).unwrap().output;
        let bug = scaled_by_sqrt_d_model(&layer).unwrap();
        let wrong = bug.forward(&x_q, &x_kv).unwrap().output;
        let gap = (&right - &wrong).fold(0.0_f32, |a, &d| a.max(d.abs())) as f64;
        if gap > tolerance {
            failing.push(h);
            margin = margin.min(gap / tolerance);
        }
    }
    (failing, margin)
}

/// "Changing the layer to scale by √d_model makes that comparison fail for
/// every h > 1": the mutation, applied. It fails the per-head comparison
/// at every shape with more than one head and at no other, each time by
/// more than a hundred times the tolerance, so that any reference within
/// the tolerance of the right output (the per-head loop, PyTorch's golden
/// files) catches it.
#[test]
fn the_sqrt_d_model_bug_fails_the_per_head_check_for_every_h_above_one() {
    let (shapes, _) = per_head_check();
    let (failing, margin) = sqrt_d_model_failures();
    let above_one: Vec<usize> = shapes.iter().map(|s| s.1).filter(|&h| h > 1).collect();
    assert_eq!(failing, above_one);
    assert!(failing.len() < shapes.len(), "the check includes h = 1, where the bug is harmless");
    assert!(margin > 100.0, "the bug moves the output by only {margin} tolerances");
}

/// Every number the chapter shows is bound: quoted output, or a value
/// registered here with its check, or exempt (`report::numbers::exemption`).
/// The output blocks are bound first, then each section's prose, place by
/// place in the order the section shows them.
#[test]
fn every_number_is_bound() {
    let mut b = Bindings::new(CHAPTER);
    shapes_block(&mut b);
    the_sqrt_d_model_bug_factor(&mut b);
    cost_block(&mut b);
    entropy_block_and_figure_claims(&mut b);
    a_bug_worth_a_test(&mut b);
    checked_against_pytorch(&mut b);
    fused_qkv(&mut b);
    code_all_heads(&mut b);
    cost(&mut b);
    seeing_the_heads(&mut b);
    exercises(&mut b);
    quiz(&mut b);
    b.assert_all_bound();
}

fn a_bug_worth_a_test(b: &mut Bindings) {
    b.section("A bug worth a test");
    // "With h = 8 that shrinks every score by a further factor √8": the
    // base model's layer, d_model against its d_k.
    let base =
        MultiHeadAttention::new(BASE_D_MODEL, BASE_HEADS, &mut StdRng::seed_from_u64(0)).unwrap();
    let factor = (base.d_model() as f64 / base.d_k() as f64).sqrt();
    b.exact("8", base.h() as f64)
        .claim("shrinks every score by a further factor", (factor - 8f64.sqrt()).abs() < 1e-12);
    // The per-head check: its tolerance and its heads.
    let (shapes, tolerance) = per_head_check();
    b.value("1e-5", tolerance, 0.0);
    for (_, h) in &shapes {
        b.exact(&h.to_string(), *h as f64);
    }
    let (failing, _) = sqrt_d_model_failures();
    let above_one: Vec<usize> = shapes.iter().map(|s| s.1).filter(|&h| h > 1).collect();
    b.claim("makes that comparison fail for every", failing == above_one);
}

fn checked_against_pytorch(b: &mut Bindings) {
    b.section("Checked against PyTorch");
    let tolerance = captured("tests/golden.rs", r"const TOLERANCE: f32 = ([0-9.e-]+);")[0];
    b.value("1e-5", tolerance, 0.0);
}

fn fused_qkv(b: &mut Bindings) {
    b.section("Fused QKV");
    // [W_Q | W_K | W_V] is d_model × 3 d_model.
    let mha = layer();
    let w = mha.weights();
    let fused = (w.w_q.ncols() + w.w_k.ncols() + w.w_v.ncols()) / mha.d_model();
    b.exact("3", fused as f64);
    // The fused and the separate projections agree to 10⁻⁵.
    let x = embed_words(&WORDS, 32, 2024);
    let (separate, fused) =
        (mha.forward(&x, &x).unwrap().output, mha.forward_fused(&x).unwrap().output);
    let worst = (&separate - &fused).fold(0.0_f32, |a, &d| a.max(d.abs()));
    b.at_most("1e-5", worst as f64);
}

fn code_all_heads(b: &mut Bindings) {
    b.section("Code: all heads in one matrix product");
    // Chapter 5's form, head after head, against the layer's engine, at
    // the test's shapes, with and without biases: within 10⁻⁶.
    let (shapes, _) = per_head_check();
    let mut worst = 0.0_f32;
    for &(d_model, h) in &shapes {
        let mut rng = StdRng::seed_from_u64(h as u64);
        let mha = MultiHeadAttention::new(d_model, h, &mut rng).unwrap();
        let biases = [d_model; 4].map(|n| Array1::from_shape_fn(n, |i| 0.01 * i as f32));
        let x = embed_words(&WORDS, d_model, 7);
        for layer in [mha.clone(), mha.with_biases(biases.into()).unwrap()] {
            let small = multi_head_attention(&layer, &x, &x).unwrap().output;
            let engine = layer.forward(&x, &x).unwrap().output;
            worst = (&small - &engine).fold(worst, |a, &d| a.max(d.abs()));
        }
    }
    b.at_most("1e-6", worst as f64);
    for (_, h) in &shapes {
        b.exact(&h.to_string(), *h as f64);
    }
    // The example's sentence and layer (the shapes block quotes them).
    let mha = layer();
    b.exact("7", WORDS.len() as f64).exact("32", mha.d_model() as f64).exact("4", mha.h() as f64);
    // The heads the example asks for, and the layer's width, as the error
    // (quoted) names them.
    let err = MultiHeadAttention::new(512, 7, &mut StdRng::seed_from_u64(0)).unwrap_err();
    let named = Regex::new(r"d_model = (\d+) cannot be split into h = (\d+)")
        .unwrap()
        .captures(&err.to_string())
        .map(|c| [1, 2].map(|i| c[i].parse::<f64>().unwrap()))
        .expect("the error names both");
    b.exact("7", named[1]).exact("512", named[0]);
}

fn cost(b: &mut Bindings) {
    b.section("Cost: what h heads change");
    // Four d_model × d_model matrices: 4 d_model²; K and V: 4 m d_model²
    // (two products of 2 m d_model²).
    let mha = layer();
    let d2 = (mha.d_model() * mha.d_model()) as f64;
    b.exact("4", mha.parameters() as f64 / d2);
    let m = 7;
    // With no queries, only the keys' and values' projections remain.
    let kv = multihead_flops(0, m, mha.d_model(), mha.h()).unwrap();
    b.exact("4", kv / (m as f64 * d2));
    // The scores (one n×m matrix a head) grow with h: h · n·m numbers.
    let x = embed_words(&WORDS, 32, 2024);
    let scores = |h: usize| {
        let mha = MultiHeadAttention::new(32, h, &mut StdRng::seed_from_u64(4)).unwrap();
        mha.forward(&x, &x).unwrap().weights.len()
    };
    let n = WORDS.len();
    b.claim(
        "$h \\cdot n m$ of each, do grow with $h$",
        [1, 2, 4, 8].iter().all(|&h| scores(h) == h * n * n),
    );
}

fn seeing_the_heads(b: &mut Bindings) {
    b.section("Seeing the heads");
    // ln 7: the sentence's keys; the figure's 7 by 7 maps, one for each of
    // the four heads and their average ("five").
    let (x, mha) = (embed_words(&WORDS, 32, 2024), layer());
    let w = mha.forward(&x, &x).unwrap().weights;
    let (h, n, m) = w.dim();
    assert_eq!(h + 1, 5, "five heatmaps: the heads and their average");
    b.exact("7", m as f64).exact("7", n as f64).exact("7", m as f64);
}

fn exercises(b: &mut Bindings) {
    b.section("Exercises");
    // The base model: d_model = 512, h = 8, and its 4 d_model² parameters.
    let base =
        MultiHeadAttention::new(BASE_D_MODEL, BASE_HEADS, &mut StdRng::seed_from_u64(0)).unwrap();
    assert_eq!(base.parameters(), 1_048_576);
    let d2 = (base.d_model() * base.d_model()) as f64;
    b.exact("512", base.d_model() as f64)
        .exact("8", base.h() as f64)
        .exact("4", base.parameters() as f64 / d2);
}

fn quiz(b: &mut Bindings) {
    b.section("Quiz");
    // Quiz 1: 8 → 16 heads of a 512-wide layer: head width 32 instead of
    // 64, same parameters and FLOPs, twice the score matrices.
    let base =
        MultiHeadAttention::new(BASE_D_MODEL, BASE_HEADS, &mut StdRng::seed_from_u64(0)).unwrap();
    let doubled =
        MultiHeadAttention::new(BASE_D_MODEL, 2 * BASE_HEADS, &mut StdRng::seed_from_u64(0))
            .unwrap();
    let count =
        |m: &MultiHeadAttention| m.weights().matrices().iter().map(|w| w.len()).sum::<usize>();
    assert_eq!(count(&doubled), count(&base));
    assert_eq!(
        multihead_flops(512, 512, BASE_D_MODEL, doubled.h()).unwrap(),
        multihead_flops(512, 512, BASE_D_MODEL, base.h()).unwrap()
    );
    let (d_model, h, d_k) = (base.d_model() as f64, base.h() as f64, base.d_k() as f64);
    let (h2, d_k2) = (doubled.h() as f64, doubled.d_k() as f64);
    b.exact("512", d_model)
        .exact("8", h)
        .exact("16", h2)
        .exact("16", h2)
        .exact("32", d_k2)
        .exact("64", d_k)
        .exact("16", h2)
        .exact("64", d_k)
        .exact("512", d_model)
        .exact("16", h2)
        .exact("32", d_k2);
    // Quiz 2: the base layer scaled by √512; its heads are 64 wide.
    b.exact("512", d_model).exact("8", h).exact("512", d_model).exact("64", d_k).exact("64", d_k);
}
