//! Claims about what training learned, and the evidence each rests on.

use super::scan::{line_holds, reader_lines};
use super::Bindings;

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
        /// The value of each run.
        values: &'a [f64],
        /// The smallest, as the page shows it.
        lowest: &'a str,
        /// The largest, as the page shows it.
        highest: &'a str,
    },
}

/// Phrases by which a section says its results are one training run.
const ONE_RUN: [&str; 5] =
    ["one initialisation", "this initialisation", "one training run", "this run", "one run"];

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

impl Bindings {
    /// Registers a claim about what training learned (the lines holding
    /// `phrase`), and checks its evidence: for [`Evidence::OneRun`], the
    /// section (the text under the nearest heading) says it is one run; for
    /// [`Evidence::Runs`], there are at least three runs, `lowest` and
    /// `highest` are their extremes as rounded, and the paragraph shows both.
    pub fn learned(&mut self, phrase: &str, evidence: Evidence) -> &mut Self {
        let Some(at) = self.text.find(phrase) else {
            panic!("{}: the claim \"{phrase}\" is not in the text", self.chapter);
        };
        match evidence {
            Evidence::OneRun => {
                let start = self.text[..at].rfind("\n#").map_or(0, |p| p + 1);
                let end = self.text[at..].find("\n#").map_or(self.text.len(), |p| at + p);
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
                let end = self.text[at..].find("\n\n").map_or(self.text.len(), |p| at + p);
                let paragraph = self.text[start..end].replace('\n', " ");
                assert!(
                    ["we conjecture", "we expect", "We conjecture", "We expect"]
                        .iter()
                        .any(|m| paragraph.contains(m)),
                    "{}: \"{phrase}\" is untested, and its paragraph does not call it a conjecture",
                    self.chapter
                );
            }
            Evidence::Runs { values, lowest, highest } => {
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
                let end = self.text[at..].find("\n\n").map_or(self.text.len(), |p| at + p);
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

    /// On a page that trains models, every line that says what a model
    /// learned and is not registered with [`Bindings::learned`].
    pub(super) fn unchecked_learning(&self) -> Vec<String> {
        if !self.text.contains("```text\ncargo xtask train") {
            return Vec::new();
        }
        let mut found = Vec::new();
        let flat = self.text.replace('\n', " ");
        let excluded: Vec<std::ops::Range<usize>> = NOT_CLAIMS
            .iter()
            .flat_map(|p| {
                let p = p.replace('\n', " ");
                flat.match_indices(&p).map(|(i, m)| i..i + m.len()).collect::<Vec<_>>()
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
}
