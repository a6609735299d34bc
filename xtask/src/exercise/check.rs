//! `cargo xtask exercise check`: the book's tests of each exercise, run
//! against the reader's module, and a hint for each test that fails.

use std::process::Command;

use super::plain::{plain_math, wrapped};
use super::rustc::Rustc;
use super::Exercise;
use super::{checks_file, done, done_file, learner, learner_file, startable_count, stub, write};
use crate::{root, Step};

/// Runs each exercise's tests against the learner's code: what failed
/// first, then each failed test's hint, last on the screen.
pub(super) fn check(chosen: &[&Exercise]) -> Step {
    if chosen.is_empty() {
        return Err("no exercise started: `cargo xtask exercise start chNN-K` starts one".into());
    }
    let rustc = Rustc::new()?;
    let mut passed = done();
    let mut hints = Vec::new();
    let mut failures = 0;
    for ex in chosen {
        let Some((file, anchor)) = &ex.solution else {
            return Err(format!(
                "{}'s solution is part of the crate itself: read it in the book",
                ex.id
            ));
        };
        if !learner_file(ex).exists() {
            return Err(format!(
                "{} is not started: `cargo xtask exercise start {}`",
                ex.id, ex.id
            ));
        }
        let (_, tests) = stub::learner_module(ex, file, anchor, false)?;
        write(&checks_file(&learner(), ex), &tests)?; // the book's tests, as they are
        let failed = run_tests(&rustc, &ex.module())?;
        let ok = failed.as_ref().is_ok_and(|names| names.is_empty());
        println!("{}: {}", ex.id, if ok { "passes" } else { "does not pass yet" });
        passed.retain(|id| id != &ex.id);
        if ok {
            passed.push(ex.id.clone());
            continue;
        }
        failures += 1;
        match failed {
            Err(_) => hints.push(format!(
                "{}: your module does not compile yet; rustc's errors are above.",
                ex.id
            )),
            Ok(names) => {
                let all = stub::hints(file, anchor)?;
                for name in names {
                    let hint =
                        all.iter().find(|(test, _)| *test == name).and_then(|(_, h)| h.clone());
                    let hint = hint.unwrap_or_else(|| ex.text.clone());
                    let hint = wrapped(&format!("Hint: {}", plain_math(&hint)), 76);
                    hints.push(format!("{} failed `{name}`.\n{hint}", ex.id));
                }
            }
        }
    }
    passed.sort();
    write(&done_file(), &(passed.join("\n") + "\n"))?;
    for hint in &hints {
        println!("\n{hint}");
    }
    println!("\n{} of {} exercises done", passed.len(), startable_count());
    match failures {
        0 => Ok(()),
        n => Err(format!("{n} exercise(s) do not pass yet")),
    }
}

/// The tests of the learner's module `module`, compiled with rustc against
/// the book's build and run, their output shown: the names of the tests
/// that failed (none if all passed), or `Err` with rustc's errors if the
/// module does not compile.
fn run_tests(rustc: &Rustc, module: &str) -> Result<Result<Vec<String>, String>, String> {
    let binary = root().join("target/exercise-check/learner").join(module);
    if let Some(dir) = binary.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    eprintln!("compiling {module} and its tests…");
    if let Err(errors) = rustc.build_tests(&learner(), Some(module), &binary) {
        eprint!("{errors}");
        return Ok(Err(errors));
    }
    let output = Command::new(&binary)
        .arg(format!("{module}::"))
        // The failed assertion, without a backtrace through the harness.
        .env("RUST_BACKTRACE", "0")
        .current_dir(learner())
        .output()
        .map_err(|e| format!("{}: {e}", binary.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    print!("{stdout}");
    eprint!("{}", String::from_utf8_lossy(&output.stderr));
    let prefix = format!("test {module}::tests::");
    let results: Vec<(&str, bool)> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix(&prefix))
        .filter_map(|l| l.split_once(" ... "))
        .map(|(name, verdict)| (name, verdict.trim() == "ok"))
        .collect();
    if results.is_empty() {
        return Err(format!("no test of {module} ran"));
    }
    Ok(Ok(results.iter().filter(|(_, ok)| !ok).map(|(name, _)| name.to_string()).collect()))
}
