//! Chapter 7 quotes the output of `cargo run --example ch07_position`; these
//! tests recompute it, require the chapter to quote it verbatim, and check
//! the claims of the prose and of the figures' descriptions.

use attn::position::{
    alibi_bias, alibi_slopes, frequencies, largest_norm_change, offset_map, rope, sinusoidal,
};
use attn::projection::Projections;
use attn::scaling::standard_normal;
use ndarray::{s, ArrayRef1, ArrayRef2, Axis};
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};
use report::show::{matrix, table};

mod common;

use report::numbers::Bindings;

const CHAPTER: &str = "ch07-positional-encoding.md";

fn max_diff(a: &ArrayRef2<f32>, b: &ArrayRef2<f32>) -> f32 {
    (a - b).fold(0.0, |m, &d| m.max(d.abs()))
}

fn cosine(a: &ArrayRef1<f32>, b: &ArrayRef1<f32>) -> f32 {
    a.dot(b) / (a.dot(a).sqrt() * b.dot(b).sqrt())
}

const PERM: [usize; 7] = [3, 0, 6, 2, 5, 1, 4];

fn permutation_block(b: &mut Bindings) {
    let mut rng = StdRng::seed_from_u64(6);
    let layer = Projections::new(16, 8, 8, &mut rng).unwrap();
    let x = standard_normal(7, 16, &mut rng);
    b.exact("7", x.nrows() as f64);
    let x_perm = x.select(Axis(0), &PERM);
    let plain = max_diff(
        &layer.self_attention(&x_perm).unwrap().output,
        &layer.self_attention(&x).unwrap().output.select(Axis(0), &PERM),
    );
    let pe = sinusoidal(7, 16).unwrap();
    let with_pe = max_diff(
        &layer.self_attention(&(&x_perm + &pe)).unwrap().output,
        &layer.self_attention(&(&x + &pe)).unwrap().output.select(Axis(0), &PERM),
    );
    assert!(plain < 1e-6 && with_pe > 0.1);
    b.quoted(&format!(
        "no positions:   largest |out(ΠX) − Π·out(X)| = {plain:.1e}\n\
         sinusoidal PE:  largest |out(ΠX + PE) − Π·out(X + PE)| = {with_pe:.2}\n"
    ));
}

fn sinusoidal_blocks_and_figures_6_1_and_6_2(b: &mut Bindings) {
    b.quoted(&format!("```text\n{}\n```", matrix(&sinusoidal(4, 4).unwrap(), 4)));
    let omega = frequencies(512);
    let tau = std::f64::consts::TAU;
    b.quoted(&format!(
        "d_model = 512: ω_0 = {}, ω_255 = {:.3e}; wavelengths 2π/ω from {:.2} to {:.0} positions",
        omega[0],
        omega[255],
        tau / omega[0],
        tau / omega[255]
    ));
    // Figure 7.1: "from dimension 96 on, every sine column stays below 0.07
    // and every cosine column above 0.99 over these 64 positions".
    let pe = sinusoidal(64, 128).unwrap();
    b.exact("64", pe.nrows() as f64)
        .exact("63", pe.nrows() as f64 - 1.0)
        .exact("128", pe.ncols() as f64);
    let (mut sine_max, mut cosine_min) = (0.0_f32, 1.0_f32);
    for col in 96..128 {
        let column = pe.column(col);
        if col % 2 == 0 {
            sine_max = column.fold(sine_max, |a, &x| a.max(x.abs()));
        } else {
            cosine_min = column.fold(cosine_min, |a, &x| a.min(x));
        }
    }
    b.exact("96", 96.0)
        .value("0.07", sine_max as f64, 0.07)
        .claim("every sine column stays below 0.07", sine_max < 0.07)
        .value("0.99", cosine_min as f64, 0.01);
    assert!(cosine_min > 0.99);
    // d_model = 4: ω_1 = 1/10000^(2/4) = 0.01.
    let omega4 = frequencies(4);
    b.exact("4", omega4.len() as f64 * 2.0).rounded("0.01", omega4[1]);
    b.rounded("10000", 1.0 / frequencies(20)[1].powf(10.0));
    // Figure 7.2's periods, 2π/ω_i for pairs 5, 10 and 20 of d_model = 128.
    let omega = frequencies(128);
    let periods: Vec<String> =
        [5, 10, 20].iter().map(|&i| format!("{:.1}", tau / omega[i])).collect();
    assert_eq!(periods, ["12.9", "26.5", "111.7"]);
    for p in &periods {
        b.quoted(p);
    }
    // Figure 7.2's alt text names dimensions 10 and 11 (pair 5) and 40.
    b.exact("11", 2.0 * 5.0 + 1.0).exact("40", 2.0 * 20.0);
    b.exact("512", 512.0);
}

