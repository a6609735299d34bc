//! Chapter 18's summaries of its data: curves and spans of positions,
//! mean and range over the seeds, and the tables the chapter prints.

use std::fmt::Write;

use attn::rope_scaling::RopeFrequencies;

use super::data::{PasskeyFound, PositionBucket};
use super::{Scaled, LONGEST, ROTARY_READS, SCALINGS, TRAINED};
use crate::ch17::{mean, range};
use crate::error::ReportError;

/// The spans of positions the chapter's tables average over: the trained
/// context, then each doubling to [`LONGEST`].
pub const SPANS: [(usize, usize); 4] =
    [(0, TRAINED), (TRAINED, 2 * TRAINED), (2 * TRAINED, 4 * TRAINED), (4 * TRAINED, LONGEST)];

/// A mean over the seeds and its range.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    /// The mean over the seeds.
    pub mean: f64,
    /// The lowest seed's value.
    pub low: f64,
    /// The highest seed's value.
    pub high: f64,
}

impl Spread {
    /// The mean and range of `values` (one a seed); `None` if there are none.
    pub fn of(values: &[f64]) -> Option<Spread> {
        if values.is_empty() {
            return None;
        }
        let (low, high) = range(values);
        Some(Spread { mean: mean(values), low, high })
    }
}

/// The rows of `stage` read as `read`.
fn rows_of<'a>(
    rows: &'a [PositionBucket],
    stage: &'a str,
    read: &'a str,
) -> impl Iterator<Item = &'a PositionBucket> + 'a {
    rows.iter().filter(move |r| r.stage == stage && r.read == read)
}

/// The seeds of `rows`, in order, each once.
fn seeds<'a>(rows: impl Iterator<Item = &'a PositionBucket>) -> Vec<u64> {
    let mut seeds: Vec<u64> = rows.map(|r| r.seed).collect();
    seeds.sort_unstable();
    seeds.dedup();
    seeds
}

/// `value` of each seed's buckets of `stage`/`read` inside `span`, averaged
/// over the span's buckets (all of one width), then spread over the seeds.
pub fn span(
    rows: &[PositionBucket],
    (stage, read): (&str, &str),
    (from, to): (usize, usize),
    value: impl Fn(&PositionBucket) -> f64,
) -> Option<Spread> {
    Spread::of(&per_seed(rows, (stage, read), (from, to), value))
}

/// `value` of each seed's buckets of `stage`/`read` inside `span`, averaged
/// over the span's buckets: one number a seed, in the seeds' order.
pub fn per_seed(
    rows: &[PositionBucket],
    (stage, read): (&str, &str),
    (from, to): (usize, usize),
    value: impl Fn(&PositionBucket) -> f64,
) -> Vec<f64> {
    seeds(rows_of(rows, stage, read))
        .into_iter()
        .filter_map(|seed| {
            let inside: Vec<f64> = rows_of(rows, stage, read)
                .filter(|r| r.seed == seed && r.first_position >= from && r.first_position < to)
                .map(&value)
                .collect();
            (!inside.is_empty()).then(|| mean(&inside))
        })
        .collect()
}

/// Each bucket's `value` of `stage`/`read`, spread over the seeds:
/// `(first position, spread)`, in order.
pub fn curve(
    rows: &[PositionBucket],
    (stage, read): (&str, &str),
    value: impl Fn(&PositionBucket) -> f64,
) -> Vec<(usize, Spread)> {
    let mut firsts: Vec<usize> = rows_of(rows, stage, read).map(|r| r.first_position).collect();
    firsts.sort_unstable();
    firsts.dedup();
    firsts
        .into_iter()
        .filter_map(|p| {
            let values: Vec<f64> =
                rows_of(rows, stage, read).filter(|r| r.first_position == p).map(&value).collect();
            Some((p, Spread::of(&values)?))
        })
        .collect()
}

/// A bucket's loss.
pub fn loss(r: &PositionBucket) -> f64 {
    r.loss
}

/// A bucket's attention entropy, mean over the blocks.
pub fn entropy(r: &PositionBucket) -> f64 {
    mean(&r.entropy)
}

/// `mean (low–high)` to `digits` decimals, or a dash.
fn cell(spread: Option<Spread>, digits: usize) -> String {
    match spread {
        Some(s) => format!("{:.digits$} ({:.digits$}–{:.digits$})", s.mean, s.low, s.high),
        None => "–".into(),
    }
}

