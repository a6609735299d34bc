//! Chapter 17's fresh read: along the long texts of `cargo xtask train kv`
//! (8 texts of 512 characters from the validation split), the loss at each
//! position past the context through the sliding window of the last 64
//! tokens, and by reading those 64 characters afresh, for chapter 16's
//! committed rotary model (chapter 17's multi-head run of seed 1). Writes
//! `book/data/ch17-fresh-read.tsv`; evaluation only, no training, under a
//! minute. Needs the corpus (`cargo xtask corpus`).
//!
//! ```text
//! cargo run --release --example ch17_fresh_read_data
//! ```

use attn::lm::Corpus;
use report::ch16::{corpus_dir, rotary_model};
use report::ch17::fresh::{fresh_read_rows, fresh_reads, FRESH_FILE, LONG_TEXTS};
use report::provenance::header;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let corpus = Corpus::shakespeare(corpus_dir())?;
    let validation: Vec<usize> = corpus.validation().iter().map(|&c| usize::from(c)).collect();
    let model = rotary_model()?;
    let start = std::time::Instant::now();
    let rows = fresh_reads(&model, &validation)?;
    eprintln!("evaluated in {:.1} s", start.elapsed().as_secs_f64());
    let (count, long) = LONG_TEXTS;
    let details = format!(
        "chapter 16's rotary weights (chapter 17's multi-head run of seed 1); mean loss of {count} texts of {long} characters from the validation split, per bucket \
         of 16 positions past the context, through the sliding window of the last 64 tokens and \
         by reading those 64 characters afresh"
    );
    let text = format!("{}\n{}", header("one run", &details), fresh_read_rows(&rows));
    let path = report::root().join("book/data").join(FRESH_FILE);
    std::fs::write(&path, text)?;
    print!("{}", fresh_read_rows(&rows));
    Ok(())
}
