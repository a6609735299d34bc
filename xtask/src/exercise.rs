//! `cargo xtask exercise`: the book's code exercises as a loop a reader can
//! run. `list` shows them; `start chNN-K` writes the solution's signature
//! with a `todo!()` body, its doc comment, the exercise's text and the
//! solution's own tests into `learner/` (a crate kept out of git); `check
//! chNN-K` runs those tests against the reader's code and shows the
//! exercise's text as a hint when they fail. The exercises are read from
//! the chapters, so a new one is picked up without a list kept by hand.

mod stub;
mod verify;

pub(crate) use verify::verify;

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::root;
use crate::Step;

/// One code exercise of a chapter.
pub(crate) struct Exercise {
    /// `chNN-K`.
    pub(crate) id: String,
    /// Its title, as the chapter gives it.
    pub(crate) title: String,
    /// Its text, up to the solution.
    pub(crate) text: String,
    /// The solution's file (under `src/exercises/`) and anchor, when the
    /// solution is a listing of its own there.
    pub(crate) solution: Option<(PathBuf, String)>,
}

impl Exercise {
    /// The learner's module name, `chNN_K`.
    pub(crate) fn module(&self) -> String {
        self.id.replace('-', "_")
    }
}

/// Every code exercise of every chapter, in the book's order.
pub(crate) fn exercises() -> Result<Vec<Exercise>, String> {
    let book = root().join("book");
    let mut chapters: Vec<PathBuf> = std::fs::read_dir(&book)
        .map_err(|e| format!("{}: {e}", book.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            name.starts_with("ch") && name.ends_with(".md")
        })
        .collect();
    chapters.sort();
    let mut all = Vec::new();
    for path in chapters {
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let chapter = &path.file_name().and_then(|n| n.to_str()).unwrap_or("")[..4];
        all.extend(code_exercises(chapter, &text));
    }
    Ok(all)
}

/// The code exercises of one chapter's "Exercises" section: each starts
/// `**K. Title.** *Code.*`; its solution is the first listing included
/// from `src/exercises/` in the `<details>` after it.
fn code_exercises(chapter: &str, text: &str) -> Vec<Exercise> {
    let Some(section) = text.split("\n## Exercises\n").nth(1) else {
        return Vec::new();
    };
    let section = section.split("\n## ").next().unwrap_or("");
    let mut found = Vec::new();
    for entry in section.split("\n**").skip(1) {
        let Some((head, rest)) = entry.split_once("** *Code.*") else {
            continue;
        };
        let Some((number, title)) = head.split_once(". ") else {
            continue;
        };
        let (text, details) = rest.split_once("<details>").unwrap_or((rest, ""));
        let solution = details
            .split("{{#include ../src/exercises/")
            .nth(1)
            .and_then(|s| s.split_once("}}"))
            .and_then(|(target, _)| target.split_once(':'))
            .map(|(file, anchor)| {
                let file = root().join("src/exercises").join(file);
                (file, anchor.to_string())
            });
        found.push(Exercise {
            id: format!("{chapter}-{number}"),
            title: title.trim_end_matches('.').to_string(),
            text: text.trim().to_string(),
            solution,
        });
    }
    found
}

/// The learner's crate, kept out of git.
fn learner() -> PathBuf {
    root().join("learner")
}

/// The learner's file for `ex`.
fn learner_file(ex: &Exercise) -> PathBuf {
    learner().join("src").join(format!("{}.rs", ex.module()))
}

/// The book's `Cargo.lock` in the crate at `dir`, so that it builds with
/// the versions the book is tested with (and reuses their builds under
/// `target/`).
fn pin_versions(dir: &Path) -> Step {
    let lock = root().join("Cargo.lock");
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    std::fs::copy(&lock, dir.join("Cargo.lock"))
        .map(|_| ())
        .map_err(|e| format!("{}: {e}", lock.display()))
}

/// The tests of `ex` in the learner's crate at `dir`.
fn checks_file(dir: &Path, ex: &Exercise) -> PathBuf {
    dir.join("src/checks").join(format!("{}.rs", ex.module()))
}

