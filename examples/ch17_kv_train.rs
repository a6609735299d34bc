//! Sharing and forgetting keys: trains the language model with rotary
//! positions and multi-head (4 key/value heads), grouped-query (2),
//! multi-query (1) and multi-head latent attention, at the same depth and
//! width, seeds 1, 2 and 3, by chapter 16's recipe; two runs at a time, one
//! core each (a run's results do not depend on it). For each run: the
//! training log, the loss over the whole validation split, each head's
//! mean attention on the first position of 240 validation windows, from
//! the queries at positions 32 to 63, and (for the variants that share
//! key/value heads) the loss along texts 8 times the context read through
//! three caches (all of the text, a window of 64, 4 sinks and a window of
//! 60). Each multi-head model is also converted to 2 and to 1 key/value
//! heads by mean-pooling (exercise 1's function in every block, as Ainslie
//! et al. convert a checkpoint) and trained 100 steps more: its loss
//! before and after. Writes `book/data/ch17-*.tsv` (run by `cargo
//! xtask train kv`, not in CI). Needs the corpus (`cargo xtask corpus`).
//!
//! ```text
//! cargo xtask train kv     # = cargo run --release --example ch17_kv_train
//! ```

use std::fmt::Write;
use std::time::Instant;

use attn::lm::{
    even_offsets, mean_loss, train_lm, windows, Corpus, Forgetting, LanguageModel, LmCache,
    LmTraining, SHAKESPEARE_TRAINING,
};
use attn::nn::Parameters;
use report::ch16::corpus_dir;
use report::ch17::pooled::{mean_pooled, FINE_TUNING};
use report::ch17::{Attention, ATTENTIONS};
use report::provenance::header;

const SEEDS: [u64; 3] = [1, 2, 3];
/// Long texts: how many, how long (8 contexts), and the width of a bucket
/// of positions whose losses are averaged.
const TEXTS: usize = 8;
const LONG: usize = 512;
const BUCKET: usize = 16;
/// The caches long texts are read through.
const CACHES: [(&str, Forgetting); 3] = [
    ("all", Forgetting::Window(LONG)),
    ("window", Forgetting::Window(64)),
    ("sinks", Forgetting::Sinks { sinks: 4, window: 60 }),
];

/// What one run writes.
struct Run {
    printed: String,
    log: String,
    summary: String,
    long: String,
    first: String,
    pooled: String,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let corpus = Corpus::shakespeare(corpus_dir())?;
    let jobs: Vec<(Attention, u64)> =
        ATTENTIONS.iter().flat_map(|&g| SEEDS.map(|s| (g, s))).collect();
    // Two runs at a time, each on a pool of one thread.
    let mut runs: Vec<Option<Result<Run, String>>> = (0..jobs.len()).map(|_| None).collect();
    for (pair, slots) in jobs.chunks(2).zip(runs.chunks_mut(2)) {
        std::thread::scope(|scope| {
            let handles: Vec<_> = pair
                .iter()
                .map(|&(g, seed)| {
                    let corpus = &corpus;
                    scope.spawn(move || {
                        let pool = rayon::ThreadPoolBuilder::new()
                            .num_threads(1)
                            .build()
                            .map_err(|e| e.to_string())?;
                        pool.install(|| run(corpus, g, seed).map_err(|e| e.to_string()))
                    })
                })
                .collect();
            for (slot, handle) in slots.iter_mut().zip(handles) {
                *slot = Some(handle.join().unwrap_or_else(|_| Err("a run panicked".into())));
            }
        });
    }
    let details = "two runs at a time, one core each; training loss: mean over the steps since \
                   the last line; validation loss: 240 evenly spaced windows";
    let mut log = format!(
        "{}\nattention\tseed\tstep\ttrain_loss\tvalidation_loss\ttokens_per_second\n",
        header("one run per variant and seed", details)
    );
    let mut summary = format!(
        "{}\nattention\tseed\tparameters\tcache_bytes_per_token\tvalidation_loss\n",
        header(
            "one run per variant and seed",
            "validation loss over windows of 64 spanning the whole validation split"
        )
    );
    let mut long = format!(
        "{}\nattention\tseed\tfirst_position\tall\twindow\tsinks\n",
        header(
            "one run per variant and seed",
            "mean loss of 8 texts of 512 characters from the validation split, per bucket of 16 \
             positions, read through each cache"
        )
    );
    let mut first = format!(
        "{}\nattention\tseed\tblock\thead\tweight\tuniform\n",
        header(
            "one run per variant and seed",
            "mean attention weight on position 0 from the queries at positions 32 to 63 of 240 \
             evenly spaced validation windows, and that of uniform weights"
        )
    );
    let mut pooled = format!(
        "{}\nkv_heads\tseed\tmulti_head\tpooled\tfine_tuned\n",
        header(
            "one run per variant and seed",
            "validation loss over windows of 64 spanning the whole validation split, of each \
             multi-head model, pooled to fewer key/value heads, and after 100 more steps (10 of \
             warm-up, chapter 16's recipe otherwise)"
        )
    );
    let mut pooled_lines = Vec::new();
    for run in runs.into_iter().flatten() {
        let run = run?;
        print!("{}", run.printed);
        log += &run.log;
        summary += &run.summary;
        long += &run.long;
        first += &run.first;
        pooled_lines.extend(run.pooled.lines().map(|l| format!("{l}\n")));
    }
    // By key/value heads, 2 first, then seed.
    pooled_lines.sort_by_key(|l| std::cmp::Reverse(l.starts_with('2')));
    pooled += &pooled_lines.concat();
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/book/data");
    std::fs::write(format!("{dir}/ch17-training.tsv"), log)?;
    std::fs::write(format!("{dir}/ch17-variants.tsv"), summary)?;
    std::fs::write(format!("{dir}/ch17-long-text.tsv"), long)?;
    std::fs::write(format!("{dir}/ch17-first-position.tsv"), first)?;
    std::fs::write(format!("{dir}/ch17-pooled.tsv"), pooled)?;
    Ok(())
}

