//! Chapter 14's second task, summarisation: the book's encoder–decoder
//! Transformer trained on run-length summaries ("red red red blue blue
//! blue blue" → "3 red 4 blue"), from several seeds, scored by exact match
//! and ROUGE, and how widely its cross-attention spreads over the run each
//! summary token sums up. `cargo xtask train ch14-summary` runs it
//! (`examples/ch14_summary_train.rs`) and writes `book/data/ch14-summary*`;
//! the chapter's example and numbers test read them.

use std::ops::Range;

use crate::error::ReportError;
use crate::measurements::{bad, numeric_rows};
use crate::show::table;
use attn::translation::{
    batch, mean_rouge, spans, summary_set, translate_all, RougeScores, Seq2Seq, Seq2SeqConfig,
    SummaryPair, BOOK_SEQ2SEQ, COLOURS, RUN_LENGTHS, SUMMARY_VOCAB,
};

/// Runs a source has: 2 to 5.
pub const SUMMARY_RUNS: Range<usize> = 2..6;
/// `(count, seed)` of the held-out pairs, drawn first, and of the training
/// pairs, from which any held-out pair is removed.
pub const SUMMARY_PAIRS: [(usize, u64); 2] = [(500, 2026), (5000, 12)];
/// The initialisations the model is trained from.
pub const SUMMARY_SEEDS: [u64; 3] = [1, 2, 3];
/// The decoder layer whose cross-attention is measured and drawn.
pub const MEASURED_LAYER: usize = 1;

/// The book's Transformer, sized for the task: sources of up to five runs
/// of seven words, summaries of up to ten tokens after `BOS`, and the
/// task's vocabularies.
pub fn summary_config() -> Seq2SeqConfig {
    let longest_run = RUN_LENGTHS.end - 1;
    let most_runs = SUMMARY_RUNS.end - 1;
    Seq2SeqConfig {
        max_lengths: (most_runs * longest_run, 2 * most_runs + 1),
        vocab: (3 + COLOURS.len(), SUMMARY_VOCAB),
        ..BOOK_SEQ2SEQ
    }
}

/// The held-out pairs and the training pairs (none of them held out).
pub fn summary_pairs() -> Result<(Vec<SummaryPair>, Vec<SummaryPair>), ReportError> {
    let [(held_out_count, held_out_seed), (train_count, train_seed)] = SUMMARY_PAIRS;
    let held_out = summary_set(held_out_count, held_out_seed, SUMMARY_RUNS)?;
    let mut train = summary_set(train_count, train_seed, SUMMARY_RUNS)?;
    train.retain(|p| !held_out.contains(p));
    Ok((held_out, train))
}

/// Greedy summaries of `held_out`: the share exactly right, and ROUGE.
pub fn summary_scores(
    net: &Seq2Seq,
    held_out: &[SummaryPair],
) -> Result<(f64, RougeScores), ReportError> {
    let candidates = translate_all(net, held_out, 1)?;
    let references: Vec<Vec<usize>> = held_out.iter().map(|p| p.target.clone()).collect();
    let exact = candidates.iter().zip(&references).filter(|(c, r)| c == r);
    let share = exact.count() as f64 / held_out.len().max(1) as f64;
    Ok((share, mean_rouge(&candidates, &references)?))
}

/// How a layer's cross-attention spreads for the summary tokens of one
/// kind (counts or colours) and one run length: over every head and every
/// such token (the row of the decoder position that predicts it, the
/// reference summary fed to the decoder), the mean entropy of the weights
/// over the whole source (in nats), the mean weight inside the token's
/// run, and the mean entropy of the weights inside the run, rescaled to
/// sum to 1 (`ln L` if they are even over the run).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpreadRow {
    /// The model's initialisation.
    pub seed: u64,
    /// 0 for the counts, 1 for the colours.
    pub kind: usize,
    /// The length of the run the tokens sum up.
    pub span: usize,
    /// Summary tokens of that kind and run length, times heads.
    pub tokens: usize,
    /// Mean entropy of their weights over the source, `−Σ p ln p`.
    pub entropy: f64,
    /// Mean weight on their run's words.
    pub in_span: f64,
    /// Mean entropy of their weights inside the run, rescaled to sum to 1.
    pub in_run_entropy: f64,
}

