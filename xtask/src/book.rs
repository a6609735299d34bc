//! The book itself: its pinned tools, the figures (drawn by the chapter
//! examples, and checked unchanged), `mdbook test`, `mdbook build` and the
//! browser check.

use std::path::Path;
use std::process::Command;

use crate::{artifacts, capture, cargo, executables, root, run, side_by_side, Step};

/// The book tools, pinned: (crate, version). Installed with `cargo install --locked`.
/// Links are checked by the browser check, which loads every page.
pub(crate) const BOOK_TOOLS: [(&str, &str); 2] = [("mdbook", "0.5.4"), ("mdbook-katex", "0.10.0")];

/// The directory `mdbook test -L` reads: links to exactly one build of the
/// library and of each of its dependencies (in `target/debug/deps`, which
/// holds several, rustc finds several candidates for `extern crate attn`
/// and fails with E0464).
pub(crate) const MDBOOK_DEPS: &str = "target/mdbook-deps";

/// `mdbook`, or one of its preprocessors, as `cargo install` put it: in
/// `$CARGO_HOME/bin`, which need not be on the `PATH`, or where CI built
/// them ([`CI_TOOLS`]) when the cargo home lacks them. mdBook finds its
/// preprocessors on the `PATH`, so that directory is put first on it.
pub(crate) fn book_tool(name: &str) -> Command {
    let home = cargo_home().join("bin");
    let ci = root().join(CI_TOOLS).join("bin");
    let bin = if !home.join(name).exists() && ci.join(name).exists() { ci } else { home };
    let mut cmd = Command::new(bin.join(name));
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs = std::iter::once(bin).chain(std::env::split_paths(&path));
    if let Ok(joined) = std::env::join_paths(dirs) {
        cmd.env("PATH", joined);
    }
    cmd
}

/// Where CI installs the book tools when the cargo home lacks them: mdBook
/// without its server and file watcher (`--no-default-features --features
/// search`), which CI never runs, saving the compilation of about 80 crates
/// (tokio, axum, notify). Under `target/`, so that a reader's `cargo xtask
/// serve` never finds this build: it installs the full one in the cargo
/// home.
pub(crate) const CI_TOOLS: &str = "target/book-tools";

/// `$CARGO_HOME`, or `~/.cargo` where it is not set.
fn cargo_home() -> std::path::PathBuf {
    match std::env::var_os("CARGO_HOME") {
        Some(home) => home.into(),
        None => {
            std::path::PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cargo")
        }
    }
}

/// Where the browser check's script is installed with its one dependency.
pub(crate) const BROWSER_CHECK: &str = "target/browser-check";

/// Every built page in headless Chromium at desktop and phone width
/// (`tools/browser-check/check.mjs`): no request leaves 127.0.0.1, every
/// figure loads, math renders and fits, no console error; every quiz
/// marks a wrong and a right answer; the student edition has no answers
/// and otherwise the same text. Needs Debian's
/// Chromium and Node.js; without them a local run says how to get them and
/// skips this step, CI fails.
pub(crate) fn browser_check() -> Step {
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    let node = Command::new("node").arg("--version").output().is_ok();
    if !Path::new(&chromium).exists() || !node {
        let how = "install Chromium and Node.js (Debian: `apt-get install chromium nodejs npm`) \
                   and run `cargo xtask test` again";
        if std::env::var_os("CI").is_some() {
            return Err(format!(
                "the browser check needs Chromium at {chromium} and Node.js: {how}"
            ));
        }
        eprintln!("\n==> browser check SKIPPED (no Chromium at {chromium} or no Node.js): {how}");
        return Ok(());
    }
    let dir = root().join(BROWSER_CHECK);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let source = root().join("tools/browser-check");
    let lock_changed = std::fs::read(source.join("package-lock.json")).ok()
        != std::fs::read(dir.join("package-lock.json")).ok();
    for file in ["package.json", "package-lock.json", "check.mjs"] {
        std::fs::copy(source.join(file), dir.join(file))
            .map_err(|e| format!("copying {file} to {BROWSER_CHECK}: {e}"))?;
    }
    if lock_changed || !dir.join("node_modules/playwright-core").exists() {
        run(Command::new("npm").args([
            "ci",
            "--no-audit",
            "--no-fund",
            "--prefix",
            BROWSER_CHECK,
        ]))?;
    }
    run(Command::new("node")
        .arg(dir.join("check.mjs"))
        .arg(root().join("target/book/html"))
        .arg(root().join(crate::student::STUDENT_DIR))
        .env("CHROMIUM", &chromium)
        .env("WIDGETS_GOLDEN", root().join("wasm/golden/widgets.json")))
}

