//! Chapter 16's positive control: trains the two-block model of
//! `report::ch16_control` on periodic random sequences, once per seed (1, 2
//! and 3), measuring every 50 steps the loss on held-out periodic sequences
//! and the induction scores on the chapter's repeated random sequences;
//! then removes heads from each trained model. Writes the logs, the
//! ablation and the weights of seed 1 to `book/data/` (run by `cargo xtask
//! train control`, not in CI: the chapter's figures and tests use the
//! committed files). Then scores the book's model on repeats drawn from the
//! corpus's own characters, which needs the corpus (`cargo xtask corpus`).
//!
//! ```text
//! cargo xtask train control   # = cargo run --release --example ch16_control_train
//! ```

use std::time::Instant;

use attn::lm::{
    induction_scores, periodic_training_batch, train_on_batches, Corpus, LanguageModel,
};
use report::ch16::{
    book_model, corpus_dir, log_entry, repeats, HEAD_COLUMNS, LOG_COLUMNS, REPEATS,
};
use report::ch16_control::{
    ablation, ablation_line, ablation_table, control_validation, corpus_probe_report,
    corpus_repeats, ABLATION_COLUMNS, CONTROL_MODEL, CONTROL_SEEDS, CONTROL_TRAINING,
};
use report::provenance::header;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/book/data");
    let details = "training loss: mean over the steps since the last line; validation loss: 48 \
                   held-out periodic sequences; first-half and repeat loss: 24 random sequences \
                   of 32 characters repeated once";
    let mut training = format!("{}\n{LOG_COLUMNS}\n", header("one run per seed", details));
    let mut heads = format!(
        "{}\n{HEAD_COLUMNS}\n",
        header(
            "one run per seed",
            "mean attention weights on 24 random sequences of 32 characters repeated once"
        )
    );
    let mut removals = format!(
        "{}\n{ABLATION_COLUMNS}\n",
        header(
            "one run per seed",
            "losses on 24 random sequences of 32 characters repeated once, at the last step"
        )
    );
    let repeats = repeats(CONTROL_MODEL.vocab)?;
    for seed in CONTROL_SEEDS {
        let mut model = LanguageModel::<f32>::new(CONTROL_MODEL, seed)?;
        let recipe = attn::lm::LmTraining { seed, ..CONTROL_TRAINING };
        let (validation_inputs, validation_targets) = control_validation()?;
        let start = Instant::now();
        let mut failure = None;
        train_on_batches(
            &mut model,
            &recipe,
            |rng| periodic_training_batch(&CONTROL_MODEL, rng, recipe.batch),
            |m| m.loss(&validation_inputs, &validation_targets),
            |e, m| match induction_scores(m, &repeats) {
                Ok(s) => {
                    println!(
                        "seed {seed} step {:4}: train {:.4}, held out {:.4}, repeat {:.3} (first half {:.3})",
                        e.step, e.train_loss, e.validation_loss, s.repeat_loss, s.first_half_loss
                    );
                    log_entry(&mut training, &mut heads, seed, e, &s);
                }
                Err(err) => failure = Some(err),
            },
        )?;
        if let Some(err) = failure {
            return Err(err.into());
        }
        println!("seed {seed}: {} steps in {:.1} s", recipe.steps, start.elapsed().as_secs_f64());
        let rows = ablation(&model, seed)?;
        println!("{}", ablation_table(&rows));
        for row in &rows {
            removals.push_str(&ablation_line(row));
            removals.push('\n');
        }
        if seed == CONTROL_SEEDS[0] {
            let provenance =
                header("exact", "the trained weights of the positive control, seed 1, f32");
            std::fs::write(
                format!("{dir}/ch16-control-weights.safetensors"),
                model.to_safetensors(&provenance)?,
            )?;
        }
    }
    std::fs::write(format!("{dir}/ch16-control-training.tsv"), training)?;
    std::fs::write(format!("{dir}/ch16-control-heads.tsv"), heads)?;
    std::fs::write(format!("{dir}/ch16-control-ablation.tsv"), removals)?;
    let corpus = Corpus::shakespeare(corpus_dir())?;
    let (seed, count, half) = REPEATS;
    let probes = corpus_repeats(corpus.validation(), seed, count, half);
    println!("{}", corpus_probe_report(&book_model()?, &probes)?);
    Ok(())
}
