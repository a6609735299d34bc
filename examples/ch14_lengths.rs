//! Chapter 14, The bottleneck, measured: reads the length experiment's
//! results (`book/data/ch14-*`, written by `cargo xtask train ch14`), prints
//! exact accuracy by source length for the four models, on held-out and on
//! training pairs, with how alignment-like each model's attention is, and
//! draws accuracy by length and the GRU's additive attention beside
//! chapter 13's Transformer head.
//!
//! ```text
//! cargo run --example ch14_lengths
//! ```

use report::plot;

use attn::translation::{book_pairs, RnnSeq2Seq, Seq2Seq, TranslationPair};
use report::ch13::{alignment_baselines, cross_attention, digit_panel, pair_labels};
use report::ch14_lengths::{
    data_report, exact_share, gru_attention, length_pairs, length_table, models_report,
    read_lengths, read_models, read_train_lengths, spread, LengthModel, LengthRow, Spread, LENGTHS,
};

fn data(name: &str) -> Result<String, report::error::ReportError> {
    report::measurements::data_file(name)
}

fn main() -> Result<(), report::error::ReportError> {
    println!("== The length experiment (book/data/ch14-lengths.csv) ==");
    let (length_held_out, length_train) = length_pairs()?;
    println!("{}", data_report(&length_held_out, &length_train));
    let rows = read_lengths()?;
    println!("exact accuracy by source length: mean over the seeds (lowest–highest)");
    println!("{}", length_table(&rows));
    println!("the same, on each model's own training pairs (book/data/ch14-train-lengths.csv)");
    println!("{}", length_table(&read_train_lengths()?));
    let baselines = alignment_baselines(&length_held_out)?;
    println!("{}", models_report(&read_models()?, baselines));

    // Chapter 13's held-out number and its most alignment-like head.
    let (held_out, _) = book_pairs()?;
    let shown =
        held_out.iter().find(|p| p.source.len() >= 10).expect("a held-out sentence of 10 words");
    let transformer = Seq2Seq::from_text(&data("ch13-attention-weights.txt")?)?;
    let gru = RnnSeq2Seq::from_text(&data("ch14-gru-attention-weights.txt")?)?;
    draw_side_by_side(&gru, &transformer, shown)?;
    draw_length(&rows);
    Ok(())
}

/// Additive attention's weights beside the Transformer's most
/// alignment-like head (layer 2, head 1) on the same number.
fn draw_side_by_side(
    gru: &RnnSeq2Seq,
    transformer: &Seq2Seq,
    pair: &TranslationPair,
) -> Result<(), report::error::ReportError> {
    let additive = gru_attention(gru, pair)?.expect("the GRU with attention");
    let cross = &cross_attention(transformer, pair)?[1][0];
    let (words, rows) = pair_labels(pair)?;
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let rows: Vec<&str> = rows.iter().map(String::as_str).collect();
    let panels = [
        (digit_panel("GRU, additive attention", &rows, &words), additive.mapv(|x| x as f32)),
        (digit_panel("Transformer, layer 2, head 1", &rows, &words), cross.mapv(|x| x as f32)),
    ];
    let path = plot::heatmap_grid(
        "ch14-gru-alignment.svg",
        "Where each digit looks: a GRU's additive attention and a Transformer's head",
        2,
        &panels,
    );
    println!("wrote {}", path.display());
    Ok(())
}

/// Exact accuracy and BLEU against source length, each model's mean over
/// its seeds with a bar from the lowest seed to the highest.
fn draw_length(rows: &[LengthRow]) {
    let colours = [plot::ORANGE_, plot::BLUE_, plot::PURPLE_, plot::GREEN_];
    let series = |score: fn(&LengthRow) -> f64| -> Vec<plot::Series> {
        LengthModel::ALL
            .iter()
            .zip(colours)
            .map(|(&m, colour)| {
                let spreads: Vec<(f64, Spread)> =
                    LENGTHS.iter().map(|&l| (l as f64, spread(rows, m, l, score))).collect();
                plot::Series {
                    label: m.name().into(),
                    points: spreads.iter().map(|(l, s)| (*l, s.mean)).collect(),
                    colour,
                    dashed: false,
                    spread: spreads.iter().map(|(_, s)| (s.low, s.high)).collect(),
                }
            })
            .collect()
    };
    let chart = |title, y_desc| plot::Chart {
        title,
        x_desc: "source length (words)",
        y_desc,
        log2_x: false,
        log10_y: false,
        y_range: (0.0, 1.4),
    };
    let path = plot::line_charts(
        "ch14-length.svg",
        &[
            (
                chart(
                    "Held-out exact accuracy by source length",
                    "share translated exactly (greedy)",
                ),
                series(exact_share),
            ),
            (chart("Held-out BLEU by source length", "corpus BLEU (greedy)"), series(|r| r.bleu)),
        ],
    );
    println!("wrote {}", path.display());
}
