//! FlashAttention-2's backward pass (Dao, 2023) on the CPU: the gradients
//! of `O = softmax(QKᵀ/√d_k) V` with respect to `Q`, `K` and `V`, from
//! what the forward pass saved, `O` and each query's log-sum-exp `lse_i`,
//! without ever holding the `n×m` weights (FlashAttention, Dao et al.,
//! 2022, recomputes them so; FlashAttention-2 keeps one number a query).
//!
//! Tile by tile, the weights are computed again, `P = exp(S − lse)`, and
//! chapter 11's backward is applied to the tile:
//!
//! - `dV_j += P_ijᵀ dO_i`
//! - `dP_ij = dO_i V_jᵀ`
//! - `dS_ij = P_ij ⊙ (dP_ij − D_i)`, with `D_i = rowsum(dO_i ⊙ O_i)`
//! - `dK_j += dS_ijᵀ Q_i / √d_k` and `dQ_i += dS_ij K_j / √d_k`.
//!
//! `D_i` is chapter 11's `pᵀdp` of each row: `rowsum(P ⊙ dP) = rowsum(P ⊙
//! (dO Vᵀ)) = rowsum(dO ⊙ (P V)) = rowsum(dO ⊙ O)`, one number a query,
//! computed once instead of once per key tile.
//!
//! Two passes, each on `rayon`'s threads: key tiles in parallel, each
//! owning its `dK_j` and `dV_j`, with every query tile inside; then query
//! tiles in parallel, each owning its `dQ_i`. A single pass would have
//! the key tiles add into the same rows of `dQ` (GPUs use atomic
//! additions, whose order, and so whose bits, change from run to run); the
//! second pass recomputes the scores to keep every sum in one order,
//! whatever the number of threads.
//!
//! That is the portable kernel ([`super::Kernel::Portable`]). On processors
//! with AVX-512, [`fast_attention_backward`] runs `avx512_backward`
//! instead: one pass, five products a pair of tiles, `dQ` summed in eight
//! fixed bands of key tiles.

use gemm::Parallelism;
use ndarray::{s, Array1, Array2, ArrayRef2, ArrayView1, ArrayViewMut2, Axis};
use rayon::prelude::*;

use super::Tiles;
use crate::check::check_overflow;
use crate::error::AttnError;
use crate::linalg::product;
use crate::real::exp_nonpositive;

/// What [`super::fast_attention_forward`] keeps for the backward pass: the
/// output and each query's log-sum-exp.
#[derive(Debug, Clone)]
pub struct FastForward {
    /// The output `O`, `n×d_v`.
    pub output: Array2<f32>,
    /// `lse_i = log Σ_j exp(S_ij)`, the scores `S = QKᵀ/√d_k` (masked ones
    /// left out): `n` numbers, where the weights would be `n·m`.
    pub lse: Array1<f32>,
    pub(super) causal: bool,
}

/// The gradients `(dQ, dK, dV)`.
pub type Gradients = (Array2<f32>, Array2<f32>, Array2<f32>);

/// One task's scratch: a tile of scaled queries, of scores (then
/// weights) and of the weights' gradients (`dP`, then `dS`).
struct Scratch {
    q: Array2<f32>,  // tiles.query × d_k, scaled by 1/√d_k
    p: Array2<f32>,  // tiles.query × tiles.key
    dp: Array2<f32>, // tiles.query × tiles.key
}

impl Scratch {
    fn new(d_k: usize, tiles: Tiles) -> Scratch {
        Scratch {
            q: Array2::zeros((tiles.query, d_k)),
            p: Array2::zeros((tiles.query, tiles.key)),
            dp: Array2::zeros((tiles.query, tiles.key)),
        }
    }
}

/// The inputs a tile reads: `Q`, `K`, `V`, `dO`, and per query `lse` and `D`.
struct Inputs<'a> {
    q: &'a ArrayRef2<f32>,
    k: &'a ArrayRef2<f32>,
    v: &'a ArrayRef2<f32>,
    d_out: &'a ArrayRef2<f32>,
    lse: ArrayView1<'a, f32>,
    d: ArrayView1<'a, f32>,
    causal: bool,
    tiles: Tiles,
}

// ANCHOR: backward
/// The gradients of [`super::fast_attention_forward`]'s output with respect
/// to `q`, `k` and `v`, given `d_out = dL/dO` (`n×d_v`) and what the
/// forward pass kept.
pub fn fast_attention_backward(
    q: &ArrayRef2<f32>,
    k: &ArrayRef2<f32>,
    v: &ArrayRef2<f32>,
    forward: &FastForward,
    d_out: &ArrayRef2<f32>,
) -> Result<Gradients, AttnError> {
    fast_attention_backward_with(q, k, v, forward, d_out, super::FAST_TILES)
}

