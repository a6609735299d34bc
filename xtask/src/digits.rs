//! `cargo xtask digits`: the UCI optical recognition of handwritten digits
//! test set (Alpaydin and Kaynak, 1998), 1,797 images of 8×8 pixels, as
//! scikit-learn ships it inside its wheel (`sklearn/datasets/data/
//! digits.csv.gz`): the wheel fetched pinned by its sha256 (nothing is
//! installed), the one file taken out and unpacked into an ignored
//! directory under `target/`, where `attn::vision::Digits::read` reads it.

use std::io::Read;

use crate::download::{sha256_hex, Pinned};
use crate::{root, Step};

/// scikit-learn 1.7.2's wheel for CPython 3.11 on x86-64 Linux: any
/// machine's pip fetches it with these arguments, whatever it runs.
const WHEEL: Pinned = Pinned {
    spec: "scikit-learn==1.7.2",
    pip_args: &[
        "--only-binary=:all:",
        "--platform",
        "manylinux2014_x86_64",
        "--python-version",
        "3.11",
    ],
    extension: "whl",
    sha256: "89877e19a80c7b11a2891a27c21c4894fb18e2c2e077815bcade10d34287b20d",
    download: "target/digits/download",
    page: "https://pypi.org/project/scikit-learn/1.7.2/#files",
    command: "cargo xtask digits",
};

/// The file inside the wheel.
const IN_WHEEL: &str = "sklearn/datasets/data/digits.csv.gz";

/// Where the unpacked file goes.
pub(crate) const DIGITS_FILE: &str = "target/digits/digits.csv";

/// Fetches the pinned wheel, checks its sha256, and unpacks the digits'
/// file into [`DIGITS_FILE`], with the sha256 of what it wrote beside it;
/// does nothing when that file is in place and whole.
pub(crate) fn digits() -> Step {
    let file = root().join(DIGITS_FILE);
    let stamp = file.with_extension("csv.sha256");
    let whole = |stamp: &str| std::fs::read(&file).is_ok_and(|b| sha256_hex(&b) == stamp.trim());
    if std::fs::read_to_string(&stamp).is_ok_and(|s| whole(&s)) {
        eprintln!("digits: {DIGITS_FILE} is in place (wheel sha256 {})", WHEEL.sha256);
        return Ok(());
    }
    let (wheel, bytes) = WHEEL.fetch()?;
    let fail = |e: String| format!("{}: {e}: delete it and {}", wheel.display(), WHEEL.by_hand());
    let mut archive =
        zip::ZipArchive::new(std::io::Cursor::new(bytes)).map_err(|e| fail(e.to_string()))?;
    let entry = archive.by_name(IN_WHEEL).map_err(|e| fail(format!("no {IN_WHEEL}: {e}")))?;
    let mut csv = Vec::new();
    flate2::read::GzDecoder::new(entry)
        .read_to_end(&mut csv)
        .map_err(|e| fail(format!("{IN_WHEEL}: {e}")))?;
    let write = |path: &std::path::Path, bytes: &[u8]| {
        std::fs::write(path, bytes).map_err(|e| format!("{}: {e}", path.display()))
    };
    write(&file, &csv)?;
    write(&stamp, sha256_hex(&csv).as_bytes())?;
    eprintln!(
        "digits: unpacked {IN_WHEEL} ({} bytes) of {} (sha256 {}) into {DIGITS_FILE}",
        csv.len(),
        wheel.display(),
        WHEEL.sha256
    );
    Ok(())
}
