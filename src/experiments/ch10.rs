//! Chapter 10's printed reports on the trained models.

use crate::error::AttnError;
use crate::model::{
    accuracy, accuracy_after, digit_attention, greedy_decode, uniform_target_share,
    TinyTransformer, SEP,
};

fn token(t: usize) -> String {
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

/// Held-out exact and per-digit accuracy, and the first three examples
/// decoded greedily.
pub fn accuracy_report(net: &TinyTransformer, test: &[Vec<usize>]) -> Result<String, AttnError> {
    let k = net.config.k;
    let (exact, digits) = accuracy(net, test)?;
    let mut out = format!("exact-sequence accuracy {exact:.4}, per-digit accuracy {digits:.4}");
    let prompts: Vec<Vec<usize>> = test.iter().take(3).map(|e| e[..=k].to_vec()).collect();
    for (prompt, answer) in prompts.iter().zip(greedy_decode(net, &prompts)?) {
        out += &format!("\n{}  →  {}", show_tokens(prompt), show_tokens(&answer));
    }
    Ok(out)
}

/// The fraction of answer digits the residual stream predicts after each
/// number of blocks (see [`accuracy_after`]).
pub fn residual_report(net: &TinyTransformer, test: &[Vec<usize>]) -> Result<String, AttnError> {
    let mut lines = Vec::new();
    for depth in 0..=net.config.layers {
        let right = accuracy_after(net, test, depth)?;
        let blocks = if depth == 1 { "block" } else { "blocks" };
        lines.push(format!(
            "after {depth} {blocks}: {right:.4} of the answer digits predicted"
        ));
    }
    Ok(lines.join("\n"))
}

/// [`digit_attention`] of each named model, per block and head, and the
/// uniform baseline of each.
pub fn digit_attention_report(
    models: &[(&str, &TinyTransformer, &[Vec<usize>])],
) -> Result<String, AttnError> {
    let mut out = String::from(
        "weight on prompt digits equal to / smaller than / larger than the next answer digit:",
    );
    let mut baselines = Vec::new();
    for &(name, net, examples) in models {
        for (l, heads) in digit_attention(net, examples)?.iter().enumerate() {
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
        let share = uniform_target_share(examples, net.config.k)?;
        baselines.push(format!("{share:.3} ({name})"));
    }
    out += &format!(
        "\nuniform attention would put {} on the equal digits",
        baselines.join(" and ")
    );
    Ok(out)
}
