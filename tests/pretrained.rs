//! Chapter 15's pretrained encoder, run by the crate, against PyTorch and
//! Hugging Face transformers (`tests/golden/minilm.txt`, written by
//! `tools/minilm_golden.py`): the same token ids, every head's weights and
//! the sentence embeddings within 1e-5. Then the chapter's data, derived
//! again from the model, against the committed files.
//!
//! These tests read the model that `cargo xtask model` fetches (`cargo xtask
//! test` does so first); without it they fail and say so.

use std::sync::OnceLock;

use approx::assert_abs_diff_eq;
use attn::pretrained::{tensor_shapes, Bert, WordPiece};
use ndarray::{s, Array2};
use report::ch15::{model_dir, Corpus};
use report::ch15_data::{derive, Derived, FILES};

mod common;

use common::golden::load;

const TOLERANCE: f32 = 1e-5;

/// The model, loaded once for every test of this file.
fn model() -> &'static (Bert, WordPiece) {
    static MODEL: OnceLock<(Bert, WordPiece)> = OnceLock::new();
    MODEL.get_or_init(|| {
        let dir = model_dir();
        let load = || Ok::<_, attn::AttnError>((Bert::load(&dir)?, WordPiece::load(&dir)?));
        load().unwrap_or_else(|e| panic!("{e}"))
    })
}

const ATTENTION_SENTENCES: [&str; 2] = [
    "The trophy did not fit in the suitcase because it was too big.",
    "Attention is all you need.",
];
const TRICKY: &str = "Café naïveté — über-cool 3.14 🙂!";

fn ids_as_row(ids: &[u32]) -> Array2<f32> {
    Array2::from_shape_fn((1, ids.len()), |(_, j)| ids[j] as f32)
}

#[test]
fn token_ids_match_the_python_tokenizer() {
    let (_, wordpiece) = model();
    let g = load("minilm.txt");
    for (i, text) in ATTENTION_SENTENCES.iter().chain([&TRICKY]).enumerate() {
        let ids = wordpiece.tokenize(text).unwrap().ids;
        assert_eq!(ids_as_row(&ids), g[&format!("ids_{i}")], "{text}");
    }
}

#[test]
fn every_head_of_every_layer_matches_pytorch() {
    let (bert, _) = model();
    let g = load("minilm.txt");
    for (i, text) in ATTENTION_SENTENCES.iter().enumerate() {
        let ids = model().1.tokenize(text).unwrap().ids;
        let encoded = bert.encode(&ids).unwrap();
        assert_eq!(encoded.weights.len(), 6);
        for (layer, weights) in encoded.weights.iter().enumerate() {
            for (head, w) in weights.outer_iter().enumerate() {
                let expected = &g[&format!("attention_{i}_layer{layer}_head{head}")];
                assert_abs_diff_eq!(w, expected.view(), epsilon = TOLERANCE);
            }
        }
    }
}

#[test]
fn sentence_embeddings_of_a_padded_batch_match_pytorch() {
    let (bert, wordpiece) = model();
    let corpus = Corpus::read().unwrap();
    let batch: Vec<Vec<u32>> =
        corpus.sentences()[..10].iter().map(|s| wordpiece.tokenize(s).unwrap().ids).collect();
    let lengths: Vec<usize> = batch.iter().map(Vec::len).collect();
    assert!(lengths.iter().min() < lengths.iter().max(), "the batch needs padding");
    let e = bert.sentence_embeddings(&batch).unwrap();
    assert_abs_diff_eq!(e, load("minilm.txt")["embeddings"], epsilon = TOLERANCE);
    // One at a time, with no padding at all, gives the same embeddings.
    for (ids, row) in batch.iter().zip(e.rows()) {
        assert_abs_diff_eq!(bert.sentence_embedding(ids).unwrap(), row, epsilon = 1e-6);
    }
}

