//! Chapter 17's data and tables: the KV cache's size for published
//! configurations and for the book's variants, the variants' validation
//! losses (`book/data/ch17-variants.tsv`) and the loss along long texts
//! read through three caches (`book/data/ch17-long-text.tsv`), all written
//! by `cargo xtask train kv`.

use ndarray::Array2;
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

use attn::cache::KeyValueCache;
use attn::kv_bytes::{kv_bytes_per_token, KvLayout, PUBLISHED};
use attn::latent::LatentAttention;
use attn::lm::{LanguageModel, LatentSizes, LmCache, LmConfig, Positions, SHAKESPEARE_MODEL};
use attn::masking::{masked_attention, sinks_and_window_mask};
use attn::multihead::MultiHeadAttention;
use attn::position::rope;
use attn::scaling::standard_normal;
use attn::sliding::SlidingCache;

use crate::error::ReportError;

mod checks;
pub mod fresh;
pub mod pooled;

use crate::measurements::{data_file, data_rows, number};
pub use checks::{book_caches, book_caches_of, equalities, equalities_of, GROUPED_CHECK, RING};

/// The chapter's kinds of attention, as its data files name them: the
/// number of key/value heads for 4 query heads (4: multi-head; 2:
/// grouped-query; 1: multi-query), or `latent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attention {
    /// Key/value heads shared by the 4 query heads.
    KvHeads(usize),
    /// Multi-head latent attention of [`LATENT`]'s widths.
    Latent,
}

/// The variants, in the order of every table.
pub const ATTENTIONS: [Attention; 4] =
    [Attention::KvHeads(4), Attention::KvHeads(2), Attention::KvHeads(1), Attention::Latent];

/// The variants that share key/value heads.
pub const SHARING: [Attention; 3] =
    [Attention::KvHeads(4), Attention::KvHeads(2), Attention::KvHeads(1)];

/// The latent variant's widths: `d_h = 32`, so `d_c = 2·d_h`, `d_r = d_h/2`.
pub const LATENT: LatentSizes = LatentSizes { d_c: 64, d_r: 16 };

impl std::fmt::Display for Attention {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Attention::KvHeads(g) => write!(f, "{g}"),
            Attention::Latent => write!(f, "latent"),
        }
    }
}

impl std::str::FromStr for Attention {
    type Err = std::num::ParseIntError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "latent" => Ok(Attention::Latent),
            g => g.parse().map(Attention::KvHeads),
        }
    }
}

/// One trained variant: its attention, seed, size and loss.
#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    /// Its attention.
    pub attention: Attention,
    /// The run's seed.
    pub seed: u64,
    /// Parameters.
    pub parameters: usize,
    /// Cache bytes per token (`f32`).
    pub bytes: usize,
    /// Loss over the whole validation split.
    pub validation_loss: f64,
}

/// One bucket of positions along the long texts, for one run: the mean
/// loss through each cache.
#[derive(Debug, Clone, PartialEq)]
pub struct LongText {
    /// The variant's attention.
    pub attention: Attention,
    /// The run's seed.
    pub seed: u64,
    /// The first position of the bucket (16 positions).
    pub first_position: usize,
    /// Every earlier token kept, at its position in the text.
    pub all: f64,
    /// The last 64 tokens.
    pub window: f64,
    /// The first 4 tokens and the last 60, at positions in the cache.
    pub sinks: f64,
}

/// The rows of a data file, each with at least `columns` fields.
pub(crate) fn rows(file: &str, columns: usize) -> Result<Vec<Vec<String>>, ReportError> {
    let text = data_file(file)?;
    data_rows(&text, '\t')
        .map(|row| {
            if row.len() < columns {
                return Err(ReportError::MissingDataFile {
                    path: format!("book/data/{file}"),
                    reason: format!("a row has {} fields, not {columns}", row.len()),
                });
            }
            Ok(row.iter().map(|f| f.to_string()).collect())
        })
        .collect()
}

