//! The tables chapter 16's example prints and its tests recompute.

use attn::lm::{Decoding, LanguageModel, Sampler};

use crate::ch16::{vocabulary, HeadLine, LogLine};
use crate::error::ReportError;
use crate::show::table;

/// The steps of the training log the chapter shows.
pub const REPORT_STEPS: [usize; 7] = [100, 200, 300, 500, 1000, 1500, 2000];

/// The line of verse Figures 16.3 and 16.5 repeat: 32 characters, read twice.
pub const INDUCTION_VERSE: &str = "Shall I compare thee to a summer";

/// The largest difference allowed between cached and recomputed logits.
pub const CACHE_TOLERANCE: f32 = 1e-4;

/// Training and validation loss of each seed at `steps`.
pub fn loss_table(log: &[LogLine], steps: &[usize]) -> String {
    let cell = |l: &LogLine| format!("{:.3} / {:.3}", l.train_loss, l.validation_loss);
    per_seed(log, steps, "seed 1: train / validation", cell)
}

/// A table of one cell per seed (columns) and step (rows).
fn per_seed(
    log: &[LogLine],
    steps: &[usize],
    first: &str,
    cell: impl Fn(&LogLine) -> String,
) -> String {
    let rows: Vec<Vec<String>> = steps
        .iter()
        .map(|&step| {
            let mut row = vec![step.to_string()];
            for seed in [1, 2, 3] {
                let line = log.iter().find(|l| l.seed == seed && l.step == step);
                row.push(line.map_or("–".into(), &cell));
            }
            row
        })
        .collect();
    table(&["step", first, "seed 2", "seed 3"], &rows)
}

/// Generates the context's worth of text greedily twice, through the KV
/// cache and by recomputing every step, and compares the logits at every
/// step and the tokens.
pub fn cache_check(model: &LanguageModel<f32>) -> Result<String, ReportError> {
    let context = model.config().context;
    let prompt = vocabulary().encode("Romeo.\n")?;
    let greedy = Sampler::new(0.0)?;
    let count = context - prompt.len();
    let cached = model.generate(&prompt, count, &greedy, 0, Decoding::Cached)?;
    let recomputed = model.generate(&prompt, count, &greedy, 0, Decoding::Recompute)?;
    let mut cache = model.new_cache();
    let mut worst = 0.0_f32;
    for t in 0..context {
        let a = model.step(cached[t], &mut cache)?;
        let b = model.next_logits(&cached[..=t])?;
        worst = a.iter().zip(&b).map(|(x, y)| (x - y).abs()).fold(worst, f32::max);
    }
    let within = if worst <= CACHE_TOLERANCE { "within" } else { "NOT within" };
    let same = if cached == recomputed { "the same" } else { "DIFFERENT" };
    Ok(format!(
        "{context} steps: cached and recomputed logits agree {within} {CACHE_TOLERANCE:e} \
         at every step; the greedy texts are {same}"
    ))
}

/// Each seed's loss on the repeats against the first halves, at
/// [`REPORT_STEPS`].
pub fn induction_table(log: &[LogLine]) -> String {
    let cell = |l: &LogLine| format!("{:.2} / {:.2}", l.first_half_loss, l.repeat_loss);
    per_seed(log, &REPORT_STEPS, "seed 1: first half / repeat", cell)
}

/// For each seed, at the last step: the head with the largest
/// previous-token score, and the head with the largest prefix-matching
/// score among blocks 2 to 4 (a head of block 1 cannot match prefixes: its
/// keys know only their own character and position), against what
/// attention spread evenly over the causal row would give (`half`
/// characters, then the same again).
pub fn top_heads(heads: &[HeadLine], half: usize) -> String {
    let last = heads.iter().map(|h| h.step).max().unwrap_or(0);
    let (uniform_previous, uniform_prefix) = uniform_scores(half);
    let name = |h: &HeadLine| format!("block {} head {}", h.block + 1, h.head + 1);
    let rows: Vec<Vec<String>> = [1, 2, 3]
        .iter()
        .filter_map(|&seed| {
            let at_end: Vec<&HeadLine> =
                heads.iter().filter(|h| h.seed == seed && h.step == last).collect();
            let previous =
                at_end.iter().max_by(|a, b| a.previous_token.total_cmp(&b.previous_token))?;
            let prefix = at_end
                .iter()
                .filter(|h| h.block > 0)
                .max_by(|a, b| a.prefix_matching.total_cmp(&b.prefix_matching))?;
            Some(vec![
                seed.to_string(),
                format!("{:.3} ({})", previous.previous_token, name(previous)),
                format!("{:.3} ({})", prefix.prefix_matching, name(prefix)),
            ])
        })
        .collect();
    format!(
        "{}\nattention spread evenly over the causal row: previous token {uniform_previous:.3}, \
         prefix matching {uniform_prefix:.3}",
        table(
            &[
                &format!("seed (step {last})"),
                "largest previous-token score",
                "largest prefix-matching score, blocks 2–4",
            ],
            &rows,
        )
    )
}

