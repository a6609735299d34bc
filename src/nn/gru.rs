//! The gated recurrent unit of Cho et al. (2014), the encoder and decoder
//! of the recurrent models attention was invented for (Bahdanau, Cho and
//! Bengio, 2015): a forward pass over a batch of sequences, one step at a
//! time, that keeps what its backward pass needs, and the backward pass
//! through time.
//!
//! At step `t`, for inputs `x_t` (`B × d_in`) and the previous state
//! `h_{t−1}` (`B × d_h`):
//!
//! - update gate `z = σ(x_t W_z + h_{t−1} U_z + b_z)`;
//! - reset gate `r = σ(x_t W_r + h_{t−1} U_r + b_r)`;
//! - candidate `ĥ = tanh(x_t W_h + (r ⊙ h_{t−1}) U_h + b_h)`;
//! - state `h_t = z ⊙ h_{t−1} + (1 − z) ⊙ ĥ`.
//!
//! `W = [W_z | W_r | W_h]` is `d_in × 3d_h`, `U` is `d_h × 3d_h`, `b` is
//! `3d_h`. A sequence shorter than the batch's longest keeps its state once
//! it has ended: `h_t = h_{t−1}` for the rows whose length is `≤ t`.

use ndarray::{s, Array2, ArrayRef2, Axis, Zip};

use crate::error::AttnError;
use crate::linalg::matmul;
use crate::real::Real;

/// A GRU's weights: `W` (`d_in × 3d_h`), `U` (`d_h × 3d_h`), `b` (`1 × 3d_h`),
/// each in the gates' order `z`, `r`, `h`.
#[derive(Debug, Clone)]
pub(crate) struct GruWeights<F> {
    pub(crate) w: Array2<F>,
    pub(crate) u: Array2<F>,
    pub(crate) b: Array2<F>,
}

impl<F: Real> GruWeights<F> {
    /// The state's width `d_h`.
    pub(crate) fn d_h(&self) -> usize {
        self.u.nrows()
    }

    /// The three matrices, in the order of [`Self::NAMES`].
    pub(crate) fn matrices(&self) -> [&Array2<F>; 3] {
        [&self.w, &self.u, &self.b]
    }

    /// The three matrices, mutably.
    pub(crate) fn matrices_mut(&mut self) -> [&mut Array2<F>; 3] {
        [&mut self.w, &mut self.u, &mut self.b]
    }

