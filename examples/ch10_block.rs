//! Chapter 10, The Transformer block: prints the shape after every step of
//! an encoder and a decoder layer, a LayerNorm by hand, and the size of the
//! residual stream through post-norm and pre-norm stacks; draws the
//! encoder-decoder diagram and the residual-stream chart.
//!
//! ```text
//! cargo run --example ch10_block
//! ```

use report::plot;

use attn::block::{
    gelu, row_statistics, Config, EncoderLayer, LayerNorm, Norm, Transformer, CHAPTER_CONFIG,
};
use attn::masking::causal_mask;
use attn::scaling::standard_normal;
use ndarray::array;
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};
use plotters::prelude::*;
use plotters::style::text_anchor;
use report::show::{matrix, shape, table};

fn main() -> Result<(), report::error::ReportError> {
    println!("== One encoder layer, n = 7 tokens, d_model = 64, h = 4, d_ff = 256 ==");
    let mut rng = StdRng::seed_from_u64(8);
    let layer = EncoderLayer::new(CHAPTER_CONFIG, &mut rng)?;
    let x = standard_normal(7, 64, &mut rng);
    let attended = layer.attention().forward(&x, &x)?;
    let a = layer.layer_norms()[0].forward(&(&x + &attended.output))?;
    let hidden = a.dot(layer.ffn().weights().0);
    let out = layer.forward(&x)?;
    println!("input X:                          {}", shape(&x));
    println!("self-attention weights, per head: {:?}", attended.weights.dim());
    println!("LayerNorm(X + attention):         {}", shape(&a));
    println!("FFN hidden layer:                 {}", shape(&hidden));
    println!("LayerNorm(· + FFN(·)) = output:   {}", shape(&out));
    println!(
        "parameters: attention 4·64² = {}, FFN 2·64·256 + 256 + 64 = {}, LayerNorms 4·64 = {}",
        layer.attention().parameters(),
        layer.ffn().parameters(),
        4 * 64
    );

    println!("\n== Encoder-decoder, N = 2: 7 source tokens, 5 target tokens ==");
    let model = Transformer::new(CHAPTER_CONFIG, 2, &mut rng)?;
    let y = standard_normal(5, 64, &mut rng);
    let memory = model.encode(&x)?;
    let decoded = model.decode(&y, &memory)?;
    let cross = model.decoder_layers()[0].cross_attention().forward(&y, &memory)?;
    println!("encoder output (memory):          {}", shape(&memory));
    println!("decoder self-attention mask:      {}×{} (causal)", causal_mask(5, 5).nrows(), 5);
    println!("cross-attention weights, per head: {:?} (h, n, m)", cross.weights.dim());
    println!("decoder output:                   {}", shape(&decoded));

    println!("\n== LayerNorm of [1, 2, 3, 4] (γ = 1, β = 0, ε = 1e-5) ==");
    println!("{}", matrix(&LayerNorm::new(4).forward(&array![[1.0_f32, 2.0, 3.0, 4.0]])?, 4));
    println!("GELU(−1, 0, 1) = {:.4}, {:.4}, {:.4}", gelu(-1.0), gelu(0.0), gelu(1.0));

    println!("\n== Residual stream through 12 encoder layers at initialisation ==");
    let depth = residual_stream(12)?;
    let rows: Vec<Vec<String>> = depth
        .iter()
        .enumerate()
        .filter(|(l, _)| [0, 1, 2, 4, 8, 12].contains(l))
        .map(|(l, (post, pre))| vec![l.to_string(), format!("{post:.3}"), format!("{pre:.3}")])
        .collect();
    println!("{}", table(&["layer", "post-norm: std of x", "pre-norm: std of x"], &rows));

    draw_residual(&depth);
    draw_diagram();
    Ok(())
}

