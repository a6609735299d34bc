use super::*;
use crate::position::{frequencies, rope};
use ndarray::Array2;

/// Every scaling at scale factor `s`, trained on 64 positions, with the
/// papers' other parameters.
fn every_scaling(s: f64) -> [RopeScaling; 5] {
    [
        RopeScaling::None,
        RopeScaling::Linear { factor: s },
        RopeScaling::NtkAware { factor: s },
        RopeScaling::Yarn {
            factor: s,
            trained: 64,
            beta_fast: 32.0,
            beta_slow: 1.0,
            temperature: true,
        },
        RopeScaling::Llama3 { factor: s, trained: 64, low: 1.0, high: 4.0 },
    ]
}

#[test]
fn a_factor_of_one_is_plain_rope_bit_for_bit() {
    let x = Array2::from_shape_fn((5, 16), |(i, j)| ((i * 16 + j) as f32 * 0.37).sin());
    for scaling in every_scaling(1.0) {
        let rope_1 = RopeFrequencies::new(16, 10000.0, scaling).unwrap();
        assert_eq!(rope_1.omega(), frequencies(16).unwrap().as_slice().unwrap(), "{scaling:?}");
        assert_eq!(rope_1.attention_factor(), 1.0);
        assert_eq!(rope_scaled(&x, 3, &rope_1).unwrap(), rope(&x, 3).unwrap(), "{scaling:?}");
    }
}

#[test]
fn yarn_without_its_temperature_keeps_its_frequencies_and_scales_nothing() {
    for s in [1.0, 2.0, 8.0] {
        let [with, without] = [true, false].map(|temperature| {
            let scaling = RopeScaling::Yarn {
                factor: s,
                trained: 64,
                beta_fast: 32.0,
                beta_slow: 1.0,
                temperature,
            };
            RopeFrequencies::new(32, 10000.0, scaling).unwrap()
        });
        assert_eq!(with.omega(), without.omega());
        assert_eq!(without.attention_factor(), 1.0);
        assert_eq!(with.attention_factor(), 0.1 * f64::ln(s) + 1.0);
    }
}

#[test]
fn each_method_slows_the_pairs_it_says_it_slows() {
    let (d, s) = (32, 4.0);
    let plain = frequencies(d).unwrap();
    let last = d / 2 - 1;
    let of = |scaling| RopeFrequencies::new(d, 10000.0, scaling).unwrap();
    let [_, linear, ntk, yarn, llama] = every_scaling(s).map(of);
    for f in 0..d / 2 {
        assert!((linear.omega()[f] - plain[f] / s).abs() <= 1e-15 * plain[f]);
    }
    // NTK-aware: the fastest pair kept, the slowest divided by s.
    assert_eq!(ntk.omega()[0], plain[0]);
    assert!((ntk.omega()[last] - plain[last] / s).abs() <= 1e-12 * plain[last]);
    // YaRN and Llama 3: the fastest pair kept, the slowest divided by s,
    // and no pair slowed more than s or sped up.
    for method in [&yarn, &llama] {
        assert_eq!(method.omega()[0], plain[0]);
        assert_eq!(method.omega()[last], plain[last] / s);
        for f in 0..d / 2 {
            let w = method.omega()[f];
            assert!(w <= plain[f] && w >= plain[f] / s * (1.0 - 1e-15), "pair {f}");
        }
    }
    assert!((yarn.attention_factor() - (0.1 * s.ln() + 1.0)).abs() < 1e-15);
    assert_eq!(llama.attention_factor(), 1.0);
}

#[test]
fn yarns_factor_scales_every_rotated_row() {
    let x = Array2::from_shape_fn((4, 8), |(i, j)| (i as f32 - j as f32) * 0.25);
    let scaling = RopeScaling::Yarn {
        factor: 8.0,
        trained: 16,
        beta_fast: 32.0,
        beta_slow: 1.0,
        temperature: true,
    };
    let yarn = RopeFrequencies::new(8, 10000.0, scaling).unwrap();
    let y = rope_scaled(&x, 0, &yarn).unwrap();
    let norm = |m: &Array2<f32>, r: usize| m.row(r).dot(&m.row(r)).sqrt();
    for r in 0..4 {
        let ratio = norm(&y, r) / norm(&x, r);
        assert!((f64::from(ratio) - yarn.attention_factor()).abs() < 1e-5, "row {r}");
    }
}

#[test]
fn bad_parameters_are_typed_errors_naming_them() {
    let cases = [
        (4, 10000.0, RopeScaling::Linear { factor: 0.5 }, "scale factor"),
        (4, 10000.0, RopeScaling::NtkAware { factor: f64::NAN }, "scale factor"),
        (4, 1.0, RopeScaling::None, "base"),
        (3, 10000.0, RopeScaling::None, "d"),
        (0, 10000.0, RopeScaling::None, "d"),
        (
            4,
            10000.0,
            RopeScaling::Yarn {
                factor: 2.0,
                trained: 0,
                beta_fast: 32.0,
                beta_slow: 1.0,
                temperature: true,
            },
            "trained",
        ),
        (
            4,
            10000.0,
            RopeScaling::Yarn {
                factor: 2.0,
                trained: 8,
                beta_fast: 1.0,
                beta_slow: 1.0,
                temperature: true,
            },
            "beta_fast",
        ),
        (
            4,
            10000.0,
            RopeScaling::Llama3 { factor: 2.0, trained: 8, low: 4.0, high: 1.0 },
            "high frequency",
        ),
        (
            4,
            10000.0,
            RopeScaling::Llama3 { factor: 2.0, trained: 8, low: -1.0, high: 1.0 },
            "low frequency",
        ),
    ];
    for (d, base, scaling, named) in cases {
        match RopeFrequencies::new(d, base, scaling) {
            Err(AttnError::InvalidArgument { name, .. }) => assert!(name.contains(named), "{name}"),
            other => panic!("{scaling:?}: {other:?}"),
        }
    }
    let rope_8 = RopeFrequencies::new(8, 10000.0, RopeScaling::None).unwrap();
    let too_wide = Array2::zeros((2, 10));
    assert!(matches!(rope_scaled(&too_wide, 0, &rope_8), Err(AttnError::Mismatched { .. })));
    let x = Array2::zeros((2, 8));
    assert!(matches!(rope_scaled(&x, usize::MAX, &rope_8), Err(AttnError::InvalidArgument { .. })));
}

#[test]
fn a_factor_that_would_stop_a_pair_is_an_error_naming_it() {
    // base·s^(d/(d−2)) overflows: every pair but the first would stand still.
    match RopeFrequencies::new(4, 10000.0, RopeScaling::NtkAware { factor: 1e300 }) {
        Err(AttnError::InvalidArgument { name, value, .. }) => {
            assert!(name.contains("scale factor") && value == 1e300)
        }
        other => panic!("{other:?}"),
    }
}
