//! The checks chapter 19's example runs in seconds, on freshly initialised
//! models of chapter 17's variants: the paged cache against the
//! contiguous one, the blocks a shared prefix saves, a small server's
//! texts against each request's alone, and a worked example of
//! speculative sampling's rule.

use attn::lm::{
    acceptance, residual, Batching, Decoding, LanguageModel, Policy, Request, Sampler, Server,
    StepReport,
};

use crate::ch17::{variant, Attention};
use crate::error::ReportError;

/// The block size, tokens and prompts of the checks.
pub const CHECK_BLOCK: usize = 4;
/// Tokens the paged cache reads in its check.
pub const CHECK_TOKENS: usize = 40;
/// The shared prefix of the prefix check, and the prompts that share it.
pub const SHARED_PREFIX: usize = 14;
/// See [`SHARED_PREFIX`].
pub const SHARING_PROMPTS: usize = 4;
/// The first steps of the small server that the example prints (besides
/// those that admit or retire a request).
pub const TRACED: usize = 3;
/// The requests of the small server, its slots and its token budget.
pub const SERVED_REQUESTS: usize = 6;
/// See [`SERVED_REQUESTS`].
pub const SERVED_SLOTS: usize = 3;
/// See [`SERVED_REQUESTS`].
pub const SERVED_BUDGET: usize = 8;

/// A model of `attention`, freshly initialised with seed 1.
fn model(attention: Attention) -> Result<LanguageModel<f32>, ReportError> {
    Ok(LanguageModel::<f32>::new(variant(attention), 1)?)
}

/// The largest difference between the logits of `tokens` tokens read
/// through a paged cache of blocks of `block_size` and through the
/// contiguous cache, step by step.
pub fn paged_against_contiguous(
    attention: Attention,
    (tokens, block_size): (usize, usize),
) -> Result<f32, ReportError> {
    let model = model(attention)?;
    let mut kv = model.new_paged_cache(tokens.div_ceil(block_size), block_size)?;
    let (mut sequence, mut cache) = (kv.start(&[])?, model.new_cache());
    let mut worst = 0.0f32;
    for t in 0..tokens {
        let token = (t * 7 + 3) % model.config().vocab;
        let paged = model.step_paged(token, &mut sequence, &mut kv)?;
        let contiguous = model.step(token, &mut cache)?;
        worst = paged.iter().zip(&contiguous).fold(worst, |w, (a, b)| w.max((a - b).abs()));
    }
    Ok(worst)
}

/// `prompts` prompts that begin with the same `prefix` tokens, then differ.
pub fn sharing_prompts(prompts: usize, prefix: usize) -> Vec<Vec<usize>> {
    (0..prompts)
        .map(|i| (0..prefix).map(|t| (t * 5 + 1) % 84).chain([10 + i, 20 + i, 30]).collect())
        .collect()
}

/// The blocks each of `prompts` found in the prefix cache, read one after
/// the other (multi-head attention, blocks of `block_size`), and the
/// largest difference of their last logits from those read without
/// sharing.
pub fn prefix_hits(
    prompts: &[Vec<usize>],
    block_size: usize,
) -> Result<(Vec<usize>, f32), ReportError> {
    let model = model(Attention::KvHeads(4))?;
    let blocks = prompts.iter().map(|p| p.len().div_ceil(block_size)).sum();
    let mut shared = model.new_paged_cache(blocks, block_size)?;
    shared.share_prefixes();
    let (mut hits, mut worst) = (Vec::new(), 0.0f32);
    for prompt in prompts {
        let before = shared.prefixes().map_or(0, |p| p.hits());
        let mut sequence = shared.start(prompt)?;
        hits.push(shared.prefixes().map_or(0, |p| p.hits()) - before);
        let mut logits = Vec::new();
        for &token in &prompt[sequence.len()..] {
            logits = model.step_paged(token, &mut sequence, &mut shared)?.to_vec();
        }
        let mut cache = model.new_cache();
        let mut alone = Vec::new();
        for &token in prompt {
            alone = model.step(token, &mut cache)?.to_vec();
        }
        worst = logits.iter().zip(&alone).fold(worst, |w, (a, b)| w.max((a - b).abs()));
        shared.finish(sequence)?;
    }
    Ok((hits, worst))
}

