//! The unbound-number check. Every number a chapter shows a reader (prose,
//! tables, captions, alt text, quizzes, solutions, math) must be *bound*:
//!
//! 1. it lies inside text the chapter's numbers test asserts verbatim
//!    ([`Bindings::quoted`]: output the crate computes), or repeats a number
//!    of such an asserted output block of the same chapter;
//! 2. or the numbers test registered it with the assertion that checks it
//!    ([`Bindings::value`], [`Bindings::exact`]: the value computed by crate
//!    code, within a stated tolerance);
//! 3. or it falls in one of the exempt categories of [`exemption`], each with
//!    its reason.
//!
//! Claims about data ("grows", "stays", "faster", "times") are numbers too:
//! every line that makes one must hold a phrase registered with
//! [`Bindings::claim`], together with the check over the data.
//!
//! Measured figures carry their source ([`Bindings::from`]): the run and
//! the statistic of the data file they come from. A sentence, a table or an
//! output block that holds figures of two runs, or of two statistics, is a
//! comparison the data cannot support, and fails the check too
//! (the `units` of a page).
//!
//! Claims about what training learned are numbers too, on the pages that
//! train models (those that show the command `cargo xtask train`): every line there that
//! says what a model learned or found must be registered with
//! [`Bindings::learned`], with its evidence: one training run, which the
//! section must say, or runs from several initialisations, whose spread the
//! paragraph must show.
//!
//! There is no list of allowed numbers without an assertion.

use std::ops::Range;

mod exempt;
mod learned;
mod scan;
mod sourced;
mod units;

pub use exempt::exemption;
pub use learned::Evidence;
use scan::{claim_word, line_holds, normalise, reader_lines};
pub use scan::{parse, tokens, Token};
pub use sourced::Sourced;

/// What one chapter's numbers test binds, built by calling crate code.
pub struct Bindings {
    chapter: String,
    text: String,
    tokens: Vec<Token>,
    covered: Vec<Range<usize>>,
    block_numbers: Vec<String>,
    values: Vec<String>,
    claims: Vec<String>,
    /// Bound numbers (as normalised text) with the run and statistic of
    /// the file they were measured in.
    sourced_values: Vec<(String, String)>,
    /// Quoted output with the run and statistic it was printed from.
    sourced_spans: Vec<(Range<usize>, String)>,
    /// Claims about measured data, with their run and statistic.
    sourced_claims: Vec<(String, String)>,
    /// Claims about what training learned, checked by [`Bindings::learned`].
    learned: Vec<String>,
}

impl Bindings {
    /// Reads `book/CHAPTER`.
    pub fn new(chapter: &str) -> Self {
        let path = crate::root().join("book").join(chapter);
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        Bindings::from_text(chapter, text)
    }

    /// Binds the numbers of `text`, a page named `chapter`.
    pub fn from_text(chapter: &str, text: String) -> Self {
        Bindings {
            chapter: chapter.to_string(),
            tokens: tokens(&text),
            text,
            covered: Vec::new(),
            block_numbers: Vec::new(),
            values: Vec::new(),
            claims: Vec::new(),
            sourced_values: Vec::new(),
            sourced_spans: Vec::new(),
            sourced_claims: Vec::new(),
            learned: Vec::new(),
        }
    }

    /// Asserts that the chapter contains `block` verbatim (output computed by
    /// crate code) and binds every number inside it.
    pub fn quoted(&mut self, block: &str) -> &mut Self {
        let starts: Vec<usize> = self.text.match_indices(block).map(|(i, _)| i).collect();
        assert!(
            !starts.is_empty(),
            "{} does not quote this output of its example:\n{block}",
            self.chapter
        );
        for start in starts {
            self.covered.push(start..start + block.len());
        }
        if block.contains("```text") || block.contains('\n') {
            self.block_numbers.extend(tokens(block).into_iter().map(|t| t.text));
        }
        self
    }

    /// Asserts that `shown` (as the chapter writes it: "0.43", "10,000",
    /// "1.4", "2.4e-7") is within `tolerance` of `computed`, and that the
    /// chapter shows it; binds it.
    pub fn value(&mut self, shown: &str, computed: f64, tolerance: f64) -> &mut Self {
        let number = parse(shown);
        assert!(
            (number - computed).abs() <= tolerance,
            "{}: the text says {shown}, the crate computes {computed} (tolerance {tolerance})",
            self.chapter
        );
        self.register(shown)
    }

