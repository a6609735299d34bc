//! rustc, run as cargo runs it, against the book's own build of `attn`
//! and of the other crates a learner's code may use
//! ([`crate::book::library_dir`]): a learner's module compiles in
//! seconds, and nothing of the book's is compiled again. (Cargo, given
//! the learner's crate, would resolve the dependencies' features without
//! the book's other crates and build the library and a third of its
//! dependencies once more: about a minute.)

use std::path::{Path, PathBuf};
use std::process::Command;

pub(crate) struct Rustc {
    program: PathBuf,
    /// The edition, the library directory and one `--extern` a crate.
    args: Vec<String>,
}

impl Rustc {
    /// The learner's crates name these (their `Cargo.toml`).
    const CRATES: [&str; 5] = ["attn", "ndarray", "ndarray_rand", "approx", "serde_json"];

    pub(crate) fn new() -> Result<Rustc, String> {
        let deps = crate::book::library_dir()?;
        let mut args =
            vec!["--edition=2021".to_string(), format!("-Ldependency={}", deps.display())];
        let files: Vec<PathBuf> = std::fs::read_dir(&deps)
            .map_err(|e| format!("{}: {e}", deps.display()))?
            .filter_map(|entry| Some(entry.ok()?.path()))
            .collect();
        for name in Rustc::CRATES {
            let prefix = format!("lib{name}-");
            let rlibs: Vec<&PathBuf> = files
                .iter()
                .filter(|f| {
                    let file = f.file_name().and_then(|n| n.to_str()).unwrap_or_default();
                    file.starts_with(&prefix) && file.ends_with(".rlib")
                })
                .collect();
            let [rlib] = rlibs[..] else {
                return Err(format!(
                    "{} builds of {name} in {}, not one",
                    rlibs.len(),
                    deps.display()
                ));
            };
            args.push(format!("--extern={name}={}", rlib.display()));
        }
        // The rustc cargo uses, the one that built the libraries (rustc
        // refuses libraries another version built): `$RUSTC`, or the one
        // beside the cargo running the build.
        let beside_cargo = std::env::var_os("CARGO")
            .map(|cargo| PathBuf::from(cargo).with_file_name("rustc"))
            .filter(|rustc| rustc.exists());
        let program = std::env::var_os("RUSTC")
            .map(PathBuf::from)
            .or(beside_cargo)
            .unwrap_or_else(|| PathBuf::from("rustc"));
        Ok(Rustc { program, args })
    }

    /// The crate `dir/src/lib.rs` with its tests, and with `feature` on
    /// (the learner's crate gates each exercise behind one).
    fn command(&self, dir: &Path, feature: Option<&str>) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.current_dir(dir).args(&self.args).arg("--test").arg("src/lib.rs");
        if let Some(feature) = feature {
            cmd.arg("--cfg").arg(format!("feature=\"{feature}\""));
        }
        cmd
    }

    /// The errors of the crate in `dir` and of its tests, one a line
    /// (`src/ch11_4.rs:3:5: error[E0603]: …`).
    pub(crate) fn check(&self, dir: &Path, feature: Option<&str>) -> Result<String, String> {
        let out = crate::root().join("target/exercise-check/metadata");
        let output = self
            .command(dir, feature)
            .args(["--error-format=short", "--emit=metadata", "--out-dir"])
            .arg(out)
            .output()
            .map_err(|e| format!("{}: {e}", self.program.display()))?;
        Ok(String::from_utf8_lossy(&output.stderr).into_owned())
    }

    /// Builds the crate's test binary at `binary`; on failure, rustc's
    /// errors as it shows them.
    pub(crate) fn build_tests(
        &self,
        dir: &Path,
        feature: Option<&str>,
        binary: &Path,
    ) -> Result<(), String> {
        use std::io::IsTerminal;
        let color = if std::io::stderr().is_terminal() { "always" } else { "never" };
        let output = self
            .command(dir, feature)
            // As cargo's test profile: checks on, whatever the level.
            .args(["-Copt-level=1", "-Cdebug-assertions=on", "-Coverflow-checks=on"])
            .arg(format!("--color={color}"))
            .arg("-o")
            .arg(binary)
            .output()
            .map_err(|e| format!("{}: {e}", self.program.display()))?;
        match output.status.success() {
            true => Ok(()),
            false => Err(String::from_utf8_lossy(&output.stderr).into_owned()),
        }
    }
}
