//! Chapter 17 quotes the output of `cargo run --example ch17_sharing_keys`,
//! which reads the variants' runs (`cargo xtask train kv`); these tests
//! recompute that output and bind every number the chapter shows, section
//! by section, each place once.

use attn::kv_bytes::{kv_bytes_per_token, KvLayout, PublishedModel, PUBLISHED};
use attn::lm::{
    LanguageModel, LmCache, LmConfig, LmTraining, SHAKESPEARE_MODEL, SHAKESPEARE_TRAINING,
};
use attn::multihead::MultiHeadAttention;
use attn::nn::Parameters;
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};
use report::ch17::fresh::{read_fresh_reads, LONG_TEXTS};
use report::ch17::pooled::{pooled_runs, pooled_table, Pooled, FINE_TUNING};
use report::ch17::{
    book_caches, equalities, first_position, first_position_report, long_text_curve,
    long_text_summaries, long_text_summary, long_text_table, long_texts, losses_of, mean,
    published_table, range, speed_table, speeds, variant, variant_table, variants, Attention,
    LongText, Variant, ATTENTIONS, BUCKET, CACHES, DEEPSEEK_V2_HEAD, EXERCISE_2, LAST_POSITION,
    LATENT, RING, SERVED, SHARING, TABLE_CONTEXT, WRITTEN,
};
use report::numbers::Bindings;
use report::provenance::Provenance;
use Attention::{KvHeads, Latent};

const CHAPTER: &str = "ch17-sharing-and-forgetting-keys.md";

/// Bits of a number in `f32`, as chapter 16's model keeps its cache.
const F32_BITS: usize = 8 * std::mem::size_of::<f32>();

#[test]
fn every_number_is_bound() {
    let mut b = Bindings::new(CHAPTER);
    introduction(&mut b);
    what_a_cache_holds(&mut b);
    sharing(&mut b);
    compressing(&mut b);
    forgetting(&mut b);
    measured(&mut b);
    exercises(&mut b);
    quiz(&mut b);
    b.assert_all_bound();
}

fn bytes(m: &PublishedModel) -> usize {
    kv_bytes_per_token(m.layers, m.layout, SERVED).unwrap()
}

/// The model name's number: "Llama-3-8B" → "3".
fn version(m: &PublishedModel) -> &'static str {
    m.name.split('-').nth(1).unwrap()
}

/// The opening paragraph (before the first section).
fn introduction(b: &mut Bindings) {
    let book = LanguageModel::<f32>::new(SHAKESPEARE_MODEL, 1).unwrap();
    b.section("Sharing and forgetting keys");
    b.exact("4,096", LmCache::bytes_per_token(&book) as f64)
        .exact("64", book.config().context as f64);
}

fn what_a_cache_holds(b: &mut Bindings) {
    b.section("What a cache holds");
    b.exact("16", (8 * SERVED) as f64)
        .exact("4", std::mem::size_of::<f32>() as f64)
        .exact("32", F32_BITS as f64);
    let [llama2, llama3, mistral, deepseek] = PUBLISHED;
    b.fact("3", version(&llama3));
    b.exact("16", (8 * SERVED) as f64);
    b.quoted(&published_table().unwrap());
    b.section("What a cache holds").exact("four", attn::kv_bytes::PUBLISHED.len() as f64);
    b.section("");
    b.claim("Llama-2-7B keeps half a mebibyte for every token", bytes(&llama2) == 1 << 19);
    b.exact("2", (bytes(&llama2) * TABLE_CONTEXT) as f64 / (1u64 << 30) as f64)
        .exact("4,096", TABLE_CONTEXT as f64)
        .fact("3", version(&llama3));
    b.claim(
        "Llama-3-8B and Mistral-7B have the same\ndepth and width and keep a quarter of it",
        bytes(&llama3) * 4 == bytes(&llama2) && bytes(&mistral) == bytes(&llama3),
    );
    let KvLayout::Latent { d_c, d_r } = deepseek.layout else { panic!("DeepSeek-V2 is latent") };
    b.exact("60", deepseek.layers as f64)
        .exact("512", d_c as f64)
        .exact("64", d_r as f64)
        .exact("128", deepseek.heads as f64);
    b.claim("keeps\nless than either", bytes(&deepseek) < bytes(&llama3));
    b.exact("32", F32_BITS as f64).exact("64", LATENT.d_c as f64).exact("16", LATENT.d_r as f64);
    b.quoted(&book_caches().unwrap());
}

