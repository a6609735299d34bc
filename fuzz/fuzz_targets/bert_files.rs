//! Chapter 15's model directory: `config.json`, `model.safetensors` and
//! `tokenizer.json`, each corrupted. The input is three little-endian u32
//! lengths, then the three files' bytes in that order.
#![no_main]

use attn::pretrained::{Bert, WordPiece};
use libfuzzer_sys::fuzz_target;
use std::path::PathBuf;

fn dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("attn-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 12 {
        return;
    }
    let len = |i: usize| u32::from_le_bytes(data[4 * i..4 * i + 4].try_into().unwrap()) as usize;
    let mut rest = &data[12..];
    let mut files = Vec::new();
    for i in 0..3 {
        let n = len(i).min(rest.len());
        files.push(&rest[..n]);
        rest = &rest[n..];
    }
    let dir = dir();
    for (name, bytes) in ["config.json", "model.safetensors", "tokenizer.json"]
        .iter()
        .zip(&files)
    {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
    let _ = Bert::load(&dir);
    if let Ok(tokenizer) = WordPiece::load(&dir) {
        let _ = tokenizer.tokenize("Attention, tested: naïve café 東京 🙂");
    }
});
