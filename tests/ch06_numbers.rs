//! Chapter 6 quotes the output of `cargo run --example ch06_masking`; these
//! tests recompute it, require the chapter to quote it verbatim, and check
//! the claims the prose and the figures' descriptions make.

use attn::cache::{
    cumulative_flops, decode_with_cache, flops_per_token_with_cache, flops_per_token_without_cache,
};
use attn::masking::{
    additive_mask, causal_mask, fully_masked_row, key_padding_mask, masked_attention, Padding,
};
use attn::scaled_dot_product_attention;
use attn::scaling::standard_normal;
use attn::softmax::softmax_rows;
use ndarray::{array, s, Array2};
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};
use report::show::matrix;

mod common;

use report::numbers::Bindings;

const CHAPTER: &str = "ch06-masking.md";

fn ones_and_zeros(keep: &Array2<bool>) -> Array2<f32> {
    keep.mapv(|k| if k { 1.0 } else { 0.0 })
}

fn the_two_forms_of_the_causal_mask(b: &mut Bindings) {
    let keep = causal_mask(5, 5);
    b.exact("5", keep.nrows() as f64);
    b.quoted(&format!(
        "```text\n{}\n{}\n```",
        matrix(&ones_and_zeros(&keep), 0),
        matrix(&additive_mask(&keep), 0)
    ));
}

fn minus_infinity_and_minus_1e9_on_a_fully_masked_row(b: &mut Bindings) {
    b.section("Why −∞ and not −1e9");
    let scores = array![3.0_f32, 40.0, -25.0, 100.0];
    let [stable, textbook, fill_1e9, add_1e9] = fully_masked_row(&scores).unwrap();
    b.exact("40", scores[1]).exact("-25", scores[2]).exact("100", scores[3]);
    let spacing = f32::from_bits(1e9_f32.to_bits() + 1) - 1e9;
    b.quoted(&format!(
        "fill -inf, stable softmax:    {}\nfill -inf, textbook softmax:  {}\n\
         fill -1e9:                    {}\nadd -1e9:                     {}\n\
         f32 numbers near 1e9 are {spacing} apart: 3 + (-1e9) = {}\n",
        matrix(&stable, 4),
        matrix(&textbook, 4),
        matrix(&fill_1e9, 4),
        matrix(&add_1e9, 4),
        3.0_f32 + -1e9
    ));
    // The prose: zeros, NaN, uniform, all weight on the largest score.
    assert!(stable.iter().all(|&w| w == 0.0));
    assert!(textbook.iter().all(|w| w.is_nan()));
    assert!(fill_1e9.iter().all(|&w| w == 0.25));
    assert_eq!(add_1e9[[0, 3]], 1.0);
    assert_eq!(spacing, 64.0);
    b.section("");
}

fn minus_1e9_with_large_scores(b: &mut Bindings) {
    let big = array![[3.0e9_f32, 2.5e9, 5.0e9]];
    let bias = additive_mask(&array![[true, true, false]]);
    let inf = softmax_rows(&(&big + &bias)).unwrap();
    let minus_1e9 = softmax_rows(&(&big + &bias.mapv(|b| b.max(-1e9)))).unwrap();
    b.quoted(&format!("add -inf:  {}\nadd -1e9:  {}\n", matrix(&inf, 4), matrix(&minus_1e9, 4)));
    assert_eq!(minus_1e9[[0, 2]], 1.0, "the masked key gets all the weight");
    assert_eq!(inf[[0, 2]], 0.0);
    b.exact("3e9", big[[0, 0]]).exact("2.5e9", big[[0, 1]]).exact("5e9", big[[0, 2]]);
    // "In f16, whose largest finite value is 65,504": (2 − 2⁻¹⁰)·2¹⁵, from
    // its 10 fraction bits and largest exponent 15.
    b.exact("65,504", (2.0 - 2f64.powi(-10)) * 2f64.powi(15));
}

