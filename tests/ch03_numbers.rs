//! Chapter 3 quotes the output of `cargo run --example ch03_scaling`; these
//! tests rerun the experiments (same seed), require the chapter to quote the
//! tables verbatim, and check the measurements against the theory within the
//! tolerances the chapter states.

use attn::scaling::{self, SaturationRow, VarianceRow, SEED};

mod common;

use report::numbers::Bindings;

const CHAPTER: &str = "ch03-why-scale.md";

fn variance() -> Vec<VarianceRow> {
    scaling::variance_experiment(scaling::VARIANCE_SAMPLES, SEED).unwrap()
}

fn saturation() -> Vec<SaturationRow> {
    let m = scaling::KEYS_PER_QUERY;
    scaling::saturation_experiment(m, scaling::SATURATION_TRIALS, SEED).unwrap()
}

fn variance_is_d_k_unscaled_and_1_scaled(b: &mut Bindings) {
    let rows = variance();
    b.quoted(&format!("```text\n{}\n```", report::ch03::variance_table(&rows)));
    // "Every measured ratio, and every scaled variance, lies within 2
    // standard errors of 1".
    for r in &rows {
        let ratio = r.unscaled / r.d_k as f64;
        let se = relative_standard_error(r.d_k);
        assert!((ratio - 1.0).abs() < 2.0 * se, "d_k = {}: Var/d_k = {ratio}", r.d_k);
        assert!((r.scaled - 1.0).abs() < 2.0 * se, "d_k = {}: scaled {}", r.d_k, r.scaled);
    }
}

/// The fourth moment of a standard normal variable, E[z⁴] = 3!! = 1·3.
fn normal_fourth_moment() -> f64 {
    (1..4).step_by(2).product::<usize>() as f64
}

/// The kurtosis of q·k for standard normal q, k of width `d_k`: each term
/// q_a·k_a has fourth moment E[q⁴]E[k⁴] and variance 1, so excess kurtosis
/// E[q⁴]² − 3; a sum of `d_k` independent terms divides the excess by `d_k`.
fn score_kurtosis(d_k: usize) -> f64 {
    let normal = normal_fourth_moment();
    normal + (normal * normal - normal) / d_k as f64
}

/// The relative standard error of the sample variance of q·k over the
/// experiment's N draws: √((κ − 1)/N).
fn relative_standard_error(d_k: usize) -> f64 {
    ((score_kurtosis(d_k) - 1.0) / scaling::VARIANCE_SAMPLES as f64).sqrt()
}

#[test]
fn the_kurtosis_of_a_dot_product_is_measured_as_derived() {
    use ndarray_rand::rand::{rngs::StdRng, SeedableRng};
    let mut rng = StdRng::seed_from_u64(SEED);
    let (draws, d_k) = (200_000, 4);
    let q = scaling::standard_normal(draws, d_k, &mut rng);
    let k = scaling::standard_normal(draws, d_k, &mut rng);
    let dots: Vec<f64> = (q * k).rows().into_iter().map(|r| r.sum() as f64).collect();
    let mean = dots.iter().sum::<f64>() / draws as f64;
    let moment = |p: i32| dots.iter().map(|x| (x - mean).powi(p)).sum::<f64>() / draws as f64;
    let kurtosis = moment(4) / moment(2).powi(2);
    assert!((kurtosis - score_kurtosis(d_k)).abs() < 0.15, "{kurtosis}");
}

