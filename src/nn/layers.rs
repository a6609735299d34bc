//! The layers of a Transformer block other than attention — linear, LayerNorm,
//! the activations, the feed-forward network, token and position
//! embeddings — each a forward pass that keeps what its backward pass needs,
//! and the backward pass. Chapter 10's layers run the forward passes in
//! `f32`; chapter 11 checks the backward passes in `f64`.

use ndarray::{Array1, Array2, ArrayRef1, ArrayRef2, Axis, Zip};
use rayon::prelude::*;
use std::f64::consts::FRAC_1_SQRT_2;

use crate::check::{check_positive, check_shape};
use crate::error::AttnError;
use crate::linalg::{linear, linear_backward};
use crate::real::Real;

/// A LayerNorm's weights: the scale `γ` and the shift `β`, `d` each.
#[derive(Debug, Clone, PartialEq)]
pub struct NormWeights<F> {
    /// `γ`, multiplying each normalised feature.
    pub gamma: Array1<F>,
    /// `β`, added to it.
    pub beta: Array1<F>,
}

impl<F: Real> NormWeights<F> {
    /// The identity: `γ = 1`, `β = 0`.
    pub fn identity(d: usize) -> Self {
        NormWeights { gamma: Array1::ones(d), beta: Array1::zeros(d) }
    }
}

// ANCHOR: layer_norm_forward
/// What LayerNorm keeps for its backward pass.
#[derive(Debug, Clone)]
pub struct LayerNormCache<F> {
    /// The normalised input `x̂ = (x − μ)/√(σ² + ε)`, `n×d`.
    pub(crate) x_hat: Array2<F>,
    /// `1/√(σ² + ε)` per row.
    pub(crate) inv_std: Array1<F>,
}

/// LayerNorm over each row (chapter 10): `y = γ ⊙ (x − μ)/√(σ² + ε) + β`,
/// with the row's mean `μ` and variance `σ²`. They are computed in `f64`
/// whatever `F` is: the variance of `f32` entries near `3·10³⁸` is near
/// `10⁷⁷`, which `f32` cannot hold.
pub fn layer_norm_forward<F: Real>(
    x: &ArrayRef2<F>,
    gamma: &ArrayRef1<F>,
    beta: &ArrayRef1<F>,
    eps: F,
) -> Result<(Array2<F>, LayerNormCache<F>), AttnError> {
    check_norm(x.ncols(), gamma, beta, eps)?;
    let mut x_hat = x.to_owned();
    let mut inv_std = Array1::zeros(x.nrows());
    for (mut row, inv) in x_hat.rows_mut().into_iter().zip(&mut inv_std) {
        let d = row.len() as f64;
        let mean = row.mapv(|x| x.wide()).sum() / d;
        let variance = row.mapv(|x| (x.wide() - mean).powi(2)).sum() / d;
        let inv_row = 1.0 / (variance + eps.wide()).sqrt();
        row.mapv_inplace(|x| F::of((x.wide() - mean) * inv_row));
        *inv = F::of(inv_row);
    }
    let y = &*x_hat * gamma + beta;
    Ok((y, LayerNormCache { x_hat, inv_std }))
}
// ANCHOR_END: layer_norm_forward

/// Checks a LayerNorm's `γ` and `β` against rows of width `d`, and `ε`.
fn check_norm<F: Real>(
    d: usize,
    gamma: &ArrayRef1<F>,
    beta: &ArrayRef1<F>,
    eps: F,
) -> Result<(), AttnError> {
    check_shape("γ and a row", (1, gamma.len()), (1, d))?;
    check_shape("β and a row", (1, beta.len()), (1, d))?;
    check_positive("LayerNorm's ε", eps.wide())
}

// ANCHOR: layer_norm_backward
/// Gradients of LayerNorm: `dX`, and `dγ`, `dβ` as a [`NormWeights`].
/// With `dx̂ = dY ⊙ γ`, each row's `dx = (dx̂ − mean(dx̂) − x̂ · mean(dx̂ ⊙ x̂)) / σ`: the two means remove
/// the directions in which the normalisation cannot move its output
/// (shifting every feature, scaling every feature).
pub fn layer_norm_backward<F: Real>(
    cache: &LayerNormCache<F>,
    gamma: &ArrayRef1<F>,
    dy: &ArrayRef2<F>,
) -> Result<(Array2<F>, NormWeights<F>), AttnError> {
    let x_hat: &ArrayRef2<F> = &cache.x_hat;
    check_shape("dY and the normalised input", dy.dim(), x_hat.dim())?;
    check_shape("γ and a row", (1, gamma.len()), (1, x_hat.ncols()))?;
    let d_gamma = (dy * x_hat).sum_axis(Axis(0));
    let d_beta = dy.sum_axis(Axis(0));
    let dx_hat = dy * gamma;
    let row_mean =
        |m: &Array2<F>| m.sum_axis(Axis(1)).insert_axis(Axis(1)) / F::of(m.ncols() as f64);
    let mean_dx_hat = row_mean(&dx_hat);
    let mean_dx_hat_x_hat = row_mean(&(&*dx_hat * x_hat));
    let dx = (dx_hat - &mean_dx_hat - x_hat * &*mean_dx_hat_x_hat)
        * cache.inv_std.view().insert_axis(Axis(1));
    Ok((dx, NormWeights { gamma: d_gamma, beta: d_beta }))
}
// ANCHOR_END: layer_norm_backward

