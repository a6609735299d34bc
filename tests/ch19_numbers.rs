//! Chapter 19 quotes the output of `cargo run --example ch19_serving`,
//! which runs its checks on freshly initialised models and reads what
//! `cargo xtask measure serving` measured (`book/data/ch19-*.tsv`); these
//! tests recompute that output and bind every number the chapter shows,
//! section by section.

use attn::lm::{LanguageModel, SHAKESPEARE_MODEL};
use attn::nn::Parameters;
use report::ch17::{variant, Attention, ATTENTIONS};
use report::ch19::checks::{
    prefix_hits, quiz_block, quiz_kept, served_against_alone, server_trace, sharing_prompts,
    worked_example, worked_table, CHECK_BLOCK, QUIZ_PROPOSED, QUIZ_TOKEN, SERVED_BUDGET,
    SERVED_REQUESTS, SERVED_SLOTS, SHARED_PREFIX, SHARING_PROMPTS, TRACED, WORKED, WORKED_TABLE,
};
use report::ch19::measure::{
    arrivals, BATCHES, BLOCK_SIZE, CONTEXTS, DRAFT_SEEDS, DRAFT_TRAINING, KS, PROMPTS, PROMPT_LEN,
    REQUESTS, SERVED_CONTEXT, SLOTS, TOKEN_BUDGET, WRITTEN,
};
use report::ch19::{
    batching, batching_table, decode_steps, decode_table, runs_of, speculative, speculative_table,
    spread, step, Batched, Decode, Speculative,
};
use report::numbers::{number_in_source, Bindings};

const CHAPTER: &str = "ch19-serving-attention.md";

#[test]
fn every_number_is_bound() {
    let mut b = Bindings::new(CHAPTER);
    pages(&mut b);
    prefixes(&mut b);
    many_requests(&mut b);
    decode(&mut b);
    batched(&mut b);
    guess(&mut b);
    speculated(&mut b);
    exercises(&mut b);
    quiz(&mut b);
    b.assert_all_bound();
}

fn pages(b: &mut Bindings) {
    b.section("A cache in pages");
    let (block_size, token) = WORKED_TABLE;
    let (blocks, slot) = worked_table().unwrap();
    b.exact("2", block_size as f64);
    b.exact("0", blocks[0] as f64).exact("2", blocks[1] as f64).exact("4", blocks[2] as f64);
    b.exact("3", token as f64).exact("1", (token % block_size) as f64);
    b.exact("2", blocks[token / block_size] as f64);
    b.exact("2", blocks[token / block_size] as f64).exact("2", block_size as f64);
    b.exact("1", (token % block_size) as f64).exact("5", slot as f64);
    let tests = "src/lm/paged/tests.rs";
    let test = "paged_logits_are_the_contiguous_caches_bit_for_bit";
    b.exact("7", number_in_source(tests, test, "random_range(1..="));
}

fn prefixes(b: &mut Bindings) {
    b.section("Sharing a prefix");
    let prompts = sharing_prompts(SHARING_PROMPTS, SHARED_PREFIX);
    let (hits, worst) = prefix_hits(&prompts, CHECK_BLOCK).unwrap();
    let full = SHARED_PREFIX / CHECK_BLOCK;
    assert_eq!(hits, [vec![0], vec![full; SHARING_PROMPTS - 1]].concat());

    b.exact("64", u64::BITS as f64);
    b.quoted(&format!(
        "== {SHARING_PROMPTS} prompts sharing their first {SHARED_PREFIX} tokens, blocks of \
         {CHECK_BLOCK} ==\nblocks found in the prefix cache, prompt by prompt: {hits:?}\nlargest \
         difference of the last logits from reading alone: {worst:.1e}"
    ));
    b.exact("3", full as f64).exact("14", SHARED_PREFIX as f64);
    b.exact("12", (full * CHECK_BLOCK) as f64);
    b.claim("with logits equal to those of reading alone", worst == 0.0);
}

