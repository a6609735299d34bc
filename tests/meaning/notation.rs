//! The notation page lists every symbol the book's math uses: every letter,
//! Latin or Greek, that appears in a formula of any page (outside names
//! such as \operatorname{softmax} and \text{…}) appears in a formula of
//! `book/notation.md`'s tables. A new letter, or a letter the notation page
//! forgets, fails with its page and line.

use regex::Regex;
use std::collections::{BTreeMap, BTreeSet};

use crate::{line_of, page, pages};

/// Greek letters the book may use, as TeX commands.
const GREEK: [&str; 25] = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "varepsilon",
    "epsilon",
    "theta",
    "kappa",
    "lambda",
    "mu",
    "nu",
    "pi",
    "rho",
    "sigma",
    "tau",
    "phi",
    "chi",
    "psi",
    "omega",
    "Delta",
    "Pi",
    "Phi",
    "Omega",
    "ell",
    "Sigma",
];

/// The math of a page, `(offset, formula)`: `$…$` and `$$…$$` outside code.
fn formulas(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut offset = 0;
    let (mut in_fence, mut display): (bool, Option<(usize, String)>) = (false, None);
    for line in text.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        if line.trim() == "$$" {
            match display.take() {
                Some(formula) => out.push(formula),
                None => display = Some((offset, String::new())),
            }
            continue;
        }
        if let Some((_, formula)) = display.as_mut() {
            formula.push_str(line);
            continue;
        }
        // Inline math: between pairs of `$`, outside inline code.
        let mut in_code = false;
        let mut open: Option<usize> = None;
        for (i, c) in line.char_indices() {
            match c {
                '`' if open.is_none() => in_code = !in_code,
                '$' if !in_code => match open.take() {
                    Some(o) => out.push((start + o, line[o + 1..i].to_string())),
                    None => open = Some(i),
                },
                _ => {}
            }
        }
    }
    out
}

/// The symbols of a formula: each Latin letter, `\mathit{…}` as one
/// symbol, and each Greek letter; names (`\operatorname{…}`, `\text{…}`,
/// `\mathrm{…}`, `\mathbb{…}`, `\mathcal{…}`) and other commands removed.
fn symbols(formula: &str) -> BTreeSet<String> {
    let named =
        Regex::new(r"\\(?:operatorname|text|mathrm|mathbb|mathcal|textrm)\{[^}]*\}").unwrap();
    let italic = Regex::new(r"\\mathit\{([^}]*)\}").unwrap();
    let command = Regex::new(r"\\([A-Za-z]+)").unwrap();
    let mut out = BTreeSet::new();
    let without_names = named.replace_all(formula, " ");
    for c in italic.captures_iter(&without_names) {
        out.insert(c[1].to_string());
    }
    let without_italic = italic.replace_all(&without_names, " ");
    for c in command.captures_iter(&without_italic) {
        if GREEK.contains(&&c[1]) {
            out.insert(format!("\\{}", &c[1]));
        }
    }
    let plain = command.replace_all(&without_italic, " ");
    out.extend(plain.chars().filter(char::is_ascii_alphabetic).map(String::from));
    out
}

#[test]
fn the_notation_page_lists_every_symbol_of_the_book() {
    let notation = page("notation.md");
    let listed: BTreeSet<String> = notation
        .lines()
        .filter(|l| l.starts_with("| $"))
        .flat_map(|l| {
            let cell = l.split(" | ").next().unwrap_or("");
            formulas(cell).into_iter().flat_map(|(_, f)| symbols(&f))
        })
        .collect();
    assert!(listed.len() > 50, "only {} symbols listed", listed.len());
    let mut missing: BTreeMap<String, String> = BTreeMap::new();
    for (file, text) in pages() {
        if file == "notation.md" {
            continue;
        }
        for (offset, formula) in formulas(&text) {
            for symbol in symbols(&formula) {
                if !listed.contains(&symbol) {
                    missing.entry(symbol).or_insert_with(|| {
                        format!("book/{file}:{}: ${formula}$", line_of(&text, offset))
                    });
                }
            }
        }
    }
    let report: Vec<String> = missing
        .iter()
        .map(|(symbol, at)| format!("{symbol} is not on the notation page; first at {at}"))
        .collect();
    assert!(report.is_empty(), "{}", report.join("\n"));
}

#[test]
fn symbols_are_letters_outside_names() {
    let s = symbols(
        r"\operatorname{softmax}_j\big(\operatorname{score}(q_t, k_j)\big) + \mathit{pos} \cdot \omega_i + \text{f32::MAX}",
    );
    let expected: BTreeSet<String> =
        ["j", "q", "t", "k", "pos", "\\omega", "i"].iter().map(|s| s.to_string()).collect();
    assert_eq!(s, expected);
}