/// A server of `requests` requests of varied lengths (greedy and sampled,
/// continuous batching, [`SERVED_SLOTS`] slots, a budget of
/// [`SERVED_BUDGET`] tokens a step): what each step did, and whether
/// every text is the one [`LanguageModel::generate`] writes for its
/// request alone.
pub fn served_against_alone(requests: usize) -> Result<(Vec<StepReport>, bool), ReportError> {
    let model = model(Attention::KvHeads(2))?;
    let kv = model.new_paged_cache(64, CHECK_BLOCK)?;
    let policy =
        Policy { batching: Batching::Continuous, slots: SERVED_SLOTS, token_budget: SERVED_BUDGET };
    let mut server = Server::new(&model, kv, policy)?;
    let mut submitted = Vec::new();
    for i in 0..requests {
        let prompt: Vec<usize> = (0..3 + 4 * i).map(|t| (t * 3 + i) % 84).collect();
        let sampler = if i % 2 == 0 { Sampler::new(0.0)? } else { Sampler::new(1.0)? };
        let request = Request { prompt, count: 12 - i, sampler, seed: i as u64 };
        server.submit(request.clone())?;
        submitted.push(request);
    }
    let reports = server.run()?;
    let mut equal = true;
    for served in server.served() {
        let r = &submitted[served.id];
        let alone = model.generate(&r.prompt, r.count, &r.sampler, r.seed, Decoding::Cached)?;
        equal &= served.text == alone;
    }
    Ok((reports, equal && server.served().len() == requests))
}

/// What a server's steps did, a line a step: who was admitted, how many
/// ran, how many tokens they read, who finished; the first `first` steps
/// and those that admitted or retired a request.
pub fn server_trace(reports: &[StepReport], first: usize) -> String {
    let mut out = String::from("step  admitted   running  tokens read  finished\n");
    let changed = |(i, r): &(usize, &StepReport)| {
        *i < first || !r.admitted.is_empty() || !r.finished.is_empty()
    };
    for (i, r) in reports.iter().enumerate().filter(changed) {
        out += &format!(
            "{:>4}  {:<9}  {:>7}  {:>11}  {:?}\n",
            i + 1,
            format!("{:?}", r.admitted),
            r.running,
            r.tokens,
            r.finished
        );
    }
    out.trim_end().to_string()
}

/// The worked example's target and draft over three tokens.
pub const WORKED: ([f64; 3], [f64; 3]) = ([0.5, 0.3, 0.2], [0.2, 0.6, 0.2]);

/// For each token of the worked example: the probability of keeping it
/// when the draft proposes it; and the residual distribution.
pub fn worked_example() -> Result<(Vec<f64>, Vec<f64>), ReportError> {
    let (p, q) = WORKED;
    let keep = (0..p.len()).map(|x| acceptance(&p, &q, x)).collect::<Result<Vec<_>, _>>()?;
    Ok((keep, residual(&p, &q)?))
}

/// Quiz 1: a block size, and a token of a sequence.
pub const QUIZ_TOKEN: (usize, usize) = (16, 40);
/// Quiz 3: the target's and the draft's probability of the token the
/// draft proposes.
pub const QUIZ_PROPOSED: (f64, f64) = (0.3, 0.6);

/// Quiz 1's answer: the place of the block (from 0) in the table that
/// holds the token, and the token's row in that block, from a table
/// that holds it.
pub fn quiz_block() -> Result<(usize, usize), ReportError> {
    let (block_size, token) = QUIZ_TOKEN;
    let mut pool = attn::paging::BlockPool::new(token / block_size + 1, block_size)?;
    let mut table = attn::paging::BlockTable::new(&pool);
    for _ in 0..=token {
        table.push(&mut pool)?;
    }
    let slot = table.slot(token)?;
    let place = table.blocks().iter().position(|&b| b == slot / block_size).expect("its block");
    Ok((place, slot % block_size))
}

/// Quiz 3's answer: the probability of keeping the proposed token.
pub fn quiz_kept() -> Result<f64, ReportError> {
    let (p, q) = QUIZ_PROPOSED;
    Ok(acceptance(&[p, 1.0 - p], &[q, 1.0 - q], 0)?)
}

/// The worked example of a block table: a block size, and a token of the
/// first of two sequences that add a token each in turn.
pub const WORKED_TABLE: (usize, usize) = (2, 3);

/// The worked example's first table, holding its token and a few more:
/// its blocks, and the slot of the token.
pub fn worked_table() -> Result<(Vec<usize>, usize), ReportError> {
    let (block_size, token) = WORKED_TABLE;
    let mut pool = attn::paging::BlockPool::new(6, block_size)?;
    let mut first = attn::paging::BlockTable::new(&pool);
    let mut second = attn::paging::BlockTable::new(&pool);
    for _ in 0..=token + 1 {
        first.push(&mut pool)?;
        second.push(&mut pool)?;
    }
    let slot = first.slot(token)?;
    Ok((first.blocks().to_vec(), slot))
}
