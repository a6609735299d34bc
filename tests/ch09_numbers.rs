//! Chapter 9 quotes the output of `cargo run --example ch09_efficient`,
//! which reads the committed measurements in `book/data/` and computes the
//! approximation errors. These tests rebuild every quoted block from the
//! same files and functions, require the chapter to quote it verbatim, and
//! check the claims the prose makes about the data, section by section.

use attn::approximate::{error_experiment, WINDOWS};
use attn::complexity::scores_bytes;
use attn::exercises::ch09::layers_to_reach_first_token;
use attn::tiled::{KEY_BLOCK, QUERY_BLOCK};
use report::ch08::{processor_name, width_in_header, REFERENCE_LENGTH};
use report::ch09::{
    error_table, largest_tiled_difference, ERROR_LENGTH, ERROR_SEED, EXERCISE_LENGTH,
    EXERCISE_WINDOW,
};
use report::measurements::{
    data_file, exponent_of, lookup, millis, read_measurements, tiled_memory_table, timing_table,
    Measurement, TIMED_METHODS,
};
use report::provenance::Provenance;

mod common;

use report::numbers::Bindings;

const CHAPTER: &str = "ch09-efficient-attention.md";
const MIB: f64 = 1024.0 * 1024.0;
const GIB: f64 = 1024.0 * MIB;

fn timings() -> Vec<Measurement> {
    read_measurements(&data_file("ch08-timings.csv").unwrap(), "function", "mean_ns").unwrap()
}

/// The lengths chapter 8's benchmark timed, shortest first.
fn timed_lengths() -> Vec<u64> {
    let mut ns: Vec<u64> = timings().iter().filter(|r| r.method == "naive").map(|r| r.n).collect();
    ns.sort_unstable();
    ns
}

/// The memory measurements: peak bytes and seconds, and the width `d`.
fn memory() -> (Vec<Measurement>, Vec<Measurement>, f64) {
    let csv = data_file("ch08-memory.csv").unwrap();
    let p = Provenance::parse("ch08-memory.csv", &csv).unwrap();
    let d = width_in_header(&p.line).expect("the memory file's header names d") as f64;
    let peak = read_measurements(&csv, "method", "peak_bytes").unwrap();
    let seconds = read_measurements(&csv, "method", "seconds").unwrap();
    (peak, seconds, d)
}

/// The lengths the memory benchmark measured `method` at, shortest first.
fn memory_lengths(peak: &[Measurement], method: &str) -> Vec<u64> {
    let mut ns: Vec<u64> = peak.iter().filter(|r| r.method == method).map(|r| r.n).collect();
    ns.sort_unstable();
    ns
}

fn exact_attention_in_linear_memory(b: &mut Bindings) {
    b.section("Exact attention in linear memory");
    // Naive attention's scores: 64 MiB at 4096 (the longest timed length),
    // 16 GiB at 65,536 (the longest length tiled attention was run at).
    let (peak, _, _) = memory();
    let n = *timed_lengths().last().unwrap();
    let longest = *memory_lengths(&peak, "tiled").last().unwrap();
    b.exact("64", scores_bytes(n) / MIB)
        .exact("4096", n as f64)
        .exact("16", scores_bytes(longest) / GIB)
        .exact("65,536", longest as f64);
    // The tile: 128 queries by 256 keys, 128 KiB of f32 scores.
    b.exact("128", QUERY_BLOCK as f64)
        .exact("256", KEY_BLOCK as f64)
        .exact("128", (QUERY_BLOCK * KEY_BLOCK * std::mem::size_of::<f32>() / 1024) as f64);
    // The test's tolerance, 10⁻⁵, bounds the difference from exact attention.
    b.at_most("1e-5", largest_tiled_difference().unwrap() as f64);
}

