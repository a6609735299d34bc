//! RoPE past its trained length: the frequencies of rotary position
//! embedding changed so that a model trained on `L` positions reads
//! `s·L` of them, `s` the scale factor.
//!
//! Plain RoPE turns pair `f` of a query or key at position `p` by the angle
//! `p·ω_f`, `ω_f = base^(−2f/d)`. Past the trained length, the slowest
//! pairs reach angles no training step showed them. The methods here shrink
//! frequencies so that `s·L` positions stay inside the trained angles, each
//! in its own way:
//!
//! | method | the frequency of pair `f` |
//! | --- | --- |
//! | [`RopeScaling::None`] | `ω_f` |
//! | [`RopeScaling::Linear`] (position interpolation) | `ω_f / s`: every pair slowed alike |
//! | [`RopeScaling::NtkAware`] | `base'^(−2f/d)`, `base' = base·s^(d/(d−2))`: the fastest pair kept, the slowest divided by `s` |
//! | [`RopeScaling::Yarn`] | `ω_f` where a pair turns many times in `L` positions, `ω_f / s` where it turns less than once, a ramp between; and each rotated query and key times `0.1·ln s + 1` |
//! | [`RopeScaling::Llama3`] | `ω_f` for wavelengths below `L/high`, `ω_f / s` above `L/low`, a blend between |
//!
//! The formulas are those of Hugging Face `transformers`' RoPE
//! initialisations (`modeling_rope_utils`), against which
//! `tests/rope_scaling.rs` checks them; NTK-aware is their "dynamic" one at
//! a length of `s·L` and a factor of 1.

use ndarray::{Array2, ArrayRef2};

use crate::check::{check_finite, check_overflow, check_size};
use crate::error::AttnError;
use crate::position::{check_even, check_positions, rotate_by, Rotation};
use crate::real::Real;

/// How RoPE's frequencies change for a context `factor` times the trained
/// one. Every `factor` must be finite and at least 1; a factor of 1 gives
/// plain RoPE exactly. Two scalings are equal when their numbers have the
/// same bits, so that a model's configuration can be compared and hashed.
#[derive(Debug, Clone, Copy)]
pub enum RopeScaling {
    /// Plain RoPE.
    None,
    /// Position interpolation (Chen et al., 2023): every frequency divided
    /// by `factor`, as if positions were `p / factor`.
    Linear {
        /// The scale factor `s`.
        factor: f64,
    },
    /// NTK-aware scaling (bloc97, 2023): the base raised to
    /// `base·s^(d/(d−2))`, which divides the slowest frequency by `s` and
    /// keeps the fastest.
    NtkAware {
        /// The scale factor `s`.
        factor: f64,
    },
    /// YaRN (Peng et al., 2024): pairs that turn more than `beta_fast`
    /// times in the trained length kept, pairs that turn fewer than
    /// `beta_slow` times divided by `factor`, a linear ramp over the pairs
    /// between; and queries and keys scaled by `0.1·ln s + 1` (a
    /// temperature on the scores).
    Yarn {
        /// The scale factor `s`.
        factor: f64,
        /// The trained length `L`.
        trained: usize,
        /// Turns in `L` above which a pair is kept (32 in the paper).
        beta_fast: f64,
        /// Turns in `L` below which a pair is divided by `s` (1 in the paper).
        beta_slow: f64,
        /// Whether queries and keys are scaled by `0.1·ln s + 1` (true in
        /// the paper; false leaves the ramp alone, to measure what the
        /// temperature does).
        temperature: bool,
    },
    /// Llama 3's scaling (Llama Team, 2024): pairs whose wavelength
    /// `2π/ω_f` is below `L/high` kept, above `L/low` divided by `factor`,
    /// a blend between.
    Llama3 {
        /// The scale factor `s`.
        factor: f64,
        /// The trained length `L`.
        trained: usize,
        /// `L/low` is the longest wavelength kept in part (1 for Llama 3.1).
        low: f64,
        /// `L/high` is the shortest wavelength changed (4 for Llama 3.1).
        high: f64,
    },
}

impl RopeScaling {
    /// Which method, and its numbers (as bits) and trained length.
    fn key(&self) -> (u8, [u64; 3], usize) {
        let bits = |a: f64, b: f64, c: f64| [a.to_bits(), b.to_bits(), c.to_bits()];
        match *self {
            RopeScaling::None => (0, [0; 3], 0),
            RopeScaling::Linear { factor } => (1, bits(factor, 0.0, 0.0), 0),
            RopeScaling::NtkAware { factor } => (2, bits(factor, 0.0, 0.0), 0),
            RopeScaling::Yarn { factor, trained, beta_fast, beta_slow, temperature } => {
                (if temperature { 3 } else { 5 }, bits(factor, beta_fast, beta_slow), trained)
            }
            RopeScaling::Llama3 { factor, trained, low, high } => {
                (4, bits(factor, low, high), trained)
            }
        }
    }
}

