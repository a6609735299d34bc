//! The cost model of one attention layer: FLOPs and memory as functions of
//! the sequence length `n` and the width `d` (one head, `d_k = d_v = d`, or
//! all heads together with `d = d_model`: in the matrix products `h`
//! cancels, chapter 4; the scores are `n²` per head).
//! A multiply-add counts as 2 FLOPs; the softmax's `n²` exponentials are not
//! FLOPs here, and chapter 7 measures them separately.

use crate::error::AttnError;

// ANCHOR: cost_model
/// FLOPs of the four projections (`Q`, `K`, `V` and the output), each an
/// `n×d` by `d×d` product: `4 · 2nd²`. Linear in `n`.
pub fn projection_flops(n: u64, d: u64) -> u64 {
    4 * 2 * n * d * d
}

/// FLOPs of attention proper: the scores `QKᵀ` (`2n²d`) and the weighted sum
/// of the values (`2n²d`). Quadratic in `n`.
pub fn attention_flops(n: u64, d: u64) -> u64 {
    2 * n * n * d + 2 * n * n * d
}

/// The length at which the two are equal: `8nd² = 4n²d` when `n = 2d`.
/// Shorter sequences spend most FLOPs in the projections, longer ones in
/// attention.
pub fn crossover_length(d: u64) -> u64 {
    2 * d
}

// ANCHOR: block_cost
/// FLOPs of a block's feed-forward network (chapter 8): an `n×d` by `d×d_ff`
/// product and an `n×d_ff` by `d_ff×d` product, `2 · 2nd·d_ff`. With
/// `d_ff = 4d` that is `16nd²`.
pub fn feed_forward_flops(n: u64, d: u64, d_ff: u64) -> u64 {
    2 * 2 * n * d * d_ff
}

/// The length at which a whole block's attention term equals its linear
/// terms: `8nd² + 4nd·d_ff = 4n²d` when `n = 2d + d_ff`, which is `6d` for
/// the usual `d_ff = 4d`.
pub fn block_crossover_length(d: u64, d_ff: u64) -> u64 {
    2 * d + d_ff
}
// ANCHOR_END: block_cost

/// Bytes of the `n×n` scores (or weights) in `f32`: what naive attention
/// must hold at once, for each head.
pub fn scores_bytes(n: u64) -> u64 {
    4 * n * n
}

/// Bytes of the `n×d` matrices `Q`, `K`, `V` and the output in `f32`: what
/// any attention must hold.
pub fn activation_bytes(n: u64, d: u64) -> u64 {
    4 * 4 * n * d
}
// ANCHOR_END: cost_model

// ANCHOR: fit
/// The exponent `b` of the power law `t ≈ a·nᵇ` that fits the points
/// `(n, t)` best in the least-squares sense on a log-log scale: the slope of
/// the line through `(ln n, ln t)`. Quadratic cost shows as `b ≈ 2`.
pub fn fitted_exponent(points: &[(f64, f64)]) -> Result<f64, AttnError> {
    if points.len() < 2 || points.iter().any(|&(n, t)| !(n > 0.0 && t > 0.0)) {
        return Err(AttnError::InvalidArgument {
            name: "points",
            value: points.len() as f32,
            requirement: "must be at least 2, with positive n and t",
        });
    }
    let logs: Vec<(f64, f64)> = points.iter().map(|&(n, t)| (n.ln(), t.ln())).collect();
    let count = logs.len() as f64;
    let mean_x = logs.iter().map(|p| p.0).sum::<f64>() / count;
    let mean_y = logs.iter().map(|p| p.1).sum::<f64>() / count;
    let covariance: f64 = logs.iter().map(|(x, y)| (x - mean_x) * (y - mean_y)).sum();
    let variance: f64 = logs.iter().map(|(x, _)| (x - mean_x).powi(2)).sum();
    if variance == 0.0 {
        return Err(AttnError::InvalidArgument {
            name: "points",
            value: points.len() as f32,
            requirement: "must have at least two different n",
        });
    }
    Ok(covariance / variance)
}
// ANCHOR_END: fit

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
    let mut lines = csv
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty());
    let header: Vec<&str> = lines.next().ok_or("no header line")?.split(',').collect();
    let column = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .ok_or(format!("no column {name} in {header:?}"))
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
    rows.iter()
        .find(|r| r.method == method && r.n == n)
        .map(|r| r.value)
}

