//! The student edition: the book with every exercise's solution and every
//! quiz's answer taken out, everything else identical, for a teacher to hand
//! out. `cargo xtask build --student` writes it to [`STUDENT_DIR`] and
//! `cargo xtask serve --student` serves it.
//!
//! mdBook runs this program as a preprocessor (`xtask student-preprocessor`),
//! enabled for those builds only through mdBook's environment configuration,
//! so `book.toml` and the teacher's build stay as they are. It removes each
//! block the chapters write as
//!
//! ```text
//! <details>
//! <summary>Solution</summary>      (or Answer)
//! …
//! </details>
//! ```
//!
//! before the `{{#include}}` links are expanded, so a solution's listing
//! never reaches the page either.

use std::io::Read;
use std::path::Path;
use std::process::Command;

/// Where the student edition is built.
pub(crate) const STUDENT_DIR: &str = "target/book/student";

/// The summaries whose blocks hold answers.
const ANSWER_SUMMARIES: [&str; 2] = ["<summary>Solution</summary>", "<summary>Answer</summary>"];

/// Configures an `mdbook` command (build or serve) to produce the student
/// edition: this program as a preprocessor, before the links are expanded.
pub(crate) fn student_edition(mdbook: &mut Command) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| format!("finding the xtask binary: {e}"))?;
    let exe = exe.to_str().filter(|s| !s.contains(char::is_whitespace)).ok_or_else(|| {
        format!(
            "the xtask binary's path {} has spaces or is not UTF-8; mdBook cannot run it",
            exe.display()
        )
    })?;
    let config = serde_json::json!({
        "command": format!("{exe} student-preprocessor"),
        "before": ["links", "katex"],
    });
    mdbook
        .env("MDBOOK_PREPROCESSOR__STUDENT", config.to_string())
        .args(["--dest-dir", STUDENT_DIR]);
    Ok(())
}

/// Deletes from the built student edition every figure and data file that
/// no page links to any more: those only a solution showed (chapter 12's
/// sorting model, say). Returns how many went.
pub(crate) fn drop_answer_files(built: &Path) -> Result<usize, String> {
    let read_dir =
        |dir: &Path| std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()));
    let mut pages = String::new();
    for entry in read_dir(built)? {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path.extension().is_some_and(|e| e == "html") {
            pages +=
                &std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        }
    }
    let mut dropped = 0;
    for folder in ["figures", "data"] {
        let Ok(entries) = read_dir(&built.join(folder)) else {
            continue;
        };
        for entry in entries {
            let path = entry.map_err(|e| e.to_string())?.path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            if path.is_file() && !pages.contains(&format!("{folder}/{name}")) {
                std::fs::remove_file(&path).map_err(|e| format!("{}: {e}", path.display()))?;
                dropped += 1;
            }
        }
    }
    Ok(dropped)
}

/// The preprocessor's side of mdBook's protocol: `supports RENDERER` (every
/// renderer), or the `[context, book]` JSON on stdin, answered with the book
/// on stdout.
pub(crate) fn preprocessor(args: &[String]) -> Result<(), String> {
    if args.first().map(String::as_str) == Some("supports") {
        return Ok(());
    }
    let mut input = String::new();
    std::io::stdin()
        .read_to_string(&mut input)
        .map_err(|e| format!("reading mdBook's input: {e}"))?;
    let value: serde_json::Value =
        serde_json::from_str(&input).map_err(|e| format!("mdBook's input is not JSON: {e}"))?;
    let mut book = match value {
        serde_json::Value::Array(mut pair) if pair.len() == 2 => pair.remove(1),
        _ => return Err("mdBook's input is not a [context, book] pair".into()),
    };
    strip_chapters(&mut book)?;
    println!("{book}");
    Ok(())
}

/// Every chapter in the book's JSON (an object with a `content` string
/// and `sub_items`, at any depth), with its answers removed.
fn strip_chapters(value: &mut serde_json::Value) -> Result<(), String> {
    match value {
        serde_json::Value::Object(map) => {
            if map.contains_key("sub_items") {
                let name = map.get("name").and_then(|n| n.as_str()).unwrap_or("?").to_owned();
                if let Some(serde_json::Value::String(content)) = map.get_mut("content") {
                    *content = strip_answers(content).map_err(|e| format!("{name}: {e}"))?.0;
                }
            }
            map.values_mut().try_for_each(strip_chapters)
        }
        serde_json::Value::Array(items) => items.iter_mut().try_for_each(strip_chapters),
        _ => Ok(()),
    }
}

