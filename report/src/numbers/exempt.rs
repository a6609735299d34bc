//! The numbers a page may show without an assertion, each kind with its
//! reason.

use super::scan::Token;

/// Why a number needs no binding, if it is one of the exempt kinds.
pub fn exemption(text: &str, t: &Token) -> Option<&'static str> {
    let line_start = text[..t.start].rfind('\n').map_or(0, |p| p + 1);
    let before = &text[line_start..t.start];
    // Context may run over the line break before the number.
    let context_start = text[..line_start.saturating_sub(1)].rfind('\n').map_or(0, |p| p + 1);
    let context = text[context_start..t.start].replace('\n', " ");
    let after = &text[t.end..];
    let lower = context.to_lowercase();
    let value: f64 = t.text.trim_end_matches(['%', '×']).parse().unwrap_or(f64::NAN);
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
    let trimmed = trimmed.trim_end_matches(" and").trim_end_matches(" or").trim_end_matches(" to");
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
            || before.trim_end().ends_with(|c: char| c.is_uppercase() || c == ')')
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
    if ["pytorch ", "numpy ", "nep ", "version ", "python ", "katex ", "mdbook "]
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
    let answer = text[line_start..].split("<summary>Answer</summary>").nth(1)?;
    let named = answer.trim_start().strip_prefix('(')?.chars().next()?;
    (named != letter).then_some(letter)
}
