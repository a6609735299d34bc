//! Chapter 8 quotes the output of `cargo run --example ch08_cost`, which
//! reads the committed measurements in `book/data/`. These tests rebuild
//! every quoted block from the same files and the same functions, require
//! the chapter to quote it verbatim, and check the claims the prose makes
//! about the data, section by section: re-measuring changes the numbers,
//! and a claim that no longer holds fails here until the prose is updated.

use attn::complexity::{
    attention_flops, block_crossover_length, crossover_length, feed_forward_flops,
    projection_flops, scores_bytes,
};
use report::ch08::{
    figure_lengths, processor_name, width_in_header, D_MODEL, EXERCISE_WIDTH, FF_RATIO, HEADS,
    REFERENCE_LENGTH,
};
use report::ch09::largest_tiled_difference;
use report::measurements::{
    cost_table, data_file, exponent_of, lookup, millis, naive_memory_table, read_measurements,
    timing_table, Measurement,
};
use report::provenance::Provenance;

mod common;

use report::numbers::Bindings;

const CHAPTER: &str = "ch08-cost-of-attention.md";
const MIB: f64 = 1024.0 * 1024.0;
const GIB: f64 = 1024.0 * MIB;

/// The benchmarks' head width `d`, as `checks/benches/attention.rs` sets it.
fn head_width() -> f64 {
    report::numbers::number_in_source("checks/benches/attention.rs", "D", "= ")
}

fn cost_model_and_figure_8_1(b: &mut Bindings) {
    b.section("The cost model");
    // The formulas' constants, tested against the crate's functions: four
    // projections of 2nd² FLOPs each, 8nd²; two products of 2n²d, 4n²d.
    let (n, d) = (1000u64, 64u64);
    assert_eq!(projection_flops(n, d), (8 * n * d * d) as f64);
    assert_eq!(attention_flops(n, d), (4 * n * n * d) as f64);
    b.exact("4", projection_flops(n, d) / (2 * n * d * d) as f64)
        .exact("8", projection_flops(n, d) / (n * d * d) as f64)
        .exact("4", attention_flops(n, d) / (n * n * d) as f64);
    b.exact("512", D_MODEL as f64);
    let longest = 65_536;
    b.quoted(&format!(
        "```text\n{}\ncrossover at n = 2·d_model = {}; scores at n = 65,536: {} GiB\n```",
        cost_table(&[128, 512, 1024, 4096, longest], D_MODEL),
        crossover_length(D_MODEL),
        scores_bytes(longest) / GIB
    ));
    // Figure 8.1: "from 64 to 65,536 at d_model = 512", "cross at n = 1024",
    // "At n = 65,536 attention needs 98% of the FLOPs".
    let lengths = figure_lengths();
    let (first, last) = (lengths[0], lengths[lengths.len() - 1]);
    assert_eq!(last, longest);
    let share = |n: u64| {
        let (p, a) = (projection_flops(n, D_MODEL), attention_flops(n, D_MODEL));
        100.0 * a / (p + a)
    };
    b.exact("64", first as f64)
        .exact("65,536", last as f64)
        .exact("512", D_MODEL as f64)
        .exact("1024", crossover_length(D_MODEL))
        .exact("65,536", last as f64)
        .rounded("98%", share(last));
    b.claim(
        "The projection line rises with slope 1",
        projection_flops(2 * n, d) == 2.0 * projection_flops(n, d)
            && attention_flops(2 * n, d) == 4.0 * attention_flops(n, d),
    );
    // The caption: "Up to n = 1024 the projections cost more", 98% at
    // 65,536, 16 GiB of scores per head, 128 GiB for a layer of 8 heads.
    b.exact("512", D_MODEL as f64)
        .exact("1024", crossover_length(D_MODEL))
        .exact("65,536", last as f64)
        .rounded("98%", share(last))
        .exact("16", scores_bytes(last) / GIB)
        .exact("8", HEADS as f64)
        .exact("128", HEADS as f64 * scores_bytes(last) / GIB);
}

