//! Chapter 13 quotes the output of `cargo run --example ch13_translation`,
//! which evaluates the committed weights, and the log of `cargo xtask
//! train ch13`; these tests recompute the output from the same files, check
//! the log against the saved models, and bind every number the chapter
//! shows. (Training from scratch is `tests/translation_learns.rs`.)

use attn::exercises::ch13::smoothing_floor;
use attn::nn::Parameters;
use attn::translation::alignment_scores;
use attn::translation::{
    alignment, book_pairs, number_words, Seq2Seq, BOOK_PAIRS, BOOK_SEQ2SEQ, BOOK_SEQ2SEQ_TRAINING,
    TARGET_VOCAB,
};
use report::ch13::{
    alignment_baselines, alignment_report, beam_changes, beam_report, bleu_report, cross_attention,
    decode_and_score, examples_report, scores_report, BEAM,
};

mod common;

use report::numbers::{Bindings, Evidence};

const CHAPTER: &str = "ch13-attention-learns-to-align.md";

fn data(name: &str) -> String {
    report::measurements::data_file(name).unwrap()
}

fn model(name: &str) -> Seq2Seq {
    Seq2Seq::from_text(&data(&format!("ch13-{name}-weights.txt"))).unwrap()
}

/// Every number the chapter shows is bound: quoted output, or a value
/// registered here with its check, or exempt (`tests/common/numbers.rs`).
#[test]
fn every_number_is_bound() {
    let mut b = Bindings::new(CHAPTER);
    let (held_out, train) = book_pairs().unwrap();

    // The task, the reference alignment and the data.
    b.quoted(&examples_report(&[342_015, 21_000, 305]).unwrap());
    b.quoted(&format!(
        "{} training pairs, {} held-out pairs (no number in both)",
        train.len(),
        held_out.len()
    ));
    assert_eq!(BOOK_PAIRS.map(|p| p.0), [held_out.len(), train.len()]);
    let longest = held_out.iter().chain(&train).map(|p| p.source.len()).max();
    assert_eq!(longest, Some(11), "sources of one word to eleven");
    let lengths: std::collections::BTreeSet<usize> =
        (1..=999_999).map(|x| number_words(x).unwrap().len()).collect();
    b.claim(
        "with\nno number of exactly ten words",
        !lengths.contains(&10) && lengths.first() == Some(&1) && lengths.last() == Some(&11),
    );

    // The model.
    let attention = model("attention");
    let mean_pooled = model("mean-pooled");
    let smoothed = model("smoothed");
    assert_eq!(attention.config(), BOOK_SEQ2SEQ);
    assert_eq!(mean_pooled.parameter_count(), attention.parameter_count());
    let c = BOOK_SEQ2SEQ;
    b.exact("44,653", attention.parameter_count() as f64)
        .exact("13", TARGET_VOCAB as f64)
        .exact("32", c.d_model as f64)
        .exact("64", c.d_ff as f64);
    b.claim("two layers of each kind, width 32, 4 heads", c.layers == 2 && c.heads == 4);

    // The training log, as `cargo xtask train ch13` wrote it: its held-out
    // scores must be the saved models'.
    let log = data("ch13-train-log.txt");
    let p = report::provenance::Provenance::parse("ch13-train-log.txt", &log).unwrap();
    assert_eq!(p.statistic, "one run", "the log names its run: {}", p.line);
    b.quoted(log.trim_end());
    b.exact(
        "0.1",
        report::numbers::number_in_source(
            "examples/ch13_translation_train.rs",
            "RUNS",
            "label_smoothing: ",
        ),
    );

    // BLEU's worked example.
    b.quoted(&bleu_report().unwrap());
    b.value("0.8825", (1.0 - 9.0_f64 / 8.0).exp(), 5e-5);

    // Held-out scores, greedy and beam search.
    let models: [(&str, &Seq2Seq, &[usize]); 3] = [
        ("attention", &attention, &[1, BEAM][..]),
        ("mean-pooled", &mean_pooled, &[1, BEAM][..]),
        ("attention, label smoothing 0.1", &smoothed, &[1][..]),
    ];
    let (results, translations) = decode_and_score(&models, &held_out).unwrap();
    b.quoted(&scores_report(&results));
    for (name, i) in [("attention", 0), ("mean-pooled", 2)] {
        let changes = beam_changes(&translations[i], &translations[i + 1], &held_out);
        b.quoted(&beam_report(name, BEAM, changes));
    }
    for (name, i) in [("attention", 0), ("mean-pooled", 2), ("smoothed", 4)] {
        let (_, _, exact, bleu) = results[i];
        let scores = format!("held-out exact {exact:.3}, BLEU {bleu:.3} (greedy)");
        assert!(
            log.lines().any(|l| l.starts_with(&format!("{name}: ")) && l.ends_with(&scores)),
            "the training log's {name} line does not match the saved model"
        );
    }
    b.exact("1500", BOOK_SEQ2SEQ_TRAINING.steps as f64);

    // Alignment.
    let scores = alignment_scores(&attention, &held_out).unwrap();
    let baselines = alignment_baselines(&held_out).unwrap();
    b.quoted(&alignment_report(&scores, baselines));
    let all: Vec<f64> = scores.iter().flatten().cloned().collect();
    let best = all.iter().cloned().fold(0.0, f64::max);
    b.claim("In this run every head beats a random word", all.iter().all(|&s| s > baselines.0));
    b.value("0.2", best - baselines.1, 0.05);
    assert_eq!(scores[1][0], best, "Figure 13.2 is layer 2, head 1");

    // The held-out number of Figures 13.2 and 13.3.
    let shown = held_out.iter().find(|p| p.source.len() >= 10).unwrap();
    assert_eq!(
        number_words(shown.number).unwrap().join(" "),
        "nine hundred four and thirty thousand three hundred two and ninety"
    );
    assert_eq!(shown.number, 934_392);
    b.exact("7", (shown.target.len() + 1) as f64).exact("11", shown.source.len() as f64);
    let w = &cross_attention(&attention, shown).unwrap()[1][0];
    b.rounded("0.99", w[[0, 0]]).rounded("0.91", w[[5, 8]]);
    let gold = alignment(shown.number).unwrap();
    let hits = (0..gold.len())
        .filter(|&i| {
            let row = w.row(i);
            let most = (0..row.len()).fold(0, |m, j| if row[j] > row[m] { j } else { m });
            gold[i] == Some(most)
        })
        .count();
    assert_eq!(hits, gold.len(), "each digit's most-attended word names it");
    // Figure 13.3: heads 1 and 2 of layer 1 rest on the first "hundred"
    // for the last two digits and EOS.
    let weights = cross_attention(&attention, shown).unwrap();
    for head in [0, 1] {
        let w = &weights[0][head];
        for i in w.nrows() - 3..w.nrows() {
            let row = w.row(i);
            let most = (0..row.len()).fold(0, |m, j| if row[j] > row[m] { j } else { m });
            assert_eq!(most, 1, "layer 1, head {}, row {i}", head + 1);
        }
    }
    // Some heads look at the "hundred" after "three" (word 7, not word 6)
    // for the fourth digit.
    let one_off = weights.iter().flatten().filter(|w| {
        let row = w.row(3);
        (0..row.len()).fold(0, |m, j| if row[j] > row[m] { j } else { m }) == 7
    });
    assert!(one_off.count() >= 2, "some heads look one word off");

    // The seed sweep: seed 1 is the saved model.
    let sweep = report::ch13::seeds().unwrap();
    assert_eq!(sweep.len(), 5);
    assert_eq!(sweep[0].0, BOOK_SEQ2SEQ_TRAINING.seed);
    assert_eq!(sweep[0].1, results[0].2, "seed 1's accuracy is the saved model's");
    assert_eq!(sweep[0].2, best, "seed 1's best head is the saved model's");
    let seed_lines: Vec<&str> = log.lines().filter(|l| l.starts_with("seed ")).collect();
    b.quoted(&seed_lines.join("\n"));
    let exact: Vec<f64> = sweep.iter().map(|s| s.1).collect();
    let heads: Vec<f64> = sweep.iter().map(|s| s.2).collect();
    let (lo, hi) =
        (exact.iter().cloned().fold(1.0, f64::min), exact.iter().cloned().fold(0.0, f64::max));
    b.rounded("0.978", lo).rounded("0.988", hi);
    let worst_head = heads.iter().cloned().fold(1.0, f64::min);
    b.learned(
        "most alignment-like heads score from 0.206",
        Evidence::Runs { values: &heads, lowest: "0.206", highest: "0.737" },
    );
    b.learned("In this\ninitialisation its heads learned to align", Evidence::OneRun);
    assert!(
        (0.0..0.02).contains(&(worst_head - baselines.0)),
        "the worst seed's best head is hardly better than a random word"
    );
    assert_eq!(heads.iter().cloned().fold(0.0, f64::max), best, "seed 1 is the best");

    // Exercises and quiz.
    let floor = smoothing_floor(0.1, TARGET_VOCAB).unwrap();
    b.quoted(&format!(
        "lowest loss with label smoothing 0.1 over {TARGET_VOCAB} tokens: {floor:.4}"
    ));
    b.rounded("0.54", floor);
    let curves = report::ch13::training_curves().unwrap();
    let last: &[f64] = &curves.last().unwrap()[1..]; // each model's final loss
    let smoothed_final = last[2];
    b.claim("and it reaches that floor", (smoothed_final - floor).abs() < 1e-3);
    // Figure 13.1's alt text: the final losses of the three runs.
    b.at_most("0.001", last[0]).value("0.04", last[1], 0.005);
    b.claim("falls fastest", last[0] < last[1] && last[1] < last[2]);

    repeats(&mut b);
    counts_of_evidence(&mut b);
    b.assert_all_bound();
}

/// Figures the page repeats in another section than the one that binds
/// them: each section that repeats one says so with `again`.
fn repeats(b: &mut Bindings) {
    b.section("The model").again("4");
    b.section("What attention learned").again("9").again("11");
    b.section("Exercises").again("0.54").again("32");
    b.section("Quiz").again("0.986").again("0.978");
    b.section("");
}

/// The counts of runs, seeds and models that the chapter writes as words,
/// each from the code or data it counts.
fn counts_of_evidence(b: &mut Bindings) {
    let runs =
        report::numbers::number_in_source("examples/ch13_translation_train.rs", "RUNS", "; ");
    let sweep = report::ch13::seeds().unwrap().len() as f64;
    b.section("Training").exact("three", runs);
    b.section("Decoding and scoring").exact("five", sweep);
    b.section("What attention learned").exact("five", sweep);
    // Exercise 1's test decodes with the untrained models of seeds 0..3.
    let untrained = report::numbers::number_in_source(
        "src/exercises/ch13.rs",
        "the_loop_decodes_what_a_beam_of_one_decodes",
        "for seed in 0..",
    );
    b.section("Exercises").exact("three", untrained);
    b.section("");
}