/// Trains the variant with `attention` from `seed`, then measures it.
fn run(
    corpus: &Corpus,
    attention: Attention,
    seed: u64,
) -> Result<Run, Box<dyn std::error::Error>> {
    let config = report::ch17::variant(attention);
    let kv_heads = attention; // the data files' first column
    let recipe = LmTraining { seed, ..SHAKESPEARE_TRAINING };
    let mut model = LanguageModel::<f32>::new(config, seed)?;
    let mut out = Run {
        printed: String::new(),
        log: String::new(),
        summary: String::new(),
        long: String::new(),
        first: String::new(),
        pooled: String::new(),
    };
    let start = Instant::now();
    let entries = train_lm(&mut model, corpus.train(), corpus.validation(), &recipe, |_, _| {})?;
    for e in &entries {
        writeln!(
            out.log,
            "{kv_heads}\t{seed}\t{}\t{:.5}\t{:.5}\t{:.1}",
            e.step, e.train_loss, e.validation_loss, e.tokens_per_second
        )?;
    }
    let seconds = start.elapsed().as_secs_f64();
    let validation = corpus.validation();
    let whole = even_offsets(validation.len() / 64, validation.len(), 64)?;
    let loss = mean_loss(&model, validation, &whole, recipe.batch)?;
    let bytes = LmCache::bytes_per_token(&model);
    writeln!(out.summary, "{kv_heads}\t{seed}\t{}\t{bytes}\t{loss:.5}", model.parameter_count())?;
    writeln!(
        out.printed,
        "attention {kv_heads}, seed {seed}: {} parameters, {bytes} cache bytes per token, trained \
         in {seconds:.0} s; validation loss {loss:.4}",
        model.parameter_count()
    )?;
    // Each head's weight on the first position.
    let offsets = even_offsets(240, validation.len(), config.context)?;
    let (inputs, _) = windows(validation, &offsets, config.context)?;
    let fwd = model.forward(&inputs)?;
    let from = 32;
    let queries = config.context - from;
    let uniform =
        (from..config.context).map(|t| 1.0 / (t + 1) as f64).sum::<f64>() / queries as f64;
    for block in 0..config.layers {
        for head in 0..config.heads {
            let mut sum = 0.0;
            for sequence in 0..inputs.len() {
                let p = fwd.weights(block, sequence, head)?;
                sum += (from..config.context).map(|t| f64::from(p[[t, 0]])).sum::<f64>();
            }
            let mean = sum / (inputs.len() * queries) as f64;
            writeln!(
                out.first,
                "{kv_heads}\t{seed}\t{}\t{}\t{mean:.5}\t{uniform:.5}",
                block + 1,
                head + 1
            )?;
        }
    }
    if attention == Attention::KvHeads(4) {
        convert(corpus, &model, (seed, loss, &whole), &mut out)?;
    }
    // Long texts, read through each cache (sinks at positions in the cache
    // need keys cached before RoPE, which latent attention does not keep).
    if attention == Attention::Latent {
        return Ok(out);
    }
    let text: Vec<usize> = validation.iter().map(|&c| c as usize).collect();
    let mut means = vec![[0.0; 3]; LONG - 1];
    for i in 0..TEXTS {
        let start = i * (text.len() - LONG) / TEXTS;
        for (c, &(_, forgetting)) in CACHES.iter().enumerate() {
            let cache = model.new_cache_forgetting(forgetting)?;
            let losses = model.losses_through(&text[start..start + LONG], cache)?;
            for (mean, loss) in means.iter_mut().zip(losses) {
                mean[c] += loss / TEXTS as f64;
            }
        }
    }
    for (b, bucket) in means.chunks(BUCKET).enumerate() {
        let avg = |c: usize| bucket.iter().map(|m| m[c]).sum::<f64>() / bucket.len() as f64;
        writeln!(
            out.long,
            "{kv_heads}\t{seed}\t{}\t{:.5}\t{:.5}\t{:.5}",
            b * BUCKET + 1,
            avg(0),
            avg(1),
            avg(2)
        )?;
    }
    Ok(out)
}

/// Converts the multi-head `model` of `seed` (validation loss `multi_head`
/// over the windows at `whole`) to 2 and to 1 key/value heads by
/// mean-pooling, and trains each 100 steps more: the losses before, after
/// pooling and after the training.
fn convert(
    corpus: &Corpus,
    model: &LanguageModel<f32>,
    (seed, multi_head, whole): (u64, f64, &[usize]),
    out: &mut Run,
) -> Result<(), Box<dyn std::error::Error>> {
    let validation = corpus.validation();
    let loss = |m: &LanguageModel<f32>| mean_loss(m, validation, whole, FINE_TUNING.batch);
    for kv_heads in [2, 1] {
        let mut pooled = mean_pooled(model, kv_heads)?;
        let before = loss(&pooled)?;
        let tuning = LmTraining { seed, ..FINE_TUNING };
        train_lm(&mut pooled, corpus.train(), validation, &tuning, |_, _| {})?;
        let after = loss(&pooled)?;
        writeln!(
            out.printed,
            "seed {seed}, pooled to {kv_heads}: multi-head {multi_head:.4}, pooled {before:.4}, \
             after {} steps {after:.4}",
            tuning.steps
        )?;
        writeln!(out.pooled, "{kv_heads}\t{seed}\t{multi_head:.5}\t{before:.5}\t{after:.5}")?;
    }
    Ok(())
}
