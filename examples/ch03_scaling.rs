//! Chapter 3, Why scale by √d_k: runs the three experiments, prints the
//! tables the chapter quotes and draws its three figures.
//!
//! ```text
//! cargo run --example ch03_scaling
//! cargo run --example ch03_scaling -- --keys 64 --seed 7   # other runs; --help
//! ```

use clap::{value_parser, Arg, Command};
use report::plot;

use attn::scaling::{self, D_KS, SEED};
use plot::{Chart, Series, BLUE_, GREY_, ORANGE_};

/// The number of keys per query and the seed: the chapter's, or a
/// reader's (`--keys`, `--seed`).
fn options() -> (usize, u64) {
    let options = Command::new("ch03_scaling")
        .about("Chapter 3: the variance of q·k and the softmax's saturation, by d_k")
        .after_help("A run with other options draws its figures into target/figures/.")
        .arg(
            Arg::new("keys")
                .long("keys")
                .value_parser(value_parser!(usize))
                .help(format!("Scores per softmax row, m [default: {}]", scaling::KEYS_PER_QUERY)),
        )
        .arg(
            Arg::new("seed")
                .long("seed")
                .value_parser(value_parser!(u64))
                .help(format!("The random draws' seed [default: {SEED}]")),
        )
        .get_matches();
    let m = options.get_one::<usize>("keys").copied().unwrap_or(scaling::KEYS_PER_QUERY);
    (m, options.get_one::<u64>("seed").copied().unwrap_or(SEED))
}

fn main() -> Result<(), report::error::ReportError> {
    let (m, seed) = options();
    let variance = scaling::variance_experiment(scaling::VARIANCE_SAMPLES, seed)?;
    println!(
        "== Experiment 1: variance of q·k over {} pairs per d_k (seed {seed}) ==",
        scaling::VARIANCE_SAMPLES
    );
    println!("{}", report::ch03::variance_table(&variance));

    let saturation = scaling::saturation_experiment(m, scaling::SATURATION_TRIALS, seed)?;
    println!(
        "\n== Experiments 2 and 3: softmax of {m} scores, mean over {} rows (seed {seed}) ==",
        scaling::SATURATION_TRIALS
    );
    println!("{}", report::ch03::saturation_table(&saturation));
    println!(
        "uniform over {m}: max p = {:.4}, H = ln {m} = {:.3}",
        1.0 / m as f64,
        (m as f64).ln()
    );

    let d = |f: &dyn Fn(usize) -> f64| -> Vec<(f64, f64)> {
        D_KS.iter().map(|&d_k| (d_k as f64, f(d_k))).collect()
    };
    let series = |label: &str, points, colour, dashed| Series {
        label: label.to_string(),
        points,
        colour,
        dashed,
        spread: Vec::new(),
    };

    let path = plot::line_charts(
        "ch03-variance.svg",
        &[(
            Chart {
                title: "Variance of the score q·k, unscaled and scaled",
                x_desc: "d_k (log scale)",
                y_desc: "sample variance (log scale)",
                log2_x: true,
                log10_y: true,
                y_range: (0.1, 10_000.0),
            },
            vec![
                series("theory: d_k", d(&|d_k| d_k as f64), GREY_, true),
                series("theory: 1", d(&|_| 1.0), GREY_, true),
                series(
                    "measured Var(q·k)",
                    variance.iter().map(|r| (r.d_k as f64, r.unscaled)).collect(),
                    BLUE_,
                    false,
                ),
                series(
                    "measured Var(q·k/√d_k)",
                    variance.iter().map(|r| (r.d_k as f64, r.scaled)).collect(),
                    ORANGE_,
                    false,
                ),
            ],
        )],
    );
    println!("wrote {}", path.display());

    let at = |f: &dyn Fn(&scaling::SaturationRow) -> f64| -> Vec<(f64, f64)> {
        saturation.iter().map(|r| (r.d_k as f64, f(r))).collect()
    };
    let max_title = format!("Largest softmax weight ({m} scores)");
    let path = plot::line_charts(
        "ch03-saturation.svg",
        &[
            (
                Chart {
                    title: &max_title,
                    x_desc: "d_k (log scale)",
                    y_desc: "mean of max_j p_j",
                    log2_x: true,
                    log10_y: false,
                    y_range: (0.0, 1.0),
                },
                vec![
                    series(&format!("uniform: 1/{m}"), d(&|_| 1.0 / m as f64), GREY_, true),
                    series("unscaled q·k", at(&|r| r.unscaled.max_weight), BLUE_, false),
                    series("scaled q·k/√d_k", at(&|r| r.scaled.max_weight), ORANGE_, false),
                ],
            ),
            (
                Chart {
                    title: "Entropy of the softmax weights",
                    x_desc: "d_k (log scale)",
                    y_desc: "mean entropy (nats)",
                    log2_x: true,
                    log10_y: false,
                    y_range: (0.0, (m as f64).ln().ceil().max(3.0)), // up to ln m
                },
                vec![
                    series(&format!("uniform: ln {m}"), d(&|_| (m as f64).ln()), GREY_, true),
                    series("unscaled q·k", at(&|r| r.unscaled.entropy), BLUE_, false),
                    series("scaled q·k/√d_k", at(&|r| r.scaled.entropy), ORANGE_, false),
                ],
            ),
        ],
    );
    println!("wrote {}", path.display());

    let path = plot::line_charts(
        "ch03-jacobian.svg",
        &[(
            Chart {
                title: "Size of the softmax gradient, ‖diag(p) − ppᵀ‖_F",
                x_desc: "d_k (log scale)",
                y_desc: "mean Frobenius norm (log scale)",
                log2_x: true,
                log10_y: true,
                y_range: (0.01, 1.0),
            },
            vec![
                series("unscaled q·k", at(&|r| r.unscaled.jacobian_norm), BLUE_, false),
                series("scaled q·k/√d_k", at(&|r| r.scaled.jacobian_norm), ORANGE_, false),
            ],
        )],
    );
    println!("wrote {}", path.display());
    Ok(())
}
