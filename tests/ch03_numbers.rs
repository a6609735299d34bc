//! Chapter 3 quotes the output of `cargo run --example ch03_scaling`; these
//! tests rerun the experiments (same seed), require the chapter to quote the
//! tables verbatim, and check the measurements against the theory within the
//! tolerances the chapter states.

use attn::scaling::{self, SaturationRow, VarianceRow, SEED};

mod common;

use report::numbers::Bindings;

const CHAPTER: &str = "ch03-why-scale.md";

fn variance() -> Vec<VarianceRow> {
    scaling::variance_experiment(scaling::VARIANCE_SAMPLES, SEED)
}

fn saturation() -> Vec<SaturationRow> {
    let m = scaling::KEYS_PER_QUERY;
    scaling::saturation_experiment(m, scaling::SATURATION_TRIALS, SEED).unwrap()
}

fn variance_is_d_k_unscaled_and_1_scaled(b: &mut Bindings) {
    let rows = variance();
    b.quoted(&format!("```text\n{}\n```", report::ch03::variance_table(&rows)));
    for r in &rows {
        let ratio = r.unscaled / r.d_k as f64;
        // The chapter: "within 5% of 1 ... all of them are within 2%".
        assert!((ratio - 1.0).abs() < 0.02, "d_k = {}: Var/d_k = {ratio}", r.d_k);
        assert!((r.scaled - 1.0).abs() < 0.02, "d_k = {}: scaled {}", r.d_k, r.scaled);
    }
    // "relative standard error of about √(2/10,000) ≈ 1.4%"
    let se = (2.0 / scaling::VARIANCE_SAMPLES as f64).sqrt();
    assert_eq!(format!("{:.1}", 100.0 * se), "1.4");
    // "about ±8 at d_k = 64 and ±32 at d_k = 1024"
    assert_eq!((64f64.sqrt(), 1024f64.sqrt()), (8.0, 32.0));
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
    b.assert_all_bound();
}

/// Numbers of the prose, captions, alt text and quiz, each with its check.
fn bind_prose(b: &mut Bindings) {
    b.exact("2017", SEED as f64)
        .exact("10,000", scaling::VARIANCE_SAMPLES as f64)
        .exact("2,000", scaling::SATURATION_TRIALS as f64)
        .exact("1024", scaling::D_KS[scaling::D_KS.len() - 1] as f64);
    // "relative standard error of about √(2/10,000) ≈ 1.4%"
    b.rounded("1.4", 100.0 * (2.0 / scaling::VARIANCE_SAMPLES as f64).sqrt());
    // "grows like √d_k": the variance is d_k within 2% at every width.
    let variance = variance();
    let variance_is_d_k = variance.iter().all(|r| (r.unscaled / r.d_k as f64 - 1.0).abs() < 0.02);
    let worst = variance
        .iter()
        .map(|r| (r.unscaled / r.d_k as f64 - 1.0).abs().max((r.scaled - 1.0).abs()))
        .fold(0.0, f64::max);
    b.at_most("2%", 100.0 * worst);
    b.claim("grows like $\\sqrt{d_k}$", variance_is_d_k)
        .claim("which themselves grow", variance_is_d_k)
        .value("1000", variance[variance.len() - 1].unscaled, 50.0);

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
    // What reaches Q (chapter 11's experiment): unscaled, it grows with d_k.
    let norms = attn::grad::gradient_norms(&[4, 16, 64, 256, 1024, 4096], 200, 2017).unwrap();
    b.claim(
        "gradient reaching $Q$ grows with $d_k$",
        norms.windows(2).all(|w| w[1].unscaled.1 > w[0].unscaled.1),
    );
}
