//! Chapter 9's printed tables.

use attn::approximate::ErrorRow;

use crate::show::table;

/// The error table the chapter prints.
pub fn error_table(rows: &[ErrorRow]) -> String {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| vec![r.method.clone(), format!("{:.3}", r.random), format!("{:.3}", r.local)])
        .collect();
    table(&["method", "random Q, K", "Q = K = 2·PE"], &cells)
}
