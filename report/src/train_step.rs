//! The appendix "Making it fast": chapter 16's training step against the
//! core's peak and against PyTorch's step, in the book's one measurement
//! run. Its FLOPs by chapter 8's cost model, its rate over the FMA peak,
//! and where its time goes on each side (`ch16-step-profile.tsv`). Report
//! helpers, not a reader's API.

use attn::complexity::{attention_flops, feed_forward_flops, projection_flops};
use attn::lm::LmConfig;

use crate::ch16_report::TrainingSpeeds;
use crate::error::ReportError;
use crate::measurements::{bad, data_rows, number};
use crate::provenance::Provenance;
use crate::show::table;

/// The file [`StepProfile::read`] reads.
pub const PROFILE_FILE: &str = "ch16-step-profile.tsv";

/// FLOPs of one training step of `batch` windows, each `config.context`
/// tokens long: the forward pass counted by chapter 8's cost model (each
/// block's four projections, its attention over the whole window and its
/// feed-forward network, then the output layer's `2·n·d·vocab`), and the
/// backward pass as twice the forward's (a product's two gradients, each
/// a product as large). LayerNorm, GELU, the softmax and the optimizer are
/// not FLOPs here.
pub fn step_flops(config: &LmConfig, batch: usize) -> f64 {
    let (n, d) = (config.context as u64, config.d_model as u64);
    let block = projection_flops(n, d)
        + attention_flops(n, d)
        + feed_forward_flops(n, d, config.d_ff as u64);
    let output = 2.0 * (n * d) as f64 * config.vocab as f64;
    3.0 * batch as f64 * (config.layers as f64 * block + output)
}

/// Where a training step's time goes: milliseconds a step of each part,
/// by program, from `ch16-step-profile.tsv`.
#[derive(Debug, Clone)]
pub struct StepProfile {
    /// `(program, part, milliseconds a step)`, `total` among the parts.
    pub rows: Vec<(String, String, f64)>,
    /// The file's header.
    pub source: Provenance,
}

impl StepProfile {
    /// Reads [`PROFILE_FILE`].
    pub fn read() -> Result<StepProfile, ReportError> {
        let (source, text) = Provenance::read(PROFILE_FILE)?;
        let mut rows = Vec::new();
        for row in data_rows(&text, '\t') {
            let [program, threads, part, ms] = row.as_slice() else {
                return Err(bad(PROFILE_FILE, format!("bad row {row:?}")));
            };
            let _: usize = number(PROFILE_FILE, threads)?;
            rows.push((program.to_string(), part.to_string(), number(PROFILE_FILE, ms)?));
        }
        Ok(StepProfile { rows, source })
    }

    /// Milliseconds a step of `program`'s `part`.
    pub fn ms(&self, program: &str, part: &str) -> Result<f64, ReportError> {
        self.rows
            .iter()
            .find(|r| r.0 == program && r.1 == part)
            .map(|r| r.2)
            .ok_or_else(|| bad(PROFILE_FILE, format!("has no part {part:?} of {program}")))
    }

    /// `program`'s parts, in the file's order, without the total.
    pub fn parts(&self, program: &str) -> Vec<(&str, f64)> {
        (self.rows.iter())
            .filter(|r| r.0 == program && r.1 != "total")
            .map(|r| (r.1.as_str(), r.2))
            .collect()
    }
}

/// Each program's training step on one thread: tokens per second (the
/// best run of `speeds`), milliseconds a step, GFLOP/s at `flops` a step
/// and the share of the core's `roof`.
pub fn step_table(
    flops: f64,
    tokens_per_step: f64,
    speeds: &TrainingSpeeds,
) -> Result<Vec<(&'static str, f64, f64, f64)>, ReportError> {
    let &(_, ours, theirs) = speeds
        .rows
        .iter()
        .find(|r| r.0 == 1)
        .ok_or_else(|| bad("ch16-speed.tsv", "has no run on one thread"))?;
    Ok([("this crate", ours), ("PyTorch", theirs)]
        .map(|(who, rate)| {
            let seconds = tokens_per_step / rate;
            (who, rate, 1e3 * seconds, flops / seconds / 1e9)
        })
        .to_vec())
}

/// [`step_table`] as the appendix shows it.
pub fn step_report(rows: &[(&str, f64, f64, f64)], flops: f64, roof: f64) -> String {
    let shown: Vec<Vec<String>> = rows
        .iter()
        .map(|&(who, rate, ms, gflops)| {
            vec![
                who.to_string(),
                format!("{rate:.0}"),
                format!("{ms:.1}"),
                format!("{gflops:.1}"),
                format!("{:.0}%", 100.0 * gflops / roof),
            ]
        })
        .collect();
    format!(
        "chapter 16's training step, one thread: {:.2} GFLOP a step, the peak {roof:.1} GFLOP/s\n{}",
        flops / 1e9,
        table(&["", "tokens/s", "ms a step", "GFLOP/s", "of the peak"], &shown)
    )
}

/// Both programs' parts side by side, milliseconds a step, `-` where a
/// program has no such part; the totals last.
pub fn profile_report(profile: &StepProfile) -> Result<String, ReportError> {
    let programs = ["crate", "pytorch"];
    let mut parts: Vec<&str> = Vec::new();
    for program in programs {
        for (part, _) in profile.parts(program) {
            if !parts.contains(&part) {
                parts.push(part);
            }
        }
    }
    parts.push("total");
    let rows: Vec<Vec<String>> = parts
        .iter()
        .map(|part| {
            let mut row = vec![part.to_string()];
            for program in programs {
                row.push(profile.ms(program, part).map_or("-".into(), |ms| format!("{ms:.1}")));
            }
            row
        })
        .collect();
    Ok(format!(
        "where a training step's time goes, one thread, ms a step\n{}",
        table(&["part", "this crate", "PyTorch"], &rows)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_of_chapter_16_s_model_counts_its_products_three_times() {
        let c = attn::lm::SHAKESPEARE_MODEL;
        // By hand: per window, 4 blocks of 8·64·128² + 4·64²·128 + 4·64·128·512,
        // and the output layer's 2·64·128·84; times 12 windows, times 3.
        let block =
            8.0 * 64.0 * 128.0 * 128.0 + 4.0 * 64.0 * 64.0 * 128.0 + 4.0 * 64.0 * 128.0 * 512.0;
        let window = 4.0 * block + 2.0 * 64.0 * 128.0 * 84.0;
        assert_eq!(step_flops(&c, 12), 3.0 * 12.0 * window);
        assert_eq!(step_flops(&c, 24), 2.0 * step_flops(&c, 12));
    }
}
