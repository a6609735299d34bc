//! Chapter 18 quotes the output of `cargo run --example
//! ch18_longer_than_trained`, which computes RoPE's scaled frequencies and
//! reads the runs of `cargo xtask train long`; these tests recompute that
//! output and bind every number the chapter shows, section by section.

use attn::lm::{LanguageModel, SHAKESPEARE_MODEL};
use attn::rope_scaling::{RopeFrequencies, RopeScaling};
use report::ch18::{
    angles, angles_report, frequency_report, kept_and_divided, Scaled, D_K, FACTOR, LONGEST,
    TRAINED, YARN_BETAS,
};
use report::numbers::Bindings;

const CHAPTER: &str = "ch18-longer-than-trained.md";

#[test]
fn every_number_is_bound() {
    let mut b = Bindings::new(CHAPTER);
    introduction(&mut b);
    past_the_table(&mut b);
    angles_never_seen(&mut b);
    stretching(&mut b);
    runs(&mut b);
    exercises(&mut b);
    quiz(&mut b);
    b.assert_all_bound();
}

fn introduction(b: &mut Bindings) {
    b.section("Longer than trained");
    b.exact("64", TRAINED as f64).exact("64", TRAINED as f64).exact("64", TRAINED as f64);
}

fn past_the_table(b: &mut Bindings) {
    b.section("Past the end of the table");
    let learned = LanguageModel::<f32>::new(SHAKESPEARE_MODEL, 1).unwrap();
    assert!(learned.with_context(TRAINED + 1).is_err(), "no row for position 64");
    b.exact("64", TRAINED as f64).exact("64", TRAINED as f64);
}

fn angles_never_seen(b: &mut Bindings) {
    b.section("Angles never seen");
    b.exact("64", TRAINED as f64).exact("64", TRAINED as f64);
    b.exact("32", D_K as f64);
    assert_eq!(D_K, SHAKESPEARE_MODEL.d_model / SHAKESPEARE_MODEL.heads);
    b.exact("10000", base());
    b.quoted(&angles_report().unwrap());
    let a = angles().unwrap();
    assert!(a.slowest_longest > a.slowest_trained * 8.0, "the angle at 511 is new");
}

/// RoPE's base, from chapter 7's frequencies: `ω_1 = base^(−2/d)`.
fn base() -> f64 {
    let d = 32;
    let omega = attn::position::frequencies(d).unwrap();
    omega[1].powf(-(d as f64) / 2.0).round()
}

fn stretching(b: &mut Bindings) {
    b.section("Stretching RoPE");
    b.exact("10000", base());
    b.claim("divided by less the faster they turn", {
        let plain = RopeFrequencies::new(D_K, 10000.0, RopeScaling::None).unwrap();
        let ntk = RopeFrequencies::new(D_K, 10000.0, Scaled::NtkAware.scaling(FACTOR)).unwrap();
        let shares: Vec<f64> = ntk.omega().iter().zip(plain.omega()).map(|(n, p)| n / p).collect();
        shares.windows(2).all(|w| w[0] > w[1])
            && shares[0] == 1.0
            && (shares[shares.len() - 1] - 1.0 / FACTOR).abs() < 1e-12
    });
    let e = std::f64::consts::E;
    let yarn = RopeFrequencies::new(
        D_K,
        10000.0,
        RopeScaling::Yarn {
            factor: e,
            trained: TRAINED,
            beta_fast: YARN_BETAS.0,
            beta_slow: YARN_BETAS.1,
            temperature: true,
        },
    )
    .unwrap();
    b.value("0.1", yarn.attention_factor() - 1.0, 1e-12);
    b.exact(
        "1e-6",
        report::numbers::number_in_source(
            "tests/rope_scaling.rs",
            "scaled_frequencies_match_transformers",
            "<= ",
        ),
    );
    b.exact("8", FACTOR);
    b.exact("32", YARN_BETAS.0);
    b.claim("fewer than 32 times", {
        let plain = RopeFrequencies::new(D_K, 10000.0, RopeScaling::None).unwrap();
        let turns = TRAINED as f64 * plain.omega()[0] / (2.0 * std::f64::consts::PI);
        turns < YARN_BETAS.0
    });
    b.quoted(&frequency_report(FACTOR).unwrap());
    let (yarn_kept, yarn_divided) = kept_and_divided(Scaled::Yarn).unwrap();
    let (llama_kept, llama_divided) = kept_and_divided(Scaled::Llama3).unwrap();
    let never_turned = angles().unwrap().never_turned;
    assert_eq!((yarn_divided, llama_divided), (never_turned, never_turned));
    b.exact("64", TRAINED as f64);
    b.exact("1", yarn_kept as f64).exact("2", llama_kept as f64).exact("11", yarn_divided as f64);
    b.exact("11", never_turned as f64);
}

/// YaRN's factor on queries and keys for `factor`.
fn yarn_factor(factor: f64) -> f64 {
    let yarn = Scaled::Yarn.scaling(factor);
    RopeFrequencies::new(D_K, 10000.0, yarn).unwrap().attention_factor()
}

fn exercises(b: &mut Bindings) {
    b.section("Exercises");
    b.exact("8", FACTOR).exact("512", LONGEST as f64).exact("64", TRAINED as f64);
    let plain = RopeFrequencies::new(D_K, 10000.0, RopeScaling::None).unwrap();
    let pi = RopeFrequencies::new(D_K, 10000.0, Scaled::Interpolated.scaling(FACTOR)).unwrap();
    assert_eq!(plain.omega()[0], 1.0, "ω_0 = 1");
    b.exact("0.125", pi.omega()[0]);
    b.value("0.1", yarn_factor(std::f64::consts::E) - 1.0, 1e-12);
    b.rounded("1.208", yarn_factor(FACTOR)).rounded("1.459", yarn_factor(FACTOR).powi(2));
}

fn quiz(b: &mut Bindings) {
    b.section("Quiz");
    let learned = LanguageModel::<f32>::new(SHAKESPEARE_MODEL, 1).unwrap();
    assert!(learned.with_context(TRAINED + 1).is_err(), "no text longer than 64");
    b.exact("64", TRAINED as f64);
    b.exact("10000", base());
    b.value("0.1", yarn_factor(std::f64::consts::E) - 1.0, 1e-12);
}

fn runs(b: &mut Bindings) {
    use report::ch18::data::{passkeys_found, position_buckets};
    use report::ch18::tables::{loss_table, passkey_table, rotary_reads, zero_shot_reads};
    use report::ch18::PASSKEY_LENGTHS;
    b.section("What the runs show");
    b.exact("three", report::ch18::SEEDS.len() as f64);
    let (buckets, source) = position_buckets().unwrap();
    let (found, passkeys) = passkeys_found().unwrap();
    b.from(&[&source]).quoted(&loss_table(&buckets, "trained", &zero_shot_reads()));
    b.from(&[&source]).quoted(&loss_table(&buckets, "continued", &rotary_reads()));
    b.from(&[&passkeys]).quoted(&passkey_table(&found, &PASSKEY_LENGTHS));
}