fn sharing(b: &mut Bindings) {
    b.section("Sharing keys: multi-query and grouped-query attention");
    let per_token: Vec<usize> = ATTENTIONS
        .iter()
        .map(|&g| LmCache::bytes_per_token(&LanguageModel::<f32>::new(variant(g), 1).unwrap()))
        .collect();
    b.claim("The cache shrinks by $h / h_{\\text{kv}}$", per_token[..3] == [4096, 2048, 1024]);
    // Query head g (from 1) reads key/value head kv(g) = ⌈g·h_kv/h⌉: the
    // multi-head copy of a grouped layer gives head g its group's columns.
    let mut rng = StdRng::seed_from_u64(16);
    for (h, h_kv) in [(4, 4), (4, 2), (4, 1), (8, 2), (6, 3)] {
        let grouped = MultiHeadAttention::grouped(24, h, h_kv, &mut rng).unwrap();
        let copied = grouped.to_multi_head();
        let d_k = 24 / h;
        let head = |w: &ndarray::Array2<f32>, i: usize| {
            w.slice(ndarray::s![.., (i - 1) * d_k..i * d_k]).to_owned()
        };
        for g in 1..=h {
            let kv = (g * h_kv).div_ceil(h);
            assert_eq!(
                head(&copied.weights().w_k, g),
                head(&grouped.weights().w_k, kv),
                "query head {g} of {h}, {h_kv} key/value heads"
            );
        }
    }
}

fn compressing(b: &mut Bindings) {
    b.section("Compressing keys: multi-head latent attention");
    let [_, _, _, deepseek] = PUBLISHED;
    b.claim(
        "shrinks the cache another way",
        bytes(&deepseek)
            < kv_bytes_per_token(
                deepseek.layers,
                KvLayout::Heads { kv_heads: deepseek.heads, d_head: DEEPSEEK_V2_HEAD },
                SERVED,
            )
            .unwrap(),
    );
    // A merged matrix holds d_model·d_c numbers a head, its factors
    // d_h·(d_model + d_c); the first is larger exactly when
    // d_c·(d_model − d_h) > d_h·d_model.
    for d_model in [16, 128, 5120] {
        for d_h in 1..d_model.min(160) {
            for d_c in 1..600 {
                assert_eq!(
                    d_model * d_c > d_h * (d_model + d_c),
                    d_c * (d_model - d_h) > d_h * d_model,
                    "d_model {d_model}, d_h {d_h}, d_c {d_c}"
                );
            }
        }
    }
    let latent = LanguageModel::<f32>::new(variant(Latent), 1).unwrap();
    let c = latent.config();
    let size = |name: &str| {
        latent.named_slices().into_iter().find(|(n, _)| n == name).map(|(_, s)| s.len()).unwrap()
    };
    let d_h = c.d_model / c.heads;
    // Per head: W_Q^(g) (d_model × d_h) and W_UK^(g) (d_c × d_h); W_O^(g)
    // (d_h × d_model) and W_UV^(g) (d_c × d_h) are as large.
    let factors = (size("blocks.0.w_q") + size("blocks.0.w_uk")) / c.heads;
    assert_eq!(factors, (size("blocks.0.w_o") + size("blocks.0.w_uv")) / c.heads);
    assert_eq!(factors, d_h * (c.d_model + LATENT.d_c));
    let merged = c.d_model * LATENT.d_c;
    b.exact("8,192", merged as f64).exact("6,144", factors as f64);
    b.claim(
        "The\nlanguage model below has such a latent",
        merged > factors && LATENT.d_c * (c.d_model - d_h) > d_h * c.d_model && LATENT.d_c > d_h,
    );
}

