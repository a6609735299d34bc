//! Chapter 17, Sharing and forgetting keys: the KV cache of published
//! models; grouped-query attention, absorbed latent attention and the ring
//! buffer checked against what they must equal; the trained variants'
//! losses, the multi-head models pooled to fewer key/value heads, and the
//! loss along long texts (`book/data/ch17-*`, written by `cargo xtask train
//! kv`); and the chapter's figures. Needs neither the
//! corpus nor Python.
//!
//! ```text
//! cargo run --example ch17_sharing_keys
//! cargo run --example ch17_sharing_keys -- --kv-heads 1 --window 16 --sinks 4   # --help
//! ```

use clap::{value_parser, Arg, Command};
use report::ch17::pooled::{pooled_runs, pooled_table};
use report::ch17::{
    book_caches_of, equalities_of, first_position, first_position_report, long_text_curve,
    long_text_summaries, long_text_table, long_texts, losses_of, mean, published_table, range,
    speed_table, speeds, variant_table, variants, Attention, LongText, Variant, ATTENTIONS, CACHES,
    GROUPED_CHECK, RING,
};
use report::error::ReportError;
use report::plot;

/// What a reader may change: the key/value heads of the grouped-query
/// check (and of one more line of the cache table), and the ring buffer's
/// tokens, window and sinks.
struct Options {
    kv_heads: usize,
    ring: (usize, usize, usize),
}

fn options() -> Options {
    let size = |name: &'static str, default: usize, help: &'static str| {
        Arg::new(name)
            .long(name)
            .value_parser(value_parser!(usize))
            .help(format!("{help} [default: {default}, the chapter's]"))
    };
    let (tokens, window, sinks) = RING;
    let matches = Command::new("ch17_sharing_keys")
        .about("Chapter 17: caches of shared, compressed and forgotten keys, checked and measured")
        .after_help("A run with other sizes draws its figures into target/figures/.")
        .arg(size("kv-heads", GROUPED_CHECK, "Key/value heads for 4 query heads (1, 2 or 4)"))
        .arg(size("window", window, "The ring buffer's window of recent tokens (at least 1)"))
        .arg(size("sinks", sinks, "The ring buffer's sinks, the first tokens it keeps"))
        .arg(size("tokens", tokens, "Tokens the ring buffer reads"))
        .get_matches();
    let get = |name: &str, default| matches.get_one::<usize>(name).copied().unwrap_or(default);
    Options {
        kv_heads: get("kv-heads", GROUPED_CHECK),
        ring: (get("tokens", tokens), get("window", window), get("sinks", sinks)),
    }
}

fn main() -> Result<(), ReportError> {
    let options = options();
    println!("== The KV cache of published models, 16-bit numbers ==");
    println!("{}", published_table()?);

    println!("\n== This book's model (4 blocks of 4 heads, 32 wide; f32) ==");
    let mut caches = ATTENTIONS.to_vec();
    if !caches.contains(&Attention::KvHeads(options.kv_heads)) {
        caches.push(Attention::KvHeads(options.kv_heads));
    }
    println!("{}", book_caches_of(&caches)?);

    println!("\n== Each against what it must equal (largest difference) ==");
    println!("{}", equalities_of(options.kv_heads, options.ring)?);

    let variants = variants()?;
    println!("\n== Three ways to share keys and one to compress them, trained three times each: validation loss ==");
    println!("{}", variant_table(&variants));
    println!("\n== Multi-head models pooled to fewer key/value heads, mean of three seeds ==");
    println!("{}", pooled_table(&pooled_runs()?, &variants));

    let long = long_texts()?;
    println!("\n== Long texts: 8 × 512 characters, multi-head, mean of three seeds ==");
    println!("{}", long_text_table(&long, Attention::KvHeads(4)));
    println!("\n== Long texts, every variant that shares heads: mean loss, mean of three seeds ==");
    println!("{}", long_text_summaries(&long));

    let (speeds, _) = speeds()?;
    println!("\n== Writing through the cache, by variant (best of 5, one thread) ==");
    println!("{}", speed_table(&speeds));
    let (first, _) = first_position()?;
    println!("\n== Weight on the first position, every head of every run ==");
    println!("{}", first_position_report(&first));

    draw_variants(&variants);
    draw_long_texts(&long);
    Ok(())
}