/// [`fast_attention_backward`] with other tiles.
pub fn fast_attention_backward_with(
    q: &ArrayRef2<f32>,
    k: &ArrayRef2<f32>,
    v: &ArrayRef2<f32>,
    forward: &FastForward,
    d_out: &ArrayRef2<f32>,
    tiles: Tiles,
) -> Result<Gradients, AttnError> {
    let kernel = super::Kernel::best();
    fast_attention_backward_on([q, k, v], forward, d_out, tiles, kernel)
}

/// [`fast_attention_backward_with`] on the given `kernel` (the AVX-512
/// one rounds the query tiles up to a multiple of 16); asking for
/// [`super::Kernel::Avx512`] on a processor without it is an error.
pub fn fast_attention_backward_on(
    [q, k, v]: [&ArrayRef2<f32>; 3],
    forward: &FastForward,
    d_out: &ArrayRef2<f32>,
    tiles: Tiles,
    kernel: super::Kernel,
) -> Result<Gradients, AttnError> {
    check_backward(q, k, v, forward, d_out)?;
    let tiles = super::checked_tiles(tiles, q.nrows(), k.nrows())?;
    let (q, k, v, d_out) = (
        q.as_standard_layout(),
        k.as_standard_layout(),
        v.as_standard_layout(),
        d_out.as_standard_layout(),
    );
    // D_i = rowsum(dO_i ⊙ O_i): what every weight's gradient subtracts.
    let d: Array1<f32> =
        (d_out.rows().into_iter().zip(forward.output.rows())).map(|(d_o, o)| d_o.dot(&o)).collect();
    match kernel {
        #[cfg(target_arch = "x86_64")]
        super::Kernel::Avx512 if super::avx512::available() => {
            let lse = forward.lse.as_slice().expect("owned");
            let d = d.as_slice().expect("owned");
            let tiles = Tiles { query: tiles.query.next_multiple_of(16), key: tiles.key };
            // SAFETY: `available` found AVX-512 on this processor.
            let (dq, dk, dv) = unsafe {
                super::avx512_backward::gradients(
                    [&q, &k, &v, &d_out],
                    (lse, d),
                    forward.causal,
                    tiles,
                )
            };
            for (what, g) in [("dQ", &dq), ("dK", &dk), ("dV", &dv)] {
                check_overflow(what, g)?;
            }
            return Ok((dq, dk, dv));
        }
        super::Kernel::Avx512 => return Err(super::unavailable()),
        super::Kernel::Portable => {}
    }
    let inputs = Inputs {
        q: &q,
        k: &k,
        v: &v,
        d_out: &d_out,
        lse: forward.lse.view(),
        d: d.view(),
        causal: forward.causal,
        tiles,
    };
    let d_k = q.ncols();
    // Pass 1: key tiles in parallel, each owning its dK_j and dV_j.
    let mut dk = Array2::zeros(k.dim());
    let mut dv = Array2::zeros(v.dim());
    dk.axis_chunks_iter_mut(Axis(0), tiles.key)
        .into_par_iter()
        .zip(dv.axis_chunks_iter_mut(Axis(0), tiles.key))
        .enumerate()
        .for_each_init(
            || Scratch::new(d_k, tiles),
            |scratch, (t, (dk_j, dv_j))| key_tile(&inputs, t * tiles.key, dk_j, dv_j, scratch),
        );
    // Pass 2: query tiles in parallel, each owning its dQ_i.
    let mut dq = Array2::zeros(q.dim());
    dq.axis_chunks_iter_mut(Axis(0), tiles.query).into_par_iter().enumerate().for_each_init(
        || Scratch::new(d_k, tiles),
        |scratch, (t, dq_i)| query_tile(&inputs, t * tiles.query, dq_i, scratch),
    );
    for (what, g) in [("dQ", &dq), ("dK", &dk), ("dV", &dv)] {
        check_overflow(what, g)?;
    }
    Ok((dq, dk, dv))
}

/// `dK_j` and `dV_j` for the keys `j0 .. j0 + dk_j.nrows()`: every query
/// tile that sees one of them.
fn key_tile(
    x: &Inputs,
    j0: usize,
    mut dk_j: ArrayViewMut2<f32>,
    mut dv_j: ArrayViewMut2<f32>,
    scratch: &mut Scratch,
) {
    let cols = dk_j.nrows();
    // Under the causal mask, query i sees key j only if j ≤ i: the queries
    // before j0 see none of these keys.
    let first = if x.causal { j0 } else { 0 };
    for i0 in (first..x.q.nrows()).step_by(x.tiles.query) {
        let rows = x.tiles.query.min(x.q.nrows() - i0);
        super::scaled_queries(&mut scratch.q, x.q, i0, rows);
        weights_and_gradients(x, i0, rows, j0, cols, scratch);
        let p = scratch.p.slice(s![..rows, ..cols]);
        let d_o = x.d_out.slice(s![i0..i0 + rows, ..]);
        product(&mut dv_j, p.t(), d_o, true, Parallelism::None); // dV_j += Pᵀ dO_i
        let ds = scratch.dp.slice(s![..rows, ..cols]);
        let q_i = scratch.q.slice(s![..rows, ..]);
        product(&mut dk_j, ds.t(), q_i, true, Parallelism::None); // dK_j += dSᵀ Q_i/√d_k
    }
}

