//! Chapter 7, Complexity and efficient attention: prints the cost model,
//! the measured timings and memory (read from `book/data/`, written by
//! `cargo xtask measure` and `tools/numpy_attention.py`), the approximation
//! errors, and draws the chapter's four figures. It measures nothing itself,
//! so its output and figures are the same on every run.
//!
//! ```text
//! cargo run --release --example ch07_complexity
//! ```

mod plot;

use attn::approximate::{error_experiment, error_table, ErrorRow, WINDOWS};
use attn::complexity::{
    attention_flops, blas_table, cost_table, crossover_length, exponent_of, lookup, millis,
    projection_flops, read_measurements, scores_bytes, timing_table, Measurement, TIMED_METHODS,
};
use attn::multihead::multihead_flops;
use attn::show::table;

const LENGTHS: [u64; 6] = [128, 256, 512, 1024, 2048, 4096];
const D_MODEL: u64 = 512;
const MIB: f64 = 1024.0 * 1024.0;

/// A measurement file of `book/data/`.
fn data(name: &str) -> String {
    let path = format!("{}/book/data/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{path}: {e} (run `cargo xtask measure`)"))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("== Cost model, d_model = {D_MODEL} (GFLOP) ==");
    println!("{}", cost_table(&[128, 512, 1024, 4096, 65_536], D_MODEL));
    println!(
        "crossover at n = 2·d_model = {}; scores at n = 65,536: {} GiB",
        crossover_length(D_MODEL),
        scores_bytes(65_536) >> 30
    );

    let timings = read_measurements(&data("ch07-timings.csv"), "function", "mean_ns")?;
    let header = data("ch07-timings.csv")
        .lines()
        .next()
        .unwrap_or("")
        .to_string();
    println!("\n== Measured, d = 64, one thread (ms) ==\n{header}");
    println!("{}", timing_table(&timings, &TIMED_METHODS, &LENGTHS)?);
    // The table has just checked that every measurement read below is present.
    let ms = |method: &str, n: u64| millis(&timings, method, n).expect("measured");
    for method in ["naive", "tiled", "local_causal", "linear_causal"] {
        let b = exponent_of(&timings, method, &[512, 1024, 2048, 4096])?;
        println!("{method}: time ∝ n^{b:.2} over n = 512 … 4096");
    }

    println!("\n== Against NumPy, d = 64, one thread (ms) ==");
    let numpy_csv = data("ch07-numpy.csv");
    let numpy = read_measurements(&numpy_csv, "version", "seconds")?;
    println!("{}", numpy_csv.lines().next().unwrap_or(""));
    let np = |version: &str, n: u64| lookup(&numpy, version, n).map_or(f64::NAN, |s| s * 1e3);
    let rows: Vec<Vec<String>> = [1024, 2048, 4096]
        .iter()
        .map(|&n| {
            vec![
                n.to_string(),
                format!("{:.2}", np("numpy_tutorial", n)),
                format!("{:.2}", np("numpy_f32", n)),
                format!("{:.2}", ms("naive", n)),
                format!("{:.2}", ms("tiled", n)),
                format!("{:.2}", ms("tiled_causal", n)),
            ]
        })
        .collect();
    let header = [
        "n",
        "NumPy (f64 by accident)",
        "NumPy f32",
        "naive",
        "tiled",
        "tiled causal",
    ];
    println!("{}", table(&header, &rows));
    println!(
        "at n = 4096: tiled / naive = {:.2}, tiled causal / naive causal = {:.2}",
        ms("tiled", 4096) / ms("naive", 4096),
        ms("tiled_causal", 4096) / ms("naive_causal", 4096)
    );

    println!("\n== Peak memory of one call, d = 64 ==");
    let memory = read_measurements(&data("ch07-memory.csv"), "method", "peak_bytes")?;
    let seconds = read_measurements(&data("ch07-memory.csv"), "method", "seconds")?;
    let mib = |method: &str, n: u64| lookup(&memory, method, n).map(|b| b / MIB);
    let show = |x: Option<f64>| x.map_or("–".to_string(), |v| format!("{v:.2}"));
    let rows: Vec<Vec<String>> = (10..=16)
        .map(|p| {
            let n = 1u64 << p;
            let output = (4 * n * 64) as f64 / MIB;
            vec![
                n.to_string(),
                show(mib("naive", n)),
                show(mib("tiled", n)),
                show(mib("tiled", n).map(|t| (t - output) * 1024.0)),
            ]
        })
        .collect();
    println!(
        "{}",
        table(
            &[
                "n",
                "naive (MiB)",
                "tiled (MiB)",
                "tiled beyond its output (KiB)"
            ],
            &rows
        )
    );
    let (naive, tiled) = (
        mib("naive", 4096).unwrap_or(f64::NAN),
        mib("tiled", 4096).unwrap_or(f64::NAN),
    );
    let output = (4 * 4096 * 64) as f64 / MIB;
    println!(
        "at n = 4096: tiled / naive = {:.1}% (beyond the output: {:.2}%)",
        100.0 * tiled / naive,
        100.0 * (tiled - output) / (naive - output)
    );
    println!(
        "tiled at n = 65,536: {:.0} s, peak {:.1} MiB",
        lookup(&seconds, "tiled", 65_536).unwrap_or(f64::NAN),
        mib("tiled", 65_536).unwrap_or(f64::NAN)
    );

    println!("\n== One multi-head layer, n = 512, d_model = 512, h = 8 ==");
    let layer_ns = lookup(&timings, "multihead", 512).unwrap_or(f64::NAN);
    let matmul_ns = lookup(&timings, "matmul_512", 512).unwrap_or(f64::NAN);
    let layer_flops = multihead_flops(512, 512, 512, 8)? as f64;
    println!(
        "layer: {:.2} ms, {:.0} GFLOP/s; a 512×512 by 512×512 product: {:.3} ms, {:.0} GFLOP/s",
        layer_ns / 1e6,
        layer_flops / layer_ns,
        matmul_ns / 1e6,
        2.0 * 512f64.powi(3) / matmul_ns
    );
    let std_exp = lookup(&timings, "std_exp", 1 << 20).unwrap_or(f64::NAN);
    let fast_exp = lookup(&timings, "exp_nonpositive", 1 << 20).unwrap_or(f64::NAN);
    println!(
        "exp per element: f32::exp {:.2} ns, exp_nonpositive {:.2} ns",
        std_exp / (1 << 20) as f64,
        fast_exp / (1 << 20) as f64
    );

    println!("\n== With `--features blas`: the system's OpenBLAS, one thread (ms) ==");
    let blas_csv = data("ch07-timings-blas.csv");
    println!("{}", blas_csv.lines().next().unwrap_or(""));
    let blas = read_measurements(&blas_csv, "function", "mean_ns")?;
    println!(
        "{}",
        blas_table(&timings, &blas, &numpy, &[1024, 2048, 4096])?
    );
    let gflops = |rows: &[Measurement], f: &str, flops: f64| -> Result<f64, attn::AttnError> {
        Ok(flops / (millis(rows, f, 512)? * 1e6))
    };
    let product = 2.0 * 512f64.powi(3);
    println!(
        "with blas: layer {:.0} GFLOP/s, 512×512 by 512×512 product {:.0} GFLOP/s",
        gflops(&blas, "multihead", layer_flops)?,
        gflops(&blas, "matmul_512", product)?
    );

    println!("\n== Relative error against exact causal attention, n = 1024, d = 64 ==");
    let errors = error_experiment(1024, 7);
    println!("{}", error_table(&errors));

    draw_cost_model();
    draw_scaling(&timings);
    draw_memory(&memory);
    draw_errors(&errors);
    Ok(())
}

