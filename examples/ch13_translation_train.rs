//! Chapter 13: trains the encoder–decoder on the number-words task three
//! times with the same budget — with cross-attention, mean-pooled
//! (one pooled vector of the encoder's output), and with attention and
//! label smoothing — prints each run's time and held-out scores, and writes
//! the weights and the loss curves to `book/data/`. Then trains the model
//! with attention from four more seeds and records how alignment-like its
//! heads are (`ch13-seeds.csv`). Last, the length experiment: a GRU
//! encoder–decoder with and without additive attention and the Transformer
//! with and without cross-attention, three seeds each, on data balanced by
//! source length (`ch14-lengths.csv`, and the same measure on each
//! model's training pairs, `ch14-train-lengths.csv`; `ch14-length-models.csv`, and the
//! GRU with attention's weights). Run by `cargo xtask train`, not in CI:
//! the figures come from the committed weights.
//!
//! ```text
//! cargo xtask train        # also runs this example
//! ```

use std::time::Instant;

use attn::nn::Parameters;
use attn::translation::alignment_scores;
use attn::translation::{
    book_pairs, evaluate, train_seq2seq, Seq2SeqConfig, Seq2SeqTraining, BOOK_SEQ2SEQ,
    BOOK_SEQ2SEQ_TRAINING,
};
use report::provenance::header;

/// Seeds of the sweep (seed 1, the book's, is trained again: the run is
/// deterministic, so its row must match the saved model).
const SEEDS: u64 = 5;

/// The three runs: file name, model, training.
const RUNS: [(&str, Seq2SeqConfig, Seq2SeqTraining); 3] = [
    ("attention", BOOK_SEQ2SEQ, BOOK_SEQ2SEQ_TRAINING),
    ("mean-pooled", Seq2SeqConfig { bottleneck: true, ..BOOK_SEQ2SEQ }, BOOK_SEQ2SEQ_TRAINING),
    ("smoothed", BOOK_SEQ2SEQ, Seq2SeqTraining { label_smoothing: 0.1, ..BOOK_SEQ2SEQ_TRAINING }),
];

fn main() -> Result<(), report::error::ReportError> {
    let (held_out, pairs) = book_pairs()?;
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/book/data");
    let mut curves = Vec::new();
    for (name, config, training) in RUNS {
        let start = Instant::now();
        let (net, losses) = train_seq2seq(config, &training, &pairs)?;
        let seconds = start.elapsed().as_secs_f64();
        let (exact, bleu) = evaluate(&net, &held_out, 1)?;
        println!(
            "{name}: {} parameters, {} steps of {} pairs in {seconds:.1} s; final loss {:.1e}; \
             held-out exact {exact:.3}, BLEU {:.3} (greedy)",
            net.parameter_count(),
            training.steps,
            training.batch,
            losses[losses.len() - 1],
            bleu.score
        );
        let weights = header("exact", "the trained weights, rounded to f32");
        std::fs::write(
            format!("{dir}/ch13-{name}-weights.txt"),
            format!("{weights}\n{}", net.to_text()?),
        )
        .expect("write weights");
        curves.push(losses);
    }
    let mut csv = format!(
        "{}\nstep,attention,mean-pooled,smoothed\n",
        header("per step", "each step's loss on its batch, for each of the three models")
    );
    for step in 0..curves[0].len() {
        let row: Vec<String> = curves.iter().map(|c| c[step].to_string()).collect();
        csv += &format!("{},{}\n", step + 1, row.join(","));
    }
    std::fs::write(format!("{dir}/ch13-training.csv"), csv).expect("write loss curves");
    println!("wrote book/data/ch13-*-weights.txt and book/data/ch13-training.csv");

    // The same model and data from other seeds: do the heads align?
    let mut seeds = format!(
        "{}\nseed,held_out_exact,best_head_alignment\n",
        header(
            "one run per seed",
            "greedy exact accuracy on the 1000 held-out pairs; the best head's alignment score"
        )
    );
    for seed in 1..=SEEDS {
        let training = Seq2SeqTraining { seed, ..BOOK_SEQ2SEQ_TRAINING };
        let (net, _) = train_seq2seq(BOOK_SEQ2SEQ, &training, &pairs)?;
        let (exact, _) = evaluate(&net, &held_out, 1)?;
        let best = alignment_scores(&net, &held_out)?.into_iter().flatten().fold(0.0, f64::max);
        println!("seed {seed}: held-out exact {exact:.3}, best head's alignment score {best:.3}");
        seeds += &format!("{seed},{exact},{best}\n");
    }
    std::fs::write(format!("{dir}/ch13-seeds.csv"), seeds).expect("write the seed sweep");
    println!("wrote book/data/ch13-seeds.csv");
    Ok(())
}
