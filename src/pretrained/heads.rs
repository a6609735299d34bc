//! What the heads of a pretrained encoder do (chapter 15): statistics of
//! each head's weights on a sentence, sentence embeddings and their
//! similarities, and what removing one head changes.

use ndarray::{Array2, ArrayRef2};

use super::{cosine, Bert, Tokens};
use crate::error::AttnError;
use crate::scaling::entropy;

// ANCHOR: head_statistics
/// What one head does on one sentence, from its `n×n` weights (`[CLS]` is
/// token 0 and `[SEP]` token `n − 1`), each a mean over queries.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct HeadStatistics {
    /// Entropy of a query's weights, in nats (`ln n` if uniform).
    pub entropy: f64,
    /// Weight on `[CLS]`.
    pub cls: f64,
    /// Weight on `[SEP]`.
    pub sep: f64,
    /// Weight a word's token puts on the token just before it (the
    /// sentence's own tokens only: neither `[CLS]` nor `[SEP]`, on either side).
    pub previous: f64,
    /// Weight a word's token puts on the token just after it (likewise).
    pub next: f64,
}

/// The statistics of one head's weights `w` (`n×n`, `n ≥ 4`: two special
/// tokens and at least two of the sentence's own).
pub fn head_statistics(w: &ArrayRef2<f32>) -> Result<HeadStatistics, AttnError> {
    let n = w.nrows();
    if n < 4 || w.ncols() != n {
        return Err(AttnError::ShapesDiffer {
            what: "one head's weights (n×n, n ≥ 4) and a square",
            left: w.dim(),
            right: (n.max(4), n.max(4)),
        });
    }
    crate::check::check_finite("the head's weights", w)?; // NaN would pass into every mean
    let mean =
        |values: Vec<f32>| values.iter().map(|&x| f64::from(x)).sum::<f64>() / values.len() as f64;
    let entropies: Vec<f64> = w.rows().into_iter().map(|row| entropy(&row)).collect();
    Ok(HeadStatistics {
        entropy: entropies.iter().sum::<f64>() / n as f64,
        cls: mean(w.column(0).to_vec()),
        sep: mean(w.column(n - 1).to_vec()),
        previous: mean((2..n - 1).map(|i| w[[i, i - 1]]).collect()),
        next: mean((1..n - 2).map(|i| w[[i, i + 1]]).collect()),
    })
}
// ANCHOR_END: head_statistics

/// The sentence embeddings of `sentences`, one per row.
pub fn embeddings(bert: &Bert, sentences: &[Tokens]) -> Result<Array2<f32>, AttnError> {
    let mut rows = Array2::zeros((sentences.len(), bert.d_model()));
    for (tokens, mut row) in sentences.iter().zip(rows.rows_mut()) {
        row.assign(&bert.sentence_embedding(&tokens.ids)?);
    }
    Ok(rows)
}

/// Checks that the rows of `e` are pairs, at least one: a mean over no pair
/// would be NaN.
fn check_pairs(e: &Array2<f32>) -> Result<(), AttnError> {
    if e.nrows() < 2 || e.nrows() % 2 == 1 {
        let (value, requirement) = (e.nrows() as f64, "must be pairs, at least one: an even count");
        return Err(AttnError::InvalidArgument { name: "sentences", value, requirement });
    }
    Ok(())
}

/// The cosine similarity of rows `2i` and `2i + 1` of `e` (the pairs).
pub fn pair_similarities(e: &Array2<f32>) -> Result<Vec<f32>, AttnError> {
    check_pairs(e)?;
    (0..e.nrows() / 2).map(|i| cosine(&e.row(2 * i), &e.row(2 * i + 1))).collect()
}

/// The cosine similarity of each pair's first sentence with the next pair's
/// second (the last pair's with the first's): sentences that are unrelated.
pub fn unrelated_similarities(e: &Array2<f32>) -> Result<Vec<f32>, AttnError> {
    check_pairs(e)?;
    let pairs = e.nrows() / 2;
    (0..pairs).map(|i| cosine(&e.row(2 * i), &e.row(2 * ((i + 1) % pairs) + 1))).collect()
}

// ANCHOR: ablation
/// What removing one head does to the paraphrases' embeddings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ablation {
    /// Mean over the sentences of `1 − cos(e, e')`, `e'` the embedding
    /// without the head: how far the embeddings move.
    pub shift: f64,
    /// The change in the pairs' mean cosine similarity.
    pub similarity_change: f64,
}

/// [`Ablation`] of every head, `result[layer][head]`, over `paraphrases`
/// (tokenised pairs, first and second in turn).
pub fn ablations(bert: &Bert, paraphrases: &[Tokens]) -> Result<Vec<Vec<Ablation>>, AttnError> {
    let full = embeddings(bert, paraphrases)?;
    let mean = |v: Vec<f32>| v.iter().map(|&x| f64::from(x)).sum::<f64>() / v.len() as f64;
    let full_similarity = mean(pair_similarities(&full)?);
    let mut result = Vec::new();
    for layer in 0..bert.layers().len() {
        let mut row = Vec::new();
        for head in 0..bert.h() {
            let ablated = embeddings(&bert.without_head(layer, head)?, paraphrases)?;
            let moved: Result<Vec<f32>, AttnError> = full
                .rows()
                .into_iter()
                .zip(ablated.rows())
                .map(|(e, e_ablated)| Ok(1.0 - cosine(&e, &e_ablated)?))
                .collect();
            row.push(Ablation {
                shift: mean(moved?),
                similarity_change: mean(pair_similarities(&ablated)?) - full_similarity,
            });
        }
        result.push(row);
    }
    Ok(result)
}
// ANCHOR_END: ablation

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_previous_token_head_scores_one_on_previous_and_zero_on_next() {
        // 6 tokens: [CLS] a b c d [SEP]; every word attends to the one before.
        let n = 6;
        let w = Array2::from_shape_fn((n, n), |(i, j)| match i {
            0 | 1 => f32::from(j == 0),
            _ => f32::from(j == i - 1),
        });
        let s = head_statistics(&w).unwrap();
        assert_eq!((s.previous, s.next, s.entropy), (1.0, 0.0, 0.0));
        assert!((s.cls - 2.0 / 6.0).abs() < 1e-12);
        let uniform = Array2::from_elem((n, n), 1.0 / n as f32);
        let u = head_statistics(&uniform).unwrap();
        assert!((u.entropy - (n as f64).ln()).abs() < 1e-6);
        assert!(head_statistics(&Array2::<f32>::zeros((3, 3))).is_err());
    }
}
