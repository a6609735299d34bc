//! Chapter 16's section "Looking for induction heads": the positive
//! control (its committed logs, ablation and weights of seed 1) and the
//! book's model, every number bound at its place.

use attn::lm::{induction_scores, Corpus, SHAKESPEARE_TRAINING};
use report::ch16::{control_heads, control_log, corpus_dir, HeadLine, REPEATS};
use report::ch16_control::{
    ablation, control_ablation, control_ablation_report, control_figure_head, control_model,
    control_report, copying_step, corpus_probe_report, corpus_repeats, flagged, largest,
    CONTROL_MODEL, CONTROL_SEEDS, CONTROL_TRAINING, FLAG, OTHER_HALF,
};
use report::ch16_report::{
    ablation_report, induction_table, top_heads, uniform_scores, verse_losses, verse_report,
    INDUCTION_VERSE,
};
use report::numbers::{Bindings, Evidence};

use super::{max, min, Data};

pub(crate) fn induction(b: &mut Bindings, d: &Data) {
    b.section("Looking for induction heads");
    let (_, count, half) = REPEATS;
    assert_eq!(2 * half, d.c.context, "each read twice: the context");
    b.exact("24", count as f64).exact("32", half as f64).exact("64", d.c.context as f64);
    control_section(b, d);
    book_model_section(b, d);
}

/// The scores of `seed`'s heads of `block` (from 0) at `step`.
fn scores(
    heads: &[HeadLine],
    seed: u64,
    step: usize,
    block: usize,
    f: fn(&HeadLine) -> f64,
) -> Vec<f64> {
    heads.iter().filter(|h| h.seed == seed && h.step == step && h.block == block).map(f).collect()
}

