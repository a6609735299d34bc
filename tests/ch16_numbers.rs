//! Chapter 16 quotes the output of `cargo run --example ch16_sharing_keys`,
//! which reads the variants' runs (`cargo xtask train kv`); these tests
//! recompute that output and bind every number the chapter shows.

use attn::kv_bytes::{kv_bytes_per_token, KvLayout, PUBLISHED};
use attn::lm::SHAKESPEARE_TRAINING;
use attn::lm::{LanguageModel, LmCache, LmConfig, SHAKESPEARE_MODEL};
use report::ch16::pooled::{pooled_runs, pooled_table, Pooled, FINE_TUNING};
use report::ch16::{
    book_caches, equalities, first_position, first_position_report, long_text_curve,
    long_text_summaries, long_text_summary, long_text_table, long_texts, losses_of, mean,
    published_table, range, speed_table, speeds, variant_table, variants, Attention, Variant,
    ATTENTIONS, CACHES, LATENT, RING, SHARING, TABLE_CONTEXT, WRITTEN,
};
use report::numbers::Bindings;
use report::provenance::Provenance;
use Attention::{KvHeads, Latent};

const CHAPTER: &str = "ch16-sharing-and-forgetting-keys.md";

#[test]
fn every_number_is_bound() {
    let mut b = Bindings::new(CHAPTER);
    let book = LanguageModel::<f32>::new(SHAKESPEARE_MODEL, 1).unwrap();
    let c: LmConfig = book.config();
    b.exact("4,096", LmCache::bytes_per_token(&book) as f64).exact("64", c.context as f64);

    // What a cache holds: the published configurations.
    b.quoted(&published_table().unwrap());
    let [llama2, llama3, mistral, deepseek] = PUBLISHED;
    let bytes =
        |m: &attn::kv_bytes::PublishedModel| kv_bytes_per_token(m.layers, m.layout, 2).unwrap();
    b.claim("Llama-2-7B keeps half a mebibyte for every token", bytes(&llama2) == 1 << 19);
    b.exact("2", (bytes(&llama2) * TABLE_CONTEXT) as f64 / (1u64 << 30) as f64)
        .exact("4,096", TABLE_CONTEXT as f64);
    b.claim(
        "Llama-3-8B and Mistral-7B have the same\ndepth and width and keep a quarter of it",
        bytes(&llama3) * 4 == bytes(&llama2) && bytes(&mistral) == bytes(&llama3),
    );
    b.exact("60", deepseek.layers as f64);
    let KvLayout::Latent { d_c, d_r } = deepseek.layout else { panic!("DeepSeek-V2 is latent") };
    b.exact("512", d_c as f64).exact("64", d_r as f64).exact("128", deepseek.heads as f64);
    b.claim("keeps\nless than either", bytes(&deepseek) < bytes(&llama3));

    // The book's variants and the checks.
    b.quoted(&book_caches().unwrap());
    let equal = equalities().unwrap();
    b.quoted(&equal);
    let (n, window, _) = RING;
    b.exact("37", (n / window) as f64);
    let gaps: Vec<f64> =
        equal.lines().map(|l| l.rsplit(' ').next().unwrap().parse().unwrap()).collect();
    b.claim("and agrees\nexactly", gaps[0] == 0.0);
    b.claim(
        "the other two agree to the rounding of 32-bit floats",
        gaps[1] < 1e-5 && gaps[2] < 1e-5,
    );
    let per_token: Vec<usize> = book_caches()
        .unwrap()
        .lines()
        .map(|l| l.split(' ').rev().nth(3).unwrap().parse().unwrap())
        .collect();
    b.claim("The cache shrinks by $h / h_{\\text{kv}}$", per_token[..3] == [4096, 2048, 1024]);
    let as_multi_head = KvLayout::Heads { kv_heads: deepseek.heads, d_head: 128 };
    b.claim(
        "shrinks the cache another way",
        bytes(&deepseek) < kv_bytes_per_token(deepseek.layers, as_multi_head, 2).unwrap(),
    );

    // Exercise 2.
    let new = KvLayout::Heads { kv_heads: 8, d_head: 128 };
    let full = KvLayout::Heads { kv_heads: 64, d_head: 128 };
    let small = kv_bytes_per_token(48, new, 2).unwrap();
    b.exact("48", 48)
        .exact("8", 8)
        .exact("196,608", small as f64)
        .exact("192", (small / 1024) as f64);
    b.exact("1.5", kv_bytes_per_token(48, full, 2).unwrap() as f64 / (1 << 20) as f64);
    b.claim("eight times as much", kv_bytes_per_token(48, full, 2).unwrap() == 8 * small);

    measured(&mut b);
    b.assert_all_bound();
}

