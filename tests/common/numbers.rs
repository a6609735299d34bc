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
//! ([`super::units`]).
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

use attn::experiments::provenance::{one_run, Provenance};

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

/// What a claim about what training learned rests on.
pub enum Evidence<'a> {
    /// One training run: its section must say so ("one initialisation",
    /// "this run", …).
    OneRun,
    /// No run at all: a conjecture, which its paragraph must call one ("we
    /// conjecture", "we expect").
    Conjecture,
    /// Runs from at least three initialisations, with the smallest and the
    /// largest value as the paragraph shows them.
    Runs {
        values: &'a [f64],
        lowest: &'a str,
        highest: &'a str,
    },
}

/// Phrases by which a section says its results are one training run.
const ONE_RUN: [&str; 5] = [
    "one initialisation",
    "this initialisation",
    "one training run",
    "this run",
    "one run",
];

/// Words that say what a model learned.
const LEARNED_WORDS: [&str; 6] = ["learned", "learns", "learnt", "learn", "finds", "found"];

/// Uses of those words that describe a part of a model or a setting, not
/// what training produced.
const NOT_CLAIMS: [&str; 9] = [
    "learned table",
    "learned position",
    "**learned**",
    "learning rate",
    "learns to predict the next token",
    "learns to reverse",
    "learned *alignment*",
    "learn a lookup",
    "what the\nmodel learns",
];

/// Bindings of figures measured in one run, with one statistic: what
/// [`Bindings::from`] returns. Each method is [`Bindings`]' own, and also
/// records the figures' source.
pub struct Sourced<'a> {
    bindings: &'a mut Bindings,
    source: String,
}

impl Sourced<'_> {
    /// [`Bindings::quoted`], for output printed from these sources.
    pub fn quoted(&mut self, block: &str) -> &mut Self {
        self.bindings.quoted(block);
        let text = &self.bindings.text;
        for (start, _) in text.match_indices(block) {
            self.bindings
                .sourced_spans
                .push((start..start + block.len(), self.source.clone()));
        }
        self
    }

    /// [`Bindings::value`], for a figure of these sources.
    pub fn value(&mut self, shown: &str, computed: f64, tolerance: f64) -> &mut Self {
        self.bindings.value(shown, computed, tolerance);
        self.record(shown)
    }

    /// [`Bindings::rounded`], for a figure of these sources.
    pub fn rounded(&mut self, shown: &str, computed: f64) -> &mut Self {
        self.bindings.rounded(shown, computed);
        self.record(shown)
    }

    /// [`Bindings::at_most`], for a figure of these sources.
    pub fn at_most(&mut self, shown: &str, computed: f64) -> &mut Self {
        self.bindings.at_most(shown, computed);
        self.record(shown)
    }

    /// [`Bindings::at_least`], for a figure of these sources.
    pub fn at_least(&mut self, shown: &str, computed: f64) -> &mut Self {
        self.bindings.at_least(shown, computed);
        self.record(shown)
    }

    /// [`Bindings::claim`], for a claim about these sources' data.
    pub fn claim(&mut self, phrase: &str, holds: bool) -> &mut Self {
        self.bindings.claim(phrase, holds);
        self.bindings
            .sourced_claims
            .push((phrase.to_string(), self.source.clone()));
        self
    }

    fn record(&mut self, shown: &str) -> &mut Self {
        self.bindings
            .sourced_values
            .push((normalise(shown), self.source.clone()));
        self
    }
}

/// A number as written: its text (without thousands separators) and where.
#[derive(Debug, Clone)]
pub struct Token {
    pub text: String,
    pub start: usize,
    pub end: usize,
    pub line: usize,
    pub in_math: bool,
    pub in_output: bool,
}

