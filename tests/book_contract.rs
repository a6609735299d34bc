//! The contract of the book (DEVELOPERS.md), checked on every `cargo test`:
//!
//! - SUMMARY.md and the chapter files agree;
//! - every `{{#include}}` names an existing file and anchor;
//! - a `rust` fence marked `ignore` is only an include of crate code;
//! - every figure a chapter shows exists and is written by an example, and
//!   every file in `book/figures/` is shown by some chapter;
//! - some snippet really uses the crate (so `mdbook test` exercises it).
//!
//! `mdbook build` renders a missing include as an empty block and exits 0,
//! which is why these checks live here.

mod common;

use common::book::{book, includes, rust_files, summary};
use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The chapter files SUMMARY.md links to, relative to `book/`.
fn summary_chapters() -> Vec<String> {
    summary().into_iter().map(|l| l.file).collect()
}

/// Every markdown file under `book/` except SUMMARY.md, relative to `book/`.
fn markdown_files(dir: &Path, out: &mut BTreeSet<String>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            markdown_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "md") {
            let rel = path.strip_prefix(book()).unwrap().to_string_lossy().to_string();
            if rel != "SUMMARY.md" {
                out.insert(rel);
            }
        }
    }
}

/// `(chapter, text)` for every chapter SUMMARY.md lists.
fn chapters() -> Vec<(String, String)> {
    summary_chapters()
        .into_iter()
        .map(|c| {
            let text = fs::read_to_string(book().join(&c)).unwrap_or_default();
            (c, text)
        })
        .collect()
}

/// A fenced code block: its info string, body, and 1-based line.
struct Fence {
    info: String,
    body: String,
    line: usize,
}

fn fences(text: &str) -> Vec<Fence> {
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((i, line)) = lines.next() {
        let trimmed = line.trim_start();
        if let Some(info) = trimmed.strip_prefix("```") {
            let mut body = Vec::new();
            for (_, l) in lines.by_ref() {
                if l.trim_start().starts_with("```") {
                    break;
                }
                body.push(l);
            }
            out.push(Fence { info: info.trim().to_string(), body: body.join("\n"), line: i + 1 });
        }
    }
    out
}

#[test]
fn summary_and_chapter_files_agree() {
    let listed: BTreeSet<String> = summary_chapters().into_iter().collect();
    let mut on_disk = BTreeSet::new();
    markdown_files(&book(), &mut on_disk);
    let missing: Vec<_> = listed.difference(&on_disk).collect();
    let unlisted: Vec<_> = on_disk.difference(&listed).collect();
    assert!(missing.is_empty(), "SUMMARY.md lists missing files: {missing:?}");
    assert!(unlisted.is_empty(), "chapters not in SUMMARY.md: {unlisted:?}");
    assert!(!listed.is_empty(), "SUMMARY.md lists no chapter");
}

