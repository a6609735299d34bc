//! The book's pages as the tests read them: `book/`, a page's text, and
//! the pages SUMMARY.md lists, in order.

use std::path::{Path, PathBuf};

/// The repository's `book/` directory.
pub fn book() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("book")
}

/// The text of `book/NAME`.
pub fn page(name: &str) -> String {
    let path = book().join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// One entry of SUMMARY.md: its title, its file, and the part it is in.
#[derive(Debug, Clone)]
pub struct Listed {
    pub title: String,
    pub file: String,
    pub part: String,
}

/// The pages SUMMARY.md lists, in order (the introduction's part is "";
/// draft chapters, which have no file, are left out).
pub fn summary() -> Vec<Listed> {
    let mut part = String::new();
    let mut out = Vec::new();
    for line in page("SUMMARY.md").lines() {
        if let Some(title) = line.strip_prefix("# ") {
            part = title.trim().to_string();
            continue;
        }
        let Some(open) = line.find('[') else { continue };
        let Some(mid) = line[open..].find("](") else {
            continue;
        };
        let title = &line[open + 1..open + mid];
        let rest = &line[open + mid + 2..];
        let file = &rest[..rest.find(')').unwrap_or(rest.len())];
        if file.is_empty() {
            continue; // a draft chapter: listed, no page yet
        }
        out.push(Listed {
            title: title.to_string(),
            file: file.to_string(),
            part: if part == "Summary" { String::new() } else { part.clone() },
        });
    }
    out
}

/// Every page SUMMARY.md lists, with its text.
pub fn pages() -> Vec<(String, String)> {
    summary()
        .into_iter()
        .map(|l| {
            let text = page(&l.file);
            (l.file, text)
        })
        .collect()
}

/// The `{{#include PATH[:ANCHOR]}}` directives of a text: `(path, anchor)`.
pub fn includes(text: &str) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("{{#include ") {
        let end = rest[i..].find("}}").expect("closed include");
        let arg = rest[i + "{{#include ".len()..i + end].trim();
        let (path, anchor) = match arg.split_once(':') {
            Some((p, a)) => (p.to_string(), Some(a.to_string())),
            None => (arg.to_string(), None),
        };
        out.push((path, anchor));
        rest = &rest[i + end..];
    }
    out
}

/// Every `.rs` file under `dir`, at any depth.
pub fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out
}