fn control_section(b: &mut Bindings, d: &Data) {
    b.section("A model that has to copy");
    let c = CONTROL_MODEL;
    let (log, heads) = (control_log().unwrap(), control_heads().unwrap());
    let steps = CONTROL_TRAINING.steps;
    b.exact("2", c.layers as f64)
        .exact("64", c.d_model as f64)
        .exact("256", c.d_ff as f64)
        .exact("3,000", steps as f64)
        .exact("4", (c.context / 16) as f64)
        .exact("32", (c.context / 2) as f64)
        .exact("64", c.context as f64);
    assert_eq!((c.vocab, c.heads, c.context), (d.c.vocab, d.c.heads, d.c.context));
    b.exact("50", CONTROL_TRAINING.log_every as f64)
        .exact("24", REPEATS.1 as f64)
        .exact("three", CONTROL_SEEDS.len() as f64);
    b.quoted(&control_report(&log, &heads));
    let seeds = CONTROL_SEEDS;
    let first = CONTROL_TRAINING.log_every;
    let at =
        |seed: u64, step: usize| log.iter().find(|l| l.seed == seed && l.step == step).unwrap();
    let top = |seed: u64, step: usize, block: usize, f: fn(&HeadLine) -> f64| {
        largest(&heads, seed, step, block, f)
    };
    let over_seeds = |f: &dyn Fn(u64) -> f64| seeds.iter().map(|&s| f(s)).collect::<Vec<f64>>();
    // Figure 16.2's alt text.
    let end_repeat = over_seeds(&|s| at(s, steps).repeat_loss);
    let first_halves: Vec<f64> = log.iter().map(|l| l.first_half_loss).collect();
    b.rounded("4.4", min(&first_halves)).rounded("5.2", max(&first_halves));
    b.claim(
        "falls steeply",
        seeds.iter().all(|&s| at(s, steps).repeat_loss < at(s, first).repeat_loss / 2.0),
    );
    b.rounded("0.5", min(&end_repeat))
        .rounded("1.8", max(&end_repeat))
        .exact("3,000", steps as f64);
    let previous_start = over_seeds(&|s| top(s, first, 0, |h| h.previous_token));
    let prefix_start = over_seeds(&|s| top(s, first, 1, |h| h.prefix_matching));
    let previous_end = over_seeds(&|s| top(s, steps, 0, |h| h.previous_token));
    let prefix_end = over_seeds(&|s| top(s, steps, 1, |h| h.prefix_matching));
    // The largest previous-token score of any head is block 1's.
    assert!(
        seeds
            .iter()
            .all(|&s| top(s, steps, 0, |h| h.previous_token)
                >= top(s, steps, 1, |h| h.previous_token))
    );
    b.rounded("0.06", min(&previous_start)).rounded("0.06", max(&previous_start));
    b.rounded("0.02", min(&prefix_start)).rounded("0.02", max(&prefix_start));
    b.claim(
        "rise together",
        (0..3).all(|i| {
            previous_end[i] > 5.0 * previous_start[i] && prefix_end[i] > 5.0 * prefix_start[i]
        }),
    );
    b.rounded("0.36", min(&previous_end)).rounded("0.46", max(&previous_end));
    b.rounded("0.56", min(&prefix_end)).rounded("0.70", max(&prefix_end));
    // Its caption.
    b.exact("two", c.layers as f64);
    // The paragraph.
    b.claim(
        "the loss on the repeat falls",
        seeds.iter().all(|&s| at(s, steps).repeat_loss < at(s, first).repeat_loss),
    );
    let copying: Vec<f64> = seeds.iter().map(|&s| copying_step(&log, s).unwrap() as f64).collect();
    b.claim(
        "most slowly in seed 3",
        copying[2] >= max(&copying[..2]) && end_repeat[2] == max(&end_repeat),
    );
    b.rounded("1.79", end_repeat[2]).exact("3,000", steps as f64);
    b.claim("first\nfalls below half", copying.iter().all(|&s| s > first as f64));
    b.exact("1,250", copying[0]).exact("1,250", copying[1]).exact("1,400", copying[2]);
    b.exact("3,000", steps as f64);
    let final_scores = |s: u64| {
        let mut p = ndarray::Array2::zeros((c.layers, c.heads));
        let mut q = ndarray::Array2::zeros((c.layers, c.heads));
        for h in heads.iter().filter(|h| h.seed == s && h.step == steps) {
            p[[h.block, h.head]] = h.prefix_matching;
            q[[h.block, h.head]] = h.previous_token;
        }
        attn::lm::InductionScores {
            first_half_loss: 0.0,
            repeat_loss: 0.0,
            prefix_matching: p,
            previous_token: q,
        }
    };
    let half = half_of(c.context);
    let flags: Vec<_> = seeds.iter().map(|&s| flagged(&final_scores(s), half)).collect();
    assert!(flags.iter().all(|(prev, prefix)| prev.len() == 2
        && prev.iter().all(|h| h.0 == 0)
        && prefix.len() == c.heads
        && prefix.iter().all(|h| h.0 == 1)));
    let score_of = |s: u64, bl: usize, hd: usize| {
        heads
            .iter()
            .find(|h| h.seed == s && h.step == steps && h.block == bl && h.head == hd)
            .unwrap()
    };
    let flagged_previous: Vec<f64> = seeds
        .iter()
        .zip(&flags)
        .flat_map(|(&s, (prev, _))| prev.iter().map(move |&(bl, hd)| (s, bl, hd)))
        .map(|(s, bl, hd)| score_of(s, bl, hd).previous_token)
        .collect();
    b.rounded("0.34", min(&flagged_previous)).rounded("0.46", max(&flagged_previous));
    let block2: Vec<f64> =
        seeds.iter().flat_map(|&s| scores(&heads, s, steps, 1, |h| h.prefix_matching)).collect();
    b.rounded("0.53", min(&block2)).rounded("0.70", max(&block2));
    let (uniform_previous, uniform_prefix) = uniform_scores(half);
    b.rounded("0.059", uniform_previous).rounded("0.021", uniform_prefix);
    b.exact("5", FLAG);
    b.claim(
        "no head of block 1 reaches it",
        seeds.iter().all(|&s| top(s, steps, 0, |h| h.prefix_matching) < FLAG * uniform_prefix),
    );
    // The ablation.
    let rows = control_ablation().unwrap();
    let model = control_model().unwrap();
    // The committed file is what the committed weights give (seed 1).
    let again = ablation(&model, 1).unwrap();
    for (a, r) in again.iter().zip(rows.iter().filter(|r| r.seed == 1)) {
        assert_eq!((&a.removed, &a.heads), (&r.removed, &r.heads));
        for (x, y) in [(a.repeat_loss, r.repeat_loss), (a.first_half_loss, r.first_half_loss)] {
            assert!((x - y).abs() < 1e-4, "{x} vs {y}");
        }
        assert!(a.prefix_after.is_nan() == r.prefix_after.is_nan());
    }
    let pick = |removed: &str| -> Vec<&report::ch16_control::Ablation> {
        seeds
            .iter()
            .map(|&s| rows.iter().find(|r| r.seed == s && r.removed == removed).unwrap())
            .collect()
    };
    let (none, previous, others, prefix, alone) = (
        pick("none"),
        pick("previous-token heads of block 1"),
        pick("the other heads of block 1"),
        pick("prefix-matching heads of block 2"),
        pick("the strongest of those alone"),
    );
    assert!(previous.iter().chain(&others).all(|r| r.heads.len() == 2));
    b.claim(
        "the loss on\nthe repeat rises from",
        (0..3).all(|i| previous[i].repeat_loss > none[i].repeat_loss),
    );
    b.rounded("0.48", none[0].repeat_loss)
        .rounded("0.83", none[1].repeat_loss)
        .rounded("1.79", none[2].repeat_loss);
    b.rounded("5.03", previous[0].repeat_loss)
        .rounded("5.59", previous[1].repeat_loss)
        .rounded("4.41", previous[2].repeat_loss);
    let easier = previous
        .iter()
        .map(|r| r.first_half_loss - r.repeat_loss)
        .fold(f64::NEG_INFINITY, f64::max);
    b.at_most("0.06", easier);
    b.claim("no easier than the first reading", easier <= 0.06);
    let left_without_previous: Vec<f64> = previous.iter().map(|r| r.prefix_after).collect();
    b.claim("stop matching prefixes", max(&left_without_previous) < 2.0 * uniform_prefix);
    b.rounded("0.022", min(&left_without_previous)).rounded("0.038", max(&left_without_previous));
    let other_repeat: Vec<f64> = others.iter().map(|r| r.repeat_loss).collect();
    b.rounded("0.72", min(&other_repeat)).rounded("1.95", max(&other_repeat));
    b.claim(
        "rises only to",
        (0..3).all(|i| {
            other_repeat[i] > none[i].repeat_loss && other_repeat[i] < previous[i].repeat_loss / 2.0
        }),
    );
    let left_without_others: Vec<f64> = others.iter().map(|r| r.prefix_after).collect();
    b.claim("block 2 still matches", min(&left_without_others) > FLAG * uniform_prefix);
    b.rounded("0.597", min(&left_without_others)).rounded("0.756", max(&left_without_others));
    b.claim(
        "the loss on the repeat rises to",
        (0..3).all(|i| prefix[i].repeat_loss > none[i].repeat_loss),
    );
    let prefix_repeat: Vec<f64> = prefix.iter().map(|r| r.repeat_loss).collect();
    b.rounded("5.25", min(&prefix_repeat)).rounded("5.26", max(&prefix_repeat));
    let rise = (0..3)
        .map(|i| alone[i].repeat_loss - none[i].repeat_loss)
        .fold(f64::NEG_INFINITY, f64::max);
    b.at_most("0.13", rise);
    b.exact("three", (c.heads - alone[0].heads.len()) as f64);
    b.claim(
        "the three left still\ndo the work",
        prefix.iter().all(|r| r.heads.len() == c.heads) && rise < 0.2,
    );
    b.quoted(&control_ablation_report(&rows, &model).unwrap());
    // The paragraph after it.
    let back = INDUCTION_VERSE.len() - 1;
    b.exact("31", back as f64);
    let other = other_length_scores(&model);
    b.exact("20", OTHER_HALF as f64);
    b.rounded("0.736", min(&other)).rounded("0.766", max(&other));
    b.rounded("0.034", uniform_scores(OTHER_HALF).1);
    let end_first: Vec<f64> = seeds.iter().map(|&s| at(s, steps).first_half_loss).collect();
    b.value("4.8", (min(&end_first) + max(&end_first)) / 2.0, 0.06);
    b.rounded("4.43", (c.vocab as f64).ln());
    let first_without: Vec<f64> = previous.iter().map(|r| r.first_half_loss).collect();
    b.rounded("4.46", min(&first_without)).rounded("4.50", max(&first_without));
    let verse = verse_losses(&model).unwrap();
    b.exact("32", INDUCTION_VERSE.len() as f64);
    b.rounded("5.370", verse.first_half_loss).rounded("1.637", verse.repeat_loss);
    // Figure 16.3.
    let (block, head) = control_figure_head(&model).unwrap();
    let text = format!("{INDUCTION_VERSE}{INDUCTION_VERSE}");
    let fwd = model.forward(&[report::ch16::vocabulary().encode(&text).unwrap()]).unwrap();
    let w = fwd.weights(block, 0, head).unwrap();
    let on_diagonal = (INDUCTION_VERSE.len()..text.len())
        .filter(|&i| {
            let row = w.row(i);
            (0..row.len()).max_by(|&a, &b| row[a].total_cmp(&row[b])) == Some(i - back)
        })
        .count();
    b.exact("32", INDUCTION_VERSE.len() as f64)
        .exact("64", text.len() as f64)
        .exact("31", back as f64);
    b.claim("Most rows put their largest weight", 2 * on_diagonal > INDUCTION_VERSE.len());
    b.exact("32", INDUCTION_VERSE.len() as f64);
    b.claim("Most characters of the repeat look", 2 * on_diagonal > INDUCTION_VERSE.len());
    b.exact("31", back as f64);
    assert_eq!(block, 1, "the figure's head is in block 2");
}

