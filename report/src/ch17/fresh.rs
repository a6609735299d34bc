//! What the slide costs: along the long texts of `cargo xtask train kv`,
//! the loss through a sliding window of the last `context` tokens against
//! a fresh read of the same `context` characters, at the same positions.
//! Both see the same characters before each prediction; the window's keys
//! in the upper blocks also carry characters that have left it, a fresh
//! read's do not (chapter 16). Evaluated on chapter 16's committed rotary
//! model, which is chapter 17's multi-head run of seed 1
//! (`book/data/ch17-fresh-read.tsv`, written by `cargo run --release
//! --example ch17_fresh_read_data`; it needs the corpus).

use attn::lm::{Forgetting, LanguageModel};

use crate::error::ReportError;
use crate::measurements::number;
use crate::provenance::Provenance;

/// The long texts: how many, and how long (8 contexts), as `cargo xtask
/// train kv` reads them.
pub const LONG_TEXTS: (usize, usize) = (8, 512);

/// Positions per bucket whose losses are averaged.
pub const BUCKET: usize = 16;

/// Where each of the [`LONG_TEXTS`] starts in a text of `len` characters:
/// evenly spaced, the first at 0.
pub fn long_text_starts(len: usize) -> Vec<usize> {
    let (count, long) = LONG_TEXTS;
    (0..count).map(|i| i * len.saturating_sub(long) / count).collect()
}

/// The loss at each position `p` of `text` from `context + 1` on, of
/// predicting `text[p]` from a fresh read of the `context` characters
/// before it, `text[p − context..p]`, at positions `0..context`: one
/// forward pass per position, `batch` at a time. `(p, loss)`, in order.
pub fn fresh_losses(
    model: &LanguageModel<f32>,
    text: &[usize],
    batch: usize,
) -> Result<Vec<(usize, f64)>, ReportError> {
    let context = model.config().context;
    let positions: Vec<usize> = (context + 1..text.len()).collect();
    let mut out = Vec::with_capacity(positions.len());
    for chunk in positions.chunks(batch.max(1)) {
        let inputs: Vec<Vec<usize>> =
            chunk.iter().map(|&p| text[p - context..p].to_vec()).collect();
        let fwd = model.forward(&inputs)?;
        for (b, &p) in chunk.iter().enumerate() {
            let row = fwd.logits().row(b * context + context - 1).to_vec();
            out.push((p, cross_entropy(&row, text[p])));
        }
    }
    Ok(out)
}

/// `−ln softmax(logits)[target]`, in `f64`.
pub(crate) fn cross_entropy(logits: &[f32], target: usize) -> f64 {
    let largest = logits.iter().fold(f32::NEG_INFINITY, |m, &x| m.max(x)) as f64;
    let sum: f64 = logits.iter().map(|&x| (x as f64 - largest).exp()).sum();
    largest + sum.ln() - logits[target] as f64
}

/// The loss at each position `p` of `text` from `context + 1` on, read one
/// token at a time through a cache of the last `context` tokens at their
/// positions in the text (`Forgetting::Window`): `(p, loss)`, in order.
pub fn window_losses(
    model: &LanguageModel<f32>,
    text: &[usize],
) -> Result<Vec<(usize, f64)>, ReportError> {
    let context = model.config().context;
    let cache = model.new_cache_forgetting(Forgetting::Window(context))?;
    // losses_through's k-th loss predicts text[k + 1].
    let losses = model.losses_through(text, cache)?;
    Ok(losses.into_iter().enumerate().map(|(k, l)| (k + 1, l)).filter(|r| r.0 > context).collect())
}

/// One bucket of positions past the context: the mean loss over the long
/// texts through the sliding window and by a fresh read.
#[derive(Debug, Clone, PartialEq)]
pub struct FreshRead {
    /// The first position of the bucket ([`BUCKET`] positions, fewer at the
    /// end of the text).
    pub first_position: usize,
    /// Through the sliding window of the last `context` tokens.
    pub window: f64,
    /// Reading the last `context` characters afresh.
    pub fresh: f64,
}

/// Both losses along the [`LONG_TEXTS`] of `validation` (token ids), per
/// bucket of positions past the context, averaged over the texts.
pub fn fresh_reads(
    model: &LanguageModel<f32>,
    validation: &[usize],
) -> Result<Vec<FreshRead>, ReportError> {
    let (count, long) = LONG_TEXTS;
    let context = model.config().context;
    let mut sums = vec![[0.0; 2]; long - 1 - context];
    for start in long_text_starts(validation.len()) {
        let text = &validation[start..start + long];
        let window = window_losses(model, text)?;
        let fresh = fresh_losses(model, text, 64)?;
        for ((sum, w), f) in sums.iter_mut().zip(&window).zip(&fresh) {
            assert_eq!(w.0, f.0, "the two reads score the same positions");
            sum[0] += w.1 / count as f64;
            sum[1] += f.1 / count as f64;
        }
    }
    // Buckets of positions 1–16, 17–32, …: those past the context.
    let first = context + 1;
    Ok(sums
        .chunks(BUCKET)
        .enumerate()
        .map(|(b, bucket)| {
            let mean = |i: usize| bucket.iter().map(|s| s[i]).sum::<f64>() / bucket.len() as f64;
            FreshRead { first_position: first + b * BUCKET, window: mean(0), fresh: mean(1) }
        })
        .collect())
}

