//! Chapter 8 quotes the output of `cargo run --example ch08_cost`, which
//! reads the committed measurements in `book/data/`. These tests rebuild
//! every quoted block from the same files and the same functions, require
//! the chapter to quote it verbatim, and check the claims the prose makes
//! about the data: re-measuring changes the numbers, and a claim that no
//! longer holds fails here until the prose is updated.

use attn::complexity::{
    attention_flops, block_crossover_length, crossover_length, feed_forward_flops,
    projection_flops, scores_bytes,
};
use report::measurements::{
    cost_table, data_file, exponent_of, lookup, millis, naive_memory_table, read_measurements,
    timing_table,
};
use report::provenance::Provenance;

mod common;

use report::numbers::Bindings;

const CHAPTER: &str = "ch08-cost-of-attention.md";
const MIB: f64 = 1024.0 * 1024.0;

fn cost_model_block(b: &mut Bindings) {
    b.quoted(&format!(
        "```text\n{}\ncrossover at n = 2·d_model = {}; scores at n = 65,536: {} GiB\n```",
        cost_table(&[128, 512, 1024, 4096, 65_536], 512),
        crossover_length(512),
        scores_bytes(65_536) / (1u64 << 30) as f64
    ));
    // Per head; 8 heads held at once need 128 GiB.
    b.exact("128", 8.0 * scores_bytes(65_536) / (1u64 << 30) as f64);
    // The cost formulas' constants, tested against the crate's functions.
    let (n, d) = (1000u64, 64u64);
    assert_eq!(projection_flops(n, d), (8 * n * d * d) as f64);
    assert_eq!(attention_flops(n, d), (4 * n * n * d) as f64);
    b.exact("8", projection_flops(n, d) / (n * d * d) as f64)
        .exact("4", attention_flops(n, d) / (n * n * d) as f64);
    // Figure 8.1's slopes on a log-log scale: 1 and 2.
    b.claim(
        "The projection line rises with slope 1",
        projection_flops(2 * n, d) == 2.0 * projection_flops(n, d)
            && attention_flops(2 * n, d) == 4.0 * attention_flops(n, d),
    );
    // The whole block: with d_ff = 4d the FFN adds 16nd², the linear term is
    // 24nd², and the crossover is at n = 6d, 3072 at d_model = 512.
    let ffn = feed_forward_flops(n, d, 4 * d);
    b.exact("16", ffn / (n * d * d) as f64)
        .exact("24", (ffn + projection_flops(n, d)) / (n * d * d) as f64)
        .exact("3072", block_crossover_length(512, 4 * 512));
    let m = block_crossover_length(512, 2048) as u64;
    assert_eq!(
        feed_forward_flops(m, 512, 2048) + projection_flops(m, 512),
        attention_flops(m, 512)
    );
}

fn timing_block_and_figure_7_2(b: &mut Bindings) {
    let csv = data_file("ch08-timings.csv").unwrap();
    let t = read_measurements(&csv, "function", "mean_ns").unwrap();
    let header = csv.lines().next().unwrap();
    let p = Provenance::parse("ch08-timings.csv", &csv).unwrap();
    assert_eq!(p.cpu, "Intel(R) Xeon(R) Processor", "the chapter names the processor");
    b.fact("2026-11-24", &p.date);
    let lengths = [128, 256, 512, 1024, 2048, 4096];
    b.quoted(&format!(
        "{header}\n{}\n```",
        timing_table(&t, &["naive", "naive_causal"], &lengths).unwrap()
    ));
    let mut block = String::new();
    for method in ["naive", "naive_causal"] {
        let b = exponent_of(&t, method, &[512, 1024, 2048, 4096]).unwrap();
        block += &format!("{method}: time ∝ n^{b:.2} over n = 512 … 4096\n");
        assert!((b - 2.0).abs() < 0.15, "{method}: exponent {b}");
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
    // Alt text: they reach about 72 and 78 ms at 4096.
    b.rounded("72", ms("naive", 4096)).rounded("78", ms("naive_causal", 4096));
    b.exact("64", 64).exact("8", 512 / 64);
    // "its cost grows with the square of the sequence length".
    let quadratic = ["naive", "naive_causal"]
        .iter()
        .all(|m| (exponent_of(&t, m, &[512, 1024, 2048, 4096]).unwrap() - 2.0).abs() < 0.15);
    b.claim("so its cost grows with the", quadratic);
    b.rounded("2.05", exponent_of(&t, "naive", &[512, 1024, 2048, 4096]).unwrap());
    // The next chapter "halves the causal time": tiled causal against
    // chapter 6's masked attention at the longest length.
    b.claim(
        "halves the causal time",
        (0.4..0.6).contains(&(ms("tiled_causal", 4096) / ms("naive_causal", 4096))),
    );
}

fn memory_block(b: &mut Bindings) {
    let csv = data_file("ch08-memory.csv").unwrap();
    let peaks = read_measurements(&csv, "method", "peak_bytes").unwrap();
    b.quoted(&format!("```text\n{}\n```", naive_memory_table(&peaks)));
    let mib = |n: u64| lookup(&peaks, "naive", n).unwrap() / MIB;
    // "to within about a kilobyte at every n", "0.00 MiB".
    let misses: Vec<f64> = [1024, 2048, 4096, 8192, 16_384]
        .iter()
        .map(|&n| lookup(&peaks, "naive", n).unwrap() - (4 * n * n + 2 * 4 * 64 * n) as f64)
        .collect();
    b.claim("to within about a kilobyte at every", misses.iter().all(|&m| m > 0.0 && m < 1100.0));
    for miss in &misses {
        b.rounded("0.00", miss / MIB);
    }
    // "the scores are 64 MiB of the 66", "a GiB" at 16,384.
    b.exact("64", scores_bytes(4096) / (1u64 << 20) as f64)
        .rounded("66", mib(4096))
        .exact("16,384", 16_384);
    assert_eq!(scores_bytes(16_384), (1u64 << 30) as f64, "a GiB of scores");
    let growth: Vec<f64> = (10..14).map(|p| mib(1 << (p + 1)) / mib(1 << p)).collect();
    b.rounded("3.8", growth[0]).rounded("4.0", growth[3]);
    b.claim("multiplies the peak by 3.8", growth.windows(2).all(|w| w[1] > w[0]));
    // Quiz 3: about 4.
    b.value("4", growth[3], 0.1);
    b.exact("8192", 8192).exact("1024", 1024);
}

/// Every number the chapter shows is bound: quoted output, or a value
/// registered here with its check, or exempt (`tests/common/numbers.rs`).
#[test]
fn every_number_is_bound() {
    let mut b = Bindings::new(CHAPTER);
    cost_model_block(&mut b);
    timing_block_and_figure_7_2(&mut b);
    memory_block(&mut b);
    // Exercise 1: the crossover for d_model = 4096 is 8192.
    b.exact("8192", crossover_length(4096)).exact("4096", 4096);
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
