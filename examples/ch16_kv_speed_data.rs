//! Chapter 16's measurements (run by `cargo xtask measure kv`; needs the
//! corpus):
//!
//! - `speed`: seconds to write 256 characters through the sliding cache
//!   (best of 5, greedy), for the rotary model with 4, 2 and 1 key/value
//!   heads. Speed does not depend on the weights' values, so the models are
//!   freshly initialised; one line `KV_HEADS SECONDS`.
//! - `first`: for chapter 15's rotary model (seed 1), the mean attention
//!   weight of each head on the first position of 240 validation windows,
//!   from the queries at positions 32 to 63, and what uniform weights
//!   would give; one line `BLOCK HEAD WEIGHT UNIFORM`.

use std::time::Instant;

use attn::lm::{
    even_offsets, windows, Corpus, Decoding, LanguageModel, LmConfig, Positions, Sampler,
    SHAKESPEARE_MODEL,
};
use report::ch15::{corpus_dir, rotary_model};

/// Characters written in the speed measurement.
const WRITTEN: usize = 256;
/// The first query position whose weight on position 0 is averaged.
const FROM: usize = 32;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    match std::env::args().nth(1).as_deref() {
        Some("speed") => speed(),
        Some("first") => first(),
        _ => Err("usage: ch16_kv_speed_data speed | first".into()),
    }
}

fn speed() -> Result<(), Box<dyn std::error::Error>> {
    let greedy = Sampler::new(0.0)?;
    for kv_heads in [4, 2, 1] {
        let config = LmConfig {
            kv_heads,
            positions: Positions::Rotary,
            ..SHAKESPEARE_MODEL
        };
        let model = LanguageModel::<f32>::new(config, 1)?;
        let mut best = f64::INFINITY;
        for _ in 0..5 {
            let start = Instant::now();
            model.generate(&[0], WRITTEN, &greedy, 0, Decoding::Cached)?;
            best = best.min(start.elapsed().as_secs_f64());
        }
        println!("{kv_heads}\t{best:.6e}");
    }
    Ok(())
}

fn first() -> Result<(), Box<dyn std::error::Error>> {
    let corpus = Corpus::shakespeare(corpus_dir())?;
    let model = rotary_model()?;
    let c = model.config();
    let offsets = even_offsets(240, corpus.validation().len(), c.context);
    let (inputs, _) = windows(corpus.validation(), &offsets, c.context)?;
    let fwd = model.forward(&inputs)?;
    let uniform =
        (FROM..c.context).map(|t| 1.0 / (t + 1) as f64).sum::<f64>() / (c.context - FROM) as f64;
    for block in 0..c.layers {
        for head in 0..c.heads {
            let mut sum = 0.0;
            for sequence in 0..inputs.len() {
                let p = fwd.weights(block, sequence, head)?;
                sum += (FROM..c.context).map(|t| f64::from(p[[t, 0]])).sum::<f64>();
            }
            let mean = sum / (inputs.len() * (c.context - FROM)) as f64;
            println!("{}\t{}\t{mean:.5}\t{uniform:.5}", block + 1, head + 1);
        }
    }
    Ok(())
}
