//! Chapter 19, Serving attention: the paged cache checked against the
//! contiguous one for every variant of chapter 17, the blocks a shared
//! prefix saves, a small server's texts against each request's alone, and
//! speculative sampling's rule on three tokens; then what `cargo xtask
//! measure serving` measured (`book/data/ch19-*.tsv`): the decode step by
//! attention, batch and context, continuous against static batching, and
//! speculative decoding by draft and k; and the chapter's figures. Needs
//! neither the corpus nor Python.
//!
//! ```text
//! cargo run --example ch19_serving
//! cargo run --example ch19_serving -- --block-size 1   # --help
//! ```

use clap::{value_parser, Arg, Command};
use report::ch17::ATTENTIONS;
use report::ch19::checks::{
    paged_against_contiguous, prefix_hits, served_against_alone, server_trace, sharing_prompts,
    worked_example, CHECK_BLOCK, CHECK_TOKENS, SERVED_BUDGET, SERVED_REQUESTS, SERVED_SLOTS,
    SHARED_PREFIX, SHARING_PROMPTS, TRACED, WORKED,
};
use report::ch19::measure::{BLOCK_SIZE, KS, SLOTS};
use report::ch19::{
    batching, batching_table, decode_steps, decode_table, runs_of, speculative, speculative_table,
    spread, step, Decode, Speculative,
};
use report::error::ReportError;
use report::plot::{self, line_charts, line_charts_legend_beside, Chart, Series};

fn main() -> Result<(), ReportError> {
    let matches = Command::new("ch19_serving")
        .about("Chapter 19: a paged KV cache, shared prefixes, batching and speculative decoding")
        .after_help("The measured tables and figures do not depend on --block-size.")
        .arg(
            Arg::new("block-size")
                .long("block-size")
                .value_parser(value_parser!(usize))
                .help(format!("Tokens a block holds in the checks [default: {CHECK_BLOCK}]")),
        )
        .get_matches();
    let b = matches.get_one::<usize>("block-size").copied().unwrap_or(CHECK_BLOCK);
    println!(
        "== The paged cache against the contiguous one, {CHECK_TOKENS} tokens, blocks of {b} =="
    );
    for attention in ATTENTIONS {
        let worst = paged_against_contiguous(attention, (CHECK_TOKENS, b))?;
        println!("{:>6}: largest difference of the logits {worst:.1e}", attention.to_string());
    }
    let prompts = sharing_prompts(SHARING_PROMPTS, SHARED_PREFIX);
    let (hits, worst) = prefix_hits(&prompts, b)?;
    println!("\n== {SHARING_PROMPTS} prompts sharing their first {SHARED_PREFIX} tokens, blocks of {b} ==");
    println!("blocks found in the prefix cache, prompt by prompt: {hits:?}");
    println!("largest difference of the last logits from reading alone: {worst:.1e}");
    let (reports, equal) = served_against_alone(SERVED_REQUESTS)?;
    println!(
        "\n== A server of {SERVED_REQUESTS} requests, {SERVED_SLOTS} slots, {SERVED_BUDGET} tokens a step =="
    );
    println!("{}", server_trace(&reports, TRACED));
    println!("{} steps; every text the one its request gets alone: {equal}", reports.len());
    let (p, q) = WORKED;
    let (keep, residual) = worked_example()?;
    println!("\n== Speculative sampling on three tokens ==");
    println!("target p:         {p:?}\ndraft q:          {q:?}");
    println!("kept if proposed: {:?}", keep.iter().map(|k| round(*k)).collect::<Vec<_>>());
    println!("residual:         {:?}", residual.iter().map(|r| round(*r)).collect::<Vec<_>>());

    let (steps, triad, source) = decode_steps()?;
    println!("\n== A decode step, ms ({}; paged, blocks of {BLOCK_SIZE}) ==", source.statistic);
    println!("{}", decode_table(&steps)?);
    let fastest = steps.iter().filter(|d| d.paged).map(Decode::rate).fold(0.0, f64::max);
    println!(
        "triad {triad:.1} GB/s; the cache read at most at {:.1} GB/s, {:.0}% of it",
        fastest / 1e9,
        100.0 * fastest / (triad * 1e9)
    );
    let (runs, _) = batching()?;
    println!("\n== Continuous against static batching, {SLOTS} slots ==");
    println!("{}", batching_table(&runs));
    let (runs, _) = speculative()?;
    println!("\n== Speculative decoding, greedy (one layer: mean of 3 drafts) ==");
    println!("{}", speculative_table(&runs, true));
    println!("\n== Speculative decoding, sampled at temperature 1 ==");
    println!("{}", speculative_table(&runs, false));

    draw_decode(&steps, triad);
    draw_speculative(&runs);
    Ok(())
}