fn many_requests(b: &mut Bindings) {
    b.section("Many requests at once");
    let (reports, equal) = served_against_alone(SERVED_REQUESTS).unwrap();
    assert!(equal);
    b.exact("8", SERVED_BUDGET as f64);
    b.quoted(&format!(
        "== A server of {SERVED_REQUESTS} requests, {SERVED_SLOTS} slots, {SERVED_BUDGET} tokens a \
         step ==\n{}\n{} steps; every text the one its request gets alone: {equal}",
        server_trace(&reports, TRACED),
        reports.len()
    ));
    let first = &reports[0];
    b.claim(
        "In step 1 the three first requests are admitted and read 8 tokens in\nall",
        first.admitted.len() == SERVED_SLOTS && first.tokens == SERVED_BUDGET,
    );
    b.exact("1", first.admitted.len().min(1) as f64);
    b.exact("8", first.tokens as f64);
}

fn decode(b: &mut Bindings) {
    b.section("Where a decode step's time goes");
    let (steps, triad, source) = decode_steps().unwrap();
    let [mha, gqa, mqa, latent] = ATTENTIONS;
    let weights = LanguageModel::<f32>::new(variant(mha), 1).unwrap().parameter_count() * 4;
    b.exact("16", BLOCK_SIZE as f64);
    b.exact("1", BATCHES[0] as f64).exact("64", BATCHES[BATCHES.len() - 1] as f64);
    b.exact("64", CONTEXTS[0] as f64).exact("2,048", CONTEXTS[CONTEXTS.len() - 1] as f64);
    b.exact("2,048", CONTEXTS[CONTEXTS.len() - 1] as f64);
    b.exact("64", variant(mha).context as f64);
    b.exact("9", number_in_source("examples/ch19_serving_data.rs", "REPEATS", "= "));
    b.rounded("3.2", weights as f64 / 1e6);
    b.from(&[&source]).quoted(&decode_table(&steps).unwrap());
    // Every row: the fewer key/value heads, the shorter the step.
    let ordered = BATCHES.iter().all(|&batch| {
        CONTEXTS.iter().all(|&context| {
            let t = |a| step(&steps, a, (batch, context)).unwrap().seconds;
            t(mha) > t(gqa) && t(gqa) > t(mqa)
        })
    });
    b.claim("in every row of the table, the\nfewer key/value heads, the shorter the step", ordered);
    let at = |a: Attention| step(&steps, a, (64, 2048)).unwrap();
    let (full, half, quarter, compressed) = (at(mha), at(gqa), at(mqa), at(latent));
    b.exact("64", full.batch as f64).exact("2,048", full.context as f64);
    let mut s = b.from(&[&source]);
    s.rounded("537", full.cache_bytes as f64 / 1e6).rounded("109", full.seconds * 1e3);
    s.claim("with half the bytes", half.cache_bytes * 2 == full.cache_bytes);
    s.rounded("0.65", half.seconds / full.seconds);
    s.claim("with a quarter", quarter.cache_bytes * 4 == full.cache_bytes);
    s.rounded("0.50", quarter.seconds / full.seconds);
    s.rounded("0.31", compressed.cache_bytes as f64 / full.cache_bytes as f64);
    s.rounded("0.53", compressed.seconds / full.seconds);
    s.claim(
        "but smaller than the bytes saved",
        [half, quarter, compressed]
            .iter()
            .all(|d| d.seconds / full.seconds > d.cache_bytes as f64 / full.cache_bytes as f64),
    );
    let fastest = steps.iter().filter(|d| d.paged).map(Decode::rate).fold(0.0, f64::max);
    s.rounded("16.9", triad)
        .rounded("5.0", fastest / 1e9)
        .rounded("29%", 100.0 * fastest / (triad * 1e9));
    s.claim("No step read its cache faster than 5.0 GB/s", fastest < 5.05e9);
    // Equal bytes, unequal steps.
    let (long, short) =
        (step(&steps, mqa, (64, 1024)).unwrap(), step(&steps, mha, (64, 256)).unwrap());
    assert_eq!(long.cache_bytes, short.cache_bytes);
    s.rounded("67.1", long.cache_bytes as f64 / 1e6);
    s.value("64", long.batch as f64, 0.0).value("1,024", long.context as f64, 0.0);
    s.rounded("1.23", long.seconds / short.seconds);
    s.value("64", short.batch as f64, 0.0).value("256", short.context as f64, 0.0);
    drop(s);
    let heads = variant(mqa).heads;
    b.exact("1,024", long.context as f64);
    b.claim("four times as many", long.context == heads * short.context);
}

