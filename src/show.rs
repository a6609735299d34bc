//! Formatting matrices for the chapters' printed output.
//!
//! The examples print with these functions, and the tests check that the
//! chapters quote exactly what they print.

use ndarray::ArrayRef2;

/// Formats a matrix one row per line, each entry with `decimals` digits after
/// the point, right-aligned in columns of equal width.
pub fn matrix(a: &ArrayRef2<f32>, decimals: usize) -> String {
    let cells: Vec<Vec<String>> = a
        .rows()
        .into_iter()
        .map(|row| row.iter().map(|x| format!("{x:.decimals$}")).collect())
        .collect();
    let width = cells.iter().flatten().map(String::len).max().unwrap_or(0);
    cells
        .iter()
        .map(|row| {
            let padded: Vec<String> = row.iter().map(|c| format!("{c:>width$}")).collect();
            padded.join("  ")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn aligns_columns() {
        let a = array![[1.0_f32, -0.5], [0.25, 10.0]];
        assert_eq!(matrix(&a, 2), " 1.00  -0.50\n 0.25  10.00");
    }
}
