//! Citations and the bibliography (`book/bibliography.md`). A citation in
//! the text is "Names (year)" or "(Names, year)", where Names is one
//! surname, two joined by "and", a list ending "and Surname", or "Surname
//! et al."; a later mention may drop the year ("Cho et al. reported").
//! Every citation must match an entry (first author, year, and the
//! authors' number: "et al." for three or more), and every entry must be
//! cited somewhere.

use regex::Regex;
use std::collections::BTreeSet;

use crate::{line_of, page, pages, prose};

/// One entry of the bibliography.
#[derive(Debug)]
struct Entry {
    /// Surnames in order (a corporate author is one "surname").
    surnames: Vec<String>,
    /// The entry lists the first authors and then "et al.".
    more: bool,
    /// The year with its letter, e.g. `2014a`.
    year: String,
    title: String,
    venue: String,
    line: usize,
}

impl Entry {
    fn authors(&self) -> usize {
        self.surnames.len() + usize::from(self.more) * 3
    }
}

/// A citation found in a page.
#[derive(Debug)]
struct Citation {
    page: String,
    line: usize,
    surnames: Vec<String>,
    et_al: bool,
    year: Option<String>,
}

fn entries() -> Vec<Entry> {
    let text = page("bibliography.md");
    let entry = Regex::new(r"^- (.+?) \(((?:19|20)\d\d[a-z]?)\)\. (.+?[.?]) \*(.+?)\*").unwrap();
    let initials = Regex::new(r"^(?:\p{Lu}\.(?:-\p{Lu}\.)?\s?)+$").unwrap();
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if !line.starts_with("- ") {
            continue;
        }
        let c = entry.captures(line).unwrap_or_else(|| {
            panic!("bibliography.md:{}: not `- Authors (year). Title. *Venue*…`: {line}", i + 1)
        });
        let mut authors = c[1].to_string();
        let more = authors.ends_with(" et al.");
        if more {
            authors.truncate(authors.len() - " et al.".len());
        }
        let mut surnames = Vec::new();
        for piece in authors.replace(" and ", ", ").split(", ") {
            if !initials.is_match(piece.trim()) {
                surnames.push(piece.trim().to_string());
            }
        }
        out.push(Entry {
            surnames,
            more,
            year: c[2].to_string(),
            title: c[3].to_string(),
            venue: c[4].to_string(),
            line: i + 1,
        });
    }
    out
}

/// Names ending right before `end` in `flat`: `Surname`, `A and B`,
/// `A, B and C`, `A et al.`, each name one or more capitalised words,
/// with particles before them.
/// Returns the surnames (first to last) and whether they end "et al.", or
/// `None` when no name ends there.
fn names_before(flat: &str, end: usize) -> Option<(Vec<String>, bool, usize)> {
    // A surname may hold particles (van de Geijn); an author may be a
    // forum handle, lower-case with digits (bloc97).
    let word = r"(?:(?:(?:van|von|de|der|den|du) )*\p{Lu}[\p{L}'’-]*|\p{Ll}[\p{Ll}_]*\d+)";
    let name = Regex::new(&format!(r"({word}(?: {word})*)( et al\.)?$")).unwrap();
    let mut rest = flat[..end].trim_end();
    rest = rest.strip_suffix("'s").or(rest.strip_suffix("’s")).unwrap_or(rest);
    let mut surnames = Vec::new();
    let mut et_al = false;
    let mut start = rest.len();
    while let Some(c) = name.captures(rest) {
        if surnames.is_empty() {
            et_al = c.get(2).is_some();
        } else if c.get(2).is_some() {
            break;
        }
        let whole = c.get(0).unwrap();
        surnames.insert(0, c[1].to_string());
        start = whole.start();
        rest = &rest[..whole.start()];
        if let Some(r) = rest.strip_suffix(", ").or(rest.strip_suffix(" and ")) {
            rest = r;
        } else {
            break;
        }
    }
    (!surnames.is_empty()).then_some((surnames, et_al, start))
}

fn citations() -> Vec<Citation> {
    let year = Regex::new(r"\b((?:19|20)\d\d[a-z]?)\b").unwrap();
    let bare = Regex::new(r"(\p{Lu}[\p{L}'’-]+) et al\.").unwrap();
    let dated = Regex::new(r"^(?:\s*\(|,\s*)(?:19|20)\d\d").unwrap();
    let mut out = Vec::new();
    for (file, text) in pages() {
        if file == "bibliography.md" {
            continue;
        }
        let flat = prose(&text).replace('\n', " ");
        for m in year.find_iter(&flat) {
            let year: u32 = m.as_str()[..4].parse().unwrap();
            if year > 2026 || (flat[m.end()..].starts_with('-') && flat[m.end()..].len() > 3) {
                continue; // not a year (2048), or a date (2026-11-22)
            }
            let open = flat[..m.start()].rfind('(');
            let close = flat[..m.start()].rfind(')');
            let Some(open) = open.filter(|&o| close.is_none_or(|c| c < o)) else {
                continue; // not in parentheses: not a citation ("seed 2017")
            };
            let part_start = flat[open..m.start()].rfind("; ").map_or(open + 1, |p| open + p + 2);
            let head = flat[part_start..m.start()].trim();
            let found = if head.is_empty() {
                names_before(&flat, open)
            } else if let Some(names) = head.strip_suffix(',') {
                match names_before(names, names.len()) {
                    Some(found) => Some(found),
                    None => continue, // "(at n = 512, 2048)": not a citation
                }
            } else {
                continue;
            };
            let line = line_of(&text, m.start());
            let Some((surnames, et_al, _)) = found else {
                panic!("{file}:{line}: the year {} is cited without an author", m.as_str());
            };
            out.push(Citation {
                page: file.clone(),
                line,
                surnames,
                et_al,
                year: Some(m.as_str().to_string()),
            });
        }
        for c in bare.captures_iter(&flat) {
            let whole = c.get(0).unwrap();
            if dated.is_match(&flat[whole.end()..]) {
                continue; // counted above, with its year
            }
            let start = whole.start();
            out.push(Citation {
                page: file.clone(),
                line: line_of(&text, start),
                surnames: vec![c[1].to_string()],
                et_al: true,
                year: None,
            });
        }
    }
    out
}

