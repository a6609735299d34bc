//! Chapter 3's printed tables.

use attn::scaling::{SaturationRow, VarianceRow};

use crate::show::table;

/// Experiment 1 as the chapter prints it.
pub fn variance_table(rows: &[VarianceRow]) -> String {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.d_k.to_string(),
                format!("{:.1}", r.unscaled),
                format!("{:.3}", r.unscaled / r.d_k as f64),
                format!("{:.3}", r.scaled),
            ]
        })
        .collect();
    table(&["d_k", "Var(q·k)", "Var(q·k)/d_k", "Var(q·k/√d_k)"], &cells)
}

/// Experiments 2 and 3 as the chapter prints them.
pub fn saturation_table(rows: &[SaturationRow]) -> String {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.d_k.to_string(),
                format!("{:.3}", r.unscaled.max_weight),
                format!("{:.3}", r.scaled.max_weight),
                format!("{:.3}", r.unscaled.entropy),
                format!("{:.3}", r.scaled.entropy),
                format!("{:.4}", r.unscaled.jacobian_norm),
                format!("{:.4}", r.scaled.jacobian_norm),
            ]
        })
        .collect();
    let header = ["d_k", "max p", "max p (scaled)", "H", "H (scaled)", "‖J‖", "‖J‖ (scaled)"];
    table(&header, &cells)
}