fn unscaled_scores_saturate_and_scaled_do_not(b: &mut Bindings) {
    let rows = saturation();
    let m = scaling::KEYS_PER_QUERY as f64;
    b.quoted(&format!(
        "{}\nuniform over 16: max p = {:.4}, H = ln 16 = {:.3}\n```",
        report::ch03::saturation_table(&rows),
        1.0 / m,
        m.ln()
    ));
    let (first, last) = (&rows[0], &rows[rows.len() - 1]);
    // Unscaled: the largest weight rises and the entropy falls with d_k.
    for pair in rows.windows(2) {
        assert!(pair[1].unscaled.max_weight > pair[0].unscaled.max_weight);
        assert!(pair[1].unscaled.entropy < pair[0].unscaled.entropy);
    }
    assert!(last.unscaled.max_weight > 0.95 && last.unscaled.entropy < 0.11);
    // Scaled: "largest weight about 0.24, entropy about 2.36 nats, ‖J‖ near
    // 0.30, at every width".
    for r in &rows {
        assert!((r.scaled.max_weight - 0.24).abs() < 0.01, "{r:?}");
        assert!((r.scaled.entropy - 2.36).abs() < 0.03, "{r:?}");
        assert!((r.scaled.jacobian_norm - 0.30).abs() < 0.01, "{r:?}");
    }
    // "more than five times smaller"
    assert!(first.unscaled.jacobian_norm / last.unscaled.jacobian_norm > 5.0);
}

/// Every number the chapter shows is bound: quoted output, or a value
/// registered here with its check, or exempt (`tests/common/numbers.rs`).
#[test]
fn every_number_is_bound() {
    let mut b = Bindings::new(CHAPTER);
    variance_is_d_k_unscaled_and_1_scaled(&mut b);
    unscaled_scores_saturate_and_scaled_do_not(&mut b);
    bind_prose(&mut b);
    repeats(&mut b);
    b.assert_all_bound();
}

