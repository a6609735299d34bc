//! The language model of chapter 16: its corpus (`cargo xtask corpus`
//! fetches it; `cargo xtask test` does so before the tests run) and its
//! trained weights against PyTorch's golden values (`tools/lm_reference.py`).

use std::sync::OnceLock;

use attn::lm::{Corpus, LanguageModel, SHAKESPEARE_ALPHABET, SHAKESPEARE_CHARS, SHAKESPEARE_VOCAB};
use report::ch16::corpus_dir;

mod common;

/// The corpus, read once for every test of this file.
fn corpus() -> &'static Corpus {
    static CORPUS: OnceLock<Corpus> = OnceLock::new();
    CORPUS.get_or_init(|| Corpus::shakespeare(corpus_dir()).unwrap_or_else(|e| panic!("{e}")))
}

#[test]
fn the_corpus_is_shakespeare_as_defined() {
    let c = corpus();
    assert_eq!(c.len(), SHAKESPEARE_CHARS);
    assert_eq!(c.vocab().len(), SHAKESPEARE_VOCAB);
    assert_eq!(c.train().len(), 4_551_478); // ⌊0.9 · 5,057,198⌋
    assert_eq!(c.train().len() + c.validation().len(), SHAKESPEARE_CHARS);
    let vocab = String::from_utf8(c.vocab().chars().to_vec()).unwrap();
    assert!(vocab.starts_with("\n !\"&'()*,-./0123456789:;?@AB"), "{vocab:?}");
    assert!(vocab.ends_with("xyz{}"), "{vocab:?}");
    assert_eq!(vocab, SHAKESPEARE_ALPHABET, "what a model reads without the corpus");
    let first: Vec<usize> = c.train()[..25].iter().map(|&i| usize::from(i)).collect();
    assert_eq!(c.vocab().decode(&first).unwrap(), "ALL'S WELL THAT ENDS WELL");
    let last = c.validation();
    let tail: Vec<usize> = last[last.len() - 4..].iter().map(|&i| usize::from(i)).collect();
    assert_eq!(c.vocab().decode(&tail).unwrap(), "t.]\n"); // The Winter's Tale: "[Exeunt.]"
}

/// The book's trained model (`cargo xtask train lm` writes it).
fn model() -> &'static LanguageModel<f32> {
    static MODEL: OnceLock<LanguageModel<f32>> = OnceLock::new();
    MODEL.get_or_init(|| {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/book/data/ch16-weights.safetensors");
        let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        LanguageModel::from_safetensors(&bytes).unwrap_or_else(|e| panic!("{path}: {e}"))
    })
}

/// The texts of `tools/lm_reference.py`'s golden values.
const GOLDEN_TEXTS: [&str; 2] = [
    "ROMEO:\nBut, soft! what light through yonder window breaks?\nIt is",
    "To be, or not to be: that is the question:",
];
/// The largest difference allowed between a value of the crate and PyTorch's.
const TOLERANCE: f32 = 1e-5;

fn assert_close(name: &str, ours: &ndarray::ArrayRef2<f32>, theirs: &ndarray::Array2<f32>) {
    assert_eq!(ours.dim(), theirs.dim(), "{name}");
    let worst = ours.iter().zip(theirs).map(|(a, b)| (a - b).abs()).fold(0.0_f32, f32::max);
    assert!(worst <= TOLERANCE, "{name}: largest difference {worst:e}");
}

#[test]
fn the_model_computes_what_pytorch_computes() {
    let golden = common::golden::load("lm.txt");
    for (i, text) in GOLDEN_TEXTS.iter().enumerate() {
        let tokens = corpus().vocab().encode(text).unwrap();
        let fwd = model().forward(&[tokens]).unwrap();
        assert_close(&format!("logits{i}"), fwd.logits(), &golden[&format!("logits{i}")]);
        for (block, head) in [(0, 0), (1, 2), (3, 3)] {
            let key = format!("weights{i}_block{block}_head{head}");
            assert_close(&key, fwd.weights(block, 0, head).unwrap(), &golden[&key]);
        }
    }
}

/// The chapter says which plays the validation split holds: it starts in
/// *Troilus and Cressida* and runs to the end of the last file.
#[test]
fn the_validation_split_starts_in_troilus_and_cressida() {
    let mut files: Vec<_> = std::fs::read_dir(corpus_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with("_gut.txt"))
        .collect();
    files.sort();
    let split = corpus().train().len();
    let mut start = 0;
    let mut holding = Vec::new();
    for file in &files {
        let len = std::fs::metadata(file).unwrap().len() as usize;
        if start + len > split {
            holding.push(file.file_name().unwrap().to_string_lossy().to_string());
        }
        start += len;
    }
    assert_eq!(
        holding,
        [
            "troilus_and_cressida_gut.txt",
            "twelfth_night_gut.txt",
            "two_gentlemen_of_verona_gut.txt",
            "winters_tale_gut.txt"
        ]
    );
}

/// Generation through the KV cache, one character at a time, against
/// PyTorch's logits for the whole text: within 1e-4 (the cache adds the
/// same terms in another order). Fails if the cache skips a block.
#[test]
fn the_cached_model_computes_what_pytorch_computes() {
    let golden = common::golden::load("lm.txt");
    let theirs = &golden["logits0"];
    let tokens = corpus().vocab().encode(GOLDEN_TEXTS[0]).unwrap();
    let mut cache = model().new_cache();
    let mut worst = 0.0_f32;
    for (t, &token) in tokens.iter().enumerate() {
        let ours = model().step(token, &mut cache).unwrap();
        for (a, b) in ours.iter().zip(theirs.row(t)) {
            worst = worst.max((a - b).abs());
        }
    }
    assert!(worst <= 1e-4, "largest difference {worst:e}");
}
