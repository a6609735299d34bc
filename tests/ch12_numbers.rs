//! Chapter 12 quotes the output of `cargo run --example ch12_tiny_model`,
//! which evaluates the committed weights; these tests recompute it from the
//! same files, and train a small model from scratch to check that learning
//! still works.

use std::time::Instant;

use attn::model::{
    accuracy, held_out, train, ModelConfig, Task, TinyTransformer, TrainConfig, BOOK_MODEL,
    BOOK_TRAINING, HELD_OUT, VOCAB,
};
use attn::nn::{Adam, Parameters};
use report::ch12::{
    ablation_report, ablations, accuracy_after, accuracy_report, digit_attention,
    digit_attention_report, mirror_attention, mirror_report, residual_report, show_tokens,
    uniform_target_share,
};

mod common;

use report::numbers::{Bindings, Evidence};

const CHAPTER: &str = "ch12-training.md";

/// The exact-sequence accuracy the from-scratch training run must reach.
const CI_BAR: f64 = 0.95;
/// The short run's model, training and held-out set (size, seed), which the
/// chapter describes.
const SHORT_MODEL: ModelConfig = ModelConfig { k: 8, d_model: 16, heads: 2, d_ff: 64, layers: 1 };
const SHORT_TRAINING: TrainConfig =
    TrainConfig { steps: 200, batch: 32, lr: 3e-3, warmup: 10, seed: 5, task: Task::REVERSE };
const SHORT_HELD_OUT: (usize, u64) = (200, 7);

fn data(name: &str) -> String {
    report::measurements::data_file(name).unwrap()
}

fn book_model() -> TinyTransformer {
    TinyTransformer::from_text(&data("ch12-weights.txt")).unwrap()
}

/// Trains a small model from scratch: if backward passes, the optimiser or
/// the model break, it stops learning and this fails.
#[test]
fn a_short_training_run_learns_to_reverse() {
    let (model, training) = (SHORT_MODEL, SHORT_TRAINING);
    let test = held_out(Task::REVERSE, model.k, SHORT_HELD_OUT.0, SHORT_HELD_OUT.1).unwrap();
    let start = Instant::now();
    let (net, losses) = train(model, &training, &test).unwrap();
    let (exact, _) = accuracy(&net, &test).unwrap();
    eprintln!("{} steps in {:.1} s, exact {exact}", training.steps, start.elapsed().as_secs_f64());
    assert!(losses[losses.len() - 1] < 0.1 * losses[0], "the loss falls");
    assert!(exact >= CI_BAR, "held-out exact-sequence accuracy {exact} below {CI_BAR}");
}