fn draw_cost_model() {
    let ns: Vec<u64> = (6..=16).map(|p| 1 << p).collect();
    let series = |label: &str, f: fn(u64, u64) -> u64, colour| plot::Series {
        label: label.into(),
        points: ns
            .iter()
            .map(|&n| (n as f64, f(n, D_MODEL) as f64))
            .collect(),
        colour,
        dashed: false,
    };
    let chart = plot::Chart {
        title: "FLOPs of one attention layer, d_model = 512",
        x_desc: "sequence length n",
        y_desc: "FLOPs (log scale)",
        log2_x: true,
        log10_y: true,
        y_range: (1e6, 1e14),
    };
    let lines = vec![
        series("projections, 8·n·d²", projection_flops, plot::BLUE_),
        series("attention, 4·n²·d", attention_flops, plot::ORANGE_),
    ];
    let path = plot::line_charts("ch07-cost-model.svg", &[(chart, lines)]);
    println!("wrote {}", path.display());
}

fn draw_scaling(timings: &[Measurement]) {
    let line = |method: &str, label: &str, colour, dashed| plot::Series {
        label: label.into(),
        points: LENGTHS
            .iter()
            .filter_map(|&n| lookup(timings, method, n).map(|ns| (n as f64, ns / 1e6)))
            .collect(),
        colour,
        dashed,
    };
    let at_1024 = lookup(timings, "naive", 1024).unwrap_or(f64::NAN) / 1e6;
    let reference = plot::Series {
        label: "n², through naive at n = 1024".into(),
        points: LENGTHS
            .iter()
            .map(|&n| (n as f64, at_1024 * (n as f64 / 1024.0).powi(2)))
            .collect(),
        colour: plot::GREY_,
        dashed: true,
    };
    let chart = plot::Chart {
        title: "Time of one attention call, d = 64, one thread (measured)",
        x_desc: "sequence length n",
        y_desc: "milliseconds (log scale)",
        log2_x: true,
        log10_y: true,
        y_range: (1e-2, 1e3),
    };
    let lines = vec![
        reference,
        line("naive", "naive", plot::ORANGE_, false),
        line("tiled", "tiled (exact)", plot::BLUE_, false),
        line("tiled_causal", "tiled, causal", plot::GREEN_, false),
        line("local_causal", "local, w = 256", plot::PURPLE_, false),
        line("linear_causal", "linear, causal", plot::BROWN_, false),
    ];
    let path = plot::line_charts("ch07-scaling.svg", &[(chart, lines)]);
    println!("wrote {}", path.display());
}