/// The previous-token and prefix-matching scores of attention spread
/// evenly over the causal row, on sequences of `half` characters read twice.
pub fn uniform_scores(half: usize) -> (f64, f64) {
    let t = 2 * half;
    let uniform_previous = (1..t).map(|i| 1.0 / (i + 1) as f64).sum::<f64>() / (t - 1) as f64;
    let uniform_prefix = (half..t).map(|i| 1.0 / (i + 1) as f64).sum::<f64>() / half as f64;
    (uniform_previous, uniform_prefix)
}

/// Exercise 1's penalty, and the last characters it applies to.
pub const PENALTY: (f32, usize) = (1.3, 20);

/// Characters exercise 1's demonstration writes past the prompt, at most
/// (it stops at the context).
pub const PENALTY_LENGTH: usize = 100;

/// Exercise 1's output: greedy decoding from [`crate::ch16::PROMPT`]
/// without a penalty and with [`PENALTY`].
pub fn penalty_report(model: &LanguageModel<f32>) -> Result<String, ReportError> {
    let (penalty, window) = PENALTY;
    let mut block = String::new();
    for (label, setting) in [
        ("no penalty".to_string(), (1.0, window)),
        (format!("penalty {penalty} on the last {window} characters"), PENALTY),
    ] {
        let text = penalised_greedy(model, crate::ch16::PROMPT, PENALTY_LENGTH, setting)?;
        block += &format!("-- {label} --\n{text}\n\n");
    }
    Ok(block.trim_end().to_string())
}

/// Exercise 1's demonstration: greedy decoding from `prompt` for `count`
/// tokens through the KV cache, each step's logits first penalised by
/// `penalty` for every token among the last `window` of the text.
pub fn penalised_greedy(
    model: &LanguageModel<f32>,
    prompt: &str,
    count: usize,
    (penalty, window): (f32, usize),
) -> Result<String, ReportError> {
    let vocab = vocabulary();
    let mut tokens = vocab.encode(prompt)?;
    let mut cache = model.new_cache();
    let mut logits = None;
    for &t in &tokens {
        logits = Some(model.step(t, &mut cache)?);
    }
    for _ in 0..count {
        let mut z = logits.take().expect("the prompt is not empty").to_vec();
        let recent = &tokens[tokens.len().saturating_sub(window)..];
        attn::exercises::ch16::repetition_penalty(&mut z, recent, penalty)?;
        let next = attn::lm::greedy(&z)?;
        tokens.push(next);
        if cache.len() == model.config().context {
            break; // learned positions: the cache is full
        }
        logits = Some(model.step(next, &mut cache)?);
    }
    Ok(vocab.decode(&tokens)?)
}

/// Training tokens per second of the crate and of PyTorch, per thread
/// count, from one measurement run (`book/data/ch16-speed.tsv`): the best
/// of each program's runs at that count.
#[derive(Debug, Clone)]
pub struct TrainingSpeeds {
    /// `(threads, crate, PyTorch)`.
    pub rows: Vec<(usize, f64, f64)>,
    /// The file's provenance.
    pub source: crate::provenance::Provenance,
}

/// Reads `book/data/ch16-speed.tsv`.
pub fn training_speeds() -> Result<TrainingSpeeds, ReportError> {
    let file = "ch16-speed.tsv";
    let (source, text) = crate::provenance::Provenance::read(file)?;
    Ok(TrainingSpeeds { rows: best_speeds(file, &text)?, source })
}

