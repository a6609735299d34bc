//! Chapter 14's second task: trains the book's encoder–decoder on
//! run-length summaries from three seeds with the translation's budget,
//! scores each on the held-out pairs (exact match and ROUGE), measures how
//! its cross-attention spreads over the run each summary token sums up,
//! and writes `book/data/ch14-summary.csv`, `ch14-summary-spread.csv` and
//! the first seed's weights. Run by `cargo xtask train ch14`, not in CI.
//!
//! ```text
//! cargo xtask train ch14      # also runs this example
//! ```

use std::time::Instant;

use attn::nn::Parameters;
use attn::translation::{train_seq2seq, Seq2SeqTraining, BOOK_SEQ2SEQ_TRAINING};
use report::ch14_summary::{
    attention_spread, spread_line, summary_config, summary_line, summary_pairs, summary_scores,
    SummaryRow, SPREAD_COLUMNS, SUMMARY_COLUMNS, SUMMARY_SEEDS,
};
use report::provenance::header;

fn main() -> Result<(), report::error::ReportError> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/book/data");
    let (held_out, pairs) = summary_pairs()?;
    println!(
        "summarisation: {} training pairs, {} held-out pairs (none in both)",
        pairs.len(),
        held_out.len()
    );
    let mut scores = format!(
        "{}\n{SUMMARY_COLUMNS}\n",
        header(
            "one run per seed",
            "the last step's loss; greedy summaries of the held-out pairs: the share exact, and \
             mean ROUGE-1, ROUGE-2 and ROUGE-L F1"
        )
    );
    let mut spread = format!(
        "{}\n{SPREAD_COLUMNS}\n",
        header(
            "one run per seed, means over tokens and heads",
            "decoder layer 2's cross-attention for the summary tokens of each kind and run \
             length: the mean entropy of the weights, the mean weight inside the run, and the \
             mean entropy of the weights inside the run, rescaled to sum to 1"
        )
    );
    for seed in SUMMARY_SEEDS {
        let training = Seq2SeqTraining { seed, ..BOOK_SEQ2SEQ_TRAINING };
        let start = Instant::now();
        let (net, losses) = train_seq2seq(summary_config(), &training, &pairs)?;
        let seconds = start.elapsed().as_secs_f64();
        let (exact, rouge) = summary_scores(&net, &held_out)?;
        let final_loss = losses[losses.len() - 1];
        println!(
            "seed {seed}: {} parameters, {} steps of {} pairs in {seconds:.1} s; final loss \
             {final_loss:.1e}; held-out exact {exact:.3}, ROUGE-1 {:.3}, ROUGE-2 {:.3}, \
             ROUGE-L {:.3} (greedy)",
            net.parameter_count(),
            training.steps,
            training.batch,
            rouge.one.f1,
            rouge.two.f1,
            rouge.l.f1
        );
        let row =
            SummaryRow { seed, final_loss, exact, rouge: [rouge.one.f1, rouge.two.f1, rouge.l.f1] };
        scores += &(summary_line(&row) + "\n");
        for r in attention_spread(&net, seed, &held_out)? {
            spread += &(spread_line(&r) + "\n");
        }
        if seed == SUMMARY_SEEDS[0] {
            let weights = header("exact", "the trained weights, rounded to f32");
            std::fs::write(
                format!("{dir}/ch14-summary-weights.txt"),
                format!("{weights}\n{}", net.to_text()?),
            )
            .expect("write weights");
        }
    }
    std::fs::write(format!("{dir}/ch14-summary.csv"), scores).expect("write the scores");
    std::fs::write(format!("{dir}/ch14-summary-spread.csv"), spread).expect("write the spread");
    println!(
        "wrote book/data/ch14-summary.csv, book/data/ch14-summary-spread.csv and \
         book/data/ch14-summary-weights.txt"
    );
    Ok(())
}
