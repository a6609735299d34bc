//! The measurements of chapter 19 (run by `examples/ch19_serving_data.rs`):
//! the paged cache's decode step, continuous batching and speculative
//! decoding.
//! Speed does not depend on the weights' values, so the decode and
//! batching measurements use freshly initialised models of chapter 17's
//! variants; speculative decoding's acceptance does, so it uses the
//! book's trained model and trained drafts.

use std::time::Instant;

use attn::lm::{
    Batching, Corpus, Decoding, LanguageModel, LmCache, LmConfig, LmTraining, ModelDraft, PagedKv,
    Policy, Request, Sampler, Sequence, Server, SHAKESPEARE_MODEL, SHAKESPEARE_TRAINING,
};

use super::{Decode, Speculative};
use crate::ch17::{variant, Attention};
use crate::error::ReportError;

/// The tokens a block holds in every measurement.
pub const BLOCK_SIZE: usize = 16;

/// The longest context measured: chapter 17's rotary variants read it as
/// they are (rotary positions have no table to outgrow).
pub const LONGEST: usize = 2048;

/// The batches and contexts of the decode measurement.
pub const BATCHES: [usize; 4] = [1, 4, 16, 64];
/// See [`BATCHES`].
pub const CONTEXTS: [usize; 4] = [64, 256, 1024, 2048];

/// A model of `attention` reading [`LONGEST`] tokens, freshly initialised.
pub fn decode_model(attention: Attention) -> Result<LanguageModel<f32>, ReportError> {
    let model = LanguageModel::<f32>::new(variant(attention), 1)?;
    Ok(model.with_context(LONGEST)?)
}

/// `count` sequences of `len` tokens each in `kv`, their keys and values
/// in blocks of their own: one read in chunks, the others copies of it.
pub fn fill(
    model: &LanguageModel<f32>,
    kv: &mut PagedKv,
    (count, len): (usize, usize),
) -> Result<Vec<Sequence>, ReportError> {
    let mut first = kv.start(&[])?;
    let vocab = model.config().vocab;
    let tokens: Vec<usize> = (0..len).map(|t| (t * 7 + 3) % vocab).collect();
    for chunk in tokens.chunks(256) {
        let reads: Vec<(usize, usize)> = chunk.iter().map(|&t| (0, t)).collect();
        model.read_paged(&reads, &mut [&mut first], kv)?;
    }
    let mut sequences = Vec::with_capacity(count);
    for _ in 1..count {
        sequences.push(kv.copy(&first)?);
    }
    sequences.push(first);
    Ok(sequences)
}

/// The decode step of every variant of `attentions` at every batch and
/// context of [`BATCHES`] and [`CONTEXTS`], best of `repeats`. At each
/// batch and context the variants take turns, a step each, so that a
/// machine that speeds up or slows down during the run does so for all
/// of them alike.
pub fn decode_steps(attentions: &[Attention], repeats: usize) -> Result<Vec<Decode>, ReportError> {
    let models =
        attentions.iter().map(|&a| decode_model(a)).collect::<Result<Vec<_>, ReportError>>()?;
    let mut rows = Vec::new();
    for context in CONTEXTS {
        for batch in BATCHES {
            let blocks = batch * context.div_ceil(BLOCK_SIZE);
            let mut caches = Vec::new();
            for model in &models {
                let mut kv = model.new_paged_cache(blocks, BLOCK_SIZE)?;
                let sequences = fill(model, &mut kv, (batch, context - 1))?;
                caches.push((kv, sequences));
            }
            let reads: Vec<(usize, usize)> = (0..batch).map(|i| (i, i % 84)).collect();
            let mut best = vec![f64::INFINITY; models.len()];
            for _ in 0..repeats {
                for (v, (model, (kv, sequences))) in models.iter().zip(&mut caches).enumerate() {
                    let mut refs: Vec<&mut Sequence> = sequences.iter_mut().collect();
                    let start = Instant::now();
                    model.read_paged(&reads, &mut refs, kv)?;
                    best[v] = best[v].min(start.elapsed().as_secs_f64());
                    for sequence in sequences.iter_mut() {
                        kv.truncate(sequence, context - 1)?;
                    }
                }
            }
            for ((&attention, model), seconds) in attentions.iter().zip(&models).zip(best) {
                let cache_bytes = batch * context * LmCache::bytes_per_token(model);
                rows.push(Decode { attention, paged: true, batch, context, seconds, cache_bytes });
            }
        }
    }
    Ok(rows)
}

