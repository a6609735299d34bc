//! What chapter 18 measures on a model: the loss and each block's
//! attention entropy at every position of long texts, and a passkey's
//! retrieval by distance. `cargo xtask train long` runs them on every
//! trained model; the chapter's tests run them on small ones.

use attn::error::AttnError;
use attn::exercises::ch18::row_entropies;
use attn::lm::{passkey, LanguageModel, SplitMix64, SHAKESPEARE_VOCAB};

use crate::ch17::fresh::cross_entropy;
use crate::error::ReportError;

/// The loss and attention entropy at each position of some texts, mean
/// over the texts.
#[derive(Debug, Clone, PartialEq)]
pub struct ByPosition {
    /// `loss[p]`: the loss (nats) of predicting the token after position
    /// `p` from positions `0..=p`.
    pub loss: Vec<f64>,
    /// `entropy[block][p]`: the entropy (nats) of the attention weights of
    /// the query at `p` over keys `0..=p`, mean over the block's heads.
    pub entropy: Vec<Vec<f64>>,
}

/// [`ByPosition`] over `texts` (token ids, each one longer than the length
/// read, `len + 1`), each read by `model` in one forward pass of `len`
/// tokens; `len` is at most the model's context.
pub fn by_position(
    model: &LanguageModel<f32>,
    texts: &[Vec<usize>],
    len: usize,
) -> Result<ByPosition, ReportError> {
    let config = model.config();
    if texts.is_empty() || texts.iter().any(|t| t.len() != len + 1) || len > config.context {
        return Err(AttnError::Mismatched {
            name: "texts read by position",
            requirement: "must be at least one, each one token longer than the length read, \
                          which is at most the model's context",
        }
        .into());
    }
    let mut loss = vec![0.0; len];
    let mut entropy = vec![vec![0.0; len]; config.layers];
    for text in texts {
        let fwd = model.forward(&[text[..len].to_vec()])?;
        for (p, l) in loss.iter_mut().enumerate() {
            *l += cross_entropy(&fwd.logits().row(p).to_vec(), text[p + 1]);
        }
        for (block, row) in entropy.iter_mut().enumerate() {
            for head in 0..config.heads {
                let each = row_entropies(fwd.weights(block, 0, head)?)?;
                for (e, h) in row.iter_mut().zip(each) {
                    *e += h / config.heads as f64;
                }
            }
        }
    }
    let count = texts.len() as f64;
    loss.iter_mut().for_each(|l| *l /= count);
    entropy.iter_mut().flatten().for_each(|e| *e /= count);
    Ok(ByPosition { loss, entropy })
}

/// The mean of `values` over buckets of `bucket` positions: `(first
/// position, mean)`, the last bucket possibly shorter.
pub fn buckets(values: &[f64], bucket: usize) -> Vec<(usize, f64)> {
    let bucket = bucket.max(1);
    values
        .chunks(bucket)
        .enumerate()
        .map(|(i, c)| (i * bucket, c.iter().sum::<f64>() / c.len() as f64))
        .collect()
}

/// The texts the chapter reads: `count` stretches of `len + 1` tokens of
/// `text`, evenly spaced, the first at its start.
pub fn long_texts(text: &[u8], count: usize, len: usize) -> Result<Vec<Vec<usize>>, ReportError> {
    if count == 0 || text.len() < len + 1 {
        return Err(AttnError::Mismatched {
            name: "long texts",
            requirement: "must be at least one, and the text at least one token longer than each",
        }
        .into());
    }
    let room = text.len() - (len + 1);
    Ok((0..count)
        .map(|i| {
            let start = i * room / count;
            text[start..start + len + 1].iter().map(|&t| t as usize).collect()
        })
        .collect())
}

/// The share of `count` passkey texts of `len` tokens, the key `distance`
/// tokens before the question, whose whole key `model` gives back (the
/// most likely token at every place of the answer). The texts are drawn
/// from `seed`; `batch` are read at a time.
pub fn passkey_accuracy(
    model: &LanguageModel<f32>,
    len: usize,
    distance: usize,
    (count, seed): (usize, u64),
    batch: usize,
) -> Result<f64, ReportError> {
    let mut rng = SplitMix64::new(seed);
    let texts: Vec<_> = (0..count)
        .map(|_| passkey(&mut rng, len, distance, SHAKESPEARE_VOCAB))
        .collect::<Result<_, _>>()?;
    let mut found = 0;
    for chunk in texts.chunks(batch.max(1)) {
        let inputs: Vec<Vec<usize>> = chunk.iter().map(|t| t.tokens.clone()).collect();
        let fwd = model.forward(&inputs)?;
        for (b, text) in chunk.iter().enumerate() {
            let right = (0..len).all(|p| match text.targets[p] {
                Some(target) => argmax(&fwd.logits().row(b * len + p).to_vec()) == target,
                None => true,
            });
            found += usize::from(right);
        }
    }
    Ok(found as f64 / count.max(1) as f64)
}

/// The index of the largest of `x` (the first of equals).
fn argmax(x: &[f32]) -> usize {
    let mut best = 0;
    for (i, &v) in x.iter().enumerate() {
        if v > x[best] {
            best = i;
        }
    }
    best
}
