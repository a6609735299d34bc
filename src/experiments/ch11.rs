//! Chapter 11's printed reports on the trained models. Each formats values
//! the caller has computed once (the example prints them, the numbers test
//! quotes them and checks the same values).

use crate::error::AttnError;
use crate::model::{greedy_decode, DigitAttention, TinyTransformer, SEP};

/// A token as the book prints it: a digit, or `|` for the separator.
pub fn token(t: usize) -> String {
    if t == SEP {
        "|".into()
    } else {
        t.to_string()
    }
}

/// Space-separated tokens, the separator shown as `|`.
pub fn show_tokens(tokens: &[usize]) -> String {
    tokens
        .iter()
        .map(|&t| token(t))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Held-out exact and per-digit accuracy (from [`crate::model::accuracy`]),
/// and the first three examples of `test` decoded greedily.
pub fn accuracy_report(
    net: &TinyTransformer,
    test: &[Vec<usize>],
    (exact, digits): (f64, f64),
) -> Result<String, AttnError> {
    let k = net.config.k;
    let mut out = format!("exact-sequence accuracy {exact:.4}, per-digit accuracy {digits:.4}");
    let prompts: Vec<Vec<usize>> = test.iter().take(3).map(|e| e[..=k].to_vec()).collect();
    for (prompt, answer) in prompts.iter().zip(greedy_decode(net, &prompts)?) {
        out += &format!("\n{}  →  {}", show_tokens(prompt), show_tokens(&answer));
    }
    Ok(out)
}

/// The mean weight on the mirrored digit ([`crate::model::mirror_attention`]),
/// one line a block.
pub fn mirror_report(mirror: &[Vec<f64>]) -> String {
    let lines: Vec<String> = mirror
        .iter()
        .enumerate()
        .map(|(l, heads)| {
            let cells: Vec<String> = heads.iter().map(|w| format!("{w:.3}")).collect();
            format!("block {}: heads {}", l + 1, cells.join(", "))
        })
        .collect();
    lines.join("\n")
}

/// The fraction of answer digits the residual stream predicts after 0, 1, …
/// blocks (`after[depth]`, from [`crate::model::accuracy_after`]).
pub fn residual_report(after: &[f64]) -> String {
    let lines: Vec<String> = after
        .iter()
        .enumerate()
        .map(|(depth, right)| {
            let blocks = if depth == 1 { "block" } else { "blocks" };
            format!("after {depth} {blocks}: {right:.4} of the answer digits predicted")
        })
        .collect();
    lines.join("\n")
}

/// [`crate::model::digit_attention`] of each named model, per block and head,
/// with its uniform baseline ([`crate::model::uniform_target_share`]).
pub fn digit_attention_report(models: &[(&str, &[Vec<DigitAttention>], f64)]) -> String {
    let mut out = String::from(
        "weight on prompt digits equal to / smaller than / larger than the next answer digit:",
    );
    for &(name, split, _) in models {
        for (l, heads) in split.iter().enumerate() {
            let cells: Vec<String> = heads
                .iter()
                .map(|a| {
                    format!(
                        "{:.3} / {:.3} / {:.3}",
                        a.on_target, a.on_smaller, a.on_larger
                    )
                })
                .collect();
            out += &format!("\n{name:>7}, block {}: heads {}", l + 1, cells.join(", "));
        }
    }
    let baselines: Vec<String> = models
        .iter()
        .map(|(name, _, share)| format!("{share:.3} ({name})"))
        .collect();
    out += &format!(
        "\nuniform attention would put {} on the equal digits",
        baselines.join(" and ")
    );
    out
}