fn forgetting(b: &mut Bindings) {
    b.section("Forgetting keys: sliding windows and attention sinks");
    let (n, window, _) = RING;
    b.exact("37", (n / window) as f64);
    let equal = equalities().unwrap();
    b.quoted(&equal);
    let gaps: Vec<f64> =
        equal.lines().map(|l| l.rsplit(' ').next().unwrap().parse().unwrap()).collect();
    b.claim("and agrees\nexactly", gaps[0] == 0.0);
    b.exact("32", F32_BITS as f64);
    b.claim(
        "the other two agree to the rounding of 32-bit floats",
        gaps[1] < 1e-5 && gaps[2] < 1e-5,
    );
}

/// The section "Measured on the language model".
fn measured(b: &mut Bindings) {
    b.section("Measured on the language model");
    let (source, _) = Provenance::read("ch17-variants.tsv").unwrap();
    let variants = variants().unwrap();
    let losses = |g: Attention| losses_of(&variants, g);
    let mean_of = |g| mean(&losses(g));
    let spread = |g| {
        let (lo, hi) = range(&losses(g));
        hi - lo
    };
    let bytes_of = |g| variants.iter().find(|v| v.attention == g).unwrap().bytes;
    let parameters = |g| variants.iter().find(|v| v.attention == g).unwrap().parameters;
    let mha = variant(KvHeads(4));
    let d_h = mha.d_model / mha.heads;

    // The variants.
    let seeds: Vec<u64> = {
        let mut s: Vec<u64> = variants.iter().map(|v| v.seed).collect();
        s.sort_unstable();
        s.dedup();
        s
    };
    assert_eq!(seeds, [1, 2, 3], "\"each three times, seeds 1, 2 and 3\"");
    assert!(ATTENTIONS.iter().all(|&g| losses(g).len() == seeds.len()));
    b.exact("4", mha.heads as f64).exact("4", mha.kv_heads as f64);
    b.exact("3", seeds[seeds.len() - 1] as f64);
    b.section("Measured on the language model").exact("three", seeds.len() as f64);
    b.section("");
    b.exact("32", d_h as f64);
    let [_, _, _, deepseek] = PUBLISHED;
    let KvLayout::Latent { d_c: ds_c, d_r: ds_r } = deepseek.layout else { panic!("latent") };
    b.exact("4", (ds_c / DEEPSEEK_V2_HEAD) as f64);
    let four_heads_wide = kv_bytes_per_token(
        mha.layers,
        KvLayout::Latent { d_c: ds_c / DEEPSEEK_V2_HEAD * d_h, d_r: LATENT.d_r },
        std::mem::size_of::<f32>(),
    )
    .unwrap();
    b.exact("2,304", four_heads_wide as f64).claim(
        "larger than grouped-query attention's",
        four_heads_wide > bytes_of(KvHeads(2)) && ds_c / DEEPSEEK_V2_HEAD * d_h == mha.d_model,
    );
    b.exact("64", LATENT.d_c as f64).exact("16", LATENT.d_r as f64);
    b.claim("$d_c = 64$", LATENT.d_c == 2 * d_h)
        .claim("$d_r = d_h/2 = 16$", LATENT.d_r == d_h / 2 && ds_r == DEEPSEEK_V2_HEAD / 2);
    b.claim(
        "so that its\ncache falls between those of multi-query and grouped-query attention",
        bytes_of(KvHeads(1)) < bytes_of(Latent) && bytes_of(Latent) < bytes_of(KvHeads(2)),
    )
    .claim(
        "a few more parameters\nthan multi-head attention",
        parameters(Latent) > parameters(KvHeads(4)),
    );
    b.from(&[&source]).quoted(&variant_table(&variants));
    // Figure 17.1's alt text.
    for g in [KvHeads(1), KvHeads(2), KvHeads(4), Latent] {
        let shown = format!("{}", bytes_of(g));
        let shown = if shown.len() > 3 {
            format!("{},{}", &shown[..shown.len() - 3], &shown[shown.len() - 3..])
        } else {
            shown
        };
        b.exact(&shown, bytes_of(g) as f64);
    }

    // Sharing costs nothing measurable.
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
    let mha_seed_1 = mha_seed_1_loss(&variants);
    let ch16 = report::ch16::rotary_final_losses().unwrap();
    let ch16_seed_1 = ch16.iter().find(|&&(seed, _)| seed == 1).unwrap().1;
    b.from(&[&source]).rounded("1.7982", mha_seed_1);
    b.rounded("1.798", ch16_seed_1);
    b.claim(
        "its loss,\n1.7982, is the 1.798 chapter 16 reports",
        (ch16_seed_1 - mha_seed_1).abs() < 5e-5,
    );

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
    b.claim(
        "Multi-query attention keeps a\nsmaller cache and does better",
        bytes_of(KvHeads(1)) < bytes_of(Latent) && mean_of(KvHeads(1)) < mean_of(Latent),
    );
    b.claim("Here, with this recipe, it\ndoes not", mean_of(Latent) > mean_of(KvHeads(4)));

    converting(b, &variants);
    writing_speed(b, &variants);
    long_text_losses(b, &variants);
    first_position_weights(b);
}

