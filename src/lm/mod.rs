//! A character-level language model that writes: a decoder-only
//! Transformer trained on Shakespeare's works, next character by next
//! character (chapter 15).
//!
//! | step | shape (`B` sequences of `T` tokens, width `d`, `V` tokens) |
//! | --- | --- |
//! | token + position embeddings | `BT×d` |
//! | `L` pre-norm blocks: causal multi-head attention, GELU FFN | `BT×d` |
//! | final LayerNorm, then `Eᵀ` (the token embedding, tied) | `BT×V` |

mod corpus;
mod forward;
mod generate;
mod induction;
mod model;
mod sample;
mod streaming;
mod train;
mod weights;

pub use corpus::{
    Corpus, Vocabulary, SHAKESPEARE_ALPHABET, SHAKESPEARE_CHARS, SHAKESPEARE_FILES,
    SHAKESPEARE_VOCAB,
};
pub use forward::{AttentionPath, LmForward};
pub use generate::{Decoding, LmCache};
pub use induction::{induction_scores, repeated_sequences, InductionScores};
pub use model::{LanguageModel, LatentSizes, LmConfig, Positions, SHAKESPEARE_MODEL};
pub use sample::{greedy, Sampler};
pub use streaming::Forgetting;
pub use train::{
    even_offsets, mean_loss, random_offsets, train_lm, windows, Batch, LmTraining, LogEntry,
    SplitMix64, SHAKESPEARE_TRAINING,
};

#[cfg(test)]
mod tests;
