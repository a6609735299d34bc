//! Chapter 12's printed reports on the trained models. Each formats values
//! the caller has computed once (the example prints them, the numbers test
//! quotes them and checks the same values).

use crate::error::ReportError;
use crate::show::table;
use attn::model::{
    accuracy, check_examples, greedy_decode, inputs_and_targets, most_probable, ModelConfig,
    TinyTransformer, SEP,
};

/// The committed training log, `book/data/ch12-training.csv`: `(step,
/// loss, held-out exact accuracy where it was measured)`.
pub fn training_log() -> Result<Vec<(usize, f64, Option<f64>)>, ReportError> {
    let file = "ch12-training.csv";
    let rows = crate::measurements::numeric_rows(file)?;
    rows.into_iter()
        .map(|r| match r.as_slice() {
            [Some(step), Some(loss), exact] => Ok((*step as usize, *loss, *exact)),
            _ => Err(crate::measurements::bad(
                file,
                format!("a row {r:?} without a step and a loss"),
            )),
        })
        .collect()
}

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
    tokens.iter().map(|&t| token(t)).collect::<Vec<_>>().join(" ")
}

/// Held-out exact and per-digit accuracy (from [`attn::model::accuracy`]),
/// and the first three examples of `test` decoded greedily.
pub fn accuracy_report(
    net: &TinyTransformer,
    test: &[Vec<usize>],
    (exact, digits): (f64, f64),
) -> Result<String, ReportError> {
    let k = ModelConfig::of(net)?.k;
    let mut out = format!("exact-sequence accuracy {exact:.4}, per-digit accuracy {digits:.4}");
    let prompts: Vec<Vec<usize>> = test.iter().take(3).map(|e| e[..=k].to_vec()).collect();
    for (prompt, answer) in prompts.iter().zip(greedy_decode(net, &prompts)?) {
        out += &format!("\n{}  →  {}", show_tokens(prompt), show_tokens(&answer));
    }
    Ok(out)
}

/// The mean weight on the mirrored digit ([`mirror_attention`]),
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
/// blocks (`after[depth]`, from [`accuracy_after`]).
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

/// [`digit_attention`] of each named model, per block and head,
/// with its uniform baseline ([`uniform_target_share`]).
pub fn digit_attention_report(models: &[(&str, &[Vec<DigitAttention>], f64)]) -> String {
    let mut out = String::from(
        "weight on prompt digits equal to / smaller than / larger than the next answer digit:",
    );
    for &(name, split, _) in models {
        for (l, heads) in split.iter().enumerate() {
            let cells: Vec<String> = heads
                .iter()
                .map(|a| format!("{:.3} / {:.3} / {:.3}", a.on_target, a.on_smaller, a.on_larger))
                .collect();
            out += &format!("\n{name:>7}, block {}: heads {}", l + 1, cells.join(", "));
        }
    }
    let baselines: Vec<String> =
        models.iter().map(|(name, _, share)| format!("{share:.3} ({name})")).collect();
    out +=
        &format!("\nuniform attention would put {} on the equal digits", baselines.join(" and "));
    out
}

/// Mean attention weight on the mirrored input position: for the answer's
/// `j`-th prediction (query position `k + j`), the weight on key `k − 1 − j`,
/// the digit it must output next. Per block and head, averaged over
/// `examples`.
pub fn mirror_attention(
    net: &TinyTransformer,
    examples: &[Vec<usize>],
) -> Result<Vec<Vec<f64>>, ReportError> {
    let k = ModelConfig::of(net)?.k;
    check_examples(examples, k)?;
    let (inputs, _) = inputs_and_targets(examples, k)?;
    let fwd = net.forward(&inputs)?;
    let mirror = |block, head| {
        let mut total = 0.0;
        for b in 0..inputs.len() {
            let w = fwd.weights(block, b, head)?;
            total += (0..k).map(|j| w[[k + j, k - 1 - j]]).sum::<f64>() / k as f64;
        }
        Ok(total / inputs.len() as f64)
    };
    per_block_and_head(net, mirror)
}

/// `f(block, head)` for every block and head of `net`, one row a block.
fn per_block_and_head<T>(
    net: &TinyTransformer,
    f: impl Fn(usize, usize) -> Result<T, ReportError>,
) -> Result<Vec<Vec<T>>, ReportError> {
    let (layers, heads) = (net.config().layers, net.config().heads);
    (0..layers).map(|l| (0..heads).map(|h| f(l, h)).collect()).collect()
}

/// Where an answer step's attention goes among the prompt digits, by value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DigitAttention {
    /// Weight on the prompt positions holding the digit to output next.
    pub on_target: f64,
    /// Weight on the prompt positions holding smaller digits.
    pub on_smaller: f64,
    /// Weight on the prompt positions holding larger digits.
    pub on_larger: f64,
}