/// The section "Measured on the language model".
fn measured(b: &mut Bindings) {
    let (source, _) = Provenance::read("ch16-variants.tsv").unwrap();
    let (long_source, _) = Provenance::read("ch16-long-text.tsv").unwrap();
    let variants = variants().unwrap();
    let long = long_texts().unwrap();
    b.from(&[&source]).quoted(&variant_table(&variants));
    b.from(&[&long_source]).quoted(&long_text_table(&long, KvHeads(4)));
    b.from(&[&long_source]).quoted(&long_text_summaries(&long));

    // The variants' losses.
    let losses = |g: Attention| losses_of(&variants, g);
    let mean_of = |g| mean(&losses(g));
    let spread = |g| {
        let (lo, hi) = range(&losses(g));
        hi - lo
    };
    let means: Vec<f64> = SHARING.map(mean_of).to_vec();
    let spreads: Vec<f64> = SHARING.map(spread).to_vec();
    let (mean_lo, mean_hi) = range(&means);
    let (spread_lo, spread_hi) = range(&spreads);
    b.from(&[&source]).rounded("0.006", mean_hi - mean_lo);
    b.from(&[&source]).rounded("0.012", spread_lo).rounded("0.018", spread_hi);
    b.claim("A quarter of the cache costs nothing measurable here", mean_hi - mean_lo < spread_lo);
    let order = |seed: u64| {
        let mut v: Vec<&Variant> =
            variants.iter().filter(|v| v.seed == seed && v.attention != Latent).collect();
        v.sort_by(|a, b| a.validation_loss.total_cmp(&b.validation_loss));
        v.iter().map(|v| v.attention).collect::<Vec<_>>()
    };
    b.claim(
        "the order of\nthose variants changes from seed to seed",
        order(1) != order(2) || order(2) != order(3),
    );
    let mha_seed_1 = variants.iter().find(|v| v.attention == KvHeads(4) && v.seed == 1).unwrap();
    let ch15 = report::ch15::rotary_final_losses().unwrap();
    b.claim(
        "its loss,\n1.7982, is the 1.798 chapter 15 reports",
        ch15.iter().any(|&(seed, l)| seed == 1 && (l - mha_seed_1.validation_loss).abs() < 5e-5),
    );
    let ch15_seed_1 = ch15.iter().find(|&&(seed, _)| seed == 1).unwrap().1;
    b.rounded("1.798", ch15_seed_1);

    // Latent attention.
    let latent = losses(Latent);
    let sharing_runs: Vec<f64> = SHARING.iter().flat_map(|&g| losses(g)).collect();
    let (latent_lo, _) = range(&latent);
    let (_, sharing_hi) = range(&sharing_runs);
    b.from(&[&source])
        .rounded("1.8176", latent_lo)
        .rounded("1.8075", sharing_hi)
        .rounded("0.029", mean_of(Latent) - mean_of(KvHeads(4)));
    let widest = ATTENTIONS.map(spread).into_iter().fold(0.0, f64::max);
    b.from(&[&source]).rounded("0.019", widest);
    b.claim("Latent attention costs more", latent_lo > sharing_hi);
    b.claim(
        "Each of its three runs is worse than all nine\nruns of the other variants",
        latent.len() == 3 && sharing_runs.len() == 9 && latent_lo > sharing_hi,
    );
    b.claim(
        "more than any variant's\nspread over its seeds",
        mean_of(Latent) - mean_of(KvHeads(4)) > widest,
    );
    let bytes = |g| variants.iter().find(|v| v.attention == g).unwrap().bytes;
    b.claim(
        "Multi-query attention keeps a\nsmaller cache and does better",
        bytes(KvHeads(1)) < bytes(Latent) && mean_of(KvHeads(1)) < mean_of(Latent),
    );
    b.claim("Here, with this recipe, it\ndoes not", mean_of(Latent) > mean_of(KvHeads(4)));
    let d_h = SHAKESPEARE_MODEL.d_model / SHAKESPEARE_MODEL.heads;
    let four_heads_wide = kv_bytes_per_token(
        SHAKESPEARE_MODEL.layers,
        KvLayout::Latent { d_c: 4 * d_h, d_r: LATENT.d_r },
        4,
    )
    .unwrap();
    b.exact("2,304", four_heads_wide as f64).claim(
        "larger than grouped-query attention's",
        four_heads_wide > bytes(KvHeads(2)) && 4 * d_h == SHAKESPEARE_MODEL.d_model,
    );
    b.exact("32", d_h as f64)
        .exact("16", LATENT.d_r as f64)
        .exact("80", (LATENT.d_c + LATENT.d_r) as f64)
        .claim("$d_c = 64$", LATENT.d_c == 2 * d_h)
        .claim("$d_r = d_h/2 = 16$", LATENT.d_r == d_h / 2)
        .claim(
            "so that its\ncache falls between those of multi-query and grouped-query attention",
            bytes(KvHeads(1)) < bytes(Latent) && bytes(Latent) < bytes(KvHeads(2)),
        )
        .claim(
            "a few more parameters\nthan multi-head attention",
            variants.iter().find(|v| v.attention == Latent).unwrap().parameters
                > variants.iter().find(|v| v.attention == KvHeads(4)).unwrap().parameters,
        );

    // Converting instead of training.
    let (pool_source, _) = Provenance::read("ch16-pooled.tsv").unwrap();
    let pooled = pooled_runs().unwrap();
    b.from(&[&pool_source, &source]).quoted(&pooled_table(&pooled, &variants));
    b.exact("5%", 100.0 * FINE_TUNING.steps as f64 / SHAKESPEARE_TRAINING.steps as f64)
        .exact("100", FINE_TUNING.steps as f64)
        .exact("2,000", SHAKESPEARE_TRAINING.steps as f64)
        .exact("10", FINE_TUNING.warmup as f64);
    let mean = |g: usize, f: fn(&Pooled) -> f64| {
        let v: Vec<f64> = pooled.iter().filter(|r| r.kv_heads == g).map(f).collect();
        v.iter().sum::<f64>() / v.len() as f64
    };
    b.from(&[&pool_source])
        .rounded("1.80", mean(2, |r| r.multi_head))
        .rounded("2.53", mean(2, |r| r.pooled))
        .rounded("2.93", mean(1, |r| r.pooled));
    b.claim(
        "Pooling alone costs a great deal",
        pooled.iter().all(|r| r.pooled > r.multi_head + 0.5),
    );
    b.claim(
        "A hundred steps win most of it\nback, but not all",
        pooled.len() == 6
            && pooled.iter().all(|r| {
                r.fine_tuned > r.multi_head && r.pooled - r.fine_tuned > r.fine_tuned - r.multi_head
            }),
    );
    let worse_than_scratch = pooled.iter().all(|r| {
        let (_, scratch_hi) = range(&losses(KvHeads(r.kv_heads)));
        let (_, mha_hi) = range(&losses(KvHeads(4)));
        r.fine_tuned > scratch_hi && r.fine_tuned > mha_hi
    });
    b.claim(
        "Every converted run ends above every run of its\nvariant trained with shared heads from the start, and above every\nmulti-head run",
        worse_than_scratch,
    );
    b.claim(
        "a conversion with this recipe is\nthe worse way to get a grouped-query model",
        worse_than_scratch,
    );
    b.claim(
        "`cargo xtask train\nkv` does the same to the three multi-head models",
        pooled.iter().all(|r| {
            variants.iter().any(|v| {
                v.attention == KvHeads(4)
                    && v.seed == r.seed
                    && (v.validation_loss - r.multi_head).abs() < 1e-5
            })
        }),
    );

    // Long texts.
    b.exact("511", 511).exact("63", SHAKESPEARE_MODEL.context as f64 - 1.0);
    let all = long_text_curve(&long, KvHeads(4), CACHES[0].1);
    let window = long_text_curve(&long, KvHeads(4), CACHES[1].1);
    let past: Vec<f64> = window.iter().filter(|r| r.0 > 64).map(|r| r.1).collect();
    let (w_lo, w_hi) = range(&past);
    b.rounded("1.8", all[0].1).rounded("2.9", all[all.len() - 1].1);
    b.rounded("1.3", w_lo).rounded("2.0", w_hi);
    b.claim(
        "through the window and through sinks plus window it stays",
        w_lo > 1.25 && w_hi < 2.05,
    );
    let [inside, all_past, window_past, _, _] = long_text_summary(&long, KvHeads(4));
    b.rounded("2.37", all_past).rounded("1.81", inside).rounded("1.75", window_past);
    let gaps: Vec<[f64; 5]> = SHARING.iter().map(|&g| long_text_summary(&long, g)).collect();
    b.rounded("0.013", gaps.iter().map(|g| g[3]).fold(0.0, f64::max))
        .rounded("0.027", gaps.iter().map(|g| g[4]).fold(0.0, f64::max));
    b.claim(
        "Every variant that shares heads, every seed, tells the same story",
        gaps.iter().all(|g| g[1] > g[0] + 0.3 && g[2] < g[0] && g[4] < 0.03),
    );
    b.claim("its loss climbs", gaps.iter().all(|g| g[1] > g[0] + 0.3));
    b.claim("below the 1.81 within the context", gaps.iter().all(|g| g[2] < g[0]));
    b.claim("here it\ndoes no harm", gaps.iter().all(|g| g[2] < g[0]));

    // Writing speed, and the weight on the first position.
    let (speeds, speed_source) = speeds().unwrap();
    b.from(&[&speed_source]).quoted(&speed_table(&speeds));
    b.exact("256", WRITTEN as f64);
    let time = |g| speeds.iter().find(|r| r.0 == g).unwrap().1;
    let ratio = time(KvHeads(4)) / time(KvHeads(1));
    b.from(&[&speed_source]).rounded("1.22", ratio);
    b.claim(
        "the cache shrinks four times, the time per character far less",
        speeds.len() == 4 && ratio > 1.0 && ratio < 2.0,
    );
    b.claim(
        "Latent\nattention writes faster than multi-head attention and slower than\ngrouped-query attention",
        time(Latent) < time(KvHeads(4)) && time(Latent) > time(KvHeads(2)),
    );
    let (first, first_source) = first_position().unwrap();
    b.from(&[&first_source]).quoted(&first_position_report(&first));
    b.exact("32", 32).exact("240", 240);
    b.claim(
        "Nor does any head lean on the first position",
        first.len() == 12 * 16 && first.iter().all(|r| r.4 < r.5),
    );
    b.claim(
        "Every head of every run puts less weight on position 0 than uniform\nweights would",
        first.len() == 12 * 16 && first.iter().all(|r| r.4 < r.5),
    );
    b.claim(
        "This model does not collapse when its first tokens leave the\nwindow",
        gaps.iter().all(|g| g[2] < g[0] && g[4] < 0.03),
    );
}
