//! The crate's modules depend one way (DEVELOPERS.md, "How the code should
//! read"): no cycle among the top-level modules of `src/`, the product at
//! the bottom and the float type depending on nothing. Read from the
//! sources' `crate::…` paths, test code left out (a test may compare a
//! module with anything above it).

mod common;

use common::book::rust_files;
use regex::Regex;
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The top-level modules `src/lib.rs` declares.
fn top_level_modules() -> BTreeSet<String> {
    let declaration = Regex::new(r"(?m)^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;").unwrap();
    let lib = fs::read_to_string(src().join("lib.rs")).unwrap();
    declaration.captures_iter(&lib).map(|c| c[1].to_string()).collect()
}

/// The top-level module a file of `src/` belongs to.
fn module_of(path: &Path) -> Option<String> {
    let rel = path.strip_prefix(src()).ok()?;
    let first = rel.components().next()?.as_os_str().to_string_lossy();
    Some(first.trim_end_matches(".rs").to_string())
}

/// A file's code without comments and without its test modules (`mod
/// tests;` files are skipped by the caller; inline `#[cfg(test)] mod … { … }`
/// blocks are cut out here).
fn code_without_tests(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let code = line.split("//").next().unwrap_or("");
        if code.trim() == "#[cfg(test)]" {
            if let Some(next) = lines.peek() {
                if next.trim_start().starts_with("mod ") && next.contains('{') {
                    let mut depth = 0_i64;
                    for l in lines.by_ref() {
                        let c = l.split("//").next().unwrap_or("");
                        depth += c.matches('{').count() as i64 - c.matches('}').count() as i64;
                        if depth <= 0 && c.contains('}') {
                            break;
                        }
                    }
                    continue;
                }
            }
        }
        out.push_str(code);
        out.push('\n');
    }
    out
}

/// Whether a file holds only tests: `tests.rs`, or a file under a `tests/`
/// directory of `src/`.
fn is_test_file(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == "tests.rs")
        || path.strip_prefix(src()).is_ok_and(|p| p.components().any(|c| c.as_os_str() == "tests"))
}

/// `module → the top-level modules its code names`, with the files that name them.
fn dependencies() -> BTreeMap<String, BTreeMap<String, BTreeSet<String>>> {
    let modules = top_level_modules();
    let path = Regex::new(r"crate::(\w+)").unwrap();
    let group = Regex::new(r"use\s+crate::\{([^;]*)\};").unwrap();
    let first_word = Regex::new(r"(?:^|[,{]\s*)(\w+)").unwrap();
    let mut out: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for file in rust_files(&src()) {
        if is_test_file(&file) {
            continue;
        }
        let Some(from) = module_of(&file) else {
            continue;
        };
        if from == "lib" {
            continue;
        }
        let code = code_without_tests(&fs::read_to_string(&file).unwrap());
        let mut named: BTreeSet<String> =
            path.captures_iter(&code).map(|c| c[1].to_string()).collect();
        for g in group.captures_iter(&code) {
            let inner = g[1].replace('\n', " ");
            named.extend(first_word.captures_iter(&inner).map(|c| c[1].to_string()));
        }
        let rel = file.strip_prefix(src()).unwrap().display().to_string();
        for to in named {
            if modules.contains(&to) && to != from {
                out.entry(from.clone()).or_default().entry(to).or_default().insert(rel.clone());
            }
        }
    }
    out
}

/// One cycle through `start`, if there is one: the modules in order.
fn cycle_through(
    start: &str,
    edges: &BTreeMap<String, BTreeMap<String, BTreeSet<String>>>,
) -> Option<Vec<String>> {
    // Depth-first search for a path from each successor back to `start`.
    let mut stack: Vec<(String, Vec<String>)> = vec![(start.to_string(), vec![start.to_string()])];
    let mut seen = BTreeSet::new();
    while let Some((at, path)) = stack.pop() {
        for next in edges.get(&at).into_iter().flat_map(|e| e.keys()) {
            if next == start {
                return Some(path.clone());
            }
            if seen.insert(next.clone()) {
                let mut longer = path.clone();
                longer.push(next.clone());
                stack.push((next.clone(), longer));
            }
        }
    }
    None
}

#[test]
fn the_top_level_modules_form_no_cycle() {
    let edges = dependencies();
    assert!(
        edges.len() > 10,
        "only {} modules name another: is the parser reading the sources?",
        edges.len()
    );
    let mut cycles = Vec::new();
    let mut reported = BTreeSet::new();
    for start in edges.keys() {
        if reported.contains(start) {
            continue;
        }
        if let Some(cycle) = cycle_through(start, &edges) {
            let mut steps = Vec::new();
            for (i, from) in cycle.iter().enumerate() {
                let to = &cycle[(i + 1) % cycle.len()];
                let files: Vec<&String> = edges[from][to].iter().collect();
                steps.push(format!("  {from} → {to} (in {files:?})"));
                reported.insert(from.clone());
            }
            cycles.push(steps.join("\n"));
        }
    }
    assert!(
        cycles.is_empty(),
        "{} cycles among src/'s top-level modules:\n{}",
        cycles.len(),
        cycles.join("\n\n")
    );
}

#[test]
fn the_float_type_depends_on_nothing_of_the_crate() {
    let real = fs::read_to_string(src().join("real.rs")).unwrap();
    let code = code_without_tests(&real);
    assert!(
        !code.contains("crate::") && !code.contains("super::"),
        "src/real.rs names the crate's items: {:?}",
        code.lines().filter(|l| l.contains("crate::")).collect::<Vec<_>>()
    );
}
