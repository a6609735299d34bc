//! Chapter 16 quotes the output of `cargo run --example ch16_sharing_keys`,
//! which reads the variants' runs (`cargo xtask train kv`); these tests
//! recompute that output and bind every number the chapter shows.

use attn::kv_bytes::{kv_bytes_per_token, KvLayout, PUBLISHED};
use attn::lm::{LanguageModel, LmCache, LmConfig, SHAKESPEARE_MODEL};
use report::ch16::{
    book_caches, equalities, first_position, first_position_report, long_text_curve,
    long_text_summaries, long_text_summary, long_text_table, long_texts, published_table, range,
    speed_table, speeds, variant_table, variants, Variant, CACHES, RING, TABLE_CONTEXT, WRITTEN,
};
use report::numbers::Bindings;
use report::provenance::Provenance;

const CHAPTER: &str = "ch16-sharing-and-forgetting-keys.md";

#[test]
fn every_number_is_bound() {
    let mut b = Bindings::new(CHAPTER);
    let book = LanguageModel::<f32>::new(SHAKESPEARE_MODEL, 1).unwrap();
    let c: LmConfig = book.config();
    b.exact("4,096", LmCache::bytes_per_token(&book) as f64)
        .exact("64", c.context as f64);

    // What a cache holds: the published configurations.
    b.quoted(&published_table().unwrap());
    let [llama2, llama3, mistral, deepseek] = PUBLISHED;
    let bytes =
        |m: &attn::kv_bytes::PublishedModel| kv_bytes_per_token(m.layers, m.layout, 2).unwrap();
    b.claim(
        "Llama-2-7B keeps half a mebibyte for every token",
        bytes(&llama2) == 1 << 19,
    );
    b.exact(
        "2",
        (bytes(&llama2) * TABLE_CONTEXT) as f64 / (1u64 << 30) as f64,
    )
    .exact("4,096", TABLE_CONTEXT as f64);
    b.claim(
        "Llama-3-8B and Mistral-7B have the same\ndepth and width and keep a quarter of it",
        bytes(&llama3) * 4 == bytes(&llama2) && bytes(&mistral) == bytes(&llama3),
    );
    b.exact("60", deepseek.layers as f64);
    let KvLayout::Latent { d_c, d_r } = deepseek.layout else {
        panic!("DeepSeek-V2 is latent")
    };
    b.exact("512", d_c as f64)
        .exact("64", d_r as f64)
        .exact("128", deepseek.heads as f64);
    b.claim("keeps\nless than either", bytes(&deepseek) < bytes(&llama3));

    // The book's variants and the checks.
    b.quoted(&book_caches().unwrap());
    let equal = equalities().unwrap();
    b.quoted(&equal);
    let (n, window, _) = RING;
    b.exact("37", (n / window) as f64);
    let gaps: Vec<f64> = equal
        .lines()
        .map(|l| l.rsplit(' ').next().unwrap().parse().unwrap())
        .collect();
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
    b.claim(
        "The cache shrinks by $h / h_{\\text{kv}}$",
        per_token == [4096, 2048, 1024],
    );
    let as_multi_head = KvLayout::Heads {
        kv_heads: deepseek.heads,
        d_head: 128,
    };
    b.claim(
        "shrinks the cache another way",
        bytes(&deepseek) < kv_bytes_per_token(deepseek.layers, as_multi_head, 2).unwrap(),
    );

    // Exercise 2.
    let new = KvLayout::Heads {
        kv_heads: 8,
        d_head: 128,
    };
    let full = KvLayout::Heads {
        kv_heads: 64,
        d_head: 128,
    };
    let small = kv_bytes_per_token(48, new, 2).unwrap();
    b.exact("48", 48)
        .exact("8", 8)
        .exact("196,608", small as f64)
        .exact("192", (small / 1024) as f64);
    b.exact(
        "1.5",
        kv_bytes_per_token(48, full, 2).unwrap() as f64 / (1 << 20) as f64,
    );
    b.claim(
        "eight times as much",
        kv_bytes_per_token(48, full, 2).unwrap() == 8 * small,
    );

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
    b.from(&[&long_source]).quoted(&long_text_table(&long, 4));
    b.from(&[&long_source]).quoted(&long_text_summaries(&long));

    // The variants' losses.
    let losses = |g: usize| -> Vec<f64> {
        variants
            .iter()
            .filter(|v| v.kv_heads == g)
            .map(|v| v.validation_loss)
            .collect()
    };
    let means: Vec<f64> = [4, 2, 1]
        .iter()
        .map(|&g| losses(g).iter().sum::<f64>() / 3.0)
        .collect();
    let spreads: Vec<f64> = [4, 2, 1]
        .iter()
        .map(|&g| {
            let (lo, hi) = range(&losses(g));
            hi - lo
        })
        .collect();
    let (mean_lo, mean_hi) = range(&means);
    let (spread_lo, spread_hi) = range(&spreads);
    b.from(&[&source]).rounded("0.006", mean_hi - mean_lo);
    b.from(&[&source])
        .rounded("0.012", spread_lo)
        .rounded("0.018", spread_hi);
    b.claim(
        "A quarter of the cache costs nothing measurable here",
        mean_hi - mean_lo < spread_lo,
    );
    let order = |seed: u64| {
        let mut v: Vec<&Variant> = variants.iter().filter(|v| v.seed == seed).collect();
        v.sort_by(|a, b| a.validation_loss.total_cmp(&b.validation_loss));
        v.iter().map(|v| v.kv_heads).collect::<Vec<_>>()
    };
    b.claim(
        "the order of the variants\nchanges from seed to seed",
        order(1) != order(2) || order(2) != order(3),
    );
    let mha_seed_1 = variants
        .iter()
        .find(|v| v.kv_heads == 4 && v.seed == 1)
        .unwrap();
    let ch15 = report::ch15::rotary_final_losses().unwrap();
    b.claim(
        "its loss, 1.7982, is that\nmodel's",
        ch15.iter()
            .any(|&(seed, l)| seed == 1 && (l - mha_seed_1.validation_loss).abs() < 5e-5),
    );

    // Long texts.
    b.exact("511", 511)
        .exact("63", SHAKESPEARE_MODEL.context as f64 - 1.0);
    let all = long_text_curve(&long, 4, CACHES[0].1);
    let window = long_text_curve(&long, 4, CACHES[1].1);
    let past: Vec<f64> = window.iter().filter(|r| r.0 > 64).map(|r| r.1).collect();
    let (w_lo, w_hi) = range(&past);
    b.rounded("1.8", all[0].1)
        .rounded("2.9", all[all.len() - 1].1);
    b.rounded("1.3", w_lo).rounded("2.0", w_hi);
    b.claim(
        "through the window and through sinks plus window it stays",
        w_lo > 1.25 && w_hi < 2.05,
    );
    let [inside, all_past, window_past, _, _] = long_text_summary(&long, 4);
    b.rounded("2.37", all_past)
        .rounded("1.81", inside)
        .rounded("1.75", window_past);
    let gaps: Vec<[f64; 5]> = [4, 2, 1]
        .iter()
        .map(|&g| long_text_summary(&long, g))
        .collect();
    b.rounded("0.013", gaps.iter().map(|g| g[3]).fold(0.0, f64::max))
        .rounded("0.027", gaps.iter().map(|g| g[4]).fold(0.0, f64::max));
    b.claim(
        "Every variant, every seed, tells the same story",
        gaps.iter()
            .all(|g| g[1] > g[0] + 0.3 && g[2] < g[0] && g[4] < 0.03),
    );
    b.claim("its loss climbs", gaps.iter().all(|g| g[1] > g[0] + 0.3));
    b.claim(
        "below the 1.81 within the context",
        gaps.iter().all(|g| g[2] < g[0]),
    );
    b.claim("here it\ndoes no harm", gaps.iter().all(|g| g[2] < g[0]));

    // Writing speed, and the weight on the first position.
    let (speeds, speed_source) = speeds().unwrap();
    b.from(&[&speed_source]).quoted(&speed_table(&speeds));
    b.exact("256", WRITTEN as f64);
    let ratio = speeds[0].1 / speeds[2].1;
    b.from(&[&speed_source]).rounded("1.24", ratio);
    b.claim(
        "the cache shrinks four times, the time per character far less",
        speeds.len() == 3 && ratio > 1.0 && ratio < 2.0,
    );
    let (first, first_source) = first_position().unwrap();
    b.from(&[&first_source])
        .quoted(&first_position_report(&first));
    b.exact("32", 32).exact("240", 240);
    b.claim(
        "Nor does any head lean on the first position",
        first.len() == 9 * 16 && first.iter().all(|r| r.4 < r.5),
    );
    b.claim(
        "Every head of every run puts less weight on position 0 than uniform\nweights would",
        first.len() == 9 * 16 && first.iter().all(|r| r.4 < r.5),
    );
    b.claim(
        "This model does not collapse when its first tokens leave the\nwindow",
        gaps.iter().all(|g| g[2] < g[0] && g[4] < 0.03),
    );
}
