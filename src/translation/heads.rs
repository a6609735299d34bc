//! How alignment-like the encoder–decoder's cross-attention heads are
//! (chapter 13): where each head looks, against the word each target digit
//! translates.

use super::{alignment, batch, number_pair, RnnSeq2Seq, Seq2Seq, TranslationPair};
use crate::error::AttnError;
use crate::grad::Matrix;

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

/// How many digits of `gold` have as most-attended word, in weights `w`
/// (`digits × words`, of which the first `len` are real), the word that
/// names them.
fn aligned_digits(gold: &[Option<usize>], w: &Matrix, len: usize) -> usize {
    let real = |i: usize| w.row(i).slice_move(ndarray::s![..len]);
    let named = |(i, word): (usize, &Option<usize>)| *word == Some(most_attended(real(i)));
    gold.iter().enumerate().filter(|&x| named(x)).count()
}

/// `pairs` padded into one batch.
fn padded(pairs: &[TranslationPair]) -> Result<super::Batch, AttnError> {
    let refs: Vec<(&[usize], &[usize])> =
        pairs.iter().map(|p| (&p.source[..], &p.target[..])).collect();
    batch(&refs)
}

/// Checks what the alignment scores read: a model whose decoder attends
/// (not mean-pooled), and pairs that are their numbers' words and digits
/// (the reference alignment is the number's; a pair built by hand whose
/// words say another number would be scored against the wrong one).
fn check_scorable(bottleneck: bool, pairs: &[TranslationPair]) -> Result<(), AttnError> {
    if bottleneck {
        return Err(AttnError::InvalidArgument {
            name: "model",
            value: 0.0,
            requirement: "must attend to the source: a mean-pooled model has no alignment to score",
        });
    }
    for (i, pair) in pairs.iter().enumerate() {
        if number_pair(pair.number)? != *pair {
            return Err(AttnError::InvalidArgument {
                name: "pair",
                value: i as f64,
                requirement: "must be its number's words and digits (as number_pair makes it)",
            });
        }
    }
    Ok(())
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
    check_scorable(net.config().bottleneck, pairs)?;
    let c = net.config();
    let mut hits = vec![vec![0_usize; c.heads]; c.layers];
    let mut aligned = 0;
    for chunk in pairs.chunks(100) {
        let fwd = net.forward(&padded(chunk)?)?;
        for (b, pair) in chunk.iter().enumerate() {
            let gold = alignment(pair.number)?;
            aligned += gold.iter().flatten().count();
            for (l, layer_hits) in hits.iter_mut().enumerate() {
                for (h, head_hits) in layer_hits.iter_mut().enumerate() {
                    let w = fwd.cross_weights(l, b, h)?;
                    *head_hits += aligned_digits(&gold, w, pair.source.len());
                }
            }
        }
    }
    let share = |n: usize| n as f64 / aligned.max(1) as f64;
    Ok(hits.iter().map(|l| l.iter().map(|&n| share(n)).collect()).collect())
}
// ANCHOR_END: alignment_score

/// [`alignment_scores`] for a recurrent model's additive attention (one
/// head), or `None` for a model without attention.
pub fn rnn_alignment_score(
    net: &RnnSeq2Seq,
    pairs: &[TranslationPair],
) -> Result<Option<f64>, AttnError> {
    check_scorable(false, pairs)?;
    let (mut found, mut aligned) = (0, 0);
    for chunk in pairs.chunks(100) {
        let fwd = net.forward(&padded(chunk)?)?;
        for (b, pair) in chunk.iter().enumerate() {
            let Some(w) = fwd.weights(b) else {
                return Ok(None);
            };
            let gold = alignment(pair.number)?;
            aligned += gold.iter().flatten().count();
            found += aligned_digits(&gold, w, pair.source.len());
        }
    }
    Ok(Some(found as f64 / aligned.max(1) as f64))
}