/// For the answer's `j`-th prediction (query position `k + j`), how the
/// attention weight over the `k` prompt digits splits by value: on digits
/// equal to the one to output next, smaller, larger. A lookup by content
/// puts its weight on the first, wherever those digits sit. Per block and
/// head, averaged over the answer steps and `examples`.
pub fn digit_attention(
    net: &TinyTransformer,
    examples: &[Vec<usize>],
) -> Result<Vec<Vec<DigitAttention>>, ReportError> {
    let k = ModelConfig::of(net)?.k;
    check_examples(examples, k)?;
    let (inputs, _) = inputs_and_targets(examples, k)?;
    let fwd = net.forward(&inputs)?;
    let split = |block, head| {
        let mut sums = [0.0; 3];
        for (b, e) in examples.iter().enumerate() {
            let w = fwd.weights(block, b, head)?;
            for j in 0..k {
                let target = e[k + 1 + j];
                for (i, &digit) in e[..k].iter().enumerate() {
                    let slot = match digit.cmp(&target) {
                        std::cmp::Ordering::Equal => 0,
                        std::cmp::Ordering::Less => 1,
                        std::cmp::Ordering::Greater => 2,
                    };
                    sums[slot] += w[[k + j, i]];
                }
            }
        }
        let n = (examples.len() * k) as f64;
        Ok(DigitAttention {
            on_target: sums[0] / n,
            on_smaller: sums[1] / n,
            on_larger: sums[2] / n,
        })
    };
    per_block_and_head(net, split)
}

/// The weight a uniform head would put on the prompt positions holding the
/// digit to output next: at answer step `j` the query sees `k + j + 1`
/// keys. The baseline for [`digit_attention`]'s `on_target`.
pub fn uniform_target_share(examples: &[Vec<usize>], k: usize) -> Result<f64, ReportError> {
    check_examples(examples, k)?;
    let mut total = 0.0;
    for e in examples {
        for j in 0..k {
            let matches = e[..k].iter().filter(|&&d| d == e[k + 1 + j]).count();
            total += matches as f64 / (k + j + 1) as f64;
        }
    }
    Ok(total / (examples.len() * k) as f64)
}

/// How often the residual stream after the first `depth` blocks, read out
/// through the final LayerNorm and head, already predicts the right answer
/// digit (teacher-forced, every answer position of every example).
pub fn accuracy_after(
    net: &TinyTransformer,
    examples: &[Vec<usize>],
    depth: usize,
) -> Result<f64, ReportError> {
    let k = ModelConfig::of(net)?.k;
    check_examples(examples, k)?;
    let (inputs, targets) = inputs_and_targets(examples, k)?;
    let fwd = net.forward_through(&inputs, depth)?;
    let logits = fwd.logits();
    let (mut right, mut total) = (0, 0);
    for (row, target) in logits.rows().into_iter().zip(&targets) {
        if let Some(t) = *target {
            right += usize::from(most_probable(&row) == t);
            total += 1;
        }
    }
    Ok(right as f64 / total as f64)
}

/// One row of [`ablations`]: what was removed, and the exact and per-digit
/// accuracy without it.
pub type Ablation = (String, f64, f64);

/// Held-out exact and per-digit accuracy (greedy) of `net` with heads
/// removed: none, then for each block both its heads and each one alone
/// (`(block, head)` counted from 1). Each row: what was removed, and the
/// accuracies.
pub fn ablations(
    net: &TinyTransformer,
    examples: &[Vec<usize>],
) -> Result<Vec<Ablation>, ReportError> {
    let c = net.config();
    let mut sets = vec![("none".to_string(), Vec::new())];
    for block in 1..=c.layers {
        let all: Vec<(usize, usize)> = (1..=c.heads).map(|h| (block, h)).collect();
        sets.push((format!("block {block}, all heads"), all));
        for head in 1..=c.heads {
            sets.push((format!("block {block}, head {head}"), vec![(block, head)]));
        }
    }
    sets.into_iter()
        .map(|(name, removed)| {
            let (exact, digits) = accuracy(&net.without_heads(&removed)?, examples)?;
            Ok((name, exact, digits))
        })
        .collect()
}

/// The table of [`ablations`] for each named model, side by side.
pub fn ablation_report(models: &[(&str, &[Ablation])]) -> String {
    let rows: Vec<Vec<String>> = (0..models[0].1.len())
        .map(|i| {
            let mut row = vec![models[0].1[i].0.clone()];
            for (_, rows) in models {
                row.push(format!("{:.4}", rows[i].1));
                row.push(format!("{:.4}", rows[i].2));
            }
            row
        })
        .collect();
    let mut header = vec!["heads removed".to_string()];
    for (name, _) in models {
        header.push(format!("{name}: exact"));
        header.push(format!("{name}: per digit"));
    }
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    table(&header, &rows)
}