fn padding_masks_and_the_zero_rows_of_padding_queries(b: &mut Bindings) {
    b.section("Padding");
    let right = key_padding_mask(5, 3, 5, Padding::Right).unwrap();
    // Figure 6.2's alt text: "rows and columns 2 to 4", the real tokens of
    // the left-padded row, the last of which is the row's last column.
    let left = key_padding_mask(5, 3, 5, Padding::Left).unwrap();
    b.exact("4", left.row(0).iter().rposition(|&k| k).unwrap() as f64);
    // "For 3 real tokens in a row of 5", also Figure 6.2's size.
    let real = right.row(0).iter().filter(|&&k| k).count();
    b.exact("5", right.ncols() as f64).exact("3", real as f64);
    let left_causal = key_padding_mask(5, 3, 5, Padding::Left).unwrap() & causal_mask(5, 5);
    b.quoted(&format!(
        "right padding, key-padding mask:\n{}\nleft padding and causal:\n{}\n",
        matrix(&ones_and_zeros(&right), 0),
        matrix(&ones_and_zeros(&left_causal), 0)
    ));
    let x = standard_normal(5, 4, &mut StdRng::seed_from_u64(5));
    let out = masked_attention(&x, &x, &x, &left_causal).unwrap().output;
    let padding_rows = out.slice(s![..2, ..]);
    assert!(padding_rows.iter().all(|&o| o == 0.0));
    b.quoted(&format!("output rows of the two padding queries:\n{}\n", matrix(&padding_rows, 4)));
    b.section("");
}

fn the_cache_reproduces_causal_attention(b: &mut Bindings) {
    b.section("The KV cache");
    let mut rng = StdRng::seed_from_u64(100);
    let (q, k, v) = (
        standard_normal(100, 16, &mut rng),
        standard_normal(100, 16, &mut rng),
        standard_normal(100, 16, &mut rng),
    );
    b.exact("100", q.nrows() as f64).exact("16", q.ncols() as f64);
    let full = masked_attention(&q, &k, &v, &causal_mask(100, 100)).unwrap().output;
    let incremental = decode_with_cache(&q, &k, &v).unwrap();
    let diff = (&full - &incremental).fold(0.0_f32, |m, &d| m.max(d.abs()));
    b.at_most("1e-6", diff as f64);
    b.quoted(&format!("largest difference from full causal attention: {diff:.1e}\n"));
    b.section("");
}

fn decode_cost_table_and_figure_description(b: &mut Bindings) {
    let (lengths, d) = (report::ch06::DECODE_LENGTHS, report::ch06::DECODE_WIDTH);
    b.quoted(&format!("```text\n{}\n```", report::ch06::decode_cost_table(&lengths, d).unwrap()));
    let longest = lengths[lengths.len() - 1];
    let without = cumulative_flops(longest, d, flops_per_token_without_cache).unwrap();
    let with = cumulative_flops(longest, d, flops_per_token_with_cache).unwrap();
    // Alt text: "about 6e13" and "about 2.6e10"; caption: "2504×".
    b.value("6e13", without, 0.5e13).rounded("2.6e10", with);
    assert_eq!(format!("{:.0}", without / with), "2504");
    b.exact("512", d as f64);
    let totals = |per_token| lengths.map(|n| cumulative_flops(n, d, per_token).unwrap());
    let (no_cache, cache) =
        (totals(flops_per_token_without_cache), totals(flops_per_token_with_cache));
    let rising = |xs: [f64; 4]| xs.windows(2).all(|w| w[1] > w[0]);
    b.claim(
        "The line without a cache rises steeply",
        rising(no_cache) && rising(cache) && no_cache[0] == cache[0],
    );
    b.quoted("it is\n2504× at 4096 tokens.");
}

/// Figure 6.1's weights (the example's seed and sizes): without and with
/// the causal mask, on the same random scores.
fn figure_6_1_weights() -> (Array2<f32>, Array2<f32>) {
    let mut rng = StdRng::seed_from_u64(55);
    let (q, k) = (standard_normal(6, 8, &mut rng), standard_normal(6, 8, &mut rng));
    let v = Array2::<f32>::eye(6);
    let unmasked = scaled_dot_product_attention(&q, &k, &v).unwrap().weights;
    let causal = masked_attention(&q, &k, &v, &causal_mask(6, 6)).unwrap().weights;
    (unmasked, causal)
}

