//! The measurements of chapters 8 and 9 and of the appendix "Making it
//! fast": reading the committed files of `book/data/` and formatting the
//! tables the chapters quote. Report helpers, not a reader's API.

use crate::error::ReportError;
use attn::complexity::{attention_flops, fitted_exponent, projection_flops};

/// The text of `book/data/NAME`, the committed measurements.
pub fn data_file(name: &str) -> Result<String, ReportError> {
    let path = crate::root().join("book/data").join(name);
    std::fs::read_to_string(&path).map_err(|e| ReportError::MissingDataFile {
        reason: e.to_string(),
        path: path.display().to_string(),
    })
}

/// The data rows of a committed file's text, split at `separator`:
/// neither `#` comments nor the line of column names.
pub(crate) fn data_rows(text: &str, separator: char) -> impl Iterator<Item = Vec<&str>> {
    text.lines().filter(|l| !l.starts_with('#')).skip(1).map(move |l| l.split(separator).collect())
}

/// The rows of the committed CSV file `book/data/NAME` as numbers, without
/// the `#` comments and the line of column names; an empty field is `None`.
pub fn numeric_rows(name: &str) -> Result<Vec<Vec<Option<f64>>>, ReportError> {
    numbers_in(name, &data_file(name)?)
}

/// [`numeric_rows`] of the text of `book/data/NAME`.
fn numbers_in(name: &str, text: &str) -> Result<Vec<Vec<Option<f64>>>, ReportError> {
    let field = |f: &&str| match f.trim() {
        "" => Ok(None),
        f => number(name, f).map(Some),
    };
    data_rows(text, ',').map(|row| row.iter().map(field).collect()).collect()
}

/// The error for `book/data/FILE` that does not hold what it should.
pub(crate) fn bad(file: &str, what: impl std::fmt::Display) -> ReportError {
    ReportError::MissingDataFile { path: format!("book/data/{file}"), reason: what.to_string() }
}

/// A number read from a field of `book/data/FILE`.
pub(crate) fn number<T: std::str::FromStr>(file: &str, field: &str) -> Result<T, ReportError> {
    field.trim().parse().map_err(|_| bad(file, format!("{field:?} is not a number")))
}

/// One row of a measurement file (`book/data/*.csv`): which method, which
/// `n`, and the measured value (seconds, or bytes).
#[derive(Debug, Clone, PartialEq)]
pub struct Measurement {
    /// The method, e.g. `"naive"`, `"tiled_causal"`, `"numpy_f32"`.
    pub method: String,
    /// The sequence length.
    pub n: u64,
    /// The value in the column asked for.
    pub value: f64,
}

/// Reads the rows of a CSV measurement file: lines starting with `#` are
/// comments, the first other line names the columns. Returns, for every row,
/// the columns `method_column`, `n` and `value_column`.
pub fn read_measurements(
    csv: &str,
    method_column: &str,
    value_column: &str,
) -> Result<Vec<Measurement>, String> {
    let mut lines = csv.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty());
    let header: Vec<&str> = lines.next().ok_or("no header line")?.split(',').collect();
    let column = |name: &str| {
        header.iter().position(|h| *h == name).ok_or(format!("no column {name} in {header:?}"))
    };
    let (m, n, v) = (column(method_column)?, column("n")?, column(value_column)?);
    lines
        .map(|line| {
            let cells: Vec<&str> = line.split(',').collect();
            let parse = |i: usize| cells.get(i).ok_or(format!("short line: {line}"));
            Ok(Measurement {
                method: parse(m)?.to_string(),
                n: parse(n)?.parse().map_err(|e| format!("{line}: {e}"))?,
                value: parse(v)?.parse().map_err(|e| format!("{line}: {e}"))?,
            })
        })
        .collect()
}

/// The value measured for `method` at `n`, if there is one.
pub fn lookup(rows: &[Measurement], method: &str, n: u64) -> Option<f64> {
    rows.iter().find(|r| r.method == method && r.n == n).map(|r| r.value)
}

/// The methods of chapter 8's timing table, as the benchmark names them.
pub const TIMED_METHODS: [&str; 6] =
    ["naive", "tiled", "naive_causal", "tiled_causal", "local_causal", "linear_causal"];

/// The value measured for `method` at `n`, or an error if the data holds
/// no such measurement.
pub fn measured(rows: &[Measurement], method: &str, n: u64) -> Result<f64, ReportError> {
    lookup(rows, method, n)
        .ok_or_else(|| ReportError::MissingMeasurement { method: method.to_string(), n })
}

/// Milliseconds measured for `method` at `n`, from rows whose values are
/// nanoseconds, or an error if the data holds no such measurement.
pub fn millis(rows: &[Measurement], method: &str, n: u64) -> Result<f64, ReportError> {
    Ok(measured(rows, method, n)? / 1e6)
}

/// The cost-model table the chapter prints: GFLOP of the projections and of
/// attention at each `n`, for width `d`, and attention's share.
pub fn cost_table(ns: &[u64], d: u64) -> String {
    let rows: Vec<Vec<String>> = ns
        .iter()
        .map(|&n| {
            let (p, a) = (projection_flops(n, d), attention_flops(n, d));
            vec![
                n.to_string(),
                format!("{:.2}", p / 1e9),
                format!("{:.2}", a / 1e9),
                format!("{:.0}%", 100.0 * a / (p + a)),
            ]
        })
        .collect();
    crate::show::table(&["n", "projections", "attention", "attention share"], &rows)
}