/// `x` to three decimals, for printing.
fn round(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

const COLOURS: [plotters::style::RGBColor; 4] =
    [plot::BLUE_, plot::ORANGE_, plot::GREEN_, plot::PURPLE_];

/// Figure 19.1: a step's time against the bytes of cache it reads, at
/// batch 64, with the time reading them at the triad's rate would take.
fn draw_decode(steps: &[Decode], triad: f64) {
    let contexts = report::ch19::measure::CONTEXTS;
    let mut series: Vec<Series> = ATTENTIONS
        .iter()
        .zip(COLOURS)
        .map(|(&a, colour)| Series {
            label: match a {
                report::ch17::Attention::KvHeads(1) => "1 key/value head".into(),
                report::ch17::Attention::KvHeads(g) => format!("{g} key/value heads"),
                report::ch17::Attention::Latent => "latent".into(),
            },
            points: contexts
                .iter()
                .filter_map(|&c| step(steps, a, (64, c)))
                .map(|d| (d.cache_bytes as f64 / 1e6, d.seconds * 1e3))
                .collect(),
            colour,
            dashed: false,
            spread: Vec::new(),
        })
        .collect();
    let bytes: Vec<f64> = series.iter().flat_map(|s| s.points.iter().map(|p| p.0)).collect();
    let (lo, hi) = (
        bytes.iter().copied().fold(f64::INFINITY, f64::min),
        bytes.iter().copied().fold(0.0, f64::max),
    );
    series.push(Series {
        label: "at the triad's rate".into(),
        points: [lo, hi].iter().map(|&mb| (mb, mb * 1e6 / (triad * 1e9) * 1e3)).collect(),
        colour: plot::GREY_,
        dashed: true,
        spread: Vec::new(),
    });
    let chart = Chart {
        title: "A decode step of 64 sequences, 64 to 2,048 tokens each",
        x_desc: "MB of KV cache read (log scale)",
        y_desc: "ms per step (log scale)",
        log2_x: true,
        log10_y: true,
        y_range: (0.1, 300.0),
    };
    line_charts_legend_beside("ch19-decode.svg", &[(chart, series)]);
}

/// Figure 19.2: tokens a pass of the target, and speed against the target
/// alone, by k.
fn draw_speculative(runs: &[Speculative]) {
    let lines = |f: fn(&Speculative) -> f64| -> Vec<Series> {
        let mut out = Vec::new();
        for (i, (draft, greedy)) in
            [("bigram", true), ("one layer", true), ("bigram", false), ("one layer", false)]
                .into_iter()
                .enumerate()
        {
            let at: Vec<(f64, (f64, f64, f64))> = KS
                .iter()
                .map(|&k| (k as f64, spread(&runs_of(runs, (draft, k, greedy)), f)))
                .collect();
            out.push(Series {
                label: format!("{draft}, {}", if greedy { "greedy" } else { "sampled" }),
                points: at.iter().map(|&(k, (mean, _, _))| (k, mean)).collect(),
                colour: COLOURS[i],
                dashed: false,
                spread: at.iter().map(|&(_, (_, lo, hi))| (lo, hi)).collect(),
            });
        }
        out
    };
    let one = |label: &str| Series {
        label: label.into(),
        points: vec![(1.0, 1.0), (8.0, 1.0)],
        colour: plot::GREY_,
        dashed: true,
        spread: Vec::new(),
    };
    let mut per_pass = lines(Speculative::per_pass);
    per_pass.push(one("the target alone"));
    let mut speed = lines(Speculative::speedup);
    speed.push(one("the target alone"));
    let top = Chart {
        title: "Tokens written per pass of the target",
        x_desc: "draft tokens a round, k (log scale)",
        y_desc: "tokens per pass",
        log2_x: true,
        log10_y: false,
        y_range: (0.0, 4.5),
    };
    let bottom = Chart {
        title: "Speed against the target alone",
        y_desc: "speed-up",
        y_range: (0.0, 1.5),
        ..top
    };
    line_charts("ch19-speculative.svg", &[(top, per_pass), (bottom, speed)]);
}
