//! Chapter 16's positive control for induction heads: a two-block model
//! trained on periodic random sequences, where copying is the only way to
//! predict, so that the scorer and the ablation of the chapter can be seen
//! finding heads that exist; then the same probes drawn from the corpus's
//! own characters, for the book's model.

use attn::lm::{
    induction_scores, periodic_training_batch, Batch, InductionScores, LanguageModel, LmConfig,
    LmTraining, SplitMix64, SHAKESPEARE_MODEL, SHAKESPEARE_TRAINING,
};

use crate::ch16::{number, HeadLine, LogLine};
use crate::ch16_report::{verse_losses, INDUCTION_VERSE};
use crate::error::ReportError;
use crate::measurements::{data_file, data_rows};
use crate::show::table;

/// The control's model: the book's, with 2 blocks 64 wide (feed-forward
/// layers 256 wide) instead of 4 blocks 128 wide.
pub const CONTROL_MODEL: LmConfig =
    LmConfig { layers: 2, d_model: 64, d_ff: 256, ..SHAKESPEARE_MODEL };

/// The control's recipe: the book's, for 3,000 steps, logged every 50.
pub const CONTROL_TRAINING: LmTraining =
    LmTraining { steps: 3000, log_every: 50, ..SHAKESPEARE_TRAINING };

/// The control's seeds (its weights and its training's order of batches).
pub const CONTROL_SEEDS: [u64; 3] = [1, 2, 3];

/// The held-out periodic sequences its validation loss is measured on:
/// the generator's seed, and how many.
pub const CONTROL_VALIDATION: (u64, usize) = (1_000_003, 48);

/// The validation batch of [`CONTROL_VALIDATION`].
pub fn control_validation() -> Result<(Batch, Vec<Option<usize>>), ReportError> {
    let (seed, count) = CONTROL_VALIDATION;
    Ok(periodic_training_batch(&CONTROL_MODEL, &mut SplitMix64::new(seed), count)?)
}

/// The positive control's trained weights (seed 1),
/// `book/data/ch16-control-weights.safetensors`.
pub fn control_model() -> Result<LanguageModel<f32>, ReportError> {
    crate::ch16::read_model("ch16-control-weights.safetensors")
}

/// The largest `score` of any head of `block` (from 0) at `seed`'s `step`.
pub fn largest(
    heads: &[HeadLine],
    seed: u64,
    step: usize,
    block: usize,
    score: fn(&HeadLine) -> f64,
) -> f64 {
    heads
        .iter()
        .filter(|h| h.seed == seed && h.step == step && h.block == block)
        .map(score)
        .fold(f64::NEG_INFINITY, f64::max)
}

/// A head: its block and its head, from 0.
pub type Head = (usize, usize);

/// A head is flagged as a previous-token or prefix-matching head when its
/// score is at least this many times that of attention spread evenly over
/// the causal row.
pub const FLAG: f64 = 5.0;

/// The heads (block, head, from 0) that `scores` flag, with [`FLAG`], as
/// previous-token heads and as prefix-matching heads, on sequences of
/// `half` tokens read twice (prefix-matching heads in block 2 and later
/// only: block 1's keys know only their own token and position).
pub fn flagged(scores: &InductionScores, half: usize) -> (Vec<Head>, Vec<Head>) {
    let (uniform_previous, uniform_prefix) = crate::ch16_report::uniform_scores(half);
    let over = |m: &ndarray::Array2<f64>, floor: f64, first: usize| {
        let at = m.indexed_iter().filter(|&((b, _), &x)| b >= first && x >= FLAG * floor);
        at.map(|(at, _)| at).collect()
    };
    (
        over(&scores.previous_token, uniform_previous, 0),
        over(&scores.prefix_matching, uniform_prefix, 1),
    )
}

/// One row of the ablation: the losses on the chapter's repeated random
/// sequences without some heads.
#[derive(Debug, Clone, PartialEq)]
pub struct Ablation {
    /// The run's seed.
    pub seed: u64,
    /// What was removed, in words.
    pub removed: String,
    /// The heads removed, `(block, head)` from 1.
    pub heads: Vec<(usize, usize)>,
    /// The loss on the first halves.
    pub first_half_loss: f64,
    /// The loss on the repeats.
    pub repeat_loss: f64,
    /// The largest prefix-matching score of block 2's heads left.
    pub prefix_after: f64,
}