/// `mdbook test` against the library the tests built ([`library_dir`]).
pub(crate) fn mdbook_test() -> Step {
    library_dir()?;
    run(book_tool("mdbook").args(["test", "-L", MDBOOK_DEPS]))
}

/// A fresh [`MDBOOK_DEPS`] holding one build of the library and of each of
/// its dependencies: the build a chapter example uses, which is also the
/// tests' and the figures' (`one_build` in main.rs), whose files cargo
/// names ([`artifacts`]; after any of those builds nothing is compiled
/// but one example). `mdbook test` and the exercises' checks compile
/// against it.
pub(crate) fn library_dir() -> Result<std::path::PathBuf, String> {
    let deps = root().join(MDBOOK_DEPS);
    if deps.exists() {
        std::fs::remove_dir_all(&deps).map_err(|e| format!("wiping {MDBOOK_DEPS}: {e}"))?;
    }
    std::fs::create_dir_all(&deps).map_err(|e| format!("creating {MDBOOK_DEPS}: {e}"))?;
    // The library as the examples and the integration tests link it, with
    // the features the dev-dependencies unify.
    let example = examples()?.into_iter().next().ok_or("no examples")?;
    let mut build = cargo();
    build.args(["build", "--locked", "--example", &example]);
    let mut linked = 0;
    for message in artifacts(&mut build)? {
        for file in message["filenames"].as_array().into_iter().flatten() {
            let file = Path::new(file.as_str().unwrap_or_default());
            // The rlibs (and proc macros): an .rmeta beside them would be a
            // second candidate, one rustc cannot link.
            let is_library =
                ["rlib", "so"].iter().any(|ext| file.extension().is_some_and(|e| e == *ext));
            let Some(name) = file.file_name().filter(|_| is_library) else {
                continue;
            };
            let link = deps.join(name);
            std::fs::hard_link(file, &link)
                .or_else(|_| std::fs::copy(file, &link).map(|_| ()))
                .map_err(|e| format!("linking {} into {MDBOOK_DEPS}: {e}", file.display()))?;
            linked += 1;
        }
    }
    if linked == 0 {
        return Err(format!("cargo named no library files for {MDBOOK_DEPS}"));
    }
    Ok(deps)
}

/// `mdbook build` with KaTeX (links are checked by [`browser_check`]); any
/// ERROR line fails, and so does HTML that mdBook finds unbalanced: KaTeX's MathML carries the TeX
/// source, in which `)_` or `}_` can open Markdown emphasis and cut a
/// formula's tags apart (write `W_{Q,ij}`, not `(W_Q)_{ij}`).
/// With `student`, the student edition ([`crate::student`]).
pub(crate) fn mdbook_build(student: bool) -> Step {
    let mut mdbook = book_tool("mdbook");
    mdbook.arg("build");
    if student {
        crate::student::student_edition(&mut mdbook)?;
    }
    eprintln!("\n==> {}", crate::describe(&mdbook));
    let output = capture(&mut mdbook)?;
    eprint!("{output}");
    let broken = |l: &&str| {
        l.contains("ERROR") || l.contains("unclosed HTML tag") || l.contains("unexpected HTML")
    };
    let errors: Vec<&str> = output.lines().filter(broken).collect();
    if !errors.is_empty() {
        return Err(format!("mdbook build reported errors:\n{}", errors.join("\n")));
    }
    if student {
        let dir = root().join(crate::student::STUDENT_DIR);
        let dropped = crate::student::drop_answer_files(&dir)?;
        println!("student edition: {dropped} figure and data files only answers used, left out");
    }
    Ok(())
}

