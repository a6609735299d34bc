//! Chapter 2 quotes the output of `cargo run --example ch02_attention`; these
//! tests recompute each quoted block with the crate and require the chapter
//! to contain it verbatim, so the prose cannot drift from the code.

use attn::attention::{sentence_example, worked_example};
use attn::real::exp_nonpositive;
use attn::scaled_dot_product_attention;
use attn::softmax::{naive_softmax, softmax};
use ndarray::{array, Array2};
use report::show::matrix;

mod common;

use report::numbers::Bindings;

const CHAPTER: &str = "ch02-scaled-dot-product-attention.md";

fn softmax_overflow_block(b: &mut Bindings) {
    let logits = array![1000.0_f32, -1000.0, 0.0];
    b.quoted(&format!(
        "naive:  {}\nstable: {}\nexp overflows f32 above ln(f32::MAX) = {:.2}",
        naive_softmax(&logits),
        softmax(&logits).unwrap(),
        f32::MAX.ln()
    ));
    // The prose: "e^x overflows f32 once x passes ln(f32::MAX) ≈ 88.72".
    b.quoted("$\\ln(\\text{f32::MAX}) \\approx 88.72$");
    assert!(88.72_f32.exp().is_finite() && 88.73_f32.exp().is_infinite());
}

fn worked_example_block(b: &mut Bindings) {
    let (q, k, v) = worked_example();
    let a = scaled_dot_product_attention(&q, &k, &v).unwrap();
    let scores = q.dot(&k.t()) / 2.0;
    b.quoted(&format!(
        "scores = QKᵀ/√d_k:\n{}\nweights:\n{}\noutput:\n{}",
        matrix(&scores, 4),
        matrix(&a.weights, 4),
        matrix(&a.output, 4)
    ));
    // The hand check, printed by the example and repeated in the prose.
    let e2 = std::f32::consts::E.powi(2);
    b.quoted(&format!("query 0: e²/(e²+3) = {e2:.3}/{:.3} = {:.4}", e2 + 3.0, e2 / (e2 + 3.0)));
    b.quoted("$e^2/(e^2+3) = 7.389/10.389 \\approx 0.7112$");
}

fn shape_error_block(b: &mut Bindings) {
    let (_, _, v) = worked_example();
    let q = Array2::<f32>::zeros((3, 64));
    let k = Array2::<f32>::zeros((4, 32));
    let err = scaled_dot_product_attention(&q, &k, &v).unwrap_err();
    b.quoted(&format!("```text\n{err}\n```"));
}

fn sentence_block_and_caption_numbers(b: &mut Bindings) {
    let (_, x) = sentence_example();
    let a = scaled_dot_product_attention(&x, &x, &x).unwrap();
    b.quoted(&format!("```text\n{}\n```", matrix(&a.weights, 2)));
    // Alt text: "cat" and "mat" put 0.41 on each other; the "the"s 0.37;
    // "sat" and "on" about 0.55 on themselves; the rest within 0.04..0.10.
    let w = |i: usize, j: usize| format!("{:.2}", a.weights[[i, j]]);
    assert_eq!((w(1, 5), w(5, 1), w(0, 4)), ("0.41".into(), "0.41".into(), "0.37".into()));
    assert!((a.weights[[2, 2]] - 0.55).abs() < 0.01 && (a.weights[[3, 3]] - 0.55).abs() < 0.015);
    let big = [(0, 0), (0, 4), (1, 1), (1, 5), (2, 2), (3, 3), (4, 0), (4, 4), (5, 1), (5, 5)];
    for ((i, j), &wij) in a.weights.indexed_iter() {
        if !big.contains(&(i, j)) {
            assert!((0.035..0.105).contains(&wij), "weight ({i}, {j}) = {wij}");
        }
    }
}

/// Every number the chapter shows is bound: quoted output, or a value
/// registered here with its check, or exempt (`tests/common/numbers.rs`).
#[test]
fn every_number_is_bound() {
    let mut b = Bindings::new(CHAPTER);
    softmax_overflow_block(&mut b);
    worked_example_block(&mut b);
    shape_error_block(&mut b);
    sentence_block_and_caption_numbers(&mut b);
    bind_prose(&mut b);
    b.assert_all_bound();
}

