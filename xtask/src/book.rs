//! The book itself: its pinned tools, the figures (drawn by the chapter
//! examples, and checked unchanged), `mdbook test`, `mdbook build` and the
//! browser check.

use std::path::Path;
use std::process::Command;

use crate::{capture, cargo, root, run, Step};

/// The book tools, pinned: (crate, version). Installed with `cargo install --locked`.
pub(crate) const BOOK_TOOLS: [(&str, &str); 3] = [
    ("mdbook", "0.5.4"),
    ("mdbook-katex", "0.10.0"),
    ("mdbook-linkcheck2", "0.13.0"),
];

/// A dedicated target dir for `mdbook test -L`: wiped before every build, so it
/// holds exactly one build of each crate (otherwise rustc finds several
/// candidates for `extern crate attn` and fails with E0464).
pub(crate) const MDBOOK_DEPS: &str = "target/mdbook-deps";

/// Where the browser check's script is installed with its one dependency.
pub(crate) const BROWSER_CHECK: &str = "target/browser-check";

/// Every built page in headless Chromium at desktop and phone width
/// (`tools/browser-check/check.mjs`): no request leaves 127.0.0.1, every
/// figure loads, math renders and fits, no console error. Needs Debian's
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
        .env("CHROMIUM", &chromium))
}

/// `mdbook test` against a fresh build of the library alone.
pub(crate) fn mdbook_test() -> Step {
    let deps = root().join(MDBOOK_DEPS);
    if deps.exists() {
        std::fs::remove_dir_all(&deps).map_err(|e| format!("wiping {MDBOOK_DEPS}: {e}"))?;
    }
    run(cargo().args(["build", "--lib", "--locked", "--target-dir", MDBOOK_DEPS]))?;
    run(Command::new("mdbook").args(["test", "-L", &format!("{MDBOOK_DEPS}/debug/deps")]))
}

/// `mdbook build` with KaTeX and the link checker; any ERROR line fails, and
/// so does HTML that mdBook finds unbalanced: KaTeX's MathML carries the TeX
/// source, in which `)_` or `}_` can open Markdown emphasis and cut a
/// formula's tags apart (write `W_{Q,ij}`, not `(W_Q)_{ij}`).
pub(crate) fn mdbook_build() -> Step {
    eprintln!("\n==> mdbook build");
    let output = capture(Command::new("mdbook").arg("build"))?;
    eprint!("{output}");
    let broken = |l: &&str| {
        l.contains("ERROR") || l.contains("unclosed HTML tag") || l.contains("unexpected HTML")
    };
    let errors: Vec<&str> = output.lines().filter(broken).collect();
    if !errors.is_empty() {
        return Err(format!(
            "mdbook build reported errors:\n{}",
            errors.join("\n")
        ));
    }
    Ok(())
}

/// Runs every chapter example, each of which writes its figures.
pub(crate) fn figures() -> Step {
    for example in examples()? {
        run(cargo().args(["run", "--release", "--locked", "--example", &example]))?;
    }
    Ok(())
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
/// and `cargo xtask model --data`.
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
    names.retain(|name| !name.ends_with("_train") && !name.ends_with("_data"));
    names.sort();
    Ok(names)
}

/// Installs each pinned book tool that `cargo install --list` does not show.
pub(crate) fn ensure_book_tools() -> Step {
    let installed = capture(cargo().args(["install", "--list"]))?;
    for (name, version) in BOOK_TOOLS {
        if installed
            .lines()
            .any(|l| l.starts_with(&format!("{name} v{version}:")))
        {
            continue;
        }
        eprintln!("installing {name} {version} (once; a few minutes)");
        run(cargo().args(["install", "--locked", name, "--version", version]))?;
    }
    Ok(())
}
