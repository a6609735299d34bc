//! The language model's training, reading and writing refuse bad input
//! with an error that names it (class 4 and 5, as for the other models).

use attn::lm::{
    mean_loss, train_lm, Corpus, Decoding, LanguageModel, LmTraining, Sampler, SHAKESPEARE_TRAINING,
};

use crate::SMALL_LM as SMALL;

fn recipe() -> LmTraining {
    LmTraining {
        steps: 4,
        batch: 2,
        warmup: 1,
        log_every: 2,
        log_windows: 2,
        ..SHAKESPEARE_TRAINING
    }
}

#[test]
fn training_refuses_a_bad_recipe_or_too_little_text() {
    let text: Vec<u8> = (0..200).map(|i| (i % 8) as u8).collect();
    let train = |r: LmTraining, text: &[u8]| {
        let mut model = LanguageModel::<f32>::new(SMALL, 1).unwrap();
        train_lm(&mut model, text, text, &r, |_, _| {}).map(|_| ())
    };
    assert!(train(recipe(), &text).is_ok());
    let e = |r: Result<(), attn::AttnError>| r.unwrap_err().to_string();
    assert!(e(train(LmTraining { batch: 0, ..recipe() }, &text)).contains("batch"));
    assert!(e(train(LmTraining { lr: 0.0, ..recipe() }, &text)).contains("learning rate"));
    assert!(e(train(LmTraining { min_lr: 1.0, ..recipe() }, &text)).contains("floor"));
    assert!(e(train(LmTraining { warmup: 9, ..recipe() }, &text)).contains("warmup"));
    assert!(e(train(LmTraining { log_windows: 0, ..recipe() }, &text)).contains("windows"));
    assert!(e(train(recipe(), &text[..5])).contains("window offset"));
    let model = LanguageModel::<f32>::new(SMALL, 1).unwrap();
    assert!(mean_loss(&model, &text, &[], 2).is_err());
}

#[test]
fn generation_refuses_an_empty_prompt_or_unknown_tokens() {
    let model = LanguageModel::<f32>::new(SMALL, 1).unwrap();
    let greedy = Sampler::new(0.0).unwrap();
    assert!(model.generate(&[], 3, &greedy, 0, Decoding::Cached).is_err());
    assert!(model.generate(&[8], 3, &greedy, 0, Decoding::Cached).is_err());
    assert!(model.generate(&[8], 3, &greedy, 0, Decoding::Recompute).is_err());
    let corpus = Corpus::from_text(b"abcdefghijj").unwrap();
    assert!(corpus.vocab().encode("z").is_err());
    assert!(LanguageModel::from_safetensors(b"not a file").is_err());
}

/// A prompt with a character the model never saw: the error names the
/// prompt, the character and where it is, and calls it a prompt to encode,
/// not a corpus.
#[test]
fn encoding_names_the_character_the_vocabulary_lacks() {
    let corpus = Corpus::from_text(b"abcdefghijj").unwrap();
    let error = corpus.vocab().encode("abz").unwrap_err().to_string();
    for part in ["\"abz\"", "character 2", "'z'", "10 characters"] {
        assert!(error.contains(part), "{part} not in: {error}");
    }
    assert!(!error.contains("corpus"), "{error}");
}
