//! Chapter 19's measurements, run by `cargo xtask measure serving` (a few
//! minutes on one core): this core's triad bandwidth and the time of
//! one decode step by attention, batch and context
//! (`book/data/ch19-decode.tsv`); continuous against static batching on
//! one workload (`ch19-batching.tsv`); speculative decoding's acceptance
//! and speed by draft and k, with three one-layer drafts trained in the
//! run (`ch19-speculative.tsv`). Every file carries the run's header.

use std::time::Instant;

use attn::experiments::roofline::triad_bandwidth;
use attn::lm::{Batching, Corpus, Sampler};
use report::ch17::ATTENTIONS;
use report::ch19::measure::{
    arrivals, contiguous_steps, decode_steps, model_draft, prompts, quantile, serve, speculate,
    train_draft, workload, DRAFT_SEEDS, KS, PROMPTS, PROMPT_LEN, REQUESTS, WRITTEN,
};
use report::provenance::header;

/// Repeats of each decode step (and of the triad): the best is kept.
const REPEATS: usize = 9;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    match std::env::args().nth(1).as_deref() {
        Some("all") => {
            decode()?;
            batching()?;
            speculative()
        }
        _ => Err("usage: ch19_serving_data all (run by `cargo xtask measure serving`)".into()),
    }
}

/// Writes `book/data/NAME`.
fn write(name: &str, text: &str) -> Result<(), Box<dyn std::error::Error>> {
    let path = report::root().join("book/data").join(name);
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    eprintln!("wrote {}", path.display());
    Ok(())
}

fn decode() -> Result<(), Box<dyn std::error::Error>> {
    let mut text = header(
        "best of 9",
        "seconds of one decode step through the paged cache (blocks of 16), the variants \
         taking turns, and through the contiguous cache, one thread; the triad's gigabytes a \
         second, best of 9",
    );
    text += &format!("\n# triad_gbytes_per_s\t{:.6e}\n", triad_bandwidth(1 << 25, REPEATS)?);
    text += "attention\tcache\tbatch\tcontext\tseconds\tcache_bytes\n";
    for row in decode_steps(&ATTENTIONS, REPEATS)? {
        text += &format!(
            "{}\tpaged\t{}\t{}\t{:.6e}\t{}\n",
            row.attention, row.batch, row.context, row.seconds, row.cache_bytes
        );
    }
    for attention in ATTENTIONS {
        for row in contiguous_steps(attention, REPEATS)? {
            text += &format!(
                "{attention}\tcontiguous\t1\t{}\t{:.6e}\t{}\n",
                row.context, row.seconds, row.cache_bytes
            );
        }
    }
    write("ch19-decode.tsv", &text)
}

fn batching() -> Result<(), Box<dyn std::error::Error>> {
    let requests = workload(REQUESTS)?;
    let mut text = header(
        "one run each, two rounds",
        "seconds are the sum of the steps' durations, one thread; latencies from arrival to \
         the last token",
    );
    text += "\narrivals\tround\tbatching\tsteps\tseconds\twritten\tp50\tp95\tpeak_blocks\n";
    for (name, gap) in [("at once", 0.0), ("every 0.1 s", 0.1)] {
        let arrived = arrivals(requests.len(), gap);
        for round in 1..=2 {
            for batching in [Batching::Continuous, Batching::Static] {
                let s = serve(&requests, &arrived, batching)?;
                let (p50, p95) = (quantile(&s.latencies, 0.5), quantile(&s.latencies, 0.95));
                text += &format!(
                    "{name}\t{round}\t{batching:?}\t{}\t{:.4}\t{}\t{p50:.4}\t{p95:.4}\t{}\n",
                    s.steps, s.seconds, s.written, s.peak_blocks
                );
            }
        }
    }
    write("ch19-batching.tsv", &text)
}

fn speculative() -> Result<(), Box<dyn std::error::Error>> {
    let corpus = Corpus::shakespeare(report::ch16::corpus_dir())?;
    let target = report::ch16::book_model()?;
    let mut drafts = Vec::new();
    for seed in DRAFT_SEEDS {
        let start = Instant::now();
        drafts.push(train_draft(&corpus, seed)?);
        eprintln!("one-layer draft {seed} trained in {:.1} s", start.elapsed().as_secs_f64());
    }
    let prompts = prompts(&corpus, PROMPTS, PROMPT_LEN);
    let mut text = header(
        "one run each",
        "seconds to write with the draft and with the target alone, summed over the prompts, \
         one thread",
    );
    text += "\ndraft\tseed\tk\tgreedy\tproposed\tkept\trounds\tseconds\talone\n";
    for sampler in [Sampler::new(0.0)?, Sampler::new(1.0)?] {
        for k in KS {
            let mut rows = vec![speculate(
                &target,
                ("bigram", 0, &mut corpus.bigram()),
                (&prompts, WRITTEN),
                (&sampler, k),
            )?];
            for (small, seed) in drafts.iter().zip(DRAFT_SEEDS) {
                let mut draft = model_draft(small)?;
                rows.push(speculate(
                    &target,
                    ("one layer", seed, &mut draft),
                    (&prompts, WRITTEN),
                    (&sampler, k),
                )?);
            }
            for r in rows {
                text += &format!(
                    "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{:.4}\t{:.4}\n",
                    r.draft,
                    r.seed,
                    r.k,
                    r.greedy,
                    r.proposed,
                    r.kept,
                    r.rounds,
                    r.seconds,
                    r.alone
                );
            }
        }
    }
    write("ch19-speculative.tsv", &text)
}
