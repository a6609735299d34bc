//! The book's two commands (README):
//!
//! - `cargo xtask serve`: install the pinned book tools if missing, draw every
//!   figure, build the book and serve it on http://localhost:3000.
//! - `cargo xtask test`: every check CI runs; stops at the first failure.
//!
//! and helpers: `cargo xtask figures`, which only redraws the figures;
//! `cargo xtask measure`, which reruns the benchmarks of chapters 8 and 9
//! (several minutes), writes their results to `book/data/` and redraws the
//! figures; `cargo xtask measure fast`, the appendix's run (the crate with
//! and without OpenBLAS, NumPy and PyTorch, and chapter 16's model trained
//! with and without the fast kernel); `cargo xtask measure lm`,
//! chapter 16's training and generation speeds beside PyTorch's; `cargo
//! xtask measure serving`, chapter 19's paged cache, batching and
//! speculative decoding; `cargo
//! xtask train`, chapters 12 and 13's training runs (`train lm`: chapter
//! 15's; `train control`: chapter 16's positive control for induction
//! heads; `train kv`: chapter 17's; `train long`: chapter 18's); `cargo xtask model`, which fetches chapter 15's pretrained model
//! into `target/models/` (with `--data`, it also rederives chapter 15's
//! data and measures its speed against PyTorch's); `cargo xtask corpus`,
//! which fetches chapter 16's corpus into `target/corpus/`; `cargo xtask
//! digits`, which fetches the handwritten digits into `target/digits/`; and `cargo
//! xtask fuzz [SECONDS]`, the file readers under libFuzzer (nightly,
//! cargo-fuzz).
//!
//! Each command that writes `book/data/` is one *measurement run*: every
//! file it writes starts with the same header line, `# date: …; cpu: …;
//! run: COMMAND TIME; …; statistic: …`, and the book compares figures only
//! within one run and one statistic.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

mod book;
mod commands;
mod corpus;
mod digits;
mod download;
mod exercise;
mod fuzz;
mod model;
mod runs;
mod student;
mod wasm;

use book::{
    book_tool, browser_check, ensure_book_tools, figures, figures_unchanged, mdbook_build,
    mdbook_test,
};
use corpus::corpus;
use model::{model, model_data};
use runs::{
    measure, measure_all, measure_fast, measure_kv, measure_lm, measure_lm_cache, measure_serving,
    train,
};

pub(crate) use commands::{artifacts, capture, cargo, describe, executables, run, side_by_side};

pub(crate) type Step = Result<(), String>;