/// The average standard deviation of the rows of the residual stream after
/// each of `layers` encoder layers (0: the input), for post-norm and
/// pre-norm stacks built from the same seed.
fn residual_stream(layers: usize) -> Result<Vec<(f32, f32)>, report::error::ReportError> {
    let stacks = [Norm::Post, Norm::Pre].map(|norm| {
        let mut rng = StdRng::seed_from_u64(12);
        let c = Config { norm, ..CHAPTER_CONFIG };
        (0..layers).map(|_| EncoderLayer::new(c, &mut rng)).collect::<Result<Vec<_>, _>>()
    });
    let x = standard_normal(16, 64, &mut StdRng::seed_from_u64(13));
    let mut stds = vec![(row_statistics(&x)?.1, row_statistics(&x)?.1)];
    let (mut post, mut pre) = (x.clone(), x);
    for (post_layer, pre_layer) in stacks[0]
        .as_ref()
        .map_err(Clone::clone)?
        .iter()
        .zip(stacks[1].as_ref().map_err(Clone::clone)?)
    {
        post = post_layer.forward(&post)?;
        pre = pre_layer.forward(&pre)?;
        stds.push((row_statistics(&post)?.1, row_statistics(&pre)?.1));
    }
    Ok(stds)
}

fn draw_residual(depth: &[(f32, f32)]) {
    let series = |label: &str, pick: fn(&(f32, f32)) -> f32, colour| plot::Series {
        label: label.into(),
        points: depth.iter().enumerate().map(|(l, s)| (l as f64, pick(s) as f64)).collect(),
        colour,
        dashed: false,
        spread: Vec::new(),
    };
    let chart = plot::Chart {
        title: "Size of the residual stream with depth, at initialisation",
        x_desc: "encoder layers applied",
        y_desc: "mean standard deviation of a token's features",
        log2_x: false,
        log10_y: false,
        y_range: (0.0, 4.0),
    };
    let lines = vec![
        series("post-norm: LayerNorm(x + F(x))", |s| s.0, plot::ORANGE_),
        series("pre-norm: x + F(LayerNorm(x))", |s| s.1, plot::BLUE_),
    ];
    let path = plot::line_charts("ch10-residual.svg", &[(chart, lines)]);
    println!("wrote {}", path.display());
}

