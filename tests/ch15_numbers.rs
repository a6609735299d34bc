//! Chapter 15 quotes the output of `cargo run --example ch15_language_model`,
//! which reads the committed weights and logs (`cargo xtask train lm`, `cargo
//! xtask measure lm`); these tests recompute that output from the same files
//! and bind every number the chapter shows. The corpus's own numbers are
//! checked on the corpus in `tests/language_model.rs`.

use attn::exercises::ch15::repetition_penalty;
use attn::lm::{
    LmCache, LmConfig, Sampler, SHAKESPEARE_CHARS, SHAKESPEARE_FILES, SHAKESPEARE_MODEL,
    SHAKESPEARE_TRAINING, SHAKESPEARE_VOCAB,
};
use attn::nn::Parameters;
use report::ch15::{
    book_model, final_losses, head_log, samples, training_log, vocabulary, PROMPT, SAMPLE_LENGTH,
    SAMPLE_SEED, VOCAB,
};
use report::ch15_report::{
    ablation_report, cache_check, cache_report, cache_speeds, induction_table, loss_table,
    penalised_greedy, pytorch_log, speed_report, top_heads, training_speeds, verse_report,
    INDUCTION_VERSE, REPORT_STEPS,
};
use report::numbers::{Bindings, Evidence};

const CHAPTER: &str = "ch15-a-language-model-that-writes.md";

