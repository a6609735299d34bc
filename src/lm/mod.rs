//! A character-level language model that writes: a decoder-only
//! Transformer trained on Shakespeare's works, next character by next
//! character (chapter 16).
//!
//! The model is chapter 12's decoder ([`crate::decoder`]), configured by
//! nanoGPT's recipe ([`SHAKESPEARE_MODEL`]); this module holds what writing
//! adds to it: the corpus, the training recipe, sampling, the KV cache in
//! every block, and the measurements of chapters 16 and 17.

mod alibi;
mod corpus;
mod generate;
mod induction;
mod kv;
mod model;
mod paged;
mod passkey;
mod sample;
mod serving;
mod speculative;
mod streaming;
mod train;
mod weights;

pub use crate::decoder::{AttentionPath, LatentSizes, Positions, Recipe};
pub use corpus::{
    Bigram, Corpus, Vocabulary, SHAKESPEARE_ALPHABET, SHAKESPEARE_CHARS, SHAKESPEARE_FILES,
    SHAKESPEARE_VOCAB,
};
pub use generate::Decoding;
pub use induction::{
    induction_scores, periodic_training_batch, repeated_sequences, InductionScores,
};
pub use kv::LmCache;
pub use model::{LanguageModel, LmConfig, LmForward, SHAKESPEARE_MODEL};
pub use paged::{PagedKv, Sequence};
pub use passkey::{passkey, passkey_batch, Passkey, ASK, DIGITS, FIRST_DIGIT, KEY, KEY_DIGITS};
pub use sample::{greedy, Sampler};
pub use serving::{Batching, Policy, Request, Served, Server, StepReport};
pub use speculative::{
    acceptance, residual, verify, Draft, ModelDraft, Speculation, Verdict, MAX_DRAFT,
};
pub use streaming::Forgetting;
pub use train::{
    even_offsets, mean_loss, random_offsets, train_lm, train_on_batches, windows, Batch,
    LmTraining, LogEntry, SplitMix64, SHAKESPEARE_TRAINING,
};

#[cfg(test)]
mod test_models;
#[cfg(test)]
mod tests;
