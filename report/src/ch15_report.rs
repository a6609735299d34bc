//! Chapter 15's printed reports, from the committed data
//! ([`super::ch15_data::Derived`]): the example prints them, the numbers
//! test quotes them.

use super::ch15::{heads_at_least, row_means, uniform_entropy, Corpus, FIGURE_SENTENCE};
use super::ch15_data::Derived;
use crate::error::ReportError;
use crate::show::table;
use attn::error::AttnError;
use attn::pretrained::Tokens;

/// The encoder's tensors: the embeddings', the first layer's (the other
/// five have the same names and shapes), and the parameter counts.
pub fn architecture_report(d: &Derived) -> String {
    let shown =
        |name: &str| !name.starts_with("encoder.layer.") || name.starts_with("encoder.layer.0.");
    let rows: Vec<Vec<String>> = d
        .tensors
        .iter()
        .filter(|(name, _, _)| shown(name))
        .map(|(name, dtype, shape)| {
            let shape: Vec<String> = shape.iter().map(usize::to_string).collect();
            vec![name.clone(), dtype.clone(), shape.join("×")]
        })
        .collect();
    let size = |keep: &dyn Fn(&str) -> bool| -> usize {
        let kept = d.tensors.iter().filter(|(n, t, _)| t == "F32" && keep(n));
        kept.map(|(_, _, s)| s.iter().product::<usize>()).sum()
    };
    let all = size(&|_| true);
    let pooler = size(&|n| n.starts_with("pooler."));
    format!(
        "{}\n(encoder.layer.1 to encoder.layer.5: the same 16 tensors)\n\n\
         tensors in the file: {}\n\
         f32 values in the file: {all}\n\
         of which BERT's pooler, unused for sentence embeddings: {pooler}\n\
         the encoder's parameters, counted by Bert::parameter_count: {}\n\
         equal to the file's f32 values without the pooler: {}",
        table(&["tensor", "type", "shape"], &rows),
        d.tensors.len(),
        d.parameters,
        d.parameters == all - pooler
    )
}

/// Each sentence, then its tokens with their ids.
pub fn tokens_report(examples: &[(String, Tokens)]) -> String {
    let mut out = Vec::new();
    for (sentence, t) in examples {
        let rows: Vec<Vec<String>> = t
            .tokens
            .iter()
            .zip(&t.ids)
            .map(|(token, id)| vec![token.clone(), id.to_string()])
            .collect();
        out.push(format!("{sentence}\n{}", table(&["token", "id"], &rows)));
    }
    out.join("\n\n")
}

/// A `layer × head` table of one statistic.
fn per_head(d: &Derived, value: impl Fn(usize, usize) -> f64) -> Vec<Vec<f64>> {
    (0..d.heads.len()).map(|l| (0..d.heads[l].len()).map(|h| value(l, h)).collect()).collect()
}

/// Per layer, means over its heads and the corpus: entropy against a
/// uniform head's, and the weight on `[CLS]` and on `[SEP]`.
pub fn layers_report(d: &Derived, corpus: &[Tokens]) -> String {
    let entropy = row_means(&per_head(d, |l, h| d.heads[l][h].0.entropy));
    let cls = row_means(&per_head(d, |l, h| d.heads[l][h].0.cls));
    let sep = row_means(&per_head(d, |l, h| d.heads[l][h].0.sep));
    let rows: Vec<Vec<String>> = (0..entropy.len())
        .map(|l| {
            vec![
                (l + 1).to_string(),
                format!("{:.2}", entropy[l]),
                format!("{:.2}", cls[l]),
                format!("{:.2}", sep[l]),
                format!("{:.2}", cls[l] + sep[l]),
            ]
        })
        .collect();
    format!(
        "{}\n\nentropy of uniform attention over the same sentences: {:.2} nats",
        table(&["layer", "entropy (nats)", "on [CLS]", "on [SEP]", "on either"], &rows),
        uniform_entropy(corpus)
    )
}

/// Heads found by their statistics alone: those that put at least half
/// their weight on the previous, or the next, token; and each kind's top
/// three.
pub fn positional_heads_report(d: &Derived) -> String {
    let name = |(l, h): (usize, usize)| format!("layer {} head {}", l + 1, h + 1);
    let mut out = Vec::new();
    for (what, values) in [
        ("previous", per_head(d, |l, h| d.heads[l][h].0.previous)),
        ("next", per_head(d, |l, h| d.heads[l][h].0.next)),
    ] {
        let found: Vec<String> = heads_at_least(&values, 0.5).into_iter().map(name).collect();
        let mut ranked: Vec<(f64, (usize, usize))> = values
            .iter()
            .enumerate()
            .flat_map(|(l, row)| row.iter().enumerate().map(move |(h, &v)| (v, (l, h))))
            .collect();
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0));
        let top: Vec<String> =
            ranked[..3].iter().map(|&(v, at)| format!("{} ({v:.2})", name(at))).collect();
        out.push(format!(
            "at least half the weight on the {what} token: {}\n  most {what}-token weight: {}",
            found.join(", "),
            top.join(", ")
        ));
    }
    out.join("\n")
}