/// The names of the two kinds of summary token.
pub const KINDS: [&str; 2] = ["count", "colour"];

/// [`SpreadRow`]s of decoder layer [`MEASURED_LAYER`] on `pairs` (reference
/// summaries fed to the decoder), one a run length.
pub fn attention_spread(
    net: &Seq2Seq,
    seed: u64,
    pairs: &[SummaryPair],
) -> Result<Vec<SpreadRow>, ReportError> {
    let heads = net.config().heads;
    let mut sums = vec![[(0, 0.0, 0.0, 0.0); 2]; RUN_LENGTHS.end];
    for pair in pairs {
        let fwd = net.forward(&batch(&[(&pair.source[..], &pair.target[..])])?)?;
        for head in 0..heads {
            let w = fwd.cross_weights(MEASURED_LAYER, 0, head)?;
            for (i, span) in spans(pair)?.into_iter().enumerate() {
                let row = w.row(i);
                let entropy: f64 = row.iter().filter(|&&p| p > 0.0).map(|&p| -p * p.ln()).sum();
                let inside = row.slice(ndarray::s![span.clone()]);
                let mass = inside.sum();
                let even = |p: f64| match p / mass {
                    q if q > 0.0 => -q * q.ln(),
                    _ => 0.0,
                };
                let sum = &mut sums[span.len()][i % 2]; // count, colour, count, …
                sum.0 += 1;
                sum.1 += entropy;
                sum.2 += mass;
                sum.3 += inside.iter().map(|&p| even(p)).sum::<f64>();
            }
        }
    }
    let row = |kind: usize, span: usize| {
        let (tokens, entropy, in_span, in_run_entropy) = sums[span][kind];
        let n = tokens.max(1) as f64;
        SpreadRow {
            seed,
            kind,
            span,
            tokens,
            entropy: entropy / n,
            in_span: in_span / n,
            in_run_entropy: in_run_entropy / n,
        }
    };
    Ok((0..KINDS.len())
        .flat_map(|kind| RUN_LENGTHS.map(move |span| (kind, span)))
        .map(|(kind, span)| row(kind, span))
        .collect())
}

/// One trained model's scores.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SummaryRow {
    /// Its initialisation.
    pub seed: u64,
    /// The loss of its last training step.
    pub final_loss: f64,
    /// The share of held-out summaries exactly right.
    pub exact: f64,
    /// ROUGE-1, ROUGE-2 and ROUGE-L F1.
    pub rouge: [f64; 3],
}

/// The CSV's column names.
pub const SUMMARY_COLUMNS: &str = "seed,final_loss,exact,rouge1,rouge2,rougeL";
/// The spread CSV's column names.
pub const SPREAD_COLUMNS: &str = "seed,kind,span,tokens,entropy,in_span,in_run_entropy";

/// A model row as a CSV line.
pub fn summary_line(r: &SummaryRow) -> String {
    let [one, two, l] = r.rouge;
    format!("{},{},{},{one},{two},{l}", r.seed, r.final_loss, r.exact)
}

/// A spread row as a CSV line.
pub fn spread_line(r: &SpreadRow) -> String {
    format!(
        "{},{},{},{},{},{},{}",
        r.seed, r.kind, r.span, r.tokens, r.entropy, r.in_span, r.in_run_entropy
    )
}

/// The committed model rows, `book/data/ch14-summary.csv`.
pub fn read_summary() -> Result<Vec<SummaryRow>, ReportError> {
    let file = "ch14-summary.csv";
    numeric_rows(file)?
        .into_iter()
        .map(|r| match r[..] {
            [Some(seed), Some(final_loss), Some(exact), Some(one), Some(two), Some(l)] => {
                Ok(SummaryRow { seed: seed as u64, final_loss, exact, rouge: [one, two, l] })
            }
            _ => Err(bad(file, format!("a row {r:?} of other than 6 numbers"))),
        })
        .collect()
}

/// The committed spread rows, `book/data/ch14-summary-spread.csv`.
pub fn read_spread() -> Result<Vec<SpreadRow>, ReportError> {
    let file = "ch14-summary-spread.csv";
    numeric_rows(file)?
        .into_iter()
        .map(|r| match r[..] {
            [Some(seed), Some(kind), Some(span), Some(tokens), Some(entropy), Some(in_span), Some(in_run_entropy)] => {
                Ok(SpreadRow {
                    seed: seed as u64,
                    kind: kind as usize,
                    span: span as usize,
                    tokens: tokens as usize,
                    entropy,
                    in_span,
                    in_run_entropy,
                })
            }
            _ => Err(bad(file, format!("a row {r:?} of other than 7 numbers"))),
        })
        .collect()
}

