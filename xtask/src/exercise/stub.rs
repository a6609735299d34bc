//! The learner's copy of a solution: its `use` lines, the anchored listing
//! with every function body replaced by `todo!()`, and the solution's own
//! tests that call those functions, with `crate::` paths made `attn::`.
//! The crate's sources are formatted by rustfmt, which this reads on: a
//! top-level item starts at column 0 and ends at a line `}`.

use std::path::Path;

use super::{uses, Exercise};

/// The learner's module for `ex`, from the solution `file` and `anchor`:
/// with `todo!()` bodies, or (`solved`) with the solution's own, which
/// must pass the same tests; and the tests, for `checks/MODULE.rs` (which
/// `check` writes again each time, so that the tests are the book's).
pub(crate) fn learner_module(
    ex: &Exercise,
    file: &Path,
    anchor: &str,
    solved: bool,
) -> Result<(String, String), String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let lines: Vec<&str> = text.lines().collect();
    let (start, end) = anchored(&lines, file, anchor)?;
    let (mut stubbed, names) = stub(&lines[start + 1..end], &ex.id);
    if solved {
        let listing: Vec<String> = lines[start + 1..end].iter().map(|l| public(l)).collect();
        stubbed = listing.join("\n");
    }
    let tests = tests_calling(&lines, &names);
    let imports: Vec<String> = lines[..start]
        .iter()
        .take_while(|l| !l.starts_with("#[cfg(test)]"))
        .filter(|l| l.starts_with("use "))
        .map(|l| to_attn(l))
        .collect();
    // The appendix (`fast-K`) comes after every chapter.
    let chapter = ex.id.get(2..4).and_then(|n| n.parse().ok()).unwrap_or(u32::MAX);
    let (items, kept) = uses::crate_items(chapter, &lines[start + 1..end].join("\n"), &imports);
    let kept = kept.join(" ");
    let uses: Vec<String> = imports
        .into_iter()
        .filter_map(|l| match solved {
            true => Some(l), // the body may call a trait's methods, named nowhere
            false => used_only(&l, &[&stubbed, &tests, &kept]),
        })
        .collect();
    let mut doc: Vec<String> =
        super::plain_math(&ex.text).lines().map(|l| format!("//! {l}")).collect();
    if !items.is_empty() {
        doc.push("//!\n//! The book's solution uses, from the crate:".into());
        doc.extend(items.iter().map(|item| format!("//! - {item}")));
    }
    let module = format!(
        "//! Exercise {}: {}\n//!\n{}\n#![allow(unused_imports)]\n\n{}\n\n{}\n\n\
         // The book's tests of this exercise (`cargo xtask exercise check {}`).\n\
         #[cfg(test)]\n#[path = \"checks/{}.rs\"]\nmod tests;\n",
        ex.id,
        titled(&ex.title),
        doc.join("\n"),
        uses.join("\n"),
        stubbed,
        ex.id,
        ex.module()
    );
    Ok((module, tests))
}

/// The lines of `// ANCHOR: anchor` and its `// ANCHOR_END` in `lines`.
fn anchored(lines: &[&str], file: &Path, anchor: &str) -> Result<(usize, usize), String> {
    let start = lines
        .iter()
        .position(|l| l.trim() == format!("// ANCHOR: {anchor}"))
        .ok_or_else(|| format!("{}: no anchor {anchor}", file.display()))?;
    let end = lines[start..]
        .iter()
        .position(|l| l.trim() == format!("// ANCHOR_END: {anchor}"))
        .map(|e| start + e)
        .ok_or_else(|| format!("{}: no end of anchor {anchor}", file.display()))?;
    Ok((start, end))
}

/// A one-line `use` of the solution's file with only the names that
/// `texts` (the stub and its tests) mention, or `None` if none: an import
/// the solution's body alone needs can be the exercise's answer (chapter 9's
/// stubs were handed `online_softmax_step`).
fn used_only(line: &str, texts: &[&str]) -> Option<String> {
    let path = line.strip_prefix("use ")?.strip_suffix(';')?;
    let mentioned = |name: &str| {
        texts.iter().any(|text| {
            text.match_indices(name).any(|(i, _)| {
                let word = |c: char| c.is_alphanumeric() || c == '_';
                !text[..i].ends_with(word) && !text[i + name.len()..].starts_with(word)
            })
        })
    };
    // The name an item brings in scope: `rngs::StdRng` brings `StdRng`.
    let imported = |item: &str| {
        let name = item.rsplit(" as ").next().unwrap_or(item);
        name.rsplit("::").next().unwrap_or(name).trim().to_string()
    };
    match path.split_once("::{") {
        Some((prefix, list)) => {
            let kept: Vec<&str> = list
                .trim_end_matches('}')
                .split(',')
                .map(str::trim)
                .filter(|item| !item.is_empty() && mentioned(&imported(item)))
                .collect();
            match kept.as_slice() {
                [] => None,
                [one] => Some(format!("use {prefix}::{one};")),
                _ => Some(format!("use {prefix}::{{{}}};", kept.join(", "))),
            }
        }
        None => {
            let name = imported(path);
            mentioned(&name).then(|| line.to_string())
        }
    }
}

