//! Formatting matrices for the chapters' printed output.
//!
//! The examples print with these functions, and the tests check that the
//! chapters quote exactly what they print.

use ndarray::ArrayRef2;

/// Formats a matrix one row per line, each entry with `decimals` digits after
/// the point, right-aligned in columns of equal width. At most 45 decimals
/// are printed: enough to write any `f32` exactly.
pub fn matrix(a: &ArrayRef2<f32>, decimals: usize) -> String {
    let decimals = decimals.min(45);
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

/// Formats a matrix's shape the way the book writes it: `7×16`.
pub fn shape(a: &ArrayRef2<f32>) -> String {
    format!("{}×{}", a.nrows(), a.ncols())
}

/// Formats a table: a header line, then one line per row, every column
/// right-aligned to its widest cell and separated by two spaces. A row with
/// fewer cells than the header leaves the rest blank; cells beyond the
/// header get columns of their own, so nothing given is dropped.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).chain([header.len()]).max().unwrap_or(0);
    let cell = |cells: &[&str], c: usize| cells.get(c).map_or(0, |s| s.chars().count());
    let width = |c: usize| {
        rows.iter()
            .map(|r| r.get(c).map_or(0, |s| s.chars().count()))
            .chain([cell(header, c)])
            .max()
            .unwrap_or(0)
    };
    let widths: Vec<usize> = (0..columns).map(width).collect();
    let line = |cells: Vec<&str>| {
        let padded: Vec<String> = widths
            .iter()
            .enumerate()
            .map(|(c, &w)| format!("{:>w$}", cells.get(c).unwrap_or(&"")))
            .collect();
        padded.join("  ").trim_end().to_string()
    };
    let mut lines = vec![line(header.to_vec())];
    lines.extend(rows.iter().map(|r| line(r.iter().map(String::as_str).collect())));
    lines.join("\n")
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

    #[test]
    fn table_aligns_header_and_rows() {
        let rows = vec![vec!["4".to_string(), "3.98".to_string()]];
        assert_eq!(table(&["d_k", "var"], &rows), "d_k   var\n  4  3.98");
    }

    #[test]
    fn ragged_rows_and_huge_precision_do_not_panic() {
        let short = vec![vec!["4".to_string()]];
        assert_eq!(table(&["d_k", "var"], &short), "d_k  var\n  4");
        let long = vec![vec!["4".into(), "3.98".into(), "extra".into()]];
        assert_eq!(table(&["d_k", "var"], &long), "d_k   var\n  4  3.98  extra");
        let tiny = array![[f32::from_bits(1)]]; // the smallest f32
        assert_eq!(matrix(&tiny, usize::MAX).len(), 47, "0. and 45 decimals");
    }
}
