//! `cargo xtask exercise verify`, run by `cargo xtask test`: the stubs
//! fail the book's tests and the solutions pass them, outside the crate,
//! and every test has a hint.
//!
//! The scratch crates are compiled by rustc itself against the book's own
//! build of the library ([`Rustc`]).

use std::process::Command;

use super::rustc::Rustc;
use super::{checks_file, exercises, prune_private_imports, stub, write};
use crate::{root, Step};

/// `cargo xtask exercise verify`: every exercise with a listing of its own
/// gets a stub in a scratch learner crate (`target/exercise-check/stubs`),
/// which must compile and fail every one of its tests (at least one); and
/// a copy with the solution's own bodies (`…/solved`), which must pass
/// them all, so that the tests a reader runs are ones a right answer
/// passes.
pub(crate) fn verify() -> Step {
    let mut defects = Vec::new();
    let mut counts = [0; 2];
    let rustc = Rustc::new()?;
    for solved in [false, true] {
        let results = run_all(&rustc, solved)?;
        counts[usize::from(solved)] = results.len();
        for (module, passed, failed) in results {
            let kind = if solved { "solution" } else { "stub" };
            println!("{module} {kind}: {passed} test(s) pass, {failed} fail");
            let wrong = match solved {
                false => passed > 0 || failed == 0,
                true => failed > 0 || passed == 0,
            };
            if wrong {
                defects.push(format!("{module} ({kind})"));
            }
        }
    }
    // Every test a reader's check runs has a hint for when it fails.
    for ex in exercises()? {
        let Some((file, anchor)) = &ex.solution else {
            defects.push(format!("{} cannot be started: no listing of src/exercises/", ex.id));
            continue;
        };
        for (test, hint) in stub::hints(file, anchor)? {
            if hint.is_none() {
                defects.push(format!("{}'s test {test} has no hint (a doc comment)", ex.id));
            }
        }
    }
    // Every stub and most solutions must be checkable outside the crate:
    // fewer means the stubs or their tests are broken, not that they use
    // private helpers.
    if counts[0] < 19 || counts[1] < 15 {
        defects.push(format!(
            "only {} stubs and {} solutions checked outside the crate",
            counts[0], counts[1]
        ));
    }
    match defects.is_empty() {
        true => Ok(()),
        false => Err(format!(
            "a stub passes a test or has none, a solution fails one, or a test has no hint: {}",
            defects.join(", ")
        )),
    }
}

/// Every exercise's module, stubbed or solved, in a scratch crate; each
/// module's count of passing and failing tests.
fn run_all(rustc: &Rustc, solved: bool) -> Result<Vec<(String, usize, usize)>, String> {
    let all = exercises()?;
    let name = if solved { "solved" } else { "stubs" };
    let dir = root().join("target/exercise-check").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    let mut lib = String::from("//! Every exercise's module.\n");
    let mut modules = Vec::new();
    for ex in &all {
        let Some((file, anchor)) = &ex.solution else {
            continue;
        };
        let (module, tests) = stub::learner_module(ex, file, anchor, solved)?;
        write(&dir.join("src").join(format!("{}.rs", ex.module())), &module)?;
        write(&checks_file(&dir, ex), &tests)?;
        lib += &format!("pub mod {};\n", ex.module());
        modules.push(ex.module());
    }
    write(&dir.join("src/lib.rs"), &lib)?;
    if !solved {
        // The stubs lose the solution's private imports, as a reader's do;
        // the solutions keep them, so that their errors name what is private.
        prune_private_imports(&|| rustc.check(&dir, None), &dir, None)?;
    }
    // A solution written with the crate's private helpers, or tests that
    // use them, compile only inside the crate, where `cargo test` runs
    // them; leave them out here.
    let (outside, broken) = modules_that_do_not_compile(&rustc.check(&dir, None)?);
    if !broken.is_empty() {
        return Err(format!(
            "these {name} fail to compile for another reason than the crate's private \
             helpers: {}",
            broken.join(", ")
        ));
    }
    for module in &outside {
        let kind = if solved { "solution" } else { "stub" };
        println!("{module} {kind}: uses the crate's private helpers; tested inside it");
    }
    modules.retain(|m| !outside.contains(m));
    let lib: String = modules.iter().map(|m| format!("pub mod {m};\n")).collect();
    write(&dir.join("src/lib.rs"), &lib)?;
    let tests = dir.join("tests");
    rustc
        .build_tests(&dir, None, &tests)
        .map_err(|errors| format!("the tests in {} do not compile:\n{errors}", dir.display()))?;
    let output = Command::new(&tests)
        .current_dir(&dir)
        .output()
        .map_err(|e| format!("running {}: {e}", tests.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !stdout.contains("test result") {
        return Err(format!(
            "the {name}' tests did not run:\n{stdout}{}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(modules
        .into_iter()
        .map(|module| {
            let of = |verdict: &str| {
                stdout
                    .lines()
                    .filter(|l| l.starts_with(&format!("test {module}::")) && l.ends_with(verdict))
                    .count()
            };
            let counts = (of(" ok"), of(" FAILED"));
            (module, counts.0, counts.1)
        })
        .collect())
}

/// The modules that rustc's errors (`stderr`, in its short format) are
/// in: those with a private-item error (E0603), and the others (broken).
fn modules_that_do_not_compile(stderr: &str) -> (Vec<String>, Vec<String>) {
    let module_of = |l: &str| {
        let (path, _) = l.strip_prefix("src/")?.split_once(".rs:")?;
        Some(path.rsplit('/').next()?.to_string()) // ch11_4, or checks/ch11_4
    };
    let errors: Vec<(String, bool)> = stderr
        .lines()
        .filter(|l| l.contains(": error"))
        .filter_map(|l| Some((module_of(l)?, l.contains("error[E0603]"))))
        .collect();
    let mut private: Vec<String> = errors.iter().map(|(m, _)| m.clone()).collect();
    private.sort();
    private.dedup();
    let (private, broken): (Vec<String>, Vec<String>) =
        private.into_iter().partition(|m| errors.iter().any(|(e, p)| e == m && *p));
    // A module with a private-item error may show others that follow from
    // it; a module with errors but none of that kind is broken.
    (private, broken)
}
