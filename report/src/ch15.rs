//! Chapter 15's measurements of the pretrained encoder: what each of its 72
//! heads attends to over a corpus, how far the sentence embeddings move when
//! one head is removed, and how alike paraphrases are. They need the model
//! (`cargo xtask model`); [`super::ch15_data`] writes their results to
//! `book/data/`, from which the chapter's example prints and draws.

use crate::error::ReportError;
use std::path::PathBuf;

use ndarray::Array1;

use attn::error::AttnError;
use attn::pretrained::{embeddings, Bert, Tokens, WordPiece};

/// The sentence whose 72 heads the chapter draws.
pub const FIGURE_SENTENCE: &str = "The trophy did not fit in the suitcase because it was too big.";

/// Sentences whose tokens the chapter shows: a plain one, then rarer words
/// that WordPiece splits, accents, a dash, an emoji.
pub const TOKENIZER_EXAMPLES: [&str; 2] = [
    "Transformers tokenise unfamiliar words into familiar pieces.",
    "Café naïveté — über-cool 3.14 🙂!",
];

/// Where `cargo xtask model` unpacks the model: `ATTN_MODEL_DIR` if set,
/// else `target/models/all-MiniLM-L6-v2` in the repository.
pub fn model_dir() -> PathBuf {
    match std::env::var_os("ATTN_MODEL_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => crate::root().join("target/models/all-MiniLM-L6-v2"),
    }
}

/// The chapter's corpus (`book/data/ch15-corpus.txt`): paraphrase pairs,
/// then single sentences.
#[derive(Debug, Clone, PartialEq)]
pub struct Corpus {
    /// Each pair: a sentence and one that says the same in other words.
    pub pairs: Vec<[String; 2]>,
    /// Sentences on varied subjects.
    pub singles: Vec<String>,
}

impl Corpus {
    /// Reads the corpus: `#` lines are comments; the first block of lines
    /// comes in pairs, the block after the blank line is single sentences.
    pub fn read() -> Result<Corpus, ReportError> {
        let path = crate::root().join("book/data/ch15-corpus.txt");
        let text = std::fs::read_to_string(&path).map_err(|e| ReportError::MissingDataFile {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        let text: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        let blocks: Vec<&[&str]> = text.split(|l| l.trim().is_empty()).collect();
        let [paired, singles] = blocks[..] else {
            return Err(ReportError::Attn(AttnError::InvalidWeights {
                reason: format!("{}: expected two blocks of lines", path.display()),
            }));
        };
        Ok(Corpus {
            pairs: paired.chunks_exact(2).map(|p| [p[0].to_string(), p[1].to_string()]).collect(),
            singles: singles.iter().map(|s| s.to_string()).collect(),
        })
    }

    /// Every sentence: the pairs' (first, second, first, …), then the singles.
    pub fn sentences(&self) -> Vec<&str> {
        let paired = self.pairs.iter().flat_map(|[a, b]| [a.as_str(), b.as_str()]);
        paired.chain(self.singles.iter().map(String::as_str)).collect()
    }
}

/// Tokenises every sentence.
pub fn tokenize_all(wordpiece: &WordPiece, sentences: &[&str]) -> Result<Vec<Tokens>, ReportError> {
    Ok(sentences.iter().map(|s| wordpiece.tokenize(s)).collect::<Result<_, _>>()?)
}

/// Sentence embeddings per second, one sentence at a time: the best of
/// `rounds` passes over `sentences`.
pub fn embeddings_per_second(
    bert: &Bert,
    sentences: &[Tokens],
    rounds: usize,
) -> Result<f64, ReportError> {
    let mut best = f64::INFINITY;
    for _ in 0..rounds {
        let start = std::time::Instant::now();
        let e = embeddings(bert, sentences)?;
        best = best.min(start.elapsed().as_secs_f64());
        std::hint::black_box(e);
    }
    Ok(sentences.len() as f64 / best)
}

/// The mean of `ln n` over the sentences: the entropy of a head that
/// spreads its weight evenly.
pub fn uniform_entropy(sentences: &[Tokens]) -> f64 {
    let total: f64 = sentences.iter().map(|t| (t.ids.len() as f64).ln()).sum();
    total / sentences.len() as f64
}

/// `(layer, head)` pairs (from 0) whose value is at least `threshold`.
pub fn heads_at_least(values: &[Vec<f64>], threshold: f64) -> Vec<(usize, usize)> {
    let mut found = Vec::new();
    for (layer, row) in values.iter().enumerate() {
        for (head, &v) in row.iter().enumerate() {
            if v >= threshold {
                found.push((layer, head));
            }
        }
    }
    found
}

/// The mean of each row of `values`.
pub fn row_means(values: &[Vec<f64>]) -> Array1<f64> {
    values.iter().map(|row| row.iter().sum::<f64>() / row.len() as f64).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_corpus_has_twelve_pairs_and_fifty_sentences() {
        let corpus = Corpus::read().unwrap();
        assert_eq!(corpus.pairs.len(), 12);
        assert_eq!(corpus.sentences().len(), 50);
    }
}
