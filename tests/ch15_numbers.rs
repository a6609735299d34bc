//! Chapter 15 quotes the output of `cargo run --example ch15_pretrained`,
//! which reads the data `cargo xtask model --data` derived from the
//! pretrained model (`tests/pretrained.rs` derives it again from the model
//! and compares). These tests recompute that output from the same files and
//! bind every number the chapter shows.

use attn::exercises::ch15::{bert_parameters, self_weight};
use report::ch15::{Corpus, TOKENIZER_EXAMPLES};
use report::ch15_data::{read_speeds, Derived};
use report::ch15_report::{
    ablation_report, architecture_report, figure_tokens, layers_report, measured_report,
    positional_heads_report, similarity_report, speed_report, tokens_report,
};

mod common;

use report::numbers::Bindings;

const CHAPTER: &str = "ch15-attention-in-a-trained-model.md";

/// Per layer, the mean over heads of one statistic.
fn layer_means(d: &Derived, f: impl Fn(&attn::pretrained::HeadStatistics) -> f64) -> Vec<f64> {
    d.heads
        .iter()
        .map(|row| row.iter().map(|(s, _)| f(s)).sum::<f64>() / row.len() as f64)
        .collect()
}

#[test]
fn every_number_is_bound() {
    let mut b = Bindings::new(CHAPTER);
    let d = Derived::read().unwrap();
    let corpus = Corpus::read().unwrap();
    let corpus_tokens: Vec<_> =
        d.tokens[TOKENIZER_EXAMPLES.len() + 1..].iter().map(|(_, t)| t.clone()).collect();

    // The model and its architecture.
    b.quoted(&architecture_report(&d));
    // The golden tests' tolerance (tests/pretrained.rs).
    let tolerance = report::numbers::number_in_source("tests/pretrained.rs", "TOLERANCE", "= ");
    b.value("1e-5", tolerance, 1e-12);
    let shape = |name: &str| d.tensors.iter().find(|t| t.0 == name).unwrap().2.clone();
    let [vocabulary, d_model] = shape("embeddings.word_embeddings.weight")[..] else { panic!() };
    let positions = shape("embeddings.position_embeddings.weight")[0];
    let d_ff = shape("encoder.layer.0.intermediate.dense.weight")[0];
    let heads = d.attention[0].shape()[0];
    b.exact("32", (d_model / heads) as f64);
    b.claim(
        "12 heads of $d_k = 32$",
        d.tensors.iter().any(|t| t.2 == [d_model, d_model]) && heads == 12,
    );
    b.exact("6", d.heads.len() as f64);
    b.exact("72", (d.heads.len() * d.heads[0].len()) as f64);
    b.exact("30,522", vocabulary as f64);
    b.value("1e-12", f64::from(d.layer_norm_eps), 1e-18);

    // Tokens.
    b.quoted(&tokens_report(&d.tokens[..1]));
    b.quoted(&tokens_report(&d.tokens[1..2]));
    let figure = figure_tokens(&d).unwrap();
    b.exact("16", figure.ids.len() as f64);

    // The golden tests' sizes (tests/pretrained.rs and tools/minilm_golden.py).
    let golden = common::golden::load("minilm.txt");
    let ids = golden.keys().filter(|k| k.starts_with("ids_")).count();
    let attended = golden.keys().filter(|k| k.ends_with("_layer0_head0")).count();
    assert_eq!(attended, 2, "all 72 heads' weights for two of them");
    b.claim("ids of three sentences", ids == 3);
    b.claim("embeddings of ten corpus sentences", golden["embeddings"].nrows() == 10);

    // Statistics.
    b.quoted(&layers_report(&d, &corpus_tokens));
    b.exact("50", corpus_tokens.len() as f64);
    let cls = layer_means(&d, |s| s.cls);
    let sep = layer_means(&d, |s| s.sep);
    let either: Vec<f64> = cls.iter().zip(&sep).map(|(c, s)| c + s).collect();
    b.claim(
        "in layers 2\nto 5 more than half of all attention goes to `[CLS]` and `[SEP]`",
        either[1..5].iter().all(|&x| x > 0.5),
    );
    b.claim("In this model the sink is mostly `[CLS]`", cls.iter().zip(&sep).all(|(c, s)| c > s));
    b.rounded("0.25", cls[0]).rounded("0.38", cls[5]);
    b.value("0.6", cls[1..5].iter().sum::<f64>() / 4.0, 0.05);
    b.claim("about 0.6 in layers 2 to 5", cls[1..5].iter().all(|&c| (c - 0.6).abs() < 0.07));
    b.at_most("0.1", sep.iter().cloned().fold(0.0, f64::max));
    b.quoted(&positional_heads_report(&d));
    let prev = d.heads[0][2].0.previous;
    b.rounded("1.00", prev);
    b.rounded("0.64", d.heads[1][8].0.next);
    let uniform = report::ch15::uniform_entropy(&corpus_tokens);
    b.claim(
        "Every layer is far more focused than uniform attention",
        layer_means(&d, |s| s.entropy).iter().all(|&e| e < 0.75 * uniform),
    );

    // Ablation.
    b.quoted(&ablation_report(&d));
    b.exact("24", (2 * corpus.pairs.len()) as f64);
    let shift = |l: usize, h: usize| d.heads[l][h].1.shift;
    let last_min = (0..12).map(|h| shift(5, h)).fold(f64::MAX, f64::min);
    let before_max = (0..5)
        .flat_map(|l| (0..12).map(move |h| (l, h)))
        .map(|(l, h)| shift(l, h))
        .fold(0.0, f64::max);
    b.claim(
        "Removing any head of the last layer moves the embeddings more than\nremoving any head before it",
        last_min > before_max,
    );
    b.claim(
        "moves the\nembeddings more than removing any head of layers 1 to 5",
        last_min > before_max,
    );
    b.rounded("0.01", before_max.max(0.0)).rounded("0.011", last_min);
    b.rounded("0.041", (0..12).map(|h| shift(5, h)).fold(0.0, f64::max));
    b.claim("*raises* the paraphrases' similarity", d.heads[5][9].1.similarity_change > 0.0);
    // Quiz 2: the head with the most weight on [CLS] is the one whose removal
    // moves the embeddings least.
    let heads: Vec<(usize, usize)> = (0..6).flat_map(|l| (0..12).map(move |h| (l, h))).collect();
    let most_cls = heads
        .iter()
        .max_by(|a, b| d.heads[a.0][a.1].0.cls.total_cmp(&d.heads[b.0][b.1].0.cls))
        .unwrap();
    let least_shift =
        heads.iter().min_by(|a, b| shift(a.0, a.1).total_cmp(&shift(b.0, b.1))).unwrap();
    b.claim(
        "layer 3 head 10, is the head whose removal",
        *most_cls == (2, 9) && most_cls == least_shift,
    );
    // Across all 72 heads, weight on [CLS] and shift are rank-correlated
    // only weakly (Spearman's ρ, ties given their mean rank).
    let cls_weight: Vec<f64> = heads.iter().map(|&(l, h)| d.heads[l][h].0.cls).collect();
    let shifts: Vec<f64> = heads.iter().map(|&(l, h)| shift(l, h)).collect();
    let rho = rank_correlation(&cls_weight, &shifts);
    b.exact("72", heads.len() as f64).rounded("-0.36", rho);
    b.claim("the relation is weak", rho.abs() < 0.5);
    let mut ranked: Vec<f64> = d.heads.iter().flatten().map(|(_, a)| a.shift).collect();
    ranked.sort_by(|a, b| b.total_cmp(a));
    b.claim("is not among the heads whose removal moves it\nmost", shift(0, 2) < ranked[5]);

    // Similarity.
    b.quoted(&similarity_report(&d, &corpus).unwrap());
    let lowest_same = d.similarity.iter().map(|p| p.0).fold(f32::MAX, f32::min);
    let highest_other = d.similarity.iter().map(|p| p.1).fold(f32::MIN, f32::max);
    b.claim(
        "Every paraphrase pair scores higher than every unrelated pair",
        lowest_same > highest_other,
    );
    b.claim("The corpus holds twelve\nparaphrase pairs", corpus.pairs.len() == 12);
    let best = (0..12).max_by(|&i, &j| d.similarity[i].0.total_cmp(&d.similarity[j].0));
    b.claim("Pair 7, which shares nearly\nall its words, scores highest", best == Some(6));
    // "pair 5, the lowest", "Pair 7 ... scores highest" (counted from 1).
    let lowest = (0..corpus.pairs.len())
        .min_by(|&i, &j| d.similarity[i].0.total_cmp(&d.similarity[j].0))
        .unwrap();
    b.exact("5", (lowest + 1) as f64).exact("7", (best.unwrap() + 1) as f64);

    // Speed.
    let speeds = read_speeds().unwrap();
    let [crate_file, pytorch_file] = &speeds.sources;
    b.from(&[crate_file, pytorch_file])
        .quoted(&speed_report(speeds.ours, speeds.pytorch))
        .quoted(&measured_report(&crate_file.line, &pytorch_file.line))
        .claim("The crate embeds more sentences per second here", speeds.ours > speeds.pytorch)
        .rounded("7%", 100.0 * (speeds.ours / speeds.pytorch - 1.0))
        .at_most("10%", 100.0 * (speeds.ours / speeds.pytorch - 1.0))
        .claim("this run shows the two level", speeds.ours / speeds.pytorch < 1.1);
    // "on another processor, an AMD EPYC": the appendix's data header.
    let (appendix, _) = report::provenance::Provenance::read("appendix-machine.csv").unwrap();
    assert!(appendix.cpu.contains("AMD EPYC") && !crate_file.cpu.contains("AMD"));
    // The appendix's lengths, "one sequence of 1024 to 4096 tokens".
    let appendix = report::fast_data::FastData::read().unwrap();
    let lengths: Vec<u64> = [512, 1024, 2048, 4096, 8192]
        .into_iter()
        .filter(|&n| appendix.theirs("sdpa_1t", n).is_ok())
        .collect();
    b.exact("1024", lengths[0] as f64).exact("4096", lengths[lengths.len() - 1] as f64);

    // Exercises.
    let layers = d.heads.len();
    let count = bert_parameters(vocabulary, positions, d_model, d_ff, layers).unwrap();
    assert_eq!(count, d.parameters);
    b.exact("22565376", count as f64);
    b.exact("11,720,448", (vocabulary * d_model) as f64);
    b.claim("more than half of the model is the\nvocabulary", 2 * vocabulary * d_model > count);
    b.exact("512", positions as f64).exact("384", d_model as f64).exact("1536", d_ff as f64);
    let mut best = (0.0, 0, 0);
    for (l, w) in d.attention.iter().enumerate() {
        for (h, x) in w.outer_iter().enumerate() {
            let s = self_weight(&x).unwrap();
            if s > best.0 {
                best = (s, l + 1, h + 1);
            }
        }
    }
    b.rounded("0.20", best.0);
    b.claim("the largest is layer 2, head 2", (best.1, best.2) == (2, 2));
    b.exact("1536", d_ff as f64);

    repeats(&mut b);
    b.assert_all_bound();
}