/// A title as a sentence: with a full stop unless it ends in `?` or `.`.
fn titled(title: &str) -> String {
    if title.ends_with(['?', '.', '!']) {
        title.to_string()
    } else {
        format!("{title}.")
    }
}

/// `crate::` paths as the learner's crate sees them.
fn to_attn(line: &str) -> String {
    line.replace("crate::", "attn::")
}

/// A line of the listing as the learner's crate has it.
fn public(line: &str) -> String {
    to_attn(line).replace("pub(crate) ", "pub ")
}

/// The listing with each function's body replaced by `todo!()`, and the
/// functions' names. Each doc comment keeps its first paragraph, the task;
/// the solutions write how they work (the answer) in the paragraphs after.
fn stub(listing: &[&str], id: &str) -> (String, Vec<String>) {
    let (mut out, mut names) = (Vec::new(), Vec::new());
    let mut answer = false;
    let mut i = 0;
    while i < listing.len() {
        let line = listing[i];
        let doc = line.trim_start().starts_with("///");
        answer = doc && (answer || line.trim() == "///");
        if answer {
            i += 1;
            continue;
        }
        let is_fn = ["pub fn ", "fn ", "pub(crate) fn "].iter().find_map(|p| line.strip_prefix(p));
        let Some(rest) = is_fn else {
            out.push(public(line));
            i += 1;
            continue;
        };
        names.push(rest.split(['(', '<']).next().unwrap_or("").to_string());
        // The signature runs to the first line ending in `{`.
        while i < listing.len() && !listing[i].trim_end().ends_with('{') {
            out.push(public(listing[i]));
            i += 1;
        }
        if let Some(open) = listing.get(i) {
            out.push(public(open));
        }
        out.push(format!("    todo!(\"exercise {id}: write this function\")"));
        // The body ends at the next line `}`.
        while i < listing.len() && listing[i] != "}" {
            i += 1;
        }
        out.push("}".into());
        i += 1;
    }
    (out.join("\n"), names)
}

/// The tests of the solution file's test module that call one of `names`,
/// the helpers and constants they use, and the module's `use` lines.
struct ExerciseTests<'a> {
    header: Vec<&'a str>,
    helpers: Vec<Vec<&'a str>>,
    tests: Vec<Vec<&'a str>>,
}

fn exercise_tests<'a>(lines: &[&'a str], names: &[String]) -> ExerciseTests<'a> {
    let mut found = ExerciseTests { header: Vec::new(), helpers: Vec::new(), tests: Vec::new() };
    let Some(start) = lines.iter().position(|l| l.starts_with("#[cfg(test)]")) else {
        return found;
    };
    let body = &lines[start..];
    // Items of the test module: runs of lines from an indented attribute
    // or item to its closing `    }`.
    let mut items: Vec<Vec<&str>> = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    for &line in body.iter().skip(2) {
        if current.is_empty() && (line.starts_with("    use ") || line.trim().is_empty()) {
            found.header.push(line);
            continue;
        }
        if line == "}" {
            break;
        }
        current.push(line);
        if line == "    }" || (line.starts_with("    const ") && line.ends_with(';')) {
            items.push(std::mem::take(&mut current));
        }
    }
    let calls = |item: &[&str], name: &str| {
        item.iter().any(|l| l.contains(&format!("{name}(")) || l.contains(&format!("{name}::")))
    };
    let is_test = |item: &[&str]| item.iter().any(|l| l.trim() == "#[test]");
    let (tests, others): (Vec<Vec<&str>>, Vec<Vec<&str>>) =
        items.into_iter().partition(|it| is_test(it));
    found.tests = tests.into_iter().filter(|it| names.iter().any(|n| calls(it, n))).collect();
    found.helpers = others
        .into_iter()
        .filter(|it| match item_name(it) {
            Some(h) => found.tests.iter().any(|t| calls(t, &h)),
            None => true, // constants and other items
        })
        .collect();
    found
}