fn the_saved_model_reverses_the_held_out_set(b: &mut Bindings) {
    let net = book_model();
    assert_eq!(ModelConfig::of(&net).unwrap(), BOOK_MODEL);
    assert_eq!(net.parameter_count(), 26_443);
    let test =
        held_out(Task::REVERSE, ModelConfig::of(&net).unwrap().k, HELD_OUT.0, HELD_OUT.1).unwrap();
    let reversal = accuracy(&net, &test).unwrap();
    b.exact("1000", test.len() as f64);
    b.quoted(&accuracy_report(&net, &test, reversal).unwrap());
    // The residual stream after each block, through the final head.
    let after: Vec<f64> = (0..=net.config().layers)
        .map(|depth| accuracy_after(&net, &test, depth).unwrap())
        .collect();
    b.quoted(&residual_report(&after));
    b.claim("Block 2 changes no prediction", after[1] == 1.0 && after[2] == 1.0);
    // Exercise 1: the sorting model, and where both models' heads look.
    let sorter = TinyTransformer::from_text(&data("ch12-sort-weights.txt")).unwrap();
    let sort_test = held_out(
        attn::exercises::ch12::SORT,
        ModelConfig::of(&sorter).unwrap().k,
        HELD_OUT.0,
        HELD_OUT.1,
    )
    .unwrap();
    let sorting = accuracy(&sorter, &sort_test).unwrap();
    b.quoted(&accuracy_report(&sorter, &sort_test, sorting).unwrap());
    let split = digit_attention(&sorter, &sort_test).unwrap();
    let uniform = uniform_target_share(&sort_test, ModelConfig::of(&sorter).unwrap().k).unwrap();
    b.quoted(&digit_attention_report(&[
        (
            "reverse",
            &digit_attention(&net, &test).unwrap(),
            uniform_target_share(&test, ModelConfig::of(&net).unwrap().k).unwrap(),
        ),
        ("sort", &split, uniform),
    ]));
    let on_target: Vec<f64> = split.iter().flatten().map(|a| a.on_target).collect();
    let lo = on_target.iter().cloned().fold(1.0, f64::min);
    let hi = on_target.iter().cloned().fold(0.0, f64::max);
    b.rounded("0.29", lo).rounded("0.36", hi);
    assert!((2.0..2.2).contains(&(lo / uniform)) && (2.5..2.6).contains(&(hi / uniform)));
    let mirror = mirror_attention(&net, &test).unwrap();
    b.quoted(&mirror_report(&mirror));
    // "96 to 97%" and "14%".
    let (low, high) = (mirror[0][0].min(mirror[0][1]), mirror[0][0].max(mirror[0][1]));
    b.rounded("96", 100.0 * low).rounded("97%", 100.0 * high);
    for &w in &mirror[1] {
        b.rounded("14%", 100.0 * w);
    }
    removing_heads(b, (&net, &test), (&sorter, &sort_test));
}

/// Rows of `ablations`: what was removed, exact and per-digit accuracy.
type Ablated = Vec<report::ch12::Ablation>;

/// What removing heads does to each model, and what the text says of it.
fn removing_heads(
    b: &mut Bindings,
    (net, test): (&TinyTransformer, &[Vec<usize>]),
    (sorter, sort_test): (&TinyTransformer, &[Vec<usize>]),
) {
    let (reverse, sort): (Ablated, Ablated) =
        (ablations(net, test).unwrap(), ablations(sorter, sort_test).unwrap());
    b.quoted(&ablation_report(&[("reverse", &reverse), ("sort", &sort)]));
    let row = |rows: &Ablated, name: &str| rows.iter().find(|r| r.0 == name).unwrap().clone();
    let (block_1, block_2) =
        (row(&reverse, "block 1, all heads"), row(&reverse, "block 2, all heads"));
    b.claim(
        "Without the first block's two heads, no held-out sequence is reversed",
        block_1.1 == 0.0,
    )
    .claim("about the tenth a guess would get", (0.09..0.11).contains(&block_1.2))
    .claim("Without\nthe second block's heads, every sequence still is", block_2.1 == 1.0)
    .claim(
        "removing its heads costs the reversal nothing",
        block_2.1 == row(&reverse, "none").1 && block_2.2 == row(&reverse, "none").2,
    )
    .claim(
        "removing head 2 alone leaves 0.3800 of the",
        row(&reverse, "block 1, head 2").1 < row(&reverse, "block 1, head 1").1,
    );
    let none = row(&sort, "none").1;
    b.claim(
        "In this run the sorting model spreads the work over both\nblocks",
        row(&sort, "block 1, all heads").1 < 0.1 && row(&sort, "block 2, all heads").1 < 0.1,
    )
    .claim(
        "each head removed\nalone costs more than half of them",
        sort.iter().filter(|r| r.0.contains(", head ")).all(|r| r.1 < 0.5 * none),
    );
    let after: Vec<f64> = (0..=sorter.config().layers)
        .map(|depth| accuracy_after(sorter, sort_test, depth).unwrap())
        .collect();
    b.quoted(&residual_report(&after));
    // What training learned, and on what it rests.
    for phrase in [
        "looks at what its attention learned in one",
        "the model finds the positional",
        "does not prove that the model uses what it\nfinds there",
        "Figure 12.2. Learned attention on a held-out example",
        "these patterns were learned in this run",
        "Figure 12.3. Learned attention of the model trained to sort",
    ] {
        b.learned(phrase, Evidence::OneRun);
    }
    b.learned("$W_Q$ and $W_K$ could learn", Evidence::Conjecture);
}

