//! Where a committed data file's figures come from. Every file in
//! `book/data/` starts with one line of the form
//!
//! ```text
//! # date: 2026-11-23; cpu: Intel(R) Xeon(R) Processor; run: measure fast 2026-11-23T21:40Z; statistic: mean; …
//! ```
//!
//! naming the day, the processor, the *measurement run* (one invocation of
//! one command: every file it writes carries the same run) and the
//! *statistic* each figure is (the mean of repeated timings, the best of
//! them, an exact count…). Timings differ from one run to the next, on the
//! same machine, by more than the differences a comparison is about, so the
//! book compares figures only within one run and one statistic; the report
//! helpers that put two files side by side check it with [`one_run`].
//! Report helpers, not a reader's API.

use crate::error::ReportError;

/// The header of a committed data file, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct Provenance {
    /// The file's name in `book/data/`.
    pub file: String,
    /// When it was measured or derived, `YYYY-MM-DD`.
    pub date: String,
    /// The processor, as `/proc/cpuinfo` names it.
    pub cpu: String,
    /// The measurement run: the command and when it started.
    pub run: String,
    /// How each figure was summarised: `mean`, `best of 10`, `exact`, ….
    pub statistic: String,
    /// The whole line, without its `# `.
    pub line: String,
}

/// The keys every header must hold, in this order.
const KEYS: [&str; 4] = ["date", "cpu", "run", "statistic"];

impl Provenance {
    /// Parses the first line of `text`, the contents of `book/data/FILE`.
    pub fn parse(file: &str, text: &str) -> Result<Provenance, ReportError> {
        let bad = |reason: String| ReportError::MissingDataFile {
            path: format!("book/data/{file}"),
            reason,
        };
        let first = text.lines().next().unwrap_or_default();
        let line = first.strip_prefix("# ").ok_or_else(|| {
            bad(format!(
                "its first line should be a header `# date: …; cpu: …; run: …; statistic: …`, \
                 not {first:?}"
            ))
        })?;
        let mut values = [""; 4];
        let fields: Vec<&str> = line.split("; ").collect();
        for (value, key) in values.iter_mut().zip(KEYS) {
            *value = fields
                .iter()
                .find_map(|f| f.strip_prefix(key)?.strip_prefix(": "))
                .filter(|v| !v.trim().is_empty())
                .ok_or_else(|| bad(format!("its header has no `{key}: …`: {line:?}")))?;
        }
        let [date, cpu, run, statistic] = values.map(str::to_string);
        let is_date = date.len() == 10
            && date.char_indices().all(|(i, c)| {
                if i == 4 || i == 7 {
                    c == '-'
                } else {
                    c.is_ascii_digit()
                }
            });
        if !is_date {
            return Err(bad(format!("its header's date {date:?} is not YYYY-MM-DD")));
        }
        Ok(Provenance { file: file.to_string(), date, cpu, run, statistic, line: line.to_string() })
    }

    /// Reads `book/data/FILE`: its provenance and its whole text.
    pub fn read(file: &str) -> Result<(Provenance, String), ReportError> {
        let text = super::measurements::data_file(file)?;
        Ok((Provenance::parse(file, &text)?, text))
    }

    /// Whether figures of `self` and `other` may be compared: the same run
    /// and the same statistic.
    pub fn comparable(&self, other: &Provenance) -> bool {
        self.run == other.run && self.statistic == other.statistic
    }
}

/// `Ok` if every source is of one measurement run and one statistic; an
/// error naming the first two that are not, otherwise.
pub fn one_run(sources: &[&Provenance]) -> Result<(), ReportError> {
    let Some(first) = sources.first() else {
        return Ok(());
    };
    match sources.iter().find(|s| !first.comparable(s)) {
        None => Ok(()),
        Some(other) => {
            Err(ReportError::MixedMeasurements { first: describe(first), second: describe(other) })
        }
    }
}

/// The files of `book/data/` that hold timings, or figures measured beside
/// them, and that `cargo xtask measure all` rewrites in one run.
pub const TIMING_FILES: [&str; 17] = [
    "ch08-timings.csv",
    "ch08-memory.csv",
    "appendix-machine.csv",
    "appendix-numpy.csv",
    "appendix-profile.csv",
    "appendix-pytorch.csv",
    "appendix-tiles.csv",
    "appendix-timings.csv",
    "appendix-timings-blas.csv",
    "appendix-lm-training.tsv",
    "ch15-speed.tsv",
    "ch15-speed-pytorch.tsv",
    "ch16-speed.tsv",
    "ch16-cache-speed.tsv",
    "ch16-step-profile.tsv",
    "ch16-pytorch-training.tsv",
    "ch17-speed.tsv",
];

