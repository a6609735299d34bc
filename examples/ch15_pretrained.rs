//! Chapter 15: attention in a trained model. Prints what the chapter quotes
//! and draws its figures, from the data `cargo xtask model --data` derived
//! from all-MiniLM-L6-v2 and committed in `book/data/`: no model and no
//! Python needed here.

use report::plot;

use ndarray::Array2;
use plotters::prelude::*;
use plotters::style::colors::colormaps::ViridisRGB;
use report::ch15::Corpus;
use report::ch15::TOKENIZER_EXAMPLES;
use report::ch15_data::{read_speeds, Derived};
use report::ch15_report::{
    ablation_report, architecture_report, figure_tokens, layers_report, measured_report,
    positional_heads_report, similarity_report, speed_report, tokens_report,
};

fn main() -> Result<(), report::error::ReportError> {
    let d = Derived::read()?;
    let corpus = Corpus::read()?;
    let corpus_tokens: Vec<_> =
        d.tokens[TOKENIZER_EXAMPLES.len() + 1..].iter().map(|(_, t)| t.clone()).collect();
    println!("== The architecture, read off the weights ==\n{}\n", architecture_report(&d));
    println!("== Tokens ==\n{}\n", tokens_report(&d.tokens[..TOKENIZER_EXAMPLES.len()]));
    println!("== Per layer ==\n{}\n", layers_report(&d, &corpus_tokens));
    println!("== Heads found by position ==\n{}\n", positional_heads_report(&d));
    println!("== Removing one head ==\n{}\n", ablation_report(&d));
    println!("== Similarity ==\n{}\n", similarity_report(&d, &corpus)?);
    let speeds = read_speeds()?;
    println!(
        "== Speed ==\n{}\n{}\n",
        speed_report(speeds.ours, speeds.pytorch),
        measured_report(&speeds.sources[0].line, &speeds.sources[1].line)
    );

    let tokens = figure_tokens(&d)?;
    draw_all_heads(&d, tokens.tokens.len());
    draw_two_heads(&d, &tokens.tokens);
    draw_sinks(&d);
    draw_head_maps(&d);
    Ok(())
}

/// A `layers × heads` matrix of one statistic, as `f32` for a heatmap.
fn per_head(d: &Derived, value: impl Fn(usize, usize) -> f64) -> Array2<f32> {
    Array2::from_shape_fn((d.heads.len(), d.heads[0].len()), |(l, h)| value(l, h) as f32)
}

/// Figure 15.1: all 72 heads on one sentence, a small heatmap each: a
/// column per layer and a row per head, so that the figure fits the book's
/// column at full size.
fn draw_all_heads(d: &Derived, n: usize) {
    let (layers, h) = (d.attention.len(), d.attention[0].shape()[0]);
    let (px, gap, left, top) = (5_i32, 16_i32, 100_i32, 96_i32);
    let side = px * n as i32;
    let width = left + layers as i32 * (side + gap) + 10;
    let height = top + h as i32 * (side + gap) + 10;
    let path = plot::drawing("ch15-all-heads.svg", (width as u32, height as u32), |root| {
        let title = "All 72 heads on one sentence";
        root.draw(&Text::new(title, (10, 10), plot::font(24))).expect("title");
        let note = "rows of a square: queries; columns: keys";
        root.draw(&Text::new(note, (10, 42), plot::font(16))).expect("note");
        for layer in 0..layers {
            let x = left + layer as i32 * (side + gap);
            let label = format!("layer {}", layer + 1);
            root.draw(&Text::new(label, (x + 10, top - 26), plot::font(18))).expect("layer label");
        }
        for head in 0..h {
            let y = top + head as i32 * (side + gap);
            let label = format!("head {}", head + 1);
            root.draw(&Text::new(label, (10, y + side / 2 - 10), plot::font(18)))
                .expect("head label");
        }
        for (layer, weights) in d.attention.iter().enumerate() {
            let x = left + layer as i32 * (side + gap);
            for (head, w) in weights.outer_iter().enumerate() {
                let y = top + head as i32 * (side + gap);
                for ((i, j), &v) in w.indexed_iter() {
                    let colour = ViridisRGB::get_color_normalized(v, 0.0, 1.0);
                    let (cx, cy) = (x + j as i32 * px, y + i as i32 * px);
                    root.draw(&Rectangle::new([(cx, cy), (cx + px, cy + px)], colour.filled()))
                        .expect("cell");
                }
            }
        }
    });
    println!("wrote {}", path.display());
}

