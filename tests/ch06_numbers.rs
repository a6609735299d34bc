//! Chapter 6 quotes the output of `cargo run --example ch06_position`; these
//! tests recompute it, require the chapter to quote it verbatim, and check
//! the claims of the prose and of the figures' descriptions.

use attn::position::{
    alibi_bias, alibi_slopes, frequencies, largest_norm_change, offset_map, rope, sinusoidal,
};
use attn::projection::Projections;
use attn::scaling::standard_normal;
use attn::show::{matrix, table};
use ndarray::{s, ArrayRef1, ArrayRef2, Axis};
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

mod common;

use common::numbers::Bindings;

const CHAPTER: &str = "ch06-positional-encoding.md";

fn max_diff(a: &ArrayRef2<f32>, b: &ArrayRef2<f32>) -> f32 {
    (a - b).fold(0.0, |m, &d| m.max(d.abs()))
}

fn cosine(a: &ArrayRef1<f32>, b: &ArrayRef1<f32>) -> f32 {
    a.dot(b) / (a.dot(a).sqrt() * b.dot(b).sqrt())
}

const PERM: [usize; 7] = [3, 0, 6, 2, 5, 1, 4];

fn permutation_block(b: &mut Bindings) {
    let mut rng = StdRng::seed_from_u64(6);
    let layer = Projections::new(16, 8, 8, &mut rng);
    let x = standard_normal(7, 16, &mut rng);
    let x_perm = x.select(Axis(0), &PERM);
    let plain = max_diff(
        &layer.self_attention(&x_perm).unwrap().output,
        &layer
            .self_attention(&x)
            .unwrap()
            .output
            .select(Axis(0), &PERM),
    );
    let pe = sinusoidal(7, 16).unwrap();
    let with_pe = max_diff(
        &layer.self_attention(&(&x_perm + &pe)).unwrap().output,
        &layer
            .self_attention(&(&x + &pe))
            .unwrap()
            .output
            .select(Axis(0), &PERM),
    );
    assert!(plain < 1e-6 && with_pe > 0.1);
    b.quoted(&format!(
        "no positions:   largest |out(PX) − P·out(X)| = {plain:.1e}\n\
         sinusoidal PE:  largest |out(PX + PE) − P·out(X + PE)| = {with_pe:.2}\n"
    ));
}

fn sinusoidal_blocks_and_figures_6_1_and_6_2(b: &mut Bindings) {
    b.quoted(&format!(
        "```text\n{}\n```",
        matrix(&sinusoidal(4, 4).unwrap(), 4)
    ));
    let omega = frequencies(512);
    let tau = std::f64::consts::TAU;
    b.quoted(&format!(
        "d_model = 512: ω_0 = {}, ω_255 = {:.3e}; wavelengths 2π/ω from {:.2} to {:.0} positions",
        omega[0],
        omega[255],
        tau / omega[0],
        tau / omega[255]
    ));
    // Figure 6.1: "from dimension 96 on, every sine column stays below 0.07
    // and every cosine column above 0.99 over these 64 positions".
    let pe = sinusoidal(64, 128).unwrap();
    for col in 96..128 {
        let column = pe.column(col);
        if col % 2 == 0 {
            assert!(column.iter().all(|&x| x.abs() < 0.07), "sine column {col}");
        } else {
            assert!(column.iter().all(|&x| x > 0.99), "cosine column {col}");
        }
    }
    // Figure 6.2's periods, 2π/ω_i for pairs 5, 10 and 20 of d_model = 128.
    let omega = frequencies(128);
    let periods: Vec<String> = [5, 10, 20]
        .iter()
        .map(|&i| format!("{:.1}", tau / omega[i]))
        .collect();
    assert_eq!(periods, ["12.9", "26.5", "111.7"]);
    for p in &periods {
        b.quoted(p);
    }
}

fn offset_map_block(b: &mut Bindings) {
    let pe = sinusoidal(200, 64).unwrap();
    let mut block = String::new();
    for k in [1, 5, 17, 99] {
        let m_k = offset_map(k, 64).unwrap();
        let shifted = m_k.dot(&pe.slice(s![..200 - k, ..]).t()).reversed_axes();
        let err = max_diff(&shifted, &pe.slice(s![k.., ..]));
        assert!(err < 2e-5);
        block += &format!("k = {k:>2}: largest error {err:.1e}\n");
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
    for d in [64, 128, 512] {
        let pe = sinusoidal(401, d).unwrap();
        let sims: Vec<f32> = (0..=400).map(|k| cosine(&pe.row(0), &pe.row(k))).collect();
        assert!((0.15..0.35).contains(&sims[400]), "d = {d}: {}", sims[400]);
        wobble.push(sims.windows(2).map(|w| (w[1] - w[0]).abs()).sum::<f32>());
    }
    assert!(wobble[2] < wobble[1] && wobble[2] < wobble[0], "{wobble:?}");
}

fn rope_block(b: &mut Bindings) {
    let mut rng = StdRng::seed_from_u64(7);
    let (q, k) = (
        standard_normal(1, 64, &mut rng),
        standard_normal(1, 64, &mut rng),
    );
    let score = |m, n| {
        rope(&q, m)
            .unwrap()
            .row(0)
            .dot(&rope(&k, n).unwrap().row(0))
    };
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
    b.quoted(&format!(
        "{}\nlargest change of a vector's norm under RoPE (50 vectors): {norm_change:.1e}\n",
        table(&["m", "n", "m − n", "q_m · k_n"], &rows)
    ));
}

fn alibi_block_figure_6_4_and_exercise_3(b: &mut Bindings) {
    let exponents = |h| {
        let e: Vec<String> = alibi_slopes(h)
            .unwrap()
            .iter()
            .map(|s| format!("{}", s.log2()))
            .collect();
        e.join(" ")
    };
    b.quoted(&format!(
        "h = 8:  {}\nh = 12: {}\nbias of head 1 (slope 1/2), n = 5:\n{}\n",
        exponents(8),
        exponents(12),
        matrix(&alibi_bias(5, 0.5), 1)
    ));
    // Alt text: the bias at distance 7 in heads 1, 2, 4 and 8.
    let slopes = alibi_slopes(8).unwrap();
    let corner: Vec<String> = [0, 1, 3, 7]
        .iter()
        .map(|&h| format!("{:.3}", alibi_bias(8, slopes[h])[[7, 0]]))
        .collect();
    assert_eq!(corner, ["-3.500", "-1.750", "-0.438", "-0.027"]);
    // Exercise 3: distance 1/m is 2 and 256.
    assert_eq!((1.0 / slopes[0], 1.0 / slopes[7]), (2.0, 256.0));
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
    let _ = b;
}