/// Block 2's prefix-matching scores of the control (seed 1) on halves of
/// [`OTHER_HALF`].
fn other_length_scores(model: &attn::lm::LanguageModel<f32>) -> Vec<f64> {
    let (seed, count, _) = REPEATS;
    let sequences =
        attn::lm::repeated_sequences(seed, count, OTHER_HALF, model.config().vocab).unwrap();
    induction_scores(model, &sequences).unwrap().prefix_matching.row(1).to_vec()
}

fn half_of(context: usize) -> usize {
    context / 2
}

fn book_model_section(b: &mut Bindings, d: &Data) {
    b.section("The book's model");
    let (_, _, half) = REPEATS;
    b.exact("100", SHAKESPEARE_TRAINING.log_every as f64).exact("three", d.finals.len() as f64);
    b.quoted(&induction_table(&d.log));
    b.quoted(&format!(
        "{}\n{}",
        top_heads(&d.heads, INDUCTION_VERSE.len()),
        verse_report(&d.model, &d.heads).unwrap()
    ));
    let last = SHAKESPEARE_TRAINING.steps;
    let first_step = SHAKESPEARE_TRAINING.log_every;
    let last_heads: Vec<&HeadLine> = d.heads.iter().filter(|h| h.step == last).collect();
    let best = |seed: u64, f: fn(&HeadLine) -> f64| {
        last_heads.iter().filter(|h| h.seed == seed).map(|h| f(h)).fold(0.0, f64::max)
    };
    let previous: Vec<f64> = [1, 2, 3].iter().map(|&s| best(s, |h| h.previous_token)).collect();
    let prefix_at = |seed: u64, step: usize| {
        d.heads
            .iter()
            .filter(|h| h.seed == seed && h.step == step && h.block > 0)
            .map(|h| h.prefix_matching)
            .fold(0.0, f64::max)
    };
    let previous_at = |seed: u64, step: usize| {
        d.heads
            .iter()
            .filter(|h| h.seed == seed && h.step == step)
            .map(|h| h.previous_token)
            .fold(0.0, f64::max)
    };
    let prefix: Vec<f64> = [1, 2, 3].iter().map(|&s| prefix_at(s, last)).collect();
    let prefix_first: Vec<f64> = [1, 2, 3].iter().map(|&s| prefix_at(s, first_step)).collect();
    let previous_first: Vec<f64> = [1, 2, 3].iter().map(|&s| previous_at(s, first_step)).collect();
    let first_half: Vec<f64> = d.log.iter().map(|l| l.first_half_loss).collect();
    let ends: Vec<f64> =
        d.log.iter().filter(|l| l.step == last).map(|l| l.first_half_loss).collect();
    let apart = d.log.iter().map(|l| (l.repeat_loss - l.first_half_loss).abs()).fold(0.0, f64::max);
    let blocks = d.c.layers as f64;

    // Figure 16.2's alt text.
    b.rounded("5.7", first_half[0]).rounded("7.5", min(&ends)).rounded("8.3", max(&ends));
    b.claim("rise together", apart <= 0.2);
    b.claim("never apart", apart <= 0.2);
    b.rounded("0.06", min(&previous_first)).rounded("0.06", max(&previous_first));
    b.rounded("0.14", min(&previous)).rounded("0.15", max(&previous));
    b.claim(
        "rises from 0.06 to between 0.14 and 0.15",
        [1, 2, 3].iter().all(|&s| previous_at(s, last) > previous_at(s, first_step)),
    );
    b.exact("4", blocks);
    b.rounded("0.02", min(&prefix_first)).rounded("0.02", max(&prefix_first));
    b.rounded("0.01", max(&prefix));
    b.claim("falls from 0.02 to about 0.01", max(&prefix) < min(&prefix_first));
    // Its caption.
    b.exact("4", blocks);
    // The paragraph.
    b.at_most("0.2", apart);
    b.claim("the loss on the repeat stays within", apart <= 0.2);
    b.exact("4", blocks);
    b.rounded("0.012", min(&prefix)).rounded("0.013", max(&prefix));
    let (uniform_previous, uniform_prefix) = uniform_scores(half);
    b.rounded("0.021", uniform_prefix);
    b.claim("lower than at step 100", (0..3).all(|i| prefix[i] < prefix_first[i]));
    b.claim(
        "the largest\nprevious-token score grows during training",
        [1, 2, 3].iter().all(|&s| previous_at(s, last) > previous_at(s, first_step)),
    );
    b.rounded("0.14", min(&previous)).rounded("0.15", max(&previous));
    b.learned(
        "What the heads learn instead is to look near",
        Evidence::Runs { values: &previous, lowest: "0.14", highest: "0.15" },
    );
    b.rounded("0.059", uniform_previous);
    let verse = verse_report(&d.model, &d.heads).unwrap();
    let on_previous: f64 = verse.lines().next().unwrap()[verse.find(" puts ").unwrap() + 6..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    b.exact("0.316", on_previous);
    let weakest = last_heads.iter().map(|h| h.previous_token).fold(f64::INFINITY, f64::min);
    b.at_least("0.08", weakest);
    b.claim("every head of every run scores\n0.08 or more at step 2,000", weakest >= 0.08);
    // Figure 16.5's alt text and caption.
    let back = (INDUCTION_VERSE.len() - 1) as f64;
    b.exact("32", half as f64)
        .exact("32", half as f64)
        .exact("32", half as f64)
        .exact("63", (d.c.context - 1) as f64)
        .exact("64", d.c.context as f64)
        .exact("32", half as f64)
        .exact("4", blocks)
        .exact("31", back);
    assert_eq!(INDUCTION_VERSE.len(), half);
    b.exact("32", half as f64).exact("4", blocks).exact("31", back);

    // Removing heads (seed 1 only: the one model whose weights are committed).
    let ablation = ablation_report(&d.model, &d.heads).unwrap();
    b.exact("4", blocks);
    b.quoted(&ablation);
    let gaps: Vec<f64> = ablation
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().last().unwrap().parse::<f64>().unwrap())
        .collect();
    b.rounded("0.09", min(&gaps)).rounded("0.13", max(&gaps));
    b.claim("the loss on the repeat stays above the loss on\nthe first reading", min(&gaps) > 0.0);
    b.claim("here there is none to take", max(&prefix) < uniform_prefix);
    corpus_characters(b, d, &ends);
}

