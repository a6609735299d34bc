//! Chapter 20, Attention on images: the chapter's Vision Transformer
//! (its weights in `book/data/ch20-vit-weights.safetensors`) on the first
//! test digits, what its heads look at, and the results of `cargo xtask
//! train vision` (`book/data/ch20-*.tsv`): every model's accuracy over
//! three seeds, accuracy against the number of training images, and
//! attention against occlusion. Draws the chapter's figures. Needs neither
//! the digits nor Python.
//!
//! ```text
//! cargo run --example ch20_attention_on_images
//! ```

use attn::vision::{position_similarity, rollout, Vit, PIXELS};
use ndarray::Array2;
use report::ch20::{
    accuracy_table, chapter_model, control_table, data_size_table, explain_table, explained,
    figure_digits, positions_table, probabilities_table, pytorch_gaps, summary, trained, vit_name,
    CHAPTER_VIT, TRAINING_SIZES,
};
use report::error::ReportError;
use report::plot;

/// The digits whose attention the figure draws.
const DRAWN: usize = 2;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let model = chapter_model()?;
    let digits = figure_digits()?;
    let images: Vec<[u8; PIXELS]> = digits.iter().map(|d| d.1).collect();
    let fwd = model.forward(&images)?;
    println!("== The chapter's ViT on the first test digits: probability of each digit ==");
    println!("{}", probabilities_table(&model, &digits)?);
    let [logits, weights, twice, no_cls] = pytorch_gaps()?;
    println!("\n== Against PyTorch (tests/golden/vit.txt): largest differences ==");
    println!("logits {logits:.1e}, attention weights {weights:.1e}");
    println!("positions added twice: logits {twice:.1}; [CLS] of zeros: logits {no_cls:.1}");

    let (runs, _) = trained()?;
    println!("\n== Test accuracy (%), 500 images, three seeds ==");
    println!("{}", accuracy_table(&runs));
    println!("\n== Test accuracy (%) against training images, three seeds ==");
    println!("{}", data_size_table(&runs));
    let (explained, _) = explained()?;
    println!(
        "\n== The chapter's ViTs over the test images: Spearman's correlation with occlusion =="
    );
    println!("{}", explain_table(&explained));
    println!(
        "\n== The chapter's ViTs' positions: mean cosine similarity of neighbours and of others =="
    );
    println!("{}", positions_table(&explained));
    println!("\n== The measure's positive control: untrained ViTs with row + column positions ==");
    println!("{}", control_table()?);

    draw_heads(&model, &fwd, &images[..DRAWN])?;
    draw_positions(&model)?;
    draw_data_size(&runs);
    Ok(())
}

/// A patch grid's `P` numbers spread over the 8×8 pixels they cover.
fn on_pixels(values: &[f64], patch: usize) -> Array2<f32> {
    let g = 8 / patch;
    Array2::from_shape_fn((8, 8), |(y, x)| values[(y / patch) * g + x / patch] as f32)
}

/// `values` over their largest.
fn relative(values: Array2<f32>) -> Array2<f32> {
    let top = values.iter().fold(f32::MIN_POSITIVE, |m, &x| m.max(x));
    values / top
}

/// Heatmap panels of a grid with `labels` for its rows and columns, one a
/// title, coloured over `range` with the colour bar's caption `value_desc`.
fn panels<'a>(
    titles: &'a [String],
    labels: &'a [&'a str],
    values: Vec<Array2<f32>>,
    (value_desc, range): (&'a str, (f32, f32)),
) -> Vec<(plot::Heatmap<'a>, Array2<f32>)> {
    let heatmap = |title: &'a String| plot::Heatmap {
        title,
        row_labels: labels,
        col_labels: labels,
        x_desc: "column",
        y_desc: "row",
        value_desc,
        range,
        annotate: None,
    };
    titles.iter().map(heatmap).zip(values).collect()
}

/// Figure 20.2: each head's attention from [CLS] in the last block, and
/// rollout, drawn over the digits.
fn draw_heads(
    model: &Vit<f32>,
    fwd: &attn::vision::VitForward<f32>,
    images: &[[u8; PIXELS]],
) -> Result<(), ReportError> {
    let c = model.config();
    let labels: Vec<String> = (0..8).map(|i| i.to_string()).collect();
    let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
    let mut titles = Vec::new();
    let mut values = Vec::new();
    for (i, image) in images.iter().enumerate() {
        titles.push(format!("digit {}", i + 1));
        values.push(relative(Array2::from_shape_fn((8, 8), |(y, x)| f32::from(image[y * 8 + x]))));
        for head in 0..c.heads {
            let w = fwd.weights(c.layers - 1, i, head).map_err(ReportError::from)?;
            let cls: Vec<f64> = w.row(0).iter().skip(1).map(|&x| f64::from(x)).collect();
            titles.push(format!("head {}", head + 1));
            values.push(relative(on_pixels(&cls, c.patch)));
        }
        titles.push("rollout".into());
        values.push(relative(on_pixels(&rollout(model, fwd, i)?, c.patch)));
    }
    let panels = panels(&titles, &labels, values, ("share of the panel's largest", (0.0, 1.0)));
    plot::heatmap_grid("ch20-heads.svg", "What [CLS] attends to in the last block", 3, &panels);
    Ok(())
}

/// Figure 20.3: the cosine similarity of each patch's position vector with
/// every patch's.
fn draw_positions(model: &Vit<f32>) -> Result<(), ReportError> {
    let s = position_similarity(model)?;
    let g = model.config().grid();
    let labels: Vec<String> = (0..g).map(|i| i.to_string()).collect();
    let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
    let titles: Vec<String> = (0..g * g).map(|j| format!("patch ({}, {})", j / g, j % g)).collect();
    let values =
        (0..g * g).map(|j| Array2::from_shape_fn((g, g), |(r, k)| s[[j, r * g + k]] as f32));
    let panels = panels(&titles, &labels, values.collect(), ("cosine similarity", (-1.0, 1.0)));
    plot::heatmap_grid(
        "ch20-positions.svg",
        "Learned positions: each patch against every patch",
        4,
        &panels,
    );
    Ok(())
}

/// Figure 20.1: test accuracy against training images.
fn draw_data_size(runs: &[report::ch20::Trained]) {
    use plot::{line_charts, Chart, Series, BLUE_, ORANGE_};
    let series: Vec<Series> = [
        (vit_name(&CHAPTER_VIT), "ViT, 2×2 patches", BLUE_),
        ("perceptron".to_string(), "MLP", ORANGE_),
    ]
    .into_iter()
    .map(|(model, label, colour)| {
        let points: Vec<(usize, (f64, f64, f64))> =
            TRAINING_SIZES.iter().filter_map(|&n| Some((n, summary(runs, &model, n)?))).collect();
        Series {
            label: label.to_string(),
            points: points.iter().map(|&(n, (m, _, _))| (n as f64, 100.0 * m)).collect(),
            colour,
            dashed: false,
            spread: points.iter().map(|&(_, (_, lo, hi))| (100.0 * lo, 100.0 * hi)).collect(),
        }
    })
    .collect();
    let chart = Chart {
        title: "Test accuracy against training images",
        x_desc: "training images",
        y_desc: "test accuracy (%), 3 seeds",
        log2_x: true,
        log10_y: false,
        y_range: (50.0, 100.0),
    };
    line_charts("ch20-data-size.svg", &[(chart, series)]);
}
