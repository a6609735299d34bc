//! Chapter 16's speed measurements (run by `cargo xtask measure lm`, with
//! PyTorch's in the same run; needs the corpus):
//!
//! - `train`: training tokens per second of the book's model and recipe,
//!   over steps 101 to 300 (the first 100 are not timed), on as many
//!   threads as `rayon`'s pool has; prints one line `crate THREADS TOKENS/S`;
//!   `train fused` the same with the attention through the appendix's
//!   fused kernel (`crate_fused THREADS TOKENS/S`); `train profile` the
//!   same as `train` with the validation loss on one batch only, printing
//!   `crate_ms_per_step THREADS MS`, for `cargo xtask measure lm` to
//!   sample under `perf record`: where the time goes is then a training
//!   step's.
//! - `cache`: seconds to generate text of growing length with and without
//!   the KV cache, then of one forward pass over that many characters, of
//!   one over a single character and of one cached step (each the best of
//!   5), one line per length.

use std::time::Instant;

use attn::lm::{
    train_lm, AttentionPath, Corpus, Decoding, LanguageModel, LmTraining, Sampler,
    SHAKESPEARE_MODEL, SHAKESPEARE_TRAINING,
};
use report::ch16::{book_model, corpus_dir};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    match std::env::args().nth(1).as_deref() {
        Some("train") => train_line(std::env::args().nth(2).as_deref()),
        Some("cache") => cache(),
        _ => Err("usage: ch16_lm_speed_data train [fused | profile] | cache".into()),
    }
}

/// Trains as `train MODE` asks and prints its one line.
fn train_line(mode: Option<&str>) -> Result<(), Box<dyn std::error::Error>> {
    let threads = rayon::current_num_threads();
    let windows = SHAKESPEARE_TRAINING.log_windows;
    let line = match mode {
        None => format!("crate\t{threads}\t{:.1}", train(AttentionPath::Weights, windows)?.0),
        Some("fused") => {
            format!("crate_fused\t{threads}\t{:.1}", train(AttentionPath::Fused, windows)?.0)
        }
        Some("profile") => {
            let (rate, tokens) = train(AttentionPath::Weights, SHAKESPEARE_TRAINING.batch)?;
            format!("crate_ms_per_step\t{threads}\t{:.3}", 1e3 * tokens / rate)
        }
        Some(other) => return Err(format!("train {other}: fused, profile or nothing").into()),
    };
    println!("{line}");
    Ok(())
}

/// Trains 300 steps of the recipe with `attention`, the validation loss on
/// `log_windows` windows: the training tokens per second over steps 101
/// to 300, and the tokens a step.
fn train(
    attention: AttentionPath,
    log_windows: usize,
) -> Result<(f64, f64), Box<dyn std::error::Error>> {
    let corpus = Corpus::shakespeare(corpus_dir())?;
    let recipe = LmTraining { steps: 300, attention, log_windows, ..SHAKESPEARE_TRAINING };
    let mut model = LanguageModel::<f32>::new(SHAKESPEARE_MODEL, recipe.seed)?;
    let log = train_lm(&mut model, corpus.train(), corpus.validation(), &recipe, |_, _| {})?;
    // Each entry's rate covers its own 100 steps; the first entry is not timed.
    let tokens_per_step = (recipe.batch * SHAKESPEARE_MODEL.context) as f64;
    let timed = &log[1..];
    let tokens = timed.len() as f64 * 100.0 * tokens_per_step;
    let seconds: f64 = timed.iter().map(|e| 100.0 * tokens_per_step / e.tokens_per_second).sum();
    Ok((tokens / seconds, tokens_per_step))
}

fn cache() -> Result<(), Box<dyn std::error::Error>> {
    let model = book_model()?;
    let greedy = Sampler::new(0.0)?;
    for length in [8, 16, 32, 64] {
        let mut best = [f64::INFINITY; 5];
        let mut time = |i: usize, f: &mut dyn FnMut() -> Result<(), attn::AttnError>| {
            let start = Instant::now();
            f()?;
            best[i] = best[i].min(start.elapsed().as_secs_f64());
            Ok::<(), attn::AttnError>(())
        };
        let text: Vec<usize> = vec![0; length];
        for _ in 0..5 {
            for (i, decoding) in [Decoding::Cached, Decoding::Recompute].into_iter().enumerate() {
                time(i, &mut || model.generate(&[0], length - 1, &greedy, 0, decoding).map(drop))?;
            }
            time(2, &mut || model.next_logits(&text).map(drop))?;
            time(3, &mut || model.next_logits(&text[..1]).map(drop))?;
            let mut cache = model.new_cache();
            time(4, &mut || model.step(0, &mut cache).map(drop))?;
        }
        let [cached, recomputed, forward, forward_one, step_one] = best;
        println!(
            "{length}\t{cached:.6e}\t{recomputed:.6e}\t{forward:.6e}\t{forward_one:.6e}\t{step_one:.6e}"
        );
    }
    Ok(())
}