/// The same test on characters drawn from the corpus, and on the verse.
fn corpus_characters(b: &mut Bindings, d: &Data, ends: &[f64]) {
    let c = d.c;
    b.exact("84", c.vocab as f64);
    b.rounded("7.5", min(ends)).rounded("8.3", max(ends));
    b.exact("84", c.vocab as f64).rounded("4.43", (c.vocab as f64).ln());
    b.claim(
        "grow as training goes on",
        d.log.iter().filter(|l| l.step == SHAKESPEARE_TRAINING.steps).all(|l| {
            l.first_half_loss
                > d.log
                    .iter()
                    .find(|m| m.seed == l.seed && m.step == SHAKESPEARE_TRAINING.log_every)
                    .unwrap()
                    .first_half_loss
        }),
    );
    let corpus = Corpus::shakespeare(corpus_dir()).unwrap();
    let (seed, count, half) = REPEATS;
    let probes = corpus_repeats(corpus.validation(), seed, count, half);
    b.exact("32", half as f64);
    b.quoted(&corpus_probe_report(&d.model, &probes).unwrap());
    let s = induction_scores(&d.model, &probes).unwrap();
    let (previous, prefix) = flagged(&s, half);
    assert!(prefix.is_empty() && previous.iter().all(|h| h.0 == 0), "{previous:?}");
    assert_eq!(previous.len(), 2, "two heads of block 1");
    b.exact("1", (previous[0].1 + 1) as f64).exact("4", (previous[1].1 + 1) as f64);
    b.exact("4", c.layers as f64);
    b.claim("no head of blocks 2 to 4 matches\nprefixes", prefix.is_empty());
    b.claim("the repeat costs more than the first reading", s.repeat_loss > s.first_half_loss);
    b.exact("32", half as f64);
    // The corpus's splits hold token ids.
    let ids = report::ch16::vocabulary().encode(INDUCTION_VERSE).unwrap();
    let verse: Vec<u8> = ids.iter().map(|&t| t as u8).collect();
    let verse = verse.as_slice();
    let holds = |text: &[u8]| text.windows(verse.len()).any(|w| w == verse);
    // "the Sonnets are in the training split"
    assert!(holds(corpus.train()) && !holds(corpus.validation()), "Sonnet XVIII is trained on");
    let book_verse = verse_losses(&d.model).unwrap();
    b.rounded("1.676", book_verse.first_half_loss).rounded("1.667", book_verse.repeat_loss);
    let control = verse_losses(&control_model().unwrap()).unwrap();
    b.rounded("5.370", control.first_half_loss).rounded("1.637", control.repeat_loss);
    let control_seen = CONTROL_TRAINING.steps * CONTROL_TRAINING.batch * CONTROL_MODEL.context;
    b.rounded("2.3", control_seen as f64 / 1e6);
    let seen = SHAKESPEARE_TRAINING.steps * SHAKESPEARE_TRAINING.batch * c.context;
    b.rounded("1.5", seen as f64 / 1e6);
    b.exact("64", c.context as f64);
}
