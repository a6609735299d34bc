//! Chapter 7 quotes the output of `cargo run --example ch07_position`; these
//! tests recompute it, require the chapter to quote it verbatim, and check
//! the claims of the prose and of the figures' descriptions, section by
//! section.

use attn::position::{
    alibi_bias, alibi_slopes, frequencies, largest_norm_change, offset_map, rope, sinusoidal,
};
use attn::projection::Projections;
use attn::scaling::standard_normal;
use ndarray::{s, ArrayRef1, ArrayRef2, Axis};
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};
use report::ch07::{
    look_back, look_back_block, ALIBI_POSITIONS, CURVE_DIMENSIONS, CURVE_POSITIONS, CURVE_WIDTH,
    FIGURE_HEADS, OFFSETS, OFFSET_POSITIONS, OFFSET_WIDTH, PERMUTATION, QUIZ_DISTANCE, RANGE_WIDTH,
    ROPE_POSITIONS, SIMILARITY_DISTANCE, SIMILARITY_WIDTHS, SINUSOIDAL_FIGURE, SLOPE_HEADS,
};
use report::measurements::data_file;
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

fn attention_cannot_see_order(b: &mut Bindings) {
    b.section("Attention cannot see order");
    let mut rng = StdRng::seed_from_u64(6);
    let layer = Projections::new(16, 8, 8, &mut rng).unwrap();
    let x = standard_normal(PERMUTATION.len(), 16, &mut rng);
    // "The example permutes 7 random tokens".
    b.exact("7", x.nrows() as f64);
    let x_perm = x.select(Axis(0), &PERMUTATION);
    let plain = max_diff(
        &layer.self_attention(&x_perm).unwrap().output,
        &layer.self_attention(&x).unwrap().output.select(Axis(0), &PERMUTATION),
    );
    let pe = sinusoidal(x.nrows(), 16).unwrap();
    let with_pe = max_diff(
        &layer.self_attention(&(&x_perm + &pe)).unwrap().output,
        &layer.self_attention(&(&x + &pe)).unwrap().output.select(Axis(0), &PERMUTATION),
    );
    assert!(plain < 1e-6 && with_pe > 0.1);
    b.quoted(&format!(
        "no positions:   largest |out(ΠX) − Π·out(X)| = {plain:.1e}\n\
         sinusoidal PE:  largest |out(ΠX + PE) − Π·out(X + PE)| = {with_pe:.2}\n"
    ));
    // "position 0 now carries different information from position 3": the
    // token shuffled to position 0 came from position 3.
    b.exact("3", PERMUTATION[0] as f64);
}

fn sinusoidal_encoding_and_figures_7_1_and_7_2(b: &mut Bindings) {
    b.section("Sinusoidal encoding");
    // The base of the frequencies, 10000: in ω_f's formula, in the
    // column-index bug's exponent, and in ω_1 at d_model = 4.
    let base = 1.0 / frequencies(20).unwrap()[1].powf(10.0);
    b.rounded("10000", base).rounded("10000", base);
    // d_model = 4: ω_1 = 1/10000^(2/4) = 0.01, positions 0 to 3.
    let omega4 = frequencies(4).unwrap();
    let pe4 = sinusoidal(4, 4).unwrap();
    b.exact("4", pe4.ncols() as f64).rounded("10000", base).exact("4", pe4.ncols() as f64);
    b.rounded("0.01", omega4[1]).exact("3", pe4.nrows() as f64 - 1.0);
    b.quoted(&format!("```text\n{}\n```", matrix(&pe4, 4)));
    // Position 1 is [sin 1, cos 1, sin 0.01, cos 0.01].
    b.rounded("0.01", omega4[1]).rounded("0.01", omega4[1]);
    assert_eq!(pe4[[1, 2]], (omega4[1] as f32).sin());
    // The range of frequencies at d_model = 512.
    let omega = frequencies(RANGE_WIDTH).unwrap();
    let last = omega.len() - 1;
    let tau = std::f64::consts::TAU;
    b.exact("512", RANGE_WIDTH as f64);
    b.quoted(&format!(
        "d_model = {RANGE_WIDTH}: ω_0 = {}, ω_{last} = {:.3e}; wavelengths 2π/ω from {:.2} to {:.0} positions",
        omega[0],
        omega[last],
        tau / omega[0],
        tau / omega[last]
    ));
    // Figure 7.1: "from dimension 96 on, every sine column stays below 0.07
    // and every cosine column above 0.99 over these 64 positions": the
    // rightmost quarter of the 128 dimensions.
    let (positions, width) = SINUSOIDAL_FIGURE;
    let pe = sinusoidal(positions, width).unwrap();
    b.exact("64", pe.nrows() as f64).exact("128", pe.ncols() as f64);
    b.exact("63", pe.nrows() as f64 - 1.0).exact("128", pe.ncols() as f64);
    let quarter = 3 * width / 4;
    let (mut sine_max, mut cosine_min) = (0.0_f32, 1.0_f32);
    for col in quarter..width {
        let column = pe.column(col);
        if col % 2 == 0 {
            sine_max = column.fold(sine_max, |a, &x| a.max(x.abs()));
        } else {
            cosine_min = column.fold(cosine_min, |a, &x| a.min(x));
        }
    }
    b.exact("96", quarter as f64)
        .at_most("0.07", sine_max as f64)
        .claim("every sine column stays below 0.07", sine_max < 0.07)
        .at_least("0.99", cosine_min as f64)
        .exact("64", pe.nrows() as f64);
    // Figure 7.2: dimensions 10, 11 (pair 5), 20 and 40 over positions 0 to
    // 100, with the periods 2π/ω_f of their pairs.
    let omega = frequencies(CURVE_WIDTH).unwrap();
    let period = |dim: usize| tau / omega[dim / 2];
    let [d10, d11, d20, d40] = CURVE_DIMENSIONS;
    assert_eq!((d10 / 2, d10 % 2, d11 / 2, d11 % 2), (d11 / 2, 0, d10 / 2, 1), "one pair");
    b.exact("100", CURVE_POSITIONS as f64 - 1.0)
        .exact("10", d10 as f64)
        .exact("11", d11 as f64)
        .rounded("12.9", period(d10))
        .exact("20", d20 as f64)
        .rounded("26.5", period(d20))
        .exact("40", d40 as f64)
        .rounded("111.7", period(d40));
    assert!(period(d40) > CURVE_POSITIONS as f64, "less than one period");
    // The caption: "Dimensions 10 and 11 are one pair".
    b.exact("10", d10 as f64).exact("11", d11 as f64);
}