fn whole_block(b: &mut Bindings) {
    b.section("The whole block");
    // With d_ff = 4d the FFN adds 4nd·d_ff = 16nd², the linear term is
    // 24nd², and the crossover is at n = 6d, 3072 at d_model = 512.
    let (n, d) = (1000u64, 64u64);
    let ffn = feed_forward_flops(n, d, FF_RATIO * d);
    b.exact("4", feed_forward_flops(n, d, 3 * d) / (n * d * 3 * d) as f64)
        .exact("4", FF_RATIO as f64)
        .exact("16", ffn / (n * d * d) as f64)
        .exact("24", (ffn + projection_flops(n, d)) / (n * d * d) as f64)
        .exact("4", attention_flops(n, d) / (n * n * d) as f64)
        .exact("3072", block_crossover_length(D_MODEL, FF_RATIO * D_MODEL))
        .exact("512", D_MODEL as f64);
    let m = block_crossover_length(D_MODEL, FF_RATIO * D_MODEL) as u64;
    assert_eq!(
        feed_forward_flops(m, D_MODEL, FF_RATIO * D_MODEL) + projection_flops(m, D_MODEL),
        attention_flops(m, D_MODEL)
    );
}

fn measured_time_and_figure_8_2(b: &mut Bindings) {
    b.section("Measured time");
    let csv = data_file("ch08-timings.csv").unwrap();
    let t = read_measurements(&csv, "function", "mean_ns").unwrap();
    let p = Provenance::parse("ch08-timings.csv", &csv).unwrap();
    let lengths: Vec<u64> = {
        let mut ns: Vec<u64> = t.iter().filter(|r| r.method == "naive").map(|r| r.n).collect();
        ns.sort_unstable();
        ns
    };
    let (shortest, longest) = (lengths[0], lengths[lengths.len() - 1]);
    // "d = 64 (one head of a 512-wide, 8-head model)", "n = 128, …, 4096".
    assert_eq!(D_MODEL as f64 / HEADS as f64, head_width(), "one head of the model");
    b.exact("64", head_width())
        .exact("512", D_MODEL as f64)
        .exact("8", HEADS as f64)
        .exact("128", shortest as f64)
        .exact("4096", longest as f64);
    // The chapter names this run's processor, and the appendix's, whose
    // timings it does not compare with its own.
    let ours = processor_name(&p.cpu);
    let appendix = Provenance::read("appendix-timings.csv").unwrap().0;
    let theirs = processor_name(&appendix.cpu);
    assert_ne!(appendix.run, p.run, "the appendix's run is another one");
    let page = std::fs::read_to_string(report::root().join("book").join(CHAPTER)).unwrap();
    let page = page.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(page.contains(&format!("measured on {} on an {ours} virtual", p.date)), "{ours}");
    assert!(page.contains(&format!("on another processor, an {theirs}, compares")), "{theirs}");
    assert!(page.contains(&format!("measures both limits on its {theirs}")), "{theirs}");
    b.fact("2026-11-24", &p.date);
    let header = csv.lines().next().unwrap();
    b.quoted(&format!(
        "{header}\n{}\n```",
        timing_table(&t, &["naive", "naive_causal"], &lengths).unwrap()
    ));
    let fitted = [512, 1024, 2048, 4096];
    let mut block = String::new();
    for method in ["naive", "naive_causal"] {
        let e = exponent_of(&t, method, &fitted).unwrap();
        block += &format!("{method}: time ∝ n^{e:.2} over n = 512 … 4096\n");
        assert!((e - 2.0).abs() < 0.15, "{method}: exponent {e}");
    }
    let ms = |m: &str, n: u64| millis(&t, m, n).unwrap();
    let causal = ms("naive_causal", 4096) / ms("naive", 4096);
    block += &format!("at n = 4096: naive_causal / naive = {causal:.2}\n```");
    b.quoted(&block);
    // "each doubling of n costs about four times the time".
    let doublings: Vec<f64> =
        [512, 1024, 2048].iter().map(|&n| ms("naive", 2 * n) / ms("naive", n)).collect();
    b.claim("about four times the time", doublings.iter().all(|r| (3.5..4.5).contains(r)));
    // "The causal mask saves nothing", "does not halve the time".
    b.claim("The causal mask saves nothing", causal > 0.95);
    b.claim("does not\nhalve the time", causal > 0.95);
    // Figure 8.2's alt text: from 128 to 4096, about 72 and 78 ms at 4096.
    b.exact("128", shortest as f64)
        .exact("4096", longest as f64)
        .rounded("72", ms("naive", longest))
        .rounded("78", ms("naive_causal", longest))
        .exact("4096", longest as f64);
    // The caption: d = 64; the dashed line passes through naive at 1024.
    b.exact("64", head_width()).exact("1024", REFERENCE_LENGTH as f64);
    assert!(lengths.contains(&REFERENCE_LENGTH));
    // "its cost grows with the square of the sequence length".
    let quadratic = ["naive", "naive_causal"]
        .iter()
        .all(|m| (exponent_of(&t, m, &fitted).unwrap() - 2.0).abs() < 0.15);
    b.claim("so its cost grows with the", quadratic);
}