/// The heads whose removal moves the paraphrases' embeddings most and
/// least.
pub fn ablation_report(d: &Derived) -> String {
    let mut ranked: Vec<(usize, usize)> =
        (0..d.heads.len()).flat_map(|l| (0..d.heads[l].len()).map(move |h| (l, h))).collect();
    ranked.sort_by(|&(a, b), &(c, e)| d.heads[c][e].1.shift.total_cmp(&d.heads[a][b].1.shift));
    let row = |&(l, h): &(usize, usize)| {
        let a = d.heads[l][h].1;
        vec![
            format!("layer {} head {}", l + 1, h + 1),
            format!("{:.4}", a.shift),
            format!("{:+.4}", a.similarity_change).replace("-0.0000", "+0.0000"),
        ]
    };
    let mut rows: Vec<Vec<String>> = ranked[..3].iter().map(row).collect();
    rows.push(vec!["…".into(), String::new(), String::new()]);
    rows.extend(ranked[ranked.len() - 3..].iter().map(row));
    let shifts: Vec<f64> = ranked.iter().map(|&(l, h)| d.heads[l][h].1.shift).collect();
    let last_layer = d.heads.len();
    let in_last = ranked[..6].iter().filter(|&&(l, _)| l + 1 == last_layer).count();
    format!(
        "{}\n\nmean shift over all 72 heads: {:.4}\nof the 6 heads whose removal moves them most, in layer {last_layer}: {in_last}",
        table(&["head removed", "shift 1 − cos", "change in paraphrase cos"], &rows),
        shifts.iter().sum::<f64>() / shifts.len() as f64,
    )
}

/// Each paraphrase pair's cosine similarity, and (`unrelated`) the cosine
/// similarity of its first sentence with the next pair's paraphrase.
pub fn similarity_report(d: &Derived, corpus: &Corpus) -> Result<String, ReportError> {
    let pairs = corpus.pairs.len();
    if d.similarity.len() != pairs {
        return Err(ReportError::Attn(AttnError::InvalidArgument {
            name: "similarity rows",
            value: d.similarity.len() as f64,
            requirement: "must be one per paraphrase pair",
        }));
    }
    let rows: Vec<Vec<String>> = corpus
        .pairs
        .iter()
        .zip(&d.similarity)
        .enumerate()
        .map(|(i, ([a, b], (same, unrelated)))| {
            vec![
                (i + 1).to_string(),
                a.clone(),
                b.clone(),
                format!("{same:.2}"),
                format!("{unrelated:.2}"),
            ]
        })
        .collect();
    let same: Vec<f32> = d.similarity.iter().map(|p| p.0).collect();
    let other: Vec<f32> = d.similarity.iter().map(|p| p.1).collect();
    let lo = |v: &[f32]| v.iter().fold(f32::MAX, |m, &x| m.min(x));
    let hi = |v: &[f32]| v.iter().fold(f32::MIN, |m, &x| m.max(x));
    let mean = |v: &[f32]| v.iter().sum::<f32>() / v.len() as f32;
    Ok(format!(
        "{}\n\nparaphrases: mean {:.2}, lowest {:.2}\nunrelated:   mean {:.2}, highest {:.2}",
        table(&["pair", "sentence", "paraphrase", "cos", "unrelated"], &rows),
        mean(&same),
        lo(&same),
        mean(&other),
        hi(&other)
    ))
}

/// Sentence embeddings per second, the crate and PyTorch, and their ratio.
pub fn speed_report(crate_per_second: f64, pytorch_per_second: f64) -> String {
    format!(
        "sentence embeddings per second, one thread, one sentence at a time:\n\
         attn (this crate)   {crate_per_second:.1}\n\
         PyTorch             {pytorch_per_second:.1}\n\
         ratio               {:.2}",
        crate_per_second / pytorch_per_second
    )
}

/// When, where and how each speed was measured (the files' first lines).
pub fn measured_report(crate_measured: &str, pytorch_measured: &str) -> String {
    format!("(crate: {crate_measured})\n(PyTorch: {pytorch_measured})")
}

/// The figure's sentence and its tokens.
pub fn figure_tokens(d: &Derived) -> Result<&Tokens, ReportError> {
    d.tokens.iter().find(|(s, _)| s == FIGURE_SENTENCE).map(|(_, t)| t).ok_or_else(|| {
        ReportError::MissingDataFile {
            path: "book/data/ch15-tokens.tsv".into(),
            reason: "no row for the figure's sentence".into(),
        }
    })
}
