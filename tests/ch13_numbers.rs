//! Chapter 13 quotes the output of `cargo run --example ch13_translation`,
//! which evaluates the committed weights, and the log of `cargo xtask
//! train ch13`; these tests recompute the output from the same files, check
//! the log against the saved models, and bind every number the chapter
//! shows. (Training from scratch is `tests/translation_learns.rs`.)

use attn::exercises::ch13::smoothing_floor;
use attn::nn::Parameters;
use attn::translation::alignment_scores;
use attn::translation::{
    alignment, book_pairs, number_words, rnn_alignment_score, RnnSeq2Seq, Seq2Seq, BOOK_PAIRS,
    BOOK_SEQ2SEQ, BOOK_SEQ2SEQ_TRAINING, TARGET_VOCAB,
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
    let length_lines = |l: &&str| {
        ["GRU,", "Transformer,", "length experiment:", "wrote book/data/ch13-lengths"]
            .iter()
            .any(|p| l.starts_with(p))
    };
    let first: Vec<&str> = log.lines().filter(|l| !length_lines(l)).collect();
    b.quoted(&first.join("\n"));
    let lengths_log: Vec<&str> =
        log.lines().filter(|l| length_lines(l) && !l.starts_with("wrote")).collect();
    b.quoted(&lengths_log.join("\n"));
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

    // The first held-out set's errors, all on the rare short sources.
    let errors_only_below_3 =
        held_out.iter().zip(&translations[0]).all(|(p, t)| *t == p.target || p.source.len() <= 2);
    b.claim("makes all of its errors on those short sentences", errors_only_below_3);
    let of_length = |n: usize| train.iter().filter(|p| p.source.len() == n).count();
    b.claim(
        "of its 5000\npairs, 10 have one word and 10 have two",
        train.len() == 5000 && of_length(1) == 10 && of_length(2) == 10,
    );
    b.exact("5000", train.len() as f64).exact("10", of_length(1) as f64);
    length_experiment(&mut b);
    summarisation(&mut b);

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
    let floor = smoothing_floor(0.1, TARGET_VOCAB);
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

/// Binds the length experiment's section: its data, the tables the example
/// prints from the committed rows, and what the text says of them.
fn length_experiment(b: &mut Bindings) {
    use report::ch13_lengths::*;
    let (held_out, train) = length_pairs().unwrap();
    b.quoted(&data_report(&held_out, &train));
    let by_words =
        |n: usize| (1..=999_999).filter(|&x| number_words(x).unwrap().len() == n).count();
    b.claim("Only 27 numbers have one word and 36 two", by_words(1) == 27 && by_words(2) == 36);
    b.exact("27", by_words(1) as f64).exact("36", by_words(2) as f64);
    b.value("0.069", widest_interval(HELD_OUT_PER_LENGTH), 5e-4);
    let rows = read_lengths().unwrap();
    let models = read_models().unwrap();
    // The rows are the runs the text describes: every model and seed, 200
    // pairs a length, agreeing with the model rows.
    assert_eq!(rows.len(), LengthModel::ALL.len() * SEEDS.len() * LENGTHS.len());
    assert!(rows.iter().all(|r| r.pairs == HELD_OUT_PER_LENGTH));
    for m in &models {
        let of: Vec<&LengthRow> =
            rows.iter().filter(|r| r.model == m.model && r.seed == m.seed).collect();
        let exact = of.iter().map(|r| r.exact).sum::<usize>() as f64 / held_out.len() as f64;
        assert_eq!(exact, m.exact, "{:?} seed {}", m.model, m.seed);
    }
    b.quoted(&length_table(&rows));
    b.quoted(&models_report(&models, report::ch13::alignment_baselines(&held_out).unwrap()));
    // The committed GRU is the first initialisation of the GRU with
    // attention: its weights (rounded to f32) give its row's scores.
    let gru = RnnSeq2Seq::from_text(&data("ch13-gru-attention-weights.txt")).unwrap();
    let first =
        models.iter().find(|m| m.model == LengthModel::GruAttention && m.seed == SEEDS[0]).unwrap();
    let score = rnn_alignment_score(&gru, &held_out).unwrap().unwrap();
    assert!((score - first.alignment).abs() < 2e-3, "{score} vs {}", first.alignment);
    assert_eq!(gru.config(), rnn_config(true));

    // What the text says of the table.
    let spread_of = |m, l| spread(&rows, m, l, exact_share);
    let attending = [LengthModel::GruAttention, LengthModel::Transformer];
    let lowest =
        rows.iter().filter(|r| attending.contains(&r.model)).map(exact_share).fold(1.0, f64::min);
    b.rounded("0.985", lowest);
    b.claim(
        "no seed\nof the GRU with attention or of the Transformer with cross-attention\n\
         translates less than 0.985 of any bucket exactly",
        lowest >= 0.985,
    );
    b.claim(
        "the GRU with attention and the Transformer with cross-attention stay at the top at every length",
        lowest >= 0.985,
    );
    let (last, mean) = (LengthModel::Gru, LengthModel::MeanPooled);
    let not_beside_every = [4, 8, 9].iter().any(|&l| {
        (spread_of(last, l).mean - spread_of(mean, l).mean).abs()
            < widest_interval(HELD_OUT_PER_LENGTH)
    });
    let gaps_from_5 = LENGTHS.iter().filter(|&&l| l >= 5).all(|&l| {
        [LengthModel::GruAttention, LengthModel::Transformer].iter().all(|&with| {
            [last, mean].iter().all(|&without| {
                spread_of(with, l).mean - spread_of(without, l).mean
                    > widest_interval(HELD_OUT_PER_LENGTH)
            })
        })
    });
    b.claim(
        "narrower than every gap between a model with attention and one without\nfrom 5 words on, though not than every gap between the two models\nwithout it",
        gaps_from_5 && not_beside_every,
    );
    b.rounded("0.977", spread_of(last, 4).mean)
        .rounded("0.430", spread_of(last, 11).mean)
        .rounded("0.957", spread_of(mean, 4).mean)
        .rounded("0.567", spread_of(mean, 11).mean)
        .rounded("0.870", spread_of(mean, 3).mean)
        .rounded("0.973", spread_of(last, 3).mean)
        .rounded("0.913", spread_of(last, 6).mean)
        .rounded("0.790", spread_of(last, 5).mean)
        .rounded("0.637", spread_of(last, 7).mean);
    let exact_of = |m: LengthModel| -> Vec<f64> {
        models.iter().filter(|r| r.model == m).map(|r| r.exact).collect()
    };
    let range =
        |v: &[f64]| (v.iter().cloned().fold(1.0, f64::min), v.iter().cloned().fold(0.0, f64::max));
    let (lo, hi) = range(&exact_of(last));
    b.rounded("0.745", lo).rounded("0.799", hi);
    let (lo, hi) = range(&exact_of(mean));
    b.rounded("0.745", lo).rounded("0.752", hi);
    // The final losses: the GRU that hands on its last state, and the two
    // models with attention.
    let losses_of = |m: LengthModel| -> Vec<f64> {
        models.iter().filter(|r| r.model == m).map(|r| r.final_loss).collect()
    };
    let (lo, hi) = range(&losses_of(last));
    b.rounded("0.064", lo).rounded("0.076", hi);
    let attending_losses: Vec<f64> = attending.iter().flat_map(|&m| losses_of(m)).collect();
    let (lo, hi) = range(&attending_losses);
    b.rounded("0.0001", lo).rounded("0.0011", hi);
    // The same test on the training pairs: every model and seed, 600 pairs
    // a length.
    let fit = read_train_lengths().unwrap();
    assert_eq!(fit.len(), rows.len());
    assert!(fit.iter().all(|r| r.pairs == TRAIN_PER_LENGTH));
    b.quoted(&length_table(&fit));
    let fit_of = |m, l| spread(&fit, m, l, exact_share);
    let fit_lowest =
        fit.iter().filter(|r| attending.contains(&r.model)).map(exact_share).fold(1.0, f64::min);
    b.rounded("0.998", fit_lowest);
    b.claim("translate every training bucket exactly or\nnearly", fit_lowest >= 0.998);
    b.claim(
        "fall with length on the very pairs they were trained on",
        [last, mean].iter().all(|&m| fit_of(m, 11).mean < fit_of(m, 3).mean.min(fit_of(m, 4).mean)),
    );
    b.rounded("0.991", fit_of(last, 3).mean)
        .rounded("0.722", fit_of(last, 11).mean)
        .rounded("0.956", fit_of(mean, 3).mean)
        .rounded("0.735", fit_of(mean, 11).mean);
    b.claim(
        "On new sources they\nfall further",
        [last, mean].iter().all(|&m| spread_of(m, 11).mean < fit_of(m, 11).mean),
    );
    b.rounded("0.430", spread_of(last, 11).mean).rounded("0.567", spread_of(mean, 11).mean);
    // What each misses at 11 words: 1 − fit (not fitted) plus fit − held-out (the gap).
    let unfit = |m| 1.0 - fit_of(m, 11).mean;
    let gap = |m| fit_of(m, 11).mean - spread_of(m, 11).mean;
    b.rounded("0.278", unfit(last)).rounded("0.292", gap(last));
    b.rounded("0.265", unfit(mean)).rounded("0.168", gap(mean));
    let half_or_more = |m| unfit(m) / (unfit(m) + gap(m));
    b.claim(
        "about half of the GRU's shortfall",
        (half_or_more(last) - 0.5).abs() < 0.05 && half_or_more(mean) > 0.5,
    );
    b.claim(
        "the two are level",
        spread(&fit, mean, 11, exact_share).low <= spread(&fit, last, 11, exact_share).high
            && gap(mean) < gap(last),
    );
    // Both fall with length: every seed lower at 11 words than at 4, and
    // lower at 9 and 11 than at 3 and 4.
    let mut zigzag_in_every_seed = true;
    for m in [last, mean] {
        for &seed in &SEEDS {
            let at = |l: usize| {
                exact_share(
                    rows.iter().find(|r| r.model == m && r.seed == seed && r.length == l).unwrap(),
                )
            };
            assert!(at(11).max(at(9)) < at(3).min(at(4)), "{m:?} seed {seed} falls with length");
            // The zigzag, in every seed: 6 and 8 above 5, 7 and 9.
            zigzag_in_every_seed &= at(6).min(at(8)) > at(5).max(at(7)).max(at(9));
        }
    }
    b.claim(
        "both fixed-size models translate sources of 6 and 8 words better than\n\
         those of 5, 7 and 9, in every initialisation",
        zigzag_in_every_seed,
    );
    b.claim(
        "the mean is worse on the shortest sources (0.870 at 3 words,\nagainst 0.973) and better on the longest",
        spread_of(mean, 3).mean < spread_of(last, 3).mean
            && spread_of(mean, 11).mean > spread_of(last, 11).mean,
    );
    // The alignment scores: the GRU's attention over its three seeds, the
    // Transformer's best head over its three.
    let alignment_of = |m: LengthModel| -> Vec<f64> {
        models.iter().filter(|r| r.model == m).map(|r| r.alignment).collect()
    };
    let (chance, diagonal) = report::ch13::alignment_baselines(&held_out).unwrap();
    b.rounded("0.166", chance).rounded("0.461", diagonal);
    let gru_scores = alignment_of(LengthModel::GruAttention);
    b.learned(
        "its attention is alignment-like, from 0.654 to 0.726",
        Evidence::Runs { values: &gru_scores, lowest: "0.654", highest: "0.726" },
    );
    assert!(gru_scores.iter().all(|&s| s > diagonal), "alignment-like: above the diagonal");
    let within = |v: &[f64], w: &[f64]| {
        let lo = |x: &[f64]| x.iter().cloned().fold(1.0, f64::min);
        let hi = |x: &[f64]| x.iter().cloned().fold(0.0, f64::max);
        lo(w) <= lo(v) && hi(v) <= hi(w)
    };
    let head_scores = alignment_of(LengthModel::Transformer);
    b.learned(
        "ranges from 0.544 to 0.830 over its three",
        Evidence::Runs { values: &head_scores, lowest: "0.544", highest: "0.830" },
    );
    b.claim(
        "so on these data the two kinds of attention align about as well",
        within(&gru_scores, &head_scores) && gru_scores.iter().all(|&g| g > diagonal),
    );

    // Figure 13.5, one initialisation: four of six digits on the word that
    // names them, the 4 and the 2 on the "and" after their word.
    let (book_held_out, _) = book_pairs().unwrap();
    let shown = book_held_out.iter().find(|p| p.source.len() >= 10).unwrap();
    assert!(!train.iter().any(|p| p.number == shown.number), "the shown number is held out");
    let w = gru_attention(&gru, shown).unwrap().unwrap();
    let gold = alignment(shown.number).unwrap();
    let most = |i: usize| {
        let row = w.row(i);
        (0..row.len()).fold(0, |m, j| if row[j] > row[m] { j } else { m })
    };
    let named = (0..gold.len()).filter(|&i| gold[i] == Some(most(i))).count();
    let words = number_words(shown.number).unwrap();
    b.learned(
        "In this run, four of its six digits look hardest at the word that",
        Evidence::OneRun,
    );
    b.claim(
        "four of its six digits look hardest at the word that\nnames them",
        named == 4 && gold.len() == 6,
    );
    // The other two, one word late: the 4 (named by word 2, "four") and
    // the 2 (word 8, "two") look at the "and" after each.
    let late = [(2, 2), (5, 8)].iter().all(|&(digit, word)| {
        gold[digit] == Some(word) && most(digit) == word + 1 && words[word + 1] == "and"
    });
    b.claim(
        "the `4` and the `2` look at\nthe \"and\" after \"four\" and after \"two\"",
        late && words[2] == "four" && words[8] == "two",
    );
    b.claim(
        "nearly every digit's row is one bright cell",
        (0..gold.len()).all(|i| w[[i, most(i)]] > 0.5),
    );
}

/// Binds the summarisation section: ROUGE's worked example, the task, the
/// training log, the scores and the attention's spread.
fn summarisation(b: &mut Bindings) {
    use attn::translation::{translate, RUN_LENGTHS};
    use report::ch13_summary::*;
    b.quoted(&rouge_example().unwrap());
    let (held_out, train) = summary_pairs().unwrap();
    assert!(held_out.iter().all(|p| !train.contains(p)));
    let net = Seq2Seq::from_text(&data("ch13-summary-weights.txt")).unwrap();
    assert_eq!(net.config(), summary_config());
    let shown = &held_out[0];
    let candidate = translate(&net, &shown.source, 1).unwrap();
    b.quoted(&format!(
        "{} training pairs, {} held-out pairs (none in both)\n{}",
        train.len(),
        held_out.len(),
        summary_example(shown, &candidate)
    ));
    b.claim(
        "a source of 2 to 5 runs of one colour word, each run 3 to 7 words\nlong",
        SUMMARY_RUNS == (2..6) && RUN_LENGTHS == (3..8),
    );
    b.exact("2", SUMMARY_RUNS.start as f64)
        .exact("5", (SUMMARY_RUNS.end - 1) as f64)
        .exact("3", RUN_LENGTHS.start as f64)
        .exact("7", (RUN_LENGTHS.end - 1) as f64);

    // The log, whose first seed is the saved model.
    let log = data("ch13-summary-train-log.txt");
    let p = report::provenance::Provenance::parse("ch13-summary-train-log.txt", &log).unwrap();
    assert_eq!(p.statistic, "one run", "the log names its run: {}", p.line);
    b.quoted(log.trim_end());
    let rows = read_summary().unwrap();
    assert_eq!(rows.iter().map(|r| r.seed).collect::<Vec<_>>(), SUMMARY_SEEDS);
    b.quoted(&summary_report(&rows));
    let (exact, rouge) = summary_scores(&net, &held_out).unwrap();
    assert!((exact - rows[0].exact).abs() < 0.01, "{exact} vs {}", rows[0].exact);
    assert!((rouge.one.f1 - rows[0].rouge[0]).abs() < 0.01);
    let exacts: Vec<f64> = rows.iter().map(|r| r.exact).collect();
    b.learned(
        "the initialisations differ on it, from 0.828\nto 0.922",
        Evidence::Runs { values: &exacts, lowest: "0.828", highest: "0.922" },
    );
    let rouge_1 = rows.iter().map(|r| r.rouge[0]).fold(1.0, f64::min);
    b.rounded("0.970", rouge_1);
    b.claim("ROUGE-1 is at least 0.970 for every seed", rows.iter().all(|r| r.rouge[0] >= 0.9695));
    b.claim(
        "a summary with one token wrong still shares most of its words",
        rows.iter().all(|r| r.rouge[0] > r.exact),
    );

    // The spread.
    let spread = read_spread().unwrap();
    b.quoted(&spread_table(&spread));
    spread_claims(b, &spread);
}

/// What the text says of the summariser's spread: the entropy over the
/// source and inside the run grow with the run in every seed, the latter
/// below `ln L`, and the share on the run varies between the seeds.
fn spread_claims(b: &mut Bindings, spread: &[report::ch13_summary::SpreadRow]) {
    use report::ch13_summary::{KINDS, SUMMARY_SEEDS};
    let grows = |value: fn(&report::ch13_summary::SpreadRow) -> f64| {
        SUMMARY_SEEDS.iter().all(|&seed| {
            (0..KINDS.len()).all(|kind| {
                let values: Vec<f64> =
                    spread.iter().filter(|r| r.seed == seed && r.kind == kind).map(value).collect();
                values.len() == 5 && values.windows(2).all(|w| w[1] > w[0])
            })
        })
    };
    b.claim(
        "In every seed, the entropy of both kinds of token grows with the length\nof the run",
        grows(|r| r.entropy),
    );
    b.claim("and it too grows with the run's length in every seed", grows(|r| r.in_run_entropy));
    let below = spread.iter().all(|r| r.in_run_entropy < (r.span as f64).ln());
    b.claim("their entropy is below $\\ln L$ at every\nlength", below);
    b.claim("below ln L at every length but growing with it", below && grows(|r| r.in_run_entropy));
    b.claim("grows with the run's length, as the dashed curve of ln L does", grows(|r| r.entropy));
    let range_at = |span: usize, value: fn(&report::ch13_summary::SpreadRow) -> f64| {
        spread
            .iter()
            .filter(|r| r.span == span)
            .map(value)
            .fold((9.0_f64, 0.0_f64), |(lo, hi), v| (lo.min(v), hi.max(v)))
    };
    let ((lo3, hi3), (lo7, hi7)) = (range_at(3, |r| r.entropy), range_at(7, |r| r.entropy));
    b.rounded("1.19", lo3).rounded("1.60", hi3).rounded("1.80", lo7).rounded("2.11", hi7);
    let ((lo3, hi3), (lo7, hi7)) =
        (range_at(3, |r| r.in_run_entropy), range_at(7, |r| r.in_run_entropy));
    b.rounded("0.51", lo3).rounded("0.94", hi3).rounded("1.40", lo7).rounded("1.80", hi7);
    b.rounded("1.10", 3f64.ln()).rounded("1.95", 7f64.ln());
    let (lo, hi) = spread
        .iter()
        .fold((1.0_f64, 0.0_f64), |(lo, hi), r| (lo.min(r.in_span), hi.max(r.in_span)));
    b.rounded("0.25", lo).rounded("0.96", hi);
    // Counts and colours: the largest difference on any measure.
    let differ = spread
        .iter()
        .filter(|r| r.kind == 0)
        .map(|c| {
            let colour = spread
                .iter()
                .find(|r| r.kind == 1 && r.seed == c.seed && r.span == c.span)
                .unwrap();
            [
                c.entropy - colour.entropy,
                c.in_span - colour.in_span,
                c.in_run_entropy - colour.in_run_entropy,
            ]
            .iter()
            .fold(0.0_f64, |m, d| m.max(d.abs()))
        })
        .fold(0.0, f64::max);
    b.at_most("0.16", differ);
    let seed_in_span = |seed: u64| -> f64 {
        let of: Vec<f64> = spread.iter().filter(|r| r.seed == seed).map(|r| r.in_span).collect();
        of.iter().sum::<f64>() / of.len() as f64
    };
    let means: Vec<f64> = SUMMARY_SEEDS.iter().map(|&s| seed_in_span(s)).collect();
    let (lo, hi) = means.iter().fold((1.0_f64, 0.0_f64), |(l, h), &m| (l.min(m), h.max(m)));
    b.claim(
        "the three initialisations agree on\nthat and differ on how much of the weight stays in the run",
        grows(|r| r.in_run_entropy) && hi - lo > 0.2,
    );
    // Figure 13.6 (one initialisation, one source): no row on one cell.
    let (held_out, _) = report::ch13_summary::summary_pairs().unwrap();
    let net = Seq2Seq::from_text(&data("ch13-summary-weights.txt")).unwrap();
    let shown = &held_out[0];
    let one = attn::translation::batch(&[(&shown.source[..], &shown.target[..])]).unwrap();
    let fwd = net.forward(&one).unwrap();
    let layer = report::ch13_summary::MEASURED_LAYER;
    let largest = (0..net.config().heads)
        .map(|h| fwd.cross_weights(layer, 0, h).unwrap().fold(0.0_f64, |m, &x| m.max(x)))
        .fold(0.0, f64::max);
    b.claim(
        "In every head each token's weight is spread over several neighbouring words rather than put on one cell",
        largest < 0.7 && shown.source.len() == 10,
    );
    b.exact("10", shown.source.len() as f64);
}

/// Figures the page repeats in another section than the one that binds
/// them: each section that repeats one says so with `again`.
fn repeats(b: &mut Bindings) {
    b.section("The model").again("4");
    b.section("What attention learned").again("9").again("11");
    b.section("The bottleneck, measured").again("32");
    b.section("A second task: summarising").again("0.99");
    b.section("Exercises").again("0.54").again("32");
    b.section("Quiz").again("0.986").again("0.978");
    b.section("");
}

/// The counts of runs, seeds and models that the chapter writes as words,
/// each from the code or data it counts.
fn counts_of_evidence(b: &mut Bindings) {
    use report::ch13_lengths::{LengthModel, SEEDS};
    use report::ch13_summary::SUMMARY_SEEDS;
    let seeds = SEEDS.len() as f64;
    let models = LengthModel::ALL.len() as f64;
    let runs =
        report::numbers::number_in_source("examples/ch13_translation_train.rs", "RUNS", "; ");
    let sweep = report::ch13::seeds().unwrap().len() as f64;
    let attending = [LengthModel::GruAttention, LengthModel::Transformer];
    let recurrent = [LengthModel::Gru, LengthModel::GruAttention];
    let fixed_size = LengthModel::ALL.iter().filter(|m| !attending.contains(m)).count() as f64;
    b.section("Attention learns to align").exact("three", seeds);
    b.section("Training").exact("three", runs).exact("twelve", models * seeds);
    b.section("Decoding and scoring").exact("five", sweep);
    b.section("What attention learned").exact("five", sweep);
    b.section("The bottleneck, measured")
        .exact("four", models)
        .exact("two", recurrent.len() as f64)
        .exact("three", seeds)
        .exact("twelve", models * seeds)
        .exact("two", attending.len() as f64)
        .exact("two", fixed_size);
    b.section("A second task: summarising").exact("three", SUMMARY_SEEDS.len() as f64);
    // Exercise 4's test decodes with the untrained models of seeds 0..3.
    let untrained = report::numbers::number_in_source(
        "src/exercises/ch13.rs",
        "the_loop_decodes_what_a_beam_of_one_decodes",
        "for seed in 0..",
    );
    b.section("Exercises").exact("three", untrained);
    b.section("Quiz").exact("two", fixed_size);
    b.section("");
}
