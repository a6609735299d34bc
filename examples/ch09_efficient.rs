//! Chapter 9, Efficient attention: prints the memory of tiled attention, the
//! approximation errors and the time of every method (read from
//! `book/data/`, written by `cargo xtask measure`), and draws the chapter's
//! three figures. Its output and figures are the same on every run.
//!
//! ```text
//! cargo run --example ch09_efficient
//! ```

use report::plot;

use attn::approximate::{error_experiment, ErrorRow, WINDOWS};
use report::ch08::REFERENCE_LENGTH;
use report::ch09::{error_table, ERROR_LENGTH, ERROR_SEED};
use report::measurements::{
    data_file, exponent_of, millis, read_measurements, tiled_memory_table, timing_table,
    Measurement, TIMED_METHODS,
};

const LENGTHS: [u64; 6] = [128, 256, 512, 1024, 2048, 4096];
const MIB: f64 = 1024.0 * 1024.0;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("== Peak memory of one call, d = 64 ==");
    let memory_csv = data_file("ch08-memory.csv")?;
    let memory = read_measurements(&memory_csv, "method", "peak_bytes")?;
    let seconds = read_measurements(&memory_csv, "method", "seconds")?;
    println!("{}", tiled_memory_table(&memory, &seconds)?);

    println!("\n== Relative error against exact causal attention, n = {ERROR_LENGTH}, d = 64 ==");
    let errors = error_experiment(ERROR_LENGTH, ERROR_SEED)?;
    println!("{}", error_table(&errors));

    println!("\n== Measured, d = 64, one thread (ms) ==");
    let timings = read_measurements(&data_file("ch08-timings.csv")?, "function", "mean_ns")?;
    println!("{}", timing_table(&timings, &TIMED_METHODS, &LENGTHS)?);
    for method in ["tiled", "tiled_causal", "local_causal", "linear_causal"] {
        let b = exponent_of(&timings, method, &[512, 1024, 2048, 4096])?;
        println!("{method}: time ∝ n^{b:.2} over n = 512 … 4096");
    }
    let ms = |method: &str| millis(&timings, method, 4096);
    println!(
        "at n = 4096: tiled / naive = {:.2}, tiled causal / naive causal = {:.2}",
        ms("tiled")? / ms("naive")?,
        ms("tiled_causal")? / ms("naive_causal")?
    );

    draw_memory(&memory);
    draw_errors(&errors);
    draw_scaling(&timings);
    Ok(())
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
        spread: Vec::new(),
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
    let path = plot::line_charts("ch09-memory.svg", &[(chart, lines)]);
    println!("wrote {}", path.display());
}

fn draw_errors(errors: &[ErrorRow]) {
    let (local, linear) = errors.split_at(WINDOWS.len());
    let line = |label: &str, value: fn(&ErrorRow) -> f64, colour, dashed| plot::Series {
        label: label.into(),
        points: WINDOWS.iter().zip(local).map(|(&w, r)| (w as f64, value(r))).collect(),
        colour,
        dashed,
        spread: Vec::new(),
    };
    let flat = |label: &str, value: f64, colour| plot::Series {
        label: label.into(),
        points: vec![(WINDOWS[0] as f64, value), (WINDOWS[WINDOWS.len() - 1] as f64, value)],
        colour,
        dashed: true,
        spread: Vec::new(),
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
    let path = plot::line_charts("ch09-approx-error.svg", &[(chart, lines)]);
    println!("wrote {}", path.display());
}

fn draw_scaling(timings: &[Measurement]) {
    let chart = plot::Chart {
        title: "Time of one attention call, d = 64, one thread (measured)",
        x_desc: "sequence length n",
        y_desc: "milliseconds (log scale)",
        log2_x: true,
        log10_y: true,
        y_range: (1e-2, 1e3),
    };
    let line = |method, label, colour| {
        plot::measured::line(timings, method, label, &LENGTHS, colour, false)
    };
    let lines = vec![
        plot::measured::n_squared_through(timings, "naive", REFERENCE_LENGTH, &LENGTHS),
        line("naive", "naive", plot::ORANGE_),
        line("tiled", "tiled (exact)", plot::BLUE_),
        line("tiled_causal", "tiled, causal", plot::GREEN_),
        line("local_causal", "local, w = 256", plot::PURPLE_),
        line("linear_causal", "linear, causal", plot::BROWN_),
    ];
    let path = plot::line_charts("ch09-scaling.svg", &[(chart, lines)]);
    println!("wrote {}", path.display());
}
