//! The trained models' text checkpoint readers, on any text.
#![no_main]

use attn::model::TinyTransformer;
use attn::nn::Parameters;
use attn::translation::{RnnSeq2Seq, Seq2Seq};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(model) = TinyTransformer::from_text(&text) {
        assert!(model
            .slices()
            .iter()
            .all(|s| s.iter().all(|x| x.is_finite())));
    }
    if let Ok(model) = Seq2Seq::from_text(&text) {
        assert!(model
            .slices()
            .iter()
            .all(|s| s.iter().all(|x| x.is_finite())));
    }
    if let Ok(model) = RnnSeq2Seq::from_text(&text) {
        assert!(model
            .slices()
            .iter()
            .all(|s| s.iter().all(|x| x.is_finite())));
    }
});