/// Spearman's rank correlation: the Pearson correlation of the ranks, tied
/// values sharing their mean rank.
fn rank_correlation(x: &[f64], y: &[f64]) -> f64 {
    let ranks = |v: &[f64]| {
        let mut order: Vec<usize> = (0..v.len()).collect();
        order.sort_by(|&i, &j| v[i].total_cmp(&v[j]));
        let mut r = vec![0.0; v.len()];
        let mut start = 0;
        while start < order.len() {
            let mut end = start;
            while end + 1 < order.len() && v[order[end + 1]] == v[order[start]] {
                end += 1;
            }
            for &i in &order[start..=end] {
                r[i] = (start + end) as f64 / 2.0;
            }
            start = end + 1;
        }
        r
    };
    let (rx, ry) = (ranks(x), ranks(y));
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (mx, my) = (mean(&rx), mean(&ry));
    let cov: f64 = rx.iter().zip(&ry).map(|(a, b)| (a - mx) * (b - my)).sum();
    let var = |v: &[f64], m: f64| v.iter().map(|a| (a - m) * (a - m)).sum::<f64>();
    cov / (var(&rx, mx) * var(&ry, my)).sqrt()
}

/// Figures the page repeats in another section than the one that binds
/// them: each section that repeats one says so with `again`.
fn repeats(b: &mut Bindings) {
    b.section("The architecture, read off the weights").again("12");
    b.section("The same numbers as PyTorch").again("1e-5");
    all_heads_section(b);
    b.section("What the heads are for").again("5");
    b.section("Exercises").again("30522").again("6").again("5").again("10");
    b.section("Quiz").again("384").again("5").again("3").again("10").again("72");
    b.section("");
}