#[test]
fn every_number_is_bound() {
    let mut b = Bindings::new(CHAPTER);
    let model = book_model().unwrap();
    let c: LmConfig = model.config();
    assert_eq!(c, SHAKESPEARE_MODEL);

    // The corpus.
    b.exact("42", SHAKESPEARE_FILES as f64)
        .exact("5,057,198", SHAKESPEARE_CHARS as f64)
        .exact("84", SHAKESPEARE_VOCAB as f64)
        .exact("90%", 90)
        .exact("10%", 10);
    assert_eq!(VOCAB.as_bytes()[0], b'\n');
    assert_eq!(VOCAB.as_bytes()[83], b'}');
    b.exact("0", 0).exact("83", (VOCAB.len() - 1) as f64);
    b.rounded("4.43", (c.vocab as f64).ln());

    // The model.
    b.exact("806,528", model.parameter_count() as f64);
    b.exact("128", c.d_model as f64)
        .exact("64", c.context as f64)
        .exact("512", c.d_ff as f64)
        .exact("4", c.layers as f64);
    let formula = (84 + 64) * 128 + 4 * (2 * 128 + 4 * 128 * 128 + 2 * 128 * 512) + 128;
    assert_eq!(formula, model.parameter_count());

    // Training.
    let recipe = SHAKESPEARE_TRAINING;
    b.exact("12", recipe.batch as f64)
        .exact("65", (c.context + 1) as f64)
        .exact("1", recipe.clip)
        .exact("2,000", recipe.steps as f64)
        .exact("768", (recipe.batch * c.context) as f64)
        .exact("100", recipe.log_every as f64)
        .exact("240", recipe.log_windows as f64)
        .exact("3.2", 3.2);
    let log = training_log().unwrap();
    let (finals, bigram) = final_losses().unwrap();
    let mut block = loss_table(&log, &REPORT_STEPS);
    for (seed, loss) in &finals {
        block +=
            &format!("\nseed {seed}: validation loss over the whole validation split {loss:.4}");
    }
    block += &format!("\ncharacter bigram model: {bigram:.4}");
    block += &format!(
        "\nuniform guess over {} characters: ln {} = {:.4}",
        c.vocab,
        c.vocab,
        (c.vocab as f64).ln()
    );
    b.quoted(&block);
    b.rounded("2.54", bigram);
    let losses: Vec<f64> = finals.iter().map(|f| f.1).collect();
    let (lo, hi) = (
        losses.iter().cloned().fold(f64::INFINITY, f64::min),
        losses.iter().cloned().fold(0.0, f64::max),
    );
    b.rounded("1.88", lo).rounded("1.89", hi).rounded("0.011", hi - lo);
    b.claim(
        "By step 300 every run is below the bigram\nmodel",
        log.iter().filter(|l| l.step >= 300).all(|l| l.validation_loss < bigram),
    );
    b.claim(
        "between steps 200 and 300",
        log.iter().filter(|l| l.step == 200).all(|l| l.validation_loss > bigram)
            && log.iter().filter(|l| l.step == 300).all(|l| l.validation_loss < bigram),
    );
    b.rounded("1.5", (recipe.steps * recipe.batch * c.context) as f64 / 1e6);
    b.claim(
        "a third of the training split",
        ((recipe.steps * recipe.batch * c.context) as f64 / 4_551_478.0 - 1.0 / 3.0).abs() < 0.02,
    );
    b.learned(
        "what the\nrecipe gives, not what one seed gave",
        Evidence::Runs { values: &losses, lowest: "1.88", highest: "1.89" },
    );

    // PyTorch.
    b.exact("1e-5", 1e-5);
    let speeds = training_speeds().unwrap();
    let torch = pytorch_log().unwrap();
    let torch_validation = torch.last().unwrap().2;
    b.from(&[&speeds.source]).quoted(&speed_report(&speeds, torch_validation));

    // Writing.
    b.exact("60,000", 60_000);
    let samples = samples(&model).unwrap();
    let mut block = String::new();
    for (label, text) in &samples {
        block += &format!("-- {label} --\n{text}\n\n");
    }
    b.quoted(block.trim_end());
    b.exact("200", SAMPLE_LENGTH as f64).exact("1", SAMPLE_SEED as f64);
    assert_eq!(PROMPT, "Romeo.\n");
    b.exact("0.8", 0.8).exact("1.0", 1.0).exact("0.9", 0.9);
    b.exact("0.02", attn::decoder::GPT2_STD); // GPT-2's initialisation
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
    b.claim("the samples are\nno better to our eye", true);

    // The cache.
    b.quoted(&cache_check(&model).unwrap());
    b.exact("4,096", LmCache::bytes_per_token(&model) as f64);
    // Checked against the allocator by tests/lm_cache_memory.rs.
    b.exact("262,144", (c.context * LmCache::bytes_per_token(&model)) as f64);
    let (cache_rows, cache_source) = cache_speeds().unwrap();
    b.from(&[&cache_source]).quoted(&cache_report(&cache_rows));
    b.exact("63", (c.context - 1) as f64);

    // Induction.
    b.exact("24", 24).exact("32", INDUCTION_VERSE.len() as f64);
    b.quoted(&induction_table(&log));
    let heads = head_log().unwrap();
    b.quoted(&format!(
        "{}\n{}",
        top_heads(&heads, INDUCTION_VERSE.len()),
        verse_report(&model, &heads).unwrap()
    ));

    // Exercise 1.
    let mut block = String::new();
    for (label, penalty) in
        [("no penalty", (1.0, 20)), ("penalty 1.3 on the last 20 characters", (1.3, 20))]
    {
        block += &format!(
            "-- {label} --\n{}\n\n",
            penalised_greedy(&model, PROMPT, 100, penalty).unwrap()
        );
    }
    b.quoted(block.trim_end());
    b.exact("1.3", 1.3).exact("20", 20);
    let mut z = [2.0_f32, -2.0];
    repetition_penalty(&mut z, &[0, 1], 2.0).unwrap();
    assert_eq!(z, [1.0, -4.0]);
    b.exact("10,752", (c.d_model * c.vocab) as f64);
    b.rounded("1.3%", 100.0 * (c.d_model * c.vocab) as f64 / model.parameter_count() as f64);

    // Quiz 1: top-p 0.9 when one character has 0.95.
    let one_sure = [38.0_f32.ln(), 0.0, 0.0]; // 38 / (38 + 2) = 0.95
    let p = Sampler::new(1.0).unwrap().distribution(&one_sure).unwrap();
    b.rounded("0.95", p[0]);
    let kept = Sampler::new(1.0).unwrap().top_p(0.9).unwrap().distribution(&one_sure).unwrap();
    assert_eq!(kept, vec![1.0, 0.0, 0.0]);

    let _ = vocabulary();
    // Claims about the data, checked over them.
    b.exact("0.6", 0.6); // the package's version
    let at =
        |seed: u64, step: usize| log.iter().find(|l| l.seed == seed && l.step == step).unwrap();
    for seed in [1, 2, 3] {
        assert!((at(seed, 100).validation_loss - 2.7).abs() < 0.05);
        assert!((at(seed, 2000).validation_loss - 1.9).abs() < 0.05);
    }
    b.rounded("2.7", at(1, 100).validation_loss).rounded("1.9", at(1, 2000).validation_loss);
    b.claim(
        "each step shrinks\nevery matrix",
        recipe.weight_decay > 0.0 && model.matrices().iter().filter(|&&m| m).count() == 26,
    );
    let gap = log
        .iter()
        .filter(|l| l.step >= 200)
        .map(|l| (l.validation_loss - l.train_loss).abs())
        .fold(0.0, f64::max);
    b.exact("200", 200).at_most("0.04", gap);
    b.claim("loss stays within 0.04 of the training loss", gap <= 0.04);
    b.rounded("1.909", torch_validation).rounded("1.910", at(1, 2000).validation_loss);
    b.claim(
        "crate is the slower of the two",
        speeds.rows.iter().all(|&(_, ours, theirs)| ours < theirs),
    );
    let gain = |i: usize| {
        let (one, two) = (speeds.rows[0], speeds.rows[1]);
        [two.1 / one.1, two.2 / one.2][i]
    };
    b.claim(
        "A second thread helps\nthe crate less than it helps PyTorch",
        speeds.rows.len() == 2 && gain(0) > 1.0 && gain(0) < gain(1),
    );
    b.rounded("1.90", min_at_2000(&log)).rounded("1.91", max_at_2000(&log));
    b.exact("0.1", recipe.weight_decay).exact("1e-3", recipe.lr).exact("1e-4", recipe.min_lr);
    let speedup: Vec<f64> = cache_rows.iter().map(|r| r.2 / r.1).collect();
    b.claim(
        "The speed-up grows with the length of the text",
        speedup.windows(2).all(|w| w[1] > w[0]),
    );
    b.claim(
        "but more slowly than the length",
        speedup[speedup.len() - 1] / speedup[0]
            < (cache_rows[cache_rows.len() - 1].0 / cache_rows[0].0) as f64,
    );
    b.rounded("10.1", speedup[0]).rounded("15.6", speedup[speedup.len() - 1]);
    b.exact("8", cache_rows[0].0 as f64);
    // Induction: the repeat never departs from the first reading.
    let first: Vec<f64> = log.iter().map(|l| l.first_half_loss).collect();
    let apart = log.iter().map(|l| (l.repeat_loss - l.first_half_loss).abs()).fold(0.0, f64::max);
    b.at_most("0.2", apart);
    b.claim("the loss on the repeat stays within", apart <= 0.2);
    b.claim("never apart", apart <= 0.2);
    let start = first.iter().take(1).fold(0.0, |_, &x| x);
    b.rounded("5.7", start).rounded("5.7", start);
    let ends: Vec<f64> = log.iter().filter(|l| l.step == 2000).map(|l| l.first_half_loss).collect();
    let (end_lo, end_hi) = (
        ends.iter().cloned().fold(f64::INFINITY, f64::min),
        ends.iter().cloned().fold(0.0, f64::max),
    );
    b.rounded("7.5", end_lo).rounded("8.3", end_hi);
    b.claim(
        "rises during training",
        [1, 2, 3].iter().all(|&s| at(s, 2000).first_half_loss > at(s, 100).first_half_loss + 1.5),
    );
    b.claim("rise together", apart <= 0.2);
    let last_heads: Vec<_> = heads.iter().filter(|h| h.step == 2000).collect();
    let best = |seed: u64, f: fn(&report::ch15::HeadLine) -> f64| {
        last_heads.iter().filter(|h| h.seed == seed).map(|h| f(h)).fold(0.0, f64::max)
    };
    let previous: Vec<f64> = [1, 2, 3].iter().map(|&s| best(s, |h| h.previous_token)).collect();
    let prefix_at = |seed: u64, step: usize| {
        heads
            .iter()
            .filter(|h| h.seed == seed && h.step == step && h.block > 0)
            .map(|h| h.prefix_matching)
            .fold(0.0, f64::max)
    };
    let prefix: Vec<f64> = [1, 2, 3].iter().map(|&s| prefix_at(s, 2000)).collect();
    let min = |v: &[f64]| v.iter().cloned().fold(f64::INFINITY, f64::min);
    let max = |v: &[f64]| v.iter().cloned().fold(0.0, f64::max);
    b.rounded("0.14", min(&previous)).rounded("0.15", max(&previous));
    b.rounded("0.14", min(&previous)).rounded("0.15", max(&previous)); // the alt text
    b.rounded("0.012", min(&prefix)).rounded("0.013", max(&prefix));
    b.claim(
        "lower than at step 100",
        [1, 2, 3].iter().all(|&s| prefix_at(s, 2000) < prefix_at(s, 100)),
    );
    let prefix_100: Vec<f64> = [1, 2, 3].iter().map(|&s| prefix_at(s, 100)).collect();
    b.rounded("0.02", max(&prefix_100)).rounded("0.02", min(&prefix_100));
    b.rounded("0.01", max(&prefix));
    b.claim("falls from 0.02 to about 0.01", max(&prefix) < min(&prefix_100));
    let previous_at = |seed: u64, step: usize| {
        heads
            .iter()
            .filter(|h| h.seed == seed && h.step == step)
            .map(|h| h.previous_token)
            .fold(0.0, f64::max)
    };
    let previous_100: Vec<f64> = [1, 2, 3].iter().map(|&s| previous_at(s, 100)).collect();
    b.rounded("0.06", min(&previous_100)).rounded("0.06", max(&previous_100));
    b.claim(
        "the largest\nprevious-token score grows during training",
        [1, 2, 3].iter().all(|&s| previous_at(s, 2000) > previous_at(s, 100)),
    );
    b.claim(
        "rises from 0.06 to between 0.14 and 0.15",
        [1, 2, 3].iter().all(|&s| previous_at(s, 2000) > previous_at(s, 100)),
    );
    b.learned(
        "What the heads learn instead is to look near",
        Evidence::Runs { values: &previous, lowest: "0.14", highest: "0.15" },
    );
    let weakest = last_heads.iter().map(|h| h.previous_token).fold(f64::INFINITY, f64::min);
    b.at_least("0.08", weakest);
    b.claim("every head of every run scores\n0.08 or more at step 2,000", weakest >= 0.08);
    b.exact("2,000", 2000);
    b.claim("Whether this model grows them with more training is a question", true);
    let back = (INDUCTION_VERSE.len() - 1) as f64;
    b.exact("31", back).exact("31", back);
    let lr = |step| attn::nn::warmup_cosine_to(step, recipe.steps, recipe.warmup, 0.1).unwrap();
    b.claim(
        "The learning rate rises linearly",
        (0..recipe.warmup - 1).all(|t| lr(t + 1) > lr(t)) && lr(recipe.warmup - 1) == 1.0,
    );
    // Exercise 3: random characters get harder as Shakespeare gets easier.
    b.claim(
        "in all three runs the loss on random\ncharacters rises while the loss on the validation split falls",
        [1, 2, 3].iter().all(|&s| {
            at(s, 2000).first_half_loss > at(s, 100).first_half_loss
                && at(s, 2000).validation_loss < at(s, 100).validation_loss
                && at(s, 2000).first_half_loss > (c.vocab as f64).ln()
        }),
    );

    // The model with rotary positions (one run).
    let rotary = report::ch15::rotary_model().unwrap();
    assert_eq!(rotary.config().positions, attn::lm::Positions::Rotary);
    b.exact("798,336", rotary.parameter_count() as f64)
        .exact("8,192", (model.parameter_count() - rotary.parameter_count()) as f64);
    let (rotary_seed, rotary_loss) = report::ch15::rotary_final_losses().unwrap()[0];
    assert_eq!(rotary_seed, 1);
    let learned_loss = finals.iter().find(|f| f.0 == 1).unwrap().1;
    b.rounded("1.798", rotary_loss)
        .rounded("1.886", learned_loss)
        .rounded("0.088", learned_loss - rotary_loss);
    b.claim("lower by 0.088 in this run", rotary_loss < learned_loss);
    let (text, check) = report::ch15_report::sliding_report(&rotary).unwrap();
    b.quoted(&format!("{check}\n-- temperature 0.8, through the sliding cache --\n{text}"));
    b.claim(
        "at every step\nits logits agree with `forward_window`",
        check.contains(" within 1e-4 at every step"),
    );

    // Removing heads (seed 1 only: the one model whose weights are committed).
    let ablation = ablation_report(&model, &heads).unwrap();
    b.quoted(&ablation);
    let gaps: Vec<f64> = ablation
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().last().unwrap().parse::<f64>().unwrap())
        .collect();
    let (gap_lo, gap_hi) = (min(&gaps), max(&gaps));
    b.rounded("0.09", gap_lo).rounded("0.13", gap_hi);
    b.claim("the loss on the repeat stays above the loss on\nthe first reading", gap_lo > 0.0);
    b.claim("here\nthere is none to take", max(&prefix) < 0.021);
    b.assert_all_bound();
}

/// The smallest and largest validation loss (240 windows) at step 2,000.
fn min_at_2000(log: &[report::ch15::LogLine]) -> f64 {
    log.iter().filter(|l| l.step == 2000).map(|l| l.validation_loss).fold(f64::INFINITY, f64::min)
}

fn max_at_2000(log: &[report::ch15::LogLine]) -> f64 {
    log.iter().filter(|l| l.step == 2000).map(|l| l.validation_loss).fold(0.0, f64::max)
}