#[test]
fn figure_6_1_claims() {
    let (unmasked, causal) = figure_6_1_weights();
    assert_eq!(causal[[0, 0]], 1.0, "\"The\" attends only to itself");
    assert_eq!(causal.row(5), unmasked.row(5), "the last row is unchanged");
    assert!(unmasked.iter().all(|&w| w > 0.0));
}

/// Every number the chapter shows is bound: quoted output, or a value
/// registered here with its check, or exempt (`tests/common/numbers.rs`).
#[test]
fn every_number_is_bound() {
    let mut b = Bindings::new(CHAPTER);
    the_two_forms_of_the_causal_mask(&mut b);
    minus_infinity_and_minus_1e9_on_a_fully_masked_row(&mut b);
    minus_1e9_with_large_scores(&mut b);
    padding_masks_and_the_zero_rows_of_padding_queries(&mut b);
    the_cache_reproduces_causal_attention(&mut b);
    decode_cost_table_and_figure_description(&mut b);
    bind_prose(&mut b);
    b.assert_all_bound();
}

/// Numbers of the prose, captions, alt text and quiz, each with its check.
fn bind_prose(b: &mut Bindings) {
    // The error message quoted for a 4×4 mask on 3×4 scores.
    let x = standard_normal(3, 2, &mut StdRng::seed_from_u64(0));
    let y = standard_normal(4, 2, &mut StdRng::seed_from_u64(1));
    let err = masked_attention(&x, &y, &y, &causal_mask(4, 4)).unwrap_err();
    b.quoted(&format!("\"{err}\""));
    // The property test's tolerance for row sums (10⁻⁵), measured on one
    // causal case.
    let mut rng = StdRng::seed_from_u64(7);
    let (q, k) = (standard_normal(6, 4, &mut rng), standard_normal(6, 4, &mut rng));
    let w = masked_attention(&q, &k, &k, &causal_mask(6, 6)).unwrap().weights;
    let worst_sum = w.rows().into_iter().map(|r| (r.sum() - 1.0).abs()).fold(0.0_f32, f32::max);
    b.at_most("1e-5", worst_sum as f64);
    // "compares them on 100 random problems"; "(to 10⁻⁶) as each sequence
    // run alone": the tests' own trial count and tolerance.
    let tests = "src/masking/tests.rs";
    b.section("Code: two forms of one mask").exact(
        "100",
        report::numbers::number_in_source(tests, "boolean_and_additive_masks_agree", "0.."),
    );
    b.section("Three properties").exact(
        "1e-6",
        report::numbers::number_in_source(
            tests,
            "a_padded_batch_matches_each_sequence_run_alone",
            "epsilon = ",
        ),
    );
    b.section("");
    // Figure 6.1: 6 by 6, the first row 1.00 on "The".
    let (_, causal) = figure_6_1_weights();
    b.exact("6", causal.nrows() as f64).rounded("1.00", causal[[0, 0]] as f64);
    // Σ t² = n(n+1)(2n+1)/6 and the projections 4·2d²: constants of the
    // closed forms that the crate's functions are tested against.
    let (n, d) = (10u64, 3u64);
    let sum_sq: u64 = (1..=n).map(|t| t * t).sum();
    b.exact("6", (n * (n + 1) * (2 * n + 1) / sum_sq) as f64);
    b.section("The KV cache");
    b.exact("4", (flops_per_token_with_cache(1, d) - 4.0 * d as f64) / (2 * d * d) as f64);
    b.section("");
    // Quiz 1: the causal mask for n = 4 keeps 10 entries, 1 + 2 + 3 + 4.
    let mask = causal_mask(4, 4);
    let kept = mask.iter().filter(|&&k| k).count();
    b.section("Quiz").exact("4", mask.nrows() as f64).exact("10", kept as f64);
    let per_query: Vec<usize> =
        mask.rows().into_iter().map(|r| r.iter().filter(|&&k| k).count()).collect();
    b.exact("3", per_query[2] as f64);
    // Quiz 3's answer: the −1e9 of the section on it, filled in.
    b.again("1e9");
    b.section("");
}