/// The trained variants, in the file's order (by key/value heads, then seed).
pub fn variants() -> Result<Vec<Variant>, ReportError> {
    let file = "ch17-variants.tsv";
    rows(file, 5)?
        .iter()
        .map(|f| {
            Ok(Variant {
                attention: number(file, &f[0])?,
                seed: number(file, &f[1])?,
                parameters: number(file, &f[2])?,
                bytes: number(file, &f[3])?,
                validation_loss: number(file, &f[4])?,
            })
        })
        .collect()
}

/// The long texts' losses, every run and bucket.
pub fn long_texts() -> Result<Vec<LongText>, ReportError> {
    let file = "ch17-long-text.tsv";
    rows(file, 6)?
        .iter()
        .map(|f| {
            Ok(LongText {
                attention: number(file, &f[0])?,
                seed: number(file, &f[1])?,
                first_position: number(file, &f[2])?,
                all: number(file, &f[3])?,
                window: number(file, &f[4])?,
                sinks: number(file, &f[5])?,
            })
        })
        .collect()
}

/// Tokens in the context the cache table sizes a whole cache for.
pub const TABLE_CONTEXT: usize = 4096;

/// Bytes of a number in the 16-bit floats models are served in.
pub const SERVED: usize = 2;

/// DeepSeek-V2's head width, `qk_nope_head_dim` (and `v_head_dim`) of its
/// configuration: its latent (`kv_lora_rank`, 512) is four heads wide, its
/// rotary part (`qk_rope_head_dim`, 64) half a head.
pub const DEEPSEEK_V2_HEAD: usize = 128;

/// Exercise 2's model: 48 blocks, 64 query heads of 128 and 8 key/value
/// heads, served in 16-bit floats.
pub const EXERCISE_2: attn::kv_bytes::PublishedModel = attn::kv_bytes::PublishedModel {
    name: "exercise 2",
    layers: 48,
    heads: 64,
    layout: KvLayout::Heads { kv_heads: 8, d_head: 128 },
};

/// The published configurations' caches: numbers per layer and token,
/// bytes per token in 16-bit floats, and GiB for [`TABLE_CONTEXT`] tokens.
pub fn published_table() -> Result<String, ReportError> {
    let mut out = format!(
        "{:<12} {:>6} {:>5}  {:<27} {:>15} {:>20}\n",
        "model",
        "layers",
        "heads",
        "cached per layer and token",
        "bytes per token",
        "GiB for 4,096 tokens"
    );
    for m in PUBLISHED {
        let kept = match m.layout {
            KvLayout::Heads { kv_heads, d_head } => {
                format!("K, V of {kv_heads} heads × {d_head}")
            }
            KvLayout::Latent { d_c, d_r } => format!("latent {d_c} + rotary key {d_r}"),
        };
        let bytes = kv_bytes_per_token(m.layers, m.layout, SERVED)?;
        let gib = (bytes * TABLE_CONTEXT) as f64 / (1u64 << 30) as f64;
        out += &format!(
            "{:<12} {:>6} {:>5}  {kept:<27} {bytes:>15} {gib:>20.2}\n",
            m.name, m.layers, m.heads
        );
    }
    Ok(out.trim_end().to_string())
}

/// The variants' table: per attention, the cache's bytes per token, the
/// parameters, each seed's validation loss, their mean and range.
pub fn variant_table(variants: &[Variant]) -> String {
    let mut out = String::from(
        "kv heads  bytes/token  parameters  seed 1  seed 2  seed 3    mean  max − min\n",
    );
    for g in ATTENTIONS {
        let runs: Vec<&Variant> = variants.iter().filter(|v| v.attention == g).collect();
        let Some(first) = runs.first() else { continue };
        let losses = losses_of(variants, g);
        let mean = mean(&losses);
        let (lo, hi) = range(&losses);
        let seeds: String = losses.iter().map(|l| format!("  {l:.4}")).collect();
        out += &format!(
            "{:>8}  {:>11}  {:>10}{seeds}  {mean:.4}  {:>9.4}\n",
            g.to_string(),
            first.bytes,
            first.parameters,
            hi - lo
        );
    }
    out.trim_end().to_string()
}

