//! Additive attention (Bahdanau, Cho and Bengio, 2015), chapter 1's score,
//! in the training stack: `S_ij = uᵀ tanh(q_i A_q + k_j A_k)`, then the
//! softmax and the weighted values, as for dot-product attention, and the
//! backward pass. [`crate::origins::AdditiveScore`] computes its scores
//! with the same [`hidden`] and [`score`].

use ndarray::{Array1, Array2, Array3, ArrayRef1, ArrayRef2, ArrayView1, Axis};

use crate::error::AttnError;
use crate::linalg::matmul;
use crate::masking::masked_fill;
use crate::nn::softmax_backward;
use crate::real::Real;
use crate::softmax::softmax_rows_in_place;

// ANCHOR: additive_score
/// The hidden layer of one query–key pair: `tanh(q A_q + k A_k)`, from the
/// projected query `q_a = q A_q` and key `k_a = k A_k` (`d_a` each).
pub(crate) fn hidden<F: Real>(q_a: ArrayView1<F>, k_a: ArrayView1<F>) -> Array1<F> {
    (&q_a + &k_a).mapv(|x| x.tanh())
}

/// The score of a pair from its hidden layer: `uᵀ tanh(…)`.
pub(crate) fn score<F: Real>(hidden: &ArrayRef1<F>, u: &ArrayRef1<F>) -> F {
    hidden.dot(u)
}
// ANCHOR_END: additive_score

/// Additive attention's weights: `A_q` (`d_q × d_a`), `A_k` (`d_k × d_a`),
/// `u` (`d_a × 1`).
#[derive(Debug, Clone)]
pub(crate) struct AdditiveWeights<F> {
    pub(crate) a_q: Array2<F>,
    pub(crate) a_k: Array2<F>,
    pub(crate) u: Array2<F>,
}

impl<F: Real> AdditiveWeights<F> {
    /// The three matrices, in the order of [`Self::NAMES`].
    pub(crate) fn matrices(&self) -> [&Array2<F>; 3] {
        [&self.a_q, &self.a_k, &self.u]
    }

    /// The three matrices, mutably.
    pub(crate) fn matrices_mut(&mut self) -> [&mut Array2<F>; 3] {
        [&mut self.a_q, &mut self.a_k, &mut self.u]
    }

