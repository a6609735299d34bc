//! WordPiece tokenisation, by Hugging Face's `tokenizers` from the model's
//! own `tokenizer.json`.

use std::path::Path;

use crate::error::AttnError;

/// A sentence as the model sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tokens {
    /// The WordPiece tokens, `[CLS]` first and `[SEP]` last; a piece that
    /// continues a word starts with `##`.
    pub tokens: Vec<String>,
    /// Their ids in the vocabulary, what [`super::Bert::embed`] looks up.
    pub ids: Vec<u32>,
}

/// The tokenizer a model was trained with: lower-casing, splitting on
/// spaces and punctuation, then greedy longest-match WordPiece.
pub struct WordPiece {
    tokenizer: tokenizers::Tokenizer,
}

impl WordPiece {
    /// Loads `dir/tokenizer.json`, with its padding and truncation turned
    /// off: a sentence keeps every token, and the batch pads (chapter 15).
    pub fn load(dir: &Path) -> Result<WordPiece, AttnError> {
        let path = dir.join("tokenizer.json");
        let error =
            |reason: String| AttnError::ModelFile { path: path.display().to_string(), reason };
        let mut tokenizer =
            tokenizers::Tokenizer::from_file(&path).map_err(|e| error(e.to_string()))?;
        tokenizer.with_padding(None);
        tokenizer.with_truncation(None).map_err(|e| error(e.to_string()))?;
        Ok(WordPiece { tokenizer })
    }

    /// The tokens of `text`, with `[CLS]` and `[SEP]` around them.
    pub fn tokenize(&self, text: &str) -> Result<Tokens, AttnError> {
        let encoding = self.tokenizer.encode(text, true).map_err(|e| AttnError::ModelFile {
            path: "tokenizer.json".into(),
            reason: format!("cannot tokenise {text:?}: {e}"),
        })?;
        Ok(Tokens { tokens: encoding.get_tokens().to_vec(), ids: encoding.get_ids().to_vec() })
    }
}

impl std::fmt::Debug for WordPiece {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WordPiece")
    }
}
