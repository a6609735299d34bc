//! Chapter 11's printed tables.

use attn::grad::GradientNorms;

use crate::show::table;

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

/// A table of gradient checks, `(what, relative error)`, under `header`.
pub fn check_table(header: &str, checks: &[(&str, f64)]) -> String {
    let rows: Vec<Vec<String>> =
        checks.iter().map(|(name, e)| vec![name.to_string(), format!("{e:.1e}")]).collect();
    table(&[header, "relative error"], &rows)
}
