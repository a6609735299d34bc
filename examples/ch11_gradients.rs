//! Chapter 11, Gradients of attention: prints how far every backward pass
//! is from central finite differences, the same for the whole tiny model,
//! and the gradient norms through attention with and without the 1/√d_k
//! scale; draws the gradient-norm chart.
//!
//! ```text
//! cargo run --example ch11_gradients
//! ```

use report::plot;

use attn::grad::all_checks;
use attn::model::check_gradients;
use report::ch11::{check_table, gradient_norm_experiment, gradient_norm_table, TRIALS};

fn main() -> Result<(), report::error::ReportError> {
    println!("== Backward passes against central differences (h = 1e-5, f64, seed 0) ==");
    println!("{}", check_table("operation", &all_checks(0)?));

    println!("\n== The whole model (2 blocks, width 8), one matrix of each kind ==");
    println!("{}", check_table("parameter", &check_gradients(3)?));

    println!("\n== Gradient norms through attention, 16 queries and keys, {TRIALS} trials ==");
    let norms = gradient_norm_experiment()?;
    println!("{}", gradient_norm_table(&norms));
    println!("\n== The same problems, query by query: ‖dQ_i‖ of each of the 16 queries ==");
    println!("{}", report::ch11::query_gradient_table(&report::ch11::query_gradient_experiment()?));

    let series = |label: &str, pick: fn(&attn::grad::GradientNorms) -> f64, colour| plot::Series {
        label: label.into(),
        points: norms.iter().map(|r| (r.d_k as f64, pick(r))).collect(),
        colour,
        dashed: false,
        spread: Vec::new(),
    };
    let scores = plot::Chart {
        title: "Gradient reaching the scores, ‖dS‖",
        x_desc: "d_k (log scale)",
        y_desc: "mean ‖dS‖ over 200 trials (log scale)",
        log2_x: true,
        log10_y: true,
        y_range: (0.1, 100.0),
    };
    let queries = plot::Chart {
        title: "Gradient reaching the queries, ‖dQ‖",
        y_desc: "mean ‖dQ‖ over 200 trials (log scale)",
        ..scores
    };
    let panels = [
        (
            scores,
            vec![
                series("unscaled: softmax(QKᵀ)", |r| r.unscaled.0, plot::ORANGE_),
                series("scaled: softmax(QKᵀ/√d_k)", |r| r.scaled.0, plot::BLUE_),
            ],
        ),
        (
            queries,
            vec![
                series("unscaled: softmax(QKᵀ)", |r| r.unscaled.1, plot::ORANGE_),
                series("scaled: softmax(QKᵀ/√d_k)", |r| r.scaled.1, plot::BLUE_),
            ],
        ),
    ];
    let path = plot::line_charts("ch11-gradient-norms.svg", &panels);
    println!("wrote {}", path.display());
    Ok(())
}