fn naive_rows(peaks: &[Measurement]) -> Vec<u64> {
    let mut ns: Vec<u64> = peaks.iter().filter(|r| r.method == "naive").map(|r| r.n).collect();
    ns.sort_unstable();
    ns
}

fn measured_memory(b: &mut Bindings) {
    b.section("Measured memory");
    let csv = data_file("ch08-memory.csv").unwrap();
    let peaks = read_measurements(&csv, "method", "peak_bytes").unwrap();
    let p = Provenance::parse("ch08-memory.csv", &csv).unwrap();
    // "4(nm + n d_v + n d_k) bytes": an f32 is 4 bytes. "With m = n and
    // d = 64": the width the memory benchmark's header records.
    let d = width_in_header(&p.line).expect("the memory file's header names d") as f64;
    b.exact("4", std::mem::size_of::<f32>() as f64).exact("64", d);
    b.quoted(&format!("```text\n{}\n```", naive_memory_table(&peaks)));
    let ns = naive_rows(&peaks);
    let mib = |n: u64| lookup(&peaks, "naive", n).unwrap() / MIB;
    // "to within about a kilobyte at every n", "0.00 MiB".
    let misses: Vec<f64> = ns
        .iter()
        .map(|&n| lookup(&peaks, "naive", n).unwrap() - (4 * n * n + 2 * 4 * 64 * n) as f64)
        .collect();
    b.claim("to within about a kilobyte at every", misses.iter().all(|&m| m > 0.0 && m < 1100.0));
    let worst = misses.iter().copied().fold(0.0, f64::max);
    b.rounded("0.00", worst / MIB);
    // "At n = 4096 the scores are 64 MiB of the 66", "at n = 16,384 they
    // need a GiB, and we stopped there".
    // 4096 is the longest length the chapter times.
    let timed =
        read_measurements(&data_file("ch08-timings.csv").unwrap(), "function", "mean_ns").unwrap();
    let longest_timed = timed.iter().filter(|r| r.method == "naive").map(|r| r.n).max().unwrap();
    let largest = ns[ns.len() - 1];
    b.exact("4096", longest_timed as f64)
        .exact("64", scores_bytes(longest_timed) / MIB)
        .rounded("66", mib(longest_timed))
        .exact("16,384", largest as f64);
    assert_eq!(scores_bytes(largest), GIB, "a GiB of scores");
    let growth: Vec<f64> = ns.windows(2).map(|w| mib(w[1]) / mib(w[0])).collect();
    b.rounded("3.8", growth[0]).rounded("4.0", growth[growth.len() - 1]);
    b.claim("multiplies the peak by 3.8", growth.windows(2).all(|w| w[1] > w[0]));
}

