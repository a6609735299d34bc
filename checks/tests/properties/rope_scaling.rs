//! RoPE past its trained length (`attn::rope_scaling`) under the same
//! search: any width, base, factor and parameters give a typed error or
//! finite frequencies; a factor of 1 gives plain RoPE bit for bit; and no
//! method speeds a pair up or slows it by more than the factor.

use attn::position::rope;
use attn::rope_scaling::{rope_scaled, RopeFrequencies, RopeScaling};

use super::*;

/// Any `f64` a caller might pass as a factor, base or parameter.
fn parameter() -> impl Strategy<Value = f64> {
    prop_oneof![
        6 => 0.5f64..64.0,
        1 => Just(1.0),
        1 => Just(f64::NAN),
        1 => Just(f64::INFINITY),
        1 => Just(0.0),
        1 => Just(-1.0),
        1 => Just(1e300),
    ]
}

/// Any scaling, its parameters from [`parameter`], its trained length
/// sometimes 0 or huge.
fn scaling() -> impl Strategy<Value = RopeScaling> {
    let trained = prop_oneof![4 => 1usize..4096, 1 => Just(0usize), 1 => Just(usize::MAX)];
    let sizes = (0usize..5, parameter(), trained, parameter(), parameter(), any::<bool>());
    sizes.prop_map(|(which, s, l, a, b, temperature)| match which {
        0 => RopeScaling::None,
        1 => RopeScaling::Linear { factor: s },
        2 => RopeScaling::NtkAware { factor: s },
        3 => RopeScaling::Yarn { factor: s, trained: l, beta_fast: a, beta_slow: b, temperature },
        _ => RopeScaling::Llama3 { factor: s, trained: l, low: b, high: a },
    })
}

/// `scaling` with its factor set to `s`.
fn with_factor(scaling: RopeScaling, s: f64) -> RopeScaling {
    match scaling {
        RopeScaling::None => RopeScaling::None,
        RopeScaling::Linear { .. } => RopeScaling::Linear { factor: s },
        RopeScaling::NtkAware { .. } => RopeScaling::NtkAware { factor: s },
        RopeScaling::Yarn { trained, beta_fast, beta_slow, temperature, .. } => {
            RopeScaling::Yarn { factor: s, trained, beta_fast, beta_slow, temperature }
        }
        RopeScaling::Llama3 { trained, low, high, .. } => {
            RopeScaling::Llama3 { factor: s, trained, low, high }
        }
    }
}

/// A head width: even and small most of the time, sometimes odd, 0 or
/// past every limit.
fn width() -> impl Strategy<Value = usize> {
    prop_oneof![8 => (1usize..33).prop_map(|h| 2 * h), 1 => Just(0usize), 1 => Just(7usize),
        1 => Just(1usize << 40), 1 => Just(usize::MAX)]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn scaled_rope_gives_an_error_or_finite_numbers(
        d in width(), base in parameter(), scaling in scaling(), x in matrix(6),
        first in prop_oneof![0usize..100, Just(usize::MAX)],
    ) {
        let frequencies = RopeFrequencies::new(d, base, scaling);
        let finite = |r: &RopeFrequencies| {
            r.omega().iter().all(|w| w.is_finite() && *w > 0.0) && r.attention_factor().is_finite()
        };
        prop_assert!(holds(frequencies.clone(), finite));
        if let Ok(rope) = frequencies {
            prop_assert!(holds(rope_scaled(&x, first, &rope), |y| all_finite(y)));
        }
    }

    #[test]
    fn a_factor_of_one_is_plain_rope_and_no_pair_moves_past_the_factor(
        half in 1usize..33, scaling in scaling(), s in 1.0f64..64.0, first in 0usize..5000,
        x in (1usize..6).prop_flat_map(|n| finite(n, 64)),
    ) {
        let d = 2 * half;
        let x = x.slice(ndarray::s![.., ..d]).to_owned();
        if let Ok(one) = RopeFrequencies::new(d, 10000.0, with_factor(scaling, 1.0)) {
            prop_assert_eq!(rope_scaled(&x, first, &one).unwrap(), rope(&x, first).unwrap());
        }
        let plain = RopeFrequencies::new(d, 10000.0, RopeScaling::None).unwrap();
        if let Ok(scaled) = RopeFrequencies::new(d, 10000.0, with_factor(scaling, s)) {
            for (&w, &w_0) in scaled.omega().iter().zip(plain.omega()) {
                prop_assert!(w <= w_0 * (1.0 + 1e-12) && w >= w_0 / s * (1.0 - 1e-12), "{w} {w_0}");
            }
        }
    }
}
