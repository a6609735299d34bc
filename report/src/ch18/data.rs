//! The data of `cargo xtask train long`: each model's validation loss
//! (`ch18-models.tsv`), the loss and attention entropy by position along
//! long texts (`ch18-by-position.tsv`) and the passkey's retrieval
//! (`ch18-passkey.tsv`), with their readers.

use crate::error::ReportError;
use crate::measurements::number;
use crate::provenance::Provenance;

/// The columns of `ch18-models.tsv`.
pub const MODEL_COLUMNS: &str = "trained\tseed\tstage\tread\tvalidation_loss";

/// The columns of `ch18-by-position.tsv`, before one entropy per block.
pub const POSITION_COLUMNS: &str = "trained\tseed\tstage\tread\tfirst_position\tloss";

/// The columns of `ch18-passkey.tsv`.
pub const PASSKEY_COLUMNS: &str = "trained\tseed\tread\tlength\tdistance\taccuracy";

/// One model's validation loss: trained at 64 positions (`stage`
/// `trained`) or continued at 256 (`continued`), read as `read` says.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelLoss {
    /// How it was trained to know positions (`rope`, `alibi`, `none`,
    /// `learned`).
    pub trained: String,
    /// The seed.
    pub seed: u64,
    /// `trained` or `continued`.
    pub stage: String,
    /// How it reads positions (the scaling of a rotary model).
    pub read: String,
    /// Over windows of its context spanning the validation split.
    pub validation_loss: f64,
}

/// One bucket of positions along the long texts, for one model and way of
/// reading it.
#[derive(Debug, Clone, PartialEq)]
pub struct PositionBucket {
    /// How the model was trained to know positions.
    pub trained: String,
    /// The seed.
    pub seed: u64,
    /// `trained` or `continued`.
    pub stage: String,
    /// How it reads positions.
    pub read: String,
    /// The bucket's first position.
    pub first_position: usize,
    /// The mean loss over the bucket's positions and the texts.
    pub loss: f64,
    /// Each block's attention entropy, mean over its heads, the bucket's
    /// positions and the texts.
    pub entropy: Vec<f64>,
}

/// One passkey measurement: the share of texts of `length` tokens, the key
/// `distance` before the question, whose key the model gives back.
#[derive(Debug, Clone, PartialEq)]
pub struct PasskeyFound {
    /// How the model was trained to know positions.
    pub trained: String,
    /// The seed.
    pub seed: u64,
    /// How it reads positions.
    pub read: String,
    /// Tokens in each text.
    pub length: usize,
    /// From the key's first digit to the question.
    pub distance: usize,
    /// The share of texts answered in full.
    pub accuracy: f64,
}

/// The rows of `file`, each with at least `columns` fields, and its header.
fn rows(file: &str, columns: usize) -> Result<(Vec<Vec<String>>, Provenance), ReportError> {
    let (provenance, _) = Provenance::read(file)?;
    Ok((crate::ch17::rows(file, columns)?, provenance))
}

/// Every model's validation loss, and where it comes from.
pub fn model_losses() -> Result<(Vec<ModelLoss>, Provenance), ReportError> {
    let file = "ch18-models.tsv";
    let (rows, provenance) = rows(file, 5)?;
    let losses = rows
        .iter()
        .map(|f| {
            Ok(ModelLoss {
                trained: f[0].clone(),
                seed: number(file, &f[1])?,
                stage: f[2].clone(),
                read: f[3].clone(),
                validation_loss: number(file, &f[4])?,
            })
        })
        .collect::<Result<_, ReportError>>()?;
    Ok((losses, provenance))
}

/// Every bucket of every model and reading, and where they come from.
pub fn position_buckets() -> Result<(Vec<PositionBucket>, Provenance), ReportError> {
    let file = "ch18-by-position.tsv";
    let (rows, provenance) = rows(file, 7)?;
    let buckets = rows
        .iter()
        .map(|f| {
            Ok(PositionBucket {
                trained: f[0].clone(),
                seed: number(file, &f[1])?,
                stage: f[2].clone(),
                read: f[3].clone(),
                first_position: number(file, &f[4])?,
                loss: number(file, &f[5])?,
                entropy: f[6..].iter().map(|e| number(file, e)).collect::<Result<_, _>>()?,
            })
        })
        .collect::<Result<_, ReportError>>()?;
    Ok((buckets, provenance))
}

/// Every passkey measurement, and where they come from.
pub fn passkeys_found() -> Result<(Vec<PasskeyFound>, Provenance), ReportError> {
    let file = "ch18-passkey.tsv";
    let (rows, provenance) = rows(file, 6)?;
    let found = rows
        .iter()
        .map(|f| {
            Ok(PasskeyFound {
                trained: f[0].clone(),
                seed: number(file, &f[1])?,
                read: f[2].clone(),
                length: number(file, &f[3])?,
                distance: number(file, &f[4])?,
                accuracy: number(file, &f[5])?,
            })
        })
        .collect::<Result<_, ReportError>>()?;
    Ok((found, provenance))
}