/// Figure 10.2: the encoder-decoder Transformer, drawn from boxes and arrows.
/// The encoder reads the `m` source tokens, the decoder the `n` target ones.
/// Shown at 750 of its 900 pixels, so its text is drawn large.
fn draw_diagram() {
    let path = plot::drawing("ch10-architecture.svg", (900, 640), |root| {
        let title = plot::font(22)
            .pos(text_anchor::Pos::new(text_anchor::HPos::Center, text_anchor::VPos::Top));
        root.draw(&Text::new(
            "The encoder-decoder Transformer (post-norm, as in the paper)",
            (450, 12),
            title,
        ))
        .expect("draw title");
        let encoder = [
            ("Add & LayerNorm", "m×d_model", 0xE8F0FA),
            ("Feed-forward network", "m×d_ff → m×d_model", 0xD6E6F7),
            ("Add & LayerNorm", "m×d_model", 0xE8F0FA),
            ("Multi-head self-attention", "h × (m×m weights)", 0xF9DDB8),
        ];
        let decoder = [
            ("Add & LayerNorm", "n×d_model", 0xE8F0FA),
            ("Feed-forward network", "n×d_ff → n×d_model", 0xD6E6F7),
            ("Add & LayerNorm", "n×d_model", 0xE8F0FA),
            ("Cross-attention: Q from decoder, K, V from encoder", "h × (n×m weights)", 0xF9DDB8),
            ("Add & LayerNorm", "n×d_model", 0xE8F0FA),
            ("Masked (causal) multi-head self-attention", "h × (n×n weights)", 0xF9DDB8),
        ];
        let column = |x0: i32, top: i32, boxes: &[(&str, &str, u32)], label: &str| {
            let (w, h, gap) = (360, 52, 14);
            let bottom = top + boxes.len() as i32 * (h + gap);
            root.draw(&Rectangle::new(
                [(x0 - 14, top - 14), (x0 + w + 14, bottom)],
                BLACK.mix(0.5).stroke_width(1),
            ))
            .expect("frame");
            root.draw(&Text::new(label.to_string(), (x0 - 10, bottom + 4), plot::font(19)))
                .expect("label");
            for (i, (name, shape, colour)) in boxes.iter().enumerate() {
                let y = top + i as i32 * (h + gap);
                let fill = RGBColor((colour >> 16) as u8, (colour >> 8) as u8, *colour as u8);
                root.draw(&Rectangle::new([(x0, y), (x0 + w, y + h)], fill.filled())).expect("box");
                root.draw(&Rectangle::new([(x0, y), (x0 + w, y + h)], BLACK.stroke_width(1)))
                    .expect("box edge");
                root.draw(&Text::new(name.to_string(), (x0 + 10, y + 5), plot::font(17)))
                    .expect("name");
                root.draw(&Text::new(
                    shape.to_string(),
                    (x0 + 10, y + 27),
                    plot::font(19).color(&BLACK.mix(0.65)),
                ))
                .expect("shape");
                if i + 1 < boxes.len() {
                    arrow(root, (x0 + w / 2, y + h + gap), (x0 + w / 2, y + h));
                }
            }
            // Residual connections: from below each sub-layer (odd boxes from
            // the top) around it, into the Add & LayerNorm above it.
            for i in (1..boxes.len()).step_by(2) {
                let below = top + i as i32 * (h + gap) + h + gap / 2;
                let add = top + (i as i32 - 1) * (h + gap) + h / 2;
                let grey = RGBColor(120, 120, 120).stroke_width(2);
                let path = vec![
                    (x0 + w / 2, below),
                    (x0 + w + 8, below),
                    (x0 + w + 8, add),
                    (x0 + w, add),
                ];
                root.draw(&PathElement::new(path, grey)).expect("residual");
            }
            bottom
        };
        let enc_bottom = column(30, 150, &encoder, "× N encoder layers");
        let dec_bottom = column(480, 150, &decoder, "× N decoder layers");
        // Inputs below each column, outputs above the decoder.
        let io = |x: i32, y: i32, text: &str| {
            root.draw(&Rectangle::new(
                [(x, y), (x + 360, y + 40)],
                RGBColor(235, 235, 235).filled(),
            ))
            .expect("io box");
            root.draw(&Text::new(text.to_string(), (x + 10, y + 12), plot::font(19)))
                .expect("io text");
        };
        io(30, enc_bottom + 40, "source embeddings + positions, m×d_model");
        io(480, dec_bottom + 40, "target embeddings (shifted) + positions");
        arrow(root, (210, enc_bottom + 40), (210, enc_bottom - 14));
        arrow(root, (660, dec_bottom + 40), (660, dec_bottom - 14));
        io(480, 60, "Linear (d_model → vocabulary), softmax");
        arrow(root, (660, 150 - 14), (660, 100));
        // The memory: encoder output into the decoder's cross-attention.
        let cross_y = 150 + 3 * 66 + 26;
        root.draw(&PathElement::new(
            vec![(210, 136), (210, 116), (430, 116), (430, cross_y), (480, cross_y)],
            BLUE.stroke_width(2),
        ))
        .expect("memory path");
        arrow_head(root, (480, cross_y), (1, 0));
        root.draw(&Text::new(
            "memory: the encoder's output, m×d_model".to_string(),
            (215, 96),
            plot::font(19).color(&BLUE),
        ))
        .expect("memory label");
    });
    println!("wrote {}", path.display());
}

/// A black arrow from `from` to `to` (vertical or horizontal).
fn arrow(root: &DrawingArea<SVGBackend, plotters::coord::Shift>, from: (i32, i32), to: (i32, i32)) {
    root.draw(&PathElement::new(vec![from, to], BLACK.stroke_width(2))).expect("arrow");
    let direction = ((to.0 - from.0).signum(), (to.1 - from.1).signum());
    arrow_head(root, to, direction);
}

/// A small triangle at `tip`, pointing along `direction` (a unit step).
fn arrow_head(
    root: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    tip: (i32, i32),
    direction: (i32, i32),
) {
    let (dx, dy) = direction;
    let back = (tip.0 - 8 * dx, tip.1 - 8 * dy);
    let side = (5 * dy, 5 * dx);
    let points = vec![tip, (back.0 + side.0, back.1 + side.1), (back.0 - side.0, back.1 - side.1)];
    root.draw(&Polygon::new(points, BLACK.filled())).expect("arrow head");
}
