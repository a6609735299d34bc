//! Chapter 16's widget: the book's Shakespeare model writing in the page.
//! The page hands over the weights file (`book/data/ch16-weights.safetensors`,
//! shipped base64-encoded in `widgets/ch16-weights.js`) once, and a prompt
//! for each text; the model writes with `generate` through its KV cache,
//! and its forward pass gives every head's attention over the text.

use attn::error::AttnError;
use attn::lm::{Decoding, LanguageModel, Sampler, Vocabulary, SHAKESPEARE_ALPHABET};

/// The model the page loaded, and the characters it reads and writes.
pub struct Writer {
    model: LanguageModel<f32>,
    vocab: Vocabulary,
}

/// The sampling settings of the page's controls.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// How many characters to write.
    pub count: usize,
    /// The temperature (0 is greedy).
    pub temperature: f64,
    /// Keep the `top_k` most likely characters, or all with 0.
    pub top_k: usize,
    /// Keep the most likely characters up to probability `top_p` (1: all).
    pub top_p: f64,
    /// The random source's seed.
    pub seed: u64,
}

/// The most characters the page asks for at once.
pub const MAX_COUNT: usize = 400;

impl Writer {
    /// The model in the bytes of a safetensors file, which must hold a
    /// model of the corpus's alphabet.
    pub fn from_safetensors(bytes: &[u8]) -> Result<Writer, AttnError> {
        let model = LanguageModel::from_safetensors(bytes)?;
        let vocab = Vocabulary::of(SHAKESPEARE_ALPHABET.as_bytes())?;
        if model.config().vocab != vocab.len() {
            return Err(AttnError::InvalidArgument {
                name: "weights",
                value: model.config().vocab as f64,
                requirement: "must be a model of the Shakespeare corpus's characters",
            });
        }
        Ok(Writer { model, vocab })
    }

    /// `prompt` and what the model writes after it, as `settings` say.
    pub fn write(&self, prompt: &str, settings: Settings) -> Result<String, AttnError> {
        if settings.count > MAX_COUNT {
            return Err(AttnError::InvalidArgument {
                name: "count",
                value: settings.count as f64,
                requirement: "must be at most 400 characters at a time",
            });
        }
        let mut sampler = Sampler::new(settings.temperature)?;
        if settings.top_k > 0 {
            sampler = sampler.top_k(settings.top_k)?;
        }
        if settings.top_p < 1.0 {
            sampler = sampler.top_p(settings.top_p)?;
        }
        let tokens = self.vocab.encode(prompt)?;
        let written = self.model.generate(
            &tokens,
            settings.count,
            &sampler,
            settings.seed,
            Decoding::Cached,
        )?;
        self.vocab.decode(&written)
    }

    /// Every head's attention over the last `context` characters of
    /// `text`: `T`, the characters read, where they start in `text`, and
    /// for each block and head in turn the `T×T` weights row by row.
    pub fn attention(&self, text: &str) -> Result<(usize, usize, Vec<f32>), AttnError> {
        let tokens = self.vocab.encode(text)?;
        let start = tokens.len().saturating_sub(self.model.config().context);
        let window = tokens[start..].to_vec();
        let forward = self.model.forward(std::slice::from_ref(&window))?;
        let config = self.model.config();
        let mut all = Vec::new();
        for block in 0..config.layers {
            for head in 0..config.heads {
                all.extend(forward.weights(block, 0, head)?.iter().copied());
            }
        }
        Ok((window.len(), start, all))
    }

    /// The model's blocks and heads.
    pub fn shape(&self) -> (usize, usize) {
        (self.model.config().layers, self.model.config().heads)
    }
}