fn memory_block_and_figure_9_1(b: &mut Bindings) {
    b.section("Memory, measured");
    let (peak, seconds, d) = memory();
    b.exact("64", d);
    b.quoted(&tiled_memory_table(&peak, &seconds).unwrap());
    let mib = |m: &str, n: u64| lookup(&peak, m, n).map(|b| b / MIB);
    let tiled = memory_lengths(&peak, "tiled");
    let naive = memory_lengths(&peak, "naive");
    // "its output (n × 64 floats) plus a constant 289 KiB": the scratch
    // does not depend on n.
    let beyond: Vec<f64> = tiled
        .iter()
        .map(|&n| (lookup(&peak, "tiled", n).unwrap() - 4.0 * n as f64 * d) / 1024.0)
        .collect();
    assert!(beyond.windows(2).all(|w| w[0] == w[1]), "a constant: {beyond:?}");
    b.exact("64", d).rounded("289", beyond[0]);
    // "At n = 4096 the tiled peak is 1.9% of the naive one, and the part
    // beyond the output ... is 0.43%. At n = 65,536 the tiled version runs
    // in 19 seconds with a 16.3 MiB peak, where naive attention would need
    // 16 GiB for the scores alone."
    let n = *timed_lengths().last().unwrap();
    let output = 4.0 * n as f64 * d / MIB;
    let longest = *tiled.last().unwrap();
    b.exact("4096", n as f64)
        .rounded("1.9%", 100.0 * mib("tiled", n).unwrap() / mib("naive", n).unwrap())
        .rounded(
            "0.43%",
            100.0 * (mib("tiled", n).unwrap() - output) / (mib("naive", n).unwrap() - output),
        )
        .exact("65,536", longest as f64)
        .rounded("19", lookup(&seconds, "tiled", longest).unwrap())
        .rounded("16.3", mib("tiled", longest).unwrap())
        .exact("16", scores_bytes(longest) / GIB);
    // Figure 9.1's alt text: 3.8 to 4.0, 4.5 MiB at 1024 to 1032 MiB at
    // 16,384; 1.47 and 1.97, 0.53 to 16.3 MiB at 65,536.
    let growth = |m: &str, lo: u64| mib(m, 2 * lo).unwrap() / mib(m, lo).unwrap();
    let naive_growth: Vec<f64> =
        naive[..naive.len() - 1].iter().map(|&n| growth("naive", n)).collect();
    let tiled_growth: Vec<f64> =
        tiled[..tiled.len() - 1].iter().map(|&n| growth("tiled", n)).collect();
    let (first, last) = (naive[0], naive[naive.len() - 1]);
    b.rounded("3.8", naive_growth[0])
        .rounded("4.0", naive_growth[naive_growth.len() - 1])
        .rounded("4.5", mib("naive", first).unwrap())
        .exact("1024", first as f64)
        .rounded("1032", mib("naive", last).unwrap())
        .exact("16,384", last as f64)
        .rounded("1.47", tiled_growth[0])
        .rounded("1.97", tiled_growth[tiled_growth.len() - 1])
        .rounded("0.53", mib("tiled", tiled[0]).unwrap())
        .rounded("16.3", mib("tiled", longest).unwrap())
        .exact("65,536", longest as f64);
    b.claim(
        "Naive attention's peak grows 3.8 to 4.0 times",
        naive_growth.windows(2).all(|w| w[1] > w[0]),
    );
    b.claim("Tiled attention's peak grows 1.47 times", tiled_growth.iter().all(|&g| g > 1.0));
    // "in memory that grows linearly with n".
    b.claim("in memory that\ngrows linearly", tiled_growth.iter().all(|g| (1.4..2.0).contains(g)));
    // The caption: d = 64.
    b.exact("64", d);
}

fn approximations_and_figure_9_2(b: &mut Bindings) {
    b.section("Approximate attention: local and linear");
    let rows = error_experiment(ERROR_LENGTH, ERROR_SEED).unwrap();
    b.quoted(&format!("```text\n{}\n```", error_table(&rows)));
    let (local, linear) = rows.split_at(rows.len() - 1);
    assert_eq!(local.len(), WINDOWS.len());
    // Local: error falls as the window grows; near-exact on local inputs.
    assert!(local.windows(2).all(|w| w[1].random < w[0].random && w[1].local < w[0].local));
    let worst_local = local.iter().map(|r| r.local).fold(0.0, f64::max);
    b.claim("it stays below 0.04 everywhere", worst_local < 0.04);
    b.claim(
        "the error falls from 2.9 to 0.23",
        local.windows(2).all(|w| w[1].random < w[0].random),
    );
    // Figure 9.2's alt text.
    b.exact("16", WINDOWS[0] as f64)
        .exact("512", WINDOWS[WINDOWS.len() - 1] as f64)
        .rounded("2.9", local[0].random)
        .rounded("0.23", local[local.len() - 1].random)
        .at_most("0.04", worst_local)
        .rounded("0.68", linear[0].random)
        .rounded("0.99", linear[0].local);
    // The caption, and "spreads its weight over up to 1024 keys".
    b.exact("1024", ERROR_LENGTH as f64).exact("1024", ERROR_LENGTH as f64);
    // "A window of 16 averages 16 values ... the error exceeds 100% ... On
    // inputs whose attention is local, w = 16 is already within 3.5%".
    b.exact("16", WINDOWS[0] as f64)
        .exact("16", WINDOWS[0] as f64)
        .at_least("100%", 100.0 * local[0].random)
        .exact("16", WINDOWS[0] as f64)
        .rounded("3.5%", 100.0 * local[0].local)
        .rounded("68%", 100.0 * linear[0].random)
        .rounded("99%", 100.0 * linear[0].local);
    // Linear attention cannot make sharp weights: its similarity
    // φ(q)·φ(k) is a polynomial of degree 2 in the entries, not exp.
    b.claim("does not grow exponentially", linear[0].local > 0.9);
}

