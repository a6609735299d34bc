//! Chapter 14's length experiment, Bahdanau, Cho and Bengio's Figure 2 in
//! miniature: four encoder–decoders (a GRU that hands on its last state, the
//! same GRU with additive attention, a Transformer whose encoder output is
//! mean-pooled, and the Transformer with cross-attention), each trained
//! from several seeds on data balanced by source length, and scored by
//! exact accuracy and BLEU on held-out buckets of one length each.
//! `cargo xtask train ch14-lengths` runs it and writes `book/data/ch14-lengths.csv`
//! and `book/data/ch14-length-models.csv`; the chapter's example and
//! numbers test read them.

mod models;

pub use models::{model_line, models_report, read_models, ModelRow, MODEL_COLUMNS};

use crate::error::ReportError;
use crate::measurements::{bad, numeric_rows};
use crate::show::table;
use attn::translation::{
    alignment_scores, balanced_set, corpus_bleu, rnn_alignment_score, train_seq2seq, translate_all,
    RnnConfig, RnnSeq2Seq, Seq2Seq, Seq2SeqConfig, Seq2SeqTraining, TranslationPair, BOOK_RNN,
    BOOK_SEQ2SEQ, BOOK_SEQ2SEQ_TRAINING,
};

/// The source lengths of the experiment, in words. Shorter sources are too
/// few to hold out (27 numbers have one word, 36 two), and no number has
/// ten words.
pub const LENGTHS: [usize; 8] = [3, 4, 5, 6, 7, 8, 9, 11];
/// Held-out pairs of each length.
pub const HELD_OUT_PER_LENGTH: usize = 200;
/// Training pairs of each length (801 numbers have four words: 200 held
/// out leave 601).
pub const TRAIN_PER_LENGTH: usize = 600;
/// The seeds of the held-out set and of the training set.
pub const DATA_SEEDS: [u64; 2] = [2026, 12];
/// The initialisations each model is trained from.
pub const SEEDS: [u64; 3] = [1, 2, 3];

/// The four models of the experiment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LengthModel {
    /// A GRU encoder–decoder whose decoder sees the encoder's last state.
    Gru,
    /// The same GRU with additive attention over every encoder state.
    GruAttention,
    /// The Transformer whose decoder sees the mean of the encoder's output.
    MeanPooled,
    /// The Transformer with cross-attention.
    Transformer,
}

impl LengthModel {
    /// Every model, in the order of the tables and the CSV's model column.
    pub const ALL: [LengthModel; 4] = [
        LengthModel::Gru,
        LengthModel::GruAttention,
        LengthModel::MeanPooled,
        LengthModel::Transformer,
    ];

    /// The model's name in tables and legends.
    pub fn name(self) -> &'static str {
        match self {
            LengthModel::Gru => "GRU, last state",
            LengthModel::GruAttention => "GRU, attention",
            LengthModel::MeanPooled => "Transformer, mean",
            LengthModel::Transformer => "Transformer, attention",
        }
    }

    /// The model of index `m` in [`Self::ALL`], read from a field of
    /// `book/data/FILE`.
    fn at(file: &str, m: f64) -> Result<LengthModel, ReportError> {
        let model = Self::ALL.get(whole(file, m)?);
        model.copied().ok_or_else(|| bad(file, format!("no model {m}")))
    }

    /// Its index in [`Self::ALL`].
    pub fn index(self) -> usize {
        Self::ALL.iter().position(|&m| m == self).unwrap_or(0)
    }
}

/// A field that must be a whole number of at least 0 (a seed, a count).
fn whole(file: &str, x: f64) -> Result<usize, ReportError> {
    match x >= 0.0 && x.fract() == 0.0 && x < 1e15 {
        true => Ok(x as usize),
        false => Err(bad(file, format!("{x} is not a whole number of at least 0"))),
    }
}

/// A trained model of the experiment.
pub enum Trained {
    /// A recurrent encoder–decoder.
    Rnn(RnnSeq2Seq),
    /// A Transformer encoder–decoder.
    Transformer(Seq2Seq),
}

impl Trained {
    /// Greedy translations of every source of `pairs`.
    pub fn translate_all(&self, pairs: &[TranslationPair]) -> Result<Vec<Vec<usize>>, ReportError> {
        Ok(match self {
            Trained::Rnn(net) => translate_all(net, pairs, 1)?,
            Trained::Transformer(net) => translate_all(net, pairs, 1)?,
        })
    }