fn batched(b: &mut Bindings) {
    b.section("Continuous and static batching, measured");
    let (runs, source) = batching().unwrap();
    let (measure, data) = ("report/src/ch19/measure.rs", "examples/ch19_serving_data.rs");
    b.exact("48", REQUESTS as f64);
    b.exact("8", number_in_source(measure, "workload", "prompt = (0..uniform("))
        .exact("128", number_in_source(measure, "workload", "prompt = (0..uniform(8, "))
        .exact("8", number_in_source(measure, "workload", "count: uniform("))
        .exact("256", number_in_source(measure, "workload", "count: uniform(8, "));
    b.exact("512", SERVED_CONTEXT as f64).exact("16", SLOTS as f64);
    b.exact("256", TOKEN_BUDGET as f64);
    b.exact("0.1", number_in_source(data, "batching", "every 0.1 s\", "));
    let p95 =
        number_in_source(data, "batching", "quantile(&s.latencies, 0.5), quantile(&s.latencies, ");
    b.rounded("95%", 100.0 * p95);
    b.from(&[&source]).quoted(&batching_table(&runs));
    let find = |arrivals: &str, round: usize, continuous: bool| -> &Batched {
        let same =
            |r: &&Batched| r.arrivals == arrivals && (r.round, r.continuous) == (round, continuous);
        runs.iter().find(same).unwrap()
    };
    let [c1, s1, c2, s2] = [(1, true), (1, false), (2, true), (2, false)]
        .map(|(round, continuous)| find("at once", round, continuous));
    let mut s = b.from(&[&source]);
    s.rounded("27%", 100.0 * (1.0 - c1.steps as f64 / s1.steps as f64));
    s.claim("but 7% and 13% more time", c1.seconds > s1.seconds && c2.seconds > s2.seconds);
    s.rounded("7%", 100.0 * (c1.seconds / s1.seconds - 1.0));
    s.rounded("13%", 100.0 * (c2.seconds / s2.seconds - 1.0));
    let own = [s2.seconds / s1.seconds - 1.0, c2.seconds / c1.seconds - 1.0];
    s.rounded("3%", 100.0 * own[0].abs()).rounded("3%", 100.0 * own[1].abs());
    s.claim("and its median latency was worse", c1.p50 > s1.p50 && c2.p50 > s2.p50);
    let rows = |r: &Batched| r.written; // the same tokens written, so the same rows read
    s.claim("Both policies read the same rows", runs.iter().all(|r| rows(r) == rows(c1)));
    drop(s);
    let (steps, _, decode_source) = decode_steps().unwrap();
    let at = |batch| step(&steps, Attention::KvHeads(4), (batch, CONTEXTS[0])).unwrap().seconds;
    let weights =
        LanguageModel::<f32>::new(variant(Attention::KvHeads(4)), 1).unwrap().parameter_count() * 4;
    b.rounded("3.2", weights as f64 / 1e6);
    b.exact("64", CONTEXTS[0] as f64);
    let mut s = b.from(&[&decode_source]);
    s.value("64", BATCHES[BATCHES.len() - 1] as f64, 0.0);
    s.rounded("29", at(BATCHES[BATCHES.len() - 1]) / at(BATCHES[0]));
    drop(s);
    let last = *arrivals(REQUESTS, 0.1).last().unwrap();
    let spaced = runs.iter().filter(|r| r.arrivals != "at once");
    let finished = spaced.map(|r| r.seconds).fold(0.0, f64::max);
    b.from(&[&source]).at_most("0.03", finished - last);
    b.rounded("5.73", last);
    let preallocated = SLOTS * SERVED_CONTEXT / BLOCK_SIZE;
    b.exact("16", SLOTS as f64).exact("512", SERVED_CONTEXT as f64);
    b.exact("512", preallocated as f64);
    let peak = |arrivals: &str| {
        let these = runs.iter().filter(|r| r.arrivals == arrivals && r.continuous);
        these.map(|r| r.peak_blocks).max().unwrap()
    };
    let mut s = b.from(&[&source]);
    s.rounded("191", peak("at once") as f64);
    s.rounded("37%", 100.0 * peak("at once") as f64 / preallocated as f64);
    s.rounded("70", peak("every 0.1 s") as f64);
}

