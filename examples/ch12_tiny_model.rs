//! Chapter 12, Training a tiny Transformer: loads the committed weights and
//! training log (`book/data/ch12-*`, written by `cargo xtask train`), prints
//! the model's size, its held-out accuracy and how it attends, decodes a few
//! examples, and draws the loss curve and the learned attention maps.
//!
//! ```text
//! cargo run --example ch12_tiny_model
//! ```

use report::plot;

use attn::model::{
    accuracy, held_out, inputs_and_targets, ModelConfig, Task, TinyTransformer, BOOK_MODEL,
    BOOK_TRAINING, HELD_OUT,
};
use attn::nn::Parameters;
use ndarray::Array2;
use report::ch12::{
    ablation_report, ablations, accuracy_after, accuracy_report, digit_attention,
    digit_attention_report, mirror_attention, mirror_report, residual_report, token,
    uniform_target_share,
};
use report::show::table;

fn data(name: &str) -> Result<String, report::error::ReportError> {
    report::measurements::data_file(name)
}

fn main() -> Result<(), report::error::ReportError> {
    let net = TinyTransformer::from_text(&data("ch12-weights.txt")?)?;
    let c = ModelConfig::of(&net)?;
    println!(
        "== The model: k = {}, d_model = {}, {} heads, d_ff = {}, {} blocks; {} parameters ==",
        c.k,
        c.d_model,
        c.heads,
        c.d_ff,
        c.layers,
        net.parameter_count()
    );
    assert_eq!(c, BOOK_MODEL, "the weights are the book's model");

    let log = report::ch12::training_log()?;
    let at = |step: usize| log[step - 1].1;
    println!(
        "\n== Training: {} steps of {} sequences ==",
        BOOK_TRAINING.steps, BOOK_TRAINING.batch
    );
    let rows: Vec<Vec<String>> = [1, 20, 30, 40, 50, 100, 200, 600]
        .iter()
        .map(|&s| {
            let acc = log[s - 1].2.map_or("–".into(), |a| format!("{a:.3}"));
            vec![s.to_string(), format!("{:.4}", at(s)), acc]
        })
        .collect();
    println!("{}", table(&["step", "loss", "held-out exact (200)"], &rows));
    println!("uniform guess over 11 tokens: loss ln 11 = {:.4}", 11f64.ln());

    println!("\n== Held-out: {} sequences never drawn in training ==", HELD_OUT.0);
    let test = held_out(Task::REVERSE, c.k, HELD_OUT.0, HELD_OUT.1)?;
    println!("{}", accuracy_report(&net, &test, accuracy(&net, &test)?)?);

    println!("\n== Mean weight on the mirrored digit (key k − 1 − j for answer step j) ==");
    println!("{}", mirror_report(&mirror_attention(&net, &test)?));

    println!(
        "\n== The residual stream after each block, read through the final LayerNorm and head =="
    );
    let after = (0..=c.layers)
        .map(|depth| accuracy_after(&net, &test, depth))
        .collect::<Result<Vec<f64>, _>>()?;
    println!("{}", residual_report(&after));

    println!("\n== Exercise 1: the same model trained to sort ==");
    let sorter = TinyTransformer::from_text(&data("ch12-sort-weights.txt")?)?;
    assert_eq!(ModelConfig::of(&sorter)?, BOOK_MODEL, "the sorting weights are the book's model");
    let sort_test = held_out(attn::exercises::ch12::SORT, c.k, HELD_OUT.0, HELD_OUT.1)?;
    println!("{}", accuracy_report(&sorter, &sort_test, accuracy(&sorter, &sort_test)?)?);
    println!(
        "{}\n",
        digit_attention_report(&[
            ("reverse", &digit_attention(&net, &test)?, uniform_target_share(&test, c.k)?),
            (
                "sort",
                &digit_attention(&sorter, &sort_test)?,
                uniform_target_share(&sort_test, c.k)?
            ),
        ])
    );

    println!("\n== Removing heads: held-out accuracy, greedy ==");
    let (reverse, sort) = (ablations(&net, &test)?, ablations(&sorter, &sort_test)?);
    println!("{}", ablation_report(&[("reverse", &reverse), ("sort", &sort)]));
    println!("\n== The sorting model's residual stream after each block ==");
    let sort_after = (0..=c.layers)
        .map(|depth| accuracy_after(&sorter, &sort_test, depth))
        .collect::<Result<Vec<f64>, _>>()?;
    println!("{}", residual_report(&sort_after));

    draw_training(&log);
    draw_attention(
        &net,
        &test[0],
        "ch12-attention.svg",
        "Learned attention on a held-out example (prompt, separator |, answer so far)",
    )?;
    draw_attention(
        &sorter,
        &sort_test[0],
        "ch12-sort-attention.svg",
        "Learned attention of the sorting model on a held-out example",
    )?;
    Ok(())
}