/// "All 72 heads": which heads look one token back, one ahead, and at
/// `[CLS]` (counted from 1, as the figures label them), found over the data.
fn all_heads_section(b: &mut Bindings) {
    let d = Derived::read().unwrap();
    let heads: Vec<(usize, usize)> =
        (0..d.heads.len()).flat_map(|l| (0..d.heads[l].len()).map(move |h| (l, h))).collect();
    let best = |score: &dyn Fn(usize, usize) -> f64| {
        *heads.iter().max_by(|a, c| score(a.0, a.1).total_cmp(&score(c.0, c.1))).unwrap()
    };
    let previous = best(&|l, h| d.heads[l][h].0.previous);
    let next = best(&|l, h| d.heads[l][h].0.next);
    let cls = best(&|l, h| d.heads[l][h].0.cls);
    b.section("All 72 heads")
        .exact("72", heads.len() as f64)
        .exact("3", (previous.1 + 1) as f64)
        .exact("9", (next.1 + 1) as f64)
        .exact("10", (cls.1 + 1) as f64)
        .exact("6", d.heads.len() as f64)
        .exact("5", (d.heads.len() - 1) as f64);
    assert_eq!((previous.0, next.0, cls.0), (0, 1, 2), "layers 1, 2 and 3");
    b.section("");
}