/// `(threads, crate, PyTorch)` from the rows `program threads tokens/s`
/// of `text`: the best run of each program at each thread count, in the
/// order of the counts' first runs.
fn best_speeds(file: &str, text: &str) -> Result<Vec<(usize, f64, f64)>, ReportError> {
    let mut ours = Vec::new();
    let mut theirs = Vec::new();
    for row in crate::measurements::data_rows(text, '\t') {
        let threads: usize = parse(file, row.get(1))?;
        let speed: f64 = parse(file, row.get(2))?;
        match row.first().copied() {
            Some("crate") => ours.push((threads, speed)),
            _ => theirs.push((threads, speed)),
        }
    }
    let best = |runs: &[(usize, f64)], t: usize| {
        runs.iter().filter(|r| r.0 == t).map(|r| r.1).reduce(f64::max)
    };
    let mut counts: Vec<usize> = ours.iter().map(|r| r.0).collect();
    counts.dedup();
    Ok(counts.into_iter().filter_map(|t| Some((t, best(&ours, t)?, best(&theirs, t)?))).collect())
}

#[cfg(test)]
mod speed_tests {
    #[test]
    fn each_program_counts_its_best_run_at_each_thread_count() {
        let text = "program\tthreads\ttokens_per_second\n\
                    crate\t1\t90\npytorch\t1\t150\ncrate\t1\t100\npytorch\t1\t140\n\
                    crate\t2\t120\npytorch\t2\t200\n";
        let rows = super::best_speeds("test", text).unwrap();
        assert_eq!(rows, vec![(1, 100.0, 150.0), (2, 120.0, 200.0)]);
    }
}

fn parse<T: std::str::FromStr>(file: &str, field: Option<&&str>) -> Result<T, ReportError> {
    let field = field.copied().unwrap_or("");
    field.parse().map_err(|_| ReportError::MissingDataFile {
        path: format!("book/data/{file}"),
        reason: format!("{field:?} is not a number"),
    })
}

/// The speeds as the chapter shows them, with PyTorch's validation loss
/// after its whole training run.
pub fn speed_report(speeds: &TrainingSpeeds, pytorch_validation: f64) -> String {
    let rows: Vec<Vec<String>> = speeds
        .rows
        .iter()
        .map(|&(threads, ours, theirs)| {
            vec![
                threads.to_string(),
                format!("{ours:.0}"),
                format!("{theirs:.0}"),
                format!("{:.2}", ours / theirs),
            ]
        })
        .collect();
    format!(
        "{}\nPyTorch, seed 1, validation loss after 2000 steps (240 windows): {pytorch_validation:.4}",
        table(
            &["threads", "this crate, tokens/s", "PyTorch, tokens/s", "ratio"],
            &rows
        )
    )
}

/// PyTorch's training log (`book/data/ch16-pytorch-training.tsv`): per
/// logged step, the training and validation loss.
pub fn pytorch_log() -> Result<Vec<(usize, f64, f64)>, ReportError> {
    let file = "ch16-pytorch-training.tsv";
    let text = crate::measurements::data_file(file)?;
    crate::measurements::data_rows(&text, '\t')
        .map(|row| {
            Ok((parse(file, row.first())?, parse(file, row.get(1))?, parse(file, row.get(2))?))
        })
        .collect()
}

/// Per length of text, the generation and call times.
pub type CacheSpeeds = Vec<CacheSpeed>;

/// One length of `book/data/ch16-cache-speed.tsv`, in seconds (each the
/// best of 5 in one run).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CacheSpeed {
    /// Characters generated, from one.
    pub length: usize,
    /// Generating them through the KV cache.
    pub cached: f64,
    /// Generating them by a forward pass over the prefix at every step.
    pub recomputed: f64,
    /// One forward pass over `length` characters.
    pub forward: f64,
    /// One forward pass over a single character.
    pub forward_one: f64,
    /// One cached step on a single character.
    pub step_one: f64,
}

