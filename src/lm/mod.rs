//! A character-level language model that writes: a decoder-only
//! Transformer trained on Shakespeare's works, next character by next
//! character.

mod corpus;
mod sample;

pub use corpus::{Corpus, SHAKESPEARE_CHARS, SHAKESPEARE_FILES, SHAKESPEARE_VOCAB};
pub use sample::{greedy, Sampler};
