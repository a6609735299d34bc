//! The commands that write `book/data/`, each one measurement run:
//! `cargo xtask train` and `cargo xtask measure [fast]`.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::book::figures;
use crate::model::reference_python;
use crate::{capture, cargo, root, run, Step};

/// One measurement run of `command`: the header that every file it writes
/// starts with (the day, the processor, the command and the minute it
/// started, the compiler), passed to its programs in `ATTN_RUN_HEADER`.
pub(crate) fn start_run(command: &str) -> Result<String, String> {
    let (date, cpu, rustc) = provenance()?;
    let time = capture(Command::new("date").args(["-u", "+%Y-%m-%dT%H:%MZ"]))?;
    Ok(format!("date: {date}; cpu: {cpu}; run: {command} {}; rustc: {rustc}", time.trim()))
}

/// Builds and runs an example of `run` with the variables `env`; it writes
/// its data files with the run's header.
pub(crate) fn run_example(example: &str, run: &str, env: &[(&str, &str)]) -> Step {
    self::run(cargo().args(["build", "--release", "--locked", "--example", example]))?;
    self::run(
        Command::new(root().join(format!("target/release/examples/{example}")))
            .envs(env.iter().copied())
            .env("ATTN_RUN_HEADER", run),
    )
}

/// The chapters' training runs (`examples/CHAPTER_*_train.rs`): chapter
/// 12's two models (under a minute each), chapter 13's translators
/// (`ch13`, about four minutes), chapter 14's length experiment
/// (`ch14-lengths`: twelve models, about five minutes) and summariser
/// (`ch14-summary`: three seeds, about four minutes), chapter 16's language model (`lm`: three
/// seeds with learned positions and one with rotary positions, about four
/// minutes each, after `cargo xtask corpus`) and chapter 17's variants of
/// it (`kv`: three ways of sharing keys and latent attention, three seeds
/// each, two runs at a time, and the multi-head models converted to
/// grouped-query ones and trained 100 steps more, then the long texts read
/// afresh, `ch17-fresh-read.tsv`), chapter 18's models read past their
/// trained length (`long`: rotary, ALiBi, no and learned positions, three
/// seeds each, the rotary ones continued at 256 positions under four
/// scalings, and the same kinds trained on a passkey; two runs at a time,
/// about an hour on 2 cores), and chapter 20's classifiers of digits
/// (`vision`: Vision Transformers and perceptrons, three seeds each, about
/// five minutes, after `cargo xtask digits`). Each writes its weights or loss curves to
/// `book/data/`; what it printed goes to `CHAPTER-train-log.txt`, all with
/// the run's header. Then the figures are redrawn from them.
pub(crate) fn train(chapters: &[&str]) -> Step {
    for chapter in chapters {
        let example = match *chapter {
            "ch12" => "ch12_train",
            "lm" => "ch16_lm_train",
            "control" => "ch16_control_train",
            "kv" => "ch17_kv_train",
            "long" => "ch18_long_train",
            "vision" => "ch20_vision_train",
            "ch13" => "ch13_translation_train",
            "ch14-lengths" => "ch14_lengths_train",
            "ch14-summary" => "ch14_summary_train",
            other => return Err(format!("no training run named {other}")),
        };
        run(cargo().args(["build", "--release", "--locked", "--example", example]))?;
        let header = start_run(&format!("train {chapter}"))?;
        let output = capture(
            Command::new(root().join(format!("target/release/examples/{example}")))
                .envs(MEASURING)
                .env("ATTN_RUN_HEADER", &header),
        )?;
        eprint!("{output}");
        let log =
            format!("# {header}; statistic: one run; one thread, by `cargo xtask train`\n{output}");
        let name = match *chapter {
            "lm" => "ch16",
            "control" => "ch16-control",
            "kv" => "ch17",
            "long" => "ch18",
            "vision" => "ch20",
            other => other,
        };
        let path = root().join(format!("book/data/{name}-train-log.txt"));
        std::fs::write(&path, log).map_err(|e| format!("{}: {e}", path.display()))?;
        if *chapter == "kv" {
            // The long texts read afresh by chapter 16's rotary model, with
            // this run's header (evaluation only, under a minute).
            run_example("ch17_fresh_read_data", &header, &MEASURING)?;
        }
    }
    figures()
}