fn offset_map_block(b: &mut Bindings) {
    let pe = sinusoidal(200, 64).unwrap();
    b.exact("199", pe.nrows() as f64 - 1.0);
    let mut block = String::new();
    for k in [1, 5, 17, 99] {
        let m_k = offset_map(k, 64).unwrap();
        let shifted = m_k.dot(&pe.slice(s![..200 - k, ..]).t()).reversed_axes();
        let err = max_diff(&shifted, &pe.slice(s![k.., ..]));
        b.at_most("2e-5", err as f64);
        block += &format!("Δ = {k:>2}: largest error {err:.1e}\n");
    }
    b.quoted(&block);
}

fn similarity_table_and_figure_6_3(b: &mut Bindings) {
    let pe = sinusoidal(400, 128).unwrap();
    let omega = frequencies(128);
    let rows: Vec<Vec<String>> = [0, 1, 2, 5, 10, 20, 50, 100]
        .iter()
        .map(|&delta: &usize| {
            let mut row = vec![delta.to_string()];
            for p in [0, 100, 250] {
                let measured = cosine(&pe.row(p), &pe.row(p + delta));
                // The closed form (2/d) Σ cos(Δ ω_i), independent of p.
                let theory = omega.iter().map(|w| (delta as f64 * w).cos()).sum::<f64>() / 64.0;
                assert!((measured as f64 - theory).abs() < 1e-5);
                row.push(format!("{measured:.4}"));
            }
            row
        })
        .collect();
    b.quoted(&table(&["Δ", "pos = 0", "pos = 100", "pos = 250"], &rows));
    // Alt text: "around 0.2 to 0.3 at distance 400", "512 wobbles least".
    let mut wobble = Vec::new();
    let mut smooth_start = true;
    for d in [64, 128, 512] {
        let pe = sinusoidal(401, d).unwrap();
        let sims: Vec<f32> = (0..=400).map(|k| cosine(&pe.row(0), &pe.row(k))).collect();
        b.exact("400", sims.len() as f64 - 1.0);
        // "to around 0.2 to 0.3 at distance 400"
        b.value("0.2", sims[400] as f64, 0.15).value("0.3", sims[400] as f64, 0.15);
        assert!((0.15..0.35).contains(&sims[400]), "d = {d}: {}", sims[400]);
        smooth_start &= sims[..5].windows(2).all(|w| w[1] < w[0]);
        wobble.push(sims.windows(2).map(|w| (w[1] - w[0]).abs()).sum::<f32>());
    }
    assert!(wobble[2] < wobble[1] && wobble[2] < wobble[0], "{wobble:?}");
    b.claim("similarity falls off", smooth_start);
}

