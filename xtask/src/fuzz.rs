//! `cargo xtask fuzz [SECONDS]`: the file readers under libFuzzer (the
//! crate `fuzz/`, `cargo fuzz` on the nightly toolchain), each target for
//! SECONDS (default 60), from seed corpora built out of the real files:
//! chapters 12 and 13's committed checkpoints, chapter 15's model
//! directory (fetched by `cargo xtask model`) and chapter 16's weights. A
//! crash fails the command and leaves its input under `fuzz/artifacts/`.

use std::process::Command;

use crate::model::model;
use crate::{root, run, Step};

/// The targets and what each reads.
const TARGETS: [&str; 3] = ["checkpoint", "bert_files", "lm_weights"];

pub(crate) fn fuzz(seconds: u64) -> Step {
    model()?; // the seed corpus of `bert_files` is chapter 15's model directory
    seed_corpora()?;
    let installed = Command::new("cargo").args(["fuzz", "--version"]).output();
    if !installed.is_ok_and(|o| o.status.success()) {
        run(Command::new("cargo").args(["install", "cargo-fuzz", "--locked"]))?;
    }
    for target in TARGETS {
        run(Command::new("cargo")
            .current_dir(root().join("fuzz"))
            .args(["+nightly", "fuzz", "run", target, "--"])
            .arg(format!("-max_total_time={seconds}"))
            .arg("-max_len=1100000")
            .arg("-print_final_stats=1"))?;
    }
    Ok(())
}

/// `fuzz/corpus/TARGET/`: the real files each reader reads.
fn seed_corpora() -> Step {
    let io = |e: std::io::Error| e.to_string();
    let corpus = root().join("fuzz/corpus");
    let checkpoints = corpus.join("checkpoint");
    std::fs::create_dir_all(&checkpoints).map_err(io)?;
    for file in [
        "ch12-weights.txt",
        "ch13-attention-weights.txt",
        "ch13-mean-pooled-weights.txt",
        "ch14-gru-attention-weights.txt",
    ] {
        let from = root().join("book/data").join(file);
        std::fs::copy(from, checkpoints.join(file)).map_err(io)?;
    }
    let model = root().join("target/models/all-MiniLM-L6-v2");
    let read = |name: &str| std::fs::read(model.join(name)).map_err(io);
    let (config, tokenizer) = (read("config.json")?, read("tokenizer.json")?);
    let weights = read("model.safetensors")?;
    let bert = corpus.join("bert_files");
    std::fs::create_dir_all(&bert).map_err(io)?;
    // Whole config and tokenizer, the weights' header and first tensors.
    let weights = &weights[..weights.len().min(64 * 1024)];
    let mut seed = Vec::new();
    for part in [&config[..], weights, &tokenizer[..]] {
        seed.extend((part.len() as u32).to_le_bytes());
    }
    for part in [&config[..], weights, &tokenizer[..]] {
        seed.extend(part);
    }
    std::fs::write(bert.join("minilm"), seed).map_err(io)?;
    // Chapter 16's committed weights, read as they are (a first byte of 0):
    // the header and first tensors (the whole file is longer than the
    // fuzzer's inputs). And each way the target damages its small model's
    // file (a first byte of 1, then the damage and where).
    let lm = corpus.join("lm_weights");
    std::fs::create_dir_all(&lm).map_err(io)?;
    let weights = std::fs::read(root().join("book/data/ch16-weights.safetensors")).map_err(io)?;
    let weights = &weights[..weights.len().min(64 * 1024)];
    std::fs::write(lm.join("ch16-weights"), [&[0], weights].concat()).map_err(io)?;
    for damage in 0..6u8 {
        let seed = [1, damage, 200, 7, 0, 0, 3, 2, 1];
        std::fs::write(lm.join(format!("damage-{damage}")), seed).map_err(io)?;
    }
    Ok(())
}
