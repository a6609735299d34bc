//! Line-chart series from the measurements of `book/data/`, shared by the
//! examples of chapters 8 and 9.

use crate::measurements::{lookup, Measurement};
use plotters::style::RGBColor;

use super::{Series, GREY_};

/// Milliseconds of `method` at each `n` it was measured at, from
/// nanosecond rows, as a solid line (or dashed, to tell apart two series
/// that lie on top of each other).
pub fn line(
    rows: &[Measurement],
    method: &str,
    label: &str,
    ns: &[u64],
    colour: RGBColor,
    dashed: bool,
) -> Series {
    Series {
        label: label.into(),
        points: ns
            .iter()
            .filter_map(|&n| lookup(rows, method, n).map(|t| (n as f64, t / 1e6)))
            .collect(),
        colour,
        dashed,
        spread: Vec::new(),
    }
}

/// The reference `t ∝ n²` through `method`'s time at `n0`, dashed grey.
pub fn n_squared_through(rows: &[Measurement], method: &str, n0: u64, ns: &[u64]) -> Series {
    let t0 = lookup(rows, method, n0).unwrap_or(f64::NAN) / 1e6;
    Series {
        label: format!("n², through {method} at n = {n0}"),
        points: ns.iter().map(|&n| (n as f64, t0 * (n as f64 / n0 as f64).powi(2))).collect(),
        colour: GREY_,
        dashed: true,
        spread: Vec::new(),
    }
}
