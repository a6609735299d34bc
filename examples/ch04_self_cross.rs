//! Chapter 4, Self- and cross-attention: prints the shape of every step of
//! both, measures what the initialisation does to variances, and draws the
//! cross-attention weights.
//!
//! ```text
//! cargo run --example ch04_self_cross
//! ```

use report::plot;

use attn::projection::Projections;
use attn::scaling::standard_normal;
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};
use report::ch04::init_statistics;
use report::show::shape;

/// The chapter's sizes: token width, query/key width, value width, and the
/// lengths of the encoder (source) and decoder (target) sequences.
const D_MODEL: usize = 16;
const D_K: usize = 8;
const D_V: usize = 8;
const M_ENCODER: usize = 7;
const N_DECODER: usize = 5;

fn main() -> Result<(), report::error::ReportError> {
    let mut rng = StdRng::seed_from_u64(3);
    let p = Projections::new(D_MODEL, D_K, D_V, &mut rng)?;
    let encoder = standard_normal(M_ENCODER, D_MODEL, &mut rng);
    let decoder = standard_normal(N_DECODER, D_MODEL, &mut rng);

    for (title, x_q, x_kv) in [
        ("Self-attention on the encoder sequence", &encoder, &encoder),
        ("Cross-attention: decoder queries, encoder keys and values", &decoder, &encoder),
    ] {
        println!("== {title} ==");
        let (q, k, v) =
            (x_q.dot(p.weights()[0]), x_kv.dot(p.weights()[1]), x_kv.dot(p.weights()[2]));
        println!("Q = X_q W_Q:  {} · {} = {}", shape(x_q), shape(p.weights()[0]), shape(&q));
        println!("K = X_kv W_K: {} · {} = {}", shape(x_kv), shape(p.weights()[1]), shape(&k));
        println!("V = X_kv W_V: {} · {} = {}", shape(x_kv), shape(p.weights()[2]), shape(&v));
        let a = p.attend(x_q, x_kv)?;
        println!("weights = softmax(QKᵀ/√d_k): {}", shape(&a.weights));
        println!("output = weights · V: {}\n", shape(&a.output));
    }

    println!("== A token width the layer was not built for ==");
    let narrow = standard_normal(M_ENCODER, 12, &mut rng);
    println!("{}\n", p.cross_attention(&decoder, &narrow).unwrap_err());

    println!("== Variances at initialisation (d_model = 512, d_k = 64, 2000 tokens, seed 1) ==");
    let s = init_statistics(512, 64, 2000, 1)?;
    println!(
        "Var(X) = {:.3}, Var(Q) = {:.3}, Var(K) = {:.3}, Var(QKᵀ/√d_k) = {:.3}",
        s.x, s.q, s.k, s.scores
    );

    let a = p.cross_attention(&decoder, &encoder)?;
    let rows: Vec<String> = (0..N_DECODER).map(|i| format!("dec {i}")).collect();
    let cols: Vec<String> = (0..M_ENCODER).map(|j| format!("enc {j}")).collect();
    let row_labels: Vec<&str> = rows.iter().map(String::as_str).collect();
    let col_labels: Vec<&str> = cols.iter().map(String::as_str).collect();
    let path = plot::heatmap(
        "ch04-cross-attention.svg",
        &plot::Heatmap {
            title: "Cross-attention weights at initialisation (random, untrained)",
            row_labels: &row_labels,
            col_labels: &col_labels,
            x_desc: "encoder position (key and value)",
            y_desc: "decoder position (query)",
            value_desc: "attention weight",
            range: (0.0, 1.0),
            annotate: Some(2),
        },
        &a.weights,
    );
    println!("wrote {}", path.display());
    Ok(())
}