/// The two reads past the context, for the chapter's example to print:
/// the mean of the buckets' losses through the window and by a fresh read,
/// and the largest difference in any bucket.
pub fn fresh_read_report(rows: &[FreshRead]) -> String {
    let mean = |f: fn(&FreshRead) -> f64| rows.iter().map(f).sum::<f64>() / rows.len() as f64;
    let widest = rows.iter().map(|r| (r.window - r.fresh).abs()).fold(0.0, f64::max);
    format!(
        "past the context: sliding window {:.3}, fresh read of the same characters {:.3}; \
         largest difference in a bucket of {BUCKET} positions {widest:.4}",
        mean(|r| r.window),
        mean(|r| r.fresh)
    )
}

/// The data file's name.
pub const FRESH_FILE: &str = "ch17-fresh-read.tsv";

/// The lines of [`FRESH_FILE`] after its header: the column names, then a
/// row per bucket.
pub fn fresh_read_rows(rows: &[FreshRead]) -> String {
    let mut out = String::from("first_position\twindow\tfresh\n");
    for r in rows {
        out += &format!("{}\t{:.5}\t{:.5}\n", r.first_position, r.window, r.fresh);
    }
    out
}

/// Reads `book/data/ch17-fresh-read.tsv` and its provenance.
pub fn read_fresh_reads() -> Result<(Vec<FreshRead>, Provenance), ReportError> {
    let (source, _) = Provenance::read(FRESH_FILE)?;
    let rows = super::rows(FRESH_FILE, 3)?
        .iter()
        .map(|f| {
            Ok(FreshRead {
                first_position: number(FRESH_FILE, &f[0])?,
                window: number(FRESH_FILE, &f[1])?,
                fresh: number(FRESH_FILE, &f[2])?,
            })
        })
        .collect::<Result<Vec<_>, ReportError>>()?;
    Ok((rows, source))
}

#[cfg(test)]
mod tests {
    use super::*;
    use attn::lm::{LmConfig, Positions, SHAKESPEARE_MODEL};
    use attn::nn::Parameters;

    const SMALL: LmConfig = LmConfig {
        vocab: 7,
        context: 6,
        d_model: 8,
        heads: 2,
        kv_heads: 2,
        layers: 1,
        d_ff: 12,
        positions: Positions::Rotary,
        latent: None,
        ..SHAKESPEARE_MODEL
    };

    fn text() -> Vec<usize> {
        (0..40).map(|i| (i * i + 3 * i) % 7).collect()
    }

    /// A fresh read at position p is the model's forward pass over the
    /// context characters before p, whose last row predicts p.
    #[test]
    fn a_fresh_read_is_the_forward_pass_over_the_last_context() {
        let model = LanguageModel::<f32>::new(SMALL, 5).unwrap();
        let text = text();
        let fresh = fresh_losses(&model, &text, 4).unwrap();
        assert_eq!(fresh.first().unwrap().0, SMALL.context + 1);
        assert_eq!(fresh.len(), text.len() - SMALL.context - 1);
        for &(p, loss) in &fresh {
            let logits = model.next_logits(&text[p - SMALL.context..p]).unwrap();
            let expected = cross_entropy(&logits.to_vec(), text[p]);
            assert!((loss - expected).abs() < 1e-9, "position {p}: {loss} against {expected}");
        }
    }

    /// With one block a key depends on its own token alone, so a sliding
    /// window and a fresh read of rotary positions see the same keys at the
    /// same distances: they agree. With two, the window's keys in block 2
    /// carry characters that have left it, and they do not.
    #[test]
    fn one_block_cannot_tell_the_window_from_a_fresh_read_and_two_can() {
        let text = text();
        let gap = |layers: usize| {
            let mut model = LanguageModel::<f32>::new(LmConfig { layers, ..SMALL }, 5).unwrap();
            // GPT-2's initialisation is too small for a key to carry much of
            // its neighbours: weights 5 times as large make attention sharp.
            for w in model.slices_mut() {
                w.iter_mut().for_each(|x| *x *= 5.0);
            }
            let window = window_losses(&model, &text).unwrap();
            let fresh = fresh_losses(&model, &text, 5).unwrap();
            assert_eq!(window.iter().map(|w| w.0).collect::<Vec<_>>(), {
                fresh.iter().map(|f| f.0).collect::<Vec<_>>()
            });
            window.iter().zip(&fresh).map(|(w, f)| (w.1 - f.1).abs()).fold(0.0, f64::max)
        };
        assert!(gap(1) < 1e-4, "one block: {}", gap(1));
        assert!(gap(2) > 1e-3, "two blocks: {}", gap(2));
    }

    #[test]
    fn the_long_texts_are_evenly_spaced_and_fit() {
        let (count, long) = LONG_TEXTS;
        let starts = long_text_starts(10_000);
        assert_eq!(starts.len(), count);
        assert_eq!(starts[0], 0);
        assert!(starts.windows(2).all(|w| w[1] > w[0]));
        assert!(starts[count - 1] + long <= 10_000);
    }

    #[test]
    fn buckets_start_past_the_context() {
        let model = LanguageModel::<f32>::new(SMALL, 5).unwrap();
        let validation: Vec<usize> = (0..2000).map(|i| (i * 7 + i / 3) % 7).collect();
        let rows = fresh_reads(&model, &validation).unwrap();
        assert_eq!(rows[0].first_position, SMALL.context + 1);
        assert!(rows.windows(2).all(|w| w[1].first_position == w[0].first_position + BUCKET));
        let text = fresh_read_rows(&rows);
        assert_eq!(text.lines().count(), rows.len() + 1);
        let report = fresh_read_report(&rows);
        assert!(report.starts_with("past the context: sliding window "), "{report}");
    }
}
