//! Chapter 1 quotes the output of `cargo run --example ch01_attention`; these
//! tests recompute each quoted block with the crate and require the chapter
//! to contain it verbatim, so the prose cannot drift from the code.

use attn::attention::{sentence_example, worked_example};
use attn::scaled_dot_product_attention;
use attn::show::matrix;
use attn::softmax::{naive_softmax, softmax};
use ndarray::{array, Array2};

mod common;

fn assert_quoted(block: &str) {
    common::assert_quoted("ch01-scaled-dot-product-attention.md", block);
}

#[test]
fn softmax_overflow_block() {
    let logits = array![1000.0_f32, -1000.0, 0.0];
    assert_quoted(&format!(
        "naive:  {}\nstable: {}\nexp overflows f32 above ln(f32::MAX) = {:.2}",
        naive_softmax(&logits),
        softmax(&logits),
        f32::MAX.ln()
    ));
    // The prose: "e^x overflows f32 once x passes ln(f32::MAX) ≈ 88.72".
    assert_quoted("$\\ln(\\text{f32::MAX}) \\approx 88.72$");
    assert!(88.72_f32.exp().is_finite() && 88.73_f32.exp().is_infinite());
}

#[test]
fn worked_example_block() {
    let (q, k, v) = worked_example();
    let a = scaled_dot_product_attention(&q, &k, &v).unwrap();
    let scores = q.dot(&k.t()) / 2.0;
    assert_quoted(&format!(
        "scores = QKᵀ/√d_k:\n{}\nweights:\n{}\noutput:\n{}",
        matrix(&scores, 4),
        matrix(&a.weights, 4),
        matrix(&a.output, 4)
    ));
    // The hand check, printed by the example and repeated in the prose.
    let e2 = std::f32::consts::E.powi(2);
    assert_quoted(&format!(
        "query 0: e²/(e²+3) = {e2:.3}/{:.3} = {:.4}",
        e2 + 3.0,
        e2 / (e2 + 3.0)
    ));
    assert_quoted("$e^2/(e^2+3) = 7.389/10.389 \\approx 0.7112$");
}

#[test]
fn shape_error_block() {
    let (_, _, v) = worked_example();
    let q = Array2::<f32>::zeros((3, 64));
    let k = Array2::<f32>::zeros((4, 32));
    let err = scaled_dot_product_attention(&q, &k, &v).unwrap_err();
    assert_quoted(&format!("```text\n{err}\n```"));
}

#[test]
fn sentence_block_and_caption_numbers() {
    let (_, x) = sentence_example();
    let a = scaled_dot_product_attention(&x, &x, &x).unwrap();
    assert_quoted(&format!("```text\n{}\n```", matrix(&a.weights, 2)));
    // Alt text: "cat" and "mat" put 0.41 on each other; the "the"s 0.37;
    // "sat" and "on" about 0.55 on themselves; the rest within 0.04..0.10.
    let w = |i: usize, j: usize| format!("{:.2}", a.weights[[i, j]]);
    assert_eq!(
        (w(1, 5), w(5, 1), w(0, 4)),
        ("0.41".into(), "0.41".into(), "0.37".into())
    );
    assert!((a.weights[[2, 2]] - 0.55).abs() < 0.01 && (a.weights[[3, 3]] - 0.55).abs() < 0.015);
    let big = [
        (0, 0),
        (0, 4),
        (1, 1),
        (1, 5),
        (2, 2),
        (3, 3),
        (4, 0),
        (4, 4),
        (5, 1),
        (5, 5),
    ];
    for ((i, j), &wij) in a.weights.indexed_iter() {
        if !big.contains(&(i, j)) {
            assert!((0.035..0.105).contains(&wij), "weight ({i}, {j}) = {wij}");
        }
    }
}
