//! Chapter 7 quotes the output of `cargo run --example ch07_complexity`,
//! which reads the committed measurements in `book/data/`. These tests
//! rebuild every quoted block from the same files and the same functions,
//! require the chapter to quote it verbatim, and check the claims the prose
//! makes about the data: re-measuring changes the numbers, and a claim that
//! no longer holds fails here until the prose is updated.

use attn::approximate::{error_experiment, error_table};
use attn::complexity::{
    attention_flops, blas_table, block_crossover_length, cost_table, crossover_length, exponent_of,
    feed_forward_flops, lookup, millis, projection_flops, read_measurements, scores_bytes,
    timing_table, Measurement, TIMED_METHODS,
};
use attn::multihead::multihead_flops;
use attn::scaled_dot_product_attention;
use attn::tiled::tiled_attention;
use ndarray::Array2;

mod common;

use common::numbers::Bindings;

const CHAPTER: &str = "ch07-complexity.md";

fn data(name: &str) -> String {
    let path = format!("{}/book/data/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn timings() -> Vec<Measurement> {
    read_measurements(&data("ch07-timings.csv"), "function", "mean_ns").unwrap()
}

const MIB: f64 = 1024.0 * 1024.0;

fn cost_model_block(b: &mut Bindings) {
    b.quoted(&format!(
        "```text\n{}\ncrossover at n = 2·d_model = {}; scores at n = 65,536: {} GiB\n```",
        cost_table(&[128, 512, 1024, 4096, 65_536], 512),
        crossover_length(512),
        scores_bytes(65_536) >> 30
    ));
    // Per head; 8 heads held at once need 128 GiB.
    b.exact("128", ((8 * scores_bytes(65_536)) >> 30) as f64);
    // The cost formulas' constants, tested against the crate's functions.
    let (n, d) = (1000u64, 64u64);
    assert_eq!(projection_flops(n, d), 8 * n * d * d);
    assert_eq!(attention_flops(n, d), 4 * n * n * d);
    b.exact("8", (projection_flops(n, d) / (n * d * d)) as f64)
        .exact("4", (attention_flops(n, d) / (n * n * d)) as f64);
    // Figure 7.1's slopes on a log-log scale: 1 and 2.
    b.claim(
        "The projection line rises with slope 1",
        projection_flops(2 * n, d) == 2 * projection_flops(n, d)
            && attention_flops(2 * n, d) == 4 * attention_flops(n, d),
    );
    // The whole block: with d_ff = 4d the FFN adds 16nd², the linear term is
    // 24nd², and the crossover is at n = 6d, 3072 at d_model = 512.
    let ffn = feed_forward_flops(n, d, 4 * d);
    b.exact("16", (ffn / (n * d * d)) as f64)
        .exact("24", ((ffn + projection_flops(n, d)) / (n * d * d)) as f64)
        .exact("3072", block_crossover_length(512, 4 * 512) as f64);
    let m = block_crossover_length(512, 2048);
    assert_eq!(
        feed_forward_flops(m, 512, 2048) + projection_flops(m, 512),
        attention_flops(m, 512)
    );
}

fn timing_block_exponents_and_figure_7_2(b: &mut Bindings) {
    let t = timings();
    let header = data("ch07-timings.csv").lines().next().unwrap().to_string();
    assert!(
        header.starts_with("# measured 2026-11-21 on AMD EPYC"),
        "the chapter dates the data: {header}"
    );
    let lengths = [128, 256, 512, 1024, 2048, 4096];
    b.quoted(&format!(
        "{header}\n{}\n```",
        timing_table(&t, &TIMED_METHODS, &lengths).unwrap()
    ));
    let mut block = String::new();
    for method in ["naive", "tiled", "local_causal", "linear_causal"] {
        let b = exponent_of(&t, method, &[512, 1024, 2048, 4096]).unwrap();
        block += &format!("{method}: time ∝ n^{b:.2} over n = 512 … 4096\n");
        let expected = if method.starts_with('l') { 1.0 } else { 2.0 };
        assert!((b - expected).abs() < 0.15, "{method}: exponent {b}");
    }
    b.quoted(&block);
    // Figure 7.2 and the list below the error table: the causal
    // approximations against exact causal (tiled causal) attention.
    let ms = |m: &str, n: u64| millis(&t, m, n).unwrap();
    let ratio = |m: &str, n: u64| ms(m, n) / ms("tiled_causal", n);
    b.rounded("0.94", ratio("local_causal", 1024))
        .rounded("1.29", ratio("linear_causal", 1024))
        .rounded("0.31", ratio("local_causal", 4096))
        .rounded("0.40", ratio("linear_causal", 4096))
        .rounded("3.3", 1.0 / ratio("local_causal", 4096))
        .rounded("2.5", 1.0 / ratio("linear_causal", 4096));
    b.claim(
        "3.3 and 2.5 times faster",
        ratio("local_causal", 4096) < 1.0 && ratio("linear_causal", 4096) < 1.0,
    );
    b.claim(
        "attention (tiled causal, Figure 7.2), at $n = 1024$ local attention is",
        ratio("local_causal", 1024) > 0.9 && ratio("linear_causal", 1024) > 1.0,
    );
    b.claim(
        "linear attention slower",
        ratio("linear_causal", 1024) > 1.0,
    );
    b.claim(
        "about as fast and linear attention slower",
        ratio("linear_causal", 1024) > 1.0,
    );
    b.rounded("0.53", ms("tiled_causal", 4096) / ms("tiled", 4096));
    // Figure 7.2's alt text: the approximations reach 11 and 14 ms at 4096.
    b.rounded("11", ms("local_causal", 4096))
        .rounded("14", ms("linear_causal", 4096));
    b.value("70", ms("naive", 4096), 5.0)
        .value("70", ms("tiled", 4096), 5.0);
    b.exact("8", 512.0 / 64.0);
    // "its cost grows with the square of the sequence length" and "memory
    // grows linearly": the fitted exponents and the memory table below.
    let quadratic = ["naive", "tiled"]
        .iter()
        .all(|m| (exponent_of(&t, m, &[512, 1024, 2048, 4096]).unwrap() - 2.0).abs() < 0.15);
    b.claim("so its cost grows with the", quadratic);
}

fn numpy_block_and_the_speed_targets(b: &mut Bindings) {
    let t = timings();
    let numpy_csv = data("ch07-numpy.csv");
    let numpy = read_measurements(&numpy_csv, "version", "seconds").unwrap();
    let np = |v: &str, n| lookup(&numpy, v, n).unwrap() * 1e3;
    let mut block = format!(
        "{}\n   n  NumPy (f64 by accident)  NumPy f32  naive  tiled  tiled causal\n",
        numpy_csv.lines().next().unwrap()
    );
    let (mut factors, mut at_most) = (Vec::new(), true);
    for n in [1024, 2048, 4096] {
        block += &format!(
            "{n}  {:>23.2}  {:>9.2}  {:>5.2}  {:>5.2}  {:>12.2}\n",
            np("numpy_tutorial", n),
            np("numpy_f32", n),
            millis(&t, "naive", n).unwrap(),
            millis(&t, "tiled", n).unwrap(),
            millis(&t, "tiled_causal", n).unwrap()
        );
        // The speed claims, as the chapter states them.
        assert!(
            millis(&t, "naive", n).unwrap() <= np("numpy_f32", n),
            "naive slower than NumPy at {n}"
        );
        factors.push(np("numpy_tutorial", n) / np("numpy_f32", n));
        at_most &= millis(&t, "naive", n).unwrap() <= np("numpy_f32", n);
    }
    let lo = factors.iter().cloned().fold(f64::INFINITY, f64::min);
    let hi = factors.iter().cloned().fold(0.0, f64::max);
    b.rounded("1.9", lo)
        .rounded("2.2", hi)
        .value("2", lo, 0.5)
        .value("2", hi, 0.5);
    b.claim("its time is at most", at_most);
    let tiled_ratio = millis(&t, "tiled", 4096).unwrap() / millis(&t, "naive", 4096).unwrap();
    let causal_ratio =
        millis(&t, "tiled_causal", 4096).unwrap() / millis(&t, "naive_causal", 4096).unwrap();
    assert!(tiled_ratio <= 1.5 && causal_ratio < 1.0);
    b.rounded("0.91", tiled_ratio);
    block += &format!(
        "at n = 4096: tiled / naive = {tiled_ratio:.2}, tiled causal / naive causal = {causal_ratio:.2}"
    );
    b.quoted(&block);
}

fn exp_and_multihead_lines(b: &mut Bindings) {
    let t = timings();
    let per = |f| lookup(&t, f, 1 << 20).unwrap() / (1 << 20) as f64;
    let (std_exp, fast) = (per("std_exp"), per("exp_nonpositive"));
    b.quoted(&format!(
        "exp per element: f32::exp {std_exp:.2} ns, exp_nonpositive {fast:.2} ns"
    ));
    // "16.8 million exponentials: about 43 ms ... more than half of the 73 ms".
    let exps = 4096.0 * 4096.0;
    b.rounded("16.8", exps / 1e6)
        .rounded("43", exps * std_exp / 1e6)
        .rounded("73", millis(&t, "naive", 4096).unwrap());
    assert!(exps * std_exp / 1e6 > 0.5 * millis(&t, "naive", 4096).unwrap());
    let (layer, matmul) = (
        lookup(&t, "multihead", 512).unwrap(),
        lookup(&t, "matmul_512", 512).unwrap(),
    );
    let flops = multihead_flops(512, 512, 512, 8).unwrap() as f64;
    b.quoted(&format!(
        "layer: {:.2} ms, {:.0} GFLOP/s; a 512×512 by 512×512 product: {:.3} ms, {:.0} GFLOP/s",
        layer / 1e6,
        flops / layer,
        matmul / 1e6,
        2.0 * 512f64.powi(3) / matmul
    ));
    b.rounded("1.61", flops / 1e9)
        .rounded(
            "80%",
            100.0 * (flops / layer) / (2.0 * 512f64.powi(3) / matmul),
        )
        .rounded("94", 2.0 * 512f64.powi(3) / matmul)
        .rounded("75", flops / layer);
}

fn memory_block_and_figure_7_3(b: &mut Bindings) {
    let csv = data("ch07-memory.csv");
    let peak = read_measurements(&csv, "method", "peak_bytes").unwrap();
    let seconds = read_measurements(&csv, "method", "seconds").unwrap();
    let mib = |m: &str, n: u64| lookup(&peak, m, n).map(|b| b / MIB);
    let show = |x: Option<f64>| x.map_or("–".to_string(), |v| format!("{v:.2}"));
    let mut block =
        String::from("    n  naive (MiB)  tiled (MiB)  tiled beyond its output (KiB)\n");
    for p in 10..=16 {
        let n = 1u64 << p;
        let output = (4 * n * 64) as f64 / MIB;
        let beyond = mib("tiled", n).map(|t| (t - output) * 1024.0);
        block += &format!(
            "{n:>5}  {:>11}  {:>11}  {:>29}\n",
            show(mib("naive", n)),
            show(mib("tiled", n)),
            show(beyond)
        );
        // "plus a constant 289 KiB": the scratch does not depend on n.
        assert_eq!(show(beyond), "289.00");
        b.rounded("289", beyond.unwrap());
        // Naive: scores, output and the scaled Q, plus a constant 0.12 MiB.
        if let Some(naive) = mib("naive", n) {
            let counted = (4 * n * n + 2 * 4 * 64 * n) as f64 / MIB;
            b.rounded("0.12", naive - counted);
        }
    }
    let (naive, tiled) = (mib("naive", 4096).unwrap(), mib("tiled", 4096).unwrap());
    let output = 1.0;
    block += &format!(
        "at n = 4096: tiled / naive = {:.1}% (beyond the output: {:.2}%)\n",
        100.0 * tiled / naive,
        100.0 * (tiled - output) / (naive - output)
    );
    block += &format!(
        "tiled at n = 65,536: {:.0} s, peak {:.1} MiB\n",
        lookup(&seconds, "tiled", 65_536).unwrap(),
        mib("tiled", 65_536).unwrap()
    );
    b.quoted(&block);
    assert!(100.0 * (tiled - output) / (naive - output) < 1.0);
    // Alt text: 4.6 → 1032 MiB, 0.53 → 16.3 MiB, and the growth per doubling.
    b.rounded("4.6", mib("naive", 1024).unwrap())
        .rounded("1032", mib("naive", 16_384).unwrap())
        .rounded("0.53", mib("tiled", 1024).unwrap())
        .rounded("16.3", mib("tiled", 65_536).unwrap());
    let growth = |m: &str, lo: u64, hi: u64| mib(m, hi).unwrap() / mib(m, lo).unwrap();
    let naive_growth: Vec<f64> = (10..14)
        .map(|p| growth("naive", 1 << p, 1 << (p + 1)))
        .collect();
    b.rounded("3.7", naive_growth[0])
        .rounded("4.0", naive_growth[3]);
    b.rounded("1.47", growth("tiled", 1024, 2048))
        .rounded("1.97", growth("tiled", 32_768, 65_536));
    b.claim(
        "Naive attention's peak grows 3.7 to 4.0 times",
        naive_growth.windows(2).all(|w| w[1] > w[0]),
    );
    b.claim(
        "Tiled attention's peak grows 1.47 times",
        (10..16).all(|p| growth("tiled", 1 << p, 1 << (p + 1)) > 1.0),
    );
    b.claim(
        "whose memory grows",
        (10..16).all(|p| (1.4..2.0).contains(&growth("tiled", 1 << p, 1 << (p + 1)))),
    );
}

fn error_table_and_figure_7_4(b: &mut Bindings) {
    let rows = error_experiment(1024, 7);
    b.quoted(&format!("```text\n{}\n```", error_table(&rows)));
    let (local, linear) = rows.split_at(rows.len() - 1);
    // Local: error falls as the window grows; near-exact on local inputs.
    assert!(local
        .windows(2)
        .all(|w| w[1].random < w[0].random && w[1].local < w[0].local));
    let below = local.iter().all(|r| r.local < 0.04);
    b.claim("it stays below 0.04 everywhere", below)
        .exact("0.04", 0.04);
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
        .at_least("100%", 100.0 * local[0].random);
    assert!(local[0].random > 1.0, "\"exceeds 100%\"");
    // Linear attention cannot make sharp weights: its similarity
    // φ(q)·φ(k) is a polynomial of degree 2 in the entries, not exp.
    b.claim("does not grow exponentially", linear[0].local > 0.9);
}

fn blas_table_and_its_claims(b: &mut Bindings) {
    let plain = timings();
    let blas_csv = data("ch07-timings-blas.csv");
    let blas = read_measurements(&blas_csv, "function", "mean_ns").unwrap();
    let numpy = read_measurements(&data("ch07-numpy.csv"), "version", "seconds").unwrap();
    let gflops =
        |rows: &[Measurement], f: &str, flops: f64| flops / (millis(rows, f, 512).unwrap() * 1e6);
    let layer = multihead_flops(512, 512, 512, 8).unwrap() as f64;
    let block = format!(
        "{}\n{}\nwith blas: layer {:.0} GFLOP/s, 512×512 by 512×512 product {:.0} GFLOP/s",
        blas_csv.lines().next().unwrap(),
        blas_table(&plain, &blas, &numpy, &[1024, 2048, 4096]).unwrap(),
        gflops(&blas, "multihead", layer),
        gflops(&blas, "matmul_512", 2.0 * 512f64.powi(3))
    );
    b.quoted(&block);
    // "every attention call gets a little faster, tiled attention most";
    // "faster than NumPy with or without it".
    let (mut tiled_gain, mut naive_gain) = (Vec::new(), Vec::new());
    let (mut blas_beats_numpy, mut naive_at_most) = (true, true);
    for n in [1024, 2048, 4096] {
        let gain = |m| millis(&plain, m, n).unwrap() / millis(&blas, m, n).unwrap();
        assert!(
            gain("naive") > 1.0 && gain("tiled") > gain("naive"),
            "n = {n}"
        );
        tiled_gain.push(gain("tiled"));
        naive_gain.push(gain("naive"));
        let numpy_ms = lookup(&numpy, "numpy_f32", n).unwrap() * 1e3;
        blas_beats_numpy &= ["naive", "tiled"]
            .iter()
            .all(|m| millis(&blas, m, n).unwrap() < numpy_ms);
        naive_at_most &= millis(&plain, "naive", n).unwrap() <= numpy_ms;
    }
    let range = |xs: &[f64]| {
        let lo = xs.iter().cloned().fold(f64::INFINITY, f64::min);
        (lo, xs.iter().cloned().fold(lo, f64::max))
    };
    let ((t_lo, t_hi), (n_lo, n_hi)) = (range(&tiled_gain), range(&naive_gain));
    b.rounded("1.21", t_lo)
        .rounded("1.23", t_hi)
        .rounded("1.08", n_lo)
        .rounded("1.15", n_hi);
    b.claim("1.21 to 1.23\ntimes faster", t_lo > n_hi);
    b.claim(
        "take less time than NumPy's",
        blas_beats_numpy && naive_at_most,
    );
    let numpy_1024 = lookup(&numpy, "numpy_f32", 1024).unwrap() * 1e3;
    assert_eq!(
        format!("{:.2}", millis(&plain, "tiled", 1024).unwrap()),
        format!("{numpy_1024:.2}"),
        "\"tiled attention ties it at n = 1024\""
    );
    b.rounded("104", gflops(&blas, "matmul_512", 2.0 * 512f64.powi(3)))
        .rounded("83", gflops(&blas, "multihead", layer));
    b.rounded("75", gflops(&plain, "multihead", layer));
}

/// Every number the chapter shows is bound: quoted output, or a value
/// registered here with its check, or exempt (`tests/common/numbers.rs`).
#[test]
fn every_number_is_bound() {
    let mut b = Bindings::new(CHAPTER);
    cost_model_block(&mut b);
    timing_block_exponents_and_figure_7_2(&mut b);
    numpy_block_and_the_speed_targets(&mut b);
    exp_and_multihead_lines(&mut b);
    memory_block_and_figure_7_3(&mut b);
    error_table_and_figure_7_4(&mut b);
    blas_table_and_its_claims(&mut b);
    bind_prose(&mut b);
    b.assert_all_bound();
}

/// Numbers of the prose, captions, alt text and quiz, each with its check.
fn bind_prose(b: &mut Bindings) {
    // The tiled snippet's tolerance: tiled equals naive to 10⁻⁵ on its input.
    let x = Array2::from_shape_fn((300, 16), |(i, j)| ((i * 7 + j * 3) % 11) as f32 / 11.0);
    let tiled = tiled_attention(&x, &x, &x, false).unwrap();
    let naive = scaled_dot_product_attention(&x, &x, &x).unwrap().output;
    let worst = (&tiled - &naive).fold(0.0_f32, |m, d| m.max(d.abs()));
    b.at_most("1e-5", worst as f64);
    // The tile: 128 KiB of scores (128 × 256 f32), and the online softmax's
    // exercise runs chunk sizes 1 to 8.
    b.exact(
        "128",
        (attn::tiled::QUERY_BLOCK * attn::tiled::KEY_BLOCK * 4 / 1024) as f64,
    );
}
