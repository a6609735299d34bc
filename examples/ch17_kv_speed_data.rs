//! Chapter 17's speed measurement (run by `cargo xtask measure kv`):
//! seconds to write 256 characters through the sliding cache (best of 5,
//! greedy), for the rotary model with 4, 2 and 1 key/value heads and with
//! latent attention (whose cache's absorbed weights are computed once per
//! text, and timed). Speed does not depend on the weights' values, so the
//! models are freshly initialised; one line `VARIANT SECONDS`.

use std::time::Instant;

use attn::lm::{Decoding, LanguageModel, Sampler};

/// Characters written in the speed measurement.
const WRITTEN: usize = 256;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    match std::env::args().nth(1).as_deref() {
        Some("speed") => speed(),
        _ => Err("usage: ch17_kv_speed_data speed".into()),
    }
}

fn speed() -> Result<(), Box<dyn std::error::Error>> {
    let greedy = Sampler::new(0.0)?;
    for attention in report::ch17::ATTENTIONS {
        let config = report::ch17::variant(attention);
        let model = LanguageModel::<f32>::new(config, 1)?;
        let mut best = f64::INFINITY;
        for _ in 0..5 {
            let start = Instant::now();
            model.generate(&[0], WRITTEN, &greedy, 0, Decoding::Cached)?;
            best = best.min(start.elapsed().as_secs_f64());
        }
        println!("{attention}\t{best:.6e}");
    }
    Ok(())
}