/// The decode step of `attention` through the contiguous cache of
/// chapters 16 and 17, one sequence, at every context of [`CONTEXTS`]: the
/// best of `repeats` consecutive steps once `context − 1` tokens are held.
pub fn contiguous_steps(attention: Attention, repeats: usize) -> Result<Vec<Decode>, ReportError> {
    let model = decode_model(attention)?;
    let per_token = LmCache::bytes_per_token(&model);
    let vocab = model.config().vocab;
    let mut rows = Vec::new();
    for context in CONTEXTS {
        let mut cache = model.new_cache();
        for t in 0..context - 1 {
            model.step((t * 7 + 3) % vocab, &mut cache)?;
        }
        let mut best = f64::INFINITY;
        for _ in 0..repeats {
            let start = Instant::now();
            model.step(1, &mut cache)?;
            best = best.min(start.elapsed().as_secs_f64());
        }
        let cache_bytes = context * per_token;
        let (paged, batch, seconds) = (false, 1, best);
        rows.push(Decode { attention, paged, batch, context, seconds, cache_bytes });
    }
    Ok(rows)
}

/// The requests of the batching measurement's workload.
pub const REQUESTS: usize = 48;

/// The workload of the batching measurement: `count` requests of varied
/// lengths (prompts of 8 to 128 tokens, 8 to 256 to write), greedy.
pub fn workload(count: usize) -> Result<Vec<Request>, ReportError> {
    let mut rng = attn::lm::SplitMix64::new(51);
    let mut uniform = |lo: usize, hi: usize| lo + (rng.next_u64() % (hi - lo + 1) as u64) as usize;
    let greedy = Sampler::new(0.0)?;
    let requests = (0..count)
        .map(|i| {
            let prompt = (0..uniform(8, 128)).map(|t| (t * 5 + i) % 84).collect();
            Request { prompt, count: uniform(8, 256), sampler: greedy, seed: i as u64 }
        })
        .collect();
    Ok(requests)
}

/// How a batching policy served the workload.
#[derive(Debug, Clone, PartialEq)]
pub struct Served {
    /// Continuous or static.
    pub batching: Batching,
    /// Steps taken.
    pub steps: usize,
    /// Wall time of the whole workload, in seconds.
    pub seconds: f64,
    /// Tokens written.
    pub written: usize,
    /// Seconds from each request's arrival to its last token.
    pub latencies: Vec<f64>,
    /// The most blocks in use at once.
    pub peak_blocks: usize,
}

/// The slots and token budget of the batching measurement.
pub const SLOTS: usize = 16;
/// See [`SLOTS`].
pub const TOKEN_BUDGET: usize = 256;
/// The context of the batching measurement's model.
pub const SERVED_CONTEXT: usize = 512;

/// Arrival times for `count` requests, in seconds from the start: gaps
/// drawn from an exponential distribution of mean `gap` (a Poisson
/// process), the first at 0.
pub fn arrivals(count: usize, gap: f64) -> Vec<f64> {
    let mut rng = attn::lm::SplitMix64::new(52);
    let mut t = 0.0;
    (0..count)
        .map(|i| {
            if i > 0 {
                let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64; // [0, 1)
                t += -(1.0 - u).ln() * gap;
            }
            t
        })
        .collect()
}

/// Serves `requests`, the `i`-th arriving at `arrived[i]` seconds, with
/// `batching` on chapter 17's multi-head variant reading
/// [`SERVED_CONTEXT`] tokens, through a pool as large as the slots' whole
/// contexts. Time is the sum of the steps' measured durations; when
/// nothing runs, it jumps to the next arrival. Latencies are from each
/// request's arrival to its last token.
pub fn serve(
    requests: &[Request],
    arrived: &[f64],
    batching: Batching,
) -> Result<Served, ReportError> {
    let model = LanguageModel::<f32>::new(variant(Attention::KvHeads(4)), 1)?
        .with_context(SERVED_CONTEXT)?;
    let kv = model.new_paged_cache(SLOTS * SERVED_CONTEXT / BLOCK_SIZE, BLOCK_SIZE)?;
    let policy = Policy { batching, slots: SLOTS, token_budget: TOKEN_BUDGET };
    let mut server = Server::new(&model, kv, policy)?;
    let (mut clock, mut next, mut latencies) = (0.0, 0, vec![0.0; requests.len()]);
    let (mut peak_blocks, mut steps) = (0, 0);
    while next < requests.len() || !server.is_idle() {
        if server.is_idle() {
            clock = f64::max(clock, arrived[next]); // nothing to do until then
        }
        while next < requests.len() && arrived[next] <= clock {
            server.submit(requests[next].clone())?; // ids in the order of arrival
            next += 1;
        }
        let start = Instant::now();
        let report = server.step()?;
        clock += start.elapsed().as_secs_f64();
        for id in report.finished {
            latencies[id] = clock - arrived[id];
        }
        let pool = server.cache().pool();
        peak_blocks = peak_blocks.max(pool.blocks() - pool.free_blocks());
        steps += 1;
    }
    let written = requests.iter().map(|r| r.count).sum();
    Ok(Served { batching, steps, seconds: clock, written, latencies, peak_blocks })
}

/// The `q`-quantile of `values` (nearest rank).
pub fn quantile(values: &[f64], q: f64) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// The one-layer draft's configuration and recipe: the book's model with
/// one block, trained for 1,000 steps.
pub const DRAFT_MODEL: LmConfig = LmConfig { layers: 1, ..SHAKESPEARE_MODEL };
/// See [`DRAFT_MODEL`].
pub const DRAFT_TRAINING: LmTraining =
    LmTraining { steps: 1000, log_every: 1000, ..SHAKESPEARE_TRAINING };