impl PartialEq for RopeScaling {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for RopeScaling {}

impl std::hash::Hash for RopeScaling {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.key().hash(state);
    }
}

/// RoPE's frequencies and the factor on every rotated query and key, for
/// one head width, base and scaling.
#[derive(Debug, Clone, PartialEq)]
pub struct RopeFrequencies {
    omega: Vec<f64>,
    attention_factor: f64,
}

impl RopeFrequencies {
    // ANCHOR: scaled_frequencies
    /// The `d/2` frequencies of [`RopeScaling`] `scaling` for pairs of a
    /// head `d` wide (even) with RoPE's `base` (finite, above 1; 10,000 in
    /// the original and in this book's models).
    pub fn new(d: usize, base: f64, scaling: RopeScaling) -> Result<RopeFrequencies, AttnError> {
        check_even("d", d)?;
        check_size("RoPE's frequencies", 1, d / 2)?;
        check_above("RoPE's base", base, 1.0, "must be finite and above 1")?;
        check_scaling(scaling)?;
        let omega = plain(d, base);
        let omega = match scaling {
            RopeScaling::None => omega,
            RopeScaling::Linear { factor } => omega.iter().map(|w| w / factor).collect(),
            RopeScaling::NtkAware { factor } => plain(d, ntk_base(d, base, factor)),
            RopeScaling::Yarn { factor, trained, beta_fast, beta_slow, .. } => {
                let [low, high] = yarn_range(d, base, trained, [beta_fast, beta_slow]);
                let ramp = |f: usize| ((f as f64 - low) / (high - low)).clamp(0.0, 1.0);
                let each = omega.iter().enumerate();
                each.map(|(f, &w)| between(w, w / factor, ramp(f))).collect()
            }
            RopeScaling::Llama3 { factor, trained, low, high } => {
                let turns = |w: f64| trained as f64 / (2.0 * std::f64::consts::PI / w);
                let blend = |w: f64| ((turns(w) - low) / (high - low)).clamp(0.0, 1.0);
                omega.iter().map(|&w| between(w, w / factor, 1.0 - blend(w))).collect()
            }
        };
        if omega.iter().any(|w| !(w.is_normal() && *w > 0.0)) {
            return Err(AttnError::InvalidArgument {
                name: "RoPE's scale factor",
                value: factor_of(scaling),
                requirement: "must leave every frequency a positive normal number \
                              (a huge factor or base divides some to 0)",
            });
        }
        let attention_factor = match scaling {
            RopeScaling::Yarn { factor, temperature: true, .. } => 0.1 * factor.ln() + 1.0,
            _ => 1.0,
        };
        Ok(RopeFrequencies { omega, attention_factor })
    }
    // ANCHOR_END: scaled_frequencies

    /// The frequencies of a model's heads `d_k` wide: RoPE's base of
    /// 10,000, as chapter 7's [`crate::position::rope`] has it.
    pub(crate) fn of_heads(d_k: usize, scaling: RopeScaling) -> Result<Self, AttnError> {
        RopeFrequencies::new(d_k, 10000.0, scaling)
    }

    /// Turns each row `r` of `x` by `±(first + r)·ω_f`, pair by pair, as
    /// `way` says, then multiplies it by the attention factor (in both
    /// ways: the transpose of `a·R` is `a·Rᵀ`).
    pub(crate) fn turn<F: Real>(&self, x: &mut ArrayRef2<F>, first: usize, way: Rotation) {
        rotate_by(x, first, way, &self.omega);
        if self.attention_factor != 1.0 {
            let factor = F::of(self.attention_factor);
            x.mapv_inplace(|v| v * factor);
        }
    }

    /// `ω_f` for each pair `f`, fastest first.
    pub fn omega(&self) -> &[f64] {
        &self.omega
    }

    /// The factor on every rotated query and key (so the scores' is its
    /// square): YaRN's `0.1·ln s + 1`, 1 for the others.
    pub fn attention_factor(&self) -> f64 {
        self.attention_factor
    }
}

/// The scale factor `s` of `scaling` (1 for plain RoPE).
fn factor_of(scaling: RopeScaling) -> f64 {
    match scaling {
        RopeScaling::None => 1.0,
        RopeScaling::Linear { factor }
        | RopeScaling::NtkAware { factor }
        | RopeScaling::Yarn { factor, .. }
        | RopeScaling::Llama3 { factor, .. } => factor,
    }
}

// ANCHOR: scaling_pieces
/// `base^(−2f/d)` for `f = 0 .. d/2`, as plain RoPE computes them
/// ([`crate::position::frequencies`] for a base of 10,000).
fn plain(d: usize, base: f64) -> Vec<f64> {
    (0..d / 2).map(|f| base.powf(-2.0 * f as f64 / d as f64)).collect()
}

