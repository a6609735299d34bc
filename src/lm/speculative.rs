//! Speculative decoding (Leviathan et al., 2023; Chen et al., 2023): a
//! small draft proposes the next `k` tokens, one at a time; the target
//! reads them all and keeps each draft token `x` with probability
//! `min(1, p(x)/q(x))`, `p` its own distribution and `q` the draft's. At
//! the first it rejects, it draws a token from what the draft
//! under-proposes, `max(0, p − q)` renormalised, and the round ends; if it
//! keeps all `k`, it draws one more from its own distribution. Each token
//! written is then distributed exactly as the target's alone.

use ndarray_rand::rand::{rngs::StdRng, Rng, SeedableRng};

use super::corpus::Bigram;
use super::model::LanguageModel;
use super::paged::{PagedKv, Sequence};
use super::sample::{draw, Sampler};
use crate::error::AttnError;

/// The most draft tokens a round proposes.
pub const MAX_DRAFT: usize = 64;

/// The tokens a block holds in the paged caches of the target and of a
/// model draft.
const BLOCK: usize = 16;

// ANCHOR: accept
/// The probability of keeping a draft token `x` drawn from the draft's
/// distribution `q` (so `q(x) > 0`) when the target's is `p`:
/// `min(1, p(x) / q(x))`.
pub fn acceptance(p: &[f64], q: &[f64], x: usize) -> Result<f64, AttnError> {
    check_pair(p, q)?;
    check_draft_token(q, x)?;
    Ok(if p[x] >= q[x] { 1.0 } else { p[x] / q[x] })
}

/// What to draw from when a draft token is rejected: the target's
/// probability that the draft under-proposes, `max(0, p − q)`,
/// renormalised (`p` itself if `p = q`, when nothing is ever rejected).
pub fn residual(p: &[f64], q: &[f64]) -> Result<Vec<f64>, AttnError> {
    check_pair(p, q)?;
    let r: Vec<f64> = p.iter().zip(q).map(|(p, q)| (p - q).max(0.0)).collect();
    let total: f64 = r.iter().sum();
    if total == 0.0 {
        return Ok(p.to_vec());
    }
    Ok(r.iter().map(|r| r / total).collect())
}

/// What the target does with a draft token `x`: keeps it if the uniform
/// draw `u_keep` falls below its [`acceptance`], else replaces it with
/// the token the uniform draw `u_draw` picks from the [`residual`].
pub fn verify(
    p: &[f64],
    q: &[f64],
    x: usize,
    [u_keep, u_draw]: [f64; 2],
) -> Result<Verdict, AttnError> {
    check_uniforms([u_keep, u_draw])?;
    if u_keep < acceptance(p, q, x)? {
        return Ok(Verdict::Kept(x));
    }
    Ok(Verdict::Replaced(draw(&residual(p, q)?, u_draw)))
}
// ANCHOR_END: accept

/// The target's answer to a draft token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The draft token, kept.
    Kept(usize),
    /// The token drawn in its place, which ends the round.
    Replaced(usize),
}

impl Verdict {
    /// The token written.
    pub fn token(self) -> usize {
        match self {
            Verdict::Kept(x) | Verdict::Replaced(x) => x,
        }
    }
}

/// Two distributions over one vocabulary.
fn check_pair(p: &[f64], q: &[f64]) -> Result<(), AttnError> {
    if p.len() != q.len() || p.is_empty() {
        return Err(AttnError::ShapesDiffer {
            what: "the target's and the draft's distributions",
            left: (1, p.len()),
            right: (1, q.len()),
        });
    }
    for (name, d) in [("the target's distribution", p), ("the draft's distribution", q)] {
        let sum: f64 = d.iter().sum();
        if d.iter().any(|x| !(x.is_finite() && *x >= 0.0)) || (sum - 1.0).abs() > 1e-9 {
            return Err(AttnError::InvalidArgument {
                name,
                value: sum,
                requirement: "must be finite, non-negative probabilities that sum to 1 (the value is their sum)",
            });
        }
    }
    Ok(())
}

/// A draft token the draft could have drawn from `q`: in the vocabulary,
/// with `q(x) > 0`.
fn check_draft_token(q: &[f64], x: usize) -> Result<(), AttnError> {
    if q.get(x).is_none_or(|&q_x| q_x == 0.0) {
        return Err(AttnError::OutOfRange {
            name: "draft token",
            value: x,
            requirement: "must be one the draft could draw (q(x) > 0), of a vocabulary of size",
            limit: q.len(),
        });
    }
    Ok(())
}

/// Uniform draws must lie in `[0, 1)`.
fn check_uniforms(draws: [f64; 2]) -> Result<(), AttnError> {
    match draws.into_iter().find(|u| !(0.0..1.0).contains(u)) {
        Some(u) => Err(AttnError::InvalidArgument {
            name: "uniform draw",
            value: u,
            requirement: "must be in [0, 1)",
        }),
        None => Ok(()),
    }
}

/// What proposes the tokens: the distribution of the token after `text`.
pub trait Draft {
    /// The draft's distribution of the next token, as `sampler` shapes it.
    fn next(&mut self, text: &[usize], sampler: &Sampler) -> Result<Vec<f64>, AttnError>;
}

/// A character bigram draft: it looks at the last character only.
impl Draft for Bigram {
    fn next(&mut self, text: &[usize], sampler: &Sampler) -> Result<Vec<f64>, AttnError> {
        let last = *text.last().ok_or(AttnError::Empty { name: "text", shape: (1, 0) })?;
        let logits: Vec<f32> = Bigram::next(self, last)?.iter().map(|p| p.ln() as f32).collect();
        sampler.distribution(&logits)
    }
}