/// `Ok` if every header names one run, on one day and one processor,
/// whatever each file's statistic; an error naming the first file of
/// another run, otherwise.
pub fn one_measurement_run(headers: &[&Provenance]) -> Result<(), ReportError> {
    let Some(first) = headers.first() else {
        return Ok(());
    };
    let same =
        |p: &&&Provenance| (&p.run, &p.date, &p.cpu) == (&first.run, &first.date, &first.cpu);
    match headers.iter().find(|p| !same(p)) {
        None => Ok(()),
        Some(other) => {
            let at = |p: &Provenance| {
                format!("book/data/{} (run {}, {}, {})", p.file, p.run, p.date, p.cpu)
            };
            Err(ReportError::MixedMeasurements { first: at(first), second: at(other) })
        }
    }
}

fn describe(p: &Provenance) -> String {
    format!("book/data/{} (run {}, statistic {})", p.file, p.run, p.statistic)
}

/// The header line a measuring command writes, from `ATTN_RUN_HEADER`
/// (`date: …; cpu: …; run: …`, set by `cargo xtask` for every program of one
/// run) and what this file's figures are: `# date: …; cpu: …; run: …;
/// statistic: STATISTIC; DETAILS`, and the measuring settings when they
/// are set. Without the variable (a program run by hand) the run is `by
/// hand` and the date and processor unknown, which the book's tests refuse.
pub fn header(statistic: &str, details: &str) -> String {
    let run = std::env::var("ATTN_RUN_HEADER")
        .unwrap_or_else(|_| "date: unknown; cpu: unknown; run: by hand".into());
    let env: Vec<String> = MEASURING_SETTINGS
        .iter()
        .filter_map(|name| Some(format!("{name}={}", std::env::var(name).ok()?)))
        .collect();
    let env = if env.is_empty() { String::new() } else { format!("; env: {}", env.join(" ")) };
    format!("# {run}; statistic: {statistic}; {details}{env}")
}

/// The variables a timing depends on, glibc's allocator's and the size of
/// `rayon`'s global pool (the appendix "Making it fast" explains them); a
/// header names those set.
const MEASURING_SETTINGS: [&str; 3] =
    ["MALLOC_MMAP_MAX_", "MALLOC_TRIM_THRESHOLD_", "RAYON_NUM_THREADS"];

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = "# date: 2026-11-23; cpu: Some CPU; run: measure fast 2026-11-23T21:40Z; \
                        statistic: mean; threads: 1\nfunction,n,mean_ns\n";

    #[test]
    fn a_header_names_its_date_cpu_run_and_statistic() {
        let p = Provenance::parse("x.csv", LINE).unwrap();
        assert_eq!(p.date, "2026-11-23");
        assert_eq!(p.cpu, "Some CPU");
        assert_eq!(p.run, "measure fast 2026-11-23T21:40Z");
        assert_eq!(p.statistic, "mean");
        assert!(p.line.ends_with("threads: 1"));
        for broken in [
            "function,n,mean_ns\n",
            "# date: 2026-11-23; cpu: x; statistic: mean\n",
            "# date: 23 Nov; cpu: x; run: y; statistic: mean\n",
            "# date: 2026-11-23; cpu: x; run: ; statistic: mean\n",
            "",
        ] {
            let err = Provenance::parse("x.csv", broken).unwrap_err().to_string();
            assert!(err.contains("book/data/x.csv"), "{err}");
        }
    }

    #[test]
    fn figures_of_two_runs_or_two_statistics_are_not_comparable() {
        let a = Provenance::parse("a.csv", LINE).unwrap();
        let same = Provenance::parse("b.csv", &LINE.replace("threads: 1", "by: x")).unwrap();
        let other_run = Provenance::parse("c.csv", &LINE.replace("21:40Z", "22:00Z")).unwrap();
        let best = Provenance::parse("d.csv", &LINE.replace("mean", "best of 7")).unwrap();
        assert!(one_run(&[&a, &same]).is_ok());
        let err = one_run(&[&a, &same, &other_run]).unwrap_err().to_string();
        assert!(err.contains("book/data/a.csv") && err.contains("book/data/c.csv"), "{err}");
        assert!(one_run(&[&a, &best]).is_err());
        assert!(one_run(&[]).is_ok());
    }

    #[test]
    fn timings_of_one_run_may_differ_in_statistic_but_not_in_run_day_or_processor() {
        let a = Provenance::parse("a.csv", LINE).unwrap();
        let best = Provenance::parse("b.csv", &LINE.replace("mean", "best of 7")).unwrap();
        assert!(one_measurement_run(&[&a, &best]).is_ok());
        for (from, to) in [("21:40Z", "22:00Z"), ("Some CPU", "Other CPU"), ("23;", "24;")] {
            let other = Provenance::parse("c.csv", &LINE.replacen(from, to, 1)).unwrap();
            let err = one_measurement_run(&[&a, &best, &other]).unwrap_err().to_string();
            assert!(err.contains("book/data/a.csv") && err.contains("book/data/c.csv"), "{err}");
        }
        assert!(one_measurement_run(&[]).is_ok());
    }
}
