//! Chapter 16 quotes the output of `cargo run --example ch16_language_model`,
//! which reads the committed weights and logs (`cargo xtask train lm`, `cargo
//! xtask measure lm`); these tests recompute that output from the same files
//! and bind every number the chapter shows, section by section, each place
//! once. The corpus's own numbers are checked on the corpus in
//! `tests/language_model.rs`.

use attn::exercises::ch16::repetition_penalty;
use attn::experiments::roofline::{LANES_256, LANES_512};
use attn::lm::{
    Corpus, LanguageModel, LmCache, LmConfig, Sampler, SHAKESPEARE_CHARS, SHAKESPEARE_FILES,
    SHAKESPEARE_MODEL, SHAKESPEARE_TRAINING, SHAKESPEARE_VOCAB,
};
use attn::nn::{Activation, Parameters};
use report::ch16::{
    book_model, final_losses, head_log, samples, training_log, HeadLine, LogLine, PROMPT,
    SAMPLE_LENGTH, SAMPLE_SEED, SAMPLE_SETTINGS, VOCAB,
};
use report::ch16_report::{
    cache_check, cache_report, cache_speeds, loss_table, penalty_report, pytorch_log, speed_report,
    training_speeds, TrainingSpeeds, PENALTY, REPORT_STEPS, SLIDING_TEMPERATURE,
};
use report::numbers::{captured, repository_file, Bindings, Evidence};
use report::provenance::Provenance;

#[path = "ch16_numbers/induction.rs"]
mod induction;
use induction::induction;

const CHAPTER: &str = "ch16-a-language-model-that-writes.md";

fn min(v: &[f64]) -> f64 {
    v.iter().cloned().fold(f64::INFINITY, f64::min)
}

fn max(v: &[f64]) -> f64 {
    v.iter().cloned().fold(f64::NEG_INFINITY, f64::max)
}

/// Bits of a vector of `lanes` `f32`.
fn bits(lanes: usize) -> f64 {
    (lanes * 8 * std::mem::size_of::<f32>()) as f64
}

/// What the chapter's sections read.
pub(crate) struct Data {
    model: LanguageModel<f32>,
    c: LmConfig,
    log: Vec<LogLine>,
    finals: Vec<(u64, f64)>,
    bigram: f64,
    heads: Vec<HeadLine>,
    speeds: TrainingSpeeds,
    torch_validation: f64,
}

impl Data {
    fn at(&self, seed: u64, step: usize) -> &LogLine {
        self.log.iter().find(|l| l.seed == seed && l.step == step).unwrap()
    }

    fn finals(&self) -> Vec<f64> {
        self.finals.iter().map(|f| f.1).collect()
    }

    /// The validation losses (240 windows) of every seed at `step`.
    fn validation_at(&self, step: usize) -> Vec<f64> {
        self.log.iter().filter(|l| l.step == step).map(|l| l.validation_loss).collect()
    }
}

#[test]
fn every_number_is_bound() {
    let model = book_model().unwrap();
    let c: LmConfig = model.config();
    assert_eq!(c, SHAKESPEARE_MODEL);
    let (finals, bigram) = final_losses().unwrap();
    let runs = finals.len() as f64;
    let speeds = training_speeds().unwrap();
    let torch_validation = pytorch_log().unwrap().last().unwrap().2;
    let d = Data {
        model,
        c,
        log: training_log().unwrap(),
        finals,
        bigram,
        heads: head_log().unwrap(),
        speeds,
        torch_validation,
    };
    let mut b = Bindings::new(CHAPTER);
    // "three models", "three seeds", "three runs": the runs the log holds,
    // in every section that counts them.
    for section in [
        "Training",
        "The same model in PyTorch",
        "Looking for induction heads",
        "Exercises",
        "Quiz",
    ] {
        b.section(section).exact("three", runs);
    }
    b.section("");
    introduction(&mut b);
    the_corpus(&mut b, &d);
    the_model(&mut b, &d);
    training(&mut b, &d);
    in_pytorch(&mut b, &d);
    writing(&mut b, &d);
    the_cache(&mut b, &d);
    induction(&mut b, &d);
    exercises(&mut b, &d);
    quiz(&mut b, &d);
    b.assert_all_bound();
}