/// Removes from `model` (the run of `seed`): nothing; the previous-token
/// heads of block 1 that [`flagged`] finds; block 1's other heads; the
/// prefix-matching heads of block 2 that it finds; and the strongest of
/// those alone. A head is removed as [`LanguageModel::without_heads`]
/// does: its output is zeroed before `W_O`. Measures each on the
/// chapter's repeated random sequences, with the largest prefix-matching
/// score of block 2's heads that are left.
pub fn ablation(model: &LanguageModel<f32>, seed: u64) -> Result<Vec<Ablation>, ReportError> {
    let sequences = crate::ch16::repeats(model.config().vocab)?;
    let scores = induction_scores(model, &sequences)?;
    let (previous, prefix) = flagged(&scores, crate::ch16::REPEATS.2);
    let in_block = |heads: &[(usize, usize)], block: usize| -> Vec<(usize, usize)> {
        heads.iter().filter(|h| h.0 == block).map(|&(b, h)| (b + 1, h + 1)).collect()
    };
    let previous = in_block(&previous, 0);
    let others: Vec<(usize, usize)> =
        (1..=model.config().heads).map(|h| (1, h)).filter(|h| !previous.contains(h)).collect();
    let prefix = in_block(&prefix, 1);
    let strongest = prefix
        .iter()
        .copied()
        .max_by(|a, b| {
            scores.prefix_matching[[a.0 - 1, a.1 - 1]]
                .total_cmp(&scores.prefix_matching[[b.0 - 1, b.1 - 1]])
        })
        .into_iter()
        .collect();
    [
        ("none", vec![]),
        ("previous-token heads of block 1", previous),
        ("the other heads of block 1", others),
        ("prefix-matching heads of block 2", prefix),
        ("the strongest of those alone", strongest),
    ]
    .into_iter()
    .map(|(removed, heads)| {
        let s = induction_scores(&model.without_heads(&heads)?, &sequences)?;
        let left = (0..model.config().heads).filter(|&h| !heads.contains(&(2, h + 1)));
        let prefix_after = left.map(|h| s.prefix_matching[[1, h]]).fold(f64::NAN, f64::max);
        Ok(Ablation {
            seed,
            removed: removed.into(),
            heads,
            first_half_loss: s.first_half_loss,
            repeat_loss: s.repeat_loss,
            prefix_after,
        })
    })
    .collect()
}

/// The columns of `book/data/ch16-control-ablation.tsv`.
pub const ABLATION_COLUMNS: &str =
    "seed\tremoved\theads\tfirst_half_loss\trepeat_loss\tprefix_after";

/// Heads as the ablation's file writes them: `block.head`, by commas.
fn head_list(heads: &[(usize, usize)]) -> String {
    let names: Vec<String> = heads.iter().map(|(b, h)| format!("{b}.{h}")).collect();
    if names.is_empty() {
        "-".into()
    } else {
        names.join(",")
    }
}

/// One line of the ablation's file.
pub fn ablation_line(a: &Ablation) -> String {
    format!(
        "{}\t{}\t{}\t{:.5}\t{:.5}\t{:.5}",
        a.seed,
        a.removed,
        head_list(&a.heads),
        a.first_half_loss,
        a.repeat_loss,
        a.prefix_after
    )
}

/// Every seed's ablation, as the control's training run wrote it.
pub fn control_ablation() -> Result<Vec<Ablation>, ReportError> {
    let file = "ch16-control-ablation.tsv";
    let text = data_file(file)?;
    let bad = |field: &str| ReportError::MissingDataFile {
        path: format!("book/data/{file}"),
        reason: format!("{field:?} is not a list of heads"),
    };
    data_rows(&text, '\t')
        .map(|f| {
            let heads = match f[2] {
                "-" => vec![],
                list => list
                    .split(',')
                    .map(|bh| {
                        let (b, h) = bh.split_once('.').ok_or_else(|| bad(bh))?;
                        Ok((number(file, b)?, number(file, h)?))
                    })
                    .collect::<Result<_, ReportError>>()?,
            };
            Ok(Ablation {
                seed: number(file, f[0])?,
                removed: f[1].to_string(),
                heads,
                first_half_loss: number(file, f[3])?,
                repeat_loss: number(file, f[4])?,
                prefix_after: number(file, f[5])?,
            })
        })
        .collect()
}