/// The name of the function an item of the test module defines.
fn item_name(item: &[&str]) -> Option<String> {
    item.iter()
        .find_map(|l| l.trim_start().strip_prefix("fn "))
        .map(|r| r.split(['(', '<']).next().unwrap_or("").to_string())
}

/// The solution file's test module with only the tests that call one of
/// `names` (and the helpers they call), `crate::` made `attn::`, as the
/// body of a module file.
fn tests_calling(lines: &[&str], names: &[String]) -> String {
    let found = exercise_tests(lines, names);
    let mut out =
        vec!["//! The book's tests of this exercise, written again by every check.".to_string()];
    let unindent = |l: &str| to_attn(l.strip_prefix("    ").unwrap_or(l));
    // The tests' own comments and the book's anchors stay behind: comments
    // often say what a test expects and why, which is the exercise's answer.
    // (A test's hint, its doc comment, is shown when it fails: [`hints`].)
    fn shown(l: &&&str) -> bool {
        !l.trim_start().starts_with("//")
    }
    out.extend(found.header.iter().filter(shown).map(|l| unindent(l)));
    for item in found.helpers.iter().chain(&found.tests) {
        out.extend(item.iter().filter(shown).map(|l| unindent(l)));
        out.push(String::new());
    }
    out.join("\n") + "\n"
}

/// Each test of an exercise (solution `file`, `anchor`) with its hint: the
/// test's doc comment, which says what the test holds the answer to and
/// where to look when it fails, in plain text for a terminal; `None` for a
/// test without one (`verify` fails on it).
pub(crate) fn hints(file: &Path, anchor: &str) -> Result<Vec<(String, Option<String>)>, String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let lines: Vec<&str> = text.lines().collect();
    let (start, end) = anchored(&lines, file, anchor)?;
    let (_, names) = stub(&lines[start + 1..end], "");
    let found = exercise_tests(&lines, &names);
    Ok(found
        .tests
        .iter()
        .map(|test| {
            let doc: Vec<&str> = test
                .iter()
                .filter_map(|l| l.trim_start().strip_prefix("///"))
                .map(str::trim)
                .collect();
            let hint = (!doc.is_empty()).then(|| doc.join(" ").trim().to_string());
            (item_name(test).unwrap_or_default(), hint)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_become_todo_and_only_the_exercise_s_tests_are_kept() {
        let listing = [
            "/// Doubles.",
            "///",
            "/// Multiply by two.",
            "pub(crate) fn double(",
            "    x: f64,",
            ") -> f64 {",
            "    2.0 * crate::scale(x)",
            "}",
        ];
        let (stubbed, names) = stub(&listing, "ch99-1");
        assert_eq!(names, ["double"]);
        assert!(stubbed.contains("pub fn double("), "{stubbed}");
        assert!(stubbed.contains("todo!(\"exercise ch99-1"), "{stubbed}");
        assert!(!stubbed.contains("2.0 *"), "the body is gone: {stubbed}");
        assert!(stubbed.starts_with("/// Doubles.\npub fn"), "{stubbed}");
        let file = [
            "pub fn double(x: f64) -> f64 {",
            "}",
            "#[cfg(test)]",
            "mod tests {",
            "    use super::*;",
            "    use crate::other::thing;",
            "",
            "    fn helper() -> f64 {",
            "        1.0",
            "    }",
            "",
            "    #[test]",
            "    fn doubles() {",
            "        assert_eq!(double(helper()), 2.0);",
            "    }",
            "",
            "    #[test]",
            "    fn halves() {",
            "        assert_eq!(halve(2.0), 1.0);",
            "    }",
            "}",
        ];
        let tests = tests_calling(&file, &names);
        assert!(tests.contains("fn doubles()") && tests.contains("fn helper()"));
        assert!(!tests.contains("fn halves()"), "another exercise's test: {tests}");
        assert!(tests.contains("use attn::other::thing;"), "{tests}");
        let uses = |line| used_only(line, &["fn f(x: Array2<f32>) -> Result<(), AttnError>"]);
        assert_eq!(uses("use ndarray::{Array1, Array2};").as_deref(), Some("use ndarray::Array2;"));
        assert_eq!(uses("use attn::tiled::online_softmax_step;"), None);
        assert_eq!(
            used_only("use rand::{rngs::StdRng, Rng};", &["x: StdRng"]).as_deref(),
            Some("use rand::rngs::StdRng;")
        );
        assert_eq!(
            uses("use attn::error::AttnError;").as_deref(),
            Some("use attn::error::AttnError;")
        );
    }
}
