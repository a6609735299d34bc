//! Chapter 11's printed tables.

use attn::error::AttnError;
use attn::grad::{gradient_norms, query_gradients, GradientNorms, QueryGradients, VANISHED};

use crate::show::table;

/// The widths of chapter 11's scaling experiment.
pub const D_KS: [usize; 6] = [4, 16, 64, 256, 1024, 4096];
/// Random problems averaged at each width.
pub const TRIALS: usize = 200;
/// The experiment's seed.
pub const SEED: u64 = 2017;

/// Chapter 11's gradient norms, unscaled and scaled, at every width of
/// [`D_KS`] (chapters 2 and 3 quote them too).
pub fn gradient_norm_experiment() -> Result<Vec<GradientNorms>, AttnError> {
    gradient_norms(&D_KS, TRIALS, SEED)
}

/// The gradient-norm table chapter 11 prints.
pub fn gradient_norm_table(norms: &[GradientNorms]) -> String {
    let rows: Vec<Vec<String>> = norms
        .iter()
        .map(|r| {
            vec![
                r.d_k.to_string(),
                format!("{:.4}", r.unscaled.0),
                format!("{:.4}", r.scaled.0),
                format!("{:.2}", r.unscaled.1),
                format!("{:.2}", r.scaled.1),
            ]
        })
        .collect();
    let header = ["d_k", "‖dS‖ unscaled", "‖dS‖ scaled", "‖dQ‖ unscaled", "‖dQ‖ scaled"];
    table(&header, &rows)
}

/// The same problems query by query (`attn::grad::query_gradients`).
pub fn query_gradient_experiment() -> Result<Vec<QueryGradients>, AttnError> {
    query_gradients(&D_KS, TRIALS, SEED)
}

/// The per-query table chapter 11 prints: the median `‖dQ_i‖`, the
/// largest and the share of queries below [`VANISHED`], unscaled, and
/// the median and the share scaled.
pub fn query_gradient_table(rows: &[QueryGradients]) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.d_k.to_string(),
                format!("{:.4}", r.unscaled.0),
                format!("{:.2}", r.unscaled.1),
                format!("{:.0}%", 100.0 * r.unscaled.2),
                format!("{:.2}", r.scaled.0),
                format!("{:.0}%", 100.0 * r.scaled.2),
            ]
        })
        .collect();
    let below = format!("below {VANISHED}");
    let header = [
        "d_k",
        "unscaled: median ‖dQ_i‖",
        "largest",
        below.as_str(),
        "scaled: median",
        below.as_str(),
    ];
    table(&header, &rows)
}

/// A table of gradient checks, `(what, relative error)`, under `header`.
pub fn check_table(header: &str, checks: &[(&str, f64)]) -> String {
    let rows: Vec<Vec<String>> =
        checks.iter().map(|(name, e)| vec![name.to_string(), format!("{e:.1e}")]).collect();
    table(&[header, "relative error"], &rows)
}
