//! The book means what it says. The numbers tests bind every number a page
//! shows to the code that computes it; these checks read the pages for the
//! meaning around the numbers, where a machine can:
//!
//! - `citations`: every "Author (year)" or "Author et al." has an entry in
//!   the bibliography, and every entry is cited;
//! - `references`: the introduction lists the chapters SUMMARY.md lists,
//!   counts them right, and no page points a reader to the wrong chapter or
//!   to a figure that does not exist;
//! - `exercises`: every exercise is of a declared kind, a code exercise with
//!   a tested solution in the crate, or a discussion with a written answer;
//! - `data`: every committed data file names its date, processor,
//!   measurement run and statistic (the numbers tests then refuse a
//!   sentence or table that compares two runs or two statistics);
//! - `notation`: the notation page lists every symbol the book's math uses;
//! - `structure`: each layer of the crate is implemented once, and the
//!   library does not use the exercises' solutions.

#[path = "../common/mod.rs"]
mod common;

mod citations;
mod data;
mod exercises;
mod notation;
mod references;
mod structure;

pub use common::book::{book, page, pages, summary};

/// The numbered chapters (files `chNN-….md`), in order: `(number, file)`.
pub fn chapters() -> Vec<(usize, String)> {
    summary()
        .into_iter()
        .filter_map(|l| {
            let n = l.file.strip_prefix("ch")?.get(..2)?.parse().ok()?;
            Some((n, l.file))
        })
        .collect()
}

/// A page's prose as a reader reads it, with the same byte offsets as the
/// page: code and output fences, inline code and math blanked out (every
/// character but newlines becomes a space), so that what is left is the
/// words. Line breaks stay, for line numbers.
pub fn prose(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let (mut in_fence, mut in_display) = (false, false);
    let blank = |line: &str| -> String {
        line.chars().map(|c| if c == '\n' { '\n' } else { ' ' }).collect()
    };
    for line in text.split_inclusive('\n') {
        let fence = line.trim_start().starts_with("```");
        let display = !in_fence && line.trim() == "$$";
        if fence || in_fence || display || in_display {
            out.push_str(&blank(line));
            in_fence ^= fence;
            in_display ^= display;
            continue;
        }
        let mut in_code = false;
        let mut in_math = false;
        for c in line.chars() {
            let toggles = (c == '`' && !in_math) || (c == '$' && !in_code);
            if c == '`' && !in_math {
                in_code = !in_code;
            } else if c == '$' && !in_code {
                in_math = !in_math;
            }
            let blank = toggles || in_code || in_math;
            out.push(if blank && c != '\n' { ' ' } else { c });
        }
    }
    out
}

/// The 1-based line of byte `offset` in `text`.
pub fn line_of(text: &str, offset: usize) -> usize {
    text[..offset].matches('\n').count() + 1
}
