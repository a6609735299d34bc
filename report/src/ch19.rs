//! Chapter 19, Serving attention: the measurements (`measure`, run by
//! `cargo xtask measure serving`) and the committed files they wrote,
//! read back into the tables the chapter quotes. Report helpers, not a
//! reader's API.

use crate::ch17::{rows, Attention, ATTENTIONS};
use crate::error::ReportError;
use crate::measurements::{bad, number};
use crate::provenance::Provenance;

pub mod checks;
pub mod measure;

use measure::{BATCHES, CONTEXTS, PROMPTS, WRITTEN};

/// One row of `ch19-decode.tsv`: a decode step's best time.
#[derive(Debug, Clone, PartialEq)]
pub struct Decode {
    /// The variant's attention.
    pub attention: Attention,
    /// Through the paged cache (`true`) or the contiguous one.
    pub paged: bool,
    /// Sequences read together.
    pub batch: usize,
    /// Tokens each attends over.
    pub context: usize,
    /// Seconds, best of 5.
    pub seconds: f64,
    /// Bytes of cache the step reads.
    pub cache_bytes: usize,
}

impl Decode {
    /// Bytes of cache read a second.
    pub fn rate(&self) -> f64 {
        self.cache_bytes as f64 / self.seconds
    }
}

/// The decode steps, this core's triad bandwidth in gigabytes a second, and
/// where they come from.
pub fn decode_steps() -> Result<(Vec<Decode>, f64, Provenance), ReportError> {
    let file = "ch19-decode.tsv";
    let (source, text) = Provenance::read(file)?;
    let triad = text
        .lines()
        .find_map(|l| l.strip_prefix("# triad_gbytes_per_s\t"))
        .ok_or_else(|| bad(file, "it has no `# triad_gbytes_per_s` line"))?;
    let steps = rows(file, 6)?
        .iter()
        .map(|f| {
            Ok(Decode {
                attention: number(file, &f[0])?,
                paged: f[1] == "paged",
                batch: number(file, &f[2])?,
                context: number(file, &f[3])?,
                seconds: number(file, &f[4])?,
                cache_bytes: number(file, &f[5])?,
            })
        })
        .collect::<Result<Vec<_>, ReportError>>()?;
    Ok((steps, number(file, triad)?, source))
}

/// The paged step of `attention` at `batch` and `context`.
pub fn step(
    steps: &[Decode],
    attention: Attention,
    (batch, context): (usize, usize),
) -> Option<&Decode> {
    steps
        .iter()
        .find(|d| d.paged && d.attention == attention && (d.batch, d.context) == (batch, context))
}

/// The contiguous cache's step of `attention` at `context` (batch 1).
pub fn contiguous(steps: &[Decode], attention: Attention, context: usize) -> Option<&Decode> {
    steps.iter().find(|d| !d.paged && d.attention == attention && d.context == context)
}

/// The heading of a variant's column: its key/value heads, or latent.
fn column(attention: Attention) -> String {
    match attention {
        Attention::KvHeads(1) => "1 kv head".into(),
        Attention::KvHeads(g) => format!("{g} kv heads"),
        Attention::Latent => "latent".into(),
    }
}

/// Milliseconds per decode step, by batch and context (rows) and variant
/// (columns), with the multi-head cache's megabytes read.
pub fn decode_table(steps: &[Decode]) -> Result<String, ReportError> {
    let mut out = String::from("batch  context  MB of cache (4 kv heads)");
    for a in ATTENTIONS {
        out += &format!("  {:>10}", column(a));
    }
    out += "\n";
    for context in CONTEXTS {
        for batch in BATCHES {
            let missing = || bad("ch19-decode.tsv", format!("no step at {batch} × {context}"));
            let mha = step(steps, ATTENTIONS[0], (batch, context)).ok_or_else(missing)?;
            out += &format!("{batch:>5}  {context:>7}  {:>24.1}", mha.cache_bytes as f64 / 1e6);
            for a in ATTENTIONS {
                let d = step(steps, a, (batch, context)).ok_or_else(missing)?;
                out += &format!("  {:>10.2}", d.seconds * 1e3);
            }
            out += "\n";
        }
    }
    Ok(out.trim_end().to_string())
}

/// One row of `ch19-batching.tsv`: a batching policy on the workload.
#[derive(Debug, Clone, PartialEq)]
pub struct Batched {
    /// How the requests arrived: `at once` or `every 0.1 s`.
    pub arrivals: String,
    /// The round, 1 or 2.
    pub round: usize,
    /// Continuous (`true`) or static.
    pub continuous: bool,
    /// Steps taken.
    pub steps: usize,
    /// Seconds for the whole workload.
    pub seconds: f64,
    /// Tokens written.
    pub written: usize,
    /// Median seconds from arrival to last token.
    pub p50: f64,
    /// The 95th percentile of the same.
    pub p95: f64,
    /// The most blocks in use at once.
    pub peak_blocks: usize,
}

