//! The language model's corpus (`cargo xtask corpus` fetches it; `cargo
//! xtask test` does so before the tests run).

use std::sync::OnceLock;

use attn::lm::{Corpus, SHAKESPEARE_CHARS, SHAKESPEARE_VOCAB};
use report::ch15::corpus_dir;

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
    let vocab = String::from_utf8(c.vocab().to_vec()).unwrap();
    assert!(
        vocab.starts_with("\n !\"&'()*,-./0123456789:;?@AB"),
        "{vocab:?}"
    );
    assert!(vocab.ends_with("xyz{}"), "{vocab:?}");
    let first: Vec<usize> = c.train()[..25].iter().map(|&i| usize::from(i)).collect();
    assert_eq!(c.decode(&first).unwrap(), "ALL'S WELL THAT ENDS WELL");
    let last = c.validation();
    let tail: Vec<usize> = last[last.len() - 4..]
        .iter()
        .map(|&i| usize::from(i))
        .collect();
    assert_eq!(c.decode(&tail).unwrap(), "t.]\n"); // The Winter's Tale: "[Exeunt.]"
}
