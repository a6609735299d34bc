//! Using a trained model (chapter 12): greedy decoding and accuracy.

use ndarray::ArrayRef1;

use super::{check_examples, ModelConfig, TinyTransformer, VOCAB};
use crate::error::AttnError;

// ANCHOR: greedy
/// Greedy decoding: for each prompt (`k` digits and the separator), append
/// the most probable next token `k` times. Returns the `k` generated tokens
/// of each prompt.
pub fn greedy_decode(
    net: &TinyTransformer,
    prompts: &[Vec<usize>],
) -> Result<Vec<Vec<usize>>, AttnError> {
    let mut sequences: Vec<Vec<usize>> = prompts.to_vec();
    for _ in 0..ModelConfig::of(net)?.k {
        let fwd = net.forward(&sequences)?;
        let logits = fwd.logits();
        let t = sequences[0].len();
        for (b, sequence) in sequences.iter_mut().enumerate() {
            let last = logits.row(b * t + t - 1);
            sequence.push(most_probable(&last));
        }
    }
    Ok(sequences.iter().map(|s| s[prompts[0].len()..].to_vec()).collect())
}

/// The token with the largest logit in `logits` (the first, on a tie).
pub fn most_probable(logits: &ArrayRef1<f64>) -> usize {
    (0..VOCAB).fold(0, |best, j| if logits[j] > logits[best] { j } else { best })
}

// ANCHOR_END: greedy

/// Exact-sequence accuracy (every digit right) and per-digit accuracy of
/// greedy decoding on `examples` (each `2k + 1` tokens).
pub fn accuracy(net: &TinyTransformer, examples: &[Vec<usize>]) -> Result<(f64, f64), AttnError> {
    let k = ModelConfig::of(net)?.k;
    check_examples(examples, k)?;
    let prompts: Vec<Vec<usize>> = examples.iter().map(|e| e[..=k].to_vec()).collect();
    let outputs = greedy_decode(net, &prompts)?;
    let (mut exact, mut digits) = (0, 0);
    for (out, e) in outputs.iter().zip(examples) {
        let right = out.iter().zip(&e[k + 1..]).filter(|(a, b)| a == b).count();
        digits += right;
        exact += usize::from(right == k);
    }
    Ok((exact as f64 / examples.len() as f64, digits as f64 / (examples.len() * k) as f64))
}
