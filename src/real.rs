//! The two float types the crate computes in: `f32`, in which the chapters'
//! layers run and models can train fast, and `f64`, in which chapter 11
//! checks gradients against finite differences and chapters 12 and 13 train
//! their small models. Each layer is written once, generic over [`Real`]:
//! precision is a type parameter, not a copy of the code. This module
//! depends on nothing else of the crate.

use std::any::{Any, TypeId};

use ndarray::{Array2, ArrayRef2, NdFloat};

mod erf;

/// `f32` or `f64`: what a layer needs of its numbers.
pub trait Real: NdFloat {
    /// `x` rounded to this type (exact for `f64`).
    fn of(x: f64) -> Self;
    /// This number as an `f64` (always exact).
    fn wide(self) -> f64;
    /// `e^x`, fast for `x ≤ 0`, the only exponents a stable softmax needs:
    /// [`exp_nonpositive`] in `f32`, the library's `exp` in `f64`.
    fn exp_nonpositive(self) -> Self;
    /// The error function, for the exact GELU.
    fn erf(self) -> Self;
    /// Replaces each number of `x` by its error function, with the bits of
    /// [`Real::erf`]: for `f32`, eight at a time where the processor has
    /// AVX2, with `libm::erff`'s formulas in every lane of a register.
    fn erf_in_place(x: &mut [Self]) {
        for x in x {
            *x = x.erf();
        }
    }
}

impl Real for f32 {
    fn of(x: f64) -> f32 {
        x as f32
    }
    fn wide(self) -> f64 {
        f64::from(self)
    }
    #[inline(always)]
    fn exp_nonpositive(self) -> f32 {
        exp_nonpositive(self)
    }
    fn erf(self) -> f32 {
        libm::erff(self)
    }
    fn erf_in_place(x: &mut [f32]) {
        erf::erf_in_place(x)
    }
}

impl Real for f64 {
    fn of(x: f64) -> f64 {
        x
    }
    fn wide(self) -> f64 {
        self
    }
    #[inline(always)]
    fn exp_nonpositive(self) -> f64 {
        self.exp()
    }
    fn erf(self) -> f64 {
        libm::erf(self)
    }
}

/// `x` as an `f32` matrix, if `F` is `f32`.
pub(crate) fn as_f32<F: Real>(x: &ArrayRef2<F>) -> Option<&ArrayRef2<f32>> {
    if TypeId::of::<F>() != TypeId::of::<f32>() {
        return None;
    }
    // SAFETY: `F` is `f32` (the type ids are equal), so the two references
    // are to the same type.
    Some(unsafe { &*(x as *const ArrayRef2<F> as *const ArrayRef2<f32>) })
}

/// An `f32` matrix as an `F` matrix (`F` is `f32` here).
pub(crate) fn from_f32<F: Real>(x: Array2<f32>) -> Array2<F> {
    *(Box::new(x) as Box<dyn Any>).downcast().expect("called only where F is f32")
}

// ANCHOR: fast_exp
pub(crate) const LOG2_E: f32 = std::f32::consts::LOG2_E;
/// `ln 2 = LN2_HI + LN2_LO`, `LN2_HI` exact in few bits.
pub(crate) const LN2_HI: f32 = 0.693_359_4;
pub(crate) const LN2_LO: f32 = -2.121_944_4e-4;
/// `1.5 · 2²³`: adding it rounds an `f32` to an integer.
pub(crate) const ROUND: f32 = 12_582_912.0;
/// Below this, `e^x` is taken as 0.
pub(crate) const EXP_LOWEST: f32 = -87.3;
/// `e^r ≈ 1 + r + r²·p(r)`: the coefficients of `p`, highest degree first.
pub(crate) const EXP_POLYNOMIAL: [f32; 6] =
    [1.987_569_1e-4, 1.398_199_9e-3, 8.333_452e-3, 4.166_579_6e-2, 1.666_666_5e-1, 0.5];

/// `e^x`, fast for the exponents a stable softmax makes (`x ≤ 0`), with a
/// relative error below `3·10⁻⁷` (tested against `f64`). It is exactly 0 for
/// `x < −87.3` (including `−∞`), where `e^x` is below the smallest normal
/// `f32`; it is `+∞` past `ln f32::MAX ≈ 88.72`, and NaN for NaN.
///
/// It writes `x = ν·ln 2 + r` with `ν` an integer and `|r| ≤ ln 2 / 2`, so
/// `e^x = 2^ν · e^r`: `2^ν` is built directly from its bits (in two halves,
/// so that `ν = 128` does not overflow them), and `e^r` is a degree-7
/// polynomial (Cephes' coefficients, close to the Taylor series).
/// It makes no library calls and has no branches, so the compiler turns a
/// loop of these into vector instructions, several exponentials per
/// instruction. The appendix "Making it fast" measures it.
#[inline(always)]
pub fn exp_nonpositive(x: f32) -> f32 {
    let clamped = x.clamp(EXP_LOWEST, 88.8); // NaN stays NaN
    let t = clamped * LOG2_E + ROUND;
    let nu = t - ROUND; // ν = round(x / ln 2), as a float
    let r = clamped - nu * LN2_HI - nu * LN2_LO; // |r| ≤ ln 2 / 2
    let p = EXP_POLYNOMIAL[1..].iter().fold(EXP_POLYNOMIAL[0], |p, &c| p * r + c);
    let e_r = p * r * r + r + 1.0;
    // The integer ν, −126 ≤ ν ≤ 128 (any integer for NaN, which e_r carries).
    let nu_int = (t.to_bits() as i32).wrapping_sub(ROUND.to_bits() as i32);
    let power_of_two = |n: i32| f32::from_bits((n.wrapping_add(127) << 23) as u32);
    let half = nu_int >> 1; // ⌊ν/2⌋; 2^ν = 2^half · 2^(ν − half), each ≥ 2^−63
    let e_x = e_r * power_of_two(half) * power_of_two(nu_int - half);
    if x < EXP_LOWEST {
        0.0
    } else {
        e_x
    }
}

// ANCHOR_END: fast_exp

#[cfg(test)]
mod tests {
    use super::*;

    // ANCHOR: fast_exp_test
    #[test]
    fn the_fast_exponential_is_accurate_and_exactly_zero_below_its_range() {
        let mut worst = 0.0_f64;
        for i in 0..=2_000_000 {
            let x = -87.0 * i as f32 / 2_000_000.0; // 0 down to −87
            let exact = (x as f64).exp();
            let relative = ((exp_nonpositive(x) as f64 - exact) / exact).abs();
            worst = worst.max(relative);
        }
        assert!(worst < 3e-7, "largest relative error {worst:e}");
        assert_eq!(exp_nonpositive(0.0), 1.0);
        assert_eq!(exp_nonpositive(-87.4), 0.0);
        assert_eq!(exp_nonpositive(-1000.0), 0.0);
        assert_eq!(exp_nonpositive(f32::NEG_INFINITY), 0.0);
    }
    // ANCHOR_END: fast_exp_test
}