/// A language model reading the text through its own paged cache: a
/// smaller model than the target, as a draft.
#[derive(Debug)]
pub struct ModelDraft<'a> {
    model: &'a LanguageModel<f32>,
    kv: PagedKv,
    sequence: Sequence,
}

impl<'a> ModelDraft<'a> {
    /// `model` as a draft, with a cache of its whole context.
    pub fn new(model: &'a LanguageModel<f32>) -> Result<Self, AttnError> {
        let context = model.config().context;
        let mut kv = model.new_paged_cache(context.div_ceil(BLOCK), BLOCK)?;
        let sequence = kv.start(&[])?;
        Ok(ModelDraft { model, kv, sequence })
    }
}

impl Draft for ModelDraft<'_> {
    fn next(&mut self, text: &[usize], sampler: &Sampler) -> Result<Vec<f64>, AttnError> {
        let from = text.len().saturating_sub(1); // the last token's logits
        let logits = read_to_end(self.model, (text, from), &mut self.sequence, &mut self.kv)?;
        sampler.distribution(logits.last().expect("at least one token read"))
    }
}

/// Brings `sequence` to `text`: forgets what it read past their common
/// prefix, and at least from `from` on, reads the rest, and returns the
/// logits of every token read, the last of `text`'s last.
fn read_to_end(
    model: &LanguageModel<f32>,
    (text, from): (&[usize], usize),
    sequence: &mut Sequence,
    kv: &mut PagedKv,
) -> Result<Vec<Vec<f32>>, AttnError> {
    if text.is_empty() {
        return Err(AttnError::Empty { name: "text", shape: (1, 0) });
    }
    let common = sequence.tokens().iter().zip(text).take_while(|(a, b)| a == b).count();
    kv.truncate(sequence, common.min(from))?;
    let reads: Vec<(usize, usize)> = text[sequence.len()..].iter().map(|&t| (0, t)).collect();
    let logits = model.read_paged(&reads, &mut [sequence], kv)?; // in one pass
    Ok(logits.rows().into_iter().map(|row| row.to_vec()).collect())
}

/// What a run of speculative decoding did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Speculation {
    /// Rounds: the target's passes over a draft.
    pub rounds: usize,
    /// Draft tokens proposed.
    pub proposed: usize,
    /// Draft tokens kept.
    pub kept: usize,
}

impl LanguageModel<f32> {
    // ANCHOR: speculate
    /// `prompt` followed by `count` tokens written by this model (the
    /// target) with `draft` proposing up to `k` at a time, drawn as
    /// `sampler` says with a random source seeded by `seed`; and what the
    /// rounds did. The whole text must fit the target's context.
    pub fn generate_speculative(
        &self,
        (prompt, count): (&[usize], usize),
        (sampler, seed): (&Sampler, u64),
        draft: &mut impl Draft,
        k: usize,
    ) -> Result<(Vec<usize>, Speculation), AttnError> {
        self.check_speculation(prompt, count, k)?;
        let (mut rng, mut stats) = (StdRng::seed_from_u64(seed), Speculation::default());
        let mut kv = self.new_paged_cache(self.config().context.div_ceil(BLOCK), BLOCK)?;
        let (mut target, mut text) = (kv.start(&[])?, prompt.to_vec());
        let end = prompt.len() + count;
        while text.len() < end {
            let drafts = k.min(end - text.len() - 1); // the round writes at most drafts + 1
            let (start, mut proposed, mut q) = (text.len(), text.clone(), Vec::new());
            for _ in 0..drafts {
                q.push(draft.next(&proposed, sampler)?);
                proposed.push(draw(q.last().expect("just pushed"), rng.random()));
            }
            // The target reads the last token of the text and the k drafts.
            let read = read_to_end(self, (&proposed, text.len() - 1), &mut target, &mut kv)?;
            let p: Vec<Vec<f64>> = read[read.len() - drafts - 1..] // at least drafts + 1 read
                .iter()
                .map(|logits| sampler.distribution(logits))
                .collect::<Result<_, _>>()?;
            let mut replaced = false;
            for (i, q) in q.iter().enumerate() {
                let verdict = verify(&p[i], q, proposed[start + i], [rng.random(), rng.random()])?;
                text.push(verdict.token());
                if let Verdict::Replaced(_) = verdict {
                    replaced = true;
                    break;
                }
                stats.kept += 1;
            }
            if !replaced {
                text.push(draw(&p[drafts], rng.random())); // all kept: one more, the target's own
            }
            stats.rounds += 1;
            stats.proposed += drafts;
        }
        kv.finish(target)?;
        Ok((text, stats))
    }
    // ANCHOR_END: speculate

    fn check_speculation(&self, prompt: &[usize], count: usize, k: usize) -> Result<(), AttnError> {
        if prompt.is_empty() {
            return Err(AttnError::Empty { name: "prompt", shape: (1, 0) });
        }
        self.check_token_ids("prompt", prompt)?;
        if k > MAX_DRAFT {
            return Err(AttnError::OutOfRange {
                name: "k",
                value: k,
                requirement: "draft tokens a round must be at most",
                limit: MAX_DRAFT,
            });
        }
        let total = prompt.len().saturating_add(count);
        if total > self.config().context {
            return Err(AttnError::TooLong {
                what: "the prompt and the tokens to write (speculative decoding does not slide)",
                len: total,
                max: self.config().context,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
