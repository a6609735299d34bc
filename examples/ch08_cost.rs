//! Chapter 8, The cost of attention: prints the cost model, the measured
//! time and memory of exact attention (read from `book/data/`, written by
//! `cargo xtask measure`), and draws the chapter's two figures. It measures
//! nothing itself, so its output and figures are the same on every run.
//!
//! ```text
//! cargo run --example ch08_cost
//! ```

use report::ch08::{figure_lengths, D_MODEL, REFERENCE_LENGTH};
use report::plot;

use attn::complexity::{attention_flops, crossover_length, projection_flops, scores_bytes};
use report::measurements::{
    cost_table, data_file, exponent_of, millis, naive_memory_table, read_measurements,
    timing_table, Measurement,
};

const LENGTHS: [u64; 6] = [128, 256, 512, 1024, 2048, 4096];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("== Cost model, d_model = {D_MODEL} (GFLOP) ==");
    println!("{}", cost_table(&[128, 512, 1024, 4096, 65_536], D_MODEL));
    println!(
        "crossover at n = 2·d_model = {}; scores at n = 65,536: {} GiB",
        crossover_length(D_MODEL),
        scores_bytes(65_536) / (1u64 << 30) as f64
    );

    let csv = data_file("ch08-timings.csv")?;
    let timings = read_measurements(&csv, "function", "mean_ns")?;
    println!("\n== Measured, d = 64, one thread (ms) ==");
    println!("{}", csv.lines().next().unwrap_or(""));
    let exact = ["naive", "naive_causal"];
    println!("{}", timing_table(&timings, &exact, &LENGTHS)?);
    for method in exact {
        let b = exponent_of(&timings, method, &[512, 1024, 2048, 4096])?;
        println!("{method}: time ∝ n^{b:.2} over n = 512 … 4096");
    }
    println!(
        "at n = 4096: naive_causal / naive = {:.2}",
        millis(&timings, "naive_causal", 4096)? / millis(&timings, "naive", 4096)?
    );

    println!("\n== Peak memory of naive attention, d = 64 ==");
    let memory = data_file("ch08-memory.csv")?;
    println!("{}", naive_memory_table(&read_measurements(&memory, "method", "peak_bytes")?));

    draw_cost_model();
    draw_time(&timings);
    Ok(())
}

fn draw_cost_model() {
    let ns = figure_lengths();
    let series = |label: &str, f: fn(u64, u64) -> f64, colour| plot::Series {
        label: label.into(),
        points: ns.iter().map(|&n| (n as f64, f(n, D_MODEL))).collect(),
        colour,
        dashed: false,
        spread: Vec::new(),
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
    let path = plot::line_charts("ch08-cost-model.svg", &[(chart, lines)]);
    println!("wrote {}", path.display());
}

fn draw_time(timings: &[Measurement]) {
    let chart = plot::Chart {
        title: "Time of one call of exact attention, d = 64, one thread (measured)",
        x_desc: "sequence length n",
        y_desc: "milliseconds (log scale)",
        log2_x: true,
        log10_y: true,
        y_range: (1e-2, 1e3),
    };
    let lines = vec![
        plot::measured::n_squared_through(timings, "naive", REFERENCE_LENGTH, &LENGTHS),
        plot::measured::line(timings, "naive", "naive", &LENGTHS, plot::ORANGE_, false),
        plot::measured::line(
            timings,
            "naive_causal",
            "naive, causal mask",
            &LENGTHS,
            plot::PURPLE_,
            true,
        ),
    ];
    let path = plot::line_charts("ch08-time.svg", &[(chart, lines)]);
    println!("wrote {}", path.display());
}