    /// The matrices' names.
    pub(crate) const NAMES: [&'static str; 3] = ["A_q", "A_k", "u"];
}

/// What [`additive_forward`] keeps: every pair's hidden layer and the
/// attention weights `P`.
#[derive(Debug, Clone)]
pub(crate) struct AdditiveCache<F> {
    hidden: Array3<F>, // n × m × d_a
    p: Array2<F>,      // n × m
}

impl<F> AdditiveCache<F> {
    /// The attention weights `P`, `n × m`.
    pub(crate) fn weights(&self) -> &Array2<F> {
        &self.p
    }
}

// ANCHOR: additive_forward
/// `O = softmax(S) V` with the additive scores `S_ij = uᵀ tanh(q_i A_q +
/// k_j A_k)` (`−∞` where `keep` is false) of queries `q` (`n × d_q`) and
/// keys `k` (`m × d_k`), values `v` (`m × d_v`).
pub(crate) fn additive_forward<F: Real>(
    [q, k, v]: [&ArrayRef2<F>; 3],
    keep: Option<&ArrayRef2<bool>>,
    w: &AdditiveWeights<F>,
) -> Result<(Array2<F>, AdditiveCache<F>), AttnError> {
    check_sizes([q, k, v], keep, w)?;
    let (q_a, k_a) = (matmul(q, &w.a_q), matmul(k, &w.a_k)); // n × d_a, m × d_a
    let (n, m, d_a) = (q.nrows(), k.nrows(), w.u.nrows());
    let u = w.u.column(0);
    let mut hiddens = Array3::zeros((n, m, d_a));
    let mut scores = Array2::zeros((n, m));
    for i in 0..n {
        for j in 0..m {
            let h = hidden(q_a.row(i), k_a.row(j));
            scores[[i, j]] = score(&h, &u);
            hiddens.slice_mut(ndarray::s![i, j, ..]).assign(&h);
        }
    }
    if let Some(keep) = keep {
        masked_fill(&mut scores, keep, F::neg_infinity())?;
    }
    softmax_rows_in_place(&mut scores)?;
    let output = matmul(&scores, v);
    Ok((output, AdditiveCache { hidden: hiddens, p: scores }))
}
// ANCHOR_END: additive_forward

/// Queries `n × d_q` and keys `m × d_k` to match `A_q` and `A_k`, which
/// have `d_a` columns as `u` has rows (and one column); `m` values; a mask
/// `n × m`.
fn check_sizes<F: Real>(
    [q, k, v]: [&ArrayRef2<F>; 3],
    keep: Option<&ArrayRef2<bool>>,
    w: &AdditiveWeights<F>,
) -> Result<(), AttnError> {
    let bad = |requirement| {
        Err(AttnError::Mismatched { name: "additive attention's inputs", requirement })
    };
    let d_a = w.u.nrows();
    if w.u.ncols() != 1 || w.a_q.ncols() != d_a || w.a_k.ncols() != d_a {
        return bad("A_q and A_k must have d_a columns, and u must be d_a × 1");
    }
    if q.ncols() != w.a_q.nrows() || k.ncols() != w.a_k.nrows() || v.nrows() != k.nrows() {
        return bad("q must be n × d_q, k m × d_k, v m × d_v, as A_q and A_k expect");
    }
    if keep.is_some_and(|keep| keep.dim() != (q.nrows(), k.nrows())) {
        return bad("the mask must be n × m");
    }
    Ok(())
}

/// The gradients of [`additive_forward`]: `dQ`, `dK`, `dV` and
/// `[dA_q, dA_k, du]`.
pub(crate) type AdditiveGradients<F> = ([Array2<F>; 3], [Array2<F>; 3]);

// ANCHOR: additive_backward
/// The backward pass of [`additive_forward`], given `dO`: through the
/// weights as for dot-product attention (`dV = PᵀdO`, `dS = P ⊙ (dP −
/// rowsum(P ⊙ dP))`), then through each pair's one-hidden-layer network:
/// `dH_ij = dS_ij u`, `dZ_ij = dH_ij ⊙ (1 − H_ij²)`, whose sum over the
/// keys is `d(q_i A_q)` and over the queries `d(k_j A_k)`.
pub(crate) fn additive_backward<F: Real>(
    cache: &AdditiveCache<F>,
    [q, k, v]: [&ArrayRef2<F>; 3],
    w: &AdditiveWeights<F>,
    d_out: &ArrayRef2<F>,
) -> Result<AdditiveGradients<F>, AttnError> {
    let p = &cache.p;
    let dv = matmul(&p.t(), d_out);
    let ds = softmax_backward(p, &matmul(d_out, &v.t()))?; // 0 where masked, as P is
    let u = w.u.column(0);
    let (n, m, d_a) = cache.hidden.dim();
    let (mut dq_a, mut dk_a) = (Array2::zeros((n, d_a)), Array2::zeros((m, d_a)));
    let mut du = Array1::zeros(d_a);
    for i in 0..n {
        for j in 0..m {
            let h = cache.hidden.slice(ndarray::s![i, j, ..]);
            let ds_ij = ds[[i, j]];
            du.scaled_add(ds_ij, &h); // ∂S_ij/∂u = H_ij
            let dz = h.mapv(|h| F::one() - h * h) * u * ds_ij;
            dq_a.row_mut(i).zip_mut_with(&dz, |a, &b| *a += b);
            dk_a.row_mut(j).zip_mut_with(&dz, |a, &b| *a += b);
        }
    }
    Ok((
        [matmul(&dq_a, &w.a_q.t()), matmul(&dk_a, &w.a_k.t()), dv],
        [matmul(&q.t(), &dq_a), matmul(&k.t(), &dk_a), du.insert_axis(Axis(1))],
    ))
}
// ANCHOR_END: additive_backward

#[cfg(test)]
mod tests;
