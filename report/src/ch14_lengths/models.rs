//! The length experiment's trained models, one row each: their sizes,
//! losses, accuracies and alignment scores, as written to
//! `book/data/ch14-length-models.csv` and as the chapter reports them.

use super::*;

/// One trained model's summary: parameters, final loss, held-out exact
/// accuracy over every length, and its alignment score (NaN without
/// attention).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelRow {
    /// The model.
    pub model: LengthModel,
    /// Its initialisation.
    pub seed: u64,
    /// Its number of parameters.
    pub parameters: usize,
    /// The loss of the last training step.
    pub final_loss: f64,
    /// Exact accuracy over the whole held-out set.
    pub exact: f64,
    /// [`Trained::alignment_score`], NaN for the models without attention.
    pub alignment: f64,
}

/// The CSV's column names.
pub const MODEL_COLUMNS: &str = "model,seed,parameters,final_loss,exact,alignment";

/// A model row as a CSV line.
pub fn model_line(r: &ModelRow) -> String {
    format!(
        "{},{},{},{},{},{}",
        r.model.index(),
        r.seed,
        r.parameters,
        r.final_loss,
        r.exact,
        r.alignment
    )
}

/// The committed model rows, `book/data/ch14-length-models.csv`.
pub fn read_models() -> Result<Vec<ModelRow>, ReportError> {
    let file = "ch14-length-models.csv";
    numeric_rows(file)?
        .into_iter()
        .map(|r| match r[..] {
            [Some(m), Some(seed), Some(parameters), Some(final_loss), Some(exact), alignment] => {
                let model = LengthModel::at(file, m)?;
                Ok(ModelRow {
                    model,
                    seed: whole(file, seed)? as u64,
                    parameters: whole(file, parameters)?,
                    final_loss,
                    exact,
                    alignment: alignment.unwrap_or(f64::NAN),
                })
            }
            _ => Err(bad(file, format!("a row {r:?} of other than 6 fields"))),
        })
        .collect()
}

/// Each model's parameters, and over the seeds its held-out accuracy and
/// how alignment-like its attention is, then the alignment score of a
/// random word and of the diagonal on the same pairs
/// ([`crate::ch13::alignment_baselines`]).
pub fn models_report(models: &[ModelRow], (chance, diagonal): (f64, f64)) -> String {
    let header = ["model", "parameters", "exact, each seed", "alignment score, each seed"];
    let rows: Vec<Vec<String>> = LengthModel::ALL
        .iter()
        .map(|&m| {
            let of: Vec<&ModelRow> = models.iter().filter(|r| r.model == m).collect();
            let list = |f: fn(&ModelRow) -> f64| {
                let shown: Vec<String> = of.iter().map(|r| format!("{:.3}", f(r))).collect();
                match shown.iter().all(|s| s == "NaN") {
                    true => "–".to_string(),
                    false => shown.join(" "),
                }
            };
            vec![
                m.name().to_string(),
                of.first().map_or(0, |r| r.parameters).to_string(),
                list(|r| r.exact),
                list(|r| r.alignment),
            ]
        })
        .collect();
    format!(
        "{}\nalignment score of a random word {chance:.3}, of the diagonal {diagonal:.3}",
        table(&header, &rows)
    )
}