/// The date (UTC), the CPU's model name and the compiler: what a
/// measurement's header states.
pub(crate) fn provenance() -> Result<(String, String, String), String> {
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

/// What every program of a measurement run gets: glibc keeps freed memory
/// in the process, so that large buffers are not page-faulted in again on
/// every call of a benchmark; and `rayon`'s global pool has one thread, so
/// that the crate's products, which split large products over the pool,
/// run on one thread unless a benchmark builds a pool of two (`_2t`).
pub(crate) const MEASURING: [(&str, &str); 3] = [
    ("MALLOC_MMAP_MAX_", "0"),
    ("MALLOC_TRIM_THRESHOLD_", "2147483647"),
    ("RAYON_NUM_THREADS", "1"),
];

/// The measurements of chapters 8 and 9, in one run: the criterion
/// timings and the memory benchmark, then the CSV and the figures.
pub(crate) fn measure() -> Step {
    measure_in(&start_run("measure")?)?;
    figures()
}

/// `cargo xtask measure all`: every timing the book reads, in one run on
/// one machine, with one header: chapters 8 and 9 ([`measure`]), the
/// appendix ([`measure_fast`]), chapter 15's speeds beside PyTorch's
/// (`model --data`), chapter 16's ([`measure_lm`]), chapter 17's
/// ([`measure_kv`]) and chapter 19's ([`measure_serving`]); then the
/// figures. About 40 minutes on 2 cores; needs
/// `TORCH_PYTHON`, the corpus and the pretrained model (it fetches both).
pub(crate) fn measure_all() -> Step {
    let python = reference_python(
        "every timing of the book comes from one run, PyTorch's and NumPy's among them",
        "torch, numpy, safetensors and transformers",
    )?;
    // Every module the run's Python needs, before anything is measured.
    let modules = "import numpy, safetensors, torch, transformers";
    capture(Command::new(&python).args(["-c", modules]))
        .map_err(|e| format!("TORCH_PYTHON cannot `{modules}`: {e}"))?;
    crate::corpus::corpus()?;
    crate::model::model()?;
    let header = start_run("measure all")?;
    measure_in(&header)?;
    measure_fast_in(&python, &header)?;
    crate::model::model_data_in(&python, &header)?;
    measure_lm_in(&python, &header)?;
    measure_kv_in(&header)?;
    measure_serving_in(&header)?;
    figures()
}

/// [`measure`]'s run, headed `header`.
fn measure_in(header: &str) -> Step {
    wipe("target/criterion")?;
    run(cargo()
        .args(["bench", "--locked", "-p", "attn-checks", "--bench", "attention"])
        .envs(MEASURING)
        .env("ATTN_RUN_HEADER", header))?;
    run(cargo()
        .args(["bench", "--locked", "-p", "attn-checks", "--bench", "memory"])
        .envs(MEASURING)
        .env("ATTN_RUN_HEADER", header))?;
    timings_csv(header, "target/criterion", "ch08-timings.csv", &MEASURING)
}

/// The functions the `blas` feature changes, as a criterion filter.
pub(crate) const BLAS_CHANGES: &str = "/(naive_1t|tiled_1t|multihead_1t|matmul_512)/";

/// `cargo xtask measure fast`: the appendix's run, every figure a mean.
/// This core's FMA peak, memory bandwidth and caches and the fast kernel's
/// profile and tile sizes (`examples/making_it_fast_data.rs`); the fast
/// kernel against the chapters' attention (`checks/benches/fast.rs`, one and two
/// threads) into `appendix-timings.csv`, and again with the system's
/// OpenBLAS for what it changes into `appendix-timings-blas.csv`; NumPy
/// (`tools/numpy_attention.py`) and PyTorch (`tools/torch_attention.py`) on
/// the same shapes, run by the Python in `TORCH_PYTHON`; and chapter 16's
/// model trained with and without the fused kernel (`lm_training`). Needs
/// the corpus (`cargo xtask corpus`).
pub(crate) fn measure_fast() -> Step {
    let python = reference_python(
        "the appendix compares the crate with NumPy and PyTorch measured in the same run",
        "torch and numpy (tools/torch_attention.py's header says how)",
    )?;
    measure_fast_in(&python, &start_run("measure fast")?)?;
    figures()
}

/// [`measure_fast`]'s run, headed `header`, with PyTorch and NumPy from
/// `python`.
fn measure_fast_in(python: &std::ffi::OsStr, header: &str) -> Step {
    run_example("making_it_fast_data", header, &MEASURING)?;
    wipe("target/criterion-fast")?;
    run(cargo()
        .args(["bench", "--locked", "-p", "attn-checks", "--bench", "fast"])
        .envs(MEASURING)
        .env("CRITERION_HOME", root().join("target/criterion-fast")))?;
    timings_csv(header, "target/criterion-fast", "appendix-timings.csv", &MEASURING)?;
    // OPENBLAS_VERBOSE=2 makes OpenBLAS say which kernels it chose for
    // this processor ("Core: …"), which the files' headers record.
    let one_thread =
        [("OPENBLAS_NUM_THREADS", "1"), ("OMP_NUM_THREADS", "1"), ("OPENBLAS_VERBOSE", "2")];
    wipe("target/blas/criterion-fast")?;
    let output = capture(
        cargo()
            .args(["bench", "--locked", "-p", "attn-checks", "--features", "blas"])
            .args(["--target-dir", "target/blas"])
            .args(["--bench", "fast", "--", BLAS_CHANGES])
            .envs(MEASURING)
            .envs(one_thread)
            .env("CRITERION_HOME", root().join("target/blas/criterion-fast")),
    )
    .map_err(|e| {
        format!("{e}\nthe blas feature needs OpenBLAS (Debian: `apt-get install libopenblas-dev`)")
    })?;
    eprint!("{output}");
    let blas_env = [&MEASURING[..], &one_thread[..1]].concat();
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
        let out = Command::new(python)
            .arg(root().join("tools").join(script))
            .envs(MEASURING)
            .envs(one_thread)
            .env("ATTN_RUN_HEADER", header)
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
    lm_training(header)
}

/// Chapter 16's model and recipe trained for 300 steps with each head's
/// attention computed both ways, chapter 2's (keeping the weights) and the
/// fused kernel's, three runs of each in turn, on one and on two threads,
/// into `appendix-lm-training.tsv`.
fn lm_training(header: &str) -> Step {
    let example = "ch16_lm_speed_data";
    run(cargo().args(["build", "--release", "--locked", "--example", example]))?;
    let binary = root().join(format!("target/release/examples/{example}"));
    let mut rows = String::new();
    for threads in ["1", "2"] {
        for _ in 0..3 {
            for path in [None, Some("fused")] {
                let line = capture(
                    Command::new(&binary)
                        .arg("train")
                        .args(path)
                        .envs(MEASURING)
                        .env("RAYON_NUM_THREADS", threads),
                )?;
                eprint!("{line}");
                rows += &line;
            }
        }
    }
    write_data(
        "appendix-lm-training.tsv",
        &format!(
            "# {header}; statistic: training tokens per second over steps 101 to 300 of \
             each run, three runs of each path in turn; env: MALLOC_MMAP_MAX_=0 \
             MALLOC_TRIM_THRESHOLD_=2147483647\nprogram\tthreads\ttokens_per_second\n{rows}"
        ),
    )
}

/// The kernels OpenBLAS chose, from what it printed with
/// `OPENBLAS_VERBOSE=2`: `core: SkylakeX`, or `core: not reported`.
pub(crate) fn openblas_core(output: &str) -> String {
    let core =
        output.lines().find_map(|l| l.trim().strip_prefix("Core: ")).unwrap_or("not reported");
    format!("core: {core}")
}

/// Removes a criterion directory, so that a run's CSV holds only what that
/// run measured.
pub(crate) fn wipe(dir: &str) -> Step {
    let path = root().join(dir);
    if path.exists() {
        std::fs::remove_dir_all(&path).map_err(|e| format!("wiping {dir}: {e}"))?;
    }
    Ok(())
}

/// Collects criterion's means (`criterion/*/*/*/new/`, under `target`) into
/// `book/data/csv`, headed by the run's `header`, the statistic and the
/// allocator settings `env`.
pub(crate) fn timings_csv(header: &str, criterion: &str, csv: &str, env: &[(&str, &str)]) -> Step {
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
                    mean["confidence_interval"]["lower_bound"].as_f64().unwrap_or(f64::NAN),
                    mean["confidence_interval"]["upper_bound"].as_f64().unwrap_or(f64::NAN),
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
pub(crate) fn read_dirs(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir() && p.file_name().is_some_and(|n| n != "report"))
        .collect();
    dirs.sort();
    Ok(dirs)
}

/// Chapter 16's generation speeds with and without the KV cache, and the
/// cost of one call of each kind, into `ch16-cache-speed.tsv`.
fn cache_speeds(binary: &std::path::Path, header: &str) -> Step {
    let cache = capture(Command::new(binary).arg("cache").envs(MEASURING))?;
    let cache_file = format!(
        "# {header}; statistic: best of 5, seconds; greedy generation from one token, one thread\n\
         length\tcached_seconds\trecomputed_seconds\tforward_seconds\tforward_one_seconds\t\
         step_one_seconds\n{cache}"
    );
    write_data("ch16-cache-speed.tsv", &cache_file)
}

/// `cargo xtask measure lm-cache`: chapter 16's generation speeds alone, in
/// a run of their own (no PyTorch needed).
pub(crate) fn measure_lm_cache() -> Step {
    let header = start_run("measure lm-cache")?;
    let example = "ch16_lm_speed_data";
    run(cargo().args(["build", "--release", "--locked", "--example", example]))?;
    cache_speeds(&root().join(format!("target/release/examples/{example}")), &header)?;
    figures()
}

/// Runs of each program's training speed per thread count.
const SPEED_RUNS: usize = 3;

/// `cargo xtask measure lm`: chapter 16's speeds, in one run. Training
/// tokens per second of the crate and of PyTorch (`tools/lm_reference.py`,
/// the Python in `TORCH_PYTHON`) on one and two threads; generation with
/// and without the KV cache; and PyTorch's whole training run, for its
/// validation loss. Needs the corpus (`cargo xtask corpus`).
pub(crate) fn measure_lm() -> Step {
    let python = reference_python(
        "chapter 16 compares the crate's training speed with PyTorch's, measured in the same run",
        "torch, numpy and safetensors (tools/lm_reference.py's header says how)",
    )?;
    measure_lm_in(&python, &start_run("measure lm")?)?;
    figures()
}

/// [`measure_lm`]'s run, headed `header`, with PyTorch from `python`.
fn measure_lm_in(python: &std::ffi::OsStr, header: &str) -> Step {
    let example = "ch16_lm_speed_data";
    run(cargo().args(["build", "--release", "--locked", "--example", example]))?;
    let binary = root().join(format!("target/release/examples/{example}"));
    let script = root().join("tools/lm_reference.py");
    let mut speed = String::new();
    for threads in ["1", "2"] {
        // The two programs in turn, SPEED_RUNS times each: a machine shared
        // with others slows one run or another, and the best of each
        // program's runs is the one least slowed.
        for _ in 0..SPEED_RUNS {
            let crate_line = capture(
                Command::new(&binary)
                    .arg("train")
                    .envs(MEASURING)
                    .env("RAYON_NUM_THREADS", threads),
            )?;
            let torch_line =
                capture(Command::new(python).arg(&script).args(["speed", "--threads", threads]))?;
            speed += &crate_line;
            speed += &torch_line;
        }
    }
    // What PyTorch's speed depends on: its version, CPU capability and BLAS.
    let torch = capture(Command::new(python).arg(&script).arg("config"))?;
    let speed_file = format!(
        "# {header}; statistic: training tokens per second over steps 101 to 300, the best of \
         {SPEED_RUNS} runs of each program, the two in turn; {}; \
         env: MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=2147483647 for the crate\n\
         program\tthreads\ttokens_per_second\n{speed}",
        torch.trim()
    );
    write_data("ch16-speed.tsv", &speed_file)?;
    cache_speeds(&binary, header)?;
    step_profile(&binary, python, header)?;
    let torch_log = capture(Command::new(python).arg(&script).args(["train", "--threads", "1"]))?;
    write_data(
        "ch16-pytorch-training.tsv",
        &format!("# {header}; statistic: one run; seed 1, one thread\n{torch_log}"),
    )
}

/// The parts of the crate's training step, by the functions `perf report`
/// names: the first part whose pattern a function's name contains holds it.
const CRATE_PARTS: [(&str, &[&str]); 6] = [
    ("products", &["band_product", "pack_b", "gemm", "linalg::"]),
    ("GELU's erf", &["erff", "::erf"]),
    ("exponentials", &["expf", "exp_nonpositive"]),
    ("allocation and copies", &["memset", "memmove", "memcpy", "malloc", "free", "_int_"]),
    ("optimizer", &["optim::"]),
    ("checks", &["fingerprint", "check_"]),
];

/// Where a training step's time goes, on one thread, into
/// `ch16-step-profile.tsv`: the crate's step sampled by `perf record`
/// (the share of samples in each part of [`CRATE_PARTS`], times the
/// seconds a step took in that run), and PyTorch's by its own profiler
/// (`tools/lm_reference.py profile`). Without `perf` the file says so and
/// holds PyTorch's parts only.
fn step_profile(binary: &Path, python: &std::ffi::OsStr, header: &str) -> Step {
    let data = root().join("target/perf/ch16-train.data");
    std::fs::create_dir_all(root().join("target/perf")).map_err(|e| format!("target/perf: {e}"))?;
    let recorded = capture(
        Command::new("perf")
            .args(["record", "-F", "999", "-o"])
            .arg(&data)
            .arg("--")
            .arg(binary)
            .args(["train", "profile"])
            .envs(MEASURING),
    );
    let mut rows = String::new();
    let mut perf_note = "perf record: the crate's samples".to_string();
    match recorded.and_then(|out| {
        let report = capture(
            Command::new("perf")
                .args(["report", "--stdio", "--no-children", "--sort", "symbol", "-i"])
                .arg(&data),
        )?;
        Ok((out, report))
    }) {
        Ok((out, report)) => {
            let step_ms: f64 = out
                .lines()
                .find_map(|l| l.strip_prefix("crate_ms_per_step\t1\t"))
                .and_then(|r| r.trim().parse().ok())
                .ok_or_else(|| format!("the profiled run printed no time a step: {out}"))?;
            let mut shares = vec![0.0; CRATE_PARTS.len() + 1];
            for line in report.lines().filter(|l| !l.starts_with('#')) {
                let Some((percent, symbol)) = line.trim().split_once('%') else { continue };
                let Ok(percent) = percent.trim().parse::<f64>() else { continue };
                let part = CRATE_PARTS
                    .iter()
                    .position(|(_, keys)| keys.iter().any(|k| symbol.contains(k)))
                    .unwrap_or(CRATE_PARTS.len());
                shares[part] += percent / 100.0;
            }
            let names = CRATE_PARTS.iter().map(|(name, _)| *name).chain(["the rest"]);
            for (name, share) in names.zip(&shares) {
                rows += &format!("crate\t1\t{name}\t{:.3}\n", share * step_ms);
            }
            rows += &format!("crate\t1\ttotal\t{step_ms:.3}\n");
        }
        Err(e) => {
            eprintln!("perf could not sample the crate's training ({e}); PyTorch's parts only");
            perf_note = "perf: not available on this machine, no crate rows".into();
        }
    }
    let torch = capture(Command::new(python).arg(root().join("tools/lm_reference.py")).args([
        "profile",
        "--threads",
        "1",
    ]))?;
    rows.extend(torch.lines().filter(|l| l.starts_with("pytorch\t")).map(|l| format!("{l}\n")));
    write_data(
        "ch16-step-profile.tsv",
        &format!(
            "# {header}; statistic: milliseconds a training step over steps 1 to 300 ({perf_note}, \
             their share of each part times the step's time in that run) and over steps 101 to \
             150 (PyTorch's profiler: the operators' own time, its cost included in `total`); \
             one thread\nprogram\tthreads\tpart\tms_per_step\n{rows}"
        ),
    )
}

/// Chapter 17's measurement: generation speed through the cache by number
/// of key/value heads (`ch17-speed.tsv`), about a minute.
pub(crate) fn measure_kv() -> Step {
    measure_kv_in(&start_run("measure kv")?)?;
    figures()
}

/// [`measure_kv`]'s run, headed `header`.
fn measure_kv_in(header: &str) -> Step {
    let example = "ch17_kv_speed_data";
    run(cargo().args(["build", "--release", "--locked", "--example", example]))?;
    let binary = root().join(format!("target/release/examples/{example}"));
    let speed = capture(Command::new(&binary).arg("speed").envs(MEASURING))?;
    write_data(
        "ch17-speed.tsv",
        &format!(
            "# {header}; statistic: best of 5, seconds to write 256 characters greedily through \
             the sliding cache, one thread\nattention\tseconds\n{speed}"
        ),
    )
}

/// `cargo xtask measure serving`: chapter 19's run (a few minutes, after
/// `cargo xtask corpus`): the paged cache's decode step, continuous
/// against static batching and speculative decoding
/// (`examples/ch19_serving_data.rs`), one thread.
pub(crate) fn measure_serving() -> Step {
    crate::corpus::corpus()?;
    measure_serving_in(&start_run("measure serving")?)?;
    figures()
}

/// [`measure_serving`]'s run, headed `header`.
fn measure_serving_in(header: &str) -> Step {
    let example = "ch19_serving_data";
    run(cargo().args(["build", "--release", "--locked", "--example", example]))?;
    let binary = root().join(format!("target/release/examples/{example}"));
    run(Command::new(&binary).arg("all").envs(MEASURING).env("ATTN_RUN_HEADER", header))
}

/// Writes `book/data/name`.
fn write_data(name: &str, text: &str) -> Step {
    let path = root().join("book/data").join(name);
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// `cargo xtask measure gpu`: chapter 21's kernels timed on the adapter
/// `wgpu` finds (`examples/ch21_gpu_data.rs`); a GPU's times go to
/// `book/data/ch21-gpu.tsv`, a software device's to `target/` only. Not
/// part of `measure all`, which runs on machines without a GPU.
pub(crate) fn measure_gpu() -> Step {
    let example = "ch21_gpu_data";
    run(cargo().args([
        "build",
        "--release",
        "--locked",
        "--features",
        "gpu",
        "--example",
        example,
    ]))?;
    let binary = root().join(format!("target/release/examples/{example}"));
    let runtime = std::env::var("XDG_RUNTIME_DIR").unwrap_or_else(|_| "/tmp".into());
    run(Command::new(&binary)
        .env("ATTN_RUN_HEADER", start_run("measure gpu")?)
        .env("XDG_RUNTIME_DIR", runtime))
}