/// Each seed's held-out scores, one row a seed.
pub fn summary_report(rows: &[SummaryRow]) -> String {
    let header = ["seed", "exact", "ROUGE-1", "ROUGE-2", "ROUGE-L"];
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut row = vec![r.seed.to_string(), format!("{:.3}", r.exact)];
            row.extend(r.rouge.iter().map(|x| format!("{x:.3}")));
            row
        })
        .collect();
    table(&header, &cells)
}

/// The lowest and highest over the seeds of `value` for the tokens of
/// `kind` at run length `span`.
pub fn seed_range(
    rows: &[SpreadRow],
    (kind, span): (usize, usize),
    value: fn(&SpreadRow) -> f64,
) -> (f64, f64) {
    let values = rows.iter().filter(|r| r.kind == kind && r.span == span).map(value);
    values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(v), hi.max(v)))
}

/// The spread by kind of token and run length: the entropy of attention
/// spread evenly over the run (`ln L`), and over the seeds the lowest and
/// highest measured entropy, weight inside the run and entropy inside it.
pub fn spread_table(rows: &[SpreadRow]) -> String {
    let header =
        ["token", "run length L", "ln L", "entropy", "weight in the run", "entropy in the run"];
    let range = |key, value| {
        let (lo, hi) = seed_range(rows, key, value);
        format!("{lo:.2}–{hi:.2}")
    };
    let cells: Vec<Vec<String>> = (0..KINDS.len())
        .flat_map(|kind| RUN_LENGTHS.map(move |span| (kind, span)))
        .map(|(kind, span)| {
            vec![
                KINDS[kind].to_string(),
                span.to_string(),
                format!("{:.2}", (span as f64).ln()),
                range((kind, span), |r| r.entropy),
                range((kind, span), |r| r.in_span),
                range((kind, span), |r| r.in_run_entropy),
            ]
        })
        .collect();
    format!(
        "{}\nlowest–highest of three seeds; the entropy in the run is of the weights inside it, \
         rescaled to sum to 1",
        table(&header, &cells)
    )
}

/// Lin's (2004) example, scored by the crate: against the reference
/// "police killed the gunman", two candidates with the same ROUGE-1 and
/// ROUGE-2 that ROUGE-L tells apart (F1 of each).
pub fn rouge_example() -> Result<String, ReportError> {
    let sentences =
        ["police killed the gunman", "police kill the gunman", "the gunman kill police"];
    let mut vocabulary: Vec<&str> = Vec::new();
    let mut id = |w| match vocabulary.iter().position(|&v| v == w) {
        Some(i) => i,
        None => {
            vocabulary.push(w);
            vocabulary.len() - 1
        }
    };
    let ids: Vec<Vec<usize>> =
        sentences.iter().map(|s| s.split(' ').map(&mut id).collect()).collect();
    let mut rows = Vec::new();
    for (sentence, candidate) in sentences.iter().zip(&ids).skip(1) {
        let one = attn::translation::rouge_n(candidate, &ids[0], 1)?.f1;
        let two = attn::translation::rouge_n(candidate, &ids[0], 2)?.f1;
        let l = attn::translation::rouge_l(candidate, &ids[0])?.f1;
        rows.push(vec![
            sentence.to_string(),
            format!("{one:.3}"),
            format!("{two:.3}"),
            format!("{l:.3}"),
        ]);
    }
    let header = ["candidate", "ROUGE-1", "ROUGE-2", "ROUGE-L"];
    Ok(format!("reference: {}\n{}", sentences[0], table(&header, &rows)))
}

/// A pair and a model's summary of it, as words.
pub fn summary_example(pair: &SummaryPair, candidate: &[usize]) -> String {
    let words = |ids: &[usize], source| attn::translation::summary_words(ids, source).join(" ");
    format!(
        "source:    {}\nreference: {}\nmodel:     {}",
        words(&pair.source, true),
        words(&pair.target, false),
        words(candidate, false)
    )
}
