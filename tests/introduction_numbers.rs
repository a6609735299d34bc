//! The introduction's numbers describe its first figure (chapter 16's
//! trained model on a line of verse); like every chapter's, each is bound
//! or exempt. It also
//! names the commands that produce the data and the exercises a reader can
//! start; these tests hold those names to `xtask` and to the chapters.

mod common;

use regex::Regex;
use report::numbers::Bindings;

fn read(path: &str) -> String {
    std::fs::read_to_string(format!("{}/{path}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

#[test]
fn every_number_is_bound() {
    // The first figure: a trained head on a line of verse (the example
    // ch02_attention prints these).
    let head = report::ch02::trained_head().unwrap();
    let line = report::ch02::VERSE_LINE;
    let mut b = Bindings::new("introduction.md");
    b.section("What attention becomes");
    let n = line.chars().count();
    assert_eq!(head.weights.dim(), (n, n));
    b.exact("39", n as f64).exact("39", n as f64); // the figure's alt text
    b.exact("1", head.weights.row(0).sum().round());
    assert!(head.weights.rows().into_iter().all(|r| (r.sum() - 1.0).abs() < 1e-5));
    b.claim("nothing lies above the diagonal", head.ahead() == 0.0);
    b.rounded("0.33", head.previous());
    b.exact("21", head.previous_largest() as f64);
    b.exact("38", (n - 1) as f64);
    b.section("");
    b.assert_all_bound();
}

/// Every `cargo xtask …` command the introduction names is one `xtask`
/// accepts: its task is a task of `xtask/src/main.rs`, and its option is
/// among those the usage line lists for that task.
#[test]
fn every_command_it_names_exists() {
    let intro = read("book/introduction.md").replace('\n', " ");
    let main = read("xtask/src/main.rs");
    let usage = Regex::new(r#""usage: cargo xtask ([^"]+)""#).unwrap();
    let usage = usage.captures(&main.replace("\\\n", "").replace('\n', " ")).unwrap()[1]
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let command = Regex::new(r"`cargo\s+xtask\s+([a-z]+)((?:\s+[a-z-]+)*)`").unwrap();
    let mut named = Vec::new();
    for c in command.captures_iter(&intro) {
        let (task, options) = (c[1].to_string(), c[2].trim().to_string());
        assert!(main.contains(&format!("\"{task}\" =>")), "no task {task} in xtask");
        for option in options.split_whitespace() {
            let listed = usage
                .split(&format!("{task} ["))
                .nth(1)
                .and_then(|rest| rest.split(']').next())
                .unwrap_or_else(|| panic!("the usage lists no options for {task}"));
            assert!(
                listed.split(" | ").any(|o| o.split_whitespace().next() == Some(option)),
                "`cargo xtask {task} {options}`: {option} is not among {listed}"
            );
        }
        named.push(format!("{task} {options}").trim().to_string());
    }
    // Chapter 17's runs are among them.
    for kv in ["train kv", "measure kv"] {
        assert!(named.iter().any(|n| n == kv), "{kv} is not named: {named:?}");
    }
}

/// "Three commands need more": the sentence names three commands, each
/// with what it needs.
#[test]
fn the_commands_that_need_more_are_three() {
    let intro = read("book/introduction.md").replace('\n', " ");
    let sentence = intro
        .split("Three commands need more")
        .nth(1)
        .and_then(|rest| rest.split(". ").next())
        .expect("the sentence");
    let commands = Regex::new(r"`cargo\s+xtask[^`]*`").unwrap().find_iter(sentence).count();
    assert_eq!(commands, 3, "{sentence}");
}

/// Every *Code.* exercise can be started, as the introduction's
/// instructions assume: its solution opens with a listing of its own under
/// `src/exercises/` (found as `xtask/src/exercise.rs` finds them), from
/// which `cargo xtask exercise start` writes the stub.
#[test]
fn every_code_exercise_has_a_listing_to_start_from() {
    let mut without = Vec::new();
    let mut chapters: Vec<_> = std::fs::read_dir(format!("{}/book", env!("CARGO_MANIFEST_DIR")))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_str().unwrap();
            name.starts_with("ch") && name.ends_with(".md")
        })
        .collect();
    chapters.sort();
    for path in chapters {
        let text = std::fs::read_to_string(&path).unwrap();
        let chapter = &path.file_name().unwrap().to_str().unwrap()[..4];
        let Some(section) = text.split("\n## Exercises\n").nth(1) else {
            continue;
        };
        let section = section.split("\n## ").next().unwrap_or("");
        for entry in section.split("\n**").skip(1) {
            let Some((head, rest)) = entry.split_once("** *Code.*") else {
                continue;
            };
            let number = head.split_once(". ").map_or(head, |(n, _)| n);
            let details = rest.split_once("<details>").map_or("", |(_, d)| d);
            if !details.contains("{{#include ../src/exercises/") {
                without.push(format!("{chapter}-{number}"));
            }
        }
    }
    assert!(without.is_empty(), "code exercises without a listing of their own: {without:?}");
}
