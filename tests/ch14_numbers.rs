//! Chapter 14 quotes the output of `cargo run --example ch14_lengths` and
//! `cargo run --example ch14_summary`, which read the committed results,
//! and the logs of `cargo xtask train ch14`; these tests recompute the
//! output from the same files, check the logs against the saved results,
//! and bind every number the chapter shows.

use attn::translation::{
    alignment, book_pairs, number_words, rnn_alignment_score, RnnSeq2Seq, Seq2Seq,
    BOOK_SEQ2SEQ_TRAINING,
};

mod common;

use report::numbers::{Bindings, Evidence};

const CHAPTER: &str = "ch14-the-bottleneck-measured.md";

fn data(name: &str) -> String {
    report::measurements::data_file(name).unwrap()
}

/// Every number the chapter shows is bound: quoted output, or a value
/// registered here with its check, or exempt (`tests/common/numbers.rs`).
#[test]
fn every_number_is_bound() {
    let mut b = Bindings::new(CHAPTER);
    lengths_log(&mut b);
    book_data(&mut b);
    length_experiment(&mut b);
    summarisation(&mut b);
    exercises(&mut b);
    repeats(&mut b);
    counts_of_evidence(&mut b);
    b.assert_all_bound();
}

/// Chapter 13's data, which the balanced data are set against: its few
/// short sources, on which all of its model's errors fall.
fn book_data(b: &mut Bindings) {
    let (held_out, train) = book_pairs().unwrap();
    let net = Seq2Seq::from_text(&data("ch13-attention-weights.txt")).unwrap();
    let errors_only_below_3 = held_out.iter().all(|p| {
        p.source.len() <= 2 || attn::translation::translate(&net, &p.source, 1).unwrap() == p.target
    });
    b.claim("makes all of its errors on those short sentences", errors_only_below_3);
    let of_length = |n: usize| train.iter().filter(|p| p.source.len() == n).count();
    b.claim(
        "of its 5000\npairs, 10 have one word and 10 have two",
        train.len() == 5000 && of_length(1) == 10 && of_length(2) == 10,
    );
    b.exact("5000", train.len() as f64).exact("10", of_length(1) as f64);
    // Chapter 13's Figure 13.2, which the summariser's spread is set against.
    let shown = held_out.iter().find(|p| p.source.len() >= 10).unwrap();
    let w = &report::ch13::cross_attention(&net, shown).unwrap()[1][0];
    b.section("Attention over spans").rounded("0.99", w[[0, 0]]);
    b.section("");
}

/// The length experiment's log, as `cargo xtask train ch14-lengths` wrote
/// it: each model's held-out score is its row's in the committed results.
fn lengths_log(b: &mut Bindings) {
    use report::ch14_lengths::read_models;
    let log = data("ch14-lengths-train-log.txt");
    let p = report::provenance::Provenance::parse("ch14-lengths-train-log.txt", &log).unwrap();
    assert_eq!(p.statistic, "one run", "the log names its run: {}", p.line);
    b.quoted(log.trim_end());
    for m in read_models().unwrap() {
        let line = format!("{} seed {}: {} parameters", m.model.name(), m.seed, m.parameters);
        let ends = format!("held-out exact {:.3}", m.exact);
        assert!(
            log.lines().any(|l| l.starts_with(&line) && l.ends_with(&ends)),
            "the log has no line for {line} … {ends}"
        );
    }
    let t = BOOK_SEQ2SEQ_TRAINING;
    b.section("Four models, one budget").exact("1500", t.steps as f64).exact("32", t.batch as f64);
    b.section("");
}

/// Binds the length experiment's section: its data, the tables the example
/// prints from the committed rows, and what the text says of them.
fn length_experiment(b: &mut Bindings) {
    use report::ch14_lengths::*;
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
    let gru = RnnSeq2Seq::from_text(&data("ch14-gru-attention-weights.txt")).unwrap();
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

    // Figure 14.2, one initialisation: four of six digits on the word that
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
    b.section("What the recurrent attention learned");
    b.quoted(&report::ch13::digits(&shown.target));
    b.exact("11", shown.source.len() as f64).exact("4", (shown.target[2] - 3) as f64);
    b.section("");
    b.claim(
        "nearly every digit's row is one bright cell",
        (0..gold.len()).all(|i| w[[i, most(i)]] > 0.5),
    );
}