/// The timing table the chapter prints: milliseconds per call of each method
/// (columns) at each `n` (rows), from nanosecond measurements.
pub fn timing_table(
    rows: &[Measurement],
    methods: &[&str],
    ns: &[u64],
) -> Result<String, ReportError> {
    let mut cells = Vec::new();
    for &n in ns {
        let mut row = vec![n.to_string()];
        for m in methods {
            row.push(format!("{:.3}", millis(rows, m, n)?));
        }
        cells.push(row);
    }
    let mut header = vec!["n"];
    header.extend(methods);
    Ok(crate::show::table(&header, &cells))
}

/// The fitted exponent of `method`'s time over `ns` (see [`fitted_exponent`]).
pub fn exponent_of(rows: &[Measurement], method: &str, ns: &[u64]) -> Result<f64, ReportError> {
    let points = ns
        .iter()
        .map(|&n| Ok((n as f64, millis(rows, method, n)?)))
        .collect::<Result<Vec<_>, ReportError>>()?;
    Ok(fitted_exponent(&points)?)
}

const MIB: f64 = 1024.0 * 1024.0;

/// Chapter 8's memory table: naive attention's measured peak at `d = 64`
/// beside the count of its scores, output and scaled `Q`,
/// `4(n² + 2·64·n)` bytes, and the difference, in MiB.
pub fn naive_memory_table(peaks: &[Measurement]) -> String {
    let rows: Vec<Vec<String>> = peaks
        .iter()
        .filter(|r| r.method == "naive")
        .map(|r| {
            let counted = (4 * r.n * r.n + 2 * 4 * 64 * r.n) as f64;
            vec![
                r.n.to_string(),
                format!("{:.2}", r.value / MIB),
                format!("{:.2}", counted / MIB),
                format!("{:.2}", (r.value - counted) / MIB),
            ]
        })
        .collect();
    let header = ["n", "measured (MiB)", "scores, output and scaled Q (MiB)", "difference (MiB)"];
    crate::show::table(&header, &rows)
}

/// Chapter 9's memory table: the peaks of naive and tiled attention at
/// `d = 64` for `n = 1024 … 65,536` (– where naive attention was not run),
/// what tiled attention holds beyond its `n×64` output, and two summary
/// lines.
pub fn tiled_memory_table(
    peaks: &[Measurement],
    seconds: &[Measurement],
) -> Result<String, ReportError> {
    let peak = |method: &str, n: u64| measured(peaks, method, n);
    let output = |n: u64| (4 * n * 64) as f64;
    let mut rows = Vec::new();
    for n in (10..=16).map(|p| 1u64 << p) {
        let naive = lookup(peaks, "naive", n).map_or("–".into(), |b| format!("{:.2}", b / MIB));
        let tiled = peak("tiled", n)?;
        rows.push(vec![
            n.to_string(),
            naive,
            format!("{:.2}", tiled / MIB),
            format!("{:.2}", (tiled - output(n)) / 1024.0),
        ]);
    }
    let header = ["n", "naive (MiB)", "tiled (MiB)", "tiled beyond its output (KiB)"];
    let (naive, tiled) = (peak("naive", 4096)?, peak("tiled", 4096)?);
    let time = measured(seconds, "tiled", 65_536)?;
    Ok(format!(
        "{}\nat n = 4096: tiled / naive = {:.1}% (beyond the output: {:.2}%)\n\
         tiled at n = 65,536: {time:.0} s, peak {:.1} MiB",
        crate::show::table(&header, &rows),
        100.0 * tiled / naive,
        100.0 * (tiled - output(4096)) / (naive - output(4096)),
        peak("tiled", 65_536)? / MIB
    ))
}

/// The mean of `values` (NaN if there are none).
pub fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_rows_skip_comments_and_names_and_say_which_field_is_bad() {
        let csv = "# run: by hand\nstep,loss,exact\n1,2.5,\n2,1.25,0.5\n";
        let rows = numbers_in("x.csv", csv).unwrap();
        assert_eq!(
            rows,
            vec![vec![Some(1.0), Some(2.5), None], vec![Some(2.0), Some(1.25), Some(0.5)]]
        );
        let err = numbers_in("x.csv", "a,b\n1,oops\n").unwrap_err().to_string();
        assert!(
            err.contains("book/data/x.csv") && err.contains("\"oops\" is not a number"),
            "{err}"
        );
        let missing = numeric_rows("no-such-file.csv").unwrap_err().to_string();
        assert!(
            missing.contains("no-such-file.csv") && missing.contains("git checkout book/data"),
            "{missing}"
        );
    }

    #[test]
    fn measurements_are_read_by_column_name() {
        let csv = "# a comment\nmethod,n,bytes,seconds\nnaive,1024,4096,0.5\ntiled,2048,10,0.25\n";
        let rows = read_measurements(csv, "method", "seconds").unwrap();
        assert_eq!(lookup(&rows, "tiled", 2048), Some(0.25));
        assert_eq!(lookup(&rows, "tiled", 1024), None);
        assert_eq!(millis(&rows, "naive", 1024), Ok(0.5e-6));
        let missing = millis(&rows, "tiled", 1024).unwrap_err();
        assert_eq!(
            missing.to_string(),
            "no measurement of tiled at n = 1024 in book/data (run `cargo xtask measure`)"
        );
        assert!(read_measurements(csv, "method", "watts").is_err());
    }
}
