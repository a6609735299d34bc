//! The serving measurements: `decode` (the time of one decode step by
//! attention, batch and context, with this core's triad bandwidth),
//! `batching` (continuous against static batching on one workload) and
//! `speculative` (acceptance and speed by draft and k). Each prints TSV.

use std::time::Instant;

use attn::experiments::roofline::triad_bandwidth;
use attn::lm::{Batching, Corpus, Sampler};
use report::ch17::ATTENTIONS;
use report::serving::{
    arrivals, contiguous_steps, decode_steps, model_draft, prompts, quantile, serve, speculate,
    train_draft, workload,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    match std::env::args().nth(1).as_deref() {
        Some("decode") => decode(),
        Some("batching") => batching(),
        Some("speculative") => speculative(),
        _ => Err("usage: serving_data decode | batching | speculative".into()),
    }
}

fn decode() -> Result<(), Box<dyn std::error::Error>> {
    println!("# triad_gbytes_per_s\t{:.2}", triad_bandwidth(1 << 25, 5)?);
    println!("attention\tbatch\tcontext\tseconds\tcache_bytes");
    for attention in ATTENTIONS {
        for row in decode_steps(attention, 5)? {
            println!(
                "{attention}\t{}\t{}\t{:.6e}\t{}",
                row.batch, row.context, row.seconds, row.cache_bytes
            );
        }
        for (context, seconds) in contiguous_steps(attention, 5)? {
            println!("{attention} contiguous\t1\t{context}\t{seconds:.6e}\t");
        }
    }
    Ok(())
}

fn batching() -> Result<(), Box<dyn std::error::Error>> {
    let requests = workload(48)?;
    println!("arrivals\tbatching\tsteps\tseconds\twritten\tp50\tp95\tpeak_blocks");
    for (name, gap) in [("at once", 0.0), ("every 0.1 s", 0.1)] {
        let arrived = arrivals(requests.len(), gap);
        for round in 0..2 {
            for batching in [Batching::Continuous, Batching::Static] {
                let s = serve(&requests, &arrived, batching)?;
                let (p50, p95) = (quantile(&s.latencies, 0.5), quantile(&s.latencies, 0.95));
                println!(
                    "{name}\t{batching:?}\t{}\t{:.4}\t{}\t{p50:.4}\t{p95:.4}\t{}\t# round {round}",
                    s.steps, s.seconds, s.written, s.peak_blocks
                );
            }
        }
    }
    Ok(())
}

fn speculative() -> Result<(), Box<dyn std::error::Error>> {
    let corpus = Corpus::shakespeare(report::ch16::corpus_dir())?;
    let target = report::ch16::book_model()?;
    let start = Instant::now();
    let small = train_draft(&corpus, 1)?;
    eprintln!("draft trained in {:.1} s", start.elapsed().as_secs_f64());
    let prompts = prompts(&corpus, 8, 16);
    println!("draft\tk\tgreedy\tproposed\tkept\trounds\tseconds\talone");
    for sampler in [Sampler::new(0.0)?, Sampler::new(1.0)?] {
        for k in [1, 2, 4, 8] {
            let mut bigram = corpus.bigram();
            let mut one_layer = model_draft(&small)?;
            let rows = [
                speculate(&target, ("bigram", &mut bigram), (&prompts, 48), (&sampler, k))?,
                speculate(&target, ("one layer", &mut one_layer), (&prompts, 48), (&sampler, k))?,
            ];
            for r in rows {
                println!(
                    "{}\t{}\t{}\t{}\t{}\t{}\t{:.4}\t{:.4}",
                    r.draft, r.k, r.greedy, r.proposed, r.kept, r.rounds, r.seconds, r.alone
                );
            }
        }
    }
    Ok(())
}
