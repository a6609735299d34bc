//! Bad-input tests for chapter 15's pretrained encoder (the model that
//! `cargo xtask model` fetches): ids past the vocabulary or the positions,
//! paddings longer than the text, weights that are not one head's, nothing
//! to average over, and a model directory that is not one.

use attn::pretrained::{
    ablations, embeddings, head_statistics, pair_similarities, tensor_shapes,
    unrelated_similarities, Bert, Tokens, WordPiece,
};
use ndarray::Array2;

#[test]
fn the_pretrained_encoder_refuses_what_it_cannot_read() {
    let dir = report::ch15::model_dir();
    let (bert, words) = (Bert::load(&dir).unwrap(), WordPiece::load(&dir).unwrap());
    let tokens = words.tokenize("Attention is all you need.").unwrap();
    assert_eq!(tokens.ids.len(), tokens.tokens.len());
    assert!(words.tokenize(&"word ".repeat(100_000)).is_ok_and(|t| t.ids.len() > 512));
    assert!(bert.embed(&tokens.ids).is_ok());
    assert!(bert.embed(&[]).is_err());
    assert!(bert.embed(&[u32::MAX]).is_err());
    assert!(bert.embed(&vec![101; 513]).is_err(), "past the positions");
    assert!(bert.encode_padded(&tokens.ids, 3).is_ok());
    assert!(bert.encode_padded(&tokens.ids, tokens.ids.len() + 1).is_err(), "pad past the text");
    assert!(bert.sentence_embedding(&tokens.ids).is_ok());
    assert!(bert.sentence_embedding(&[]).is_err());
    assert!(bert.sentence_embeddings(&[]).is_err());
    assert!(bert.sentence_embeddings(&[tokens.ids.clone(), vec![]]).is_err());
    let two = [tokens.clone(), tokens.clone()];
    let e = embeddings(&bert, &two).unwrap();
    assert!(pair_similarities(&e).unwrap().iter().all(|s| (s - 1.0).abs() < 1e-5));
    assert!(unrelated_similarities(&e).is_ok());
    let one = embeddings(&bert, &two[..1]).unwrap();
    assert!(pair_similarities(&one).is_err(), "half a pair");
    assert!(unrelated_similarities(&one).is_err());
    let bad = Tokens { tokens: vec!["?".into()], ids: vec![u32::MAX] };
    assert!(embeddings(&bert, &[bad]).is_err());
    // No paraphrases: a mean of nothing, NaN in an Ok before.
    assert!(ablations(&bert, &[]).is_err());
    assert!(head_statistics(&Array2::from_elem((4, 4), 0.25)).is_ok());
    assert!(head_statistics(&Array2::from_elem((3, 3), 0.25)).is_err(), "n < 4");
    assert!(head_statistics(&Array2::from_elem((4, 5), 0.2)).is_err(), "not square");
    assert!(head_statistics(&Array2::from_elem((4, 4), f32::NAN)).is_err());
    let e = tensor_shapes(std::path::Path::new("/nonexistent")).unwrap_err().to_string();
    assert!(e.contains("cargo xtask model"), "{e}");
}