/// Numbers of the prose, captions, alt text and quiz, each with its check.
fn bind_prose(b: &mut Bindings) {
    b.exact("2017", SEED as f64)
        .exact("10,000", scaling::VARIANCE_SAMPLES as f64)
        .exact("2,000", scaling::SATURATION_TRIALS as f64)
        .exact("1024", scaling::D_KS[scaling::D_KS.len() - 1] as f64);
    // "kurtosis ... 3 for a normal variable ... fourth moment 3 · 3 = 9 ...
    // 3 + 6/d_k ... 1.9% at d_k = 4, falling to 1.4% at the widest".
    let normal = normal_fourth_moment();
    b.exact("3", normal).exact("9", normal * normal).exact("6", normal * normal - normal);
    let (narrowest, widest) = (scaling::D_KS[0], scaling::D_KS[scaling::D_KS.len() - 1]);
    b.exact("4", narrowest as f64)
        .rounded("1.9%", 100.0 * relative_standard_error(narrowest))
        .rounded("1.4%", 100.0 * relative_standard_error(widest));
    // "grows like √d_k": the variance is d_k within 2 standard errors at
    // every width; "the farthest is 1.2 standard errors away".
    let variance = variance();
    let z = |r: &VarianceRow| {
        let off = (r.unscaled / r.d_k as f64 - 1.0).abs().max((r.scaled - 1.0).abs());
        off / relative_standard_error(r.d_k)
    };
    let worst = variance.iter().map(z).fold(0.0, f64::max);
    let variance_is_d_k = worst < 2.0;
    b.at_most("2", worst).rounded("1.2", worst);
    b.claim("grows like $\\sqrt{d_k}$", variance_is_d_k).value(
        "1000",
        variance[variance.len() - 1].unscaled,
        50.0,
    );

    let rows = saturation();
    let (first, last) = (&rows[0], &rows[rows.len() - 1]);
    let unscaled_max: Vec<f64> = rows.iter().map(|r| r.unscaled.max_weight).collect();
    let unscaled_h: Vec<f64> = rows.iter().map(|r| r.unscaled.entropy).collect();
    let unscaled_j: Vec<f64> = rows.iter().map(|r| r.unscaled.jacobian_norm).collect();
    let rising = |xs: &[f64]| xs.windows(2).all(|w| w[1] > w[0]);
    let falling = |xs: &[f64]| xs.windows(2).all(|w| w[1] < w[0]);
    let range = |f: fn(&SaturationRow) -> f64| {
        let xs: Vec<f64> = rows.iter().map(f).collect();
        let lo = xs.iter().cloned().fold(f64::INFINITY, f64::min);
        (lo, xs.iter().cloned().fold(lo, f64::max))
    };
    let saturates = rising(&unscaled_max) && falling(&unscaled_h);
    b.claim("the rows saturate as $d_k$ grows", saturates)
        .claim("towards one-hot rows as $d_k$ grows", saturates)
        .claim("rises from 0.43 to 0.96 without scaling", saturates)
        .claim("falls from 1.76 to 0.10 nats without scaling", saturates)
        .claim("the Jacobian's norm falling as $d_k$ grows", falling(&unscaled_j))
        .claim("scaling it falls from 0.3235", falling(&unscaled_j))
        .claim("Without scaling it falls from about 0.32", falling(&unscaled_j))
        .claim("it\nshrinks as $d_k$ grows", falling(&unscaled_j))
        .claim(
            "shrinks as its rows approach one-hot",
            falling(&unscaled_j) && rising(&unscaled_max),
        );
    b.rounded("0.43", first.unscaled.max_weight)
        .rounded("0.96", last.unscaled.max_weight)
        .rounded("1.76", first.unscaled.entropy)
        .rounded("0.10", last.unscaled.entropy)
        .rounded("2.77", (scaling::KEYS_PER_QUERY as f64).ln())
        .rounded("0.32", first.unscaled.jacobian_norm)
        .rounded("0.057", last.unscaled.jacobian_norm);
    // Scaled: the ranges quoted, and "about 0.24 / 2.36 / 0.30" as the
    // middle of those ranges, within 0.01, 0.03 and 0.01.
    let (w_lo, w_hi) = range(|r| r.scaled.max_weight);
    let (h_lo, h_hi) = range(|r| r.scaled.entropy);
    let (j_lo, j_hi) = range(|r| r.scaled.jacobian_norm);
    b.rounded("0.235", w_lo).rounded("0.249", w_hi);
    b.rounded("2.354", h_lo).rounded("2.383", h_hi);
    b.value("0.24", w_lo, 0.01).value("0.24", w_hi, 0.01);
    b.value("2.36", h_lo, 0.03).value("2.36", h_hi, 0.03);
    b.value("0.30", j_lo, 0.01).value("0.30", j_hi, 0.01);
    let stays = w_hi - w_lo < 0.02 && j_hi - j_lo < 0.02 && h_hi - h_lo < 0.06;
    b.claim("stays between 0.235 and 0.249", stays)
        .claim("stays near 0.24 with scaling", stays)
        .claim("stays near 2.36 with scaling", stays)
        .claim("with scaling it stays near 0.30", stays)
        .claim("with scaling it stays at about 0.30", stays)
        .claim("it stays near 0.30. This", stays)
        .claim("stays between 0.235 and 0.249 and the Jacobian's norm near 0.30", stays);
    jacobian_between_the_extremes(b, &rows);
    gradients_depend_on_the_width_unscaled(b);
}

/// "0.242 for these 16 keys ... 0.5 when two keys share the weight equally
/// ... at d_k = 4 ... (0.3235 against 0.30)".
fn jacobian_between_the_extremes(b: &mut Bindings, rows: &[SaturationRow]) {
    let m = scaling::KEYS_PER_QUERY;
    let norm_of =
        |p: ndarray::Array1<f32>| scaling::frobenius_norm(&scaling::softmax_jacobian(&p).unwrap());
    let uniform = norm_of(ndarray::Array1::from_elem(m, 1.0 / m as f32));
    let mut pair = ndarray::Array1::zeros(m);
    pair[0] = 0.5;
    pair[1] = 0.5;
    let two = norm_of(pair);
    b.rounded("0.242", uniform).rounded("0.5", two).exact("16", m as f64);
    let first = &rows[0];
    assert!(first.scaled.jacobian_norm > uniform && two > first.scaled.jacobian_norm);
    assert!(first.unscaled.jacobian_norm > first.scaled.jacobian_norm);
    b.rounded("0.3235", first.unscaled.jacobian_norm);
    // "up to its largest value, 0.5": no row of random weights exceeds it.
    let mut rng =
        <ndarray_rand::rand::rngs::StdRng as ndarray_rand::rand::SeedableRng>::seed_from_u64(SEED);
    for _ in 0..2000 {
        let scores = scaling::standard_normal(1, m, &mut rng).row(0).mapv(|s| 3.0 * s);
        let p = attn::softmax::softmax(&scores).unwrap();
        assert!(norm_of(p) <= two + 1e-6);
    }
    b.rounded("0.43", first.unscaled.max_weight).rounded("0.235", first.scaled.max_weight);
    b.claim(
        "make rows noticeably more\npeaked",
        first.unscaled.max_weight > first.scaled.max_weight
            && first.unscaled.jacobian_norm > first.scaled.jacobian_norm,
    );
}