/// The validation loss of the multi-head run of seed 1.
fn mha_seed_1_loss(variants: &[Variant]) -> f64 {
    variants.iter().find(|v| v.attention == KvHeads(4) && v.seed == 1).unwrap().validation_loss
}

/// Converting multi-head models instead of training grouped ones.
fn converting(b: &mut Bindings, variants: &[Variant]) {
    let (source, _) = Provenance::read("ch17-variants.tsv").unwrap();
    let (pool_source, _) = Provenance::read("ch17-pooled.tsv").unwrap();
    let losses = |g: Attention| losses_of(variants, g);
    let pooled = pooled_runs().unwrap();
    let share = 100.0 * FINE_TUNING.steps as f64 / SHAKESPEARE_TRAINING.steps as f64;
    b.exact("5%", share);
    b.exact("100", FINE_TUNING.steps as f64)
        .exact("5%", share)
        .exact("2,000", SHAKESPEARE_TRAINING.steps as f64)
        .exact("10", FINE_TUNING.warmup as f64);
    // The learning rate: the conversion's peak, and where chapter 16's run
    // ends.
    let rate = |r: &LmTraining, step: usize| {
        r.lr * attn::nn::warmup_cosine_to(step, r.steps, r.warmup, r.min_lr / r.lr).unwrap()
    };
    let end = rate(&SHAKESPEARE_TRAINING, SHAKESPEARE_TRAINING.steps - 1);
    let peak = (0..FINE_TUNING.steps).map(|t| rate(&FINE_TUNING, t)).fold(0.0, f64::max);
    assert_eq!(peak, SHAKESPEARE_TRAINING.lr, "the recipe's peak");
    b.value("1e-3", peak, 1e-9);
    b.from(&[&pool_source, &source]).quoted(&pooled_table(&pooled, variants));
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
    b.exact("5%", share);
    // The confound: pooling and a rate warmed back up, together.
    b.value("1e-4", end, 1e-7).value("1e-3", peak, 1e-9);
    b.claim("ten times that", (peak / end - 10.0).abs() < 0.01);
    b.exact("100", FINE_TUNING.steps as f64).exact("100", FINE_TUNING.steps as f64);
}

