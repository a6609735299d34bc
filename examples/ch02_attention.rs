//! Chapter 2, Scaled dot-product attention: prints every number the chapter
//! quotes and draws its figure.
//!
//! ```text
//! cargo run --example ch02_attention
//! cargo run --example ch02_attention -- --temperature 0.5   # the figure at τ = 0.5; --help
//! ```

use clap::{value_parser, Arg, Command};
use report::plot;

use attn::error::AttnError;
use attn::softmax::{naive_softmax, softmax};
use attn::{attention, scaled_dot_product_attention};
use ndarray::Array2;
use report::show::matrix;

/// The temperature of the sentence's self-attention: 1, the chapter's, or
/// a reader's (`--temperature`).
fn temperature() -> f32 {
    Command::new("ch02_attention")
        .about("Chapter 2: the softmax, the worked example, and self-attention on a sentence")
        .after_help("A run at another temperature draws its figure into target/figures/.")
        .arg(
            Arg::new("temperature")
                .long("temperature")
                .value_parser(value_parser!(f32))
                .help("Divide the sentence's scores by τ as well as by √d_k [default: 1]"),
        )
        .get_matches()
        .get_one::<f32>("temperature")
        .copied()
        .unwrap_or(1.0)
}

fn main() -> Result<(), report::error::ReportError> {
    let tau = temperature();
    if !(tau.is_finite() && tau > 0.0) {
        let requirement = "must be finite and > 0";
        Err(AttnError::InvalidArgument { name: "temperature", value: tau.into(), requirement })?;
    }
    let logits = ndarray::Array1::from(report::ch02::OVERFLOW_LOGITS.to_vec());
    println!("== Softmax of {logits} ==");
    println!("naive:  {}", naive_softmax(&logits));
    println!("stable: {}", softmax(&logits)?);
    println!("exp overflows f32 above ln(f32::MAX) = {:.2}", f32::MAX.ln());

    println!("\n== Worked example: 3 queries, 4 keys, d_k = 4, d_v = 2 ==");
    let (q, k, v) = attention::worked_example();
    let scores = q.dot(&k.t()) / 2.0;
    println!("scores = QKᵀ/√d_k:\n{}", matrix(&scores, 4));
    let a = scaled_dot_product_attention(&q, &k, &v)?;
    println!("weights:\n{}", matrix(&a.weights, 4));
    println!("output:\n{}", matrix(&a.output, 4));
    let e2 = std::f32::consts::E.powi(2);
    println!("query 0: e²/(e²+3) = {e2:.3}/{:.3} = {:.4}", e2 + 3.0, e2 / (e2 + 3.0));

    println!("\n== Shape errors ==");
    let wide = Array2::<f32>::zeros((3, 64));
    let narrow = Array2::<f32>::zeros((4, 32));
    let err = scaled_dot_product_attention(&wide, &narrow, &v).unwrap_err();
    println!("{err}");

    println!("\n== Self-attention on a sentence (Q = K = V = X) ==");
    let (words, x) = attention::sentence_example();
    // Queries divided by τ divide every score by τ: softmax at temperature τ.
    if tau != 1.0 {
        println!("at temperature {tau}: Q = X / {tau}");
    }
    let a = scaled_dot_product_attention(&(&x / tau), &x, &x)?;
    println!("weights (rows: queries, columns: keys {words:?}):");
    println!("{}", matrix(&a.weights, 2));
    let path = plot::heatmap(
        "ch02-sentence-weights.svg",
        &plot::Heatmap {
            title: "Self-attention weights, Q = K = V = X (hand-made embeddings)",
            row_labels: &words,
            col_labels: &words,
            x_desc: "key (attended to)",
            y_desc: "query (attending)",
            value_desc: "attention weight",
            range: (0.0, 1.0),
            annotate: Some(2),
        },
        &a.weights,
    );
    println!("wrote {}", path.display());
    trained_head()
}

/// The introduction's figure: one head of chapter 16's trained model on a
/// line of verse, what the mechanism of this chapter becomes.
fn trained_head() -> Result<(), report::error::ReportError> {
    let trained = report::ch02::trained_head()?;
    let line = report::ch02::VERSE_LINE;
    println!(
        "\n== What attention becomes: block {} head {} of chapter 16's trained model on {line:?} ==",
        trained.block + 1,
        trained.head + 1
    );
    println!("mean weight a character puts on the one before it: {:.2}", trained.previous());
    println!(
        "characters whose largest weight is on the one before: {} of {}",
        trained.previous_largest(),
        line.chars().count() - 1
    );
    println!("largest weight on a later character: {}", trained.ahead());
    // The font draws a space as nothing: a middle dot stands for it.
    let labels: Vec<String> =
        line.chars().map(|c| if c == ' ' { "·".into() } else { c.to_string() }).collect();
    let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
    let title = format!(
        "Block {}, head {} of chapter 16's trained model, reading a line of verse",
        trained.block + 1,
        trained.head + 1
    );
    let path = plot::heatmap(
        "ch02-trained-head.svg",
        &plot::Heatmap {
            title: &title,
            row_labels: &labels,
            col_labels: &labels,
            x_desc: "character attended to (key)",
            y_desc: "character attending (query)",
            value_desc: "attention weight",
            range: (0.0, 1.0),
            annotate: None,
        },
        &trained.weights,
    );
    println!("wrote {}", path.display());
    Ok(())
}