#[test]
fn padding_changes_nothing_the_real_tokens_see() {
    let (bert, wordpiece) = model();
    let ids = wordpiece.tokenize(ATTENTION_SENTENCES[1]).unwrap().ids;
    let n = ids.len();
    let mut padded = ids.clone();
    padded.resize(n + 5, attn::pretrained::PAD);
    let plain = bert.encode(&ids).unwrap();
    let masked = bert.encode_padded(&padded, n).unwrap();
    let real = masked.hidden.slice(s![..n, ..]);
    assert_abs_diff_eq!(plain.hidden.view(), real, epsilon = 1e-5);
    // No real token's query puts any weight on a padding key.
    for w in &masked.weights {
        assert!(w.slice(s![.., ..n, n..]).iter().all(|&x| x == 0.0));
    }
    // Without the mask, the padding is attended to and the outputs change.
    let unmasked = bert.encode(&padded).unwrap();
    let moved = (&unmasked.hidden.slice(s![..n, ..]) - &plain.hidden)
        .iter()
        .fold(0.0_f32, |m, x| m.max(x.abs()));
    assert!(moved > 0.01, "padding attended to moved the outputs by only {moved}");
}

#[test]
fn the_parameter_count_matches_the_file() {
    let (bert, _) = model();
    let shapes = tensor_shapes(&model_dir()).unwrap();
    let count = |keep: &dyn Fn(&str) -> bool| -> usize {
        let sizes = shapes.iter().filter(|t| t.dtype == "F32" && keep(&t.name));
        sizes.map(|t| t.shape.iter().product::<usize>()).sum()
    };
    // Every f32 tensor but BERT's pooler, which sentence embeddings do not use.
    assert_eq!(bert.parameter_count(), count(&|n| !n.starts_with("pooler.")));
    assert_eq!(count(&|n| n.starts_with("pooler.")), 384 * 384 + 384);
}

#[test]
fn bad_input_gets_a_clear_error() {
    let (bert, _) = model();
    let too_big = bert.vocabulary() as u32;
    let message = bert.encode(&[101, too_big, 102]).unwrap_err().to_string();
    assert!(message.contains("30522"), "{message}");
    assert!(bert.encode(&[]).is_err());
    let message = bert.encode(&vec![1000; 513]).unwrap_err().to_string();
    let positions = bert.max_positions().to_string();
    assert!(message.contains(&format!("only {positions} positions")), "{message}");
    assert!(bert.without_head(6, 0).is_err() && bert.without_head(0, 12).is_err());
}

/// Two files' texts are the same but for their first lines (which name the
/// run that wrote them) and for numbers that differ by at most `tolerance`
/// (the last printed decimal may round the other way on another machine's
/// floating-point kernels).
fn same_but_rounding(file: &str, got: &str, committed: &str, tolerance: f64) {
    let (got, committed): (Vec<&str>, Vec<&str>) =
        (got.lines().skip(1).collect(), committed.lines().skip(1).collect());
    assert_eq!(got.len(), committed.len(), "{file}: line count");
    for (a, b) in got.iter().zip(&committed) {
        let (fa, fb): (Vec<&str>, Vec<&str>) = (a.split('\t').collect(), b.split('\t').collect());
        assert_eq!(fa.len(), fb.len(), "{file}: {a:?} vs {b:?}");
        for (x, y) in fa.iter().zip(&fb) {
            match (x.parse::<f64>(), y.parse::<f64>()) {
                (Ok(x), Ok(y)) => assert!((x - y).abs() <= tolerance, "{file}: {a:?} vs {b:?}"),
                _ => assert_eq!(x, y, "{file}"),
            }
        }
    }
}

#[test]
fn the_committed_chapter_data_is_what_the_model_gives() {
    let texts = derive(&model_dir()).unwrap();
    let committed = Derived::read().unwrap();
    for (file, text) in FILES.iter().zip(&texts) {
        let path = report::ch15_data::data_dir().join(file);
        let on_disk = std::fs::read_to_string(&path).unwrap();
        same_but_rounding(file, text, &on_disk, 2e-4);
    }
    assert_eq!(Derived::parse(&texts).unwrap().tokens, committed.tokens);
}