/// Binds the summarisation section: ROUGE's worked example, the task, the
/// training log, the scores and the attention's spread.
fn summarisation(b: &mut Bindings) {
    use attn::translation::{translate, RUN_LENGTHS};
    use report::ch14_summary::*;
    b.quoted(&rouge_example().unwrap());
    let (held_out, train) = summary_pairs().unwrap();
    assert!(held_out.iter().all(|p| !train.contains(p)));
    let net = Seq2Seq::from_text(&data("ch14-summary-weights.txt")).unwrap();
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
    let log = data("ch14-summary-train-log.txt");
    let p = report::provenance::Provenance::parse("ch14-summary-train-log.txt", &log).unwrap();
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
fn spread_claims(b: &mut Bindings, spread: &[report::ch14_summary::SpreadRow]) {
    use report::ch14_summary::{KINDS, SUMMARY_SEEDS};
    let grows = |value: fn(&report::ch14_summary::SpreadRow) -> f64| {
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
    let range_at = |span: usize, value: fn(&report::ch14_summary::SpreadRow) -> f64| {
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
    // Figure 14.3 (one initialisation, one source): no row on one cell.
    let (held_out, _) = report::ch14_summary::summary_pairs().unwrap();
    let net = Seq2Seq::from_text(&data("ch14-summary-weights.txt")).unwrap();
    let shown = &held_out[0];
    let one = attn::translation::batch(&[(&shown.source[..], &shown.target[..])]).unwrap();
    let fwd = net.forward(&one).unwrap();
    let layer = report::ch14_summary::MEASURED_LAYER;
    let largest = (0..net.config().heads)
        .map(|h| fwd.cross_weights(layer, 0, h).unwrap().fold(0.0_f64, |m, &x| m.max(x)))
        .fold(0.0, f64::max);
    b.claim(
        "In every head each token's weight is spread over several neighbouring words rather than put on one cell",
        largest < 0.7 && shown.source.len() == 10,
    );
    b.exact("10", shown.source.len() as f64);
}

/// The exercises' numbers: the shapes of exercise 1 and the zigzag of
/// exercise 3, which the accuracy section binds.
fn exercises(b: &mut Bindings) {
    use attn::exercises::ch14::gru_step;
    use ndarray::Array2;
    b.section("Exercises").again("6").again("8").again("5").again("7").again("9");
    let (x, h) = (Array2::from_elem((2, 3), 0.7), Array2::from_elem((2, 4), -0.4));
    let zeros = |rows, cols| Array2::<f64>::zeros((rows, cols));
    let next = gru_step(&x, &h, &zeros(3, 12), &zeros(4, 12), &zeros(1, 12)).unwrap();
    b.claim("with every weight 0 the state\nhalves", next == &h / 2.0);
    b.section("");
}

/// Figures the page repeats in another section than the one that binds
/// them: each section that repeats one says so with `again`.
fn repeats(b: &mut Bindings) {
    b.section("Quiz").again("11").again("0.278").again("0.292");
    b.section("");
}

/// The counts of runs, seeds and models that the chapter writes as words,
/// each from the code or data it counts.
fn counts_of_evidence(b: &mut Bindings) {
    use report::ch14_lengths::{LengthModel, SEEDS};
    use report::ch14_summary::SUMMARY_SEEDS;
    let seeds = SEEDS.len() as f64;
    let models = LengthModel::ALL.len() as f64;
    let attending = [LengthModel::GruAttention, LengthModel::Transformer];
    let recurrent = [LengthModel::Gru, LengthModel::GruAttention];
    let fixed_size = LengthModel::ALL.iter().filter(|m| !attending.contains(m)).count() as f64;
    b.section("The bottleneck, measured").exact("three", seeds);
    b.section("Four models, one budget").exact("four", models);
    b.section("The recurrent models").exact("two", recurrent.len() as f64);
    let longest = report::ch14_lengths::LENGTHS.iter().max().copied().unwrap_or(0);
    b.exact("11", longest as f64);
    b.section("Data balanced by length").exact("two", fixed_size);
    b.section("Accuracy by length").exact("four", models);
    b.section("What the recurrent attention learned").exact("three", seeds);
    b.section("Data balanced by length").exact("three", seeds);
    b.section("Accuracy by length")
        .exact("twelve", models * seeds)
        .exact("two", attending.len() as f64)
        .exact("two", fixed_size)
        .exact("three", seeds);
    b.section("A second task: summarising").exact("three", SUMMARY_SEEDS.len() as f64);
    b.section("Quiz").exact("two", fixed_size);
    b.section("");
}