fn guess(b: &mut Bindings) {
    b.section("Guess, then check");
    let (p, q) = WORKED;
    let (keep, r) = worked_example().unwrap();
    b.quoted(&format!(
        "== Speculative sampling on three tokens ==\ntarget p:         {p:?}\ndraft q:          \
         {q:?}\nkept if proposed: {keep:?}\nresidual:         {r:?}"
    ));
    b.claim("twice as often as the target would\nwrite it", q[1] == 2.0 * p[1]);
    b.claim("so it is kept half the time", keep[1] == 0.5);
    b.exact("84", SHAKESPEARE_MODEL.vocab as f64);
    b.value(
        "1e-14",
        number_in_source(
            "src/lm/speculative/tests.rs",
            "the_written_token_is_distributed_exactly_as_the_targets",
            "<= ",
        ),
        0.0,
    );
}

fn speculated(b: &mut Bindings) {
    b.section("Speculative decoding, measured");
    let (runs, source) = speculative().unwrap();

    b.exact("1,000", DRAFT_TRAINING.steps as f64);
    let [s1, s2, s3] = DRAFT_SEEDS.map(|s| s as f64);
    b.exact("1", s1).exact("2", s2).exact("3", s3);
    b.exact("48", WRITTEN as f64).exact("8", PROMPTS as f64).exact("16", PROMPT_LEN as f64);
    b.from(&[&source]).quoted(&speculative_table(&runs, true));
    let data = "examples/ch19_serving_data.rs";
    b.exact("1", number_in_source(data, "speculative", "Sampler::new(0.0)?, Sampler::new("));
    b.from(&[&source]).quoted(&speculative_table(&runs, false));
    let sampled = |k| runs_of(&runs, ("one layer", k, false));
    let (kept, lo, hi) = spread(&sampled(1), Speculative::acceptance);
    let mut s = b.from(&[&source]);
    s.claim("three times in four", (kept - 0.75).abs() < 0.02);
    s.value("1", KS[0] as f64, 0.0)
        .rounded("75%", 100.0 * kept)
        .rounded("73%", 100.0 * lo)
        .rounded("78%", 100.0 * hi);
    s.value("8", KS[KS.len() - 1] as f64, 0.0)
        .rounded("3.93", spread(&sampled(8), Speculative::per_pass).0);
    let greedy_kept =
        |draft, k| spread(&runs_of(&runs, (draft, k, true)), Speculative::acceptance).0;
    let (last, before) = KS.split_last().unwrap();
    s.value("4", before[before.len() - 1] as f64, 0.0).value("8", *last as f64, 0.0);
    s.claim(
        "kept fewer tokens than\nthe bigram up to $k = 4$ and barely more at $k = 8$",
        before.iter().all(|&k| greedy_kept("one layer", k) < greedy_kept("bigram", k))
            && greedy_kept("one layer", *last) > greedy_kept("bigram", *last)
            && greedy_kept("one layer", *last) - greedy_kept("bigram", *last) < 0.02,
    );
    let speeds: Vec<f64> = runs.iter().map(Speculative::speedup).collect();
    let (slowest, fastest) = (
        speeds.iter().copied().fold(f64::INFINITY, f64::min),
        speeds.iter().copied().fold(0.0, f64::max),
    );
    s.claim("every run was slower", fastest < 1.0);
    s.rounded("0.27", slowest).rounded("0.78", fastest);
    let alone: Vec<f64> = runs.iter().filter(|r| r.greedy).map(|r| r.alone).collect();
    let spread_alone = alone.iter().copied().fold(0.0, f64::max)
        / alone.iter().copied().fold(f64::INFINITY, f64::min);
    s.rounded("1.41", spread_alone);
    drop(s);
    b.claim("The share kept falls with $k$ by construction", {
        // Drafts after a rejection are proposed, never examined: kept / proposed
        // at k is at most the share of rounds that reach each draft.
        let kept_at = |k| spread(&runs_of(&runs, ("bigram", k, true)), Speculative::acceptance).0;
        KS.windows(2).all(|w| kept_at(w[1]) < kept_at(w[0]))
    });
    b.exact("1", KS[0] as f64);
    b.claim("one of its\ntarget's four blocks", report::ch19::measure::DRAFT_MODEL.layers == 1);
    b.claim(
        "Even the bigram, which costs nearly nothing, did\nnot pay",
        runs.iter().filter(|r| r.draft == "bigram").all(|r| r.speedup() < 1.0),
    );
}