fn introduction(b: &mut Bindings) {
    b.section("A language model that writes");
    b.exact("0.6", captured("xtask/src/corpus.rs", r#"spec: "shakespeare==([0-9.]+)""#)[0]);
}

fn the_corpus(b: &mut Bindings, d: &Data) {
    b.section("The corpus");
    // The split, as the crate makes it of any text.
    let text = vec![b'a'; 1000];
    let corpus = Corpus::from_text(&text).unwrap();
    let share = |part: usize| 100.0 * part as f64 / corpus.len() as f64;
    b.exact("42", SHAKESPEARE_FILES as f64)
        .exact("5,057,198", SHAKESPEARE_CHARS as f64)
        .exact("84", SHAKESPEARE_VOCAB as f64);
    assert_eq!(VOCAB.as_bytes()[0], b'\n', "token 0 is the line break");
    assert_eq!(VOCAB.as_bytes()[83], b'}');
    b.exact("83", (VOCAB.len() - 1) as f64)
        .exact("90%", share(corpus.train().len()))
        .exact("10%", share(corpus.validation().len()));
    b.exact("84", d.c.vocab as f64).exact("84", d.c.vocab as f64);
    b.rounded("4.43", (d.c.vocab as f64).ln());
    b.rounded("2.54", d.bigram).rounded("2.54", d.bigram);
}

fn the_model(b: &mut Bindings, d: &Data) {
    b.section("The model");
    let c = d.c;
    // "Its GELU is the exact one": the config's, not chapter 12's.
    assert_eq!(c.activation, Activation::GeluErf);
    let tiny = attn::model::ModelConfig { k: 2, d_model: 8, heads: 2, d_ff: 12, layers: 2 };
    let chapter_12: attn::decoder::DecoderConfig = tiny.into();
    assert_eq!(chapter_12.activation, Activation::Gelu, "chapter 12's tanh approximation");
    b.exact("0.02", attn::decoder::GPT2_STD);
    // W_O and W_2 drawn √(2·layers) times smaller: measured on a fresh model.
    let fresh = LanguageModel::<f32>::new(SHAKESPEARE_MODEL, 1).unwrap();
    let std_of = |name: &str| {
        let (_, w) = fresh.named_slices().into_iter().find(|(n, _)| n == name).unwrap();
        (w.iter().map(|&x| f64::from(x).powi(2)).sum::<f64>() / w.len() as f64).sqrt()
    };
    let smaller = (2.0 * c.layers as f64).sqrt();
    b.claim(
        "$\\sqrt{2 \\cdot \\text{layers}}$ times smaller",
        ["blocks.0.w_o", "blocks.0.w2"]
            .iter()
            .all(|m| (std_of("blocks.0.w_q") / std_of(m) / smaller - 1.0).abs() < 0.05)
            && (std_of("blocks.0.w_q") / attn::decoder::GPT2_STD - 1.0).abs() < 0.05,
    );
    b.exact("806,528", d.model.parameter_count() as f64);
    // (84 + 64)·128 for the embeddings, 2·128 + 4·128² + 2·128·512 for each
    // of the 4 blocks, and 128.
    let formula = (c.vocab + c.context) * c.d_model
        + c.layers * (2 * c.d_model + 4 * c.d_model * c.d_model + 2 * c.d_model * c.d_ff)
        + c.d_model;
    assert_eq!(formula, d.model.parameter_count());
    b.exact("84", c.vocab as f64)
        .exact("64", c.context as f64)
        .exact("128", c.d_model as f64)
        .exact("128", c.d_model as f64);
    // The four projections: W_Q, W_K, W_V, W_O.
    let projections =
        d.model.named_slices().iter().filter(|(n, _)| n.starts_with("blocks.0.w_")).count();
    b.exact("4", projections as f64)
        .exact("128", c.d_model as f64)
        .exact("128", c.d_model as f64)
        .exact("128", c.d_model as f64)
        .exact("512", c.d_ff as f64)
        .exact("4", c.layers as f64)
        .exact("128", c.d_model as f64);
}

fn training(b: &mut Bindings, d: &Data) {
    b.section("Training");
    let (c, recipe) = (d.c, SHAKESPEARE_TRAINING);
    b.exact("12", recipe.batch as f64)
        .exact("65", (c.context + 1) as f64)
        .exact("64", c.context as f64)
        .exact("64", c.context as f64);
    b.exact("0.1", recipe.weight_decay)
        .exact("1e-3", recipe.lr)
        .exact("100", recipe.warmup as f64)
        .exact("1e-4", recipe.min_lr);
    b.claim(
        "each step shrinks\nevery matrix",
        recipe.weight_decay > 0.0 && d.model.matrices().iter().filter(|&&m| m).count() == 26,
    );
    let lr = |step| attn::nn::warmup_cosine_to(step, recipe.steps, recipe.warmup, 0.1).unwrap();
    b.claim(
        "The learning rate rises linearly",
        (0..recipe.warmup - 1).all(|t| lr(t + 1) > lr(t)) && lr(recipe.warmup - 1) == 1.0,
    );
    assert_eq!(recipe.clip, 1.0, "clipped when their norm exceeds 1");
    let seeds: Vec<u64> = d.finals.iter().map(|f| f.0).collect();
    assert_eq!(seeds, [1, 2, 3], "\"with seeds 1, 2 and 3\"");
    let weights = std::fs::metadata(report::root().join("book/data/ch16-weights.safetensors"));
    b.exact("3", seeds[2] as f64).rounded("3.2", weights.unwrap().len() as f64 / 1e6);
    b.exact("100", recipe.log_every as f64).exact("240", recipe.log_windows as f64);
    let mut block = loss_table(&d.log, &REPORT_STEPS);
    for (seed, loss) in &d.finals {
        block +=
            &format!("\nseed {seed}: validation loss over the whole validation split {loss:.4}");
    }
    block += &format!("\ncharacter bigram model: {:.4}", d.bigram);
    block += &format!(
        "\nuniform guess over {} characters: ln {} = {:.4}",
        c.vocab,
        c.vocab,
        (c.vocab as f64).ln()
    );
    b.quoted(&block);

    // Figure 16.1's alt text.
    let steps: Vec<usize> = d.log.iter().map(|l| l.step).collect();
    let (first, last) = (*steps.iter().min().unwrap(), *steps.iter().max().unwrap());
    b.exact("100", first as f64).exact("2000", last as f64);
    for seed in [1, 2, 3] {
        assert!((d.at(seed, first).validation_loss - 2.7).abs() < 0.05, "start near 2.7");
        assert!((d.at(seed, last).validation_loss - 1.9).abs() < 0.05, "fall to about 1.9");
    }
    b.rounded("2.7", d.at(1, first).validation_loss).rounded("2.54", d.bigram);
    let crossing = |step: usize, above: bool| {
        d.log.iter().filter(|l| l.step == step).all(|l| (l.validation_loss > d.bigram) == above)
    };
    // The first logged step at which every run is below the bigram model,
    // and the one before it.
    let below = *steps.iter().filter(|&&s| crossing(s, false)).min().unwrap();
    let before = steps.iter().filter(|&&s| s < below).max().copied().unwrap();
    b.exact("200", before as f64).exact("300", below as f64);
    b.claim("between steps 200 and 300", crossing(before, true) && crossing(below, false));
    b.rounded("1.9", d.at(1, last).validation_loss)
        .rounded("2.54", d.bigram)
        .rounded("4.43", (c.vocab as f64).ln());
    b.claim(
        "By step 300 every run is below the bigram\nmodel",
        d.log.iter().filter(|l| l.step >= 300).all(|l| l.validation_loss < d.bigram),
    );
    // Its caption.
    let at_last = d.validation_at(last);
    b.exact("240", recipe.log_windows as f64).exact("100", recipe.log_every as f64);
    b.rounded("1.90", min(&at_last)).rounded("1.91", max(&at_last));
    let losses = d.finals();
    b.rounded("1.88", min(&losses)).rounded("1.89", max(&losses));
    // The paragraph.
    b.rounded("1.88", min(&losses))
        .rounded("1.89", max(&losses))
        .rounded("0.011", max(&losses) - min(&losses));
    b.learned(
        "what the\nrecipe gives, not what one seed gave",
        Evidence::Runs { values: &losses, lowest: "1.88", highest: "1.89" },
    );
    let gap_from = |from: usize| {
        d.log
            .iter()
            .filter(|l| l.step >= from)
            .map(|l| (l.validation_loss - l.train_loss).abs())
            .fold(0.0, f64::max)
    };
    // "From step 200 on": from there, not from the first logged step.
    assert!(gap_from(first) > 0.04 && gap_from(200) <= 0.04);
    b.at_most("0.04", gap_from(200));
    b.claim("loss stays within 0.04 of the training loss", gap_from(200) <= 0.04);
    let seen = recipe.steps * recipe.batch * c.context;
    b.exact("2,000", recipe.steps as f64)
        .exact("768", (recipe.batch * c.context) as f64)
        .rounded("1.5", seen as f64 / 1e6);
    let train_split = SHAKESPEARE_CHARS * 9 / 10; // ⌊0.9 · length⌋, as the corpus splits
    assert_eq!(
        train_split,
        Corpus::from_text(&vec![b'a'; SHAKESPEARE_CHARS]).unwrap().train().len()
    );
    b.claim(
        "a third of the training split",
        (seen as f64 / train_split as f64 - 1.0 / 3.0).abs() < 0.02,
    );
}

fn in_pytorch(b: &mut Bindings, d: &Data) {
    b.section("The same model in PyTorch");
    b.value(
        "1e-5",
        captured("tests/language_model.rs", r"const TOLERANCE: f32 = ([0-9.e-]+);")[0],
        0.0,
    );
    // "on an Intel Xeon processor"; the appendix's, "an AMD EPYC processor".
    assert!(d.speeds.source.cpu.contains("Intel") && d.speeds.source.cpu.contains("Xeon"));
    b.from(&[&d.speeds.source]).quoted(&speed_report(&d.speeds, d.torch_validation));
    let at_last = d.validation_at(SHAKESPEARE_TRAINING.steps);
    b.exact("2,000", SHAKESPEARE_TRAINING.steps as f64)
        .rounded("1.909", d.torch_validation)
        .exact("240", SHAKESPEARE_TRAINING.log_windows as f64)
        .rounded("1.898", min(&at_last))
        .rounded("1.914", max(&at_last))
        .rounded("1.910", d.at(1, SHAKESPEARE_TRAINING.steps).validation_loss);
    assert_eq!(at_last.len(), 3, "the crate's three seeds");
    b.claim(
        "PyTorch's one run lands inside the crate's spread over seeds",
        (min(&at_last)..=max(&at_last)).contains(&d.torch_validation),
    );
    let rows = &d.speeds.rows;
    b.from(&[&d.speeds.source])
        .rounded("0.54", rows[0].1 / rows[0].2)
        .rounded("0.40", rows[1].1 / rows[1].2);
    b.claim(
        "The crate is the slower of the two",
        rows.iter().all(|&(_, ours, theirs)| ours < theirs),
    );
    let gain = |i: usize| [rows[1].1 / rows[0].1, rows[1].2 / rows[0].2][i];
    b.claim(
        "a second thread helps the crate less than it helps\nPyTorch",
        rows.len() == 2 && gain(0) > 1.0 && gain(0) < gain(1),
    );
    let recipe = SHAKESPEARE_TRAINING;
    b.exact("768", (recipe.batch * d.c.context) as f64)
        .exact("128", d.c.d_model as f64)
        .exact("512", d.c.d_ff as f64);
    // AVX-512, twice as wide as AVX2.
    assert_eq!(bits(LANES_512), 2.0 * bits(LANES_256));
    b.exact("512", bits(LANES_512)).exact("512", bits(LANES_512)).exact("512", bits(LANES_512));
    // gemm's AVX-512 kernels are behind its `nightly` feature, which the
    // crate leaves off.
    let manifest = repository_file("Cargo.toml");
    let gemm = manifest.lines().find(|l| l.starts_with("gemm")).unwrap();
    assert!(!gemm.contains("nightly"), "the crate turns gemm's nightly feature on: {gemm}");
    let appendix = Provenance::read("appendix-lm-training.tsv").unwrap().0;
    assert!(appendix.cpu.contains("AMD EPYC"), "the appendix's machine: {}", appendix.cpu);
}

fn writing(b: &mut Bindings, d: &Data) {
    b.section("Writing");
    b.exact("60,000", captured("src/lm/sample.rs", r"let draws = ([0-9_]+);")[0]);
    let samples = samples(&d.model).unwrap();
    let mut block = String::new();
    for (label, text) in &samples {
        block += &format!("-- {label} --\n{text}\n\n");
    }
    assert_eq!(PROMPT, "Romeo.\n");
    b.exact("200", SAMPLE_LENGTH as f64);
    assert_eq!(SAMPLE_SEED, 1, "the random source is seeded with 1");
    b.quoted(block.trim_end());
    let [_, (t08, _), (t10, _), (_, top_p)] = SAMPLE_SETTINGS;
    b.exact("0.8", t08).exact("1.0", t10).exact("1.0", t10).exact("0.9", top_p.unwrap());
    let greedy = &samples[0].1;
    b.claim(
        "Greedy decoding falls into loops",
        greedy.contains("the stand the stand") && greedy.matches("the heave").count() >= 5,
    );
    b.claim(
        "which it leaves only to fall back into",
        greedy.contains("the heart a the heart") && greedy.ends_with("the heave the h"),
    );
    let t08 = &samples[1].1;
    b.claim(
        "real words (\"which\", \"serve\", \"kill\"; at 1.0,\n\"love\")",
        ["which", "serve", "kill"].iter().all(|w| t08.contains(w)) && samples[2].1.contains("love"),
    );
    b.exact("2,000", SHAKESPEARE_TRAINING.steps as f64);
}

fn the_cache(b: &mut Bindings, d: &Data) {
    b.section("The KV cache in every block");
    let c = d.c;
    b.quoted(&cache_check(&d.model).unwrap());
    b.exact("4,096", LmCache::bytes_per_token(&d.model) as f64);
    // Checked against the allocator by tests/lm_cache_memory.rs.
    b.exact("262,144", (c.context * LmCache::bytes_per_token(&d.model)) as f64);
    let (cache_rows, cache_source) = cache_speeds().unwrap();
    b.from(&[&cache_source]).quoted(&cache_report(&cache_rows));
    b.from(&[&cache_source]).quoted(&report::ch16_report::call_cost_report(&cache_rows));
    let speedup: Vec<f64> = cache_rows.iter().map(|r| r.recomputed / r.cached).collect();
    let (first, last) = (cache_rows[0].length, cache_rows[cache_rows.len() - 1].length);
    b.claim(
        "The speed-up grows with the length of the text",
        speedup.windows(2).all(|w| w[1] > w[0]),
    );
    b.claim(
        "but more slowly than the length",
        speedup[speedup.len() - 1] / speedup[0] < (last / first) as f64,
    );
    b.from(&[&cache_source]).rounded("8.6", speedup[0]);
    b.exact("8", first as f64);
    b.from(&[&cache_source]).rounded("16.7", speedup[speedup.len() - 1]);
    b.exact("64", last as f64);
    // Counting characters: L(L − 1)/2 characters recomputed against L − 1
    // cached, a ratio of L/2; attention's 4td against the projections' 8d²
    // is t/2d, at most 0.25 at t = 64.
    let by_count = |l: usize| ((l * (l - 1) / 2) as f64) / (l - 1) as f64;
    b.exact("0.25", c.context as f64 / (2 * c.d_model) as f64)
        .exact("4", by_count(first))
        .exact("32", by_count(last));
    b.claim(
        "The measured speed-ups lie above the first and below the second",
        speedup[0] > by_count(first) && speedup[speedup.len() - 1] < by_count(last),
    );
    let fastest = |f: fn(&report::ch16_report::CacheSpeed) -> f64| {
        cache_rows.iter().map(f).fold(f64::INFINITY, f64::min)
    };
    let (forward_one, step_one) = (fastest(|r| r.forward_one), fastest(|r| r.step_one));
    let longest = &cache_rows[cache_rows.len() - 1];
    b.from(&[&cache_source])
        .value("1", forward_one * 1e3, 0.25)
        .rounded("7.4", forward_one / step_one);
    b.claim(
        "characters it takes less than half of a cached step",
        longest.forward / (longest.length as f64) < 0.5 * step_one,
    );
    b.claim(
        "a longer forward pass is cheaper",
        cache_rows
            .windows(2)
            .all(|w| w[1].forward / (w[1].length as f64) < w[0].forward / (w[0].length as f64)),
    );
    b.exact("806,528", d.model.parameter_count() as f64);
    b.exact("63", (c.context - 1) as f64)
        .exact("64", c.context as f64)
        .exact("64", c.context as f64)
        .exact("63", (c.context - 1) as f64)
        .exact("64", c.context as f64)
        .exact("64", c.context as f64);

    // The model with rotary positions (one run).
    let rotary = report::ch16::rotary_model().unwrap();
    assert_eq!(rotary.config().positions, attn::lm::Positions::Rotary);
    b.exact("798,336", rotary.parameter_count() as f64)
        .exact("8,192", (d.model.parameter_count() - rotary.parameter_count()) as f64);
    let (rotary_seed, rotary_loss) = report::ch16::rotary_final_losses().unwrap()[0];
    assert_eq!(rotary_seed, 1);
    let learned_loss = d.finals.iter().find(|f| f.0 == 1).unwrap().1;
    b.exact("2,000", SHAKESPEARE_TRAINING.steps as f64)
        .rounded("1.798", rotary_loss)
        .rounded("1.886", learned_loss)
        .rounded("0.088", learned_loss - rotary_loss);
    b.claim("lower by 0.088 in this run", rotary_loss < learned_loss);
    b.exact("0.8", SLIDING_TEMPERATURE).exact("64", c.context as f64);
    let (text, check) = report::ch16_report::sliding_report(&rotary).unwrap();
    b.quoted(&format!(
        "{check}\n-- temperature {SLIDING_TEMPERATURE}, through the sliding cache --\n{text}"
    ));
    b.claim(
        "at every step\nits logits agree with `forward_window`",
        check.contains(" within 1e-4 at every step"),
    );
}

fn exercises(b: &mut Bindings, d: &Data) {
    b.section("Exercises");
    let c = d.c;
    let (penalty, window) = PENALTY;
    b.rounded("1.3", f64::from(penalty)).exact("20", window as f64);
    b.quoted(&penalty_report(&d.model).unwrap());
    let mut z = [2.0_f32, -2.0];
    repetition_penalty(&mut z, &[0, 1], 2.0).unwrap();
    assert_eq!(z, [1.0, -4.0]);
    b.exact("128", c.d_model as f64)
        .exact("84", c.vocab as f64)
        .exact("10,752", (c.d_model * c.vocab) as f64)
        .rounded("1.3%", 100.0 * (c.d_model * c.vocab) as f64 / d.model.parameter_count() as f64);
    // Exercise 3.
    let ends: Vec<f64> = d
        .log
        .iter()
        .filter(|l| l.step == SHAKESPEARE_TRAINING.steps)
        .map(|l| l.first_half_loss)
        .collect();
    b.rounded("5.7", d.log[0].first_half_loss).value("8", (min(&ends) + max(&ends)) / 2.0, 0.5);
    b.claim(
        "rises during training",
        [1, 2, 3]
            .iter()
            .all(|&s| d.at(s, 2000).first_half_loss > d.at(s, 100).first_half_loss + 1.5),
    );
    b.claim(
        "in all three runs the loss on random\ncharacters rises while the loss on the validation split falls",
        [1, 2, 3].iter().all(|&s| {
            d.at(s, 2000).first_half_loss > d.at(s, 100).first_half_loss
                && d.at(s, 2000).validation_loss < d.at(s, 100).validation_loss
                && d.at(s, 2000).first_half_loss > (c.vocab as f64).ln()
        }),
    );
    b.exact("84", c.vocab as f64).rounded("4.43", (c.vocab as f64).ln());
}

fn quiz(b: &mut Bindings, d: &Data) {
    b.section("Quiz");
    // Quiz 1: top-p 0.9 when one character has 0.95.
    let one_sure = [38.0_f32.ln(), 0.0, 0.0]; // 38 / (38 + 2) = 0.95
    let p = Sampler::new(1.0).unwrap().distribution(&one_sure).unwrap();
    let top_p = SAMPLE_SETTINGS[3].1.unwrap();
    let kept = Sampler::new(1.0).unwrap().top_p(top_p).unwrap().distribution(&one_sure).unwrap();
    assert_eq!(kept, vec![1.0, 0.0, 0.0]);
    b.exact("0.9", top_p).rounded("0.95", p[0]).exact("0.9", top_p);
    // Quiz 3.
    let _ = d;
    b.exact("2,000", SHAKESPEARE_TRAINING.steps as f64);
}