fn offset_map_block(b: &mut Bindings) {
    b.section("Relative positions are a linear map");
    let pe = sinusoidal(OFFSET_POSITIONS, OFFSET_WIDTH).unwrap();
    b.exact("199", pe.nrows() as f64 - 1.0).exact("64", pe.ncols() as f64);
    let mut block = String::new();
    let mut worst = 0.0_f32;
    for delta in OFFSETS {
        let m_delta = offset_map(delta, OFFSET_WIDTH).unwrap();
        let head = pe.slice(s![..OFFSET_POSITIONS - delta, ..]);
        let shifted = m_delta.dot(&head.t()).reversed_axes();
        let err = max_diff(&shifted, &pe.slice(s![delta.., ..]));
        worst = worst.max(err);
        block += &format!("Δ = {delta:>2}: largest error {err:.1e}\n");
    }
    // The test's tolerance, 2·10⁻⁵, bounds every error.
    b.at_most("2e-5", worst as f64);
    b.quoted(&block);
}

fn similarity_table_and_figure_7_3(b: &mut Bindings) {
    b.section("Similarity depends only on distance");
    let pe = sinusoidal(400, 128).unwrap();
    let omega = frequencies(128).unwrap();
    // "The example measures it from three starting positions".
    let starts = [0, 100, 250];
    assert_eq!(starts.len(), 3);
    let rows: Vec<Vec<String>> = [0, 1, 2, 5, 10, 20, 50, 100]
        .iter()
        .map(|&delta: &usize| {
            let mut row = vec![delta.to_string()];
            for p in starts {
                let measured = cosine(&pe.row(p), &pe.row(p + delta));
                // The closed form (2/d) Σ cos(Δ ω_f), independent of p.
                let theory = omega.iter().map(|w| (delta as f64 * w).cos()).sum::<f64>() / 64.0;
                assert!((measured as f64 - theory).abs() < 1e-5);
                row.push(format!("{measured:.4}"));
            }
            row
        })
        .collect();
    b.quoted(&table(&["Δ", "pos = 0", "pos = 100", "pos = 250"], &rows));
    // Alt text: "from 0 to 400, for d_model 64, 128 and 512", "around 0.2 to
    // 0.3 at distance 400", "The d_model = 512 curve wobbles least".
    b.exact("400", SIMILARITY_DISTANCE as f64);
    for d in SIMILARITY_WIDTHS {
        b.exact(&d.to_string(), d as f64);
    }
    let mut wobble = Vec::new();
    let mut smooth_start = true;
    let mut at_end = Vec::new();
    for d in SIMILARITY_WIDTHS {
        let pe = sinusoidal(SIMILARITY_DISTANCE + 1, d).unwrap();
        let sims: Vec<f32> =
            (0..=SIMILARITY_DISTANCE).map(|k| cosine(&pe.row(0), &pe.row(k))).collect();
        at_end.push(sims[SIMILARITY_DISTANCE] as f64);
        smooth_start &= sims[..5].windows(2).all(|w| w[1] < w[0]);
        wobble.push(sims.windows(2).map(|w| (w[1] - w[0]).abs()).sum::<f32>());
    }
    let lowest = at_end.iter().copied().fold(f64::INFINITY, f64::min);
    let highest = at_end.iter().copied().fold(0.0, f64::max);
    b.value("0.2", lowest, 0.05).value("0.3", highest, 0.05);
    b.exact("400", SIMILARITY_DISTANCE as f64);
    let least = wobble.iter().enumerate().min_by(|a, b| a.1.total_cmp(b.1)).unwrap().0;
    b.exact("512", SIMILARITY_WIDTHS[least] as f64);
    b.claim("similarity falls off", smooth_start);
}