/// Figure 17.1: validation loss against cache bytes per token, every run.
fn draw_variants(variants: &[Variant]) {
    use plot::{line_charts, Chart, Series, BLUE_, GREEN_, GREY_, ORANGE_, PURPLE_};
    let colours = [BLUE_, ORANGE_, GREEN_];
    let mut series: Vec<Series> = [1, 2, 3]
        .into_iter()
        .zip(colours)
        .map(|(seed, colour)| Series {
            label: format!("seed {seed}"),
            points: variants
                .iter()
                .filter(|v| v.seed == seed && v.attention != Attention::Latent)
                .map(|v| (v.bytes as f64, v.validation_loss))
                .collect(),
            colour,
            dashed: false,
            spread: Vec::new(),
        })
        .collect();
    let mean = |g: usize| mean(&losses_of(variants, Attention::KvHeads(g)));
    series.push(Series {
        label: "mean".into(),
        points: [1, 2, 4]
            .iter()
            .filter_map(|&g| {
                let bytes = variants.iter().find(|v| v.attention == Attention::KvHeads(g))?.bytes;
                Some((bytes as f64, mean(g)))
            })
            .collect(),
        colour: GREY_,
        dashed: true,
        spread: Vec::new(),
    });
    // Latent attention: its three seeds at its one cache size, lowest to highest.
    let mut latent: Vec<(f64, f64)> = variants
        .iter()
        .filter(|v| v.attention == Attention::Latent)
        .map(|v| (v.bytes as f64, v.validation_loss))
        .collect();
    latent.sort_by(|a, b| a.1.total_cmp(&b.1));
    series.push(Series {
        label: "latent, 3 seeds".into(),
        points: latent,
        colour: PURPLE_,
        dashed: false,
        spread: Vec::new(),
    });
    let losses: Vec<f64> = variants.iter().map(|v| v.validation_loss).collect();
    let (lo, hi) = range(&losses);
    let chart = Chart {
        title: "Validation loss against KV cache per token",
        x_desc: "cache bytes per token (1 to 4 key/value heads; latent)",
        y_desc: "validation loss (nats)",
        log2_x: true,
        log10_y: false,
        // Room above the runs for the legend, in the upper left.
        y_range: (lo - 0.01, hi + 0.07),
    };
    line_charts("ch17-variants.svg", &[(chart, series)]);
}

/// Figure 17.2: loss along long texts through each cache.
fn draw_long_texts(rows: &[LongText]) {
    use plot::{line_charts, Chart, Series, BLUE_, GREEN_, ORANGE_};
    let colours = [BLUE_, ORANGE_, GREEN_];
    let series: Vec<Series> = CACHES
        .iter()
        .zip(colours)
        .map(|((name, f), colour)| Series {
            label: name.to_string(),
            points: long_text_curve(rows, Attention::KvHeads(4), *f)
                .iter()
                .map(|&(p, mean, _, _)| (p as f64, mean))
                .collect(),
            colour,
            dashed: false,
            spread: Vec::new(),
        })
        .collect();
    let values: Vec<f64> = series.iter().flat_map(|s| s.points.iter().map(|p| p.1)).collect();
    let (lo, hi) = range(&values);
    let chart = Chart {
        title: "Loss along texts 8 times the context",
        x_desc: "position in the text",
        y_desc: "loss (nats), mean of 3 seeds",
        log2_x: false,
        log10_y: false,
        y_range: (lo - 0.1, hi + 0.1),
    };
    line_charts("ch17-long-text.svg", &[(chart, series)]);
}
