//! Chapter 15's language model: where its corpus is.

use std::path::PathBuf;

/// Where `cargo xtask corpus` unpacks Shakespeare's works: `ATTN_CORPUS_DIR`
/// if set, else `target/corpus/shakespeare` in the repository.
pub fn corpus_dir() -> PathBuf {
    match std::env::var_os("ATTN_CORPUS_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => crate::root().join("target/corpus/shakespeare"),
    }
}