fn training_log_and_figure_10_1(b: &mut Bindings) {
    let log = report::ch12::training_log().unwrap();
    assert_eq!(log.len(), 600);
    let mut block = String::from("step    loss  held-out exact (200)\n");
    for s in [1, 20, 30, 40, 50, 100, 200, 600] {
        let acc = log[s - 1].2.map_or("–".to_string(), |a| format!("{a:.3}"));
        block += &format!("{s:>4}  {:.4}  {acc:>20}\n", log[s - 1].1);
    }
    block += &format!("uniform guess over 11 tokens: loss ln 11 = {:.4}", 11f64.ln());
    b.quoted(&block);
    // Figure 12.1: accuracy 0 through step 25, 0.085 at 30, 1 from 40 on.
    let acc = |s: usize| log[s - 1].2.unwrap();
    assert!([5, 10, 15, 20, 25].iter().all(|&s| acc(s) == 0.0));
    assert_eq!(acc(30), 0.085);
    assert!(log[39..].iter().filter_map(|r| r.2).all(|a| a == 1.0));
    // Figure 12.1: starts above ln 11 (2.40), 2.13 at step 20, below ln 10.
    assert!(log[0].1 > 11f64.ln() && log[19].1 < 10f64.ln());
    b.claim(
        "falls to 2.1 by step 20",
        log[19].1 < log[0].1 && log[49].1 < log[19].1 && log[599].1 < log[49].1,
    );
    b.rounded("2.40", 11f64.ln())
        .rounded("2.13", log[19].1)
        .rounded("2.30", 10f64.ln())
        .rounded("3.0", log[0].1)
        .rounded("2.1", log[19].1)
        .value("0.05", log[49].1, 0.01)
        .rounded("0.0002", log[599].1)
        .exact("600", log.len() as f64)
        .exact("100%", 100.0 * acc(40));
    // "0 until step 25 ... 1.0 from step 40 on": the log's last step at 0
    // and first step from which every accuracy is 1.
    let measured: Vec<(usize, f64)> = log.iter().filter_map(|r| r.2.map(|a| (r.0, a))).collect();
    let last_zero = measured.iter().filter(|r| r.1 == 0.0).map(|r| r.0).max().unwrap();
    let from_full = measured
        .iter()
        .map(|r| r.0)
        .find(|&s| measured.iter().filter(|r| r.0 >= s).all(|r| r.1 == 1.0))
        .unwrap();
    b.exact("25", last_zero as f64).exact("40", from_full as f64);
    // The weights file is "about 0.3 MB".
    let size = data("ch12-weights.txt").len() as f64 / 1e6;
    b.value("0.3", size, 0.05);
    // The training log, as `cargo xtask train` wrote it.
    let train_log = data("ch12-train-log.txt");
    let p = report::provenance::Provenance::parse("ch12-train-log.txt", &train_log).unwrap();
    assert_eq!(p.statistic, "one run", "the log names its run: {}", p.line);
    b.quoted(train_log.trim_end());
}

/// Every number the chapter shows is bound: quoted output, or a value
/// registered here with its check, or exempt (`tests/common/numbers.rs`).
#[test]
fn every_number_is_bound() {
    let mut b = Bindings::new(CHAPTER);
    the_saved_model_reverses_the_held_out_set(&mut b);
    training_log_and_figure_10_1(&mut b);
    bind_prose(&mut b);
    repeats(&mut b);
    b.assert_all_bound();
}