/// Numbers of the prose, captions, alt text and quiz, each with its check.
fn bind_prose(b: &mut Bindings) {
    // "unscaled, at large d_k most queries receive almost no gradient, and a
    // few receive large ones": chapter 11's measurement, query by query.
    let queries = report::ch11::query_gradient_experiment().unwrap();
    let widest = &queries[queries.len() - 1];
    let norms = report::ch11::gradient_norm_experiment().unwrap();
    assert!(widest.unscaled.2 > 0.5, "most queries below {}", attn::grad::VANISHED);
    assert!(
        norms[norms.len() - 1].unscaled.1 > norms[0].unscaled.1,
        "a few large ones carry the mean"
    );
    // "agrees with f64's exponential to a relative 3·10⁻⁷ (tested)".
    let worst = (0..=200_000)
        .map(|i| {
            let x = -87.0 * i as f32 / 200_000.0;
            let exact = (x as f64).exp();
            ((exp_nonpositive(x) as f64 - exact) / exact).abs()
        })
        .fold(0.0, f64::max);
    b.at_most("3e-7", worst);
    // The logits [1000, −1000, 0] of the overflow block.
    b.section("A softmax that cannot overflow");
    let logits = report::ch02::OVERFLOW_LOGITS;
    b.exact("1000", logits[0]).exact("-1000", logits[1]);
    // Query 2's output is the mean of the values, [0.5, 0.5], and the test
    // pins the worked example to 10⁻⁶ of the closed forms.
    b.section("Run it: an example small enough to check by hand");
    let (q, k, v) = worked_example();
    let a = scaled_dot_product_attention(&q, &k, &v).unwrap();
    // "four keys of width d_k = 4"; "every weight is 1/4"; "[0.5, 0.5]".
    b.exact("4", q.ncols() as f64).exact("4", k.nrows() as f64);
    b.rounded("0.5", a.output[[2, 0]] as f64).rounded("0.5", a.output[[2, 1]] as f64);
    let e = std::f64::consts::E;
    let closed = [e * e / (e * e + 3.0), 1.0 / (e * e + 3.0), e / (2.0 + 2.0 * e), 0.25];
    let (w00, w01, w11, w20) =
        (a.weights[[0, 0]], a.weights[[0, 1]], a.weights[[1, 1]], a.weights[[2, 0]]);
    let worst = [w00, w01, w11, w20]
        .iter()
        .zip(closed)
        .map(|(&w, c)| (w as f64 - c).abs())
        .fold(0.0, f64::max);
    b.at_most("1e-6", worst);
    // Figure 2.1's alt text: a 6 by 6 matrix for a six-word sentence.
    b.section("A picture: self-attention on a sentence");
    let (words, x) = sentence_example();
    b.exact("6", words.len() as f64);
    assert_eq!(x.nrows(), 6);
    // Exercise 3: shifts up to ±100 move the stable softmax's weights by
    // less than the bound the text gives; at c = 100 the naive softmax
    // gives NaN.
    b.section("Exercises");
    let c = report::ch02::EXERCISE_SHIFT;
    let s = array![2.1_f32, 0.3, 1.7, -1.3, 0.25];
    let largest_gap = (-1000..=1000)
        .map(|step| attn::exercises::ch02::shift_gap(&s, step as f32 * c / 1000.0).unwrap())
        .fold(0.0_f32, f32::max);
    assert!(largest_gap > 0.0, "some shift rounds");
    b.at_most("1e-5", f64::from(largest_gap));
    b.exact("100", c);
    assert!(naive_softmax(&array![0.0_f32, 1.0].mapv(|x| x + c)).iter().all(|p| p.is_nan()));
    // Quiz 1: Q is 5×16, K 7×16, V 7×3; weights 5×7, output 5×3.
    let (q, k, v) = (Array2::zeros((5, 16)), Array2::zeros((7, 16)), Array2::zeros((7, 3)));
    let a = scaled_dot_product_attention(&q, &k, &v).unwrap();
    b.section("Quiz");
    b.exact("5", a.weights.nrows() as f64)
        .exact("7", a.weights.ncols() as f64)
        .exact("16", q.ncols() as f64)
        .exact("3", a.output.ncols() as f64);
    // Quiz 2: subtracting the maximum leaves the result as it was.
    let x = array![0.5_f32, -1.25, 2.0];
    let shifted = x.mapv(|v| v - 2.0);
    let same = softmax(&x)
        .unwrap()
        .iter()
        .zip(&softmax(&shifted).unwrap())
        .all(|(a, b)| (a - b).abs() < 1e-7);
    b.claim("without changing the result", same);
    b.section("");
}