fn time_block_and_figure_9_3(b: &mut Bindings) {
    b.section("Time, measured");
    let csv = data_file("ch08-timings.csv").unwrap();
    let ours = Provenance::parse("ch08-timings.csv", &csv).unwrap();
    let (appendix, appendix_csv) = Provenance::read("appendix-timings.csv").unwrap();
    let t = timings();
    let lengths = timed_lengths();
    let (shortest, longest) = (lengths[0], lengths[lengths.len() - 1]);
    // The same run as chapter 8's, on the Intel Xeon; the appendix's run is
    // another, on another processor. The page names both.
    let page = std::fs::read_to_string(report::root().join("book").join(CHAPTER)).unwrap();
    let page = page.split_whitespace().collect::<Vec<_>>().join(" ");
    let (xeon, epyc) = (processor_name(&ours.cpu), processor_name(&appendix.cpu));
    assert_ne!(ours.run, appendix.run);
    assert!(page.contains(&format!("same run on the same {xeon}")), "{xeon}");
    assert!(page.contains(&format!("naive attention on this {xeon}")), "{xeon}");
    assert!(page.contains(&format!("in a run of its own on an {epyc}")), "{epyc}");
    // "at d = 64 on one thread", "local_causal uses w = 256".
    b.exact("64", bench("D")).exact("256", bench("WINDOW"));
    b.quoted(&format!("```text\n{}\n```", timing_table(&t, &TIMED_METHODS, &lengths).unwrap()));
    let ms = |m: &str, n: u64| millis(&t, m, n).unwrap();
    let fitted = [512, 1024, 2048, 4096];
    let exponent = |m: &str| exponent_of(&t, m, &fitted).unwrap();
    let mut block = String::new();
    for method in ["tiled", "tiled_causal", "local_causal", "linear_causal"] {
        block += &format!("{method}: time ∝ n^{:.2} over n = 512 … 4096\n", exponent(method));
    }
    block += &format!(
        "at n = 4096: tiled / naive = {:.2}, tiled causal / naive causal = {:.2}",
        ms("tiled", 4096) / ms("naive", 4096),
        ms("tiled_causal", 4096) / ms("naive_causal", 4096)
    );
    b.quoted(&block);
    // "Exact attention stays quadratic, tiled or not".
    b.claim(
        "Exact attention stays quadratic",
        exponent("tiled") > 1.9 && exponent("tiled_causal") > 1.7,
    );
    b.rounded("2.00", exponent("tiled")).rounded("1.84", exponent("tiled_causal"));
    // The causal saving at short and long lengths.
    let causal = |n| ms("tiled_causal", n) / ms("tiled", n);
    let short = fitted[0];
    b.rounded("0.73", causal(short))
        .exact("512", short as f64)
        .rounded("0.52", causal(longest))
        .exact("4096", longest as f64);
    b.claim("saving is smaller at short lengths", causal(short) > causal(longest));
    // Tiled against naive on this machine (1.00), and on the appendix's
    // (1.14): each figure with its own run, in sentences of their own.
    let here = ms("tiled", longest) / ms("naive", longest);
    b.exact("4096", longest as f64);
    b.from(&[&ours]).rounded("1.00", here);
    b.claim("tiled attention takes the same time as naive\nattention", (here - 1.0).abs() < 0.01);
    let there_rows = read_measurements(&appendix_csv, "function", "mean_ns").unwrap();
    let there = lookup(&there_rows, "tiled_1t", longest).unwrap()
        / lookup(&there_rows, "naive_1t", longest).unwrap();
    b.from(&[&appendix]).rounded("1.14", there);
    // Figures of two runs are not compared: the sentence that gives the
    // appendix's ratio names its processor and holds no figure of this run.
    let sentence = page.split(". ").find(|s| s.contains("at 1.14 times")).unwrap();
    assert!(sentence.contains(&epyc) && !sentence.contains("1.00") && !sentence.contains(&xeon));
    b.rounded("0.49", ms("tiled_causal", longest) / ms("naive_causal", longest));
    // The causal approximations against exact causal (tiled causal) attention.
    let ratio = |m: &str, n: u64| ms(m, n) / ms("tiled_causal", n);
    b.exact("512", short as f64)
        .rounded("1.22", ratio("local_causal", short))
        .rounded("1.31", ratio("linear_causal", short))
        .exact("1024", fitted[1] as f64)
        .rounded("0.87", ratio("local_causal", fitted[1]))
        .rounded("0.79", ratio("linear_causal", fitted[1]))
        .exact("4096", longest as f64)
        .rounded("0.28", ratio("local_causal", longest))
        .rounded("0.24", ratio("linear_causal", longest))
        .rounded("3.6", 1.0 / ratio("local_causal", longest))
        .rounded("4.2", 1.0 / ratio("linear_causal", longest));
    let both = |n: u64, faster: bool| {
        ["local_causal", "linear_causal"].iter().all(|m| (ratio(m, n) < 1.0) == faster)
    };
    let slower_then_faster = both(short, false) && fitted[1..].iter().all(|&n| both(n, true));
    b.claim("3.6 and 4.2 times\nfaster", both(longest, true));
    b.claim("take longer (1.22 and", both(short, false));
    b.claim("they already take less", both(fitted[1], true));
    b.claim("Both win on time only for long", slower_then_faster);
    b.claim("take longer at $n = 512$ and less from", slower_then_faster);
    // Figure 9.3's alt text: "from 128 to 4096 for six series", "about 72 ms
    // at n = 4096", "half their time from n = 2048", "between n = 512 and
    // 1024", "11 and 9 ms at n = 4096".
    assert_eq!(TIMED_METHODS.len(), 6, "six series");
    let half = |n| ms("tiled_causal", n) / ms("tiled", n);
    let halved_from = *lengths.iter().find(|&&n| (0.45..0.6).contains(&half(n))).unwrap();
    b.exact("128", shortest as f64)
        .exact("4096", longest as f64)
        .rounded("72", ms("naive", longest))
        .exact("4096", longest as f64)
        .exact("2048", halved_from as f64)
        .exact("512", short as f64)
        .exact("1024", fitted[1] as f64)
        .rounded("11", ms("local_causal", longest))
        .rounded("9", ms("linear_causal", longest))
        .exact("4096", longest as f64);
    assert_eq!(format!("{:.0}", ms("tiled", longest)), "72", "naive and tiled reach about 72");
    b.claim("drop below tiled causal attention between n = 512 and 1024", slower_then_faster);
    b.claim(
        "Tiled causal attention starts level with them and falls to about half their time from n = 2048",
        half(shortest) > 0.9 && lengths.iter().all(|&n| (n >= halved_from) == (0.45..0.6).contains(&half(n))),
    );
    b.claim(
        "Local and linear attention rise with slope about 1",
        (exponent("local_causal") - 1.0).abs() < 0.15
            && (exponent("linear_causal") - 1.0).abs() < 0.15,
    );
    // The caption: d = 64; the dashed line through naive at n = 1024; the
    // causal time 0.52 of the full tiled time at 4096; longer at 512, less
    // from 1024 on.
    b.exact("64", bench("D"))
        .exact("1024", REFERENCE_LENGTH as f64)
        .rounded("0.52", causal(longest))
        .exact("4096", longest as f64)
        .exact("512", short as f64)
        .exact("1024", fitted[1] as f64);
    // Quiz 3: against non-causal naive attention, local attention would
    // "look twice as good as it is".
    let naive_over_tiled_causal = ms("naive", longest) / ms("tiled_causal", longest);
    assert!((1.8..2.3).contains(&naive_over_tiled_causal));
}

