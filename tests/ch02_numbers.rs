//! Chapter 2 quotes the output of `cargo run --example ch02_scaling`; these
//! tests rerun the experiments (same seed), require the chapter to quote the
//! tables verbatim, and check the measurements against the theory within the
//! tolerances the chapter states.

use attn::scaling::{self, SaturationRow, VarianceRow, SEED};

mod common;

fn assert_quoted(block: &str) {
    common::assert_quoted("ch02-why-scale.md", block);
}

fn variance() -> Vec<VarianceRow> {
    scaling::variance_experiment(scaling::VARIANCE_SAMPLES, SEED)
}

fn saturation() -> Vec<SaturationRow> {
    let m = scaling::KEYS_PER_QUERY;
    scaling::saturation_experiment(m, scaling::SATURATION_TRIALS, SEED)
}

#[test]
fn variance_is_d_k_unscaled_and_1_scaled() {
    let rows = variance();
    assert_quoted(&format!("```text\n{}\n```", scaling::variance_table(&rows)));
    for r in &rows {
        let ratio = r.unscaled / r.d_k as f64;
        // The chapter: "within 5% of 1 ... all of them are within 2%".
        assert!(
            (ratio - 1.0).abs() < 0.02,
            "d_k = {}: Var/d_k = {ratio}",
            r.d_k
        );
        assert!(
            (r.scaled - 1.0).abs() < 0.02,
            "d_k = {}: scaled {}",
            r.d_k,
            r.scaled
        );
    }
    // "relative standard error of about √(2/10,000) ≈ 1.4%"
    let se = (2.0 / scaling::VARIANCE_SAMPLES as f64).sqrt();
    assert_eq!(format!("{:.1}", 100.0 * se), "1.4");
    // "about ±8 at d_k = 64 and ±32 at d_k = 1024"
    assert_eq!((64f64.sqrt(), 1024f64.sqrt()), (8.0, 32.0));
}

#[test]
fn unscaled_scores_saturate_and_scaled_do_not() {
    let rows = saturation();
    let m = scaling::KEYS_PER_QUERY as f64;
    assert_quoted(&format!(
        "{}\nuniform over 16: max p = {:.4}, H = ln 16 = {:.3}\n```",
        scaling::saturation_table(&rows),
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