// ANCHOR: activation
/// The non-linearity of the feed-forward network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Activation {
    /// `max(0, x)`, as in the original Transformer.
    Relu,
    /// `x·Φ(x)`, in GPT-2's tanh approximation.
    Gelu,
    /// `x·Φ(x)` exactly, through the error function: PyTorch's default GELU,
    /// and the one BERT-style models on the Hugging Face hub use.
    GeluErf,
}

impl Activation {
    /// Applies the activation to one number.
    pub fn apply<F: Real>(self, x: F) -> F {
        match self {
            Activation::Relu => x.max(F::zero()),
            Activation::Gelu => gelu(x),
            Activation::GeluErf => gelu_erf(x),
        }
    }
}

/// `√(2/π)` and `0.044715`, the tanh approximation's constants.
fn gelu_constants<F: Real>() -> (F, F) {
    ((F::of(2.0) / F::of(std::f64::consts::PI)).sqrt(), F::of(0.044715))
}

/// GELU, tanh approximation: `0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))`.
pub fn gelu<F: Real>(x: F) -> F {
    let (c, a) = gelu_constants::<F>();
    F::of(0.5) * x * (F::one() + (c * (x + a * (x * x * x))).tanh())
}

/// GELU, exact: `x·Φ(x) = 0.5·x·(1 + erf(x/√2))`, with `Φ` the standard
/// normal distribution function.
pub fn gelu_erf<F: Real>(x: F) -> F {
    F::of(0.5) * x * (F::one() + (x * F::of(FRAC_1_SQRT_2)).erf())
}
// ANCHOR_END: activation

// ANCHOR: activation_derivative
impl Activation {
    /// Its derivative at `x` (for ReLU, 0 at `x = 0`).
    pub fn derivative<F: Real>(self, x: F) -> F {
        let half = F::of(0.5);
        match self {
            Activation::Relu if x > F::zero() => F::one(),
            Activation::Relu => F::zero(),
            Activation::Gelu => {
                let (c, a) = gelu_constants::<F>();
                let t = (c * (x + a * (x * x * x))).tanh();
                let slope = F::one() + F::of(3.0) * a * x * x; // of tanh's argument, over c
                let sech2 = F::one() - t * t; // 0 where tanh saturates, where x·slope can be ∞
                let tail =
                    if sech2 == F::zero() { F::zero() } else { half * x * sech2 * c * slope };
                half * (F::one() + t) + tail
            }
            Activation::GeluErf => gelu_erf_slope(x, (x * F::of(FRAC_1_SQRT_2)).erf()),
        }
    }
}

/// The exact GELU's slope at `x` given `erf = erf(x/√2)`: `Φ(x) + x·φ(x)`,
/// with `φ` the standard normal density.
fn gelu_erf_slope<F: Real>(x: F, erf: F) -> F {
    let half = F::of(0.5);
    let density = (-half * x * x).exp() / F::of((2.0 * std::f64::consts::PI).sqrt());
    half * (F::one() + erf) + x * density
}
// ANCHOR_END: activation_derivative

/// Entries from which [`map_each`] shares an array among the pool's
/// threads: chapter 16's hidden layers (768 × 512) are above it, and a
/// single row far below.
const SHARED_FROM: usize = 1 << 16;

/// Whether an array of `len` entries is shared among the pool's threads.
fn shared(len: usize) -> bool {
    len >= SHARED_FROM && rayon::current_num_threads() > 1
}

/// `f` of every entry of `x`, on the pool's threads when `x` is large.
/// Each entry is `f` of that entry alone, so the result has the same bits
/// on any number of threads.
fn map_each<F: Real>(x: &ArrayRef2<F>, f: impl Fn(F) -> F + Sync + Send) -> Array2<F> {
    if shared(x.len()) {
        Zip::from(x).par_map_collect(|&v| f(v))
    } else {
        x.mapv(f)
    }
}