fn exercises(b: &mut Bindings) {
    b.section("Exercises");
    // Exercise 3: w = 256 reaches back 255 a layer; position 4095 of a
    // 4096-token sequence needs ⌈4095 / 255⌉ = 17 layers.
    let (w, n) = (EXERCISE_WINDOW, EXERCISE_LENGTH);
    let layers = layers_to_reach_first_token(n, w).unwrap();
    assert_eq!(layers, (n - 1).div_ceil(w - 1));
    b.exact("256", w as f64)
        .exact("4096", n as f64)
        .exact("255", (w - 1) as f64)
        .exact("4095", (n - 1) as f64)
        .exact("4095", (n - 1) as f64)
        .exact("255", (w - 1) as f64)
        .exact("17", layers as f64);
}

fn quiz(b: &mut Bindings) {
    b.section("Quiz");
    // Quiz 2's answer: "this chapter measured 68% and 99% errors".
    let rows = error_experiment(ERROR_LENGTH, ERROR_SEED).unwrap();
    let linear = &rows[rows.len() - 1];
    b.rounded("68%", 100.0 * linear.random).rounded("99%", 100.0 * linear.local);
}

/// Every number the chapter shows is bound: quoted output, or a value
/// registered here with its check, or exempt (`tests/common/numbers.rs`).
#[test]
fn every_number_is_bound() {
    let mut b = Bindings::new(CHAPTER);
    exact_attention_in_linear_memory(&mut b);
    memory_block_and_figure_9_1(&mut b);
    approximations_and_figure_9_2(&mut b);
    time_block_and_figure_9_3(&mut b);
    exercises(&mut b);
    quiz(&mut b);
    b.assert_all_bound();
}

/// A constant of `checks/benches/attention.rs`: the shapes the committed timings
/// were measured at.
fn bench(name: &str) -> f64 {
    report::numbers::number_in_source("checks/benches/attention.rs", name, "= ")
}
