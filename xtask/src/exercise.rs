//! `cargo xtask exercise`: the book's code exercises as a loop a reader can
//! run. `list` shows them; `start chNN-K` writes the solution's signature
//! with a `todo!()` body, its doc comment, the exercise's text and the
//! solution's own tests into `learner/` (a crate kept out of git); `check
//! chNN-K` runs those tests against the reader's code and, for each test
//! that fails, shows last the test's hint. Both compile the reader's
//! module alone with rustc against the book's own build ([`Rustc`]), so
//! that they answer in seconds once the book is built. The exercises are
//! read from the chapters, so a new one is picked up without a list kept
//! by hand.

mod check;
mod imports;
mod plain;
mod rustc;
mod stub;
mod uses;
mod verify;

use check::check;
use imports::prune_private_imports;
use plain::plain_math;
use rustc::Rustc;

pub(crate) use verify::verify;

use std::path::{Path, PathBuf};

use crate::root;
use crate::Step;

/// One code exercise of a chapter.
pub(crate) struct Exercise {
    /// `chNN-K`, or `fast-K` for the appendix "Making it fast".
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

/// The appendix with exercises, whose ids are `fast-K`.
const APPENDIX: &str = "making-it-fast.md";

/// Every code exercise of every chapter and of the appendix, in the book's
/// order: `chNN-K`, then `fast-K`.
pub(crate) fn exercises() -> Result<Vec<Exercise>, String> {
    let book = root().join("book");
    let mut chapters: Vec<PathBuf> = std::fs::read_dir(&book)
        .map_err(|e| format!("{}: {e}", book.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            (name.starts_with("ch") && name.ends_with(".md")) || name == APPENDIX
        })
        .collect();
    chapters.sort();
    let mut all = Vec::new();
    for path in chapters {
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let chapter = if name == APPENDIX { "fast" } else { &name[..4] };
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
        [] => Err("cargo xtask exercise list | start chNN-K | check [chNN-K] | verify".into()),
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
        _ => {
            Err(format!("unknown arguments {args:?}: list, start chNN-K, check [chNN-K] or verify"))
        }
    }
}

fn list(all: &[Exercise]) {
    let done = done();
    for ex in all {
        let state = match (done.contains(&ex.id), learner_file(ex).exists(), &ex.solution) {
            (true, _, _) => "done",
            (false, true, _) => "started",
            (false, false, Some(_)) => "",
            (false, false, None) => "(its solution lives in the crate: read it in the book)",
        };
        println!("{:<7} {:<55} {state}", ex.id, ex.title);
    }
    println!("{} of {} done", done.len(), startable_count());
}

/// How many exercises have a listing of their own (the others' solutions
/// are the crate's code).
fn startable_count() -> usize {
    exercises().map_or(0, |all| all.iter().filter(|e| e.solution.is_some()).count())
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
    let rustc = Rustc::new()?;
    write_crate()?;
    write(&path, &module)?;
    write(&checks_file(&learner(), ex), &tests)?;
    register(&ex.module())?;
    let m = ex.module();
    prune_private_imports(&|| rustc.check(&learner(), Some(&m)), &learner(), Some(&m))?;
    let errors = rustc.check(&learner(), Some(&m))?;
    if errors.lines().any(|l| l.contains(": error")) {
        // Its tests need the crate's private helpers: undo, and say so.
        eprint!("{errors}");
        let _ = std::fs::remove_file(&path);
        let _ = std::fs::remove_file(checks_file(&learner(), ex));
        unregister(&m)?;
        return Err(format!(
            "{}'s tests use the book's crate's private helpers, so they run only inside it: \
             write your answer there, or read the solution in the book (`cargo test \
             exercises::{}` runs it)",
            ex.id,
            &ex.id[..4]
        ));
    }
    println!("{}: {}\n\n{}\n", ex.id, ex.title, plain_math(&ex.text));
    println!("Edit {} (replace each todo!()),", path.display());
    println!("then run `cargo xtask exercise check {}`.", ex.id);
    Ok(())
}

/// The learner's manifest: the book's crate and what its tests use.
const MANIFEST: &str = "# Your answers to the book's exercises (`cargo xtask exercise`).\n\
[package]\nname = \"NAME\"\nversion = \"0.1.0\"\nedition = \"2021\"\npublish = false\n\n\
[dependencies]\nattn = { path = \"ATTN\" }\nndarray = \"0.17\"\nndarray-rand = \"0.16\"\n\
approx = \"0.5\"\nserde_json = \"1\"\n\n[workspace]\n\nPROFILES\n\
# One feature an exercise, so that each compiles alone.\n[features]\n";

/// [`MANIFEST`] for the crate `name` whose `attn` is at `attn` (relative),
/// with the book's own `[profile.*]` sections copied from its `Cargo.toml`.
/// The checks compile the learner's code with rustc ([`Rustc`]); the
/// manifest is for the reader's editor and for `cargo test` by hand (which
/// builds the library once more, resolving the dependencies' features
/// without the book's other crates).
pub(crate) fn manifest(attn: &str, name: &str) -> Result<String, String> {
    let book = root().join("Cargo.toml");
    let text = std::fs::read_to_string(&book).map_err(|e| format!("{}: {e}", book.display()))?;
    let mut profiles = String::new();
    let mut in_profile = false;
    for line in text.lines() {
        if line.starts_with('[') {
            in_profile = line.starts_with("[profile.");
        }
        if in_profile && !line.starts_with('#') {
            profiles.push_str(line);
            profiles.push('\n');
        }
    }
    Ok(MANIFEST.replace("ATTN", attn).replace("NAME", name).replace("PROFILES", &profiles))
}

/// The learner's `Cargo.toml` and `lib.rs`, if missing.
fn write_crate() -> Step {
    let path = learner().join("Cargo.toml");
    if !path.exists() {
        write(&path, &manifest("..", "learner")?)?;
        pin_versions(&learner())?;
    }
    let lib = learner().join("src/lib.rs");
    if !lib.exists() {
        write(&lib, "//! Your answers to the book's exercises.\n")?;
    }
    Ok(())
}

/// Adds `module` to the learner's `lib.rs`, behind a feature of its name
/// (so that a mistake in one exercise never stops another's check).
fn register(module: &str) -> Step {
    let read =
        |path: &Path| std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()));
    let lib = learner().join("src/lib.rs");
    let text = read(&lib)?;
    let line = format!("pub mod {module};");
    if !text.lines().any(|l| l == line) {
        let gate = format!("#[cfg(feature = \"{module}\")]");
        write(&lib, &format!("{}\n{gate}\n{line}\n", text.trim_end()))?;
    }
    let manifest = learner().join("Cargo.toml");
    let text = read(&manifest)?;
    let feature = format!("{module} = []");
    if !text.lines().any(|l| l == feature) {
        write(&manifest, &format!("{}\n{feature}\n", text.trim_end()))?;
    }
    Ok(())
}

/// Takes back what [`register`] wrote, for a start that failed.
fn unregister(module: &str) -> Step {
    let gate = format!("#[cfg(feature = \"{module}\")]");
    let drop_lines = |path: &Path, gone: &[String]| -> Step {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let kept: Vec<&str> = text.lines().filter(|l| !gone.iter().any(|g| g == l)).collect();
        write(path, &(kept.join("\n") + "\n"))
    };
    drop_lines(&learner().join("src/lib.rs"), &[gate, format!("pub mod {module};")])?;
    drop_lines(&learner().join("Cargo.toml"), &[format!("{module} = []")])
}

fn write(path: &Path, text: &str) -> Step {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}
