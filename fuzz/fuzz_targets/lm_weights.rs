//! The language model's weights reader, on any bytes, and the corpus
//! reader on any text: an error or a valid result, never a panic.
#![no_main]

use attn::lm::{Corpus, LanguageModel};
use attn::nn::Parameters;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(model) = LanguageModel::from_safetensors(data) {
        assert!(model
            .slices()
            .iter()
            .all(|s| s.iter().all(|x| x.is_finite())));
    }
    if let Ok(corpus) = Corpus::from_text(data) {
        assert_eq!(corpus.train().len() + corpus.validation().len(), data.len());
        let ids: Vec<usize> = corpus.train().iter().map(|&i| usize::from(i)).collect();
        let text = corpus.vocab().decode(&ids).expect("ids of the vocabulary");
        assert_eq!(text.as_bytes(), &data[..ids.len()]);
    }
});