/// The ablation as a table.
pub fn ablation_table(rows: &[Ablation]) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|a| {
            let heads: Vec<String> = a.heads.iter().map(|(b, h)| format!("{b}.{h}")).collect();
            vec![
                a.seed.to_string(),
                a.removed.clone(),
                heads.join(" "),
                format!("{:.3}", a.first_half_loss),
                format!("{:.3}", a.repeat_loss),
                if a.prefix_after.is_nan() {
                    "–".into()
                } else {
                    format!("{:.3}", a.prefix_after)
                },
            ]
        })
        .collect();
    table(&["seed", "removed", "block.head", "first half", "repeat", "prefix matching left"], &rows)
}

/// Per seed, at each of `steps`: the losses on the first halves and the
/// repeats, the largest previous-token score in block 1 and the largest
/// prefix-matching score in block 2.
pub fn control_table(log: &[LogLine], heads: &[HeadLine], steps: &[usize]) -> String {
    let mut rows = Vec::new();
    for seed in CONTROL_SEEDS {
        for &step in steps {
            let Some(l) = log.iter().find(|l| l.seed == seed && l.step == step) else { continue };
            rows.push(vec![
                seed.to_string(),
                step.to_string(),
                format!("{:.2}", l.first_half_loss),
                format!("{:.2}", l.repeat_loss),
                format!("{:.3}", largest(heads, seed, step, 0, |h| h.previous_token)),
                format!("{:.3}", largest(heads, seed, step, 1, |h| h.prefix_matching)),
            ]);
        }
    }
    table(
        &[
            "seed",
            "step",
            "first half",
            "repeat",
            "previous token, block 1",
            "prefix matching, block 2",
        ],
        &rows,
    )
}

/// The first logged step of `seed` at which the loss on the repeat is
/// below half the loss on the first half: where copying has taken over.
pub fn copying_step(log: &[LogLine], seed: u64) -> Option<usize> {
    log.iter()
        .filter(|l| l.seed == seed && l.repeat_loss < l.first_half_loss / 2.0)
        .map(|l| l.step)
        .min()
}

/// The chapter's repeated sequences drawn from a text rather than
/// uniformly over the vocabulary: `count` windows of `half` consecutive
/// characters of `text`, each at a random place (SplitMix64, `seed`), each
/// read twice.
pub fn corpus_repeats(text: &[u8], seed: u64, count: usize, half: usize) -> Vec<Vec<usize>> {
    let mut rng = SplitMix64::new(seed);
    let places = text.len().saturating_sub(half).max(1) as u64;
    (0..count)
        .map(|_| {
            let o = (rng.next_u64() % places) as usize;
            let first: Vec<usize> =
                text.get(o..o + half).unwrap_or(&[]).iter().map(|&c| usize::from(c)).collect();
            first.iter().chain(&first).copied().collect()
        })
        .collect()
}

/// What the book's model does on `probes` (each a window of the corpus
/// read twice): its losses, and its strongest
/// previous-token and prefix-matching scores, against [`FLAG`] times those
/// of attention spread evenly.
pub fn corpus_probe_report(
    model: &LanguageModel<f32>,
    probes: &[Vec<usize>],
) -> Result<String, ReportError> {
    let s = induction_scores(model, probes)?;
    let half = probes.first().map_or(0, Vec::len) / 2;
    let (uniform_previous, uniform_prefix) = crate::ch16_report::uniform_scores(half);
    let (previous, prefix) = flagged(&s, half);
    let best = |m: &ndarray::Array2<f64>| m.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let names = |heads: &[(usize, usize)]| {
        let names: Vec<String> =
            heads.iter().map(|(b, h)| format!("block {} head {}", b + 1, h + 1)).collect();
        if names.is_empty() {
            "none".to_string()
        } else {
            names.join(", ")
        }
    };
    Ok(format!(
        "the book's model on {} windows of {half} characters of the validation split, each \
         read twice: first half {:.3}, repeat {:.3}; largest previous-token score {:.3}, largest \
         prefix-matching score in blocks 2-{} {:.3} (marks {:.3} and {:.3}); marked as \
         previous-token heads: {}; as prefix-matching heads: {}",
        probes.len(),
        s.first_half_loss,
        s.repeat_loss,
        best(&s.previous_token),
        model.config().layers,
        best(&s.prefix_matching.slice(ndarray::s![1.., ..]).to_owned()),
        FLAG * uniform_previous,
        FLAG * uniform_prefix,
        names(&previous),
        names(&prefix)
    ))
}

