//! Chapter 9 quotes the output of `cargo run --example ch09_efficient`,
//! which reads the committed measurements in `book/data/` and computes the
//! approximation errors. These tests rebuild every quoted block from the
//! same files and functions, require the chapter to quote it verbatim, and
//! check the claims the prose makes about the data.

use attn::approximate::error_experiment;
use attn::exercises::ch09::layers_to_reach_first_token;
use attn::scaled_dot_product_attention;
use attn::tiled::{tiled_attention, KEY_BLOCK, QUERY_BLOCK};
use ndarray::Array2;
use report::ch09::error_table;
use report::measurements::{
    data_file, exponent_of, lookup, millis, read_measurements, tiled_memory_table, timing_table,
    Measurement, TIMED_METHODS,
};

mod common;

use report::numbers::Bindings;

const CHAPTER: &str = "ch09-efficient-attention.md";
const MIB: f64 = 1024.0 * 1024.0;

fn timings() -> Vec<Measurement> {
    read_measurements(&data_file("ch08-timings.csv").unwrap(), "function", "mean_ns").unwrap()
}

fn tiled_section(b: &mut Bindings) {
    // The snippet's tolerance: tiled equals naive to 10⁻⁵ on its input.
    let x = Array2::from_shape_fn((300, 16), |(i, j)| ((i * 7 + j * 3) % 11) as f32 / 11.0);
    let tiled = tiled_attention(&x, &x, &x, false).unwrap();
    let naive = scaled_dot_product_attention(&x, &x, &x).unwrap().output;
    let worst = (&tiled - &naive).fold(0.0_f32, |m, d| m.max(d.abs()));
    b.at_most("1e-5", worst as f64);
    // The tile: 128 queries by 256 keys, 128 KiB of f32 scores.
    b.exact("128", QUERY_BLOCK as f64)
        .exact("256", KEY_BLOCK as f64)
        .exact("128", (QUERY_BLOCK * KEY_BLOCK * 4 / 1024) as f64);
    // Naive attention's scores: 64 MiB at 4096, 16 GiB at 65,536.
    b.exact("64", ((4 * 4096 * 4096) >> 20) as f64)
        .exact("16", ((4u64 * 65_536 * 65_536) >> 30) as f64)
        .exact("4096", 4096)
        .exact("65,536", 65_536);
}

fn memory_block_and_figure_8_1(b: &mut Bindings) {
    let csv = data_file("ch08-memory.csv").unwrap();
    let peak = read_measurements(&csv, "method", "peak_bytes").unwrap();
    let seconds = read_measurements(&csv, "method", "seconds").unwrap();
    b.quoted(&tiled_memory_table(&peak, &seconds).unwrap());
    let mib = |m: &str, n: u64| lookup(&peak, m, n).map(|b| b / MIB);
    for p in 10..=16 {
        let n = 1u64 << p;
        // "plus a constant 289 KiB": the scratch does not depend on n.
        let beyond = (lookup(&peak, "tiled", n).unwrap() - (4 * n * 64) as f64) / 1024.0;
        assert_eq!(format!("{beyond:.2}"), "289.00", "n = {n}");
        b.rounded("289", beyond);
    }
    b.exact("64", 64);
    // Alt text: 4.5 → 1032 MiB, 0.53 → 16.3 MiB, and the growth per doubling.
    b.rounded("4.5", mib("naive", 1024).unwrap())
        .rounded("1032", mib("naive", 16_384).unwrap())
        .rounded("0.53", mib("tiled", 1024).unwrap())
        .rounded("16.3", mib("tiled", 65_536).unwrap())
        .exact("16,384", 16_384);
    let growth = |m: &str, lo: u64| mib(m, 2 * lo).unwrap() / mib(m, lo).unwrap();
    let naive_growth: Vec<f64> = (10..14).map(|p| growth("naive", 1 << p)).collect();
    b.rounded("3.8", naive_growth[0]).rounded("4.0", naive_growth[3]);
    b.rounded("1.47", growth("tiled", 1024)).rounded("1.97", growth("tiled", 32_768));
    b.claim(
        "Naive attention's peak grows 3.8 to 4.0 times",
        naive_growth.windows(2).all(|w| w[1] > w[0]),
    );
    b.claim(
        "Tiled attention's peak grows 1.47 times",
        (10..16).all(|p| growth("tiled", 1 << p) > 1.0),
    );
    // "in memory that grows linearly with n".
    b.claim(
        "in memory that\ngrows linearly",
        (10..16).all(|p| (1.4..2.0).contains(&growth("tiled", 1 << p))),
    );
    b.rounded("19", lookup(&seconds, "tiled", 65_536).unwrap());
    b.rounded("1.9%", 100.0 * mib("tiled", 4096).unwrap() / mib("naive", 4096).unwrap());
    let output = 1.0; // MiB at n = 4096
    b.rounded(
        "0.43%",
        100.0 * (mib("tiled", 4096).unwrap() - output) / (mib("naive", 4096).unwrap() - output),
    );
}