    /// How alignment-like its attention is: the additive attention's score
    /// ([`rnn_alignment_score`]), or the best cross-attention head's
    /// ([`alignment_scores`]); `None` for the models without attention.
    pub fn alignment_score(&self, pairs: &[TranslationPair]) -> Result<Option<f64>, ReportError> {
        Ok(match self {
            Trained::Rnn(net) => rnn_alignment_score(net, pairs)?,
            Trained::Transformer(net) if net.config().bottleneck => None,
            Trained::Transformer(net) => {
                let scores = alignment_scores(net, pairs)?;
                scores.into_iter().flatten().reduce(f64::max)
            }
        })
    }
}

/// The recurrent model's configuration, with or without attention.
pub fn rnn_config(attention: bool) -> RnnConfig {
    RnnConfig { attention, ..BOOK_RNN }
}

/// The Transformer's configuration, mean-pooled or not.
pub fn transformer_config(bottleneck: bool) -> Seq2SeqConfig {
    Seq2SeqConfig { bottleneck, ..BOOK_SEQ2SEQ }
}

/// The held-out and training pairs, balanced by length (no number in both).
pub fn length_pairs() -> Result<(Vec<TranslationPair>, Vec<TranslationPair>), ReportError> {
    let [held_out_seed, train_seed] = DATA_SEEDS;
    let held_out = balanced_set(HELD_OUT_PER_LENGTH, &LENGTHS, held_out_seed, &[])?;
    let train = balanced_set(TRAIN_PER_LENGTH, &LENGTHS, train_seed, &held_out)?;
    Ok((held_out, train))
}

/// Trains `model` from `seed` on `pairs` with the book's training run (the
/// same steps, batch and schedule for every model). Returns the model and
/// every step's loss.
pub fn train(
    model: LengthModel,
    seed: u64,
    pairs: &[TranslationPair],
) -> Result<(Trained, Vec<f64>), ReportError> {
    let training = Seq2SeqTraining { seed, ..BOOK_SEQ2SEQ_TRAINING };
    Ok(match model {
        LengthModel::Gru | LengthModel::GruAttention => {
            let config = rnn_config(model == LengthModel::GruAttention);
            let (net, losses) = train_seq2seq(config, &training, pairs)?;
            (Trained::Rnn(net), losses)
        }
        LengthModel::MeanPooled | LengthModel::Transformer => {
            let config = transformer_config(model == LengthModel::MeanPooled);
            let (net, losses) = train_seq2seq(config, &training, pairs)?;
            (Trained::Transformer(net), losses)
        }
    })
}

/// One model, seed and source length: how many held-out pairs, how many
/// translated exactly, and the bucket's corpus BLEU.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LengthRow {
    /// The model.
    pub model: LengthModel,
    /// Its initialisation.
    pub seed: u64,
    /// Source length, in words.
    pub length: usize,
    /// Held-out pairs of that length.
    pub pairs: usize,
    /// Of them, translated exactly.
    pub exact: usize,
    /// Corpus BLEU of the bucket.
    pub bleu: f64,
}

/// The rows of one trained model's `translations` of `held_out`, one a
/// length of [`LENGTHS`].
pub fn length_rows(
    model: LengthModel,
    seed: u64,
    translations: &[Vec<usize>],
    held_out: &[TranslationPair],
) -> Result<Vec<LengthRow>, ReportError> {
    LENGTHS
        .iter()
        .map(|&length| {
            let (candidates, references): (Vec<Vec<usize>>, Vec<Vec<usize>>) = held_out
                .iter()
                .zip(translations)
                .filter(|(p, _)| p.source.len() == length)
                .map(|(p, t)| (t.clone(), p.target.clone()))
                .unzip();
            let exact = candidates.iter().zip(&references).filter(|(c, r)| c == r);
            Ok(LengthRow {
                model,
                seed,
                length,
                pairs: candidates.len(),
                exact: exact.count(),
                bleu: corpus_bleu(&candidates, &references)?.score,
            })
        })
        .collect()
}

/// The CSV's column names.
pub const LENGTH_COLUMNS: &str = "model,seed,length,pairs,exact,bleu";

/// A row as a CSV line (the model as its index in [`LengthModel::ALL`]).
pub fn csv_line(r: &LengthRow) -> String {
    let model = r.model.index();
    format!("{model},{},{},{},{},{}", r.seed, r.length, r.pairs, r.exact, r.bleu)
}