/// The steps of the control's table.
pub const CONTROL_STEPS: [usize; 5] = [500, 1000, 1500, 2000, 3000];

/// The control's strongest prefix-matching head of block 2 on the chapter's
/// repeated random sequences, `(block, head)` from 0: the head its figure
/// shows.
pub fn control_figure_head(model: &LanguageModel<f32>) -> Result<(usize, usize), ReportError> {
    let s = induction_scores(model, &crate::ch16::repeats(model.config().vocab)?)?;
    let row = s.prefix_matching.row(1);
    let head = (0..row.len()).max_by(|&a, &b| row[a].total_cmp(&row[b])).unwrap_or(0);
    Ok((1, head))
}

/// What the control does on [`INDUCTION_VERSE`] read twice.
pub fn control_verse_report(model: &LanguageModel<f32>) -> Result<String, ReportError> {
    let s = verse_losses(model)?;
    let (block, head) = control_figure_head(model)?;
    Ok(format!(
        "the control (seed 1) on \"{INDUCTION_VERSE}\" read twice: first reading {:.3}, repeat \
         {:.3}; block {} head {} puts {:.3} on the position after the same place in the first reading",
        s.first_half_loss,
        s.repeat_loss,
        block + 1,
        head + 1,
        s.prefix_matching[[block, head]]
    ))
}

/// The control's table at [`CONTROL_STEPS`], and the step at which each
/// run's repeat first costs less than half its first half.
pub fn control_report(log: &[LogLine], heads: &[HeadLine]) -> String {
    let mut out = control_table(log, heads, &CONTROL_STEPS);
    for seed in CONTROL_SEEDS {
        let step = copying_step(log, seed).map_or("never".into(), |s| s.to_string());
        out.push_str(&format!(
            "\nseed {seed}: the repeat's loss first below half the first half's at step {step}"
        ));
    }
    out
}

/// The ablation of every run, and the control on the verse.
pub fn control_ablation_report(
    rows: &[Ablation],
    model: &LanguageModel<f32>,
) -> Result<String, ReportError> {
    Ok(format!(
        "{}\n{}\n{}",
        ablation_table(rows),
        control_verse_report(model)?,
        other_length_report(model)?
    ))
}

/// The half of [`other_length_report`]'s sequences: not the 32 of the
/// chapter's, so that a head that looks a fixed 31 positions back scores
/// no better than chance on them.
pub const OTHER_HALF: usize = 20;

/// The control's block 2 on the chapter's repeated random sequences with
/// halves of [`OTHER_HALF`] characters: its prefix-matching scores.
pub fn other_length_report(model: &LanguageModel<f32>) -> Result<String, ReportError> {
    let (seed, count, _) = crate::ch16::REPEATS;
    let sequences = attn::lm::repeated_sequences(seed, count, OTHER_HALF, model.config().vocab)?;
    let s = induction_scores(model, &sequences)?;
    let row = s.prefix_matching.row(1);
    let (low, high) =
        row.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &x| (l.min(x), h.max(x)));
    let (_, uniform) = crate::ch16_report::uniform_scores(OTHER_HALF);
    Ok(format!(
        "the control (seed 1) on {OTHER_HALF} random characters read twice: block 2's \
         prefix-matching scores {low:.3} to {high:.3} (attention spread evenly: {uniform:.3}); \
         first half {:.3}, repeat {:.3}",
        s.first_half_loss, s.repeat_loss
    ))
}