/// Seconds to generate text with and without the KV cache
/// (`book/data/ch16-cache-speed.tsv`), and the file's provenance.
pub fn cache_speeds() -> Result<(CacheSpeeds, crate::provenance::Provenance), ReportError> {
    let file = "ch16-cache-speed.tsv";
    let (source, text) = crate::provenance::Provenance::read(file)?;
    let rows = crate::measurements::data_rows(&text, '\t')
        .map(|row| {
            Ok(CacheSpeed {
                length: parse(file, row.first())?,
                cached: parse(file, row.get(1))?,
                recomputed: parse(file, row.get(2))?,
                forward: parse(file, row.get(3))?,
                forward_one: parse(file, row.get(4))?,
                step_one: parse(file, row.get(5))?,
            })
        })
        .collect::<Result<_, ReportError>>()?;
    Ok((rows, source))
}

/// The cache's speeds as the chapter shows them.
pub fn cache_report(rows: &[CacheSpeed]) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.length.to_string(),
                format!("{:.2}", r.cached * 1e3),
                format!("{:.2}", r.recomputed * 1e3),
                format!("{:.1}", r.recomputed / r.cached),
            ]
        })
        .collect();
    table(&["characters", "cached, ms", "recomputed, ms", "speed-up"], &rows)
}

/// What one call costs, from the same run: a forward pass over a single
/// character against one cached step, and per character of a forward pass
/// over each length (the fastest of the rows' measurements for the first
/// two).
pub fn call_cost_report(rows: &[CacheSpeed]) -> String {
    let fastest = |f: fn(&CacheSpeed) -> f64| rows.iter().map(f).fold(f64::INFINITY, f64::min);
    let mut out = format!(
        "one character: forward {:.3} ms, cached step {:.3} ms\n",
        fastest(|r| r.forward_one) * 1e3,
        fastest(|r| r.step_one) * 1e3
    );
    let per_char: Vec<String> = rows
        .iter()
        .map(|r| format!("{} characters {:.3} ms", r.length, r.forward / r.length as f64 * 1e3))
        .collect();
    out += &format!("forward pass, per character: {}", per_char.join(", "));
    out
}

/// The heads of Figure 16.5, from seed 1's last step: its strongest
/// previous-token head and its strongest prefix-matching head of blocks 2
/// to 4.
pub fn figure_heads(heads: &[HeadLine]) -> [&HeadLine; 2] {
    let last = heads.iter().filter(|h| h.seed == 1).map(|h| h.step).max().unwrap_or(0);
    let at_end: Vec<&HeadLine> = heads.iter().filter(|h| h.seed == 1 && h.step == last).collect();
    let strongest = |score: fn(&HeadLine) -> f64| {
        *at_end
            .iter()
            .max_by(|a, b| score(a).total_cmp(&score(b)))
            .expect("the log holds seed 1's last step")
    };
    // Block 1's keys know only their own character: look in blocks 2 to 4.
    let prefix = |h: &HeadLine| {
        if h.block > 0 {
            h.prefix_matching
        } else {
            f64::NEG_INFINITY
        }
    };
    [strongest(|h| h.previous_token), strongest(prefix)]
}

/// The induction scores of `model` on [`INDUCTION_VERSE`] read twice:
/// the losses of the first reading and of the repeat, and every head's
/// scores.
pub fn verse_losses(model: &LanguageModel<f32>) -> Result<attn::lm::InductionScores, ReportError> {
    let text = format!("{INDUCTION_VERSE}{INDUCTION_VERSE}");
    Ok(attn::lm::induction_scores(model, &[vocabulary().encode(&text)?])?)
}

/// What the heads of Figure 16.5 do on [`INDUCTION_VERSE`] read twice.
pub fn verse_report(model: &LanguageModel<f32>, heads: &[HeadLine]) -> Result<String, ReportError> {
    let scores = verse_losses(model)?;
    let mut lines: Vec<String> = figure_heads(heads)
        .iter()
        .zip(["previous-token head", "prefix-matching head of blocks 2–4"])
        .map(|(h, what)| {
            format!(
                "on \"{INDUCTION_VERSE}\" read twice: block {} head {} (the strongest {what}) \
                 puts {:.3} on the previous character and {:.3} on the position after the same place in the first reading",
                h.block + 1,
                h.head + 1,
                scores.previous_token[[h.block, h.head]],
                scores.prefix_matching[[h.block, h.head]]
            )
        })
        .collect();
    lines.push(format!(
        "on \"{INDUCTION_VERSE}\" read twice: first reading {:.3}, repeat {:.3}",
        scores.first_half_loss, scores.repeat_loss
    ));
    Ok(lines.join("\n"))
}