/// The chapter's Markdown without its solution and answer blocks (and the
/// blank line after each), and how many it removed. Any other `<details>`
/// stays, except in the exercises and the quiz, where it is an error (an
/// answer under another summary would slip through). An answer block left
/// open, or one with another block inside, is an error too: the edition must
/// not guess where an answer ends. A `</details>` inside a code block does
/// not end one.
pub(crate) fn strip_answers(markdown: &str) -> Result<(String, usize), String> {
    let lines: Vec<&str> = markdown.split_inclusive('\n').collect();
    let mut kept = String::with_capacity(markdown.len());
    let mut removed = 0;
    let mut i = 0;
    while i < lines.len() {
        let opens = lines[i].trim() == "<details>"
            && lines.get(i + 1).is_some_and(|next| ANSWER_SUMMARIES.contains(&next.trim()));
        if !opens {
            kept.push_str(lines[i]);
            i += 1;
            continue;
        }
        let start = i;
        i += 2;
        let mut fenced = false;
        loop {
            let line = lines.get(i).map(|l| l.trim());
            if line.is_some_and(|l| l.starts_with("```")) {
                fenced = !fenced;
            }
            if fenced {
                i += 1;
                continue;
            }
            match line {
                None => {
                    return Err(format!(
                        "the answer opened on line {} has no </details>",
                        start + 1
                    ))
                }
                Some("</details>") => break,
                Some("<details>") => {
                    return Err(format!(
                        "the answer opened on line {} holds another <details> (line {})",
                        start + 1,
                        i + 1
                    ))
                }
                Some(_) => i += 1,
            }
        }
        i += 1;
        if lines.get(i).is_some_and(|l| l.trim().is_empty()) {
            i += 1;
        }
        removed += 1;
    }
    let mut answers_section = false;
    for (number, line) in kept.lines().enumerate() {
        if line.starts_with("## ") {
            answers_section = line == "## Exercises" || line == "## Quiz";
        }
        if answers_section && line.trim() == "<details>" {
            return Err(format!(
                "line {} of what is left opens a <details> in the exercises or quiz whose \
                 summary is not {}: name it so, or move it out",
                number + 1,
                ANSWER_SUMMARIES.join(" or ")
            ));
        }
    }
    Ok((kept, removed))
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXERCISE: &str = "**1. Temperature.** Write it.\n\n<details>\n<summary>Solution</summary>\n\n\
        ```rust,ignore\n{{#include ../src/x.rs:t}}\n```\n\nBecause.\n\n</details>\n\n**2. Next.**\n";

    #[test]
    fn a_solution_goes_and_the_exercise_stays() {
        let (text, removed) = strip_answers(EXERCISE).unwrap();
        assert_eq!(removed, 1);
        assert_eq!(text, "**1. Temperature.** Write it.\n\n**2. Next.**\n");
    }

    #[test]
    fn a_quiz_answer_goes_and_its_options_stay() {
        let quiz = "**1. Q?**\n\n- (a) x\n- (b) y\n\n<details>\n<summary>Answer</summary>\n\n(b). Why.\n\n</details>\n";
        let (text, removed) = strip_answers(quiz).unwrap();
        assert_eq!(removed, 1);
        assert_eq!(text, "**1. Q?**\n\n- (a) x\n- (b) y\n\n");
    }

    #[test]
    fn other_details_stay() {
        let other = "<details>\n<summary>More</summary>\n\nKept.\n\n</details>\n";
        assert_eq!(strip_answers(other).unwrap(), (other.to_owned(), 0));
    }

    #[test]
    fn a_closing_tag_in_code_does_not_end_an_answer() {
        let code = "<details>\n<summary>Solution</summary>\n\n```text\n</details>\n```\n\nMore.\n</details>\nAfter.\n";
        assert_eq!(strip_answers(code).unwrap(), ("After.\n".to_owned(), 1));
    }

    #[test]
    fn another_summary_in_the_exercises_is_an_error() {
        let sketch =
            "## Exercises\n\n<details>\n<summary>Solution sketch</summary>\n\nIt.\n</details>\n";
        assert!(strip_answers(sketch).unwrap_err().contains("line 3"));
    }

    #[test]
    fn an_open_or_nested_answer_is_an_error() {
        let open = "<details>\n<summary>Answer</summary>\n\n(b).\n";
        assert!(strip_answers(open).unwrap_err().contains("line 1 has no </details>"));
        let nested = "x\n<details>\n<summary>Answer</summary>\n<details>\n</details>\n</details>\n";
        assert!(strip_answers(nested).unwrap_err().contains("line 2 holds another"));
    }

    /// Every chapter's answers come out: none of the answer summaries is
    /// left, and each chapter with exercises or a quiz loses some.
    #[test]
    fn every_chapter_loses_its_answers() {
        let dir = crate::root().join("book");
        let mut chapters = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "md") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let (stripped, removed) = strip_answers(&text).unwrap();
            for summary in ANSWER_SUMMARIES {
                assert!(!stripped.contains(summary), "{}: {summary} left", path.display());
            }
            let answers: usize = ANSWER_SUMMARIES.iter().map(|s| text.matches(s).count()).sum();
            assert_eq!(removed, answers, "{}", path.display());
            chapters += usize::from(removed > 0);
        }
        assert!(chapters >= 16, "only {chapters} chapters had answers to remove");
    }
}
