//! Chapter 10 quotes the output of `cargo run --example ch10_block`; these
//! tests recompute it and require the chapter to quote it verbatim.

use attn::block::{
    gelu, row_statistics, Activation, Config, EncoderLayer, LayerNorm, Norm, Transformer,
    CHAPTER_CONFIG,
};
use attn::scaling::standard_normal;
use ndarray::array;
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};
use report::show::{matrix, shape, table};

mod common;

use report::numbers::Bindings;

const CHAPTER: &str = "ch10-transformer-block.md";

fn encoder_and_decoder_shapes(b: &mut Bindings) {
    let mut rng = StdRng::seed_from_u64(8);
    let layer = EncoderLayer::new(CHAPTER_CONFIG, &mut rng).unwrap();
    let x = standard_normal(7, 64, &mut rng);
    let attended = layer.attention().forward(&x, &x).unwrap();
    let a = layer.layer_norms()[0].forward(&(&x + &attended.output)).unwrap();
    let out = layer.forward(&x).unwrap();
    let ffn_parameters = layer.ffn().parameters();
    b.quoted(&format!(
        "input X:                          {}\nself-attention weights, per head: {:?}\n\
         LayerNorm(X + attention):         {}\nFFN hidden layer:                 {}\n\
         LayerNorm(· + FFN(·)) = output:   {}\n\
         parameters: attention 4·64² = {}, FFN 2·64·256 + 256 + 64 = {ffn_parameters}, LayerNorms 4·64 = {}",
        shape(&x),
        attended.weights.dim(),
        shape(&a),
        shape(&a.dot(layer.ffn().weights().0)),
        shape(&out),
        layer.attention().parameters(),
        4 * 64
    ));
    let model = Transformer::new(CHAPTER_CONFIG, 2, &mut rng).unwrap();
    let y = standard_normal(5, 64, &mut rng);
    let memory = model.encode(&x).unwrap();
    let cross = model.decoder_layers()[0].cross_attention().forward(&y, &memory).unwrap();
    b.quoted(&format!(
        "encoder output (memory):          {}\ndecoder self-attention mask:      5×5 (causal)\n\
         cross-attention weights, per head: {:?} (h, n, m)\ndecoder output:                   {}",
        shape(&memory),
        cross.weights.dim(),
        shape(&model.decode(&y, &memory).unwrap())
    ));
}

fn layer_norm_and_gelu_lines(b: &mut Bindings) {
    let y = LayerNorm::new(4).forward(&array![[1.0_f32, 2.0, 3.0, 4.0]]).unwrap();
    b.quoted(&format!("```text\n{}\n```", matrix(&y, 4)));
    b.quoted(&format!("GELU(−1, 0, 1) = {:.4}, {:.4}, {:.4}", gelu(-1.0), gelu(0.0), gelu(1.0)));
}

