//! Running the commands the book's tasks are made of: cargo builds whose
//! artifacts the tasks read, commands whose output is shown or captured,
//! and many commands side by side on every core.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{root, Step};

/// An executable a cargo build made, as its JSON messages name it.
pub(crate) struct Built {
    /// Its source file, relative to the repository: `tests/ch12_numbers.rs`.
    pub(crate) source: String,
    /// Its target's name: `ch12_numbers`, or an example's name.
    pub(crate) name: String,
    /// Whether it is a test harness (`cargo test --no-run`).
    pub(crate) test: bool,
    /// Where cargo put it (wherever the target directory is).
    pub(crate) executable: PathBuf,
    /// Its package's directory, where `cargo test` and `cargo run` start it.
    pub(crate) dir: PathBuf,
}

/// Runs the cargo build `build` and returns its `compiler-artifact`
/// messages: the files it made or found up to date. Its progress is one
/// line (on a terminal, counted as it goes); compiler errors and warnings
/// are shown as rustc gives them.
pub(crate) fn artifacts(build: &mut Command) -> Result<Vec<serde_json::Value>, String> {
    use std::io::{BufRead, IsTerminal};
    build.args(["--message-format=json-render-diagnostics", "--quiet"]);
    eprintln!("\n==> {}", describe(build));
    let mut child = build
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .map_err(|e| format!("could not start `{}`: {e}", describe(build)))?;
    let stdout = child.stdout.take().ok_or("cargo's output")?;
    let terminal = std::io::stderr().is_terminal();
    let (mut compiled, mut fresh) = (0, 0);
    let mut messages = Vec::new();
    for line in std::io::BufReader::new(stdout).lines() {
        let line = line.map_err(|e| format!("cargo's output: {e}"))?;
        let message: serde_json::Value =
            serde_json::from_str(&line).map_err(|e| format!("cargo's JSON message: {e}"))?;
        if message["reason"] == "compiler-artifact" {
            match message["fresh"].as_bool() {
                Some(true) => fresh += 1,
                _ => compiled += 1,
            }
            if terminal {
                eprint!("\r    {compiled} compiled, {fresh} up to date");
            }
            messages.push(message);
        }
    }
    eprintln!("{}    {compiled} compiled, {fresh} up to date", if terminal { "\r" } else { "" });
    let status = child.wait().map_err(|e| format!("`{}`: {e}", describe(build)))?;
    if !status.success() {
        return Err(format!("`{}` failed ({status})", describe(build)));
    }
    Ok(messages)
}

/// The executables of the cargo build `build` ([`artifacts`]).
pub(crate) fn executables(build: &mut Command) -> Result<Vec<Built>, String> {
    let mut built = Vec::new();
    for message in artifacts(build)? {
        let (Some(executable), Some(manifest), Some(source), Some(name), Some(test)) = (
            message["executable"].as_str(),
            message["manifest_path"].as_str(),
            message["target"]["src_path"].as_str(),
            message["target"]["name"].as_str(),
            message["profile"]["test"].as_bool(),
        ) else {
            continue;
        };
        let relative = Path::new(source).strip_prefix(root()).unwrap_or(Path::new(source));
        let dir = Path::new(manifest).parent().unwrap_or(Path::new("."));
        built.push(Built {
            source: relative.display().to_string(),
            name: name.to_string(),
            test,
            executable: PathBuf::from(executable),
            dir: dir.to_path_buf(),
        });
    }
    Ok(built)
}

pub(crate) fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(root());
    cmd
}

pub(crate) fn describe(cmd: &Command) -> String {
    let args: Vec<_> = cmd.get_args().map(|a| a.to_string_lossy()).collect();
    format!("{} {}", cmd.get_program().to_string_lossy(), args.join(" "))
}

/// Runs a command in the repository root, streaming its output.
pub(crate) fn run(cmd: &mut Command) -> Step {
    let what = describe(cmd);
    eprintln!("\n==> {what}");
    let status =
        cmd.current_dir(root()).status().map_err(|e| format!("could not start `{what}`: {e}"))?;
    if !status.success() {
        return Err(format!("`{what}` failed ({status})"));
    }
    Ok(())
}

/// Runs a command in the repository root, printing and returning its output.
pub(crate) fn capture(cmd: &mut Command) -> Result<String, String> {
    let what = describe(cmd);
    let out =
        cmd.current_dir(root()).output().map_err(|e| format!("could not start `{what}`: {e}"))?;
    let text =
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    if !out.status.success() {
        return Err(format!("`{what}` failed ({}):\n{text}", out.status));
    }
    Ok(text)
}

/// Runs one command a name, as many at a time as the machine has cores;
/// prints one line for each that succeeds and the whole output of each
/// that fails, and fails naming those that failed. Every command's output
/// goes to `target/logs/LOG/NAME.txt`. The figure examples and most test
/// binaries run on one thread each, and a few of them take most of their
/// step's time.
pub(crate) fn side_by_side(
    names: &[String],
    log: &str,
    command: impl Fn(&str) -> Command + Sync,
) -> Step {
    let logs = root().join("target/logs").join(log);
    std::fs::create_dir_all(&logs).map_err(|e| format!("{}: {e}", logs.display()))?;
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failed = std::sync::Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::thread::scope(|scope| {
        for _ in 0..workers.min(names.len()) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(name) = names.get(i) else { break };
                let start = std::time::Instant::now();
                let output = command(name).output();
                let secs = start.elapsed().as_secs_f64();
                let mut failed = failed.lock().unwrap_or_else(|e| e.into_inner());
                match output {
                    Ok(out) => {
                        let text = format!(
                            "{}{}",
                            String::from_utf8_lossy(&out.stdout),
                            String::from_utf8_lossy(&out.stderr)
                        );
                        // A test binary's name is its source's path.
                        let file = logs.join(format!("{name}.txt"));
                        let written = file
                            .parent()
                            .map_or(Ok(()), std::fs::create_dir_all)
                            .and_then(|()| std::fs::write(&file, &text));
                        let shown = file.strip_prefix(root()).unwrap_or(&file).display();
                        if !out.status.success() {
                            eprintln!("\n==> {name} FAILED ({secs:.1} s)\n{text}");
                            failed.push(format!("{name} ({})", out.status));
                        } else if written.is_ok() {
                            eprintln!("{name}: ok ({secs:.1} s; its output is in {shown})");
                        } else {
                            eprintln!("\n==> {name}: ok ({secs:.1} s)\n{text}");
                        }
                    }
                    Err(e) => failed.push(format!("{name} (could not start: {e})")),
                }
            });
        }
    });
    let failed = failed.into_inner().unwrap_or_else(|e| e.into_inner());
    match failed.is_empty() {
        true => Ok(()),
        false => Err(format!("these failed: {}", failed.join(", "))),
    }
}