/// NTK-aware scaling's base: `base·s^(d/(d−2))`, so that the slowest pair,
/// `f = d/2 − 1`, turns `s` times slower (`base` itself for `d = 2`, whose
/// one pair is the fastest).
fn ntk_base(d: usize, base: f64, factor: f64) -> f64 {
    match d {
        2 => base,
        _ => base * factor.powf(d as f64 / (d as f64 - 2.0)),
    }
}

/// YaRN's ramp: the pairs, counted from 0 and possibly fractional, that
/// turn `beta_fast` and `beta_slow` times in `trained` positions (pair `f`
/// turns `trained·ω_f / 2π` times), rounded outwards to whole pairs and
/// kept inside `0 .. d − 1`, as YaRN's code and `transformers` do.
fn yarn_range(d: usize, base: f64, trained: usize, betas: [f64; 2]) -> [f64; 2] {
    let pair = |turns: f64| {
        let wavelength = trained as f64 / turns; // 2π/ω_f
        d as f64 * (wavelength / (2.0 * std::f64::consts::PI)).ln() / (2.0 * base.ln())
    };
    let (low, high) = (pair(betas[0]).floor().max(0.0), pair(betas[1]).ceil().min(d as f64 - 1.0));
    // One ramp of width 0 would divide by 0: widen it, as `transformers` does.
    [low, if high == low { high + 0.001 } else { high }]
}

/// `keep` at `t = 0`, `scaled` at `t = 1`, linear between; exactly `keep`
/// when the two are equal (a factor of 1).
fn between(keep: f64, scaled: f64, t: f64) -> f64 {
    match t {
        t if t <= 0.0 => keep,
        t if t >= 1.0 => scaled,
        t => keep + (scaled - keep) * t,
    }
}
// ANCHOR_END: scaling_pieces

/// Checks that `value` is finite and above `floor`.
fn check_above(
    name: &'static str,
    value: f64,
    floor: f64,
    requirement: &'static str,
) -> Result<(), AttnError> {
    match value.is_finite() && value > floor {
        true => Ok(()),
        false => Err(AttnError::InvalidArgument { name, value, requirement }),
    }
}

/// Checks a scaling's factor and parameters.
fn check_scaling(scaling: RopeScaling) -> Result<(), AttnError> {
    match scaling {
        RopeScaling::None => Ok(()),
        RopeScaling::Linear { factor } | RopeScaling::NtkAware { factor } => check_factor(factor),
        RopeScaling::Yarn { factor, trained, beta_fast, beta_slow, .. } => check_ramp(
            factor,
            trained,
            [("YaRN's beta_slow", beta_slow), ("YaRN's beta_fast", beta_fast)],
        ),
        RopeScaling::Llama3 { factor, trained, low, high } => {
            let bounds = [
                ("Llama 3's low frequency factor", low),
                ("Llama 3's high frequency factor", high),
            ];
            check_ramp(factor, trained, bounds)
        }
    }
}

/// Checks that a scale factor is finite and at least 1.
fn check_factor(factor: f64) -> Result<(), AttnError> {
    match factor.is_finite() && factor >= 1.0 {
        true => Ok(()),
        false => Err(AttnError::InvalidArgument {
            name: "RoPE's scale factor",
            value: factor,
            requirement: "must be finite and at least 1",
        }),
    }
}

/// Checks a method with a ramp between two bounds (YaRN's and Llama 3's):
/// its factor, a trained length of at least 1, the lower bound above 0 and
/// the upper above the lower.
fn check_ramp(
    factor: f64,
    trained: usize,
    [(lower_name, lower), (upper_name, upper)]: [(&'static str, f64); 2],
) -> Result<(), AttnError> {
    check_factor(factor)?;
    if trained == 0 {
        return Err(AttnError::InvalidArgument {
            name: "the trained length",
            value: 0.0,
            requirement: "must be at least 1",
        });
    }
    check_above(lower_name, lower, 0.0, "must be finite and above 0")?;
    check_above(upper_name, upper, lower, "must be finite and above the ramp's lower bound")
}

/// RoPE with the frequencies `rope`: row `r` of `x` (a query or key at
/// position `first_position + r`) turned pair by pair, then times the
/// attention factor. Shape in = shape out = `n×d_k`, `d_k` twice the
/// frequencies.
pub fn rope_scaled(
    x: &ArrayRef2<f32>,
    first_position: usize,
    rope: &RopeFrequencies,
) -> Result<Array2<f32>, AttnError> {
    if x.ncols() != 2 * rope.omega.len() {
        return Err(AttnError::Mismatched {
            name: "the frequencies",
            requirement: "must have one frequency for each pair of x's columns",
        });
    }
    check_positions(first_position, x.nrows())?;
    check_finite("x", x)?;
    let mut out = x.to_owned();
    rope.turn(&mut out, first_position, Rotation::Forward);
    check_overflow("RoPE's rotated rows", &out)?;
    Ok(out)
}

#[cfg(test)]
mod tests;
