//! The unbound-number check. Every number a chapter shows a reader (prose,
//! tables, captions, alt text, quizzes, solutions, math) must be *bound*:
//!
//! 1. it lies inside text the chapter's numbers test asserts verbatim
//!    ([`Bindings::quoted`]: output the crate computes);
//! 2. or the numbers test registered it with the assertion that checks it
//!    ([`Bindings::value`], [`Bindings::exact`]: the value computed by crate
//!    code, within a stated tolerance);
//! 3. or it falls in one of the exempt categories of [`exemption`], each with
//!    its reason.
//!
//! A binding binds one place: the first place in the current section
//! ([`Bindings::section`]) that shows the number and is not bound yet, with
//! the same figure elsewhere in that place's `##` section (a table and the
//! sentence that reads it). A figure repeated in another `##` section needs
//! a binding there too ([`Bindings::again`] for the same figure), so that a
//! stale copy elsewhere fails; and a failure names its section.
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
mod literal;
mod scan;
mod sourced;
mod units;

pub use exempt::exemption;
pub use learned::Evidence;
pub use literal::literal_bindings;
use scan::{claim_word, line_holds, normalise, reader_lines, ReaderLine};
pub use scan::{parse, tokens, Token};
pub use sourced::Sourced;

/// What one chapter's numbers test binds, built by calling crate code.
pub struct Bindings {
    chapter: String,
    text: String,
    tokens: Vec<Token>,
    /// Which tokens a binding has bound (by place).
    bound: Vec<bool>,
    /// The byte range bindings search: the whole page, or one section.
    scope: Range<usize>,
    /// The token a binding bound last.
    last_bound: Option<usize>,
    /// Figures a binding checked (as normalised text), which
    /// [`Bindings::again`] may bind where the page repeats them.
    checked: Vec<String>,
    claims: Vec<String>,
    /// Bound tokens (by index) with the run and statistic of the file they
    /// were measured in.
    sourced_values: Vec<(usize, String)>,
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
        let tokens = tokens(&text);
        Bindings {
            chapter: chapter.to_string(),
            bound: vec![false; tokens.len()],
            scope: 0..text.len(),
            last_bound: None,
            checked: Vec::new(),
            tokens,
            text,
            claims: Vec::new(),
            sourced_values: Vec::new(),
            sourced_spans: Vec::new(),
            sourced_claims: Vec::new(),
            learned: Vec::new(),
        }
    }

    /// Binds only what lies in the section whose heading line contains
    /// `heading` (from that heading to the next one of the same or a higher
    /// level), until the next call; `""` is the whole page.
    pub fn section(&mut self, heading: &str) -> &mut Self {
        self.scope = if heading.is_empty() {
            0..self.text.len()
        } else {
            section_range(&self.text, heading)
                .unwrap_or_else(|| panic!("{}: no heading contains \"{heading}\"", self.chapter))
        };
        self
    }

    /// Asserts that the current section contains `block` verbatim (output
    /// computed by crate code) and binds every number inside it.
    pub fn quoted(&mut self, block: &str) -> &mut Self {
        let scope = self.scope.clone();
        let starts: Vec<usize> =
            self.text[scope.clone()].match_indices(block).map(|(i, _)| scope.start + i).collect();
        assert!(
            !starts.is_empty(),
            "{}{} does not quote this output of its example:\n{block}",
            self.chapter,
            self.where_scope()
        );
        for start in starts {
            let span = start..start + block.len();
            let inside: Vec<String> = self
                .tokens
                .iter()
                .filter(|t| span.contains(&t.start))
                .map(|t| t.text.clone())
                .collect();
            // The block's numbers, and their repeats in the block's section.
            let part = part_range(&self.text, start);
            self.checked.extend(inside.iter().cloned());
            for (t, bound) in self.tokens.iter().zip(&mut self.bound) {
                *bound |= span.contains(&t.start)
                    || (part.contains(&t.start) && inside.contains(&t.text));
            }
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

    /// Binds the next place of the current section that shows `shown` and
    /// is not bound yet, as a repeat of a figure that this test has already
    /// checked (a binding above, or a quoted block): the same figure, shown
    /// again in another section. Each repeat is one call, in its section.
    pub fn again(&mut self, shown: &str) -> &mut Self {
        let normal = normalise(shown);
        assert!(
            self.checked.contains(&normal),
            "{}{}: {shown} repeats no figure this test has checked",
            self.chapter,
            self.where_scope()
        );
        let free = self
            .tokens
            .iter()
            .zip(&self.bound)
            .any(|(t, &bound)| !bound && t.text == normal && self.scope.contains(&t.start));
        assert!(
            free,
            "{}{}: no place left that shows {shown} unbound",
            self.chapter,
            self.where_scope()
        );
        self.register(shown)
    }

    /// Binds the first place of the current section that shows `shown` and
    /// is not bound yet, with its repeats in the same section.
    fn register(&mut self, shown: &str) -> &mut Self {
        let normal = normalise(shown);
        self.checked.push(normal.clone());
        let shows = |t: &Token| t.text == normal && self.scope.contains(&t.start);
        let free = self.tokens.iter().zip(&self.bound).position(|(t, &bound)| !bound && shows(t));
        // Every place is bound already: this is a further check of one of
        // them (a loop checking several values against one shown figure).
        let place = free.or_else(|| self.tokens.iter().position(shows));
        let Some(place) = place else {
            panic!(
                "{}{}: the bound number {shown} is not in the text",
                self.chapter,
                self.where_scope()
            );
        };
        // The same figure repeated in the same (smallest) section is the
        // same place: a table and the sentence that reads it.
        let part = part_range(&self.text, self.tokens[place].start);
        for (t, bound) in self.tokens.iter().zip(&mut self.bound) {
            *bound |= t.text == normal && part.contains(&t.start);
        }
        self.last_bound = Some(place);
        self
    }

    /// " (§ heading)" for a scope narrower than the page.
    fn where_scope(&self) -> String {
        if self.scope == (0..self.text.len()) {
            String::new()
        } else {
            format!(" (§ {})", heading_of(&self.text, self.scope.start))
        }
    }

    /// Every number of the chapter that is not bound, as `file:line: number`.
    pub fn unbound(&self) -> Vec<String> {
        let mut found = Vec::new();
        for (t, &bound) in self.tokens.iter().zip(&self.bound) {
            if !bound && exemption(&self.text, t).is_none() {
                found.push(format!(
                    "book/{}:{} (§ {}): {}",
                    self.chapter,
                    t.line,
                    heading_of(&self.text, t.start),
                    t.text
                ));
            }
        }
        for line in reader_lines(&self.text) {
            // A quiz option is put to the reader, not stated by the book.
            let text = line.text;
            let option = text.starts_with("- (") && text.get(4..6) == Some(") ");
            if let Some(word) = claim_word(text).filter(|_| !option) {
                if !self.claims.iter().any(|c| line_holds(text, c)) {
                    found.push(format!(
                        "book/{}:{} (§ {}): unchecked claim \"{word}\"",
                        self.chapter,
                        line.number,
                        heading_of(&self.text, line.start)
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

/// The heading line (without its `#`s) of the section holding byte `at`;
/// "start of page" before the first heading.
fn heading_of(text: &str, at: usize) -> &str {
    reader_lines(text)
        .into_iter()
        .take_while(|l| l.start <= at)
        .filter(|l| !l.in_output && l.text.starts_with('#'))
        .last()
        .map_or("start of page", |l| l.text.trim_start_matches('#').trim())
}

/// The smallest section holding byte `at`: from the heading before it (or
/// the page's start) to the next heading of any level.
fn part_range(text: &str, at: usize) -> Range<usize> {
    let headings: Vec<usize> = reader_lines(text)
        .into_iter()
        .filter(|l| !l.in_output && (l.text.starts_with("# ") || l.text.starts_with("## ")))
        .map(|l| l.start)
        .collect();
    let start = headings.iter().rev().find(|&&h| h <= at).copied().unwrap_or(0);
    let end = headings.iter().find(|&&h| h > at).copied().unwrap_or(text.len());
    start..end
}

/// The byte range of the section whose heading line contains `heading`:
/// from the heading to the next heading of the same or a higher level.
fn section_range(text: &str, heading: &str) -> Option<Range<usize>> {
    let level = |l: &str| l.chars().take_while(|&c| c == '#').count();
    let lines = reader_lines(text);
    let headings: Vec<_> = lines.iter().filter(|l| !l.in_output && level(l.text) > 0).collect();
    let title = |l: &&ReaderLine| l.text.trim_start_matches('#').trim().to_string();
    let at = headings
        .iter()
        .position(|l| title(l) == heading)
        .or_else(|| headings.iter().position(|l| l.text.contains(heading)))?;
    let depth = level(headings[at].text);
    let end =
        headings[at + 1..].iter().find(|l| level(l.text) <= depth).map_or(text.len(), |l| l.start);
    Some(headings[at].start..end)
}

#[cfg(test)]
mod tests;

/// A file of the repository, read for a constant that the code a sentence
/// describes keeps private (a test's tolerance, an example's setting).
pub fn repository_file(path: &str) -> String {
    std::fs::read_to_string(crate::root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The numbers `pattern`'s groups capture in the repository file `path`,
/// thousands written `60_000` as Rust writes them.
pub fn captured(path: &str, pattern: &str) -> Vec<f64> {
    let text = repository_file(path);
    let found = regex::Regex::new(pattern).unwrap().captures(&text);
    let found = found.unwrap_or_else(|| panic!("{path} no longer matches {pattern}"));
    let number = |g: regex::Match| {
        g.as_str().replace('_', "").parse().unwrap_or_else(|e| panic!("{path}: {e}"))
    };
    found.iter().skip(1).map(|g| number(g.unwrap())).collect()
}

/// The first number after `after` in the function or constant `item` of the
/// crate file `path` (a test's tolerance or trial count, an example's
/// setting, which the page states): the page and the code then cannot drift
/// apart.
pub fn number_in_source(path: &str, item: &str, after: &str) -> f64 {
    let text = repository_file(path);
    let start = [format!("fn {item}("), format!("const {item}:")]
        .iter()
        .find_map(|d| text.find(d.as_str()))
        .unwrap_or_else(|| panic!("{path}: no fn or const {item}"));
    let body = &text[start..];
    let end = body[1..].find("\nfn ").map_or(body.len(), |e| e + 1);
    let at = body[..end].find(after).unwrap_or_else(|| panic!("{path}: fn {item} has no {after}"));
    let rest = &body[at + after.len()..];
    let number: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || "._e-".contains(*c))
        .filter(|&c| c != '_')
        .collect();
    number.parse().unwrap_or_else(|e| panic!("{path}: fn {item}: {after}{number}: {e}"))
}
