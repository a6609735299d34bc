//! Exercises are of two declared kinds, and the introduction says so:
//!
//! - *Code.* — the solution shows crate code (`{{#include ../src/…}}`)
//!   that is itself a test or is called by one;
//! - *Discussion.* — the solution is a written answer.
//!
//! The kind follows the exercise's bold title: `**2. Batches.** *Code.*`.

use regex::Regex;
use std::collections::BTreeSet;

use crate::common::book::{includes, rust_files};
use crate::{book, page, pages};

/// One exercise: its page, number, title line, kind and solution.
struct Exercise {
    page: String,
    number: usize,
    kind: Option<String>,
    solution: Option<String>,
}

fn exercises_of(file: &str, text: &str) -> Vec<Exercise> {
    let Some(start) = text.find("## Exercises") else {
        return Vec::new();
    };
    let end = text[start..].find("## Quiz").map_or(text.len(), |e| start + e);
    let section = &text[start..end];
    let head = Regex::new(r"(?m)^\*\*(\d+)\. ").unwrap();
    let kind = Regex::new(r"^\*\*\d+\. (?s:.+?)\*\*[^\n]*?\*(Code|Discussion)\.\*").unwrap();
    let starts: Vec<usize> = head.find_iter(section).map(|m| m.start()).collect();
    let mut out = Vec::new();
    for (i, &s) in starts.iter().enumerate() {
        let body = &section[s..starts.get(i + 1).copied().unwrap_or(section.len())];
        let number = head.captures(body).unwrap()[1].parse().unwrap();
        let first = body.find("<details>").map_or(body, |d| &body[..d]);
        let solution = body
            .find("<summary>Solution</summary>")
            .map(|d| body[d..].split("</details>").next().unwrap_or("").to_string());
        out.push(Exercise {
            page: file.to_string(),
            number,
            kind: kind.captures(first).map(|c| c[1].to_string()),
            solution,
        });
    }
    out
}

/// The names every `#[test]` function of the crate and its tests calls,
/// and the test functions' own names.
fn called_by_tests() -> BTreeSet<String> {
    let root = book().parent().unwrap().to_path_buf();
    let mut files = rust_files(&root.join("src"));
    files.extend(rust_files(&root.join("tests")));
    let call = Regex::new(r"\b([a-z_][a-z0-9_]*)\s*\(").unwrap();
    let mut names = BTreeSet::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        for (at, _) in text.match_indices("#[test]") {
            let Some(open) = text[at..].find('{').map(|o| at + o) else {
                continue;
            };
            let mut depth = 0;
            let mut close = text.len();
            for (i, c) in text[open..].char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            close = open + i;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            names.extend(call.captures_iter(&text[at..close]).map(|c| c[1].to_string()));
        }
    }
    names
}

/// The code between `// ANCHOR: name` and `// ANCHOR_END: name` of `file`.
fn anchored(file: &str, anchor: &str) -> String {
    let path = book().join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let start = text
        .find(&format!("ANCHOR: {anchor}\n"))
        .unwrap_or_else(|| panic!("{file}: no anchor {anchor}"));
    let end =
        text[start..].find(&format!("ANCHOR_END: {anchor}")).map_or(text.len(), |e| start + e);
    text[start..end].to_string()
}

#[test]
fn every_exercise_is_code_with_a_tested_solution_or_discussion_with_an_answer() {
    let tested = called_by_tests();
    let defined = Regex::new(r"\bfn ([a-z_][a-z0-9_]*)").unwrap();
    let mut problems = Vec::new();
    let mut count = 0;
    for (file, text) in pages() {
        let list = exercises_of(&file, &text);
        for (i, e) in list.iter().enumerate() {
            count += 1;
            let at = format!("book/{}, exercise {}", e.page, e.number);
            if e.number != i + 1 {
                problems.push(format!("{at}: numbered out of order"));
            }
            let Some(solution) = &e.solution else {
                problems.push(format!("{at}: no <summary>Solution</summary> block"));
                continue;
            };
            match e.kind.as_deref() {
                Some("Code") => {
                    // Crate code: includes of `../src/` files, by anchor.
                    let includes: Vec<(String, String)> = includes(solution)
                        .into_iter()
                        .filter_map(|(path, anchor)| Some((path, anchor?)))
                        .filter(|(path, _)| path.starts_with("../src/"))
                        .collect();
                    if includes.is_empty() {
                        problems.push(format!(
                            "{at}: a code exercise whose solution shows no crate code"
                        ));
                    }
                    let proven = includes.iter().any(|(path, anchor)| {
                        let code = anchored(path, anchor);
                        code.contains("#[test]")
                            || defined.captures_iter(&code).any(|d| tested.contains(&d[1]))
                    });
                    if !includes.is_empty() && !proven {
                        problems.push(format!(
                            "{at}: its solution is neither a test nor called by one"
                        ));
                    }
                }
                Some(_) => {
                    let words = solution
                        .lines()
                        .filter(|l| {
                            !l.starts_with("```") && !l.starts_with("{{#") && !l.starts_with('<')
                        })
                        .map(str::len)
                        .sum::<usize>();
                    if words < 40 {
                        problems.push(format!("{at}: a discussion without a written answer"));
                    }
                }
                None => problems.push(format!(
                    "{at}: its title is not followed by its kind, *Code.* or *Discussion.*"
                )),
            }
        }
    }
    assert!(count > 30, "only {count} exercises found");
    let intro = page("introduction.md");
    for kind in ["*Code.*", "*Discussion.*"] {
        if !intro.contains(kind) {
            problems.push(format!("introduction.md does not explain the exercises marked {kind}"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
