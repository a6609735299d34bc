//! Chapter 14, a second task: loads the summarisation model
//! (`book/data/ch14-summary-weights.txt`, written by `cargo xtask train
//! ch14`), prints ROUGE's worked example, each seed's held-out scores and
//! how the cross-attention spreads over the runs, and draws the
//! cross-attention on one held-out source and the spread against run
//! length.
//!
//! ```text
//! cargo run --example ch14_summary
//! ```

use attn::translation::{summary_words, translate, Seq2Seq, SummaryPair, RUN_LENGTHS};
use report::ch14_summary::{
    read_spread, read_summary, rouge_example, seed_range, spread_table, summary_config,
    summary_example, summary_pairs, summary_report, SpreadRow, KINDS, MEASURED_LAYER,
};
use report::plot;

fn main() -> Result<(), report::error::ReportError> {
    println!("== ROUGE, worked by hand in the chapter ==");
    println!("{}", rouge_example()?);

    let (held_out, train) = summary_pairs()?;
    println!(
        "\n== The task ==\n{} training pairs, {} held-out pairs (none in both)",
        train.len(),
        held_out.len()
    );
    let text = report::measurements::data_file("ch14-summary-weights.txt")?;
    let net = Seq2Seq::from_text(&text)?;
    assert_eq!(net.config(), summary_config(), "the book's summariser");
    let shown = &held_out[0];
    let candidate = translate(&net, &shown.source, 1)?;
    println!("{}", summary_example(shown, &candidate));

    println!("\n== Held-out scores, greedy (book/data/ch14-summary.csv) ==");
    println!("{}", summary_report(&read_summary()?));

    println!(
        "\n== How decoder layer {}'s cross-attention spreads over each run ==",
        MEASURED_LAYER + 1
    );
    let spread = read_spread()?;
    println!("{}", spread_table(&spread));

    draw_attention(&net, shown)?;
    draw_spread(&spread);
    Ok(())
}

/// Every head of the measured layer on one held-out source.
fn draw_attention(net: &Seq2Seq, pair: &SummaryPair) -> Result<(), report::error::ReportError> {
    let one = attn::translation::batch(&[(&pair.source[..], &pair.target[..])])?;
    let fwd = net.forward(&one)?;
    let words = summary_words(&pair.source, true);
    let mut rows = summary_words(&pair.target, false);
    rows.push("EOS".into());
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let rows: Vec<&str> = rows.iter().map(String::as_str).collect();
    let titles: Vec<String> = (0..net.config().heads)
        .map(|h| format!("layer {}, head {}", MEASURED_LAYER + 1, h + 1))
        .collect();
    let mut panels = Vec::new();
    for (h, title) in titles.iter().enumerate() {
        let heatmap = plot::Heatmap {
            title,
            row_labels: &rows,
            col_labels: &words,
            x_desc: "source word",
            y_desc: "summary token predicted",
            value_desc: "attention weight",
            range: (0.0, 1.0),
            annotate: None,
        };
        let w = fwd.cross_weights(MEASURED_LAYER, 0, h)?.mapv(|x| x as f32);
        panels.push((heatmap, w));
    }
    let path = plot::heatmap_grid(
        "ch14-summary-attention.svg",
        "Cross-attention of a summariser: each token over its run",
        2,
        &panels,
    );
    println!("wrote {}", path.display());
    Ok(())
}

/// Entropy over the source, weight inside the run and entropy inside it
/// against the run's length, for counts and colours: the mean of the
/// seeds with a bar from the lowest to the highest, and `ln L` for weights
/// spread evenly over the run.
fn draw_spread(rows: &[SpreadRow]) {
    let series = |kind: usize, value: fn(&SpreadRow) -> f64, colour| {
        let lengths: Vec<usize> = RUN_LENGTHS.collect();
        let mean = |l: usize| {
            let of = rows.iter().filter(|r| r.kind == kind && r.span == l);
            let values: Vec<f64> = of.map(value).collect();
            values.iter().sum::<f64>() / values.len().max(1) as f64
        };
        plot::Series {
            label: format!("{} tokens", KINDS[kind]),
            points: lengths.iter().map(|&l| (l as f64, mean(l))).collect(),
            colour,
            dashed: false,
            spread: lengths.iter().map(|&l| seed_range(rows, (kind, l), value)).collect(),
        }
    };
    let with_even = |value: fn(&SpreadRow) -> f64| {
        let even = plot::Series {
            label: "ln L: even over the run".into(),
            points: RUN_LENGTHS.map(|l| (l as f64, (l as f64).ln())).collect(),
            colour: plot::GREY_,
            dashed: true,
            spread: Vec::new(),
        };
        vec![series(0, value, plot::ORANGE_), series(1, value, plot::BLUE_), even]
    };
    let chart = |title, y_desc, top| plot::Chart {
        title,
        x_desc: "length L of the run the token sums up (words)",
        y_desc,
        log2_x: false,
        log10_y: false,
        y_range: (0.0, top),
    };
    let in_run =
        vec![series(0, |r| r.in_span, plot::ORANGE_), series(1, |r| r.in_span, plot::BLUE_)];
    let path = plot::line_charts(
        "ch14-summary-spread.svg",
        &[
            (
                chart("Entropy of a token's weights over the source", "entropy (nats)", 3.5),
                with_even(|r| r.entropy),
            ),
            (chart("Weight on the token's own run", "share of the weight", 1.4), in_run),
            (
                chart(
                    "Entropy of the weights inside the run, rescaled to sum to 1",
                    "entropy (nats)",
                    3.5,
                ),
                with_even(|r| r.in_run_entropy),
            ),
        ],
    );
    println!("wrote {}", path.display());
}