/// Writing speed, and what this setting can show.
fn writing_speed(b: &mut Bindings, variants: &[Variant]) {
    let (speeds, speed_source) = speeds().unwrap();
    // "on one thread of an Intel Xeon processor"
    assert!(speed_source.cpu.contains("Intel") && speed_source.cpu.contains("Xeon"));
    assert!(speed_source.statistic.contains("one thread"));
    b.exact("256", WRITTEN as f64);
    b.from(&[&speed_source]).quoted(&speed_table(&speeds));
    let time = |g| speeds.iter().find(|r| r.0 == g).unwrap().1;
    let ratio = time(KvHeads(4)) / time(KvHeads(1));
    b.from(&[&speed_source]).rounded("1.22", ratio);
    let c = variant(KvHeads(4));
    // What a step reads: the whole cache of a window of the context, and
    // every weight.
    let cache_bytes = |g| {
        let c = variant(g);
        c.context * kv_bytes_per_token(c.layers, c.kv_layout(), std::mem::size_of::<f32>()).unwrap()
    };
    b.claim(
        "the cache shrinks four times, the time per character far less",
        speeds.len() == 4
            && cache_bytes(KvHeads(4)) == 4 * cache_bytes(KvHeads(1))
            && ratio > 1.0
            && ratio < 2.0,
    );
    let gap = |g| (time(Latent) / time(g) - 1.0).abs();
    b.from(&[&speed_source]).at_most("10%", 100.0 * gap(KvHeads(4)).max(gap(KvHeads(2)))).claim(
        "Latent\nattention lies between multi-head and grouped-query attention",
        time(Latent) < time(KvHeads(4)) && time(Latent) > time(KvHeads(2)),
    );
    let parameters = |g| variants.iter().find(|v| v.attention == g).unwrap().parameters;
    b.exact("64", c.context as f64)
        .exact("262,144", cache_bytes(KvHeads(4)) as f64)
        .exact("65,536", cache_bytes(KvHeads(1)) as f64)
        .rounded("3.2", (parameters(KvHeads(4)) * std::mem::size_of::<f32>()) as f64 / 1e6);
    b.from(&[&speed_source]).rounded("1.22", ratio);
    b.rounded("12%", 100.0 * (1.0 - parameters(KvHeads(1)) as f64 / parameters(KvHeads(4)) as f64));
}

