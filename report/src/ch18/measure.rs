//! What chapter 18 measures on a model: the loss and each block's
//! attention entropy at every position of long texts, and a passkey's
//! retrieval by distance. `cargo xtask train long` runs them on every
//! trained model; the chapter's tests run them on small ones.

use attn::error::AttnError;
use attn::exercises::ch18::row_entropies;
use attn::lm::{greedy, passkey, LanguageModel, SplitMix64, SHAKESPEARE_VOCAB};

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
                Some(target) => greedy(&fwd.logits().row(b * len + p).to_vec()) == Ok(target),
                None => true,
            });
            found += usize::from(right);
        }
    }
    Ok(found as f64 / count.max(1) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use attn::lm::{LmConfig, Positions, SHAKESPEARE_MODEL};

    fn small(positions: Positions) -> LanguageModel<f32> {
        let config = LmConfig {
            context: 24,
            d_model: 16,
            heads: 2,
            kv_heads: 2,
            layers: 2,
            d_ff: 32,
            positions,
            ..SHAKESPEARE_MODEL
        };
        LanguageModel::new(config, 3).unwrap()
    }

    #[test]
    fn the_loss_by_position_averages_to_the_models_own_loss() {
        let text: Vec<u8> = (0..400u32).map(|i| ((i * 7 + i / 5) % 84) as u8).collect();
        let texts = long_texts(&text, 3, 24).unwrap();
        assert_eq!(texts[0][..], text[..25].iter().map(|&t| t as usize).collect::<Vec<_>>()[..]);
        assert_eq!(texts[2].len(), 25);
        for positions in [Positions::Rotary, Positions::Alibi, Positions::None] {
            let model = small(positions);
            let measured = by_position(&model, &texts, 24).unwrap();
            let inputs: Vec<Vec<usize>> = texts.iter().map(|t| t[..24].to_vec()).collect();
            let targets: Vec<Option<usize>> =
                texts.iter().flat_map(|t| t[1..].iter().map(|&x| Some(x))).collect();
            let whole = model.loss(&inputs, &targets).unwrap();
            let mean = measured.loss.iter().sum::<f64>() / 24.0;
            assert!((mean - whole).abs() < 1e-5, "{positions:?}: {mean} vs {whole}");
            // The first query sees one key: entropy 0; later ones at most ln(p + 1).
            for block in &measured.entropy {
                assert!(block[0].abs() < 1e-9);
                let bounded =
                    block.iter().enumerate().all(|(p, &e)| e <= ((p + 1) as f64).ln() + 1e-6);
                assert!(bounded && block[23] > 0.0, "{positions:?}: {block:?}");
            }
        }
    }

    #[test]
    fn buckets_average_and_bad_input_is_refused() {
        assert_eq!(buckets(&[1.0, 3.0, 5.0, 7.0, 9.0], 2), vec![(0, 2.0), (2, 6.0), (4, 9.0)]);
        let model = small(Positions::Rotary);
        let short = vec![vec![1; 10]];
        assert!(by_position(&model, &short, 24).is_err(), "texts shorter than read");
        assert!(by_position(&model, &[], 24).is_err(), "no texts");
        assert!(by_position(&model, &[vec![1; 41]], 40).is_err(), "past the context");
        assert!(long_texts(&[1, 2, 3], 1, 24).is_err(), "a text too short");
        assert!(long_texts(&[1; 100], 0, 24).is_err(), "no texts");
        let found = passkey_accuracy(&model, 24, 8, (4, 1), 2).unwrap();
        assert!((0.0..=1.0).contains(&found));
        assert!(passkey_accuracy(&model, 24, 40, (4, 1), 2).is_err(), "a distance past the text");
    }
}