/// Numbers of the prose, captions, alt text and quiz, each with its check.
fn bind_prose(b: &mut Bindings) {
    let c = BOOK_MODEL;
    // The task's illustration: 8 digits reversed.
    let digits = [3, 1, 4, 1, 5, 9, 2, 6];
    let reversed: Vec<usize> = digits.iter().rev().cloned().collect();
    b.quoted(&format!("{} |  →  {}", show_tokens(&digits), show_tokens(&reversed)));
    // The permutation matrix over the one-hot prompt: 10k × 10k.
    b.exact("80", (10 * c.k) as f64).exact("8", c.k as f64).exact("7", (c.k - 1) as f64);
    // "output 3 comes from input 4": output j reads input k − 1 − j.
    b.exact("4", (c.k - 1 - 3) as f64);
    // The model's sizes.
    b.exact("10", (VOCAB - 1) as f64)
        .exact("32", c.d_model as f64)
        .exact("128", c.d_ff as f64)
        .exact("16", c.context() as f64)
        .exact("15", (c.context() - 1) as f64)
        .exact("1e-5", attn::decoder::EPS);
    // Adam's settings and the schedule.
    let net = TinyTransformer::new(c, 0).unwrap();
    let adam = Adam::new(&net, BOOK_TRAINING.lr).unwrap();
    b.exact("0.9", adam.betas().0)
        .exact("0.98", adam.betas().1)
        .exact("1e-9", adam.eps())
        .exact("3e-3", BOOK_TRAINING.lr)
        .exact("30", BOOK_TRAINING.warmup as f64);
    // The short run (a_short_training_run_learns_to_reverse): "width 16,
    // one block, 200 steps of 32 sequences ... at least 95% ... on 200
    // held-out sequences"; the prompt "with 16 tokens".
    b.section("Greedy decoding and accuracy")
        .exact("16", SHORT_MODEL.d_model as f64)
        .exact("200", SHORT_TRAINING.steps as f64)
        .exact("32", SHORT_TRAINING.batch as f64)
        .exact("200", SHORT_HELD_OUT.0 as f64)
        .value("95%", 100.0 * CI_BAR, 1e-9)
        .exact("16", c.context() as f64)
        .exact("1000", HELD_OUT.0 as f64);
    assert_eq!(SHORT_MODEL.layers, 1, "one block");
    b.section("");
}

/// The figures' example, "9 6 7 6 3 2 8 8, separator, 8 8 2 3 6 7 6": the
/// first held-out prompt and the answer the model reads (all but its last
/// digit).
fn figure_example(task: Task, answer: impl Fn(&[usize]) -> Vec<usize>) -> String {
    let test = held_out(task, BOOK_MODEL.k, HELD_OUT.0, HELD_OUT.1).unwrap();
    let prompt = &test[0][..BOOK_MODEL.k];
    let shown = |d: &[usize]| d.iter().map(usize::to_string).collect::<Vec<_>>().join(" ");
    let out = answer(prompt);
    format!("{}, separator, {}", shown(prompt), shown(&out[..out.len() - 1]))
}

/// Figures the page repeats in another section than the one that binds
/// them: each section that repeats one says so with `again`.
fn repeats(b: &mut Bindings) {
    let reversed = |p: &[usize]| p.iter().rev().copied().collect::<Vec<_>>();
    let sorted = |p: &[usize]| {
        let mut s = p.to_vec();
        s.sort();
        s
    };
    b.section("The task: reverse a sequence of digits").again("10");
    b.section("The model: decoder-only").again("11").again("10").again("7");
    b.section("Training").again("10");
    b.section("What attention learned")
        .quoted(&figure_example(Task::REVERSE, reversed))
        .again("1000")
        .again("16");
    b.section("Exercises")
        .quoted(&figure_example(attn::exercises::ch12::SORT, sorted))
        .again("1000")
        .again("0.0750")
        .again("16")
        .again("10")
        .again("2.30")
        .again("15");
    b.section("Quiz").again("96").again("97%");
    b.section("");
}
