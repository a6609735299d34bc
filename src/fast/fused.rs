//! The fused kernel as a head's attention in the training stack: where the
//! numbers are `f32`, one head under the causal mask may attend through
//! [`fast_attention_forward`] and keep one log-sum-exp a query instead of
//! its weights. The float type is generic there ([`crate::real::Real`]),
//! and only `f32` has the kernel: these functions look at the type they are
//! given and answer `None` for any other.

use ndarray::{Array2, ArrayRef2};

use super::{fast_attention_backward, fast_attention_forward, FastForward};
use crate::error::AttnError;
use crate::real::{as_f32, from_f32, Real};

/// One head's causal attention through the fused kernel, where `F` is
/// `f32`: the output, and what the backward pass needs instead of the
/// weights. `None` for any other type.
pub(crate) fn fused_causal<F: Real>(
    q: &ArrayRef2<F>,
    k: &ArrayRef2<F>,
    v: &ArrayRef2<F>,
) -> Option<Result<(Array2<F>, FastForward), AttnError>> {
    let (q, k, v) = (as_f32(q)?, as_f32(k)?, as_f32(v)?);
    Some(fast_attention_forward(q, k, v, true).map(|f| (from_f32(f.output.clone()), f)))
}

/// The gradients `[dQ, dK, dV]` of [`fused_causal`]'s output, given `dO`,
/// through [`fast_attention_backward`]. `None` where `F` is not `f32`.
pub(crate) fn fused_backward<F: Real>(
    [q, k, v]: [&ArrayRef2<F>; 3],
    forward: &FastForward,
    d_out: &ArrayRef2<F>,
) -> Option<Result<[Array2<F>; 3], AttnError>> {
    let (q, k, v, d_out) = (as_f32(q)?, as_f32(k)?, as_f32(v)?, as_f32(d_out)?);
    Some(
        fast_attention_backward(q, k, v, forward, d_out)
            .map(|(dq, dk, dv)| [from_f32(dq), from_f32(dk), from_f32(dv)]),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_f32_has_the_kernel() {
        let x = Array2::<f64>::ones((3, 2));
        assert!(fused_causal(&x, &x, &x).is_none());
        let x = Array2::<f32>::ones((3, 2));
        let (out, kept) = fused_causal(&x, &x, &x).unwrap().unwrap();
        assert_eq!(out, kept.output);
        assert!(fused_backward([&x, &x, &x], &kept, &x).unwrap().is_ok());
        let y = Array2::<f64>::ones((3, 2));
        assert!(fused_backward([&y, &y, &y], &kept, &y).is_none());
    }
}