/// The table of the loss over [`SPANS`] for each way of reading in
/// `reads` (`(label, name)`), at `stage`: mean and range over the seeds.
pub fn loss_table(rows: &[PositionBucket], stage: &str, reads: &[(&str, &str)]) -> String {
    span_table(rows, stage, reads, loss, 3)
}

/// The table of the attention entropy (mean over blocks and heads) over
/// [`SPANS`], as [`loss_table`] has the loss.
pub fn entropy_table(rows: &[PositionBucket], stage: &str, reads: &[(&str, &str)]) -> String {
    span_table(rows, stage, reads, entropy, 2)
}

/// `value` over [`SPANS`] for each way of reading in `reads`, at `stage`,
/// to `digits` decimals.
fn span_table(
    rows: &[PositionBucket],
    stage: &str,
    reads: &[(&str, &str)],
    value: fn(&PositionBucket) -> f64,
    digits: usize,
) -> String {
    let mut out = String::from("| positions read as | ");
    for (from, to) in SPANS {
        let _ = write!(out, "{from}–{} | ", to - 1);
    }
    out = out.trim_end().to_string() + "\n|---|---|---|---|---|\n";
    for (label, name) in reads {
        let _ = write!(out, "| {name} | ");
        for s in SPANS {
            let _ = write!(out, "{} | ", cell(span(rows, (stage, label), s, value), digits));
        }
        out = out.trim_end().to_string() + "\n";
    }
    out
}

/// Every way the zero-shot models are read, `(label, name)`, in the order
/// of the chapter's tables: the rotary model under each scaling, then
/// ALiBi, no positions and learned positions.
pub fn zero_shot_reads() -> Vec<(&'static str, &'static str)> {
    let rotary = SCALINGS.iter().map(|s| (s.label(), s.name()));
    rotary.chain(OTHERS).collect()
}

/// The models without rotary positions, `(label, name)`.
const OTHERS: [(&str, &str); 3] =
    [("alibi", "ALiBi"), ("none", "no positions"), ("learned", "learned")];

/// The ways of reading in the chapter's tables of the models as trained:
/// [`zero_shot_reads`], with YaRN without its temperature after YaRN.
pub fn table_reads() -> Vec<(&'static str, &'static str)> {
    let rotary = ROTARY_READS.iter().map(|s| (s.label(), s.name()));
    rotary.chain(OTHERS).collect()
}

/// The rotary scalings, `(label, name)`.
pub fn rotary_reads() -> Vec<(&'static str, &'static str)> {
    SCALINGS.iter().map(|s| (s.label(), s.name())).collect()
}

/// The share of passkeys found by the models trained as `trained` and read
/// as `read`, at `length`, over every distance asked, spread over the
/// seeds; `None` if none was asked.
pub fn passkey_at(
    found: &[PasskeyFound],
    (trained, read): (&str, &str),
    length: usize,
    distance: Option<usize>,
) -> Option<Spread> {
    Spread::of(&passkey_per_seed(found, (trained, read), length, distance))
}

/// The share of passkeys found, as [`passkey_at`] has it, of each seed in
/// order.
pub fn passkey_per_seed(
    found: &[PasskeyFound],
    (trained, read): (&str, &str),
    length: usize,
    distance: Option<usize>,
) -> Vec<f64> {
    let mut per_seed = Vec::new();
    let mut seeds: Vec<u64> = found.iter().map(|f| f.seed).collect();
    seeds.sort_unstable();
    seeds.dedup();
    for seed in seeds {
        let mine: Vec<f64> = found
            .iter()
            .filter(|f| f.trained == trained && f.read == read && f.seed == seed)
            .filter(|f| f.length == length && distance.is_none_or(|d| f.distance == d))
            .map(|f| f.accuracy)
            .collect();
        if !mine.is_empty() {
            per_seed.push(mean(&mine));
        }
    }
    per_seed
}

/// The passkey models, `(trained, read, name)`, in the order of the
/// chapter's table.
pub fn passkey_reads() -> Vec<(&'static str, &'static str, &'static str)> {
    let rotary = ROTARY_READS.iter().map(|s| ("rope", s.label(), s.name()));
    rotary.chain(OTHERS.map(|(label, name)| (label, label, name))).collect()
}