fn error_table_and_figure_8_2(b: &mut Bindings) {
    let rows = error_experiment(1024, 7).unwrap();
    b.quoted(&format!("```text\n{}\n```", error_table(&rows)));
    let (local, linear) = rows.split_at(rows.len() - 1);
    // Local: error falls as the window grows; near-exact on local inputs.
    assert!(local.windows(2).all(|w| w[1].random < w[0].random && w[1].local < w[0].local));
    let below = local.iter().all(|r| r.local < 0.04);
    b.claim("it stays below 0.04 everywhere", below).exact("0.04", 0.04);
    b.claim(
        "the error falls from 2.9 to 0.23",
        local.windows(2).all(|w| w[1].random < w[0].random),
    );
    b.rounded("2.9", local[0].random)
        .rounded("0.23", local[local.len() - 1].random)
        .rounded("0.68", linear[0].random)
        .rounded("0.99", linear[0].local)
        .rounded("68%", 100.0 * linear[0].random)
        .rounded("99%", 100.0 * linear[0].local)
        .rounded("3.5%", 100.0 * local[0].local)
        .at_least("100%", 100.0 * local[0].random)
        .exact("1024", 1024)
        .exact("16", 16);
    assert!(local[0].random > 1.0, "\"exceeds 100%\"");
    // Linear attention cannot make sharp weights: its similarity
    // φ(q)·φ(k) is a polynomial of degree 2 in the entries, not exp.
    b.claim("does not grow exponentially", linear[0].local > 0.9);
}

fn timing_block_and_figure_8_3(b: &mut Bindings) {
    let t = timings();
    let lengths = [128, 256, 512, 1024, 2048, 4096];
    b.quoted(&format!("```text\n{}\n```", timing_table(&t, &TIMED_METHODS, &lengths).unwrap()));
    let ms = |m: &str, n: u64| millis(&t, m, n).unwrap();
    let exponent = |m: &str| exponent_of(&t, m, &[512, 1024, 2048, 4096]).unwrap();
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
    b.exact("256", 256);
    // "Exact attention stays quadratic, tiled or not".
    b.claim(
        "Exact attention stays quadratic",
        exponent("tiled") > 1.9 && exponent("tiled_causal") > 1.7,
    );
    b.rounded("2.00", exponent("tiled")).rounded("1.84", exponent("tiled_causal"));
    // The causal saving at short and long lengths.
    let causal = |n| ms("tiled_causal", n) / ms("tiled", n);
    b.rounded("0.73", causal(512)).rounded("0.52", causal(4096)).exact("512", 512);
    b.claim("saving is smaller at short lengths", causal(512) > causal(4096));
    b.rounded("1.00", ms("tiled", 4096) / ms("naive", 4096))
        .rounded("0.49", ms("tiled_causal", 4096) / ms("naive_causal", 4096));
    b.claim(
        "tiled attention takes the same time as naive\nattention",
        (ms("tiled", 4096) / ms("naive", 4096) - 1.0).abs() < 0.01,
    );
    // The causal approximations against exact causal (tiled causal) attention.
    let ratio = |m: &str, n: u64| ms(m, n) / ms("tiled_causal", n);
    b.rounded("1.22", ratio("local_causal", 512))
        .rounded("1.31", ratio("linear_causal", 512))
        .rounded("0.87", ratio("local_causal", 1024))
        .rounded("0.79", ratio("linear_causal", 1024))
        .rounded("0.28", ratio("local_causal", 4096))
        .rounded("0.24", ratio("linear_causal", 4096))
        .rounded("3.6", 1.0 / ratio("local_causal", 4096))
        .rounded("4.2", 1.0 / ratio("linear_causal", 4096));
    let both = |n: u64, faster: bool| {
        ["local_causal", "linear_causal"].iter().all(|m| (ratio(m, n) < 1.0) == faster)
    };
    let slower_then_faster = both(512, false) && [1024, 2048, 4096].iter().all(|&n| both(n, true));
    b.claim("3.6 and 4.2 times\nfaster", both(4096, true));
    b.claim("take longer (1.22 and", both(512, false));
    b.claim("they already take less", both(1024, true));
    b.claim("Both win on time only for long", slower_then_faster);
    b.claim("take longer at $n = 512$ and less from", slower_then_faster);
    // Figure 9.3's alt text.
    b.rounded("72", ms("naive", 4096))
        .rounded("72", ms("tiled", 4096))
        .rounded("11", ms("local_causal", 4096))
        .rounded("9", ms("linear_causal", 4096));
    b.claim("drop below tiled causal attention between n = 512 and 1024", slower_then_faster);
    let half = |n| ms("tiled_causal", n) / ms("tiled", n);
    b.claim(
        "Tiled causal attention starts level with them and falls to about half their time from n = 2048",
        half(128) > 0.9 && [2048, 4096].iter().all(|&n| (0.45..0.6).contains(&half(n))),
    );
    b.claim(
        "Local and linear attention rise with slope about 1",
        (exponent("local_causal") - 1.0).abs() < 0.15
            && (exponent("linear_causal") - 1.0).abs() < 0.15,
    );
    // Quiz 3: against non-causal naive attention, local attention would
    // "look twice as good as it is".
    let naive_over_tiled_causal = ms("naive", 4096) / ms("tiled_causal", 4096);
    assert!((1.8..2.3).contains(&naive_over_tiled_causal));
}

fn exercises(b: &mut Bindings) {
    // Exercise 1's test runs chunk sizes 1 to 8.
    b.exact("8", 8);
    // Exercise 3: w = 256 reaches back 255 a layer; position 4095 of 4096
    // needs 17 layers.
    b.exact("255", 255)
        .exact("4095", 4095)
        .exact("17", layers_to_reach_first_token(4096, 256).unwrap() as f64);
}

/// Every number the chapter shows is bound: quoted output, or a value
/// registered here with its check, or exempt (`tests/common/numbers.rs`).
#[test]
fn every_number_is_bound() {
    let mut b = Bindings::new(CHAPTER);
    tiled_section(&mut b);
    memory_block_and_figure_8_1(&mut b);
    error_table_and_figure_8_2(&mut b);
    timing_block_and_figure_8_3(&mut b);
    exercises(&mut b);
    b.assert_all_bound();
}