#[test]
fn every_include_names_an_existing_file_and_anchor() {
    let mut problems = Vec::new();
    let mut count = 0;
    for (chapter, text) in chapters() {
        for (path, anchor) in includes(&text) {
            count += 1;
            let target = book().join(&path);
            let Ok(source) = fs::read_to_string(&target) else {
                problems.push(format!("{chapter}: include of missing file {path}"));
                continue;
            };
            let Some(anchor) = anchor.filter(|a| !a.starts_with(|c: char| c.is_ascii_digit()))
            else {
                continue;
            };
            let has = |marker: &str| {
                source
                    .lines()
                    .any(|l| l.split(marker).nth(1).is_some_and(|rest| rest.trim() == anchor))
            };
            if !has("ANCHOR:") || !has("ANCHOR_END:") {
                problems.push(format!("{chapter}: include of missing anchor {path}:{anchor}"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(count > 0, "no chapter includes crate code");
}

#[test]
fn ignored_rust_fences_are_only_includes_of_crate_code() {
    let mut problems = Vec::new();
    for (chapter, text) in chapters() {
        for f in fences(&text) {
            let words: Vec<&str> = f.info.split([',', ' ']).filter(|w| !w.is_empty()).collect();
            if words.first() != Some(&"rust") || !words.contains(&"ignore") {
                continue;
            }
            let lines: Vec<&str> = f.body.lines().filter(|l| !l.trim().is_empty()).collect();
            let only_crate_includes = !lines.is_empty()
                && lines.iter().all(|l| {
                    let l = l.trim();
                    l.starts_with("{{#include ../src/") && l.ends_with("}}")
                });
            if !only_crate_includes {
                problems.push(format!(
                    "{chapter}:{}: `rust,ignore` fence that is not an include of ../src/ code",
                    f.line
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn some_snippet_uses_the_crate() {
    let uses_crate = chapters().iter().any(|(_, text)| {
        fences(text).iter().any(|f| f.info == "rust" && f.body.contains("# extern crate attn;"))
    });
    assert!(uses_crate, "no tested `rust` snippet uses the crate");
}

/// `cargo test` runs the book's snippets through `src/lib.rs`'s `chapters`
/// module, one `include_str!` a page; a page left out of it is tested only by
/// `mdbook test`, so a snippet that fails there would pass `cargo test`.
#[test]
fn every_page_with_a_snippet_is_doctested_by_cargo_test() {
    let lib = fs::read_to_string(root().join("src/lib.rs")).unwrap();
    let mut missing = Vec::new();
    for (chapter, text) in chapters() {
        let runs = fences(&text).iter().any(|f| {
            let words: Vec<&str> = f.info.split([',', ' ']).filter(|w| !w.is_empty()).collect();
            words.first() == Some(&"rust") && !words.contains(&"ignore")
        });
        if runs && !lib.contains(&format!("include_str!(\"../book/{chapter}\")")) {
            missing.push(chapter);
        }
    }
    assert!(
        missing.is_empty(),
        "pages with `rust` snippets missing from src/lib.rs's chapters: {missing:?}"
    );
}

/// Image targets in a chapter: `![alt](target)`.
fn images(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("![") {
        let Some(close) = rest[i..].find("](") else {
            break;
        };
        let start = i + close + 2;
        let end = rest[start..].find(')').expect("closed image link");
        out.push(rest[start..start + end].to_string());
        rest = &rest[start + end..];
    }
    out
}

#[test]
fn figures_exist_come_from_examples_and_are_all_shown() {
    let mut examples = String::new();
    for entry in fs::read_dir(root().join("examples")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "rs") {
            examples.push_str(&fs::read_to_string(&path).unwrap());
        }
    }
    let mut problems = Vec::new();
    let mut shown = BTreeSet::new();
    for (chapter, text) in chapters() {
        for image in images(&text) {
            let name = Path::new(&image).file_name().unwrap().to_string_lossy().to_string();
            if !book().join(&image).exists() {
                problems.push(format!("{chapter}: shows missing figure {image}"));
            }
            if !examples.contains(&format!("\"{name}\"")) {
                problems.push(format!("{chapter}: figure {image} is written by no example"));
            }
            shown.insert(name);
        }
    }
    for entry in fs::read_dir(book().join("figures")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().to_string();
        if !shown.contains(&name) {
            problems.push(format!("book/figures/{name} is shown by no chapter"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Every page of the book is held by the unbound-number check: some test
/// file builds `Bindings::new("PAGE")` and calls `assert_all_bound` on it.
#[test]
fn every_page_has_an_unbound_number_check() {
    let tests: Vec<String> = rust_files(&root().join("tests"))
        .iter()
        .map(|path| fs::read_to_string(path).unwrap())
        .collect();
    for (page, _) in chapters() {
        let checked = tests
            .iter()
            .any(|t| t.contains(&format!("\"{page}\"")) && t.contains("assert_all_bound()"));
        assert!(
            checked,
            "{page}: no test checks that its numbers are bound (tests/common/numbers.rs)"
        );
    }
}