/// The methods of chapter 7's timing table, as the benchmark names them.
pub const TIMED_METHODS: [&str; 6] = [
    "naive",
    "tiled",
    "naive_causal",
    "tiled_causal",
    "local_causal",
    "linear_causal",
];

/// Milliseconds measured for `method` at `n`, from rows whose values are
/// nanoseconds, or an error if the data holds no such measurement.
pub fn millis(rows: &[Measurement], method: &str, n: u64) -> Result<f64, AttnError> {
    lookup(rows, method, n)
        .map(|ns| ns / 1e6)
        .ok_or_else(|| AttnError::MissingMeasurement {
            method: method.to_string(),
            n,
        })
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
                format!("{:.2}", p as f64 / 1e9),
                format!("{:.2}", a as f64 / 1e9),
                format!("{:.0}%", 100.0 * a as f64 / (p + a) as f64),
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
) -> Result<String, AttnError> {
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

/// The table comparing the crate with and without the `blas` feature and
/// NumPy (`numpy_f32`, seconds): milliseconds per call of naive and tiled
/// attention at each `n`.
pub fn blas_table(
    plain: &[Measurement],
    blas: &[Measurement],
    numpy: &[Measurement],
    ns: &[u64],
) -> Result<String, AttnError> {
    let mut cells = Vec::new();
    for &n in ns {
        let numpy_ms = lookup(numpy, "numpy_f32", n)
            .map(|s| s * 1e3)
            .ok_or_else(|| AttnError::MissingMeasurement {
                method: "numpy_f32".into(),
                n,
            })?;
        cells.push(vec![
            n.to_string(),
            format!("{:.2}", millis(plain, "naive", n)?),
            format!("{:.2}", millis(blas, "naive", n)?),
            format!("{:.2}", millis(plain, "tiled", n)?),
            format!("{:.2}", millis(blas, "tiled", n)?),
            format!("{numpy_ms:.2}"),
        ]);
    }
    let header = [
        "n",
        "naive",
        "naive, blas",
        "tiled",
        "tiled, blas",
        "NumPy f32",
    ];
    Ok(crate::show::table(&header, &cells))
}

/// The fitted exponent of `method`'s time over `ns` (see [`fitted_exponent`]).
pub fn exponent_of(rows: &[Measurement], method: &str, ns: &[u64]) -> Result<f64, AttnError> {
    let points = ns
        .iter()
        .map(|&n| Ok((n as f64, millis(rows, method, n)?)))
        .collect::<Result<Vec<_>, AttnError>>()?;
    fitted_exponent(&points)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::multihead::multihead_flops;

    #[test]
    fn the_two_terms_add_up_to_the_layer_and_cross_at_2d() {
        for (n, d) in [(1, 1), (128, 64), (512, 512), (4096, 64)] {
            let layer = multihead_flops(n, n, d, 1).unwrap() as u64;
            assert_eq!(
                projection_flops(n as u64, d as u64) + attention_flops(n as u64, d as u64),
                layer
            );
        }
        for d in [64, 512, 4096] {
            let n = crossover_length(d);
            assert_eq!(projection_flops(n, d), attention_flops(n, d));
            assert!(projection_flops(n - 1, d) > attention_flops(n - 1, d));
            assert!(projection_flops(n + 1, d) < attention_flops(n + 1, d));
        }
    }

    #[test]
    fn the_fit_recovers_known_exponents() {
        for b in [1.0, 2.0, 2.5] {
            let points: Vec<(f64, f64)> = [128.0, 256.0, 1024.0, 4096.0_f64]
                .iter()
                .map(|&n| (n, 3e-9 * n.powf(b)))
                .collect();
            assert!((fitted_exponent(&points).unwrap() - b).abs() < 1e-9);
        }
        assert!(
            fitted_exponent(&[(1.0, 2.0)]).is_err(),
            "one point has no slope"
        );
        assert!(
            fitted_exponent(&[(4.0, 2.0), (4.0, 3.0)]).is_err(),
            "nor does one n"
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

    #[test]
    fn sixteen_gibibytes_of_scores_at_65536() {
        assert_eq!(scores_bytes(65_536), 16 << 30);
        assert_eq!(scores_bytes(4096), 64 << 20);
        assert_eq!(activation_bytes(65_536, 64), 64 << 20);
    }
}
