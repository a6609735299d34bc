//! RoPE's scaled frequencies against an independent reference: the inverse
//! frequencies and attention factors of Hugging Face `transformers`' RoPE
//! initialisations, written to `tests/golden/rope_scaling.txt` by
//! `tools/rope_scaling_golden.py` (see its header to regenerate; CI only
//! reads the file). `transformers` computes in f32, the crate in f64: each
//! frequency must agree to 1e-6 of itself, the factor to 1e-6.

use attn::rope_scaling::{RopeFrequencies, RopeScaling};

mod common;

use common::golden::load;

/// The script's cases: name, head width, base and the crate's scaling.
fn cases() -> Vec<(&'static str, usize, f64, RopeScaling)> {
    let yarn = |factor, trained| RopeScaling::Yarn {
        factor,
        trained,
        beta_fast: 32.0,
        beta_slow: 1.0,
        temperature: true,
    };
    let llama3 = |factor, trained| RopeScaling::Llama3 { factor, trained, low: 1.0, high: 4.0 };
    vec![
        ("linear_d64_s4", 64, 10000.0, RopeScaling::Linear { factor: 4.0 }),
        ("linear_d128_s2_base500000", 128, 500000.0, RopeScaling::Linear { factor: 2.0 }),
        ("ntk_d64_s4_l64", 64, 10000.0, RopeScaling::NtkAware { factor: 4.0 }),
        ("ntk_d16_s8_l64", 16, 10000.0, RopeScaling::NtkAware { factor: 8.0 }),
        ("yarn_d64_s8_l64", 64, 10000.0, yarn(8.0, 64)),
        ("yarn_d16_s4_l64", 16, 10000.0, yarn(4.0, 64)),
        ("yarn_d128_s32_l4096", 128, 10000.0, yarn(32.0, 4096)),
        ("llama3_d128_s8_l8192_base500000", 128, 500000.0, llama3(8.0, 8192)),
        ("llama3_d32_s4_l64", 32, 10000.0, llama3(4.0, 64)),
    ]
}

#[test]
fn scaled_frequencies_match_transformers() {
    let golden = load("rope_scaling.txt");
    assert_eq!(golden.len(), 2 * cases().len(), "a case in the file is not tested");
    for (name, d, base, scaling) in cases() {
        let rope = RopeFrequencies::new(d, base, scaling).unwrap();
        let expected = &golden[&format!("{name}_omega")];
        assert_eq!(expected.len(), rope.omega().len(), "{name}");
        for (f, (&ours, &theirs)) in rope.omega().iter().zip(expected.iter()).enumerate() {
            let theirs = f64::from(theirs);
            assert!((ours - theirs).abs() <= 1e-6 * theirs, "{name}, pair {f}: {ours} vs {theirs}");
        }
        let factor = f64::from(golden[&format!("{name}_attention_factor")][[0, 0]]);
        assert!((rope.attention_factor() - factor).abs() <= 1e-6, "{name}: {factor}");
    }
}

/// The cases differ where the methods differ: a test that passed with every
/// method computing plain RoPE would prove nothing.
#[test]
fn every_case_moves_some_frequency() {
    for (name, d, base, scaling) in cases() {
        let plain = RopeFrequencies::new(d, base, RopeScaling::None).unwrap();
        let scaled = RopeFrequencies::new(d, base, scaling).unwrap();
        let moved = plain.omega().iter().zip(scaled.omega()).filter(|(a, b)| a != b).count();
        assert!(moved > 0, "{name}");
    }
}
