//! Chapter 7, Positional encoding: prints the permutation check, sinusoidal
//! values, the offset map's error, a layer that looks Δ back through it,
//! position similarities, RoPE's relative scores and ALiBi's slopes, and
//! draws the chapter's four figures.
//!
//! ```text
//! cargo run --example ch07_position
//! cargo run --example ch07_position -- --d-model 32 --alibi-heads 4   # other sizes: --help
//! ```

use clap::{value_parser, Arg, Command};
use report::ch07::{
    look_back, look_back_block, ALIBI_POSITIONS, CURVE_DIMENSIONS, CURVE_POSITIONS, CURVE_WIDTH,
    FIGURE_HEADS, OFFSETS, OFFSET_POSITIONS, OFFSET_WIDTH, PERMUTATION as PERM, RANGE_WIDTH,
    ROPE_POSITIONS, SIMILARITY_DISTANCE, SIMILARITY_WIDTHS, SINUSOIDAL_FIGURE, SLOPE_HEADS,
};
use report::plot;

use attn::position::{
    alibi_bias, alibi_slopes, frequencies, largest_norm_change, offset_map, rope, sinusoidal,
};
use attn::projection::Projections;
use attn::scaling::standard_normal;
use ndarray::{Array2, ArrayRef1, ArrayRef2, Axis};
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};
use report::show::{matrix, table};

/// The largest absolute entry of `a − b`.
fn max_diff(a: &ArrayRef2<f32>, b: &ArrayRef2<f32>) -> f32 {
    (a - b).fold(0.0, |m, &d| m.max(d.abs()))
}

/// Cosine similarity of two vectors.
fn cosine(a: &ArrayRef1<f32>, b: &ArrayRef1<f32>) -> f32 {
    a.dot(b) / (a.dot(a).sqrt() * b.dot(b).sqrt())
}

/// What a reader may change: Figure 7.1's positions and width (also the
/// width of the similarity table), and the ALiBi head counts whose slopes
/// are printed.
struct Options {
    positions: usize,
    d_model: usize,
    alibi_heads: Vec<usize>,
}

fn options() -> Options {
    let size = |name: &'static str, default: String, help: &'static str| {
        Arg::new(name)
            .long(name)
            .value_parser(value_parser!(usize))
            .help(format!("{help} [default: {default}, the chapter's]"))
    };
    let (positions, d_model) = SINUSOIDAL_FIGURE;
    let heads = SLOPE_HEADS.map(|h| h.to_string()).join(" and ");
    let matches = Command::new("ch07_position")
        .about("Chapter 7: positional encodings (sinusoidal, RoPE, ALiBi), printed and drawn")
        .after_help("A run with other sizes draws its figures into target/figures/.")
        .arg(size("positions", positions.to_string(), "Figure 7.1's positions"))
        .arg(size(
            "d-model",
            d_model.to_string(),
            "The encoding's width in Figure 7.1 and the similarity table (even)",
        ))
        .arg(size("alibi-heads", heads, "A number of ALiBi heads whose slopes to print"))
        .get_matches();
    let get = |name: &str| matches.get_one::<usize>(name).copied();
    Options {
        positions: get("positions").unwrap_or(positions),
        d_model: get("d-model").unwrap_or(d_model),
        alibi_heads: get("alibi-heads").map_or(SLOPE_HEADS.to_vec(), |h| vec![h]),
    }
}

/// Offsets for the similarity table.
const SIMILARITY_OFFSETS: [usize; 8] = [0, 1, 2, 5, 10, 20, 50, 100];