/// The record of the exercises whose checks passed.
fn done_file() -> PathBuf {
    learner().join("done.txt")
}

fn done() -> Vec<String> {
    std::fs::read_to_string(done_file())
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(String::from)
        .collect()
}

/// `cargo xtask exercise …`.
pub(crate) fn exercise(args: &[String]) -> Step {
    let all = exercises()?;
    let find = |id: &str| {
        all.iter()
            .find(|e| e.id == id)
            .ok_or_else(|| format!("no code exercise {id}: `cargo xtask exercise list` shows them"))
    };
    match args {
        [] => Err("cargo xtask exercise list | start chNN-K | check [chNN-K]".into()),
        [cmd] if cmd == "list" => {
            list(&all);
            Ok(())
        }
        [cmd, id] if cmd == "start" => start(find(id)?),
        [cmd, id] if cmd == "check" => check(&[find(id)?]),
        [cmd] if cmd == "verify" => verify(),
        [cmd] if cmd == "check" => {
            let started: Vec<&Exercise> = all.iter().filter(|e| learner_file(e).exists()).collect();
            check(&started)
        }
        _ => Err(format!(
            "unknown arguments {args:?}: list, start chNN-K or check [chNN-K]"
        )),
    }
}

fn list(all: &[Exercise]) {
    let done = done();
    for ex in all {
        let state = match (
            done.contains(&ex.id),
            learner_file(ex).exists(),
            &ex.solution,
        ) {
            (true, _, _) => "done",
            (false, true, _) => "started",
            (false, false, Some(_)) => "",
            (false, false, None) => "(its solution lives in the crate: read it in the book)",
        };
        println!("{:<7} {:<55} {state}", ex.id, ex.title);
    }
    println!("{} of {} done", done.len(), all.len());
}

/// Writes the learner's copy of `ex` and prints where to edit it.
fn start(ex: &Exercise) -> Step {
    let (file, anchor) = ex.solution.as_ref().ok_or_else(|| {
        format!(
            "{}'s solution is part of the crate itself, not a listing of its own; \
             read it in the book",
            ex.id
        )
    })?;
    let (module, tests) = stub::learner_module(ex, file, anchor, false)?;
    let path = learner_file(ex);
    if path.exists() {
        println!("{} already started: edit {}", ex.id, path.display());
        return Ok(());
    }
    write_crate()?;
    write(&path, &module)?;
    write(&checks_file(&learner(), ex), &tests)?;
    register(&ex.module())?;
    prune_private_imports(&learner())?;
    println!("{}: {}\n\n{}\n", ex.id, ex.title, ex.text);
    println!("Edit {} (replace each todo!()),", path.display());
    println!("then run `cargo xtask exercise check {}`.", ex.id);
    Ok(())
}

/// The learner's manifest: the book's crate and what its tests use.
const MANIFEST: &str = "# Your answers to the book's exercises (`cargo xtask exercise`).\n\
[package]\nname = \"NAME\"\nversion = \"0.1.0\"\nedition = \"2021\"\npublish = false\n\n\
[dependencies]\nattn = { path = \"ATTN\" }\nndarray = \"0.17\"\nndarray-rand = \"0.16\"\n\
approx = \"0.5\"\n\n[workspace]\n";

/// The learner's `Cargo.toml` and `lib.rs`, if missing.
fn write_crate() -> Step {
    let manifest = learner().join("Cargo.toml");
    if !manifest.exists() {
        let text = MANIFEST.replace("ATTN", "..").replace("NAME", "learner");
        write(&manifest, &text)?;
        pin_versions(&learner())?;
    }
    let lib = learner().join("src/lib.rs");
    if !lib.exists() {
        write(&lib, "//! Your answers to the book's exercises.\n")?;
    }
    Ok(())
}

/// Adds `mod module;` to the learner's `lib.rs`.
fn register(module: &str) -> Step {
    let lib = learner().join("src/lib.rs");
    let text = std::fs::read_to_string(&lib).map_err(|e| format!("{}: {e}", lib.display()))?;
    let line = format!("pub mod {module};");
    if !text.lines().any(|l| l == line) {
        write(&lib, &format!("{text}{line}\n"))?;
    }
    Ok(())
}

