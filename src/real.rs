//! The two float types the crate computes in: `f32`, in which the chapters'
//! layers run and models can train fast, and `f64`, in which chapter 11
//! checks gradients against finite differences and chapters 12 and 13 train
//! their small models. Each layer is written once, generic over [`Real`]:
//! precision is a type parameter, not a copy of the code.

use ndarray::{Array2, ArrayRef2, NdFloat};

use crate::error::AttnError;
use crate::fast::{fast_attention_backward, fast_attention_forward, FastForward};

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
    /// One head's attention under the causal mask through the appendix's
    /// fused kernel ([`fast_attention_forward`]), where this type has one:
    /// the output, and what the backward pass needs instead of the weights.
    /// `None`: only `f32` has it.
    fn fused_causal(
        _q: &ArrayRef2<Self>,
        _k: &ArrayRef2<Self>,
        _v: &ArrayRef2<Self>,
    ) -> Option<Result<(Array2<Self>, FastForward), AttnError>> {
        None
    }
    /// The gradients `[dQ, dK, dV]` of [`Real::fused_causal`]'s output,
    /// given `dO` ([`fast_attention_backward`]). `None`: only `f32` has it.
    fn fused_backward(
        _qkv: [&ArrayRef2<Self>; 3],
        _forward: &FastForward,
        _d_out: &ArrayRef2<Self>,
    ) -> Option<Result<[Array2<Self>; 3], AttnError>> {
        None
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
        crate::softmax::exp_nonpositive(self)
    }
    fn erf(self) -> f32 {
        libm::erff(self)
    }
    fn fused_causal(
        q: &ArrayRef2<f32>,
        k: &ArrayRef2<f32>,
        v: &ArrayRef2<f32>,
    ) -> Option<Result<(Array2<f32>, FastForward), AttnError>> {
        Some(fast_attention_forward(q, k, v, true).map(|f| (f.output.clone(), f)))
    }
    fn fused_backward(
        [q, k, v]: [&ArrayRef2<f32>; 3],
        forward: &FastForward,
        d_out: &ArrayRef2<f32>,
    ) -> Option<Result<[Array2<f32>; 3], AttnError>> {
        Some(fast_attention_backward(q, k, v, forward, d_out).map(|(dq, dk, dv)| [dq, dk, dv]))
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
