//! Chapter 1 quotes the output of `cargo run --example ch01_origins`; these
//! tests rebuild every quoted block with the same functions and seeds,
//! require the chapter to quote it verbatim, and check the claims its prose
//! makes about the numbers.

use attn::origins::{additive_score_flops, dot_score_flops, kernel_regression};
use report::ch01::{
    bandwidth_table, queries, score_cost_table, sharpness_experiment, sharpness_table,
    training_set, BANDWIDTHS,
};

mod common;

use report::numbers::Bindings;

const CHAPTER: &str = "ch01-where-attention-came-from.md";

fn kernel_regression_block_and_figures(b: &mut Bindings) {
    let (x, y) = training_set(40, 2).unwrap();
    let grid = queries(101);
    b.quoted(&format!("```text\n{}\n```", bandwidth_table(&x, &y, &grid).unwrap()));
    b.exact("40", x.len() as f64)
        .exact("101", grid.len() as f64)
        .exact("5", grid[grid.len() - 1] as f64)
        .rounded("0.3", f64::from(report::ch01::NOISE_STD));
    for (shown, rho) in ["0.05", "0.3", "2"].into_iter().zip(BANDWIDTHS) {
        b.rounded(shown, f64::from(rho));
    }
    // Figure 1.1's caption: "0.74 on average" is the small bandwidth's
    // largest weight; "the middle bandwidth has the smallest error".
    let error = |rho: f32| {
        let a = kernel_regression(&grid, &x, &y, rho).unwrap();
        grid.iter()
            .zip(a.output.column(0))
            .map(|(&q, &e)| ((e - report::ch01::truth(q)) as f64).powi(2))
            .sum::<f64>()
    };
    let errors = BANDWIDTHS.map(error);
    b.claim(
        "The middle bandwidth has the smallest",
        errors[1] < errors[0] && errors[1] < errors[2],
    );
    let largest = |rho: f32| {
        let a = kernel_regression(&grid, &x, &y, rho).unwrap();
        a.weights.rows().into_iter().map(|r| r.fold(0.0_f32, |m, &w| m.max(w)) as f64).sum::<f64>()
            / grid.len() as f64
    };
    b.rounded("0.74", largest(0.05));
    // Figure 1.2: the weights of the queries 1, 2.5 and 4 at ρ = 0.3; the
    // bump at 4 reaches about 0.27, the highest.
    let probes = ndarray::Array1::from(report::ch01::PROBES.to_vec());
    let a = kernel_regression(&probes, &x, &y, 0.3).unwrap();
    let peaks: Vec<f64> =
        a.weights.rows().into_iter().map(|r| r.fold(0.0_f32, |m, &w| m.max(w)) as f64).collect();
    b.rounded("0.27", peaks[2]);
    assert!(peaks[2] > peaks[0] && peaks[2] > peaks[1], "the bump at 4 is highest: {peaks:?}");
    for (shown, &q) in ["1", "2.5", "4"].iter().zip(&probes) {
        b.exact(shown, q);
    }
    // "the score falls with the squared distance": each query's weights
    // fall with |x − x_j|.
    let falls = a.weights.rows().into_iter().zip(&probes).all(|(w, &q)| {
        let mut by_distance: Vec<(f32, f32)> =
            x.iter().zip(w).map(|(&x_j, &w_j)| ((x_j - q).abs(), w_j)).collect();
        by_distance.sort_by(|a, b| a.0.total_cmp(&b.0));
        by_distance.windows(2).all(|p| p[1].1 <= p[0].1)
    });
    b.claim("the score falls with the squared distance", falls);
    // "where training points are sparse ... each gets more": fewer training
    // inputs within one bandwidth of 4 than of 1 and 2.5.
    let near = |c: f32| x.iter().filter(|&&x_j| (x_j - c).abs() < 0.3).count();
    assert!(near(4.0) < near(1.0) && near(4.0) < near(2.5));
}

fn cost_block(b: &mut Bindings) {
    let (lengths, d) = (report::ch01::COST_LENGTHS, report::ch01::COST_WIDTH);
    b.quoted(&format!("```text\n{}\n```", score_cost_table(&lengths, d)));
    let ratio = |n| additive_score_flops(n, n, d, d) / dot_score_flops(n, n, d);
    let (short, long) = (lengths[0], lengths[lengths.len() - 1]);
    b.rounded("1.6", ratio(long)).rounded("2.5", ratio(short)).exact("64", d as f64);
    b.claim("cost 1.6 to 2.5 times", ratio(short) > 1.0 && ratio(long) > 1.0);
}

fn sharpness_block(b: &mut Bindings) {
    let (m, d) = (report::ch01::SHARPNESS_KEYS, report::ch01::SHARPNESS_WIDTH);
    let (rows, bound) = sharpness_experiment(m, d, &report::ch01::SCALES, 1).unwrap();
    let others = (m - 1) as f64;
    let ceiling = (bound as f64).exp() / ((bound as f64).exp() + others * (-(bound as f64)).exp());
    b.quoted(&format!(
        "```text\n{}\nadditive scores lie within ±{bound:.2}, so no weight exceeds {ceiling:.3}\n```",
        sharpness_table(&rows)
    ));
    b.exact("16", m as f64).exact("8", d as f64);
    // Dot product: sharpens towards one key; additive: flattens towards 1/16.
    b.claim(
        "a longer query sharpens the weights until one key takes everything",
        rows.windows(2).all(|w| w[1].dot >= w[0].dot) && rows[3].dot > 0.999,
    );
    let uniform = 1.0 / m as f32;
    b.claim(
        "the weights flatten towards the uniform",
        rows.windows(2).all(|w| w[1].additive < w[0].additive)
            && (rows[3].additive - uniform).abs() < 0.005,
    );
    // "already divided by √d and still reaches a weight of 1.000", and the
    // scores grow with the query's length (the table's weights sharpen).
    b.claim(
        "1.000. When training lengthens queries and keys, their scores grow with\nthem",
        format!("{:.3}", rows[3].dot) == "1.000" && rows.windows(2).all(|w| w[1].dot >= w[0].dot),
    );
    // Quiz 3: the query's length multiplied by 64, the largest factor.
    let scales = report::ch01::SCALES;
    b.exact("64", scales[scales.len() - 1]);
}

/// Every number the chapter shows is bound: quoted output, or a value
/// registered here with its check, or exempt (`tests/common/numbers.rs`).
#[test]
fn every_number_is_bound() {
    let mut b = Bindings::new(CHAPTER);
    kernel_regression_block_and_figures(&mut b);
    cost_block(&mut b);
    sharpness_block(&mut b);
    b.assert_all_bound();
}