fn main() -> Result<(), report::error::ReportError> {
    let options = options();
    println!("== Self-attention of 7 tokens, rows permuted by {PERM:?} ==");
    let mut rng = StdRng::seed_from_u64(6);
    let layer = Projections::new(16, 8, 8, &mut rng)?;
    let x = standard_normal(7, 16, &mut rng);
    let x_perm = x.select(Axis(0), &PERM);
    let out = layer.self_attention(&x)?.output;
    let out_perm = layer.self_attention(&x_perm)?.output;
    println!(
        "no positions:   largest |out(ΠX) − Π·out(X)| = {:.1e}",
        max_diff(&out_perm, &out.select(Axis(0), &PERM))
    );
    let pe = sinusoidal(7, 16)?;
    let out = layer.self_attention(&(&x + &pe))?.output;
    let out_perm = layer.self_attention(&(&x_perm + &pe))?.output;
    println!(
        "sinusoidal PE:  largest |out(ΠX + PE) − Π·out(X + PE)| = {:.2}",
        max_diff(&out_perm, &out.select(Axis(0), &PERM))
    );

    println!("\n== Sinusoidal PE, d_model = 4, positions 0 to 3 ==");
    println!("{}", matrix(&sinusoidal(4, 4)?, 4));
    let omega = frequencies(RANGE_WIDTH)?;
    let last = omega.len() - 1;
    println!(
        "d_model = {RANGE_WIDTH}: ω_0 = {}, ω_{last} = {:.3e}; wavelengths 2π/ω from {:.2} to {:.0} positions",
        omega[0],
        omega[last],
        std::f64::consts::TAU / omega[0],
        std::f64::consts::TAU / omega[last]
    );

    println!(
        "\n== PE(pos + Δ) = M_Δ · PE(pos), d_model = {OFFSET_WIDTH}, positions 0 to {} ==",
        OFFSET_POSITIONS - 1
    );
    let pe = sinusoidal(OFFSET_POSITIONS, OFFSET_WIDTH)?;
    for delta in OFFSETS {
        let m_delta = offset_map(delta, OFFSET_WIDTH)?;
        let head = pe.slice(ndarray::s![..OFFSET_POSITIONS - delta, ..]);
        let shifted = m_delta.dot(&head.t()).reversed_axes();
        let target = pe.slice(ndarray::s![delta.., ..]);
        println!("Δ = {delta:>2}: largest error {:.1e}", max_diff(&shifted, &target));
    }

    println!("\n== A layer with W_Q W_Kᵀ = M_Δ: the encoding alone, and with content ==");
    println!("{}", look_back_block(&look_back()?));

    let d = options.d_model;
    println!("\n== Cosine similarity of PE(pos) and PE(pos + Δ), d_model = {d} ==");
    let pe = sinusoidal(400, d)?;
    let rows: Vec<Vec<String>> = SIMILARITY_OFFSETS
        .iter()
        .map(|&delta| {
            let sims: Vec<f32> =
                [0, 100, 250].iter().map(|&p| cosine(&pe.row(p), &pe.row(p + delta))).collect();
            let mut row = vec![delta.to_string()];
            row.extend(sims.iter().map(|s| format!("{s:.4}")));
            row
        })
        .collect();
    println!("{}", table(&["Δ", "pos = 0", "pos = 100", "pos = 250"], &rows));

    println!("\n== RoPE: the score q_i · k_j for one q and one k, d_k = 64 ==");
    let mut rng = StdRng::seed_from_u64(7);
    let (q, k) = (standard_normal(1, 64, &mut rng), standard_normal(1, 64, &mut rng));
    // The query at position i, the key at position j.
    let score = |i: usize, j: usize| -> Result<f32, attn::AttnError> {
        Ok(rope(&q, i)?.row(0).dot(&rope(&k, j)?.row(0)))
    };
    let rows: Vec<Vec<String>> = ROPE_POSITIONS
        .iter()
        .map(|&(i, j)| {
            let s = score(i, j)?;
            Ok(vec![
                i.to_string(),
                j.to_string(),
                format!("{}", i as i64 - j as i64),
                format!("{s:.4}"),
            ])
        })
        .collect::<Result<_, attn::AttnError>>()?;
    println!("{}", table(&["i", "j", "i − j", "q_i · k_j"], &rows));
    let x = standard_normal(50, 64, &mut rng);
    let rotated = rope(&x, 3)?;
    let norm_change = largest_norm_change(&x, &rotated)?;
    println!("largest change of a vector's norm under RoPE (50 vectors): {norm_change:.1e}");

    println!("\n== ALiBi slopes, as powers of two: log2(slope) ==");
    let show = |h: usize| -> Result<String, attn::AttnError> {
        let slopes = alibi_slopes(h)?;
        let exponents: Vec<String> = slopes.iter().map(|s| format!("{}", s.log2())).collect();
        Ok(exponents.join(" "))
    };
    for &h in &options.alibi_heads {
        println!("h = {:<4}{}", format!("{h}:"), show(h)?);
    }
    println!("bias of head 1 (slope 1/2), n = 5:");
    println!("{}", matrix(&alibi_bias(5, 0.5)?, 1));

    draw_sinusoidal(options.positions, options.d_model)?;
    draw_curves()?;
    draw_similarity()?;
    draw_alibi()?;
    Ok(())
}

/// Figure 7.1: the encoding of `n` positions in `d` dimensions (64 and 128).
fn draw_sinusoidal(n: usize, d: usize) -> Result<(), report::error::ReportError> {
    let pe = sinusoidal(n, d)?;
    let every = |n: usize, step: usize| -> Vec<String> {
        (0..n).map(|i| if i % step == 0 { i.to_string() } else { String::new() }).collect()
    };
    let (rows, cols) = (every(n, 8), every(d, 16));
    let rows: Vec<&str> = rows.iter().map(String::as_str).collect();
    let cols: Vec<&str> = cols.iter().map(String::as_str).collect();
    let h = plot::Heatmap {
        title: &format!("Sinusoidal positional encoding, d_model = {d}"),
        row_labels: &rows,
        col_labels: &cols,
        x_desc: "dimension (2f: sine, 2f + 1: cosine)",
        y_desc: "position",
        value_desc: "PE value",
        range: (-1.0, 1.0),
        annotate: None,
    };
    let path = plot::dense_heatmap("ch07-sinusoidal.svg", &h, &pe, (740, 480));
    println!("wrote {}", path.display());
    Ok(())
}