fn look_back_block_and_claims(b: &mut Bindings) {
    b.section("Can a layer look");
    let rows = look_back().unwrap();
    b.quoted(&look_back_block(&rows));
    // The encoding alone: every query with a key Δ back scores it highest.
    assert!(rows.iter().all(|r| r.alone == r.queries));
    b.claim(
        "for almost no query",
        rows.iter().all(|r| (r.with_content as f64) < 0.05 * r.queries as f64),
    );
}

fn learned_positions(b: &mut Bindings) {
    b.section("Learned absolute positions");
    // "BERT's has 512 rows (so has chapter 15's model, a small BERT)": the
    // position table of chapter 15's model, as its data file lists it.
    let tensors = data_file("ch15-tensors.tsv").unwrap();
    let shape = tensors
        .lines()
        .find_map(|l| l.strip_prefix("embeddings.position_embeddings.weight\tF32\t"))
        .expect("chapter 15's position table");
    let rows: usize = shape.split('x').next().unwrap().parse().unwrap();
    b.exact("512", rows as f64);
}

fn rope_block(b: &mut Bindings) {
    b.section("RoPE: rotate queries and keys");
    let mut rng = StdRng::seed_from_u64(7);
    let (q, k) = (standard_normal(1, 64, &mut rng), standard_normal(1, 64, &mut rng));
    b.exact("64", q.ncols() as f64);
    let score = |i, j| rope(&q, i).unwrap().row(0).dot(&rope(&k, j).unwrap().row(0));
    let rows: Vec<Vec<String>> = ROPE_POSITIONS
        .iter()
        .map(|&(i, j)| {
            vec![
                i.to_string(),
                j.to_string(),
                format!("{}", i as i64 - j as i64),
                format!("{:.4}", score(i, j)),
            ]
        })
        .collect();
    let x = standard_normal(50, 64, &mut rng);
    let rotated = rope(&x, 3).unwrap();
    let norm_change = largest_norm_change(&x, &rotated).unwrap();
    assert!(norm_change < 1e-4);
    b.quoted(&format!(
        "{}\nlargest change of a vector's norm under RoPE (50 vectors): {norm_change:.1e}\n",
        table(&["i", "j", "i − j", "q_i · k_j"], &rows)
    ));
    // "Moving both positions by 100 or 1000 leaves the score unchanged".
    let moved = |r: usize| ROPE_POSITIONS[r].0 - ROPE_POSITIONS[0].0;
    assert!((1..3).all(|r| moved(r) == ROPE_POSITIONS[r].1 - ROPE_POSITIONS[0].1));
    b.exact("100", moved(1) as f64).exact("1000", moved(2) as f64);
    // "The test shifts both positions ... and requires the score to stay
    // within 10⁻⁴": its pairs and shifts.
    let mut drift = 0.0_f32;
    for (i, j) in [(0, 0), (5, 2), (2, 5), (40, 3), (100, 100)] {
        for shift in [1, 7, 250, 1000] {
            drift = drift.max((score(i, j) - score(i + shift, j + shift)).abs());
        }
    }
    b.at_most("1e-4", drift as f64);
    b.claim("requires the score to stay within", drift < 1e-4);
}