    /// The matrices' names.
    pub(crate) const NAMES: [&'static str; 3] = ["W", "U", "b"];
}

/// What one step keeps for the backward pass.
#[derive(Debug, Clone)]
struct Step<F> {
    h_prev: Array2<F>,
    z: Array2<F>,
    r: Array2<F>,
    candidate: Array2<F>,
    /// 1 for the rows whose sequence has not ended, 0 for the others.
    live: Array2<F>,
}

/// What [`gru_forward`] keeps: every step's gates and previous state.
#[derive(Debug, Clone)]
pub(crate) struct GruCache<F> {
    steps: Vec<Step<F>>,
    /// The batch's size `B`, for `dh_0` when there are no steps.
    batch: usize,
}

/// `σ(x) = 1 / (1 + e^{−x})`: 0 for very negative `x`, never NaN.
fn sigmoid<F: Real>(x: F) -> F {
    F::one() / (F::one() + (-x).exp())
}

// ANCHOR: gru_forward
/// Runs the GRU over `xs` (`T` steps, each `B × d_in`) from `h0`
/// (`B × d_h`); row `b` stops changing after `lengths[b]` steps. Returns
/// every step's state (`T` of `B × d_h`) and the cache.
pub(crate) fn gru_forward<F: Real>(
    xs: &[Array2<F>],
    h0: &ArrayRef2<F>,
    lengths: &[usize],
    w: &GruWeights<F>,
) -> Result<(Vec<Array2<F>>, GruCache<F>), AttnError> {
    check_sizes(xs, h0, lengths, w)?;
    let d_h = w.d_h();
    let gate = |a: &Array2<F>, g: usize| a.slice(s![.., g * d_h..(g + 1) * d_h]).to_owned();
    let (mut h, mut states, mut steps) = (h0.to_owned(), Vec::new(), Vec::new());
    for (t, x) in xs.iter().enumerate() {
        let from_x = matmul(x, &w.w) + w.b.row(0); // B × 3d_h
        let from_h = matmul(&h, &w.u.slice(s![.., ..2 * d_h]));
        let z = (gate(&from_x, 0) + gate(&from_h, 0)).mapv(sigmoid);
        let r = (gate(&from_x, 1) + gate(&from_h, 1)).mapv(sigmoid);
        let reset = &r * &h;
        let candidate =
            (gate(&from_x, 2) + matmul(&reset, &w.u.slice(s![.., 2 * d_h..]))).mapv(|a| a.tanh());
        let live = live_rows(lengths, t);
        // h_t = z ⊙ h_{t−1} + (1 − z) ⊙ ĥ on the live rows, h_{t−1} elsewhere.
        let mut next = h.clone();
        Zip::from(&mut next)
            .and(&z)
            .and(&candidate)
            .and_broadcast(&live)
            .for_each(|h, &z, &c, &m| *h = *h + m * (F::one() - z) * (c - *h));
        steps.push(Step { h_prev: std::mem::replace(&mut h, next), z, r, candidate, live });
        states.push(h.clone());
    }
    let batch = h0.nrows();
    Ok((states, GruCache { steps, batch }))
}
// ANCHOR_END: gru_forward

/// A column of 1 for the rows whose sequence is longer than `t`, else 0.
fn live_rows<F: Real>(lengths: &[usize], t: usize) -> Array2<F> {
    Array2::from_shape_fn(
        (lengths.len(), 1),
        |(b, _)| {
            if t < lengths[b] {
                F::one()
            } else {
                F::zero()
            }
        },
    )
}

/// The gradients of [`gru_forward`]'s inputs and weights: `dX` for every
/// step, `dh_0`, and `[dW, dU, db]`.
pub(crate) type GruGradients<F> = (Vec<Array2<F>>, Array2<F>, [Array2<F>; 3]);

// ANCHOR: gru_backward
/// Back through time: `d_states[t]` is the loss's gradient with respect to
/// step `t`'s state from outside the GRU (the output it fed); each step
/// adds the gradient its successor passes back. `xs` and `d_states` have
/// one entry a step, as the forward pass had.
pub(crate) fn gru_backward<F: Real>(
    cache: &GruCache<F>,
    xs: &[Array2<F>],
    w: &GruWeights<F>,
    d_states: &[Array2<F>],
) -> GruGradients<F> {
    let d_h = w.d_h();
    let (u_zr, u_h) = (w.u.slice(s![.., ..2 * d_h]), w.u.slice(s![.., 2 * d_h..]));
    let mut dw = Array2::zeros(w.w.dim());
    let mut du = Array2::zeros(w.u.dim());
    let mut db = Array2::zeros(w.b.dim());
    let mut dxs = vec![Array2::zeros((0, 0)); xs.len()];
    assert!(
        xs.len() == cache.steps.len() && d_states.len() == xs.len(),
        "one input and one state gradient for each step of the forward pass"
    );
    let mut dh = Array2::zeros((cache.batch, d_h)); // from step t + 1
    for t in (0..xs.len()).rev() {
        let Step { h_prev, z, r, candidate, live } = &cache.steps[t];
        let d_state = &dh + &d_states[t];
        let d_new = &d_state * live; // the live rows' new state
                                     // h = z ⊙ h_prev + (1 − z) ⊙ ĥ
        let d_z = &d_new * &(h_prev - candidate);
        let d_candidate = &d_new * &z.mapv(|z| F::one() - z);
        let mut d_prev = &d_state - &d_new + &d_new * z; // unchanged rows, and z ⊙ dh
                                                         // Through the activations: σ′ = σ(1 − σ), tanh′ = 1 − tanh².
        let da_z = d_z * &z.mapv(|z| z * (F::one() - z));
        let da_h = d_candidate * &candidate.mapv(|c| F::one() - c * c);
        let d_reset = matmul(&da_h, &u_h.t()); // d(r ⊙ h_prev)
        d_prev = d_prev + &d_reset * r;
        let da_r = &d_reset * h_prev * &r.mapv(|r| r * (F::one() - r));
        let mut da = Array2::zeros((z.nrows(), 3 * d_h)); // [da_z | da_r | da_h]
        da.slice_mut(s![.., ..d_h]).assign(&da_z);
        da.slice_mut(s![.., d_h..2 * d_h]).assign(&da_r);
        da.slice_mut(s![.., 2 * d_h..]).assign(&da_h);
        d_prev = d_prev + matmul(&da.slice(s![.., ..2 * d_h]), &u_zr.t());
        dxs[t] = matmul(&da, &w.w.t());
        dw = dw + matmul(&xs[t].t(), &da);
        let mut du_zr = du.slice_mut(s![.., ..2 * d_h]);
        du_zr += &matmul(&h_prev.t(), &da.slice(s![.., ..2 * d_h]));
        let mut du_h = du.slice_mut(s![.., 2 * d_h..]);
        du_h += &matmul(&(r * h_prev).t(), &da_h);
        db = db + da.sum_axis(Axis(0)).insert_axis(Axis(0));
        dh = d_prev;
    }
    (dxs, dh, [dw, du, db])
}
// ANCHOR_END: gru_backward

/// Every step `B × d_in` and `h0` `B × d_h` with `W`, `U`, `b` to match,
/// one length per row, none longer than the steps.
fn check_sizes<F: Real>(
    xs: &[Array2<F>],
    h0: &ArrayRef2<F>,
    lengths: &[usize],
    w: &GruWeights<F>,
) -> Result<(), AttnError> {
    let d_h = w.d_h();
    let bad = |requirement| Err(AttnError::Mismatched { name: "the GRU's inputs", requirement });
    if w.u.dim() != (d_h, 3 * d_h) || w.b.dim() != (1, 3 * d_h) || w.w.ncols() != 3 * d_h {
        return bad("W must be d_in × 3d_h, U d_h × 3d_h and b 1 × 3d_h");
    }
    if h0.ncols() != d_h || lengths.len() != h0.nrows() {
        return bad("h0 must be B × d_h, with one length for each of its B rows");
    }
    if xs.iter().any(|x| x.dim() != (h0.nrows(), w.w.nrows())) {
        return bad("every step's input must be B × d_in");
    }
    if lengths.iter().any(|&l| l > xs.len()) {
        return bad("no length may exceed the number of steps");
    }
    Ok(())
}

#[cfg(test)]
mod tests;