/// The validation losses of the runs of `attention`, in the file's order.
pub fn losses_of(variants: &[Variant], attention: Attention) -> Vec<f64> {
    variants.iter().filter(|v| v.attention == attention).map(|v| v.validation_loss).collect()
}

pub use crate::measurements::mean;

/// The lowest and highest of `values`.
pub fn range(values: &[f64]) -> (f64, f64) {
    values.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| (lo.min(v), hi.max(v)))
}

/// The mean over seeds of one cache's loss in each bucket of the variant
/// `attention`: `(first position, mean, lowest seed, highest seed)`.
pub fn long_text_curve(
    rows: &[LongText],
    attention: Attention,
    cache: Cache,
) -> Vec<(usize, f64, f64, f64)> {
    let mut positions: Vec<usize> = rows.iter().map(|r| r.first_position).collect();
    positions.sort_unstable();
    positions.dedup();
    positions
        .into_iter()
        .map(|p| {
            let values: Vec<f64> = rows
                .iter()
                .filter(|r| r.attention == attention && r.first_position == p)
                .map(cache)
                .collect();
            let (lo, hi) = range(&values);
            (p, values.iter().sum::<f64>() / values.len() as f64, lo, hi)
        })
        .collect()
}

/// Which of a [`LongText`]'s losses: one cache's.
pub type Cache = fn(&LongText) -> f64;

/// The caches of the long-text table, named as the table names them.
pub const CACHES: [(&str, Cache); 3] =
    [("all tokens", |r| r.all), ("window of 64", |r| r.window), ("4 sinks + 60", |r| r.sinks)];

pub use fresh::BUCKET;

/// The last position predicted along a long text ([`fresh::LONG_TEXTS`]).
pub const LAST_POSITION: usize = fresh::LONG_TEXTS.1 - 1;

/// Positions the long-text table shows (the first of each bucket).
pub const TABLE_POSITIONS: [usize; 6] = [1, 49, 113, 193, 305, 497];

/// The long-text table for the variant `attention`: per position bucket,
/// each cache's loss, mean over the seeds.
pub fn long_text_table(rows: &[LongText], attention: Attention) -> String {
    let curves: Vec<_> = CACHES.iter().map(|(_, f)| long_text_curve(rows, attention, *f)).collect();
    let mut out = format!(
        "{:>10}  {:>10}  {:>12}  {:>12}\n",
        "positions", CACHES[0].0, CACHES[1].0, CACHES[2].0
    );
    for p in TABLE_POSITIONS {
        let at =
            |c: &Vec<(usize, f64, f64, f64)>| c.iter().find(|r| r.0 == p).map_or(f64::NAN, |r| r.1);
        out += &format!(
            "{:>10}  {:>10.3}  {:>12.3}  {:>12.3}\n",
            format!("{p}–{}", (p + BUCKET - 1).min(LAST_POSITION)),
            at(&curves[0]),
            at(&curves[1]),
            at(&curves[2])
        );
    }
    out.trim_end().to_string()
}

/// Chapter 16's model with rotary positions and `attention`: the chapter's
/// variants, of one depth and width.
pub fn variant(attention: Attention) -> LmConfig {
    let rotary = LmConfig { positions: Positions::Rotary, ..SHAKESPEARE_MODEL };
    match attention {
        Attention::KvHeads(kv_heads) => LmConfig { kv_heads, ..rotary },
        Attention::Latent => LmConfig { latent: Some(LATENT), ..rotary },
    }
}

/// For the variant `attention`, over the seeds' mean curves: the mean
/// loss within the context (positions 1 to 64, where the three caches hold
/// the same tokens), the mean past it through all tokens and through the
/// window, and the largest gap between sinks and window, of the means and
/// of any one seed.
pub fn long_text_summary(rows: &[LongText], attention: Attention) -> [f64; 5] {
    let curve = |f: Cache| long_text_curve(rows, attention, f);
    let mean = |c: &[(usize, f64, f64, f64)], inside: bool| {
        let v: Vec<f64> = c.iter().filter(|r| (r.0 < 64) == inside).map(|r| r.1).collect();
        v.iter().sum::<f64>() / v.len().max(1) as f64
    };
    let (all, window, sinks) = (curve(|r| r.all), curve(|r| r.window), curve(|r| r.sinks));
    let gap = window.iter().zip(&sinks).map(|(w, s)| (w.1 - s.1).abs()).fold(0.0, f64::max);
    let seed_gap = rows
        .iter()
        .filter(|r| r.attention == attention)
        .map(|r| (r.window - r.sinks).abs())
        .fold(0.0, f64::max);
    [mean(&all, true), mean(&all, false), mean(&window, false), gap, seed_gap]
}

