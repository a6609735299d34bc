//! Reading text longer than the context: a rotary model's cache can keep a
//! window of any length at the text's positions (past those it trained
//! on), or a few first tokens and a window at positions within the cache
//! (StreamingLLM's attention sinks); and the loss at every position of a
//! long text, read through such a cache.

use super::generate::MAX_GENERATED;
use super::kv::LmCache;
use super::model::LanguageModel;
use crate::check::check_total;
use crate::decoder::Positions;
use crate::error::AttnError;

// ANCHOR: streaming
/// Which keys a rotary model's cache keeps as it reads a long text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forgetting {
    /// The last `window` tokens, at their positions in the text: with a
    /// window as long as the text, nothing is forgotten, and the positions
    /// run past those the model trained on.
    Window(usize),
    /// The first `sinks` tokens and the last `window`, numbered by their
    /// places in the cache, so that no distance exceeds `sinks + window − 1`.
    Sinks {
        /// First tokens kept for ever.
        sinks: usize,
        /// Last tokens kept.
        window: usize,
    },
}

impl LanguageModel<f32> {
    /// An empty cache that forgets as `forgetting` says, allocated at once.
    /// Rotary positions only: a learned position table has no row past the
    /// context.
    pub fn new_cache_forgetting(&self, forgetting: Forgetting) -> Result<LmCache, AttnError> {
        let c = self.config();
        if c.positions == Positions::Learned {
            return Err(AttnError::InvalidArgument {
                name: "forgetting cache",
                value: c.context as f64,
                requirement: "needs rotary positions or none: learned ones stop at the context",
            });
        }
        let (sinks, window, in_cache_positions) = match forgetting {
            Forgetting::Window(window) => (0, window, false),
            Forgetting::Sinks { sinks, window } => (sinks, window, true),
        };
        self.cache_keeping(sinks, window, in_cache_positions)
    }

    /// The loss (in nats) of predicting each token of `text` after the
    /// first from everything before it, read one token at a time through
    /// `cache`: `text.len() − 1` losses, position by position.
    pub fn losses_through(
        &self,
        text: &[usize],
        mut cache: LmCache,
    ) -> Result<Vec<f64>, AttnError> {
        self.check_token_ids("text", text)?;
        self.check_cache(&cache)?;
        check_total("the text", &[text.len()], MAX_GENERATED)?;
        let mut losses = Vec::with_capacity(text.len().saturating_sub(1));
        for pair in text.windows(2) {
            let logits = self.step(pair[0], &mut cache)?;
            let largest = logits.iter().fold(f32::NEG_INFINITY, |m, &x| m.max(x)) as f64;
            let sum: f64 = logits.iter().map(|&x| (x as f64 - largest).exp()).sum();
            losses.push(largest + sum.ln() - logits[pair[1]] as f64);
        }
        Ok(losses)
    }
}
// ANCHOR_END: streaming