fn falling_jacobian(rows: &[SaturationRow]) -> bool {
    rows.windows(2).all(|w| w[1].unscaled.jacobian_norm < w[0].unscaled.jacobian_norm)
}

/// Chapter 11's measurement, which chapter 3 states as the consequence.
fn gradients_depend_on_the_width_unscaled(b: &mut Bindings) {
    let norms = report::ch11::gradient_norm_experiment().unwrap();
    let (first, last) = (&norms[0], &norms[norms.len() - 1]);
    let falls = norms.windows(2).all(|w| w[1].unscaled.0 < w[0].unscaled.0);
    let rises = norms.windows(2).all(|w| w[1].unscaled.1 > w[0].unscaled.1);
    let level =
        norms.iter().all(|r| (r.scaled.0 - 4.8).abs() < 0.15 && (r.scaled.1 - 4.8).abs() < 0.15);
    b.exact("4096", last.d_k as f64)
        .rounded("5.1", first.unscaled.0)
        .rounded("1.0", last.unscaled.0)
        .rounded("9.8", first.unscaled.1)
        .rounded("67", last.unscaled.1);
    for r in &norms {
        b.value("4.8", r.scaled.0, 0.15).value("4.8", r.scaled.1, 0.15);
    }
    let queries = report::ch11::query_gradient_experiment().unwrap();
    let widest = &queries[queries.len() - 1];
    let none_vanish = queries.iter().all(|r| r.scaled.2 == 0.0);
    b.rounded("74%", 100.0 * widest.unscaled.2)
        .exact("0.01", attn::grad::VANISHED)
        .claim("falls from 5.1 to 1.0 while the mean", falls)
        .claim("rises from 9.8 to 67", rises)
        .claim("Scaled, the mean norms stay near 4.8", level && none_vanish)
        .claim("while a few queries' grow", rises && widest.unscaled.2 > 0.5)
        .claim("the collapse towards 0\nas the width grows", falling_jacobian(&saturation()));
}

/// The widths and figures that later sections repeat, bound where they stand.
fn repeats(b: &mut Bindings) {
    let (narrowest, widest) = (scaling::D_KS[0], scaling::D_KS[scaling::D_KS.len() - 1]);
    let middle = scaling::D_KS.iter().copied().find(|&d| d == 64).unwrap();
    // "about ±8 at d_k = 64 and ±32 at d_k = 1024".
    b.section("The derivation")
        .exact("64", middle as f64)
        .exact("8", (middle as f64).sqrt())
        .exact("1024", widest as f64)
        .exact("32", (widest as f64).sqrt());
    let rows = saturation();
    let last = &rows[rows.len() - 1];
    b.section("Experiment 3: the softmax's Jacobian")
        .exact("4", narrowest as f64)
        .exact("1024", widest as f64)
        .rounded("0.0572", last.unscaled.jacobian_norm);
    b.section("What to take away").exact("4", narrowest as f64).exact("1024", widest as f64);
    // Quiz 1: d_k = 256, whose measured variance gives a standard deviation
    // of about 16.
    let variance = variance();
    let at_256 = variance.iter().find(|r| r.d_k == 256).unwrap();
    b.section("Quiz").exact("256", at_256.d_k as f64).rounded("16", at_256.unscaled.sqrt());
    b.section("");
}