/// The batching runs, in the file's order.
pub fn batching() -> Result<(Vec<Batched>, Provenance), ReportError> {
    let file = "ch19-batching.tsv";
    let (source, _) = Provenance::read(file)?;
    let runs = rows(file, 9)?
        .iter()
        .map(|f| {
            Ok(Batched {
                arrivals: f[0].clone(),
                round: number(file, &f[1])?,
                continuous: f[2] == "Continuous",
                steps: number(file, &f[3])?,
                seconds: number(file, &f[4])?,
                written: number(file, &f[5])?,
                p50: number(file, &f[6])?,
                p95: number(file, &f[7])?,
                peak_blocks: number(file, &f[8])?,
            })
        })
        .collect::<Result<Vec<_>, ReportError>>()?;
    Ok((runs, source))
}

/// The batching table, a line a run.
pub fn batching_table(runs: &[Batched]) -> String {
    let mut out = String::from(
        "arrivals     round  batching    steps  seconds  tokens/s  p50 s  p95 s  peak blocks\n",
    );
    for r in runs {
        out += &format!(
            "{:<11}  {:>5}  {:<10}  {:>5}  {:>7.2}  {:>8.0}  {:>5.2}  {:>5.2}  {:>11}\n",
            r.arrivals,
            r.round,
            if r.continuous { "continuous" } else { "static" },
            r.steps,
            r.seconds,
            r.written as f64 / r.seconds,
            r.p50,
            r.p95,
            r.peak_blocks
        );
    }
    out.trim_end().to_string()
}

/// One row of `ch19-speculative.tsv`: a draft at one k.
#[derive(Debug, Clone, PartialEq)]
pub struct Speculative {
    /// `bigram` or `one layer`.
    pub draft: String,
    /// The one-layer draft's seed (0 for the bigram).
    pub seed: u64,
    /// Draft tokens a round.
    pub k: usize,
    /// Greedy (`true`) or sampled at temperature 1.
    pub greedy: bool,
    /// Draft tokens proposed.
    pub proposed: usize,
    /// Draft tokens kept.
    pub kept: usize,
    /// The target's passes.
    pub rounds: usize,
    /// Seconds with the draft.
    pub seconds: f64,
    /// Seconds of the target alone.
    pub alone: f64,
}

impl Speculative {
    /// The share of draft tokens kept.
    pub fn acceptance(&self) -> f64 {
        self.kept as f64 / self.proposed as f64
    }

    /// Tokens written per pass of the target: each pass writes the tokens
    /// it keeps and one of its own.
    pub fn per_pass(&self) -> f64 {
        (self.kept + self.rounds) as f64 / self.rounds as f64
    }

    /// Speed against the target alone.
    pub fn speedup(&self) -> f64 {
        self.alone / self.seconds
    }
}

/// The speculative runs; an error if a run's kept tokens and passes do
/// not add up to the tokens written.
pub fn speculative() -> Result<(Vec<Speculative>, Provenance), ReportError> {
    let file = "ch19-speculative.tsv";
    let (source, _) = Provenance::read(file)?;
    let runs = rows(file, 9)?
        .iter()
        .map(|f| {
            let run = Speculative {
                draft: f[0].clone(),
                seed: number(file, &f[1])?,
                k: number(file, &f[2])?,
                greedy: number(file, &f[3])?,
                proposed: number(file, &f[4])?,
                kept: number(file, &f[5])?,
                rounds: number(file, &f[6])?,
                seconds: number(file, &f[7])?,
                alone: number(file, &f[8])?,
            };
            if run.kept + run.rounds != PROMPTS * WRITTEN || run.kept > run.proposed {
                return Err(bad(file, format!("a run's tokens do not add up: {f:?}")));
            }
            Ok(run)
        })
        .collect::<Result<Vec<_>, ReportError>>()?;
    Ok((runs, source))
}

/// The runs of `draft` at `k`, greedy or not (three for the one-layer
/// draft, one for the bigram).
pub fn runs_of<'a>(
    runs: &'a [Speculative],
    (draft, k, greedy): (&str, usize, bool),
) -> Vec<&'a Speculative> {
    runs.iter().filter(|r| r.draft == draft && r.k == k && r.greedy == greedy).collect()
}

/// The mean, least and greatest of `f` over `runs`.
pub fn spread(runs: &[&Speculative], f: fn(&Speculative) -> f64) -> (f64, f64, f64) {
    let values: Vec<f64> = runs.iter().map(|r| f(r)).collect();
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    let low = values.iter().copied().fold(f64::INFINITY, f64::min);
    let high = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (mean, low, high)
}

/// The speculative table for greedy or sampled runs: by draft and k, the
/// share kept, tokens a pass and speed against the target alone (the
/// one-layer drafts' mean over their seeds).
pub fn speculative_table(runs: &[Speculative], greedy: bool) -> String {
    let mut out = String::from("draft       k  kept  tokens/pass  speed vs alone\n");
    for draft in ["bigram", "one layer"] {
        for k in measure::KS {
            let these = runs_of(runs, (draft, k, greedy));
            if these.is_empty() {
                continue;
            }
            let (kept, _, _) = spread(&these, Speculative::acceptance);
            let (per_pass, _, _) = spread(&these, Speculative::per_pass);
            let (speed, _, _) = spread(&these, Speculative::speedup);
            out += &format!(
                "{draft:<9}  {k:>2}  {:>3.0}%  {per_pass:>11.2}  {speed:>14.2}\n",
                100.0 * kept
            );
        }
    }
    out.trim_end().to_string()
}