fn write(path: &Path, text: &str) -> Step {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Runs each exercise's tests against the learner's code.
fn check(chosen: &[&Exercise]) -> Step {
    if chosen.is_empty() {
        return Err("no exercise started: `cargo xtask exercise start chNN-K` starts one".into());
    }
    let mut passed = done();
    let mut failures = Vec::new();
    for ex in chosen {
        if !learner_file(ex).exists() {
            return Err(format!(
                "{} is not started: `cargo xtask exercise start {}`",
                ex.id, ex.id
            ));
        }
        if let Some((file, anchor)) = &ex.solution {
            let (_, tests) = stub::learner_module(ex, file, anchor, false)?;
            write(&checks_file(&learner(), ex), &tests)?; // the book's tests, as they are
        }
        let ok = run_tests(&ex.module())?;
        println!(
            "{}: {}",
            ex.id,
            if ok { "passes" } else { "does not pass yet" }
        );
        passed.retain(|id| id != &ex.id);
        if ok {
            passed.push(ex.id.clone());
        } else {
            failures.push(*ex);
        }
    }
    passed.sort();
    write(&done_file(), &(passed.join("\n") + "\n"))?;
    for ex in &failures {
        println!("\nHint, the exercise's text ({}):\n{}", ex.id, ex.text);
    }
    let total = exercises().map(|a| a.len()).unwrap_or(0);
    println!("\n{} of {total} exercises done", passed.len());
    match failures.is_empty() {
        true => Ok(()),
        false => Err(format!("{} exercise(s) do not pass yet", failures.len())),
    }
}

/// `cargo test` of the learner's module `module`; whether every test
/// passed. Its output is shown.
pub(crate) fn run_tests(module: &str) -> Result<bool, String> {
    let status = Command::new(env!("CARGO"))
        .args(["test", "--quiet", "--manifest-path"])
        .arg(learner().join("Cargo.toml"))
        .arg("--target-dir")
        .arg(root().join("target"))
        .args(["--lib", &format!("{module}::")])
        .status()
        .map_err(|e| format!("cargo test: {e}"))?;
    Ok(status.success())
}

/// Removes from the stubs in `dir/src` the `use` lines that import items
/// private to the book's crate (the solution's own helpers, which the
/// reader's answer does not need), as `cargo check` names them (E0603);
/// a comment says what was removed.
fn prune_private_imports(dir: &Path) -> Step {
    for _ in 0..4 {
        let output = Command::new(env!("CARGO"))
            .args([
                "check",
                "--lib",
                "--message-format",
                "short",
                "--manifest-path",
            ])
            .arg(dir.join("Cargo.toml"))
            .arg("--target-dir")
            .arg(root().join("target"))
            .output()
            .map_err(|e| format!("cargo check: {e}"))?;
        let stderr = String::from_utf8_lossy(&output.stderr);
        let mut private: Vec<(String, usize)> = stderr
            .lines()
            .filter(|l| l.contains("error[E0603]"))
            .filter_map(|l| {
                let mut parts = l.split(':');
                let file = parts.next()?.to_string();
                let line = parts.next()?.parse::<usize>().ok()?;
                Some((file, line))
            })
            .collect();
        if private.is_empty() {
            return Ok(());
        }
        private.sort();
        private.dedup();
        for (file, line) in private {
            let path = dir.join(&file);
            let text = std::fs::read_to_string(&path).map_err(|e| format!("{file}: {e}"))?;
            let mut lines: Vec<String> = text.lines().map(String::from).collect();
            if let Some(l) = lines.get_mut(line - 1) {
                if l.trim_start().starts_with("use ") {
                    *l = format!(
                        "// (the solution also used, privately to the crate: {})",
                        l.trim()
                    );
                }
            }
            write(&path, &(lines.join("\n") + "\n"))?;
        }
    }
    Err("the stubs still import private items after four passes".into())
}
