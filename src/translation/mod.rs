//! Attention as alignment: a toy translation task with real alignment
//! structure, an encoder–decoder Transformer that learns it (and a variant
//! whose decoder sees one pooled vector instead of attending), training
//! with teacher forcing, greedy decoding and beam search, and corpus BLEU.
//!
//! The source language writes numbers from 1 to 999,999 in English words,
//! but says the ones before the tens, as German does: 342,015 is
//! "three hundred two and forty thousand fifteen". The target is its
//! digits, `3 4 2 0 1 5`. Aligning the two takes what real translation
//! takes: reordering ("two and forty" → `4 2`), one word for several
//! tokens ("twelve" → `1 2`, "hundred" → `0 0` in "seven hundred"), and
//! words for no token at all ("and", "thousand").

mod backward;
mod batch;
mod beam;
mod bleu;
mod forward;
mod heads;
mod model;
mod numbers;
mod rnn;
mod rouge;
mod runs;
mod train;
mod weights;

pub use batch::{batch, Batch};
pub use beam::{beam_search, Hypothesis, MAX_BEAM_WIDTH};
pub use bleu::{corpus_bleu, Bleu};
pub use forward::Seq2SeqForward;
pub use heads::{alignment_scores, rnn_alignment_score};
pub(crate) use model::source_vocab_size;
pub use model::{Seq2Seq, Seq2SeqConfig};
pub use numbers::{
    alignment, balanced_set, number_pair, number_words, source_vocabulary, translation_set,
    TranslationPair, BOS, EOS, LONGEST_SOURCE, NUMBER_VOCAB, PAD, SOURCE_VOCAB, TARGET_VOCAB,
};
pub use rnn::{RnnConfig, RnnForward, RnnSeq2Seq, BOOK_RNN};
pub use rouge::{mean_rouge, rouge_l, rouge_n, Rouge, RougeScores};
pub use runs::{
    spans, summary_pair, summary_set, summary_words, SummaryPair, COLOURS, RUN_LENGTHS,
    SUMMARY_VOCAB,
};
pub use train::{
    book_pairs, evaluate, next_log_probs, score, train_seq2seq, translate, translate_all,
    EncoderDecoder, Example, ModelConfig, Seq2SeqTraining, BOOK_PAIRS, BOOK_SEQ2SEQ,
    BOOK_SEQ2SEQ_TRAINING,
};