/// The one-layer draft, trained on the corpus with `seed`.
pub fn train_draft(corpus: &Corpus, seed: u64) -> Result<LanguageModel<f32>, ReportError> {
    let mut model = LanguageModel::<f32>::new(DRAFT_MODEL, seed)?;
    let recipe = LmTraining { seed, ..DRAFT_TRAINING };
    attn::lm::train_lm(&mut model, corpus.train(), corpus.validation(), &recipe, |_, _| {})?;
    Ok(model)
}

/// The seeds of the one-layer drafts.
pub const DRAFT_SEEDS: [u64; 3] = [1, 2, 3];
/// The draft tokens a round proposes, in turn.
pub const KS: [usize; 4] = [1, 2, 4, 8];
/// The prompts of the speculative measurement, and their length.
pub const PROMPTS: usize = 8;
/// See [`PROMPTS`].
pub const PROMPT_LEN: usize = 16;
/// The tokens written after each prompt.
pub const WRITTEN: usize = 48;

/// The prompts of the speculative measurement: `count` windows of
/// `len` characters of the validation split, evenly spaced.
pub fn prompts(corpus: &Corpus, count: usize, len: usize) -> Vec<Vec<usize>> {
    let text = corpus.validation();
    let step = (text.len() - len) / count;
    (0..count)
        .map(|i| text[i * step..i * step + len].iter().map(|&c| usize::from(c)).collect())
        .collect()
}

/// Writes `count` tokens after each prompt with `draft` proposing `k` at
/// a time, and alone; greedy texts are checked equal. `seed` names the
/// draft's training run (0 for none).
pub fn speculate(
    target: &LanguageModel<f32>,
    (name, seed, draft): (&str, u64, &mut impl attn::lm::Draft),
    (prompts, count): (&[Vec<usize>], usize),
    (sampler, k): (&Sampler, usize),
) -> Result<Speculative, ReportError> {
    let greedy = *sampler == Sampler::new(0.0)?;
    let mut row = Speculative {
        draft: name.to_string(),
        seed,
        k,
        greedy,
        proposed: 0,
        kept: 0,
        rounds: 0,
        seconds: 0.0,
        alone: 0.0,
    };
    for (i, prompt) in prompts.iter().enumerate() {
        let start = Instant::now();
        let (text, stats) =
            target.generate_speculative((prompt, count), (sampler, i as u64), draft, k)?;
        row.seconds += start.elapsed().as_secs_f64();
        let start = Instant::now();
        let alone = target.generate(prompt, count, sampler, i as u64, Decoding::Cached)?;
        row.alone += start.elapsed().as_secs_f64();
        if greedy && text != alone {
            return Err(attn::AttnError::Mismatched {
                name: "greedy speculative decoding's text",
                requirement: "must be the target's own",
            }
            .into());
        }
        (row.proposed, row.kept, row.rounds) =
            (row.proposed + stats.proposed, row.kept + stats.kept, row.rounds + stats.rounds);
    }
    Ok(row)
}

/// A draft model reading through its own cache.
pub fn model_draft(model: &LanguageModel<f32>) -> Result<ModelDraft<'_>, ReportError> {
    Ok(ModelDraft::new(model)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quantile_is_the_nearest_rank() {
        let values = [5.0, 1.0, 4.0, 2.0, 3.0];
        assert_eq!([0.5, 0.95, 0.2, 0.0].map(|q| quantile(&values, q)), [3.0, 5.0, 1.0, 1.0]);
    }

    #[test]
    fn arrivals_start_at_zero_and_rise_by_the_mean_gap() {
        assert_eq!(arrivals(4, 0.0), [0.0; 4]);
        let a = arrivals(2001, 0.1);
        assert!(a[0] == 0.0 && a.windows(2).all(|w| w[1] >= w[0]));
        let mean = a[2000] / 2000.0;
        assert!((mean - 0.1).abs() < 0.01, "{mean}");
    }

    #[test]
    fn a_fill_gives_every_sequence_blocks_of_its_own() {
        let model = LanguageModel::<f32>::new(
            LmConfig { positions: attn::lm::Positions::Rotary, context: 40, ..DRAFT_MODEL },
            1,
        )
        .unwrap();
        let mut kv = model.new_paged_cache(12, 4).unwrap();
        let sequences = fill(&model, &mut kv, (3, 13)).unwrap();
        let mut blocks: Vec<usize> =
            sequences.iter().flat_map(|s| s.table().blocks().to_vec()).collect();
        blocks.sort_unstable();
        blocks.dedup();
        assert_eq!((blocks.len(), sequences[0].len()), (12, 13));
        assert!(sequences.iter().all(|s| s.tokens() == sequences[2].tokens()));
    }
}
