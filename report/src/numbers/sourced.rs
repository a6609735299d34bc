//! Figures with their source: the run and the statistic of the data file
//! they were measured in, and the check that no sentence, table or output
//! block compares figures of two runs or two statistics.

use super::Bindings;
use crate::provenance::{one_run, Provenance};

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
        let (text, scope) = (&self.bindings.text, self.bindings.scope.clone());
        for (start, _) in text[scope.clone()].match_indices(block) {
            let start = scope.start + start;
            self.bindings.sourced_spans.push((start..start + block.len(), self.source.clone()));
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
        self.bindings.sourced_claims.push((phrase.to_string(), self.source.clone()));
        self
    }

    /// Remembers the source of the place the binding just bound.
    fn record(&mut self, _shown: &str) -> &mut Self {
        if let Some(place) = self.bindings.last_bound {
            self.bindings.sourced_values.push((place, self.source.clone()));
        }
        self
    }
}

impl Bindings {
    /// Binds figures measured in `sources`, which must be one run with one
    /// statistic (else the test fails, naming them), and remembers that
    /// source for the check of the page's units (sentences, tables, output blocks).
    pub fn from(&mut self, sources: &[&Provenance]) -> Sourced<'_> {
        if let Err(e) = one_run(sources) {
            panic!("{}: {e}", self.chapter);
        }
        let source = sources
            .first()
            .map_or(String::new(), |p| format!("run {}, statistic {}", p.run, p.statistic));
        Sourced { bindings: self, source }
    }

    /// Every sentence, table or output block that holds figures of more
    /// than one run or statistic, as `file:line: …`.
    pub fn mixed_runs(&self) -> Vec<String> {
        let mut found = Vec::new();
        for unit in super::units::units(&self.text) {
            let mut sources: Vec<&str> = Vec::new();
            for (i, t) in
                self.tokens.iter().enumerate().filter(|(_, t)| unit.range.contains(&t.start))
            {
                let by_value = self.sourced_values.iter().filter(|(place, _)| *place == i);
                let by_span =
                    self.sourced_spans.iter().filter(|(r, _)| r.contains(&t.start)).map(|(_, s)| s);
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
}