impl Activation {
    /// [`Activation::apply`] of every entry of `x`, with the same bits; the
    /// exact GELU takes the error function of many entries at once
    /// ([`Real::erf_in_place`]), eight to an instruction where the processor can.
    pub(crate) fn apply_each<F: Real>(self, x: &ArrayRef2<F>) -> Array2<F> {
        match self {
            Activation::GeluErf => {
                let mut y = Array2::zeros(x.dim());
                with_erf_each(x, &mut y, |x, erf, y| *y = F::of(0.5) * x * (F::one() + erf));
                y
            }
            _ => map_each(x, |h| self.apply(h)),
        }
    }

    /// The chain rule through the activation: `d ⊙ act′(x)`, with the bits
    /// of `d * &x.mapv(|h| self.derivative(h))`, in place and on the
    /// pool's threads when `x` is large.
    pub(crate) fn chain_each<F: Real>(self, x: &ArrayRef2<F>, d: Array2<F>) -> Array2<F> {
        match self {
            Activation::GeluErf => {
                // Copied only if its rows are not laid out one after another.
                let mut d = match d.is_standard_layout() {
                    true => d,
                    false => d.as_standard_layout().into_owned(),
                };
                with_erf_each(x, &mut d, |x, erf, d| *d *= gelu_erf_slope(x, erf));
                d
            }
            _ => d * &map_each(x, |h| self.derivative(h)),
        }
    }
}

/// Entries of `x` that [`with_erf_each`] takes at once: the error
/// functions of a whole block are one call.
const ERF_BLOCK: usize = 256;

/// `f(x, erf(x/√2), y)` for every entry `x` of `x` and the entry `y` of `y`
/// at its place, on the pool's threads when `x` is large, as
/// [`map_each`]; the error functions of [`ERF_BLOCK`] entries at a time
/// through [`Real::erf_in_place`].
///
/// # Panics
/// If `y` is not in standard layout or has another shape (its callers
/// make it so).
fn with_erf_each<F: Real>(
    x: &ArrayRef2<F>,
    y: &mut Array2<F>,
    f: impl Fn(F, F, &mut F) + Sync + Send,
) {
    assert_eq!(x.dim(), y.dim(), "the callers pass equal shapes");
    let x = x.as_standard_layout();
    let (xs, ys) = (x.as_slice().expect("standard layout"), y.as_slice_mut().expect("standard"));
    let block = |(xs, ys): (&[F], &mut [F])| {
        let mut erf = [F::zero(); ERF_BLOCK];
        let erf = &mut erf[..xs.len()];
        for (e, &x) in erf.iter_mut().zip(xs) {
            *e = x * F::of(FRAC_1_SQRT_2);
        }
        F::erf_in_place(erf); // erf(x/√2)
        for ((y, &x), &erf) in ys.iter_mut().zip(xs).zip(&*erf) {
            f(x, erf, y);
        }
    };
    if shared(xs.len()) {
        xs.par_chunks(ERF_BLOCK).zip(ys.par_chunks_mut(ERF_BLOCK)).for_each(block);
    } else {
        xs.chunks(ERF_BLOCK).zip(ys.chunks_mut(ERF_BLOCK)).for_each(block);
    }
}

// ANCHOR: ffn_forward
/// The parameters of a feed-forward network `act(XW₁ + b₁)W₂ + b₂`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FfnWeights<F> {
    /// `d×d_ff`.
    pub(crate) w1: Array2<F>,
    /// `d_ff`.
    pub(crate) b1: Array1<F>,
    /// `d_ff×d`.
    pub(crate) w2: Array2<F>,
    /// `d`.
    pub(crate) b2: Array1<F>,
}

/// What the FFN keeps: its input, the pre-activation and the activation.
#[derive(Debug, Clone)]
pub(crate) struct FfnCache<F> {
    x: Array2<F>,
    pre: Array2<F>,
    hidden: Array2<F>,
}

/// The FFN's forward pass, row by row: `d → d_ff → d`.
pub(crate) fn ffn_forward<F: Real>(
    x: &ArrayRef2<F>,
    p: &FfnWeights<F>,
    activation: Activation,
) -> Result<(Array2<F>, FfnCache<F>), AttnError> {
    let pre = linear("the FFN's hidden layer X W₁ + b₁", x, &p.w1, Some(&p.b1))?; // n×d_ff
    let hidden = activation.apply_each(&pre);
    let y = linear("the FFN's output", &hidden, &p.w2, Some(&p.b2))?; // n×d
    let x = x.to_owned();
    Ok((y, FfnCache { x, pre, hidden }))
}
// ANCHOR_END: ffn_forward

