//! The appendix "Making it fast": chapter 16's language model trained with
//! each head's attention computed chapter 2's way and through the fused
//! kernel, in the appendix's run (`appendix-lm-training.tsv`). Report
//! helpers, not a reader's API.

pub use super::measurements::mean;
use super::measurements::{bad, data_rows, number};
use super::provenance::Provenance;
use crate::error::ReportError;
use crate::show::table;

/// The file [`LmTraining::read`] reads.
pub const LM_FILE: &str = "appendix-lm-training.tsv";

/// Training tokens per second of each run, by path and threads.
#[derive(Debug, Clone)]
pub struct LmTraining {
    /// `(fused, threads, tokens per second)`, in the order run.
    pub runs: Vec<(bool, usize, f64)>,
    /// The file's header.
    pub source: Provenance,
}

impl LmTraining {
    /// Reads [`LM_FILE`], which must be of the run `run` (the appendix's).
    pub fn read(run: &str) -> Result<LmTraining, ReportError> {
        let (source, text) = Provenance::read(LM_FILE)?;
        if source.run != run {
            return Err(bad(
                LM_FILE,
                format!("is of the run {:?}, not the appendix's {run:?}", source.run),
            ));
        }
        let mut runs = Vec::new();
        for row in data_rows(&text, '\t') {
            let [program, threads, speed] = row.as_slice() else {
                return Err(bad(LM_FILE, format!("bad row {row:?}")));
            };
            let fused = match *program {
                "crate" => false,
                "crate_fused" => true,
                other => return Err(bad(LM_FILE, format!("unknown program {other:?}"))),
            };
            runs.push((fused, number(LM_FILE, threads)?, number(LM_FILE, speed)?));
        }
        Ok(LmTraining { runs, source })
    }

    /// The tokens per second of every run of one path on `threads`.
    pub fn speeds(&self, fused: bool, threads: usize) -> Vec<f64> {
        (self.runs.iter()).filter(|r| r.0 == fused && r.1 == threads).map(|r| r.2).collect()
    }

    /// The thread counts measured, in order.
    pub fn threads(&self) -> Vec<usize> {
        let mut threads: Vec<usize> = self.runs.iter().map(|r| r.1).collect();
        threads.dedup();
        threads
    }
}

/// Each path's runs and their mean, by threads, and the ratio of the
/// means (the fused kernel's over chapter 2's).
pub fn lm_training_table(lm: &LmTraining) -> String {
    let runs = |xs: &[f64]| {
        let each: Vec<String> = xs.iter().map(|x| format!("{x:.0}")).collect();
        format!("{} (mean {:.0})", each.join(", "), mean(xs))
    };
    let rows: Vec<Vec<String>> = lm
        .threads()
        .into_iter()
        .map(|t| {
            let (weights, fused) = (lm.speeds(false, t), lm.speeds(true, t));
            vec![
                t.to_string(),
                runs(&weights),
                runs(&fused),
                format!("{:.3}", mean(&fused) / mean(&weights)),
            ]
        })
        .collect();
    format!(
        "chapter 16's model, training tokens per second (steps 101 to 300 of each run)\n{}",
        table(&["threads", "weights kept", "fused kernel", "fused / weights"], &rows)
    )
}
