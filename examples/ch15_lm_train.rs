//! Chapter 15: trains the language model on Shakespeare's works by nanoGPT's
//! CPU recipe, once per seed (1, 2 and 3), measuring every 100 steps the
//! validation loss and the induction scores on repeated random sequences;
//! writes seed 1's weights, and every seed's log, to `book/data/` (run by
//! `cargo xtask train lm`, not in CI: the chapter's figures and tests use
//! the committed files). Needs the corpus (`cargo xtask corpus`).
//!
//! ```text
//! cargo xtask train lm     # = cargo run --release --example ch15_lm_train
//! ```

use std::fmt::Write;
use std::time::Instant;

use report::ch15::{corpus_dir, repeats};
use report::provenance::header;

use attn::lm::{
    even_offsets, induction_scores, mean_loss, train_lm, Corpus, LanguageModel, LmTraining,
    SHAKESPEARE_MODEL, SHAKESPEARE_TRAINING,
};
use attn::nn::Parameters;

/// The seeds whose runs the chapter compares; the first one's weights are
/// the book's model.
const SEEDS: [u64; 3] = [1, 2, 3];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let corpus = Corpus::shakespeare(corpus_dir())?;
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/book/data");
    let repeats = repeats(SHAKESPEARE_MODEL.vocab);
    let mut training = format!(
        "{}\nseed\tstep\ttrain_loss\tvalidation_loss\tlr\ttokens_per_second\tfirst_half_loss\trepeat_loss\n",
        header(
            "one run per seed",
            "training loss: mean over the steps since the last line; validation loss: 240 \
             evenly spaced windows; tokens per second: training steps only; first-half and \
             repeat loss: 24 random sequences of 32 characters repeated once"
        )
    );
    let mut heads = format!(
        "{}\nseed\tstep\tblock\thead\tprefix_matching\tprevious_token\n",
        header(
            "one run per seed",
            "mean attention weights on 24 random sequences of 32 characters repeated once"
        )
    );
    for seed in SEEDS {
        let recipe = LmTraining {
            seed,
            ..SHAKESPEARE_TRAINING
        };
        let mut model = LanguageModel::<f32>::new(SHAKESPEARE_MODEL, seed)?;
        let start = Instant::now();
        let mut failure = None;
        let log = train_lm(
            &mut model,
            corpus.train(),
            corpus.validation(),
            &recipe,
            |e, m| match induction_scores(m, &repeats) {
                Ok(s) => {
                    println!(
                        "seed {seed} step {:4}: train {:.4}, validation {:.4}, repeat {:.3} \
                         (first half {:.3}), {:.0} tokens/s",
                        e.step,
                        e.train_loss,
                        e.validation_loss,
                        s.repeat_loss,
                        s.first_half_loss,
                        e.tokens_per_second
                    );
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
                        let _ =
                            writeln!(heads, "{seed}\t{}\t{block}\t{head}\t{p:.5}\t{q:.5}", e.step);
                    }
                }
                Err(err) => failure = Some(err),
            },
        )?;
        if let Some(err) = failure {
            return Err(err.into());
        }
        let seconds = start.elapsed().as_secs_f64();
        let whole = even_offsets(
            corpus.validation().len() / SHAKESPEARE_MODEL.context,
            corpus.validation().len(),
            SHAKESPEARE_MODEL.context,
        );
        let validation = mean_loss(&model, corpus.validation(), &whole, recipe.batch)?;
        println!(
            "seed {seed}: {} parameters, {} steps in {seconds:.1} s; last logged validation loss \
             {:.4}; over {} windows spanning the validation split {validation:.4}",
            model.parameter_count(),
            recipe.steps,
            log.last().map_or(f64::NAN, |e| e.validation_loss),
            whole.len()
        );
        if seed == SEEDS[0] {
            let provenance = header("exact", "the trained weights of seed 1, f32");
            let bytes = model.to_safetensors(&provenance)?;
            std::fs::write(format!("{dir}/ch15-weights.safetensors"), bytes)?;
        }
    }
    println!(
        "bigram baseline on the validation split: {:.4}",
        corpus.bigram_loss()
    );
    std::fs::write(format!("{dir}/ch15-training.tsv"), training)?;
    std::fs::write(format!("{dir}/ch15-heads.tsv"), heads)?;
    Ok(())
}