/// `dQ_i` for the queries `i0 .. i0 + dq_i.nrows()`: every key tile they see.
fn query_tile(x: &Inputs, i0: usize, mut dq_i: ArrayViewMut2<f32>, scratch: &mut Scratch) {
    let rows = dq_i.nrows();
    super::scaled_queries(&mut scratch.q, x.q, i0, rows); // once for every key tile
    let keys_seen = super::keys_seen(x.causal, x.k.nrows(), i0 + rows);
    for j0 in (0..keys_seen).step_by(x.tiles.key) {
        let cols = x.tiles.key.min(keys_seen - j0);
        weights_and_gradients(x, i0, rows, j0, cols, scratch);
        let ds = scratch.dp.slice(s![..rows, ..cols]);
        let k_j = x.k.slice(s![j0..j0 + cols, ..]);
        product(&mut dq_i, ds, k_j, true, Parallelism::None); // dQ_i += dS K_j
    }
    let scale = 1.0 / (x.q.ncols() as f32).sqrt();
    dq_i.map_inplace(|g| *g *= scale); // … / √d_k
}

/// The tile of queries `i0..i0 + rows` (already scaled in `scratch.q`) and
/// keys `j0..j0 + cols`: leaves the weights `P = exp(S − lse)` in
/// `scratch.p` (0 where the causal mask hides a key) and `dS = P ⊙ (dP −
/// D)` in `scratch.dp`.
fn weights_and_gradients(
    x: &Inputs,
    i0: usize,
    rows: usize,
    j0: usize,
    cols: usize,
    scratch: &mut Scratch,
) {
    let mut p = scratch.p.slice_mut(s![..rows, ..cols]);
    let k_j = x.k.slice(s![j0..j0 + cols, ..]);
    product(&mut p, scratch.q.slice(s![..rows, ..]), k_j.t(), false, Parallelism::None);
    let mut dp = scratch.dp.slice_mut(s![..rows, ..cols]);
    let d_o = x.d_out.slice(s![i0..i0 + rows, ..]);
    let v_j = x.v.slice(s![j0..j0 + cols, ..]);
    product(&mut dp, d_o, v_j.t(), false, Parallelism::None); // dP = dO_i V_jᵀ
    for r in 0..rows {
        let (lse, delta) = (x.lse[i0 + r], x.d[i0 + r]);
        // Keys past the query are hidden by the causal mask: weight 0.
        let visible = super::visible_keys(x.causal, i0 + r, j0, cols);
        let (mut p_row, mut dp_row) = (p.row_mut(r), dp.row_mut(r));
        let p_row = p_row.as_slice_mut().expect("tile rows are contiguous");
        let dp_row = dp_row.as_slice_mut().expect("tile rows are contiguous");
        let (p_seen, p_hidden) = p_row.split_at_mut(visible);
        let (dp_seen, dp_hidden) = dp_row.split_at_mut(visible);
        p_hidden.fill(0.0);
        dp_hidden.fill(0.0);
        for (p, dp) in p_seen.iter_mut().zip(dp_seen) {
            // S ≤ lse but for rounding: P = exp(S − lse) ≤ 1.
            *p = exp_nonpositive((*p - lse).min(0.0));
            *dp = *p * (*dp - delta); // dS = P ⊙ (dP − D)
        }
    }
}
// ANCHOR_END: backward

/// Checks that `d_out` and the saved output have the shape of attention of
/// `q` over `k`, `v`, and that `d_out` is finite.
fn check_backward(
    q: &ArrayRef2<f32>,
    k: &ArrayRef2<f32>,
    v: &ArrayRef2<f32>,
    forward: &FastForward,
    d_out: &ArrayRef2<f32>,
) -> Result<(), AttnError> {
    crate::attention::check_qkv(q, k, v)?;
    let expected = (q.nrows(), v.ncols());
    for (what, got) in [
        ("the output's gradient dO and the output", d_out.dim()),
        ("the saved output and the queries and values", forward.output.dim()),
    ] {
        if got != expected {
            return Err(AttnError::ShapesDiffer { what, left: got, right: expected });
        }
    }
    if forward.lse.len() != q.nrows() {
        return Err(AttnError::ShapesDiffer {
            what: "the saved log-sum-exps and the queries",
            left: (forward.lse.len(), 1),
            right: (q.nrows(), 1),
        });
    }
    crate::check::check_finite("the output's gradient dO", d_out)?;
    // The saved state comes from the caller (its fields are public): a NaN
    // or an infinity there would be NaN in every gradient.
    crate::check::check_finite("the saved output", &forward.output)?;
    let lse = forward.lse.view().insert_axis(ndarray::Axis(0)); // 1×n
    crate::check::check_finite("the saved log-sum-exps", &lse)
}

#[cfg(test)]
mod tests;
