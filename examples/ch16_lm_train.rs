//! Chapter 16: trains the language model on Shakespeare's works by nanoGPT's
//! CPU recipe, once per seed (1, 2 and 3), measuring every 100 steps the
//! validation loss and the induction scores on repeated random sequences;
//! then the same model with rotary positions, seed 1. Writes the weights of
//! seed 1 (both models) and every run's log to `book/data/` (run by `cargo
//! xtask train lm`, not in CI: the chapter's figures and tests use the
//! committed files). Needs the corpus (`cargo xtask corpus`).
//!
//! ```text
//! cargo xtask train lm     # = cargo run --release --example ch16_lm_train
//! ```

use std::time::Instant;

use report::ch16::{corpus_dir, log_entry, repeats, HEAD_COLUMNS, LOG_COLUMNS};
use report::provenance::header;

use attn::lm::{
    even_offsets, induction_scores, mean_loss, train_lm, Corpus, LanguageModel, LmConfig,
    LmTraining, Positions, SHAKESPEARE_MODEL, SHAKESPEARE_TRAINING,
};
use attn::nn::Parameters;

/// The seeds whose runs the chapter compares; the first one's weights are
/// the book's model.
const SEEDS: [u64; 3] = [1, 2, 3];

/// One training run's log lines and its heads' scores, as text.
struct Logs {
    training: String,
    heads: String,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let corpus = Corpus::shakespeare(corpus_dir())?;
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/book/data");
    let details = "training loss: mean over the steps since the last line; validation loss: 240 \
                   evenly spaced windows; tokens per second: training steps only; first-half and \
                   repeat loss: 24 random sequences of 32 characters repeated once";
    let mut learned = Logs {
        training: format!("{}\n{LOG_COLUMNS}\n", header("one run per seed", details)),
        heads: format!(
            "{}\n{HEAD_COLUMNS}\n",
            header(
                "one run per seed",
                "mean attention weights on 24 random sequences of 32 characters repeated once"
            )
        ),
    };
    for seed in SEEDS {
        let model = train(&corpus, SHAKESPEARE_MODEL, seed, "", &mut learned)?;
        if seed == SEEDS[0] {
            let provenance = header("exact", "the trained weights of seed 1, f32");
            let bytes = model.to_safetensors(&provenance)?;
            std::fs::write(format!("{dir}/ch16-weights.safetensors"), bytes)?;
        }
    }
    let mut rotary = Logs {
        training: format!("{}\n{LOG_COLUMNS}\n", header("one run", details)),
        heads: String::new(),
    };
    let config = LmConfig { positions: Positions::Rotary, ..SHAKESPEARE_MODEL };
    let model = train(&corpus, config, SEEDS[0], "rotary ", &mut rotary)?;
    let provenance = header("exact", "the trained weights of seed 1, rotary positions, f32");
    let bytes = model.to_safetensors(&provenance)?;
    std::fs::write(format!("{dir}/ch16-rotary-weights.safetensors"), bytes)?;
    println!("bigram baseline on the validation split: {:.4}", corpus.bigram_loss());
    std::fs::write(format!("{dir}/ch16-training.tsv"), learned.training)?;
    std::fs::write(format!("{dir}/ch16-heads.tsv"), learned.heads)?;
    std::fs::write(format!("{dir}/ch16-rotary-training.tsv"), rotary.training)?;
    Ok(())
}

/// Trains a model of `config` from `seed` by the book's recipe, printing
/// (each line starting with `label`) and logging every 100 steps; then its
/// loss over windows spanning the whole validation split.
fn train(
    corpus: &Corpus,
    config: LmConfig,
    seed: u64,
    label: &str,
    logs: &mut Logs,
) -> Result<LanguageModel<f32>, Box<dyn std::error::Error>> {
    let repeats = repeats(config.vocab)?;
    let recipe = LmTraining { seed, ..SHAKESPEARE_TRAINING };
    let mut model = LanguageModel::<f32>::new(config, seed)?;
    let start = Instant::now();
    let mut failure = None;
    let log = train_lm(&mut model, corpus.train(), corpus.validation(), &recipe, |e, m| {
        match induction_scores(m, &repeats) {
            Ok(s) => {
                println!(
                    "{label}seed {seed} step {:4}: train {:.4}, validation {:.4}, repeat {:.3} \
                     (first half {:.3}), {:.0} tokens/s",
                    e.step,
                    e.train_loss,
                    e.validation_loss,
                    s.repeat_loss,
                    s.first_half_loss,
                    e.tokens_per_second
                );
                log_entry(&mut logs.training, &mut logs.heads, seed, e, &s);
            }
            Err(err) => failure = Some(err),
        }
    })?;
    if let Some(err) = failure {
        return Err(err.into());
    }
    let seconds = start.elapsed().as_secs_f64();
    let whole = even_offsets(
        corpus.validation().len() / config.context,
        corpus.validation().len(),
        config.context,
    )?;
    let validation = mean_loss(&model, corpus.validation(), &whole, recipe.batch)?;
    println!(
        "{label}seed {seed}: {} parameters, {} steps in {seconds:.1} s; last logged validation \
         loss {:.4}; over {} windows spanning the validation split {validation:.4}",
        model.parameter_count(),
        recipe.steps,
        log.last().map_or(f64::NAN, |e| e.validation_loss),
        whole.len()
    );
    Ok(model)
}
