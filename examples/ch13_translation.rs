//! Chapter 13, Attention learns to align: loads the three trained
//! encoder–decoders (`book/data/ch13-*`, written by `cargo xtask train`),
//! translates the held-out numbers greedily and by beam search, measures
//! how alignment-like each cross-attention head is, and draws the learned
//! alignment and the loss curves.
//!
//! ```text
//! cargo run --example ch13_translation
//! ```

use report::plot;

use attn::exercises::ch13::smoothing_floor;
use attn::nn::Parameters;
use attn::translation::alignment_scores;
use attn::translation::{
    book_pairs, number_words, Seq2Seq, TranslationPair, BOOK_SEQ2SEQ, TARGET_VOCAB,
};
use ndarray::Array2;
use report::ch13::{
    alignment_baselines, alignment_report, beam_changes, beam_report, bleu_report, cross_attention,
    decode_and_score, digit_panel, digits, examples_report, pair_labels, scores_report, BEAM,
};

fn data(name: &str) -> Result<String, report::error::ReportError> {
    report::measurements::data_file(name)
}

fn model(name: &str) -> Result<Seq2Seq, report::error::ReportError> {
    Ok(Seq2Seq::from_text(&data(&format!("ch13-{name}-weights.txt"))?)?)
}

fn main() -> Result<(), report::error::ReportError> {
    println!("== The task ==");
    println!("{}", examples_report(&[342_015, 21_000, 305])?);
    let (held_out, train) = book_pairs()?;
    println!(
        "{} training pairs, {} held-out pairs (no number in both)",
        train.len(),
        held_out.len()
    );

    println!("\n== BLEU, worked by hand in the chapter ==");
    println!("{}", bleu_report()?);

    let attention = model("attention")?;
    let mean_pooled = model("mean-pooled")?;
    let smoothed = model("smoothed")?;
    assert_eq!(attention.config(), BOOK_SEQ2SEQ, "the book's model");
    println!("\n== The models: {} parameters each ==", attention.parameter_count());
    assert_eq!(attention.parameter_count(), mean_pooled.parameter_count());

    println!("\n== Held-out scores ==");
    let models: [(&str, &Seq2Seq, &[usize]); 3] = [
        ("attention", &attention, &[1, BEAM][..]),
        ("mean-pooled", &mean_pooled, &[1, BEAM][..]),
        ("attention, label smoothing 0.1", &smoothed, &[1][..]),
    ];
    let (results, translations) = decode_and_score(&models, &held_out)?;
    println!("{}", scores_report(&results));
    for (name, i) in [("attention", 0), ("mean-pooled", 2)] {
        let changes = beam_changes(&translations[i], &translations[i + 1], &held_out);
        println!("{}", beam_report(name, BEAM, changes));
    }

    println!("\n== How alignment-like is each cross-attention head? ==");
    let scores = alignment_scores(&attention, &held_out)?;
    println!("{}", alignment_report(&scores, alignment_baselines(&held_out)?));

    let shown =
        held_out.iter().find(|p| p.source.len() >= 10).expect("a held-out sentence of 10 words");
    println!(
        "\n== Figure: {} → {} ==",
        number_words(shown.number)?.join(" "),
        digits(&shown.target)
    );
    println!(
        "\n== Exercise 2 ==\nlowest loss with label smoothing 0.1 over {TARGET_VOCAB} tokens: {:.4}",
        smoothing_floor(0.1, TARGET_VOCAB)?
    );
    draw_alignment(&attention, shown, &scores)?;
    draw_training()?;
    Ok(())
}

fn draw_alignment(
    net: &Seq2Seq,
    pair: &TranslationPair,
    scores: &[Vec<f64>],
) -> Result<(), report::error::ReportError> {
    let weights = cross_attention(net, pair)?;
    let (words, rows) = pair_labels(pair)?;
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let rows: Vec<&str> = rows.iter().map(String::as_str).collect();
    let as_f32 = |m: &Array2<f64>| m.mapv(|x| x as f32);
    // The most alignment-like head, large, with its weights written in.
    let (layer, head) =
        (0..scores.len()).flat_map(|l| (0..scores[l].len()).map(move |h| (l, h))).fold(
            (0, 0),
            |best, (l, h)| {
                if scores[l][h] > scores[best.0][best.1] {
                    (l, h)
                } else {
                    best
                }
            },
        );
    let title = format!(
        "Decoder layer {}, head {}: cross-attention on a held-out number",
        layer + 1,
        head + 1
    );
    let heatmap = plot::Heatmap {
        title: &title,
        row_labels: &rows,
        col_labels: &words,
        x_desc: "source word (key)",
        y_desc: "digit being predicted (query)",
        value_desc: "attention weight",
        range: (0.0, 1.0),
        annotate: Some(2),
    };
    let path = plot::heatmap("ch13-alignment.svg", &heatmap, &as_f32(&weights[layer][head]));
    println!("wrote {} (layer {}, head {})", path.display(), layer + 1, head + 1);
    // Every layer and head.
    let titles: Vec<String> = (0..weights.len())
        .flat_map(|l| {
            (0..weights[l].len()).map(move |h| format!("layer {}, head {}", l + 1, h + 1))
        })
        .collect();
    let panels: Vec<(plot::Heatmap, Array2<f32>)> = weights
        .iter()
        .flatten()
        .zip(&titles)
        .map(|(w, title)| (digit_panel(title, &rows, &words), as_f32(w)))
        .collect();
    let path = plot::heatmap_grid(
        "ch13-cross-attention.svg",
        "Cross-attention of every decoder layer and head on the same number",
        2,
        &panels,
    );
    println!("wrote {}", path.display());
    Ok(())
}

fn draw_training() -> Result<(), report::error::ReportError> {
    let rows = report::ch13::training_curves()?;
    let series = |column: usize, label: &str, colour| plot::Series {
        label: label.into(),
        points: rows.iter().map(|r| (r[0], r[column])).collect(),
        colour,
        dashed: false,
        spread: Vec::new(),
    };
    let floor = smoothing_floor(0.1, TARGET_VOCAB)?;
    let chart = plot::Chart {
        title: "Training loss",
        x_desc: "step",
        y_desc: "loss (log scale)",
        log2_x: false,
        log10_y: true,
        y_range: (1e-6, 10.0),
    };
    let path = plot::line_charts(
        "ch13-training.svg",
        &[(
            chart,
            vec![
                series(1, "attention", plot::BLUE_),
                series(2, "mean-pooled", plot::ORANGE_),
                series(3, "attention, label smoothing 0.1", plot::GREEN_),
                plot::Series {
                    label: "lowest loss label smoothing 0.1 allows".into(),
                    points: vec![(1.0, floor), (rows.len() as f64, floor)],
                    colour: plot::GREY_,
                    dashed: true,
                    spread: Vec::new(),
                },
            ],
        )],
    );
    println!("wrote {}", path.display());
    Ok(())
}