    /// Asserts that `computed`, rounded to as many decimals as `shown` has,
    /// is `shown` (the tolerance is half a unit of the last shown digit);
    /// binds it.
    pub fn rounded(&mut self, shown: &str, computed: f64) -> &mut Self {
        let normal = normalise(shown);
        let (mantissa, exponent) = match normal.split_once('e') {
            Some((m, e)) => (m.to_string(), e.parse::<i32>().unwrap()),
            None => (normal.trim_end_matches(['%', '×']).to_string(), 0),
        };
        let digits = mantissa.split('.').nth(1).map_or(0, str::len) as i32;
        let unit = 10f64.powi(exponent - digits);
        self.value(shown, computed, 0.5 * unit * (1.0 + 1e-9))
    }

    /// Asserts that `shown` is an upper bound of `computed` (a tolerance, a
    /// "within", an "at most"); binds it.
    pub fn at_most(&mut self, shown: &str, computed: f64) -> &mut Self {
        assert!(
            computed <= parse(shown),
            "{}: the text bounds it by {shown}, the crate computes {computed}",
            self.chapter
        );
        self.register(shown)
    }

    /// Asserts that `shown` is a lower bound of `computed` ("more than",
    /// "exceeds"); binds it.
    pub fn at_least(&mut self, shown: &str, computed: f64) -> &mut Self {
        assert!(
            computed >= parse(shown),
            "{}: the text says more than {shown}, the crate computes {computed}",
            self.chapter
        );
        self.register(shown)
    }

    /// Asserts that a non-numeric fact the text shows (a date) is what the
    /// data say; binds it.
    pub fn fact(&mut self, shown: &str, computed: &str) -> &mut Self {
        assert_eq!(shown, computed, "{}: the text says {shown}", self.chapter);
        self.register(shown)
    }

    /// Asserts that `shown` is exactly `computed` (a count, a size, a constant
    /// of the crate) and binds it.
    pub fn exact(&mut self, shown: &str, computed: impl Into<f64>) -> &mut Self {
        let computed = computed.into();
        assert_eq!(
            parse(shown),
            computed,
            "{}: the text says {shown}, the crate has {computed}",
            self.chapter
        );
        self.register(shown)
    }

    /// Asserts a claim about data (`holds`, computed over the data the claim
    /// describes) and binds the lines that contain `phrase`.
    pub fn claim(&mut self, phrase: &str, holds: bool) -> &mut Self {
        assert!(holds, "{}: the claim \"{phrase}\" does not hold", self.chapter);
        assert!(
            self.text.contains(phrase),
            "{}: the claim \"{phrase}\" is not in the text",
            self.chapter
        );
        self.claims.push(phrase.to_string());
        self
    }

    fn register(&mut self, shown: &str) -> &mut Self {
        let normal = normalise(shown);
        assert!(
            self.tokens.iter().any(|t| t.text == normal),
            "{}: the bound number {shown} is not in the text",
            self.chapter
        );
        self.values.push(normal);
        self
    }

    /// Every number of the chapter that is not bound, as `file:line: number`.
    pub fn unbound(&self) -> Vec<String> {
        let mut found = Vec::new();
        for t in &self.tokens {
            let covered = self.covered.iter().any(|r| r.contains(&t.start));
            let bound = covered
                || self.block_numbers.contains(&t.text)
                || self.values.contains(&t.text)
                || exemption(&self.text, t).is_some();
            if !bound {
                found.push(format!("book/{}:{}: {}", self.chapter, t.line, t.text));
            }
        }
        for line in reader_lines(&self.text) {
            // A quiz option is put to the reader, not stated by the book.
            let text = line.text;
            let option = text.starts_with("- (") && text.get(4..6) == Some(") ");
            if let Some(word) = claim_word(text).filter(|_| !option) {
                if !self.claims.iter().any(|c| line_holds(text, c)) {
                    found.push(format!(
                        "book/{}:{}: unchecked claim \"{word}\"",
                        self.chapter, line.number
                    ));
                }
            }
        }
        found.extend(self.mixed_runs());
        found.extend(self.unchecked_learning());
        found
    }

    /// Panics, naming each, if any number or claim is unbound.
    pub fn assert_all_bound(&self) {
        let found = self.unbound();
        assert!(
            found.is_empty(),
            "{} numbers or claims are not bound by a test:\n{}",
            found.len(),
            found.join("\n")
        );
    }
}

#[cfg(test)]
mod tests;
