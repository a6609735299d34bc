//! Every public function that takes arguments gets a bad-input test: it is
//! called here (`tests/bad_input/`) or by the property tests
//! (`checks/tests/properties/`). The functions found without one when
//! this test was written are listed in `not_yet_covered.txt`, and the list
//! may only shrink: a new public function without a bad-input test fails,
//! and so does a listed one that has gained a test (strike it off).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use regex::Regex;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The source files of the crate's public top-level modules (and of every
/// module under them: a private module's types and functions reach the
/// reader through `pub use`), as `(module path, text)`, each without its
/// `#[cfg(test)]` part and without test files.
fn public_modules() -> Vec<(String, String)> {
    let src = root().join("src");
    let lib = read(&src.join("lib.rs"));
    let declared = Regex::new(r"(?m)^pub mod (\w+);").unwrap();
    let mut out = Vec::new();
    for top in declared.captures_iter(&lib).map(|c| c[1].to_string()) {
        let mut files = vec![src.join(format!("{top}.rs"))];
        let mut dirs = vec![src.join(&top)];
        while let Some(dir) = dirs.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            for entry in entries {
                let path = entry.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                if path.is_dir() && name != "tests" {
                    dirs.push(path);
                } else if name.ends_with(".rs") && name != "tests.rs" {
                    files.push(path);
                }
            }
        }
        for file in files.into_iter().filter(|f| f.exists()) {
            let module = file.strip_prefix(&src).unwrap().with_extension("");
            let module = module.to_string_lossy().replace('/', "::").replace("::mod", "");
            let text = read(&file);
            let code = text.split("#[cfg(test)]").next().unwrap_or("").to_string();
            out.push((module, code));
        }
    }
    out
}

/// Public functions that take an argument other than `self`, as
/// `module::name` (methods under their module, by name).
fn public_functions() -> BTreeSet<String> {
    let function =
        Regex::new(r"(?m)^\s*pub (?:const )?fn (\w+)\s*(?:<[^(]*>)?\s*\(([^)]*)\)").unwrap();
    let receiver = Regex::new(r"^&?(?:'\w+\s+)?(?:mut\s+)?self$").unwrap();
    let mut out = BTreeSet::new();
    for (module, code) in public_modules() {
        for c in function.captures_iter(&code) {
            let arguments = c[2]
                .split(',')
                .map(str::trim)
                .filter(|a| !a.is_empty() && !receiver.is_match(a))
                .count();
            if arguments > 0 {
                out.insert(format!("{module}::{}", &c[1]));
            }
        }
    }
    out
}

/// The names the bad-input and property tests call.
fn called_by_bad_input_tests() -> BTreeSet<String> {
    let mut files = Vec::new();
    for dir in ["tests/bad_input", "checks/tests/properties"] {
        for entry in std::fs::read_dir(root().join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "rs") && !path.ends_with("public_api.rs") {
                files.push(path);
            }
        }
    }
    let call = Regex::new(r"\b([a-z_][a-z0-9_]*)\s*(?:::<[^>]*>)?\(").unwrap();
    let mut names = BTreeSet::new();
    for file in files {
        for c in call.captures_iter(&read(&file)) {
            names.insert(c[1].to_string());
        }
    }
    names
}

#[test]
fn every_public_function_has_a_bad_input_test_or_is_listed_until_it_has() {
    let functions = public_functions();
    assert!(functions.len() > 200, "only {} public functions found", functions.len());
    let called = called_by_bad_input_tests();
    let uncovered: BTreeSet<&String> =
        functions.iter().filter(|f| !called.contains(f.rsplit("::").next().unwrap_or(f))).collect();
    let list = read(&root().join("tests/bad_input/not_yet_covered.txt"));
    let listed: BTreeSet<&str> =
        list.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).collect();
    let new: Vec<&&String> = uncovered.iter().filter(|f| !listed.contains(f.as_str())).collect();
    let done: Vec<&&str> =
        listed.iter().filter(|l| !uncovered.iter().any(|f| f.as_str() == **l)).collect();
    assert!(
        new.is_empty(),
        "public functions without a bad-input test (call each with bad arguments in \
         tests/bad_input/ and check the error):\n{}",
        new.iter().map(|f| f.as_str()).collect::<Vec<_>>().join("\n")
    );
    assert!(
        done.is_empty(),
        "listed in tests/bad_input/not_yet_covered.txt but tested now, or gone: strike them \
         off:\n{}",
        done.iter().map(|f| **f).collect::<Vec<_>>().join("\n")
    );
}