/// [`long_text_summary`] for every variant, one line each.
pub fn long_text_summaries(rows: &[LongText]) -> String {
    let mut out = String::from(
        "kv heads  within 64  past 64: all tokens  window  max |sinks − window|: means  any seed\n",
    );
    for g in SHARING {
        let [inside, all, window, gap, seed_gap] = long_text_summary(rows, g);
        out += &format!(
            "{:>8}  {inside:>9.3}  {all:>19.3}  {window:>6.3}  {gap:>27.3}  {seed_gap:>8.3}\n",
            g.to_string()
        );
    }
    out.trim_end().to_string()
}

/// Seconds to write 256 characters through the cache, per variant
/// (`book/data/ch17-speed.tsv`), and the file's provenance.
pub fn speeds() -> Result<(Vec<(Attention, f64)>, crate::provenance::Provenance), ReportError> {
    let file = "ch17-speed.tsv";
    let (source, _) = crate::provenance::Provenance::read(file)?;
    let rows = rows(file, 2)?
        .iter()
        .map(|f| Ok((number(file, &f[0])?, number(file, &f[1])?)))
        .collect::<Result<Vec<_>, ReportError>>()?;
    Ok((rows, source))
}

/// Characters written in the speed measurement.
pub const WRITTEN: usize = 256;

/// The speed table: milliseconds and characters per second, per variant.
pub fn speed_table(rows: &[(Attention, f64)]) -> String {
    let mut out = String::from("kv heads  ms for 256 characters  characters/s\n");
    for &(g, seconds) in rows {
        out += &format!(
            "{:>8}  {:>21.1}  {:>12.0}\n",
            g.to_string(),
            seconds * 1e3,
            WRITTEN as f64 / seconds
        );
    }
    out.trim_end().to_string()
}

/// Each run's heads' mean attention weight on the first position, and
/// uniform weights' (`book/data/ch17-first-position.tsv`): `(attention, seed,
/// block, head, weight, uniform)`.
pub type FirstPosition = Vec<(Attention, u64, usize, usize, f64, f64)>;

/// Reads `book/data/ch17-first-position.tsv`.
pub fn first_position() -> Result<(FirstPosition, crate::provenance::Provenance), ReportError> {
    let file = "ch17-first-position.tsv";
    let (source, _) = crate::provenance::Provenance::read(file)?;
    let rows = rows(file, 6)?
        .iter()
        .map(|f| {
            Ok((
                number(file, &f[0])?,
                number(file, &f[1])?,
                number(file, &f[2])?,
                number(file, &f[3])?,
                number(file, &f[4])?,
                number(file, &f[5])?,
            ))
        })
        .collect::<Result<Vec<_>, ReportError>>()?;
    Ok((rows, source))
}

/// Per variant: the largest mean weight any head of any seed puts on the
/// first position, and uniform weights' (the same for every head).
pub fn first_position_report(rows: &FirstPosition) -> String {
    let mut out =
        String::from("kv heads  largest weight on position 0, 3 seeds × 16 heads  uniform\n");
    for g in ATTENTIONS {
        let heads: Vec<_> = rows.iter().filter(|r| r.0 == g).collect();
        let largest = heads.iter().map(|r| r.4).fold(0.0, f64::max);
        let uniform = heads.first().map_or(f64::NAN, |r| r.5);
        out += &format!("{:>8}  {largest:>47.3}  {uniform:>7.3}\n", g.to_string());
    }
    out.trim_end().to_string()
}