/// The caches an example of `cargo xtask train kv` reads long texts through,
/// as its source declares them: `(sinks, window)` of the sink cache and the
/// plain window.
fn long_text_caches() -> ((usize, usize), usize) {
    use report::numbers::captured;
    let example = "examples/ch17_kv_train.rs";
    let sinks = captured(example, r"Forgetting::Sinks \{ sinks: (\d+), window: (\d+)");
    let window = captured(example, r#"\("window", Forgetting::Window\((\d+)"#)[0];
    ((sinks[0] as usize, sinks[1] as usize), window as usize)
}

/// The long texts read through three caches, and the fresh read.
fn long_text_losses(b: &mut Bindings, variants: &[Variant]) {
    let (long_source, _) = Provenance::read("ch17-long-text.tsv").unwrap();
    let long = long_texts().unwrap();
    let context = SHAKESPEARE_MODEL.context;
    let ((sinks, sink_window), window_size) = long_text_caches();
    assert_eq!(window_size, context, "the window is the context");
    assert_eq!(sinks + sink_window, context, "the sinks take places of the window");
    let (texts, length) = LONG_TEXTS;
    assert!(long_source.line.contains(&format!("{texts} texts of {length} characters")));
    assert_eq!(texts, 8, "\"Eight texts\"");
    assert_eq!(length, 8 * context, "\"eight times the context\"");
    let last_bucket = long.iter().map(|r| r.first_position).max().unwrap();
    assert!((last_bucket..last_bucket + BUCKET).contains(&LAST_POSITION));
    b.exact("512", length as f64)
        .exact("511", LAST_POSITION as f64)
        .exact("63", (context - 1) as f64)
        .exact("64", window_size as f64)
        .exact("4", sinks as f64)
        .exact("60", sink_window as f64)
        .exact("16", BUCKET as f64);
    b.from(&[&long_source]).quoted(&long_text_table(&long, KvHeads(4)));

    // Figure 17.2's alt text.
    let all = long_text_curve(&long, KvHeads(4), CACHES[0].1);
    let window = long_text_curve(&long, KvHeads(4), CACHES[1].1);
    let sinks_curve = long_text_curve(&long, KvHeads(4), CACHES[2].1);
    let past = |c: &[(usize, f64, f64, f64)]| -> Vec<f64> {
        c.iter().filter(|r| r.0 > context).map(|r| r.1).collect()
    };
    let both: Vec<f64> = past(&window).into_iter().chain(past(&sinks_curve)).collect();
    let (w_lo, w_hi) = range(&both);
    b.rounded("1.8", all[0].1).rounded("2.9", all[all.len() - 1].1);
    b.exact("64", context as f64);
    b.rounded("1.3", w_lo).rounded("2.0", w_hi);
    b.claim(
        "through the window and through sinks plus window it stays",
        w_lo > 1.25 && w_hi < 2.05,
    );
    b.claim("it climbs", all[all.len() - 1].1 > all[0].1 + 0.5);

    b.from(&[&long_source]).quoted(&long_text_summaries(&long));
    let [inside, all_past, window_past, _, _] = long_text_summary(&long, KvHeads(4));
    let gaps: Vec<[f64; 5]> = SHARING.iter().map(|&g| long_text_summary(&long, g)).collect();
    b.claim(
        "Every variant that shares heads, every seed, tells the same story",
        gaps.iter().all(|g| g[1] > g[0] + 0.3 && g[2] < g[0] && g[4] < 0.03),
    );
    b.claim("its loss climbs", gaps.iter().all(|g| g[1] > g[0] + 0.3));
    b.rounded("2.37", all_past)
        .exact("64", context as f64)
        .rounded("1.81", inside)
        .exact("64", context as f64)
        .exact("64", context as f64)
        .rounded("1.75", window_past)
        .rounded("1.81", inside);
    b.claim("That this is below the 1.81 within the context", window_past < inside);

    // The slide against a fresh read of the same 64 characters, in the one
    // run whose weights are committed: chapter 16's rotary model, which is
    // the multi-head run of seed 1 (its window losses are that run's).
    let (fresh, fresh_source) = read_fresh_reads().unwrap();
    assert!(fresh_source.statistic.starts_with("one run"));
    assert!(fresh.first().unwrap().first_position > context);
    for r in &fresh {
        let committed: &LongText = long
            .iter()
            .find(|l| {
                l.attention == KvHeads(4) && l.seed == 1 && l.first_position == r.first_position
            })
            .unwrap();
        assert!(
            (committed.window - r.window).abs() < 1.5e-5,
            "bucket {}: the fresh-read file's window loss is not the multi-head run of seed 1's",
            r.first_position
        );
    }
    let rotary = report::ch16::rotary_final_losses().unwrap();
    b.claim(
        "chapter 16's\nrotary model, which is the multi-head run of seed 1 here",
        fresh.len()
            == long.iter().filter(|l| l.attention == KvHeads(4) && l.seed == 1).count()
                - context / BUCKET
            && rotary.iter().any(|&(s, l)| s == 1 && (l - mha_seed_1_loss(variants)).abs() < 5e-5),
    );
    let window_seed_1 = mean(&fresh.iter().map(|r| r.window).collect::<Vec<_>>());
    let fresh_mean = mean(&fresh.iter().map(|r| r.fresh).collect::<Vec<_>>());
    let widest = fresh.iter().map(|r| (r.window - r.fresh).abs()).fold(0.0, f64::max);
    b.exact("64", context as f64).exact("64", context as f64);
    b.rounded("1.748", window_seed_1).rounded("1.747", fresh_mean);
    b.exact("16", BUCKET as f64).at_most("0.007", widest);
    b.claim(
        "in this run, nothing these texts can measure",
        (window_seed_1 - fresh_mean).abs() < 0.002 && widest < 0.01,
    );

    // Sinks.
    b.exact("4", sinks as f64).exact("64", context as f64);
    b.rounded("0.013", gaps.iter().map(|g| g[3]).fold(0.0, f64::max))
        .rounded("0.027", gaps.iter().map(|g| g[4]).fold(0.0, f64::max));
    b.claim(
        "This model does not collapse when its first tokens leave the\nwindow",
        gaps.iter().all(|g| g[2] < g[0] && g[4] < 0.03) && widest < 0.01,
    );
    // Chapter 15's sink: each layer's mean weight on [CLS] and on [SEP].
    let d = report::ch15_data::Derived::read().unwrap();
    let layer_means = |f: fn(&attn::pretrained::HeadStatistics) -> f64| -> Vec<f64> {
        d.heads
            .iter()
            .map(|row| row.iter().map(|(s, _)| f(s)).sum::<f64>() / row.len() as f64)
            .collect()
    };
    let (cls_lo, cls_hi) = range(&layer_means(|s| s.cls));
    let (sep_lo, sep_hi) = range(&layer_means(|s| s.sep));
    b.rounded("0.25", cls_lo).rounded("0.61", cls_hi);
    b.rounded("0.01", sep_lo).rounded("0.09", sep_hi);
}

/// The weight on the first position.
fn first_position_weights(b: &mut Bindings) {
    let (first, first_source) = first_position().unwrap();
    // The queries and windows, as the data file's header states them:
    // "from the queries at positions A to B of C evenly spaced …".
    let prefix = "from the queries at positions ";
    let described = &first_source.line[first_source.line.find(prefix).unwrap() + prefix.len()..];
    let words: Vec<&str> = described.split(' ').collect();
    assert_eq!((words[1], words[3], words[5]), ("to", "of", "evenly"));
    let [from, to, windows] = [0, 2, 4].map(|i| words[i].parse::<usize>().unwrap());
    b.exact("32", from as f64).exact("63", to as f64).exact("240", windows as f64);
    b.from(&[&first_source]).quoted(&first_position_report(&first));
    b.claim(
        "Nor does any head lean on the first position",
        first.len() == 12 * 16 && first.iter().all(|r| r.4 < r.5),
    );
    b.claim(
        "Every head of every run puts less weight on position 0 than uniform\nweights would",
        first.len() == 12 * 16 && first.iter().all(|r| r.4 < r.5),
    );
}

fn exercises(b: &mut Bindings) {
    b.section("Exercises");
    let KvLayout::Heads { kv_heads, d_head } = EXERCISE_2.layout else { panic!("heads") };
    let full = KvLayout::Heads { kv_heads: EXERCISE_2.heads, d_head };
    let small = bytes(&EXERCISE_2);
    let large = kv_bytes_per_token(EXERCISE_2.layers, full, SERVED).unwrap();
    let layers = EXERCISE_2.layers as f64;
    // The question.
    b.exact("48", layers)
        .exact("64", EXERCISE_2.heads as f64)
        .exact("128", d_head as f64)
        .exact("8", kv_heads as f64)
        .exact("16", (8 * SERVED) as f64);
    // The solution.
    assert_eq!(small, EXERCISE_2.layers * 2 * kv_heads * d_head * SERVED, "the solution's product");
    b.exact("48", layers)
        .exact("8", kv_heads as f64)
        .exact("128", d_head as f64)
        .exact("196,608", small as f64)
        .exact("192", (small / 1024) as f64)
        .exact("64", EXERCISE_2.heads as f64);
    b.exact("1.5", large as f64 / (1 << 20) as f64);
    b.claim("eight times as much", large == 8 * small && EXERCISE_2.heads == 8 * kv_heads);
    b.exact("48", layers).exact("8", kv_heads as f64).exact("128", d_head as f64);
}

fn quiz(b: &mut Bindings) {
    b.section("Quiz");
    // Quiz 1 is Llama-3-8B's attention.
    let [llama2, llama3, _, _] = PUBLISHED;
    let KvLayout::Heads { kv_heads, .. } = llama3.layout else { panic!("heads") };
    b.exact("32", llama3.heads as f64).exact("8", kv_heads as f64);
    assert_eq!(bytes(&llama3) * 4, bytes(&llama2), "(b) a quarter");
    b.exact("8", kv_heads as f64).exact("32", llama3.heads as f64);
}

/// A test that the grouped-query step equals the multi-head one, by the
/// config the chapter's variants use.
#[test]
fn the_variants_keep_depth_and_width() {
    let base: LmConfig = variant(KvHeads(4));
    for g in ATTENTIONS {
        let c = variant(g);
        assert_eq!((c.layers, c.d_model, c.heads), (base.layers, base.d_model, base.heads));
    }
}