fn main() -> ExitCode {
    let task = std::env::args().nth(1).unwrap_or_default();
    // Run by mdBook, which reads stdout: nothing else is printed.
    if task == "student-preprocessor" {
        let args: Vec<String> = std::env::args().skip(2).collect();
        return match student::preprocessor(&args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("student edition: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let start = Instant::now();
    let result = match task.as_str() {
        "serve" => student_flag().and_then(serve),
        "build" => student_flag().and_then(build),
        "test" => test(),
        "figures" => figures(),
        "widgets" => wasm::widgets(),
        "measure" => match std::env::args().nth(2).as_deref() {
            Some("fast") => corpus().and_then(|()| measure_fast()),
            Some("lm") => corpus().and_then(|()| measure_lm()),
            Some("lm-cache") => measure_lm_cache(),
            Some("kv") => measure_kv(),
            Some("serving") => measure_serving(),
            Some("gpu") => runs::measure_gpu(),
            Some("all") => measure_all(),
            None => measure(),
            Some(other) => Err(format!(
                "unknown option {other}: all, fast, lm, lm-cache, kv, serving, gpu or nothing"
            )),
        },
        "model" => match std::env::args().nth(2).as_deref() {
            None => model(),
            Some("--data") => model().and_then(|()| model_data()),
            Some(other) => Err(format!("unknown option {other}: --data or nothing")),
        },
        "corpus" => corpus(),
        "digits" => digits::digits(),
        "exercise" => exercise::exercise(&std::env::args().skip(2).collect::<Vec<_>>()),
        "fuzz" => match std::env::args().nth(2).map(|s| s.parse::<u64>()) {
            None => fuzz::fuzz(60),
            Some(Ok(seconds)) => fuzz::fuzz(seconds),
            Some(Err(e)) => Err(format!("fuzz SECONDS: {e}")),
        },
        "train" => match std::env::args().nth(2).as_deref() {
            None => train(&["ch12", "ch13", "ch14-lengths", "ch14-summary"]),
            Some("ch14") => train(&["ch14-lengths", "ch14-summary"]),
            Some(chapter @ ("ch12" | "ch13" | "ch14-lengths" | "ch14-summary")) => {
                train(&[chapter])
            }
            Some(runs @ ("lm" | "control" | "kv" | "long")) => {
                corpus().and_then(|()| train(&[runs]))
            }
            Some("vision") => digits::digits().and_then(|()| train(&["vision"])),
            Some(other) => Err(format!(
                "no training runs for {other}: ch12, ch13, ch14 (both of its tasks), ch14-lengths, \
                 ch14-summary, lm, control, kv, long or vision"
            )),
        },
        _ => {
            eprintln!(
                "usage: cargo xtask serve [--student] | build [--student] | test | figures | measure [all | fast | lm | kv | serving] \
                 | train [ch12 | ch13 | ch14 | ch14-lengths | ch14-summary | lm | control | kv | long | vision] | exercise [list | start chNN-K | check [chNN-K] | verify] | model [--data] | corpus | digits | fuzz [SECONDS]"
            );
            return ExitCode::from(2);
        }
    };
    let secs = start.elapsed().as_secs_f64();
    match result {
        Ok(()) => {
            eprintln!("\nxtask {task}: ok ({secs:.0} s)");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("\nxtask {task}: FAILED ({secs:.0} s): {e}");
            ExitCode::FAILURE
        }
    }
}

/// `--student` after `serve` or `build`: the student edition, without
/// solutions and answers.
fn student_flag() -> Result<bool, String> {
    match std::env::args().nth(2).as_deref() {
        None => Ok(false),
        Some("--student") => Ok(true),
        Some(other) => Err(format!("unknown option {other}: --student or nothing")),
    }
}

/// The reader's command (with `student`, a teacher's: the edition without
/// answers).
fn serve(student: bool) -> Step {
    ensure_book_tools(false)?;
    figures()?;
    wasm::widgets()?;
    let mut mdbook = book_tool("mdbook");
    mdbook.args(["serve", "--hostname", "127.0.0.1", "--port", "3000"]);
    if student {
        student::student_edition(&mut mdbook)?;
    }
    eprintln!("\n==> the book at http://127.0.0.1:3000 (Ctrl-C stops the server)");
    replace_process(&mut mdbook)
}

/// Runs `cmd` in place of this process, so that whatever stops `cargo
/// xtask serve` (Ctrl-C, or a signal to its process: `cargo run` itself
/// hands its process to xtask) stops the server too, and no `mdbook` is
/// left serving. Returns only if it could not start.
#[cfg(unix)]
fn replace_process(cmd: &mut Command) -> Step {
    use std::os::unix::process::CommandExt;
    let error = cmd.current_dir(root()).exec();
    Err(format!("could not start `{}`: {error}", describe(cmd)))
}

/// Elsewhere, the server runs as a child, which Ctrl-C stops with it.
#[cfg(not(unix))]
fn replace_process(cmd: &mut Command) -> Step {
    run(cmd)
}

/// `serve` without the server: the book in `target/book/html`, or with
/// `student` the student edition in [`student::STUDENT_DIR`].
fn build(student: bool) -> Step {
    ensure_book_tools(false)?;
    figures()?;
    wasm::widgets()?;
    mdbook_build(student)?;
    let dir = if student { student::STUDENT_DIR } else { "target/book/html" };
    eprintln!("the book is in {dir}/index.html");
    Ok(())
}

/// The contributor's and CI's command. Each step's time is printed at the
/// end, so that a slow step shows.
fn test() -> Step {
    let mut times = Vec::new();
    let result = test_steps(&mut times);
    eprintln!("\nxtask test, seconds a step:");
    for (step, seconds) in &times {
        eprintln!("{seconds:7.1}  {step}");
    }
    result
}

fn test_steps(times: &mut Vec<(&'static str, f64)>) -> Step {
    let mut step = |name: &'static str, f: &dyn Fn() -> Step| {
        let start = Instant::now();
        let result = f();
        times.push((name, start.elapsed().as_secs_f64()));
        result
    };
    step("fmt", &|| run(cargo().args(["fmt", "--all", "--check"])))?;
    step("clippy", &|| {
        run(cargo().args([
            "clippy",
            "--workspace",
            "--all-targets",
            "--locked",
            "--",
            "-D",
            "warnings",
        ]))
    })?;
    step("doc", &|| {
        run(cargo()
            .args(["doc", "--no-deps", "--workspace", "--locked"])
            .env("RUSTDOCFLAGS", "-D warnings"))
    })?;
    // Chapter 15's tests read the pretrained model; the language model's,
    // its corpus; the digits' reader's, the digits.
    step("pretrained model", &model)?;
    step("corpus", &corpus)?;
    step("digits", &digits::digits)?;
    // Every test target, then the doctests (the chapters' snippets among
    // them); the examples are built once, by the figure step, which runs them.
    step("test", &|| {
        let binaries = test_binaries()?;
        let names: Vec<String> = binaries.keys().cloned().collect();
        side_by_side(&names, "tests", |name| {
            let (executable, dir) = &binaries[name];
            let mut cmd = Command::new(executable);
            // What `cargo test` gives a test binary.
            cmd.current_dir(dir).env("CARGO_MANIFEST_DIR", dir);
            cmd
        })?;
        run(cargo().args(["test", "--locked", "--doc"]).args(BOOK_PACKAGES))
    })?;
    step("gpu", &gpu)?;
    step("one build", &one_build)?;
    // Every code exercise's stub compiles and fails the book's tests; the
    // solutions that need nothing private pass them outside the crate.
    step("exercises", &exercise::verify)?;
    step("book tools", &|| ensure_book_tools(std::env::var_os("CI").is_some()))?;
    step("mdbook test", &mdbook_test)?;
    step("figures", &|| figures().and_then(|()| figures_unchanged()))?;
    // Built on its own: beside the exercises or the figures it slowed them
    // by as much as it took (both keep the two cores busy).
    step("widgets", &wasm::widgets)?;
    step("mdbook build", &|| mdbook_build(false))?;
    step("student edition", &|| mdbook_build(true))?;
    step("browser check", &browser_check)
}

/// The GPU kernels (the `gpu` feature), linted and tested against the CPU
/// on the adapter `wgpu` finds: under CI a missing adapter fails
/// (`ATTN_GPU_REQUIRED=1`), elsewhere the tests say why they skip.
fn gpu() -> Step {
    let required = if std::env::var_os("CI").is_some() { "1" } else { "0" };
    let runtime = std::env::var("XDG_RUNTIME_DIR").unwrap_or_else(|_| "/tmp".into());
    let crate_ = ["-p", "attn", "--features", "gpu"];
    let targets = [
        "--test",
        "gpu",
        "--test",
        "bad_input",
        "--example",
        "ch21_gpu",
        "--example",
        "ch21_gpu_data",
    ];
    run(cargo()
        .args(["clippy", "--locked", "--lib"])
        .args(crate_)
        .args(targets)
        .args(["--", "-D", "warnings"]))?;
    for (target, filter) in [("gpu", ""), ("bad_input", "gpu::")] {
        run(cargo()
            .args(["test", "--locked"])
            .args(crate_)
            .args(["--test", target, "--", filter])
            .env("ATTN_GPU_REQUIRED", required)
            .env("XDG_RUNTIME_DIR", &runtime))?;
    }
    Ok(())
}

/// Builds every test target of the workspace (as `cargo test --lib --bins
/// --tests` would) and returns each binary, named by its source file, with
/// its package's directory. `cargo test` runs them one after another;
/// [`side_by_side`] runs them on every core, since the slowest few are
/// single-threaded.
fn test_binaries() -> Result<BTreeMap<String, (PathBuf, PathBuf)>, String> {
    // xtask's own dependencies (tar, zip) would turn on features of the
    // book's (`memchr`, `bitflags`): built apart, the book's crates resolve
    // exactly as a reader's `cargo run --example` does ([`one_build`]).
    let test = ["test", "--locked", "--lib", "--bins", "--tests", "--no-run"];
    let mut book = cargo();
    book.args(test).args(BOOK_PACKAGES);
    let mut xtask = cargo();
    xtask.args(["test", "--locked", "--bins", "--no-run", "--package", "xtask"]);
    let mut binaries = BTreeMap::new();
    let built = executables(&mut book)?.into_iter().chain(executables(&mut xtask)?);
    for built in built.filter(|b| b.test) {
        let name = built.source.clone();
        if binaries.insert(name, (built.executable, built.dir)).is_some() {
            return Err(format!("two test binaries from {}", built.source));
        }
    }
    match binaries.is_empty() {
        true => Err("`cargo test --no-run` named no test binaries".into()),
        false => Ok(binaries),
    }
}

/// The workspace's packages apart from xtask: the book's crates, which
/// cargo builds once for the tests, the figures and the reader's examples.
pub(crate) const BOOK_PACKAGES: [&str; 3] = ["--workspace", "--exclude", "xtask"];

/// Fails if a chapter's run command, `cargo run --example NAME`, would
/// compile anything but the example itself after the tests' build: the
/// features cargo resolves for the root package alone must be those it
/// resolved for the book's packages together, or a reader waits for a
/// second build of the crate and its dependencies.
fn one_build() -> Step {
    let example = book::examples()?.into_iter().next().ok_or("no examples")?;
    let mut build = cargo();
    build.args(["build", "--locked", "--example", &example]);
    let rebuilt: Vec<String> = artifacts(&mut build)?
        .iter()
        .filter(|m| m["fresh"] == false && m["target"]["name"] != example.as_str())
        .map(|m| m["package_id"].as_str().unwrap_or("?").to_string())
        .collect();
    match rebuilt.is_empty() {
        true => Ok(()),
        false => Err(format!(
            "`cargo run --example {example}` compiled again what the tests had built: {}.\n\
             Compare `cargo tree -e features` for `-p attn` and for `{}`, and give the root \
             package the dependency features the other packages turn on (see libc in \
             Cargo.toml).",
            rebuilt.join(", "),
            BOOK_PACKAGES.join(" ")
        )),
    }
}

pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}
