//! Padding pairs of different lengths into one batch.

use super::{BOS, EOS, PAD};
use crate::error::AttnError;

/// A padded batch: sources padded with [`PAD`] to the longest, decoder
/// inputs `BOS target` and outputs `target EOS` padded likewise, and each
/// pair's real lengths.
#[derive(Debug, Clone, PartialEq)]
pub struct Batch {
    /// `B×S` source ids.
    pub sources: Vec<Vec<usize>>,
    /// `B×T` decoder inputs.
    pub inputs: Vec<Vec<usize>>,
    /// `B·T` next-token targets, `None` at padding.
    pub targets: Vec<Option<usize>>,
    /// Real source lengths.
    pub source_lengths: Vec<usize>,
}

// ANCHOR: batch
/// Pads `pairs` (source ids, target ids) into a [`Batch`].
pub fn batch(pairs: &[(&[usize], &[usize])]) -> Result<Batch, AttnError> {
    if pairs.is_empty() || pairs.iter().any(|(s, _)| s.is_empty()) {
        return Err(AttnError::InvalidArgument {
            name: "pairs",
            value: pairs.len() as f64,
            requirement: "must be at least one, each with a non-empty source",
        });
    }
    let s_max = pairs.iter().map(|(s, _)| s.len()).max().unwrap_or(0);
    let t_max = pairs.iter().map(|(_, t)| t.len() + 1).max().unwrap_or(0);
    let pad = |x: Vec<usize>, len: usize| {
        let mut x = x;
        x.resize(len, PAD);
        x
    };
    let mut out = Batch {
        sources: Vec::new(),
        inputs: Vec::new(),
        targets: Vec::new(),
        source_lengths: Vec::new(),
    };
    for (source, target) in pairs {
        out.sources.push(pad(source.to_vec(), s_max));
        out.source_lengths.push(source.len());
        let mut input = vec![BOS];
        input.extend_from_slice(target);
        out.inputs.push(pad(input, t_max));
        let mut next: Vec<Option<usize>> = target.iter().map(|&t| Some(t)).collect();
        next.push(Some(EOS));
        next.resize(t_max, None);
        out.targets.extend(next);
    }
    Ok(out)
}
// ANCHOR_END: batch

/// Checks a batch against a model: tokens in the vocabularies
/// `(source, target)`, lengths within `max_lengths` (the longest source and
/// the longest decoder input), one target per decoder input. Returns
/// `(S, T)`.
pub(crate) fn check_batch(
    batch: &Batch,
    (s_max, t_max): (usize, usize),
    (source_vocab, target_vocab): (usize, usize),
) -> Result<(usize, usize), AttnError> {
    let rows = |x: &[Vec<usize>]| x.first().map_or(0, Vec::len);
    let (s, t) = (rows(&batch.sources), rows(&batch.inputs));
    let b = batch.sources.len();
    let ragged = |x: &[Vec<usize>], n: usize| x.iter().any(|r| r.len() != n);
    if b == 0
        || batch.inputs.len() != b
        || batch.source_lengths.len() != b
        || batch.targets.len() != b * t
        || ragged(&batch.sources, s)
        || ragged(&batch.inputs, t)
        || s == 0
        || t == 0
        || s > s_max
        || t > t_max
        || batch.source_lengths.iter().any(|&l| l == 0 || l > s)
    {
        return Err(AttnError::InvalidArgument {
            name: "batch",
            value: b as f64,
            requirement: "must hold at least one pair, padded to common lengths no longer \
                          than the model's longest, with one target per decoder input",
        });
    }
    let outside = |x: &[Vec<usize>], v: usize| x.iter().flatten().find(|&&id| id >= v).copied();
    let bad = outside(&batch.sources, source_vocab)
        .or(outside(&batch.inputs, target_vocab))
        .or(batch.targets.iter().flatten().find(|&&id| id >= target_vocab).copied());
    if let Some(token) = bad {
        return Err(AttnError::InvalidArgument {
            name: "token",
            value: token as f64,
            requirement: "must be in the model's vocabulary",
        });
    }
    Ok((s, t))
}