/// The passkey table: for each model, the share of keys found at each
/// length (mean over the distances asked, then mean and range over the
/// seeds), in per cent.
pub fn passkey_table(found: &[PasskeyFound], lengths: &[usize]) -> String {
    let mut out = String::from("| read as | ");
    for len in lengths {
        let _ = write!(out, "{len} | ");
    }
    out = out.trim_end().to_string() + "\n|---|" + &"---|".repeat(lengths.len()) + "\n";
    for (trained, read, name) in passkey_reads() {
        let _ = write!(out, "| {name} | ");
        for &len in lengths {
            let percent = passkey_at(found, (trained, read), len, None).map(|s| Spread {
                mean: 100.0 * s.mean,
                low: 100.0 * s.low,
                high: 100.0 * s.high,
            });
            let _ = write!(out, "{} | ", cell(percent, 0));
        }
        out = out.trim_end().to_string() + "\n";
    }
    out
}

/// The passkey table by distance for texts of `length`: for each model
/// read past its trained length, the share of keys found at each distance
/// asked (mean over the seeds), in per cent.
pub fn passkey_distance_table(found: &[PasskeyFound], length: usize) -> String {
    let distances = super::passkey_distances(length);
    let mut out = String::from("| read as | ");
    for d in &distances {
        let _ = write!(out, "{d} | ");
    }
    out = out.trim_end().to_string() + "\n|---|" + &"---|".repeat(distances.len()) + "\n";
    for (trained, read, name) in passkey_reads() {
        let at = |d: usize| passkey_at(found, (trained, read), length, Some(d));
        if at(distances[0]).is_none() {
            continue; // learned positions read no text this long
        }
        let _ = write!(out, "| {name} | ");
        for &d in &distances {
            let _ = write!(
                out,
                "{} | ",
                at(d).map_or("–".into(), |s| format!("{:.0}", 100.0 * s.mean))
            );
        }
        out = out.trim_end().to_string() + "\n";
    }
    out
}

/// The heads' frequencies, `d_k` wide, under each scaling for `factor`:
/// for the pairs `pairs`, pair `f`'s wavelength `2π/ω_f` in positions as
/// trained, and its frequency under each scaling as a share of the trained
/// one (1: kept; `1/factor`: interpolated); last, the factor on the
/// scores (the square of the one on queries and keys).
pub fn frequency_table(d_k: usize, factor: f64, pairs: &[usize]) -> Result<String, ReportError> {
    let all: Vec<(Scaled, RopeFrequencies)> = SCALINGS
        .iter()
        .map(|&s| Ok((s, RopeFrequencies::new(d_k, 10000.0, s.scaling(factor))?)))
        .collect::<Result<_, ReportError>>()?;
    let plain = &all[0].1;
    let mut out = String::from("| pair | wavelength |");
    for (s, _) in &all[1..] {
        let _ = write!(out, " {} |", s.name());
    }
    out += &format!("\n|---|---|{}\n", "---|".repeat(all.len() - 1));
    for &f in pairs {
        let w = plain.omega().get(f).copied().ok_or(attn::error::AttnError::Mismatched {
            name: "pair of the frequency table",
            requirement: "must be below d_k / 2",
        })?;
        let _ = write!(out, "| {f} | {:.0} |", 2.0 * std::f64::consts::PI / w);
        for (_, freq) in &all[1..] {
            let _ = write!(out, " {:.3} |", freq.omega()[f] / w);
        }
        out += "\n";
    }
    out += "| scores × | |";
    for (_, freq) in &all[1..] {
        let _ = write!(out, " {:.3} |", freq.attention_factor().powi(2));
    }
    Ok(out + "\n")
}
/// Each kind of model's validation loss at the trained context, mean and
/// range over the seeds, one line each.
pub fn validation_report(models: &[super::data::ModelLoss]) -> String {
    let names =
        [("rope", "RoPE"), ("alibi", "ALiBi"), ("none", "no positions"), ("learned", "learned")];
    let mut out = String::new();
    for (label, name) in names {
        let losses = models.iter().filter(|m| m.trained == label && m.stage == "trained");
        let losses: Vec<f64> = losses.map(|m| m.validation_loss).collect();
        let _ = writeln!(out, "{name}: {}", cell(Spread::of(&losses), 3));
    }
    out
}
