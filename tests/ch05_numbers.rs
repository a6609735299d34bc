//! Chapter 5 quotes the output of `cargo run --example ch05_multihead`;
//! these tests recompute it and require the chapter to quote it verbatim.

use attn::multihead::{
    merge_heads, multi_head_attention, multihead_flops, split_heads, MultiHeadAttention,
};
use ndarray::{Array1, Axis};
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};
use report::ch05::{embed_words, head_entropies};
use report::show::shape;

const WORDS: [&str; 7] = ["The", "cat", "sat", "on", "the", "mat", "."];

mod common;

use report::numbers::Bindings;

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

/// Every number the chapter shows is bound: quoted output, or a value
/// registered here with its check, or exempt (`tests/common/numbers.rs`).
#[test]
fn every_number_is_bound() {
    let mut b = Bindings::new(CHAPTER);
    shapes_block(&mut b);
    the_sqrt_d_model_bug_factor(&mut b);
    cost_block(&mut b);
    entropy_block_and_figure_claims(&mut b);
    bind_prose(&mut b);
    b.assert_all_bound();
}

/// Numbers of the prose, captions, alt text and quiz, each with its check.
fn bind_prose(b: &mut Bindings) {
    // "shrinks every score by a further factor √8": the layer's d_k against
    // d_model at h = 8.
    let base = MultiHeadAttention::new(512, 8, &mut StdRng::seed_from_u64(0)).unwrap();
    let factor = (base.d_model() as f64 / base.d_k() as f64).sqrt();
    b.claim("shrinks every score by a further factor", (factor - 8f64.sqrt()).abs() < 1e-12);
    // The tolerance of the comparisons: fused and separate projections agree
    // to 10⁻⁵ (the per-head loop and the PyTorch files use the same bound).
    let x = embed_words(&WORDS, 32, 2024);
    let (separate, fused) =
        (layer().forward(&x, &x).unwrap().output, layer().forward_fused(&x).unwrap().output);
    let worst = (&separate - &fused).fold(0.0_f32, |a, &d| a.max(d.abs()));
    b.at_most("1e-5", worst as f64);
    // Chapter 5's form, head after head, against the layer's engine, for
    // h = 1, 4, 3, 8, with and without biases.
    let mut worst = 0.0_f32;
    for (d_model, h) in [(16, 1), (16, 4), (24, 3), (64, 8)] {
        let mut rng = StdRng::seed_from_u64(h as u64);
        let mha = MultiHeadAttention::new(d_model, h, &mut rng).unwrap();
        let biases = [d_model; 4].map(|n| Array1::from_shape_fn(n, |i| 0.01 * i as f32));
        let x = report::ch05::embed_words(&WORDS, d_model, 7);
        for layer in [mha.clone(), mha.with_biases(biases.into()).unwrap()] {
            let small = multi_head_attention(&layer, &x, &x).unwrap().output;
            let engine = layer.forward(&x, &x).unwrap().output;
            worst = (&small - &engine).fold(worst, |a, &d| a.max(d.abs()));
        }
    }
    b.at_most("1e-6", worst as f64);
    // The scores (one n×m matrix a head) grow with h: h · n·m numbers.
    let scores = |h: usize| {
        let mha = MultiHeadAttention::new(32, h, &mut StdRng::seed_from_u64(4)).unwrap();
        mha.forward(&x, &x).unwrap().weights.len()
    };
    let n = WORDS.len();
    b.claim(
        "$h \\cdot n m$ of each, do grow with $h$",
        [1, 2, 4, 8].iter().all(|&h| scores(h) == h * n * n),
    );
    // Quiz 1: 8 → 16 heads of a 512-wide layer: head width 32, same
    // parameters, twice the score matrices.
    let sixteen = MultiHeadAttention::new(512, 16, &mut StdRng::seed_from_u64(0)).unwrap();
    b.exact("16", sixteen.h() as f64).exact("32", sixteen.d_k() as f64);
    let count =
        |m: &MultiHeadAttention| m.weights().matrices().iter().map(|w| w.len()).sum::<usize>();
    assert_eq!(count(&sixteen), count(&base));
    assert_eq!(
        attn::multihead::multihead_flops(512, 512, 512, 16).unwrap(),
        attn::multihead::multihead_flops(512, 512, 512, 8).unwrap()
    );
    // Quiz 2: the wrong scale shrinks the scores by √8 ≈ 2.8.
    b.rounded("2.8", factor);
}
