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