fn alibi_block_and_figure_7_4(b: &mut Bindings) {
    b.section("ALiBi: a distance penalty on the scores");
    let exponents = |h| {
        let e: Vec<String> =
            alibi_slopes(h).unwrap().iter().map(|s| format!("{}", s.log2())).collect();
        e.join(" ")
    };
    let printed: Vec<String> = SLOPE_HEADS
        .iter()
        .map(|&h| format!("h = {:<4}{}", format!("{h}:"), exponents(h)))
        .collect();
    b.quoted(&format!(
        "{}\nbias of head 1 (slope 1/2), n = 5:\n{}\n",
        printed.join("\n"),
        matrix(&alibi_bias(5, 0.5).unwrap(), 1)
    ));
    // "For 8 heads the slopes are 1/2, 1/4, …, 1/256"; "the 12-head rule".
    let slopes = alibi_slopes(SLOPE_HEADS[0]).unwrap();
    b.exact("8", slopes.len() as f64)
        .exact("4", 1.0 / slopes[1] as f64)
        .exact("256", 1.0 / slopes[slopes.len() - 1] as f64)
        .exact("12", SLOPE_HEADS[1] as f64);
    // Figure 7.4's alt text: "Four 8 by 8 heatmaps of ALiBi bias, for heads
    // 1, 2, 4 and 8 of 8", the bias at distance 7 in each.
    let n = ALIBI_POSITIONS;
    let corner = |h: usize| alibi_bias(n, slopes[h]).unwrap()[[n - 1, 0]] as f64;
    b.exact("8", n as f64).exact("8", n as f64);
    b.exact("4", FIGURE_HEADS[2] as f64 + 1.0)
        .exact("8", FIGURE_HEADS[3] as f64 + 1.0)
        .exact("8", slopes.len() as f64);
    b.rounded("-3.5", corner(FIGURE_HEADS[0]))
        .exact("7", n as f64 - 1.0)
        .rounded("-1.75", corner(FIGURE_HEADS[1]))
        .rounded("-0.438", corner(FIGURE_HEADS[2]))
        .exact("4", FIGURE_HEADS[2] as f64 + 1.0)
        .rounded("-0.027", corner(FIGURE_HEADS[3]))
        .exact("8", FIGURE_HEADS[3] as f64 + 1.0);
    // The caption: "4 of 8 heads, for 8 positions", "(slope 1/256)".
    b.exact("4", FIGURE_HEADS.len() as f64)
        .exact("8", slopes.len() as f64)
        .exact("8", n as f64)
        .exact("256", 1.0 / slopes[slopes.len() - 1] as f64);
    let bias = alibi_bias(n, slopes[0]).unwrap();
    b.claim(
        "growing linearly with distance",
        (1..n).all(|i| bias[[i, 0]] == -slopes[0] * i as f32),
    );
}

fn exercises(b: &mut Bindings) {
    b.section("Exercises");
    // Exercise 1's tolerance: rope_half_split equals rope reordered.
    let x = standard_normal(3, 8, &mut StdRng::seed_from_u64(1));
    let to_half: Vec<usize> = (0..8).step_by(2).chain((1..8).step_by(2)).collect();
    let interleaved = rope(&x, 2).unwrap().select(Axis(1), &to_half);
    let half = attn::exercises::ch07::rope_half_split(&x.select(Axis(1), &to_half), 2).unwrap();
    b.at_most("1e-6", max_diff(&interleaved, &half) as f64);
    // Exercise 3: the steepest and shallowest of 8 heads reach −1 at
    // distances 2 and 256.
    let slopes = alibi_slopes(SLOPE_HEADS[0]).unwrap();
    let shallowest = slopes[slopes.len() - 1];
    assert_eq!(1.0 / slopes[0], 2.0);
    b.exact("8", slopes.len() as f64)
        .exact("256", 1.0 / shallowest as f64)
        .exact("256", 1.0 / shallowest as f64);
}

fn quiz(b: &mut Bindings) {
    b.section("Quiz");
    // Quiz 3: a key 512 positions back in a model with 8 ALiBi heads; the
    // penalties slope × distance of the shallowest heads and the steepest.
    let slopes = alibi_slopes(SLOPE_HEADS[0]).unwrap();
    let penalty = |h: usize| slopes[h] as f64 * QUIZ_DISTANCE as f64;
    let last = slopes.len() - 1;
    assert_eq!(penalty(last), 2.0, "the shallowest head's penalty there is −2");
    b.exact("8", slopes.len() as f64).exact("512", QUIZ_DISTANCE as f64);
    b.exact("4", penalty(last - 1)).exact("256", penalty(0));
    // The answer: "from 1/2 down to 1/256", "512/256 = 2", "512/2 = 256".
    b.exact("256", 1.0 / slopes[last] as f64)
        .exact("512", QUIZ_DISTANCE as f64)
        .exact("256", 1.0 / slopes[last] as f64)
        .exact("512", QUIZ_DISTANCE as f64)
        .exact("256", penalty(0));
}

/// Every number the chapter shows is bound: quoted output, or a value
/// registered here with its check, or exempt (`tests/common/numbers.rs`).
#[test]
fn every_number_is_bound() {
    let mut b = Bindings::new(CHAPTER);
    attention_cannot_see_order(&mut b);
    sinusoidal_encoding_and_figures_7_1_and_7_2(&mut b);
    offset_map_block(&mut b);
    similarity_table_and_figure_7_3(&mut b);
    look_back_block_and_claims(&mut b);
    learned_positions(&mut b);
    rope_block(&mut b);
    alibi_block_and_figure_7_4(&mut b);
    exercises(&mut b);
    quiz(&mut b);
    b.assert_all_bound();
}