fn exercises(b: &mut Bindings) {
    b.section("Exercises");
    let (runs, source) = speculative().unwrap();
    // Exercise 2's last case: the test's target and draft, and what is written.
    let (file, test) = ("src/exercises/ch19.rs", "the_emitted_distribution_is_the_targets");
    let (p0, p1) = (
        number_in_source(file, test, "let (p, q) = (["),
        number_in_source(file, test, "let (p, q) = ([0.5, "),
    );
    let (q0, q1) =
        (number_in_source(file, test, "], ["), number_in_source(file, test, "], [0.9, "));
    let written = attn::exercises::ch19::emitted(&[p0, p1], &[q0, q1]).unwrap();
    b.exact("0.5", p0).exact("0.5", p1).exact("0.9", q0).exact("0.1", q1);
    b.rounded("0.5", written[0]).rounded("0.5", written[1]);
    // Exercise 3.
    let sampled = |k| runs_of(&runs, ("one layer", k, false));
    let alpha = (spread(&sampled(1), Speculative::acceptance).0 * 100.0).round() / 100.0;
    let predict = |k: usize| (1.0 - alpha.powi(k as i32 + 1)) / (1.0 - alpha);
    let k = KS[2];
    let mut s = b.from(&[&source]);
    s.value("1", KS[0] as f64, 0.0).rounded("0.75", alpha).value("4", k as f64, 0.0);
    s.rounded("0.75", alpha).value("5", (k + 1) as f64, 0.0).rounded("0.75", alpha);
    s.rounded("3.05", predict(k));
    let (mean, lo, hi) = spread(&sampled(k), Speculative::per_pass);
    s.rounded("3.15", mean).rounded("3.07", lo).rounded("3.28", hi);
    s.claim("The run leans that way", mean > predict(k) && lo > predict(k));
}

fn quiz(b: &mut Bindings) {
    b.section("Quiz");
    let (block_size, token) = QUIZ_TOKEN;
    let (place, row) = quiz_block().unwrap();
    b.exact("16", block_size as f64).exact("40", token as f64);
    b.exact("40", token as f64).exact("16", block_size as f64).exact("2", place as f64);
    b.exact("40", token as f64).exact("16", block_size as f64).exact("8", row as f64);
    let (p, q) = QUIZ_PROPOSED;
    let kept = quiz_kept().unwrap();
    b.exact("0.6", q).exact("0.3", p);
    b.exact("0.3", p).exact("0.5", kept);
    b.exact("0.3", p).exact("0.6", q).exact("0.5", kept);
}