fn draw_training(log: &[(usize, f64, Option<f64>)]) {
    let loss = plot::Series {
        label: "training loss (cross-entropy, answer tokens)".into(),
        points: log.iter().map(|&(s, l, _)| (s as f64, l)).collect(),
        colour: plot::BLUE_,
        dashed: false,
        spread: Vec::new(),
    };
    let acc = plot::Series {
        label: "held-out exact-sequence accuracy (200 sequences)".into(),
        points: log.iter().filter_map(|&(s, _, a)| a.map(|a| (s as f64, a))).collect(),
        colour: plot::ORANGE_,
        dashed: false,
        spread: Vec::new(),
    };
    let loss_chart = plot::Chart {
        title: "Training loss",
        x_desc: "step (log scale)",
        y_desc: "loss (log scale)",
        log2_x: true,
        log10_y: true,
        y_range: (1e-4, 10.0),
    };
    let acc_chart = plot::Chart {
        title: "Held-out accuracy while training",
        x_desc: "step (log scale)",
        y_desc: "fraction of sequences reversed exactly",
        log2_x: true,
        log10_y: false,
        y_range: (0.0, 1.2),
    };
    let path =
        plot::line_charts("ch12-training.svg", &[(loss_chart, vec![loss]), (acc_chart, vec![acc])]);
    println!("wrote {}", path.display());
}

fn draw_attention(
    net: &TinyTransformer,
    example: &[usize],
    file: &'static str,
    title: &str,
) -> Result<(), report::error::ReportError> {
    let (inputs, _) = inputs_and_targets(&[example.to_vec()], ModelConfig::of(net)?.k)?;
    let fwd = net.forward(&inputs)?;
    let labels: Vec<String> = inputs[0].iter().map(|&t| token(t)).collect();
    let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
    let (layers, heads) = (net.config().layers, net.config().heads);
    let panel_ids: Vec<(usize, usize)> =
        (0..layers).flat_map(|l| (0..heads).map(move |h| (l, h))).collect();
    let titles: Vec<String> =
        panel_ids.iter().map(|(l, h)| format!("block {}, head {}", l + 1, h + 1)).collect();
    let panels: Vec<(plot::Heatmap, Array2<f32>)> = panel_ids
        .iter()
        .map(|&(l, h)| fwd.weights(l, 0, h))
        .zip(&titles)
        .map(|(w, title)| {
            let h = plot::Heatmap {
                title,
                row_labels: &labels,
                col_labels: &labels,
                x_desc: "key (token attended to)",
                y_desc: "query (position predicting the next token)",
                value_desc: "attention weight",
                range: (0.0, 1.0),
                annotate: None,
            };
            Ok((h, w?.mapv(|x| x as f32)))
        })
        .collect::<Result<_, attn::AttnError>>()?;
    let path = plot::heatmap_grid(file, title, 2, &panels);
    println!("wrote {}", path.display());
    Ok(())
}