impl Bindings {
    /// Reads `book/CHAPTER`.
    pub fn new(chapter: &str) -> Self {
        let path = format!("{}/book/{chapter}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
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

    /// Registers a claim about what training learned (the lines holding
    /// `phrase`), and checks its evidence: for [`Evidence::OneRun`], the
    /// section (the text under the nearest heading) says it is one run; for
    /// [`Evidence::Runs`], there are at least three runs, `lowest` and
    /// `highest` are their extremes as rounded, and the paragraph shows both.
    pub fn learned(&mut self, phrase: &str, evidence: Evidence) -> &mut Self {
        let Some(at) = self.text.find(phrase) else {
            panic!(
                "{}: the claim \"{phrase}\" is not in the text",
                self.chapter
            );
        };
        match evidence {
            Evidence::OneRun => {
                let start = self.text[..at].rfind("\n#").map_or(0, |p| p + 1);
                let end = self.text[at..]
                    .find("\n#")
                    .map_or(self.text.len(), |p| at + p);
                let section = self.text[start..end].replace('\n', " ");
                assert!(
                    ONE_RUN.iter().any(|m| section.contains(m)),
                    "{}: \"{phrase}\" rests on one training run, and its section does not say so \
                     (say \"one initialisation\", \"this run\", …)",
                    self.chapter
                );
            }
            Evidence::Conjecture => {
                let start = self.text[..at].rfind("\n\n").map_or(0, |p| p + 2);
                let end = self.text[at..]
                    .find("\n\n")
                    .map_or(self.text.len(), |p| at + p);
                let paragraph = self.text[start..end].replace('\n', " ");
                assert!(
                    ["we conjecture", "we expect", "We conjecture", "We expect"]
                        .iter()
                        .any(|m| paragraph.contains(m)),
                    "{}: \"{phrase}\" is untested, and its paragraph does not call it a conjecture",
                    self.chapter
                );
            }
            Evidence::Runs {
                values,
                lowest,
                highest,
            } => {
                assert!(
                    values.len() >= 3,
                    "{}: \"{phrase}\" rests on {} runs; a claim about training needs at least three",
                    self.chapter,
                    values.len()
                );
                let lo = values.iter().cloned().fold(f64::INFINITY, f64::min);
                let hi = values.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                self.rounded(lowest, lo).rounded(highest, hi);
                let start = self.text[..at].rfind("\n\n").map_or(0, |p| p + 2);
                let end = self.text[at..]
                    .find("\n\n")
                    .map_or(self.text.len(), |p| at + p);
                let paragraph = &self.text[start..end];
                assert!(
                    paragraph.contains(lowest) && paragraph.contains(highest),
                    "{}: the paragraph of \"{phrase}\" does not show the runs' spread, {lowest} to {highest}",
                    self.chapter
                );
            }
        }
        self.learned.push(phrase.to_string());
        self
    }

    /// Binds figures measured in `sources`, which must be one run with one
    /// statistic (else the test fails, naming them), and remembers that
    /// source for the check of [`super::units`].
    pub fn from(&mut self, sources: &[&Provenance]) -> Sourced<'_> {
        if let Err(e) = one_run(sources) {
            panic!("{}: {e}", self.chapter);
        }
        let source = sources.first().map_or(String::new(), |p| {
            format!("run {}, statistic {}", p.run, p.statistic)
        });
        Sourced {
            bindings: self,
            source,
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
            self.block_numbers
                .extend(tokens(block).into_iter().map(|t| t.text));
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
        assert!(
            holds,
            "{}: the claim \"{phrase}\" does not hold",
            self.chapter
        );
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

    /// On a page that trains models, every line that says what a model
    /// learned and is not registered with [`Bindings::learned`].
    fn unchecked_learning(&self) -> Vec<String> {
        if !self.text.contains("```text\ncargo xtask train") {
            return Vec::new();
        }
        let mut found = Vec::new();
        let flat = self.text.replace('\n', " ");
        let excluded: Vec<std::ops::Range<usize>> = NOT_CLAIMS
            .iter()
            .flat_map(|p| {
                let p = p.replace('\n', " ");
                flat.match_indices(&p)
                    .map(|(i, m)| i..i + m.len())
                    .collect::<Vec<_>>()
            })
            .collect();
        for line in reader_lines(&self.text) {
            let option = line.text.starts_with("- (") && line.text.get(4..6) == Some(") ");
            if line.in_output || option || line.text.trim_start().starts_with('#') {
                continue;
            }
            let lower = line.text.to_lowercase();
            let hit = LEARNED_WORDS.iter().find_map(|w| {
                lower.match_indices(w).find_map(|(i, _)| {
                    let before = lower[..i].chars().next_back();
                    let after = lower[i + w.len()..].chars().next();
                    let word = !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
                        && !after.is_some_and(|c| c.is_alphanumeric() || c == '_');
                    let at = line.start + i;
                    let exempt = excluded.iter().any(|r| r.contains(&at));
                    (word && !exempt).then_some(*w)
                })
            });
            if let Some(word) = hit {
                if !self.learned.iter().any(|c| line_holds(line.text, c)) {
                    found.push(format!(
                        "book/{}:{}: a claim about what training learned (\"{word}\") without its evidence",
                        self.chapter, line.number
                    ));
                }
            }
        }
        found
    }

    /// Every sentence, table or output block that holds figures of more
    /// than one run or statistic, as `file:line: …`.
    pub fn mixed_runs(&self) -> Vec<String> {
        let mut found = Vec::new();
        for unit in super::units::units(&self.text) {
            let mut sources: Vec<&str> = Vec::new();
            for t in self.tokens.iter().filter(|t| unit.range.contains(&t.start)) {
                let by_value = self.sourced_values.iter().filter(|(v, _)| *v == t.text);
                let by_span = self
                    .sourced_spans
                    .iter()
                    .filter(|(r, _)| r.contains(&t.start))
                    .map(|(_, s)| s);
                sources.extend(by_value.map(|(_, s)| s.as_str()));
                sources.extend(by_span.map(String::as_str));
            }
            let unit_text = &self.text[unit.range.clone()];
            let flat = unit_text.replace('\n', " ");
            for (phrase, source) in &self.sourced_claims {
                if flat.contains(&phrase.replace('\n', " ")) {
                    sources.push(source);
                }
            }
            sources.sort();
            sources.dedup();
            if sources.len() > 1 {
                found.push(format!(
                    "book/{}:{}: one {} compares figures of different runs or statistics: {}",
                    self.chapter,
                    unit.line,
                    unit.kind,
                    sources.join(" and ")
                ));
            }
        }
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

/// A claim registered for a phrase binds each line holding part of it (a
/// phrase may wrap across lines).
fn line_holds(line: &str, phrase: &str) -> bool {
    let line = line.trim();
    !line.is_empty()
        && (phrase.contains(line) || line.contains(phrase) || {
            let words: Vec<&str> = phrase.split_whitespace().collect();
            (1..words.len()).any(|k| {
                line.ends_with(&words[..k].join(" ")) || line.starts_with(&words[k..].join(" "))
            })
        })
}

/// Words that state something measured about data.
const CLAIM_WORDS: [&str; 16] = [
    "grows",
    "grow",
    "growing",
    "stays",
    "stay",
    "faster",
    "slower",
    "rises",
    "falls",
    "shrinks",
    "halves",
    "doubles",
    "times smaller",
    "times larger",
    "times faster",
    "times slower",
];

fn claim_word(line: &str) -> Option<&'static str> {
    let lower = line.to_lowercase();
    CLAIM_WORDS.into_iter().find(|w| {
        lower.match_indices(w).any(|(i, _)| {
            let before = lower[..i].chars().next_back();
            let after = lower[i + w.len()..].chars().next();
            !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
        })
    })
}

/// A line a reader reads: prose, math, a table or an output block.
struct ReaderLine<'a> {
    /// 1-based.
    number: usize,
    /// Byte offset of the line in the page.
    start: usize,
    /// The line, with its newline.
    text: &'a str,
    /// Inside a `text` fence (output of an example).
    in_output: bool,
}

/// The lines a reader reads: not code (listings and runnable snippets), but
/// prose, math, tables and output blocks; fence lines themselves are left out.
fn reader_lines(text: &str) -> Vec<ReaderLine<'_>> {
    let mut lines = Vec::new();
    let mut fence: Option<String> = None;
    let mut offset = 0;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let start = offset;
        offset += line.len();
        if let Some(info) = line.trim_start().strip_prefix("```") {
            fence = match fence {
                None => Some(info.trim().to_string()),
                Some(_) => None,
            };
            continue;
        }
        let in_output = match &fence {
            Some(info) if info == "text" => true,
            Some(_) => continue,
            None => false,
        };
        lines.push(ReaderLine {
            number: i + 1,
            start,
            text: line,
            in_output,
        });
    }
    lines
}

/// Removes thousands separators (`10,000`, `10{,}000`) and writes the minus
/// sign as ASCII.
fn normalise(s: &str) -> String {
    s.replace("{,}", "").replace(',', "").replace('−', "-")
}

/// The number a shown text stands for ("10,000" → 10000, "2.4e-7").
pub fn parse(shown: &str) -> f64 {
    normalise(shown)
        .trim_end_matches(['%', '×'])
        .parse()
        .unwrap_or_else(|e| panic!("{shown} is not a number: {e}"))
}

/// Every number in the reader's text: outside code fences other than
/// `text`, outside link targets and include directives.
pub fn tokens(text: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut in_display_math = false;
    for line in reader_lines(text) {
        if line.text.trim() == "$$" {
            in_display_math = !in_display_math;
            continue;
        }
        scan_line(
            line.text,
            line.start,
            line.number,
            line.in_output,
            in_display_math,
            &mut out,
        );
    }
    out
}

fn scan_line(
    line: &str,
    start: usize,
    line_no: usize,
    in_output: bool,
    display_math: bool,
    out: &mut Vec<Token>,
) {
    let bytes = line.as_bytes();
    let skip = skipped_spans(line);
    let mut in_math = display_math;
    let mut i = 0;
    while i < bytes.len() {
        if !in_output && !display_math && bytes[i] == b'$' {
            in_math = !in_math;
            i += 1;
            continue;
        }
        if !bytes[i].is_ascii_digit() || skip.iter().any(|r| r.contains(&i)) {
            i += 1;
            continue;
        }
        // Digits glued to a name (d_k, f32, ch03, x1) are part of the name.
        let before = line[..i].chars().next_back();
        if before.is_some_and(|c| c.is_alphabetic() || c == '_' || c == '\\') {
            while i < bytes.len() && bytes[i].is_ascii_alphanumeric() {
                i += 1;
            }
            continue;
        }
        let end = date_end(line, i).unwrap_or_else(|| number_end(line, i));
        let after = line[end..].chars().next();
        // A number glued to a letter is a name or a unit-less product (4n²d, 2nd).
        if after.is_some_and(|c| c.is_ascii_alphabetic() && c != 'e') {
            i = end;
            while i < bytes.len() && bytes[i].is_ascii_alphanumeric() {
                i += 1;
            }
            continue;
        }
        // A power of ten in math, 10^{-7} or 3 \cdot 10^{-7}, is one number.
        if in_math && &line[i..end] == "10" {
            if let Some((exponent, close)) = power_of_ten(&line[end..]) {
                let joined = line[..i].trim_end();
                let mantissa = [" \\cdot", " \\times"]
                    .iter()
                    .find_map(|op| joined.strip_suffix(op.trim_start_matches(' ')))
                    .filter(|_| out.last().is_some_and(|t: &Token| t.line == line_no));
                let token = match mantissa {
                    Some(_) => {
                        let m = out.pop().unwrap();
                        Token {
                            text: format!("{}e{exponent}", m.text),
                            end: start + end + close,
                            ..m
                        }
                    }
                    None => Token {
                        text: format!("1e{exponent}"),
                        start: start + i,
                        end: start + end + close,
                        line: line_no,
                        in_math,
                        in_output,
                    },
                };
                out.push(token);
                i = end + close;
                continue;
            }
        }
        let mut first = i;
        if let Some(m) = line[..i].strip_suffix('-').or(line[..i].strip_suffix('−')) {
            let sign_before = m.chars().next_back();
            if sign_before.is_none_or(|c| " ([{=,:^".contains(c)) {
                first = m.len();
            }
        }
        // A unit glued to the number is part of it: 14% is not 14.
        let mut rest = line[end..].chars();
        let end = match (rest.next(), rest.next()) {
            (Some('%'), _) => end + 1,
            // 2504× is a factor; 4×4 is a shape.
            (Some('×'), next) if !next.is_some_and(char::is_alphanumeric) => end + '×'.len_utf8(),
            _ => end,
        };
        out.push(Token {
            text: normalise(&line[first..end]),
            start: start + first,
            end: start + end,
            line: line_no,
            in_math,
            in_output,
        });
        i = end;
    }
}

/// `^{-7}` or `^6` after a 10: the exponent and the length of that text.
fn power_of_ten(rest: &str) -> Option<(String, usize)> {
    let rest = rest.strip_prefix('^')?;
    if let Some(inner) = rest.strip_prefix('{') {
        let close = inner.find('}')?;
        let e = inner[..close].replace('−', "-");
        e.parse::<i32>().ok()?;
        Some((e, close + 3))
    } else {
        let d = rest.chars().next().filter(char::is_ascii_digit)?;
        Some((d.to_string(), 2))
    }
}

/// A date written as YYYY-MM-DD is one token.
fn date_end(line: &str, i: usize) -> Option<usize> {
    let b = line.as_bytes().get(i..i + 10)?;
    let shape = b.iter().enumerate().all(|(k, c)| {
        if k == 4 || k == 7 {
            *c == b'-'
        } else {
            c.is_ascii_digit()
        }
    });
    shape.then_some(i + 10)
}

/// The end of a number starting at `i`: digits, thousands groups (`,ddd` or
/// `{,}ddd`), a decimal part, an exponent.
fn number_end(line: &str, i: usize) -> usize {
    let b = line.as_bytes();
    let digits = |mut j: usize| {
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        j
    };
    let mut j = digits(i);
    loop {
        let rest = &line[j..];
        let sep = if rest.starts_with("{,}") {
            3
        } else if rest.starts_with(',') {
            1
        } else {
            0
        };
        let group = j + sep;
        if sep > 0
            && digits(group) == group + 3
            && !b.get(group + 3).is_some_and(|c| c.is_ascii_digit())
        {
            j = group + 3;
        } else {
            break;
        }
    }
    if b.get(j) == Some(&b'.') && b.get(j + 1).is_some_and(|c| c.is_ascii_digit()) {
        j = digits(j + 1);
    }
    if b.get(j) == Some(&b'e') {
        let k = if matches!(b.get(j + 1), Some(b'-') | Some(b'+')) {
            j + 2
        } else {
            j + 1
        };
        if b.get(k).is_some_and(|c| c.is_ascii_digit()) {
            j = digits(k);
        }
    }
    j
}

/// Byte ranges of a line that are not reader-facing numbers: link and image
/// targets, include directives, inline code that names a file or command.
fn skipped_spans(line: &str) -> Vec<Range<usize>> {
    let mut spans = Vec::new();
    let mut search = 0;
    while let Some(p) = line[search..].find("](") {
        let open = search + p + 1;
        let close = line[open..].find(')').map_or(line.len(), |c| open + c);
        spans.push(open..close);
        search = close;
    }
    for marker in [
        "{{#include",
        "http://",
        "https://",
        "examples/",
        "tests/",
        "src/",
        "book/",
    ] {
        for (p, _) in line.match_indices(marker) {
            let end = line[p..]
                .find(|c: char| c.is_whitespace() || c == '`' || c == ')' || c == '}')
                .map_or(line.len(), |e| p + e);
            spans.push(p..end.max(p + marker.len()));
        }
    }
    spans
}

/// Why a number needs no binding, if it is one of the exempt kinds.
pub fn exemption(text: &str, t: &Token) -> Option<&'static str> {
    let line_start = text[..t.start].rfind('\n').map_or(0, |p| p + 1);
    let before = &text[line_start..t.start];
    // Context may run over the line break before the number.
    let context_start = text[..line_start.saturating_sub(1)]
        .rfind('\n')
        .map_or(0, |p| p + 1);
    let context = text[context_start..t.start].replace('\n', " ");
    let after = &text[t.end..];
    let lower = context.to_lowercase();
    let value: f64 = t
        .text
        .trim_end_matches(['%', '×'])
        .parse()
        .unwrap_or(f64::NAN);
    // References: chapters, figures, sections, exercises, experiments,
    // questions, and lists of them ("chapters 3, 7 and 11", "Figure 3.1").
    let words = [
        "chapter",
        "chapters",
        "figure",
        "figures",
        "section",
        "sections",
        "exercise",
        "exercises",
        "experiment",
        "experiments",
        "question",
        "questions",
        "appendix",
        "step",
        "listing",
        "table",
        "ch",
        "fig.",
    ];
    let trimmed = lower
        .trim_end_matches(|c: char| c.is_ascii_digit() || ", .–-".contains(c) || c == '\u{2013}');
    let trimmed = trimmed
        .trim_end_matches(" and")
        .trim_end_matches(" or")
        .trim_end_matches(" to");
    let trimmed = trimmed.trim_end_matches(|c: char| c.is_ascii_digit() || ", .–-".contains(c));
    if words.iter().any(|w| trimmed.ends_with(w)) && !t.text.contains('e') {
        return Some("a reference to a chapter, figure, section, exercise or question");
    }
    // Markdown structure: numbered questions and list items.
    if before.trim_start_matches('*').trim().is_empty()
        && !t.in_math
        && (after.starts_with(". ") || after.starts_with(".**") || after.starts_with(")"))
    {
        return Some("the number of a list item or quiz question");
    }
    // Citations: years after authors, issue numbers, versions.
    if t.text.len() == 4
        && (1900.0..=2026.0).contains(&value)
        && (lower.contains("et al")
            || lower.trim_end().ends_with('(')
            || lower.trim_end().ends_with(',')
            || lower.trim_end().ends_with("in")
            || before
                .trim_end()
                .ends_with(|c: char| c.is_uppercase() || c == ')')
            || after.starts_with(')')
            || after.starts_with(";"))
    {
        return Some("a citation year");
    }
    if lower.ends_with("issue ")
        || lower.ends_with("issues ")
        || lower.ends_with('#')
        || (lower.contains("issue") && (lower.ends_with("and ") || lower.ends_with(", ")))
    {
        return Some("an issue number in a citation");
    }
    if after.starts_with('.') && after[1..].starts_with(|c: char| c.is_ascii_digit()) {
        return Some("a version number");
    }
    if lower.ends_with("arxiv:") {
        return Some("an arXiv identifier in a citation");
    }
    if [
        "pytorch ", "numpy ", "nep ", "version ", "python ", "katex ", "mdbook ",
    ]
    .iter()
    .any(|w| lower.ends_with(w))
    {
        return Some("a version number");
    }
    // A wrong option of a quiz is put to the reader and refuted by the answer.
    if let Some(letter) = wrong_quiz_option(text, line_start) {
        let _ = letter;
        return Some("a wrong quiz option, refuted by its answer");
    }
    // Math structure: indices and exponents, and 0, 1 and 2 (identities,
    // squares, halves), which state no measurement.
    if t.in_math
        && (before.ends_with('_')
            || before.ends_with("_{")
            || before.ends_with('^')
            || before.ends_with("^{"))
    {
        return Some("an index or exponent in a formula");
    }
    let unit = t.text.ends_with(['%', '×']);
    if !unit && !t.text.contains('.') && !t.text.contains('e') && value.abs() <= 2.0 {
        return Some(
            "0, 1 and 2 are structure (identities, squares, halves, pairs), not measurements",
        );
    }
    None
}

/// The letter of the quiz option on the line starting at `line_start`, if it
/// is an option and not the one the next answer names.
fn wrong_quiz_option(text: &str, line_start: usize) -> Option<char> {
    let line = text[line_start..].lines().next()?;
    let letter = line.strip_prefix("- (")?.chars().next()?;
    if line.get(4..6) != Some(") ") {
        return None;
    }
    let answer = text[line_start..]
        .split("<summary>Answer</summary>")
        .nth(1)?;
    let named = answer.trim_start().strip_prefix('(')?.chars().next()?;
    (named != letter).then_some(letter)
}