/// Figure 7.2: four dimensions of the encoding as functions of position.
fn draw_curves() -> Result<(), report::error::ReportError> {
    let pe = sinusoidal(CURVE_POSITIONS, CURVE_WIDTH)?;
    let colours = [plot::BLUE_, plot::ORANGE_, plot::GREY_, plot::GREEN_];
    let omega = frequencies(CURVE_WIDTH)?;
    // Dimension 2f is the sine of pair f, 2f + 1 its cosine.
    let dims = CURVE_DIMENSIONS.map(|dim| {
        let (f, wave) = (dim / 2, if dim % 2 == 0 { "sin" } else { "cos" });
        let period = std::f64::consts::TAU / omega[f];
        (dim, format!("dim {dim}: {wave}(pos·ω_{f}), period {period:.1}"))
    });
    let series = dims
        .iter()
        .zip(colours)
        .map(|((d, label), colour)| plot::Series {
            label: label.clone(),
            points: (0..CURVE_POSITIONS).map(|p| (p as f64, pe[[p, *d]] as f64)).collect(),
            colour,
            dashed: false,
            spread: Vec::new(),
        })
        .collect();
    let chart = plot::Chart {
        title: "Four dimensions of the sinusoidal encoding, d_model = 128",
        x_desc: "position",
        y_desc: "PE value",
        log2_x: false,
        log10_y: false,
        y_range: (-1.1, 1.8),
    };
    let path = plot::line_charts("ch07-pe-curves.svg", &[(chart, series)]);
    println!("wrote {}", path.display());
    Ok(())
}

/// Figure 7.3: similarity of two positions' encodings against their distance.
fn draw_similarity() -> Result<(), report::error::ReportError> {
    let series = SIMILARITY_WIDTHS
        .iter()
        .zip([plot::ORANGE_, plot::BLUE_, plot::GREY_])
        .map(|(&d, colour)| -> Result<plot::Series, attn::AttnError> {
            let pe = sinusoidal(SIMILARITY_DISTANCE + 1, d)?;
            Ok(plot::Series {
                label: format!("d_model = {d}"),
                points: (0..=SIMILARITY_DISTANCE)
                    .map(|delta| (delta as f64, cosine(&pe.row(0), &pe.row(delta)) as f64))
                    .collect(),
                colour,
                dashed: false,
                spread: Vec::new(),
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let chart = plot::Chart {
        title: "Cosine similarity of PE(pos) and PE(pos + Δ) (the same for every pos)",
        x_desc: "distance Δ between positions",
        y_desc: "cosine similarity",
        log2_x: false,
        log10_y: false,
        y_range: (0.0, 1.2),
    };
    let path = plot::line_charts("ch07-similarity.svg", &[(chart, series)]);
    println!("wrote {}", path.display());
    Ok(())
}

/// Figure 7.4: ALiBi's bias matrices for four of eight heads.
fn draw_alibi() -> Result<(), report::error::ReportError> {
    let slopes = alibi_slopes(SLOPE_HEADS[0])?;
    let labels: Vec<String> = (0..ALIBI_POSITIONS).map(|p| p.to_string()).collect();
    let positions: Vec<&str> = labels.iter().map(String::as_str).collect();
    let titles: Vec<String> = FIGURE_HEADS
        .iter()
        .map(|&h| format!("head {} (slope 1/{})", h + 1, (1.0 / slopes[h]).round()))
        .collect();
    let panels: Vec<(plot::Heatmap, Array2<f32>)> = FIGURE_HEADS
        .iter()
        .zip(&titles)
        .map(|(&h, title)| {
            let heat = plot::Heatmap {
                title,
                row_labels: &positions,
                col_labels: &positions,
                x_desc: "key position j",
                y_desc: "query position i",
                value_desc: "bias −slope·(i − j)",
                range: (-3.5, 0.0),
                annotate: Some(3),
            };
            Ok((heat, alibi_bias(ALIBI_POSITIONS, slopes[h])?))
        })
        .collect::<Result<_, attn::AttnError>>()?;
    let path = plot::heatmap_grid(
        "ch07-alibi.svg",
        "ALiBi bias added to the scores, 4 of 8 heads (future keys: −inf)",
        2,
        &panels,
    );
    println!("wrote {}", path.display());
    Ok(())
}
