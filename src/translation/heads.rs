//! How alignment-like the encoder–decoder's cross-attention heads are
//! (chapter 13): where each head looks, against the word each target digit
//! translates.

use super::{alignment, batch, Seq2Seq, TranslationPair};
use crate::error::AttnError;

/// The index of the largest entry of `row` (the first of equals).
fn most_attended(row: ndarray::ArrayView1<f64>) -> usize {
    let mut best = 0;
    for (j, &w) in row.iter().enumerate() {
        if w > row[best] {
            best = j;
        }
    }
    best
}

// ANCHOR: alignment_score
/// How alignment-like each cross-attention head is, `[layer][head]`: over
/// the digits of `pairs` that some word names ([`alignment`]), the share
/// whose most-attended source word is that word. The decoder reads the
/// reference target (teacher forcing), so every head is scored on the
/// same positions.
pub fn alignment_scores(
    net: &Seq2Seq,
    pairs: &[TranslationPair],
) -> Result<Vec<Vec<f64>>, AttnError> {
    let c = net.config();
    let mut hits = vec![vec![0_usize; c.heads]; c.layers];
    let mut aligned = 0;
    for chunk in pairs.chunks(100) {
        let refs: Vec<(&[usize], &[usize])> = chunk
            .iter()
            .map(|p| (&p.source[..], &p.target[..]))
            .collect();
        let fwd = net.forward(&batch(&refs)?)?;
        for (b, pair) in chunk.iter().enumerate() {
            let gold = alignment(pair.number)?;
            aligned += gold.iter().flatten().count();
            for (l, layer_hits) in hits.iter_mut().enumerate() {
                for (h, head_hits) in layer_hits.iter_mut().enumerate() {
                    let w = fwd.cross_weights(l, b, h)?;
                    for (i, word) in gold.iter().enumerate() {
                        let row = w.row(i);
                        let real = row.slice(ndarray::s![..pair.source.len()]);
                        if *word == Some(most_attended(real)) {
                            *head_hits += 1;
                        }
                    }
                }
            }
        }
    }
    let share = |n: usize| n as f64 / aligned.max(1) as f64;
    Ok(hits
        .iter()
        .map(|l| l.iter().map(|&n| share(n)).collect())
        .collect())
}
// ANCHOR_END: alignment_score