/// Runs every chapter example, each of which writes its figures. They run
/// in the profile the tests use (the dependencies optimised, the crate a
/// little: see `Cargo.toml`), so that `cargo xtask test` compiles them
/// once, and they draw the same bytes as an optimised build would: Rust
/// never reorders or fuses floating-point operations on its own.
pub(crate) fn figures() -> Step {
    let examples = examples()?;
    // Built in one command first, so that cargo compiles them side by side
    // on every core; `cargo run --example NAME` one at a time would build
    // them one after another. Built as a reader's `cargo run --example`
    // builds them (the root package alone), which resolves features as the
    // tests' build does (`one_build` in main.rs checks it): after `cargo
    // xtask serve`, a chapter's run command compiles nothing but the
    // example.
    let mut build = cargo();
    build.args(["build", "--locked"]);
    for example in &examples {
        build.args(["--example", example]);
    }
    let built = executables(&mut build)?;
    let mut paths = std::collections::BTreeMap::new();
    for b in built.into_iter().filter(|b| !b.test) {
        paths.insert(b.name, b.executable);
    }
    if let Some(missing) = examples.iter().find(|e| !paths.contains_key(*e)) {
        return Err(format!("cargo named no executable for the example {missing}"));
    }
    side_by_side(&examples, "figures", |example| {
        let mut cmd = Command::new(&paths[example]);
        // Into book/figures: a reader's own runs draw into target/figures.
        cmd.current_dir(root()).env("ATTN_BOOK_FIGURES", "1");
        cmd
    })
}

/// Fails if regenerating the figures changed anything git knows about.
pub(crate) fn figures_unchanged() -> Step {
    let status = capture(Command::new("git").args(["status", "--porcelain", "book/figures"]))?;
    if !status.trim().is_empty() {
        let diff = capture(Command::new("git").args(["diff", "--stat", "book/figures"]))?;
        return Err(format!(
            "regenerated figures differ from the committed ones:\n{status}{diff}\n\
             Run `cargo xtask figures` and commit book/figures, or make the example deterministic."
        ));
    }
    println!("figures: regenerated, identical to the committed ones");
    Ok(())
}

/// The example names: every `examples/NAME.rs` (subfolders are shared modules).
/// The figure examples: every `examples/*.rs` except those ending in
/// `_train` or `_data`, which write `book/data/` (slowly, or from the
/// pretrained model) rather than figures, and are run by `cargo xtask train`
/// and `cargo xtask model --data`, and those that need a feature.
pub(crate) fn examples() -> Result<Vec<String>, String> {
    let dir = root().join("examples");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .map_err(|e| format!("reading {}: {e}", dir.display()))?
        .filter_map(|entry| {
            let path = entry.ok()?.path();
            let is_rs = path.extension()? == "rs";
            is_rs.then(|| path.file_stem()?.to_str().map(String::from))?
        })
        .collect();
    let featured = needs_features()?;
    names.retain(|name| {
        !name.ends_with("_train") && !name.ends_with("_data") && !featured.contains(name)
    });
    names.sort();
    Ok(names)
}

/// The examples that `Cargo.toml` builds only with a feature (chapter
/// 21's needs `gpu`): its `[[example]]` tables with `required-features`.
fn needs_features() -> Result<Vec<String>, String> {
    let path = root().join("Cargo.toml");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(text
        .split("[[example]]")
        .skip(1)
        .filter_map(|table| {
            let table = table.split("\n[").next()?; // up to the next table
            table.contains("required-features").then_some(())?;
            let name = table.lines().find_map(|l| l.trim().strip_prefix("name = "))?;
            Some(name.trim_matches('"').to_string())
        })
        .collect())
}

/// Installs each pinned book tool that `cargo install --list` does not show:
/// in the cargo home, or, for `lean` (the test command under CI) when the
/// cargo home lacks it, mdBook without its server in [`CI_TOOLS`].
pub(crate) fn ensure_book_tools(lean: bool) -> Step {
    let listed = |root: Option<&str>| -> Result<String, String> {
        let mut list = cargo();
        list.args(["install", "--list"]);
        if let Some(root) = root {
            list.args(["--root", root]);
        }
        capture(&mut list)
    };
    let has = |list: &str, name: &str, version: &str| {
        list.lines().any(|l| l.starts_with(&format!("{name} v{version}:")))
    };
    let home = listed(None)?;
    let in_home = BOOK_TOOLS.iter().all(|(name, version)| has(&home, name, version));
    let ci = root().join(CI_TOOLS);
    let (target, installed) = if lean && !in_home {
        (Some(ci.to_string_lossy().into_owned()), listed(Some(&ci.to_string_lossy()))?)
    } else {
        (None, home)
    };
    for (name, version) in BOOK_TOOLS {
        if has(&installed, name, version) {
            continue;
        }
        eprintln!("installing {name} {version} (once; a few minutes)");
        let mut install = cargo();
        install.args(["install", "--locked", name, "--version", version]);
        if let Some(root) = &target {
            install.args(["--root", root]);
            if name == "mdbook" {
                install.args(["--no-default-features", "--features", "search"]);
            }
        }
        run(&mut install)?;
    }
    Ok(())
}