/// The committed rows, `book/data/ch14-lengths.csv`.
pub fn read_lengths() -> Result<Vec<LengthRow>, ReportError> {
    read_length_file("ch14-lengths.csv")
}

/// The same measure on each model's own training pairs,
/// `book/data/ch14-train-lengths.csv`: how well it fits what it was
/// trained on, length by length.
pub fn read_train_lengths() -> Result<Vec<LengthRow>, ReportError> {
    read_length_file("ch14-train-lengths.csv")
}

fn read_length_file(file: &str) -> Result<Vec<LengthRow>, ReportError> {
    numeric_rows(file)?
        .into_iter()
        .map(|r| match r[..] {
            [Some(m), Some(seed), Some(length), Some(pairs), Some(exact), Some(bleu)] => {
                let model = LengthModel::at(file, m)?;
                Ok(LengthRow {
                    model,
                    seed: whole(file, seed)? as u64,
                    length: whole(file, length)?,
                    pairs: whole(file, pairs)?,
                    exact: whole(file, exact)?,
                    bleu,
                })
            }
            _ => Err(bad(file, format!("a row {r:?} of other than 6 numbers"))),
        })
        .collect()
}

/// Over the seeds of one model and length: the mean, the lowest and the
/// highest of a score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    /// Mean over the seeds.
    pub mean: f64,
    /// Lowest.
    pub low: f64,
    /// Highest.
    pub high: f64,
}

/// The spread over seeds of `score` for `model` at `length` (NaN for a
/// model or length without rows).
pub fn spread(
    rows: &[LengthRow],
    model: LengthModel,
    length: usize,
    score: fn(&LengthRow) -> f64,
) -> Spread {
    let values: Vec<f64> =
        rows.iter().filter(|r| r.model == model && r.length == length).map(score).collect();
    if values.is_empty() {
        return Spread { mean: f64::NAN, low: f64::NAN, high: f64::NAN };
    }
    Spread {
        mean: values.iter().sum::<f64>() / values.len() as f64,
        low: values.iter().cloned().fold(f64::INFINITY, f64::min),
        high: values.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
    }
}

/// A row's share translated exactly.
pub fn exact_share(r: &LengthRow) -> f64 {
    r.exact as f64 / r.pairs.max(1) as f64
}

/// The widest 95% interval of an accuracy measured on `n` pairs: `±1.96
/// √(p(1 − p)/n)` at `p = ½`.
pub fn widest_interval(n: usize) -> f64 {
    1.96 * (0.25 / n as f64).sqrt()
}

/// Exact accuracy by source length, one column a model: the mean over the
/// seeds, and the lowest and highest seed's.
pub fn length_table(rows: &[LengthRow]) -> String {
    let header: Vec<&str> =
        std::iter::once("source words").chain(LengthModel::ALL.iter().map(|m| m.name())).collect();
    let cells: Vec<Vec<String>> = LENGTHS
        .iter()
        .map(|&length| {
            let models = LengthModel::ALL.iter().map(|&m| {
                let s = spread(rows, m, length, exact_share);
                format!("{:.3} ({:.3}–{:.3})", s.mean, s.low, s.high)
            });
            std::iter::once(length.to_string()).chain(models).collect()
        })
        .collect();
    table(&header, &cells)
}

/// The additive attention's weights on `pair`, its reference target fed to
/// the decoder: `(digits + 1) × words`, or `None` for a model without
/// attention.
pub fn gru_attention(
    net: &RnnSeq2Seq,
    pair: &TranslationPair,
) -> Result<Option<attn::grad::Matrix>, ReportError> {
    let one = attn::translation::batch(&[(&pair.source[..], &pair.target[..])])?;
    Ok(net.forward(&one)?.weights(0).cloned())
}

/// The experiment's data and budget, in one line.
pub fn data_report(held_out: &[TranslationPair], train: &[TranslationPair]) -> String {
    format!(
        "{} training pairs and {} held-out pairs: {TRAIN_PER_LENGTH} and \
         {HELD_OUT_PER_LENGTH} of each of the {} lengths from {} to {} words (no number has 10)\n\
         widest 95% interval of an accuracy on {HELD_OUT_PER_LENGTH} pairs: ±{:.3}",
        train.len(),
        held_out.len(),
        LENGTHS.len(),
        LENGTHS[0],
        LENGTHS[LENGTHS.len() - 1],
        widest_interval(HELD_OUT_PER_LENGTH)
    )
}
