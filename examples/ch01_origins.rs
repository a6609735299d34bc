//! Chapter 1, Where attention came from: kernel regression as attention
//! pooling, and the additive score beside the dot product. Prints every
//! number the chapter quotes and draws its two figures.
//!
//! ```text
//! cargo run --example ch01_origins
//! ```

use report::plot;

use attn::origins::kernel_regression;
use ndarray::Array1;
use report::ch01::sharpness_experiment;
use report::ch01::{
    bandwidth_table, queries, score_cost_table, sharpness_table, training_set, truth, BANDWIDTHS,
    COST_LENGTHS, COST_WIDTH, PROBES, SCALES, SHARPNESS_KEYS, SHARPNESS_WIDTH,
};

/// The toy problem's size and seed.
const TRAINING: (usize, u64) = (40, 2);

fn main() -> Result<(), report::error::ReportError> {
    let (x, y) = training_set(TRAINING.0, TRAINING.1)?;
    let grid = queries(101);
    println!("== Kernel regression: 40 noisy samples of sin(2x) + x/2, 101 queries ==");
    println!("{}", bandwidth_table(&x, &y, &grid)?);

    println!("\n== Cost of the scores, n = m tokens, d = d_a = 64 ==");
    println!("{}", score_cost_table(&COST_LENGTHS, COST_WIDTH));

    println!("\n== Largest weight over 16 keys of width 8 as the query grows ==");
    let (rows, bound) = sharpness_experiment(SHARPNESS_KEYS, SHARPNESS_WIDTH, &SCALES, 1)?;
    println!("{}", sharpness_table(&rows));
    let b = bound as f64;
    println!(
        "additive scores lie within ±{bound:.2}, so no weight exceeds {:.3}",
        b.exp() / (b.exp() + 15.0 * (-b).exp())
    );

    draw_fit(&x, &y, &grid)?;
    draw_weights(&x, &y)?;
    Ok(())
}

/// Figure 1.1: the true function and the estimates at three bandwidths.
fn draw_fit(
    x: &Array1<f32>,
    y: &Array1<f32>,
    grid: &Array1<f32>,
) -> Result<(), report::error::ReportError> {
    let points =
        |values: Vec<f32>| grid.iter().zip(values).map(|(&g, v)| (g as f64, v as f64)).collect();
    let mut lines = vec![plot::Series {
        label: "true function sin(2x) + x/2".into(),
        points: points(grid.iter().map(|&g| truth(g)).collect()),
        colour: plot::GREY_,
        dashed: true,
        spread: Vec::new(),
    }];
    for (rho, colour) in BANDWIDTHS.into_iter().zip([plot::GREEN_, plot::BLUE_, plot::ORANGE_]) {
        let estimate = kernel_regression(grid, x, y, rho)?;
        lines.push(plot::Series {
            label: format!("estimate, ρ = {rho}"),
            points: points(estimate.output.column(0).to_vec()),
            colour,
            dashed: false,
            spread: Vec::new(),
        });
    }
    let chart = plot::Chart {
        title: "Kernel regression of 40 noisy samples",
        x_desc: "x (query)",
        y_desc: "y",
        log2_x: false,
        log10_y: false,
        y_range: (-1.0, 4.0),
    };
    let path = plot::line_charts("ch01-kernel-regression.svg", &[(chart, lines)]);
    println!("wrote {}", path.display());
    Ok(())
}

/// Figure 1.2: the weight each training point gets, for three queries.
fn draw_weights(x: &Array1<f32>, y: &Array1<f32>) -> Result<(), report::error::ReportError> {
    let probes = Array1::from(PROBES.to_vec());
    let a = kernel_regression(&probes, x, y, 0.3)?;
    let colours = [plot::GREEN_, plot::BLUE_, plot::ORANGE_];
    let lines = probes
        .iter()
        .zip(a.weights.rows())
        .zip(colours)
        .map(|((&q, w), colour)| plot::Series {
            label: format!("query x = {q}"),
            points: x.iter().zip(w).map(|(&k, &w)| (k as f64, w as f64)).collect(),
            colour,
            dashed: false,
            spread: Vec::new(),
        })
        .collect();
    let chart = plot::Chart {
        title: "Weights of the 40 training points, ρ = 0.3",
        x_desc: "training input x_j (key)",
        y_desc: "weight α(x, x_j)",
        log2_x: false,
        log10_y: false,
        y_range: (0.0, 0.3),
    };
    let path = plot::line_charts("ch01-kernel-weights.svg", &[(chart, lines)]);
    println!("wrote {}", path.display());
    Ok(())
}