fn what_to_take_away(b: &mut Bindings) {
    b.section("What to take away");
    // Chapter 9 computes "the same outputs to rounding (its test allows them
    // to differ by 10⁻⁵)": tiled attention against naive attention, with and
    // without the causal mask, on shapes below, at and across the tiles.
    let worst = largest_tiled_difference().unwrap();
    assert!(worst > 0.0, "rounding, not bit for bit");
    b.at_most("1e-5", worst as f64);
    // The next chapter "halves the causal time": tiled causal against
    // chapter 6's masked attention at the longest length.
    let t =
        read_measurements(&data_file("ch08-timings.csv").unwrap(), "function", "mean_ns").unwrap();
    let ms = |m: &str, n: u64| millis(&t, m, n).unwrap();
    b.claim(
        "halves the causal",
        (0.4..0.6).contains(&(ms("tiled_causal", 4096) / ms("naive_causal", 4096))),
    );
}

fn exercises(b: &mut Bindings) {
    b.section("Exercises");
    // Exercise 1: the crossover for d_model = 4096 is 8192; the test
    // `the_two_terms_add_up_to_the_layer_and_cross_at_2d` checks d = 4096.
    let n = crossover_length(EXERCISE_WIDTH);
    assert_eq!(
        projection_flops(n as u64, EXERCISE_WIDTH),
        attention_flops(n as u64, EXERCISE_WIDTH)
    );
    b.exact("4096", EXERCISE_WIDTH as f64).exact("8192", n).exact("4096", EXERCISE_WIDTH as f64);
}

fn quiz(b: &mut Bindings) {
    b.section("Quiz");
    // Quiz 1: at d_model = 512 the terms cross at n = 1024.
    b.exact("512", D_MODEL as f64)
        .exact("1024", crossover_length(D_MODEL))
        .exact("1024", crossover_length(D_MODEL));
    // Quiz 2: with d_ff = 4d, the block's crossover at 3072.
    let block = block_crossover_length(D_MODEL, FF_RATIO * D_MODEL);
    b.exact("512", D_MODEL as f64).exact("3072", block).exact("3072", block);
    // Quiz 3: doubling n multiplies the peak by about 4: 3.8 at n = 1024,
    // rising to 4.0 from n = 8192 to 16,384.
    let peaks =
        read_measurements(&data_file("ch08-memory.csv").unwrap(), "method", "peak_bytes").unwrap();
    let ns = naive_rows(&peaks);
    let mib = |n: u64| lookup(&peaks, "naive", n).unwrap() / MIB;
    let growth: Vec<f64> = ns.windows(2).map(|w| mib(w[1]) / mib(w[0])).collect();
    let last = growth.len() - 1;
    b.value("4", growth[last], 0.1)
        .rounded("3.8", growth[0])
        .exact("1024", ns[0] as f64)
        .rounded("4.0", growth[last])
        .exact("8192", ns[last] as f64)
        .exact("16,384", ns[last + 1] as f64);
}

/// Every number the chapter shows is bound: quoted output, or a value
/// registered here with its check, or exempt (`tests/common/numbers.rs`).
#[test]
fn every_number_is_bound() {
    let mut b = Bindings::new(CHAPTER);
    cost_model_and_figure_8_1(&mut b);
    whole_block(&mut b);
    measured_time_and_figure_8_2(&mut b);
    measured_memory(&mut b);
    what_to_take_away(&mut b);
    exercises(&mut b);
    quiz(&mut b);
    b.assert_all_bound();
}

#[test]
/// Chapter 8, exercise 2: the measured peak exceeds the prediction at every
/// n, by about a kilobyte at most (the product routine's buffers).
fn the_prediction_misses_the_measured_peak_by_about_a_kilobyte_at_most() {
    let memory =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/book/data/ch08-memory.csv"))
            .unwrap();
    let peaks = report::measurements::read_measurements(&memory, "method", "peak_bytes").unwrap();
    let naive: Vec<_> = peaks.iter().filter(|r| r.method == "naive").collect();
    assert!(naive.len() >= 5, "the memory benchmark's naive rows");
    for r in naive {
        let predicted = attn::exercises::ch08::naive_peak_bytes(r.n, r.n, 64, 64).unwrap();
        let miss = r.value - predicted as f64;
        assert!(miss > 0.0 && miss < 1100.0, "n = {}: measured minus predicted {miss}", r.n);
    }
}