fn draw_memory(memory: &[Measurement]) {
    let line = |method: &str, label: &str, colour| plot::Series {
        label: label.into(),
        points: memory
            .iter()
            .filter(|r| r.method == method)
            .map(|r| (r.n as f64, r.value / MIB))
            .collect(),
        colour,
        dashed: false,
    };
    let chart = plot::Chart {
        title: "Peak memory of one call, d = 64 (measured)",
        x_desc: "sequence length n",
        y_desc: "MiB allocated at once (log scale)",
        log2_x: true,
        log10_y: true,
        y_range: (0.1, 1e4),
    };
    let lines = vec![
        line("naive", "naive: the n×n scores", plot::ORANGE_),
        line("tiled", "tiled: output and one tile", plot::BLUE_),
    ];
    let path = plot::line_charts("ch07-memory.svg", &[(chart, lines)]);
    println!("wrote {}", path.display());
}

fn draw_errors(errors: &[ErrorRow]) {
    let (local, linear) = errors.split_at(WINDOWS.len());
    let line = |label: &str, value: fn(&ErrorRow) -> f64, colour, dashed| plot::Series {
        label: label.into(),
        points: WINDOWS
            .iter()
            .zip(local)
            .map(|(&w, r)| (w as f64, value(r)))
            .collect(),
        colour,
        dashed,
    };
    let flat = |label: &str, value: f64, colour| plot::Series {
        label: label.into(),
        points: vec![
            (WINDOWS[0] as f64, value),
            (WINDOWS[WINDOWS.len() - 1] as f64, value),
        ],
        colour,
        dashed: true,
    };
    let chart = plot::Chart {
        title: "Error against exact causal attention, n = 1024, d = 64",
        x_desc: "window w of local attention",
        y_desc: "relative error ‖A − E‖ / ‖E‖",
        log2_x: true,
        log10_y: false,
        y_range: (0.0, 3.5),
    };
    let lines = vec![
        line("local, random Q and K", |r| r.random, plot::ORANGE_, false),
        line("local, Q = K = 2·PE", |r| r.local, plot::BLUE_, false),
        flat("linear, random Q and K", linear[0].random, plot::BROWN_),
        flat("linear, Q = K = 2·PE", linear[0].local, plot::GREEN_),
    ];
    let path = plot::line_charts("ch07-approx-error.svg", &[(chart, lines)]);
    println!("wrote {}", path.display());
}
