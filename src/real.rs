//! The two float types the crate computes in: `f32`, in which the chapters'
//! layers run and models can train fast, and `f64`, in which chapter 11
//! checks gradients against finite differences and chapters 12 and 13 train
//! their small models. Each layer is written once, generic over [`Real`]:
//! precision is a type parameter, not a copy of the code.

use ndarray::NdFloat;

/// `f32` or `f64`: what a layer needs of its numbers.
pub trait Real: NdFloat {
    /// `x` rounded to this type (exact for `f64`).
    fn of(x: f64) -> Self;
    /// This number as an `f64` (always exact).
    fn wide(self) -> f64;
    /// `e^x`, fast for `x ≤ 0`, the only exponents a stable softmax needs:
    /// chapter 2's fast exponential in `f32`
    /// ([`crate::softmax::exp_nonpositive`]), the library's `exp` in `f64`.
    fn exp_nonpositive(self) -> Self;
    /// The error function, for the exact GELU.
    fn erf(self) -> Self;
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
        crate::softmax::exp_nonpositive(self)
    }
    fn erf(self) -> f32 {
        libm::erff(self)
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