/// The head with the largest value of a statistic, `(layer, head)`.
fn strongest(d: &Derived, value: impl Fn(usize, usize) -> f64) -> (usize, usize) {
    let values = per_head(d, value);
    let (at, _) = values.indexed_iter().max_by(|a, b| a.1.total_cmp(b.1)).expect("72 heads");
    at
}

/// Figure 15.2: the strongest previous-token head and the head that puts
/// most weight on [CLS], with the tokens.
fn draw_two_heads(d: &Derived, tokens: &[String]) {
    let labels: Vec<&str> = tokens.iter().map(String::as_str).collect();
    let previous = strongest(d, |l, h| d.heads[l][h].0.previous);
    let cls = strongest(d, |l, h| d.heads[l][h].0.cls);
    let titles = [
        format!("Layer {} head {}: the previous token", previous.0 + 1, previous.1 + 1),
        format!("Layer {} head {}: [CLS]", cls.0 + 1, cls.1 + 1),
    ];
    let panels: Vec<(plot::Heatmap, Array2<f32>)> = [previous, cls]
        .iter()
        .zip(&titles)
        .map(|(&(l, h), title)| {
            let heatmap = plot::Heatmap {
                title,
                row_labels: &labels,
                col_labels: &labels,
                x_desc: "key",
                y_desc: "query",
                value_desc: "attention weight",
                range: (0.0, 1.0),
                annotate: None,
            };
            (heatmap, d.attention[l].index_axis(ndarray::Axis(0), h).to_owned())
        })
        .collect();
    let path =
        plot::heatmap_grid("ch15-two-heads.svg", "Two heads of the trained model", 1, &panels);
    println!("wrote {}", path.display());
}

/// Figure 15.3: the weight on [CLS] and on [SEP], per layer.
fn draw_sinks(d: &Derived) {
    let layer_mean = |f: &dyn Fn(usize, usize) -> f64| -> Vec<(f64, f64)> {
        (0..d.heads.len())
            .map(|l| {
                let h = d.heads[l].len();
                ((l + 1) as f64, (0..h).map(|i| f(l, i)).sum::<f64>() / h as f64)
            })
            .collect()
    };
    let series = |label: &str, points, colour, dashed| plot::Series {
        label: label.into(),
        points,
        colour,
        dashed,
        spread: Vec::new(),
    };
    let chart = plot::Chart {
        title: "Attention on the special tokens, by layer (corpus mean)",
        x_desc: "layer",
        y_desc: "share of a query's attention",
        log2_x: false,
        log10_y: false,
        y_range: (0.0, 1.0),
    };
    let path = plot::line_charts(
        "ch15-sinks.svg",
        &[(
            chart,
            vec![
                series("on [CLS]", layer_mean(&|l, h| d.heads[l][h].0.cls), plot::BLUE_, false),
                series("on [SEP]", layer_mean(&|l, h| d.heads[l][h].0.sep), plot::ORANGE_, false),
            ],
        )],
    );
    println!("wrote {}", path.display());
}

/// Figures 15.4 and 15.5: per head, the weight on the previous and on the
/// next token; and how far removing the head moves the embeddings.
fn draw_head_maps(d: &Derived) {
    let layers: Vec<String> = (1..=d.heads.len()).map(|l| format!("layer {l}")).collect();
    let heads: Vec<String> = (1..=d.heads[0].len()).map(|h| h.to_string()).collect();
    let (rows, cols): (Vec<&str>, Vec<&str>) =
        (layers.iter().map(String::as_str).collect(), heads.iter().map(String::as_str).collect());
    let map = |title, value_desc, range, annotate| plot::Heatmap {
        title,
        row_labels: &rows,
        col_labels: &cols,
        x_desc: "head",
        y_desc: "",
        value_desc,
        range,
        annotate: Some(annotate),
    };
    let panels = [
        (
            map("Weight on the previous token", "mean weight", (0.0, 1.0), 2),
            per_head(d, |l, h| d.heads[l][h].0.previous),
        ),
        (
            map("Weight on the next token", "mean weight", (0.0, 1.0), 2),
            per_head(d, |l, h| d.heads[l][h].0.next),
        ),
    ];
    let path = plot::heatmap_grid(
        "ch15-positional-heads.svg",
        "Heads that attend by position (corpus mean)",
        1,
        &panels,
    );
    println!("wrote {}", path.display());
    let shift = per_head(d, |l, h| d.heads[l][h].1.shift);
    let top = shift.iter().fold(0.0_f32, |m, &x| m.max(x));
    let h = map(
        "How far the paraphrases' embeddings move without each head (1 − cos)",
        "1 − cos",
        (0.0, top),
        3,
    );
    let path = plot::heatmap("ch15-ablation.svg", &h, &shift);
    println!("wrote {}", path.display());
}
