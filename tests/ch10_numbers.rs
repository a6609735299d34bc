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
    let rows_of_x = x.nrows();
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
    // "16 random tokens through 12 … layers", then the alt text's and the
    // caption's 12.
    b.section("Residual connections and where the norm goes");
    let layers = stds.len() as f64 - 1.0;
    b.exact("16", rows_of_x as f64).exact("12", layers).exact("12", layers).exact("12", layers);
}

fn exercise_1_parameter_count(b: &mut Bindings) {
    b.section("Exercises");
    // The paper's base model, as the crate builds it.
    let c =
        Config { d_model: 512, h: 8, d_ff: 2048, activation: Activation::Relu, norm: Norm::Post };
    let layer = EncoderLayer::new(c, &mut StdRng::seed_from_u64(0)).unwrap();
    let d_model = layer.layer_norms()[0].d_model() as f64;
    let d_ff = layer.ffn().weights().0.ncols() as f64;
    let attention = layer.attention().parameters() as f64;
    let ffn = layer.ffn().parameters() as f64;
    let (gamma, beta, _) = layer.layer_norms()[0].parameters();
    let norms = 2.0 * (gamma.len() + beta.len()) as f64;
    // ($d_{model} = 512$, $d_{ff} = 2048$ …)
    b.exact("512", d_model).exact("2048", d_ff);
    // Attention: 4 · 512² = 1,048,576.
    b.exact("4", attention / (d_model * d_model))
        .exact("512", d_model)
        .exact("1,048,576", attention);
    // FFN: 2 · 512 · 2048 + 2048 + 512 = 2,099,712.
    assert_eq!(ffn, 2.0 * d_model * d_ff + d_ff + d_model);
    b.exact("512", d_model)
        .exact("2048", d_ff)
        .exact("2048", d_ff)
        .exact("512", d_model)
        .exact("2,099,712", ffn);
    // Two LayerNorms: 4 · 512 = 2048 (a scale and a shift each).
    b.exact("4", norms / d_model).exact("512", d_model).exact("2048", norms);
    assert_eq!(attention + ffn + norms, 3_150_336.0);
    b.quoted("Total\n$3{,}150{,}336$");
}

/// Every number the chapter shows is bound: quoted output, or a value
/// registered here with its check, or exempt (`report::numbers::exemption`).
/// The output blocks are bound first, then each section's prose, place by
/// place in the order the section shows them.
#[test]
fn every_number_is_bound() {
    let mut b = Bindings::new(CHAPTER);
    encoder_and_decoder_shapes(&mut b);
    layer_norm_and_gelu_lines(&mut b);
    residual_stream_table_and_figure_8_1(&mut b);
    layer_normalisation(&mut b);
    the_feed_forward_network(&mut b);
    encoder_and_decoder_prose(&mut b);
    exercise_1_parameter_count(&mut b);
    quiz(&mut b);
    b.assert_all_bound();
}

/// LayerNorm's ε (the crate's default), the variance of the row [0, 0.002],
/// and how far the crate's output on it is from the one ε added to the
/// standard deviation would give.
fn epsilon_and_small_variance() -> (f64, f64, f64) {
    let eps = LayerNorm::new(2).parameters().2;
    let x = array![[0.0_f32, 0.002]];
    let y = LayerNorm::new(2).forward(&x).unwrap()[[0, 1]];
    let std = row_statistics(&x).unwrap().1;
    let inside = 0.001 / (std * std + eps).sqrt();
    let outside = 0.001 / (std + eps);
    assert!((y - inside).abs() < 1e-5, "ε goes inside the root");
    (eps as f64, (std as f64).powi(2), (y - outside).abs() as f64)
}

fn layer_normalisation(b: &mut Bindings) {
    b.section("Layer normalisation");
    let (eps, variance, gap) = epsilon_and_small_variance();
    b.value("1e-5", eps, 1e-12).at_least("0.5", gap).value("1e-6", variance, 1e-9);
    // The row [1, 2, 3, 4], the example's: μ = 2.5, σ² = 1.25.
    let row = array![[1.0_f32, 2.0, 3.0, 4.0]];
    let (mean, std) = row_statistics(&row).unwrap();
    b.exact("3", row[[0, 2]])
        .exact("4", row[[0, 3]])
        .rounded("2.5", mean as f64)
        .rounded("1.25", (std * std) as f64);
}

fn the_feed_forward_network(b: &mut Bindings) {
    b.section("The feed-forward network");
    let c = CHAPTER_CONFIG;
    let layer = EncoderLayer::new(c, &mut StdRng::seed_from_u64(0)).unwrap();
    let ratio = (c.d_ff / c.d_model) as f64;
    let d2 = (c.d_model * c.d_model) as f64;
    // d_ff = 4 d_model; 2 d_model d_ff = 8 d_model²; attention's 4 d_model².
    b.exact("4", ratio)
        .exact("8", (layer.ffn().weights().0.len() + layer.ffn().weights().2.len()) as f64 / d2)
        .exact("4", layer.attention().parameters() as f64 / d2);
}

fn encoder_and_decoder_prose(b: &mut Bindings) {
    b.section("Encoder and decoder layers");
    let c = CHAPTER_CONFIG;
    let mut rng = StdRng::seed_from_u64(8);
    let layer = EncoderLayer::new(c, &mut rng).unwrap();
    // The example's tokens: 7 of width 64 (the shapes block quotes them).
    let x = standard_normal(7, 64, &mut rng);
    assert_eq!(layer.forward(&x).unwrap().dim(), x.dim());
    b.exact("7", x.nrows() as f64)
        .exact("64", c.d_model as f64)
        .exact("4", c.h as f64)
        .exact("256", c.d_ff as f64);
    let y = standard_normal(5, 64, &mut rng);
    b.exact("7", x.nrows() as f64).exact("5", y.nrows() as f64);
    // The shapes test changes one decoder token and checks the positions
    // before it.
    let layers = "src/block/layers.rs";
    let changed = report::numbers::captured(layers, r"y2\.row_mut\((\d+)\)")[0];
    let before = report::numbers::captured(layers, r"out\.slice\(s!\[\.\.(\d+), \.\.\]\)")[0];
    b.exact("3", changed).exact("3", before);
}

fn quiz(b: &mut Bindings) {
    b.section("Quiz");
    let (eps, variance, gap) = epsilon_and_small_variance();
    b.value("1e-5", eps, 1e-12)
        .value("1e-6", variance, 1e-9)
        .value("1e-6", variance, 1e-9)
        .at_least("0.5", gap);
}
