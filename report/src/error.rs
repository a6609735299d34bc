//! What can go wrong in the book's machinery: the crate's own errors, and
//! the measurement files of `book/data/` missing, incomplete or from
//! different runs. Each message says what to do.

use std::fmt;

use attn::error::AttnError;

/// An error of the report helpers.
#[derive(Clone, PartialEq)]
pub enum ReportError {
    /// An error of the crate's own functions.
    Attn(AttnError),
    /// A committed measurement the book needs is absent from `book/data/`.
    MissingMeasurement {
        /// The method, e.g. `"naive"`.
        method: String,
        /// The sequence length.
        n: u64,
    },
    /// A committed data file that cannot be read, or has no run header.
    MissingDataFile {
        /// The file's path.
        path: String,
        /// Why it cannot be read.
        reason: String,
    },
    /// Two committed data files put side by side whose figures come from
    /// different measurement runs or are different statistics (a mean and a
    /// best-of), which the book never compares.
    MixedMeasurements {
        /// The first file, its run and statistic.
        first: String,
        /// The file that differs from it.
        second: String,
    },
}

impl From<AttnError> for ReportError {
    fn from(e: AttnError) -> Self {
        ReportError::Attn(e)
    }
}

/// As [`fmt::Display`]: an example's `main` that returns an error prints it
/// with `Debug`, and a reader should read the sentence, not the variant.
impl fmt::Debug for ReportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for ReportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReportError::Attn(e) => e.fmt(f),
            ReportError::MissingMeasurement { method, n } => write!(
                f,
                "no measurement of {method} at n = {n} in book/data (run `cargo xtask measure`)"
            ),
            ReportError::MissingDataFile { path, reason } => {
                write!(
                    f,
                    "cannot read {path}: {reason} (restore it with `git checkout book/data`, or \
                     make it again: `cargo xtask train` for chapters 12 and 13, `cargo xtask \
                     train lm` and `cargo xtask measure lm` for chapter 16, `cargo xtask \
                     measure` for the timings)"
                )
            }
            ReportError::MixedMeasurements { first, second } => write!(
                f,
                "{first} and {second} are not one measurement run with one statistic, so their \
                 figures cannot be compared: measure them again together (`cargo xtask measure all`)"
            ),
        }
    }
}

impl std::error::Error for ReportError {}