/// Removing heads from the book's model (seed 1): the loss on the first
/// readings and on the repeats of [`crate::ch16::REPEATS`], without
/// nothing, without each head of Figure 16.5, and without another head of
/// the same block drawn at random (SplitMix64, seed 1).
pub fn ablation_report(
    model: &LanguageModel<f32>,
    heads: &[HeadLine],
) -> Result<String, ReportError> {
    let sequences = crate::ch16::repeats(model.config().vocab)?;
    let mut rng = attn::lm::SplitMix64::new(1);
    let mut removed: Vec<(String, Vec<(usize, usize)>)> = vec![("none".into(), vec![])];
    for (what, h) in ["previous-token", "prefix-matching"].iter().zip(figure_heads(heads)) {
        let (block, head) = (h.block + 1, h.head + 1);
        removed
            .push((format!("block {block} head {head} (strongest {what})"), vec![(block, head)]));
        let others: Vec<usize> = (1..=model.config().heads).filter(|&o| o != head).collect();
        let other = others[(rng.next_u64() % others.len() as u64) as usize];
        removed.push((format!("block {block} head {other} (at random)"), vec![(block, other)]));
    }
    let rows = removed
        .into_iter()
        .map(|(label, which)| {
            let s = attn::lm::induction_scores(&model.without_heads(&which)?, &sequences)?;
            Ok(vec![
                label,
                format!("{:.3}", s.first_half_loss),
                format!("{:.3}", s.repeat_loss),
                format!("{:+.3}", s.repeat_loss - s.first_half_loss),
            ])
        })
        .collect::<Result<Vec<_>, ReportError>>()?;
    Ok(table(&["removed", "first half", "repeat", "repeat − first half"], &rows))
}

/// Characters the rotary model writes past its prompt through its sliding
/// cache, far past its context.
pub const SLIDING_LENGTH: usize = 300;

/// The temperature the rotary model writes at through its sliding cache.
pub const SLIDING_TEMPERATURE: f64 = 0.8;

/// The rotary model continues [`crate::ch16::PROMPT`] by
/// [`SLIDING_LENGTH`] characters at [`SLIDING_TEMPERATURE`] through its sliding
/// cache; returns the text, and a line comparing every step's cached
/// logits with sliding-window attention over the whole text and with
/// reading the last `context` characters afresh.
pub fn sliding_report(model: &LanguageModel<f32>) -> Result<(String, String), ReportError> {
    let vocab = vocabulary();
    let prompt = vocab.encode(crate::ch16::PROMPT)?;
    let sampler = Sampler::new(SLIDING_TEMPERATURE)?;
    let seed = crate::ch16::SAMPLE_SEED;
    let text = model.generate(&prompt, SLIDING_LENGTH, &sampler, seed, Decoding::Cached)?;
    let context = model.config().context;
    let windowed = model.forward_window(std::slice::from_ref(&text), context)?;
    let mut cache = model.new_cache();
    let (mut worst_window, mut worst_afresh) = (0.0_f32, 0.0_f32);
    for t in 0..text.len() {
        let cached = model.step(text[t], &mut cache)?;
        let window = windowed.logits().row(t);
        let afresh = model.next_logits(&text[(t + 1).saturating_sub(context)..=t])?;
        for ((a, w), f) in cached.iter().zip(window).zip(&afresh) {
            worst_window = worst_window.max((a - w).abs());
            worst_afresh = worst_afresh.max((a - f).abs());
        }
    }
    let within = if worst_window <= CACHE_TOLERANCE { "within" } else { "NOT within" };
    let line = format!(
        "{} steps, {} past the context: the sliding cache's logits agree with sliding-window \
         attention {within} {CACHE_TOLERANCE:e} at every step; reading the last {context} \
         characters afresh gives logits up to {worst_afresh:.1} away",
        text.len(),
        text.len() - context
    );
    Ok((vocab.decode(&text)?, line))
}