fn rope_block(b: &mut Bindings) {
    let mut rng = StdRng::seed_from_u64(7);
    let (q, k) = (standard_normal(1, 64, &mut rng), standard_normal(1, 64, &mut rng));
    let score = |m, n| rope(&q, m).unwrap().row(0).dot(&rope(&k, n).unwrap().row(0));
    let rows: Vec<Vec<String>> = [(5, 2), (105, 102), (1005, 1002), (2, 5)]
        .iter()
        .map(|&(m, n)| {
            vec![
                m.to_string(),
                n.to_string(),
                format!("{}", m as i64 - n as i64),
                format!("{:.4}", score(m, n)),
            ]
        })
        .collect();
    let x = standard_normal(50, 64, &mut rng);
    let rotated = rope(&x, 3).unwrap();
    let norm_change = largest_norm_change(&x, &rotated).unwrap();
    assert!(norm_change < 1e-4);
    // "shift both positions by up to 1000 and require the score to stay
    // within 10⁻⁴"
    let drift = (score(1005, 1002) - score(5, 2)).abs();
    b.exact("1000", 1000.0).at_most("1e-4", drift as f64);
    b.claim("require the score to stay within", drift < 1e-4);
    b.quoted(&format!(
        "{}\nlargest change of a vector's norm under RoPE (50 vectors): {norm_change:.1e}\n",
        table(&["t", "t′", "t − t′", "q_t · k_t′"], &rows)
    ));
}

fn alibi_block_figure_6_4_and_exercise_3(b: &mut Bindings) {
    let exponents = |h| {
        let e: Vec<String> =
            alibi_slopes(h).unwrap().iter().map(|s| format!("{}", s.log2())).collect();
        e.join(" ")
    };
    b.quoted(&format!(
        "h = 8:  {}\nh = 12: {}\nbias of head 1 (slope 1/2), n = 5:\n{}\n",
        exponents(8),
        exponents(12),
        matrix(&alibi_bias(5, 0.5).unwrap(), 1)
    ));
    // Alt text: the bias at distance 7 in heads 1, 2, 4 and 8.
    let slopes = alibi_slopes(8).unwrap();
    let corner: Vec<String> = [0, 1, 3, 7]
        .iter()
        .map(|&h| format!("{:.3}", alibi_bias(8, slopes[h]).unwrap()[[7, 0]]))
        .collect();
    assert_eq!(corner, ["-3.500", "-1.750", "-0.438", "-0.027"]);
    b.rounded("-1.75", alibi_bias(8, slopes[1]).unwrap()[[7, 0]] as f64)
        .rounded("-0.438", alibi_bias(8, slopes[3]).unwrap()[[7, 0]] as f64)
        .rounded("-0.027", alibi_bias(8, slopes[7]).unwrap()[[7, 0]] as f64)
        .exact("7", 7.0);
    // Slopes 1/2 … 1/256; exercise 3: distances 2 and 256; heads 1, 2, 4, 8.
    b.exact("256", 1.0 / slopes[7] as f64).exact("4", 4.0);
    let bias = alibi_bias(8, slopes[0]).unwrap();
    b.claim("growing linearly with distance", (1..8).all(|i| bias[[i, 0]] == -0.5 * i as f32));
}

/// Every number the chapter shows is bound: quoted output, or a value
/// registered here with its check, or exempt (`tests/common/numbers.rs`).
#[test]
fn every_number_is_bound() {
    let mut b = Bindings::new(CHAPTER);
    permutation_block(&mut b);
    sinusoidal_blocks_and_figures_6_1_and_6_2(&mut b);
    offset_map_block(&mut b);
    similarity_table_and_figure_6_3(&mut b);
    rope_block(&mut b);
    alibi_block_figure_6_4_and_exercise_3(&mut b);
    bind_prose(&mut b);
    b.assert_all_bound();
}

/// Numbers of the prose, captions, alt text and quiz, each with its check.
fn bind_prose(b: &mut Bindings) {
    // Learned tables: 512 positions in BERT, 1024 in GPT-2 (their published
    // configurations; a fact about those models, not computed here).
    b.exact("1024", 1024.0);
    // Exercise 1's tolerance: rope_half_split equals rope reordered.
    let x = standard_normal(3, 8, &mut StdRng::seed_from_u64(1));
    let to_half: Vec<usize> = (0..8).step_by(2).chain((1..8).step_by(2)).collect();
    let interleaved = rope(&x, 2).unwrap().select(Axis(1), &to_half);
    let half = attn::exercises::ch07::rope_half_split(&x.select(Axis(1), &to_half), 2).unwrap();
    let worst = max_diff(&interleaved, &half);
    b.at_most("1e-6", worst as f64);
}