fn residual_stream_table_and_figure_8_1(b: &mut Bindings) {
    let stacks = [Norm::Post, Norm::Pre].map(|norm| {
        let mut rng = StdRng::seed_from_u64(12);
        let c = Config { norm, ..CHAPTER_CONFIG };
        (0..12).map(|_| EncoderLayer::new(c, &mut rng).unwrap()).collect::<Vec<_>>()
    });
    let x = standard_normal(16, 64, &mut StdRng::seed_from_u64(13));
    assert_eq!(x.nrows(), 16);
    let mut stds = vec![(row_statistics(&x).unwrap().1, row_statistics(&x).unwrap().1)];
    let (mut post, mut pre) = (x.clone(), x);
    for (a, b) in stacks[0].iter().zip(&stacks[1]) {
        post = a.forward(&post).unwrap();
        pre = b.forward(&pre).unwrap();
        stds.push((row_statistics(&post).unwrap().1, row_statistics(&pre).unwrap().1));
    }
    let rows: Vec<Vec<String>> = [0, 1, 2, 4, 8, 12]
        .iter()
        .map(|&l| vec![l.to_string(), format!("{:.3}", stds[l].0), format!("{:.3}", stds[l].1)])
        .collect();
    b.quoted(&table(&["layer", "post-norm: std of x", "pre-norm: std of x"], &rows));
    // Alt text: post-norm flat at 1.00 after layer 1; pre-norm 0.97 → 3.12.
    let flat = stds[1..].iter().all(|s| format!("{:.2}", s.0) == "1.00");
    b.rounded("1.00", stds[1].0 as f64)
        .rounded("0.97", stds[0].1 as f64)
        .rounded("3.12", stds[12].1 as f64);
    // Rising at every layer the table shows.
    let shown: Vec<f32> = [0, 1, 2, 4, 8, 12].iter().map(|&l| stds[l].1).collect();
    let grows = shown.windows(2).all(|w| w[1] > w[0]);
    b.claim("the pre-norm line rises from 0.97 to 3.12", grows && flat)
        .claim("and it grows with\ndepth", grows)
        .claim("Pre-norm lets\nthe stream grow", grows)
        .claim("scale grows with depth (Figure 10.1)", grows);
    b.exact("16", 16.0).exact("12", stds.len() as f64 - 1.0);
}

fn exercise_1_parameter_count(b: &mut Bindings) {
    let c =
        Config { d_model: 512, h: 8, d_ff: 2048, activation: Activation::Relu, norm: Norm::Post };
    let layer = EncoderLayer::new(c, &mut StdRng::seed_from_u64(0)).unwrap();
    let ffn = layer.ffn().parameters();
    let norms = 2 * (layer.layer_norms()[0].d_model() * 2);
    b.exact("1,048,576", layer.attention().parameters() as f64)
        .exact("2,099,712", ffn as f64)
        .exact("2048", norms as f64)
        .exact("512", layer.layer_norms()[0].d_model() as f64);
    assert_eq!(layer.attention().parameters() + ffn + norms, 3_150_336);
    b.quoted("Total\n$3{,}150{,}336$");
}

/// Every number the chapter shows is bound: quoted output, or a value
/// registered here with its check, or exempt (`tests/common/numbers.rs`).
#[test]
fn every_number_is_bound() {
    let mut b = Bindings::new(CHAPTER);
    encoder_and_decoder_shapes(&mut b);
    layer_norm_and_gelu_lines(&mut b);
    residual_stream_table_and_figure_8_1(&mut b);
    exercise_1_parameter_count(&mut b);
    bind_prose(&mut b);
    b.assert_all_bound();
}

/// Numbers of the prose, captions, alt text and quiz, each with its check.
fn bind_prose(b: &mut Bindings) {
    // LayerNorm's ε = 10⁻⁵ (the crate's default), and ε inside the root: on
    // a row with σ² = 10⁻⁶ the two placements differ by more than 0.5.
    let x = array![[0.0_f32, 0.002]];
    let y = LayerNorm::new(2).forward(&x).unwrap();
    let eps = 1e-5_f32;
    let inside = 0.001 / (1e-6_f32 + eps).sqrt();
    let outside = 0.001 / (1e-3_f32 + eps);
    assert!((y[[0, 1]] - inside).abs() < 1e-5, "the crate's ε is 1e-5");
    b.value("1e-5", eps as f64, 1e-12)
        .value("1e-6", (row_statistics(&x).unwrap().1 as f64).powi(2), 1e-9)
        .at_least("0.5", (y[[0, 1]] - outside).abs() as f64);
    assert!((y[[0, 1]] - outside).abs() > 0.5);
    // The row [1, 2, 3, 4]: μ = 2.5, σ² = 1.25.
    let (mean, std) = row_statistics(&array![[1.0_f32, 2.0, 3.0, 4.0]]).unwrap();
    b.rounded("2.5", mean as f64).rounded("1.25", (std * std) as f64).exact("3", 3.0);
    // Dropout 0.1 is the paper's rate (stated, not used by the crate).
    b.exact("0.1", 0.1);
}