/// The entry a citation names: same year (when it has one), same first
/// author (a longer captured name may carry words of the sentence before
/// it: "In Graves" is Graves), and the same authors, or "et al." for three
/// or more.
fn find<'a>(c: &Citation, entries: &'a [Entry]) -> Option<&'a Entry> {
    let first = &c.surnames[0];
    let words: Vec<&str> = first.split(' ').collect();
    let first_matches = |e: &Entry| (0..words.len()).any(|k| words[k..].join(" ") == e.surnames[0]);
    entries.iter().find(|e| {
        let year = c.year.as_ref().is_none_or(|y| *y == e.year);
        let rest_match = if c.et_al {
            e.authors() >= 3
        } else {
            e.authors() == c.surnames.len() && !e.more && c.surnames[1..] == e.surnames[1..]
        };
        year && first_matches(e) && rest_match
    })
}

#[test]
fn every_citation_has_an_entry_and_every_entry_is_cited() {
    let entries = entries();
    let citations = citations();
    assert!(citations.len() > 30, "only {} citations found", citations.len());
    let mut cited = BTreeSet::new();
    let mut problems = Vec::new();
    for c in &citations {
        match find(c, &entries) {
            Some(e) => {
                cited.insert(e.line);
            }
            None => problems.push(format!(
                "book/{}:{}: {}{} ({}) has no entry in the bibliography",
                c.page,
                c.line,
                c.surnames.join(", "),
                if c.et_al { " et al." } else { "" },
                c.year.as_deref().unwrap_or("no year")
            )),
        }
    }
    for e in &entries {
        if !cited.contains(&e.line) {
            problems.push(format!(
                "book/bibliography.md:{}: {} ({}) is cited nowhere",
                e.line, e.surnames[0], e.year
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_entry_has_authors_year_title_and_venue_in_order() {
    let entries = entries();
    assert!(entries.len() > 30);
    let key = |e: &Entry| {
        let s = e.surnames[0].to_lowercase();
        let s = s.strip_prefix("van ").unwrap_or(&s).to_string();
        (s, e.year.clone())
    };
    for pair in entries.windows(2) {
        assert!(
            key(&pair[0]) < key(&pair[1]),
            "bibliography.md:{}: not in alphabetical order of first author, then year",
            pair[1].line
        );
    }
    for e in &entries {
        assert!(!e.surnames.is_empty() && e.title.len() > 3 && e.venue.len() > 3, "{e:?}");
    }
}

/// The bibliography's numbers are citation years, arXiv identifiers, and
/// digits in titles; the last are bound here, as the titles give them.
#[test]
fn every_number_of_the_bibliography_is_bound() {
    let mut b = report::numbers::Bindings::new("bibliography.md");
    let titles: Vec<String> = entries().into_iter().map(|e| e.title).collect();
    let title = |phrase: &str| titles.iter().any(|t| t.contains(phrase));
    b.exact("22", 22).claim("vision transformers to 22 billion", title("to 22 billion"));
    b.exact("3", 3).claim("The Llama 3 herd", title("The Llama 3 herd"));
    b.exact("4", 4).claim("We reverse-engineered Flash Attention 4", title("Flash Attention 4"));
    // A claim word that is part of a title, not the book's claim.
    let phrase = "faster attention with better parallelism";
    b.claim(phrase, title(phrase));
    b.assert_all_bound();
}

#[test]
fn a_citation_is_found_in_its_usual_forms() {
    let flat = "models of Sutskever, Vinyals and Le and more";
    let end = flat.find(" and more").unwrap();
    let (names, et_al, _) = names_before(flat, end).unwrap();
    assert_eq!(names, ["Sutskever", "Vinyals", "Le"]);
    assert!(!et_al);
    let flat = "by Wiegreffe and Pinter's";
    assert_eq!(names_before(flat, flat.len()).unwrap().0, ["Wiegreffe", "Pinter"]);
    let flat = "(1964) and Watson";
    assert_eq!(names_before(flat, flat.len()).unwrap().0, ["Watson"]);
    let flat = "the question of Clark et al.";
    let (names, et_al, _) = names_before(flat, flat.len()).unwrap();
    assert_eq!((names, et_al), (vec!["Clark".to_string()], true));
    assert!(names_before("seed", 4).is_none());
    let flat = "scaling (bloc97";
    assert_eq!(names_before(flat, flat.len()).unwrap().0, ["bloc97"]);
}
