//! Chapter 14: Bahdanau, Cho and Bengio's length experiment in miniature.
//! A GRU encoder–decoder with and without additive attention and chapter
//! 13's Transformer with and without cross-attention, three seeds each, on
//! data balanced by source length: exact accuracy and BLEU by length on the
//! held-out pairs (`ch14-lengths.csv`) and on each model's training pairs
//! (`ch14-train-lengths.csv`), each model's scores (`ch14-length-models.csv`)
//! and the GRU with attention's weights. Run by `cargo xtask train`, not in
//! CI: the figures come from the committed results.
//!
//! ```text
//! cargo xtask train ch14        # also runs this example
//! ```

use std::time::Instant;

use attn::nn::Parameters;
use report::ch14_lengths::{
    csv_line, length_pairs, length_rows, model_line, train, LengthModel, ModelRow, Trained,
    HELD_OUT_PER_LENGTH, LENGTH_COLUMNS, MODEL_COLUMNS, SEEDS,
};
use report::provenance::header;

fn main() -> Result<(), report::error::ReportError> {
    length_experiment(concat!(env!("CARGO_MANIFEST_DIR"), "/book/data"))
}

/// Bahdanau, Cho and Bengio's length experiment: four models, three seeds
/// each, on data balanced by source length.
fn length_experiment(dir: &str) -> Result<(), report::error::ReportError> {
    let (held_out, pairs) = length_pairs()?;
    println!(
        "length experiment: {} training pairs and {} held-out pairs, {} of each length",
        pairs.len(),
        held_out.len(),
        HELD_OUT_PER_LENGTH
    );
    let mut lengths = format!(
        "{}\n{LENGTH_COLUMNS}\n",
        header(
            "one run per model and seed",
            "greedy translations of the held-out pairs of each source length: how many exact, \
             and the bucket's corpus BLEU"
        )
    );
    let mut models = format!(
        "{}\n{MODEL_COLUMNS}\n",
        header(
            "one run per model and seed",
            "parameters, the last step's loss, held-out exact accuracy, and how alignment-like \
             the attention is (the additive attention's alignment score, the best \
             cross-attention head's; NaN for the models without attention)"
        )
    );
    let mut fitted = format!(
        "{}\n{LENGTH_COLUMNS}\n",
        header(
            "one run per model and seed",
            "greedy translations of the training pairs of each source length: how many exact, \
             and the bucket's corpus BLEU"
        )
    );
    for model in LengthModel::ALL {
        for seed in SEEDS {
            let start = Instant::now();
            let (net, losses) = train(model, seed, &pairs)?;
            let seconds = start.elapsed().as_secs_f64();
            let translations = net.translate_all(&held_out)?;
            let rows = length_rows(model, seed, &translations, &held_out)?;
            let exact = rows.iter().map(|r| r.exact).sum::<usize>() as f64 / held_out.len() as f64;
            let alignment = net.alignment_score(&held_out)?.unwrap_or(f64::NAN);
            let (parameters, text) = match &net {
                Trained::Rnn(n) => (n.parameter_count(), n.to_text()?),
                Trained::Transformer(n) => (n.parameter_count(), n.to_text()?),
            };
            let final_loss = losses[losses.len() - 1];
            println!(
                "{} seed {seed}: {parameters} parameters, trained in {seconds:.1} s; final loss \
                 {final_loss:.1e}; held-out exact {exact:.3}",
                model.name()
            );
            for r in &rows {
                lengths += &(csv_line(r) + "\n");
            }
            // The same on its own training pairs: what it fits, length by length.
            for r in &length_rows(model, seed, &net.translate_all(&pairs)?, &pairs)? {
                fitted += &(csv_line(r) + "\n");
            }
            let row = ModelRow { model, seed, parameters, final_loss, exact, alignment };
            models += &(model_line(&row) + "\n");
            if model == LengthModel::GruAttention && seed == SEEDS[0] {
                let weights = header("exact", "the trained weights, rounded to f32");
                std::fs::write(
                    format!("{dir}/ch14-gru-attention-weights.txt"),
                    format!("{weights}\n{text}"),
                )
                .expect("write weights");
            }
        }
    }
    std::fs::write(format!("{dir}/ch14-lengths.csv"), lengths).expect("write the lengths");
    std::fs::write(format!("{dir}/ch14-length-models.csv"), models).expect("write the models");
    std::fs::write(format!("{dir}/ch14-train-lengths.csv"), fitted).expect("write the fit");
    println!(
        "wrote book/data/ch14-lengths.csv, book/data/ch14-train-lengths.csv, \
         book/data/ch14-length-models.csv and book/data/ch14-gru-attention-weights.txt"
    );
    Ok(())
}