// ANCHOR: ffn_backward
/// The FFN's backward pass: `dX` and the parameters' gradients.
pub(crate) fn ffn_backward<F: Real>(
    cache: &FfnCache<F>,
    p: &FfnWeights<F>,
    activation: Activation,
    dy: &ArrayRef2<F>,
) -> Result<(Array2<F>, FfnWeights<F>), AttnError> {
    let (d_hidden, second) = linear_backward(&cache.hidden, &p.w2, dy)?;
    let d_pre = activation.chain_each(&cache.pre, d_hidden); // d_hidden ⊙ act′(pre)
    let (dx, first) = linear_backward(&cache.x, &p.w1, &d_pre)?;
    Ok((dx, FfnWeights { w1: first.w, b1: first.b, w2: second.w, b2: second.b }))
}
// ANCHOR_END: ffn_backward

// ANCHOR: embedding
/// Token plus position embeddings of `B` sequences of equal length `L`:
/// row `b·L + i` is `embeddings[token] + positions[i]`, `B·L × d`.
pub(crate) fn embedding_forward<F: Real>(
    tokens: &[Vec<usize>],
    embeddings: &ArrayRef2<F>,
    positions: &ArrayRef2<F>,
) -> Array2<F> {
    let len = tokens.first().map_or(0, Vec::len);
    let mut x = Array2::zeros((tokens.len() * len, embeddings.ncols()));
    for (b, sequence) in tokens.iter().enumerate() {
        for (i, &token) in sequence.iter().enumerate() {
            x.row_mut(b * len + i).assign(&(&embeddings.row(token) + &positions.row(i)));
        }
    }
    x
}

/// The backward pass of [`embedding_forward`]: each row of `dx` is added to
/// its token's and its position's gradient.
pub(crate) fn embedding_backward<F: Real>(
    dx: &ArrayRef2<F>,
    tokens: &[Vec<usize>],
    d_embeddings: &mut ArrayRef2<F>,
    d_positions: &mut ArrayRef2<F>,
) {
    let len = tokens.first().map_or(0, Vec::len);
    for (b, sequence) in tokens.iter().enumerate() {
        for (i, &token) in sequence.iter().enumerate() {
            let row = dx.row(b * len + i);
            d_embeddings.row_mut(token).scaled_add(F::one(), &row);
            d_positions.row_mut(i).scaled_add(F::one(), &row);
        }
    }
}
// ANCHOR_END: embedding

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_has_the_bits_of_one_number_on_one_two_and_three_threads() {
        // Larger than SHARED_FROM, so that it is shared among the threads;
        // from −7.7 to 7.7, through each of erf's branches.
        let x =
            Array2::from_shape_fn((768, 512), |(i, j)| (i as f32 - 384.0) * 0.02 + j as f32 * 1e-5);
        assert!(x.len() >= SHARED_FROM);
        let x_t = x.t().to_owned(); // read through a transposed view
        let d = x.mapv(|v| 1.0 - v * 0.3); // the gradient the chain rule multiplies
        let pool = |threads| rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let bits = |a: &Array2<f32>| a.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        for activation in [Activation::GeluErf, Activation::Gelu, Activation::Relu] {
            let one = x.mapv(|h| activation.apply(h));
            let slope = &d * &x.mapv(|h| activation.derivative(h));
            for threads in [1, 2, 3] {
                let (got, got_slope) = pool(threads)
                    .install(|| (activation.apply_each(&x), activation.chain_each(&x, d.clone())));
                assert_eq!(bits(&got), bits(&one), "{activation:?} on {threads} threads");
                assert_eq!(bits(&got_slope), bits(&slope), "{activation:?}' on {threads} threads");
            }
            let got = activation.apply_each(&x_t.t());
            assert_eq!(bits(&got), bits(&one), "{activation:?} of a transposed view");
            let d_columns = d.t().to_owned().reversed_axes(); // d, stored by columns
            let got = activation.chain_each(&x, d_columns);
            assert_eq!(bits(&got), bits(&slope), "{activation:?}' of a gradient by columns");
        }
        let (wide, d) = (x.mapv(f64::from), d.mapv(f64::from));
        let got = Activation::GeluErf.chain_each(&wide, d.clone());
        assert!(got == d * wide.mapv(|h| Activation::GeluErf.derivative(h)), "in f64");
    }
}
