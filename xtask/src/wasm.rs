//! The interactive figures' WebAssembly: `wasm/` (the crate `attn-wasm`)
//! compiled for `wasm32-unknown-unknown` and embedded, base64-encoded, in
//! `book/widgets/attn-wasm.js`, which the widget pages load (a script, not
//! a fetch, so that a page opened from disk runs it too). Git ignores the
//! file; every build writes it afresh.
//!
//! The rustup toolchain here cannot add the wasm32 target, so this uses
//! Debian's packaged Rust (`rustc-web`, `cargo-web`, `rust-web-src`, and
//! `lld` for `wasm-ld`), which builds the standard library from its
//! sources (`-Zbuild-std`). Without those packages the book builds with no
//! widgets, and the pages say so in their place.

use std::path::Path;
use std::process::Command;

use base64::Engine;

use crate::{root, run, Step};

/// The script the widget pages load.
pub(crate) const WIDGETS_SCRIPT: &str = "book/widgets/attn-wasm.js";

/// Chapter 16's trained model, for its widget: the committed weights file,
/// embedded the same way, loaded only when the reader first asks it to write.
const WEIGHTS: &str = "book/data/ch16-weights.safetensors";
const WEIGHTS_SCRIPT: &str = "book/widgets/ch16-weights.js";

/// Chapter 20's Vision Transformer, for its widget, the same way.
const VIT_WEIGHTS: &str = "book/data/ch20-vit-weights.safetensors";
const VIT_WEIGHTS_SCRIPT: &str = "book/widgets/ch20-weights.js";

/// Debian's cargo and rustc, the standard library's sources and the linker.
const DEBIAN_CARGO: &str = "/usr/bin/cargo";
const DEBIAN_RUSTC: &str = "/usr/bin/rustc";
const STD_SOURCES: &str = "/usr/lib/rustlib/src/rust/library";
const WASM_LD: &str = "/usr/bin/wasm-ld";

/// The oldest `rustc` minor version that builds the crate (its
/// `rust-version`); Debian's older `rustc` package would not.
const MINOR: u32 = 89;

/// Whether Debian's `rustc` is `rustc-web`'s, recent enough for the crate.
fn recent_enough() -> Result<bool, String> {
    let version = crate::capture(Command::new(DEBIAN_RUSTC).arg("--version"))?;
    let minor = version
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.split('.').nth(1))
        .and_then(|m| m.parse::<u32>().ok());
    Ok(minor.is_some_and(|m| m >= MINOR))
}

/// How to get what the build needs.
pub(crate) const INSTALL: &str =
    "apt-get install rustc-web cargo-web rust-web-src lld (Debian 12), then build again";

/// Builds the widgets' WebAssembly and writes [`WIDGETS_SCRIPT`]; without
/// Debian's packages, removes a stale script and says how to get them (in
/// CI, which installs them, that is an error).
pub(crate) fn widgets() -> Step {
    let missing: Vec<&str> = [DEBIAN_CARGO, DEBIAN_RUSTC, STD_SOURCES, WASM_LD]
        .into_iter()
        .filter(|p| !Path::new(p).exists())
        .collect();
    let mut missing: Vec<String> = missing.into_iter().map(String::from).collect();
    if missing.is_empty() && !recent_enough()? {
        missing
            .push(format!("a rustc of at least 1.{MINOR} at {DEBIAN_RUSTC} (Debian's rustc-web)"));
    }
    if !missing.is_empty() {
        if std::env::var_os("CI").is_some() {
            return Err(format!("the widgets need {}: {INSTALL}", missing.join(", ")));
        }
        for stale in [WIDGETS_SCRIPT, WEIGHTS_SCRIPT, VIT_WEIGHTS_SCRIPT].map(|s| root().join(s)) {
            if stale.exists() {
                std::fs::remove_file(&stale).map_err(|e| format!("{}: {e}", stale.display()))?;
            }
        }
        eprintln!(
            "\n==> widgets SKIPPED (missing {}): the book builds with its static figures only; \
             for the interactive ones, {INSTALL}",
            missing.join(", ")
        );
        return Ok(());
    }
    let mut cargo = Command::new(DEBIAN_CARGO);
    for var in ["CARGO", "RUSTC", "RUSTDOC", "RUSTUP_TOOLCHAIN", "RUSTC_WRAPPER", "RUSTFLAGS"] {
        cargo.env_remove(var);
    }
    cargo
        .env("RUSTC", DEBIAN_RUSTC)
        .env("RUSTC_BOOTSTRAP", "1") // -Zbuild-std on a stable compiler
        .env("CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER", WASM_LD)
        // Small over fast (the page downloads it; the widgets' sums are
        // tiny), without link-time optimisation: it saved 6% of the size
        // for a tenth more build time.
        .env("CARGO_PROFILE_RELEASE_OPT_LEVEL", "s")
        .env("CARGO_PROFILE_RELEASE_STRIP", "true")
        .args([
            "build",
            "--locked",
            "--release",
            "--package",
            "attn-wasm",
            "--target",
            "wasm32-unknown-unknown",
            "-Zbuild-std=std,panic_abort",
            "--target-dir",
            "target/wasm",
        ]);
    run(&mut cargo)?;
    let wasm = "target/wasm/wasm32-unknown-unknown/release/attn_wasm.wasm";
    let what = "The book's crate compiled to WebAssembly (wasm/)";
    embed(wasm, WIDGETS_SCRIPT, "ATTN_WASM", what)?;
    embed(WEIGHTS, WEIGHTS_SCRIPT, "ATTN_CH15_WEIGHTS", "Chapter 16's trained model")?;
    embed(VIT_WEIGHTS, VIT_WEIGHTS_SCRIPT, "ATTN_CH18_WEIGHTS", "Chapter 20's Vision Transformer")
}

/// Writes `script`, which sets `window.NAME` to the base64 of the file
/// `from` (both relative to the repository).
fn embed(from: &str, script: &str, name: &str, what: &str) -> Step {
    let bytes = std::fs::read(root().join(from)).map_err(|e| format!("{from}: {e}"))?;
    let encoded = base64::engine::general_purpose::STANDARD.encode(&bytes);
    let text = format!(
        "// {what}, {from} ({} bytes), written by `cargo xtask`\n\
         // for theme/widgets.js. Not committed: every build writes it.\n\
         window.{name} = \"{encoded}\";\n",
        bytes.len()
    );
    let path = root().join(script);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::write(&path, text).map_err(|e| format!("{script}: {e}"))?;
    println!("widgets: {from}, {} bytes, in {script}", bytes.len());
    Ok(())
}
