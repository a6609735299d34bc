//! Chapter 7, Positional encoding: prints the permutation check, sinusoidal
//! values, the offset map's error, position similarities, RoPE's relative
//! scores and ALiBi's slopes, and draws the chapter's four figures.
//!
//! ```text
//! cargo run --release --example ch07_position
//! ```

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

/// The permutation the example applies to 7 tokens.
const PERM: [usize; 7] = [3, 0, 6, 2, 5, 1, 4];
/// Offsets for the similarity table.
const OFFSETS: [usize; 8] = [0, 1, 2, 5, 10, 20, 50, 100];

fn main() -> Result<(), report::error::ReportError> {
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
    let omega = frequencies(512);
    println!(
        "d_model = 512: ω_0 = {}, ω_255 = {:.3e}; wavelengths 2π/ω from {:.2} to {:.0} positions",
        omega[0],
        omega[255],
        std::f64::consts::TAU / omega[0],
        std::f64::consts::TAU / omega[255]
    );

    println!("\n== PE(pos + k) = M_k · PE(pos), d_model = 64, positions 0 to 199 ==");
    let pe = sinusoidal(200, 64)?;
    for k in [1, 5, 17, 99] {
        let m_k = offset_map(k, 64)?;
        let shifted = m_k.dot(&pe.slice(ndarray::s![..200 - k, ..]).t()).reversed_axes();
        let target = pe.slice(ndarray::s![k.., ..]);
        println!("Δ = {k:>2}: largest error {:.1e}", max_diff(&shifted, &target));
    }

    println!("\n== Cosine similarity of PE(pos) and PE(pos + Δ), d_model = 128 ==");
    let pe = sinusoidal(400, 128)?;
    let rows: Vec<Vec<String>> = OFFSETS
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

    println!("\n== RoPE: the score q_m · k_n for one q and one k, d_k = 64 ==");
    let mut rng = StdRng::seed_from_u64(7);
    let (q, k) = (standard_normal(1, 64, &mut rng), standard_normal(1, 64, &mut rng));
    // The query at position t, the key at position t2 (the book's t′).
    let score = |t: usize, t2: usize| -> Result<f32, attn::AttnError> {
        Ok(rope(&q, t)?.row(0).dot(&rope(&k, t2)?.row(0)))
    };
    let pairs = [(5, 2), (105, 102), (1005, 1002), (2, 5)];
    let rows: Vec<Vec<String>> = pairs
        .iter()
        .map(|&(t, t2)| {
            let s = score(t, t2)?;
            Ok(vec![
                t.to_string(),
                t2.to_string(),
                format!("{}", t as i64 - t2 as i64),
                format!("{s:.4}"),
            ])
        })
        .collect::<Result<_, attn::AttnError>>()?;
    println!("{}", table(&["t", "t′", "t − t′", "q_t · k_t′"], &rows));
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
    println!("h = 8:  {}", show(8)?);
    println!("h = 12: {}", show(12)?);
    println!("bias of head 1 (slope 1/2), n = 5:");
    println!("{}", matrix(&alibi_bias(5, 0.5)?, 1));

    draw_sinusoidal()?;
    draw_curves()?;
    draw_similarity()?;
    draw_alibi()?;
    Ok(())
}

/// Figure 7.1: the encoding of 64 positions in 128 dimensions.
fn draw_sinusoidal() -> Result<(), report::error::ReportError> {
    let pe = sinusoidal(64, 128)?;
    let every = |n: usize, step: usize| -> Vec<String> {
        (0..n).map(|i| if i % step == 0 { i.to_string() } else { String::new() }).collect()
    };
    let (rows, cols) = (every(64, 8), every(128, 16));
    let rows: Vec<&str> = rows.iter().map(String::as_str).collect();
    let cols: Vec<&str> = cols.iter().map(String::as_str).collect();
    let h = plot::Heatmap {
        title: "Sinusoidal positional encoding, d_model = 128",
        row_labels: &rows,
        col_labels: &cols,
        x_desc: "dimension (2i: sine, 2i + 1: cosine)",
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
    let pe = sinusoidal(101, 128)?;
    let colours = [plot::BLUE_, plot::ORANGE_, plot::GREY_, plot::GREEN_];
    let omega = frequencies(128);
    let period = |i: usize| std::f64::consts::TAU / omega[i];
    let dims = [
        (10, format!("dim 10: sin(pos·ω_5), period {:.1}", period(5))),
        (11, format!("dim 11: cos(pos·ω_5), period {:.1}", period(5))),
        (20, format!("dim 20: sin(pos·ω_10), period {:.1}", period(10))),
        (40, format!("dim 40: sin(pos·ω_20), period {:.1}", period(20))),
    ];
    let series = dims
        .iter()
        .zip(colours)
        .map(|((d, label), colour)| plot::Series {
            label: label.clone(),
            points: (0..=100).map(|p| (p as f64, pe[[p, *d]] as f64)).collect(),
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
    let series = [(64, plot::ORANGE_), (128, plot::BLUE_), (512, plot::GREY_)]
        .iter()
        .map(|&(d, colour)| -> Result<plot::Series, attn::AttnError> {
            let pe = sinusoidal(401, d)?;
            Ok(plot::Series {
                label: format!("d_model = {d}"),
                points: (0..=400)
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
    let slopes = alibi_slopes(8)?;
    let positions = ["0", "1", "2", "3", "4", "5", "6", "7"];
    let titles: Vec<String> = [0, 1, 3, 7]
        .iter()
        .map(|&h| format!("head {} (slope 1/{})", h + 1, (1.0 / slopes[h]).round()))
        .collect();
    let panels: Vec<(plot::Heatmap, Array2<f32>)> = [0, 1, 3, 7]
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
            Ok((heat, alibi_bias(8, slopes[h])?))
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
