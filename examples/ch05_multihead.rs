//! Chapter 5, Multi-head attention: prints the shape of every step, the cost
//! of the layer, the entropy of each head, and draws the per-head weights.
//!
//! ```text
//! cargo run --example ch05_multihead
//! cargo run --example ch05_multihead -- --heads 8    # other sizes: --help
//! ```

use clap::{value_parser, Arg, Command};
use report::plot;

use attn::multihead::{merge_heads, multihead_flops, split_heads, MultiHeadAttention};
use ndarray::{Array2, Axis};
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};
use report::ch05::{embed_words, head_entropies};
use report::show::shape;

/// The chapter's layer: 32-wide tokens, 4 heads of width 8.
const D_MODEL: usize = 32;
const H: usize = 4;
const WORDS: [&str; 7] = ["The", "cat", "sat", "on", "the", "mat", "."];

/// The layer's sizes: the chapter's, or a reader's (`--heads`, `--d-model`).
fn sizes() -> (usize, usize) {
    let size = |name: &'static str, default: usize, help: &'static str| {
        Arg::new(name)
            .long(name)
            .value_parser(value_parser!(usize))
            .help(format!("{help} [default: {default}, the chapter's]"))
    };
    let options = Command::new("ch05_multihead")
        .about("Chapter 5: a multi-head layer's shapes, cost, heads' entropies and weights")
        .after_help("A run with other sizes draws its figure into target/figures/.")
        .arg(size("heads", H, "The number of heads h; it must divide d_model"))
        .arg(size("d-model", D_MODEL, "The width of the tokens, d_model"))
        .get_matches();
    let get = |name: &str| options.get_one::<usize>(name).copied();
    (get("d-model").unwrap_or(D_MODEL), get("heads").unwrap_or(H))
}

fn main() -> Result<(), report::error::ReportError> {
    let (d_model, h) = sizes();
    let x = embed_words(&WORDS, d_model, 2024);
    let mha = MultiHeadAttention::new(d_model, h, &mut StdRng::seed_from_u64(4))?;

    println!("== Shapes, d_model = {d_model}, h = {h}, d_k = {} ==", mha.d_k());
    let q = x.dot(&mha.weights().w_q);
    let heads = split_heads(&q, h)?;
    let out = mha.forward(&x, &x)?;
    println!("X:                       {}", shape(&x));
    println!("Q = X W_Q:               {}", shape(&q));
    println!("split heads:             {:?} (h, n, d_k)", heads.dim());
    println!("weights, per head:       {:?} (h, n, m)", out.weights.dim());
    println!("merged heads:            {}", shape(&merge_heads(&heads)));
    println!("output = Concat · W_O:   {}", shape(&out.output));

    let too_many = MultiHeadAttention::new(512, 7, &mut StdRng::seed_from_u64(0));
    println!("\n{}", too_many.unwrap_err());
    println!(
        "scaling by √d_model instead of √d_k shrinks every score by a further √h = {:.1} at h = 8",
        8f64.sqrt()
    );

    println!("\n== Cost ==");
    println!("parameters: 4 · {d_model}² = {}", mha.parameters());
    for h in [1, 8, 64] {
        println!(
            "FLOPs, n = m = 512, d_model = 512, h = {h:>2}: {}",
            multihead_flops(512, 512, 512, h)?
        );
    }

    println!(
        "\n== Mean entropy of each head's weights (nats; uniform over 7 = ln 7 = {:.3}) ==",
        7f64.ln()
    );
    let entropies = head_entropies(&out.weights)?;
    for (i, e) in entropies.iter().enumerate() {
        println!("head {}: {e:.3}", i + 1);
    }

    let average: Array2<f32> = out.weights.mean_axis(Axis(0)).expect("h > 0");
    let mut titles: Vec<String> = entropies
        .iter()
        .enumerate()
        .map(|(i, e)| format!("head {} (mean entropy {e:.2} nats)", i + 1))
        .collect();
    titles.push(format!("average of the {h} heads"));
    let mut values: Vec<Array2<f32>> = out.weights.outer_iter().map(|w| w.to_owned()).collect();
    values.push(average);
    let panels: Vec<_> = titles
        .iter()
        .zip(values)
        .map(|(title, v)| {
            let h = plot::Heatmap {
                title,
                row_labels: &WORDS,
                col_labels: &WORDS,
                x_desc: "key",
                y_desc: "query",
                value_desc: "attention weight",
                range: (0.0, 1.0),
                annotate: Some(2),
            };
            (h, v)
        })
        .collect();
    let path = plot::heatmap_grid(
        "ch05-heads.svg",
        "Multi-head self-attention weights at initialisation (random, untrained)",
        3,
        &panels,
    );
    println!("wrote {}", path.display());
    Ok(())
}
