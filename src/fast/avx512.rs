//! The fast kernel's loop written for AVX-512, the processors whose vector
//! registers hold 16 `f32`: twice the work per instruction of the `gemm`
//! crate's 256-bit kernels that the portable loop uses.
//!
//! Every tile is kept with its queries across: the packed queries `Qᵀ`
//! (`d_k` by the tile's queries), the scores `Sᵀ` (keys by queries) and
//! the output `Oᵀ` (`d_v` by queries). One register then holds 16
//! queries, so the online softmax of 16 queries is a column of registers
//! (maxima, exponentials and sums lane by lane, never across a register),
//! and both products are one micro-kernel, [`block`]: a block of 6 rows by
//! 64 queries in 24 registers, updated by one broadcast number times four
//! registers at each step. The steps:
//!
//! - [`pack_queries`]: the tile's queries times `1/√d_k`, transposed;
//! - [`scores`]: `Sᵀ = K_j Q_iᵀ`, a key's coordinates broadcast;
//! - [`softmax_columns`]: the online softmax, [`exp`] on 16 lanes, the
//!   causal mask as a mask of lanes;
//! - [`weighted_values`]: `Oᵀ ← Oᵀ diag(α) + V_jᵀ Pᵀ`, a value's
//!   coordinates broadcast.
//!
//! The scratch is aligned to 64 bytes, so that no load of 16 `f32`
//! straddles two cache lines; the inputs are only ever read one number at
//! a time. Every sum is taken in the same order whatever the thread, so
//! the bits do not depend on the number of threads. `unsafe` is confined
//! to loads and stores: each touches memory inside a slice whose length
//! the function asserts on entry.

use std::arch::x86_64::{
    __m512, _mm512_fmadd_ps, _mm512_loadu_ps, _mm512_mul_ps, _mm512_set1_ps, _mm512_setzero_ps,
    _mm512_storeu_ps,
};

use ndarray::ArrayViewMut2;

use super::{keys_seen, Tiles};

mod phases;
mod softmax;
use crate::error::AttnError;
pub(super) use crate::linalg::avx512::Aligned;
pub(crate) use phases::phase_times;
pub(super) use softmax::{exp, seen_lanes};
use softmax::{softmax_columns, weights_lagging};

/// Lanes of one register of `f32`.
pub(super) const W: usize = 16;

/// Rows of a [`block`]: 6 rows by 4 registers are 24 accumulators, with
/// room for the 4 registers of `b` and the broadcast number. (Measured
/// against 8×3, 12×2, 4×6 and 14×2, alone in the L1 cache: the fastest.)
const ROWS: usize = super::AVX512_BLOCK[0];

/// Registers of 16 queries across a [`block`].
const PANELS: usize = super::AVX512_BLOCK[1];

/// Whether this processor runs AVX-512.
pub(crate) fn available() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
}

/// One thread's scratch: the packed queries, the score tile and the output
/// tile, all transposed, and per query the running maximum, sum and last
/// rescaling factor.
pub(super) struct Scratch {
    qt: Aligned,        // d_k×ld, in panels of 16 queries
    st: Aligned,        // tiles.key×ld
    ot: Aligned,        // d_v×ld
    max: Vec<f32>,      // ld
    sum: Vec<f32>,      // ld
    alpha: Vec<f32>,    // ld
    tile_sum: Vec<f32>, // ld: one key tile's sums, until they are kept
}

impl super::RunningSoftmax for Scratch {
    fn max_and_sum(&self) -> (&[f32], &[f32]) {
        (&self.max, &self.sum)
    }
}

impl Scratch {
    /// `ld`, the tile's queries rounded up to a multiple of 16.
    pub(super) fn new([d_k, d_v]: [usize; 2], tiles: Tiles) -> Scratch {
        let ld = tiles.query.next_multiple_of(W);
        Scratch {
            qt: Aligned::zeros(d_k * ld),
            st: Aligned::zeros(tiles.key * ld),
            ot: Aligned::zeros(d_v * ld),
            max: vec![0.0; ld],
            sum: vec![0.0; ld],
            alpha: vec![0.0; ld],
            tile_sum: vec![0.0; ld],
        }
    }
}

/// The output rows `i0 .. i0 + out.nrows()` of the attention of `q` over
/// `k`, `v` (rows contiguous, `[d_k, d_v]` wide): every key tile the
/// causal mask leaves visible, with the online softmax.
///
/// # Safety
/// The processor must run AVX-512 ([`available`]).
#[allow(clippy::too_many_arguments)] // the three matrices and the tile
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn query_tile(
    [q, k, v]: [&[f32]; 3],
    [d_k, d_v]: [usize; 2],
    causal: bool,
    key_tile: usize,
    i0: usize,
    mut out: ArrayViewMut2<f32>,
    s: &mut Scratch,
) -> Result<(), AttnError> {
    let (rows, m) = (out.nrows(), k.len() / d_k);
    let ld = rows.next_multiple_of(W);
    let (qt, ot) = (&mut s.qt.get_mut()[..d_k * ld], &mut s.ot.get_mut()[..d_v * ld]);
    pack_queries(&q[i0 * d_k..(i0 + rows) * d_k], d_k, qt);
    let [max, sum, alpha, tile_sum] =
        [&mut s.max, &mut s.sum, &mut s.alpha, &mut s.tile_sum].map(|x| &mut x[..ld]);
    max.fill(f32::NEG_INFINITY);
    sum.fill(0.0);
    ot.fill(0.0);
    let seen = keys_seen(causal, m, i0 + rows);
    for j0 in (0..seen).step_by(key_tile) {
        let cols = key_tile.min(seen - j0);
        let st = &mut s.st.get_mut()[..cols * ld];
        let (k_j, v_j) = (&k[j0 * d_k..(j0 + cols) * d_k], &v[j0 * d_v..(j0 + cols) * d_v]);
        // Where every query sees every key of this tile and has a finite
        // maximum from the tiles before, try keeping the maxima as they are.
        let seen_by_all = !causal || j0 + cols <= i0 + 1;
        let try_lag = j0 > 0 && seen_by_all && max.iter().all(|m| m.is_finite());
        if try_lag && weights_lagging((k_j, d_k), qt, st, max, [sum, tile_sum]) {
            weighted_values((st, ld), None, v_j, ot);
            continue;
        }
        scores(k_j, d_k, qt, st);
        // Key j is hidden from tile row r when j0 + j > i0 + r.
        let shift = causal.then_some(j0 as isize - i0 as isize);
        softmax_columns(st, ld, shift, max, sum, alpha).map_err(|(r, value)| {
            AttnError::Overflow { what: "the scores QKᵀ/√d_k", position: (i0 + r, j0), value }
        })?;
        weighted_values((st, ld), Some(alpha), v_j, ot);
    }
    for (r, mut row) in out.rows_mut().into_iter().enumerate() {
        let inv = if sum[r] > 0.0 { 1.0 / sum[r] } else { 1.0 };
        row.iter_mut().enumerate().for_each(|(c, out)| *out = ot[c * ld + r] * inv);
    }
    Ok(())
}

/// Queries `q` (`rows×d_k`, rows contiguous) times `1/√d_k` into `qt`, in
/// panels of 16: entry `(c, l)` of panel `p` is coordinate `c` of query
/// `16p + l`, zero past the last query.
pub(super) fn pack_queries(q: &[f32], d_k: usize, qt: &mut [f32]) {
    pack_panels(q, d_k, 1.0 / (d_k as f32).sqrt(), qt);
}

/// `x` (`rows×w`, rows contiguous) times `scale` into `xt` in panels of 16
/// rows: entry `(c, l)` of panel `p` is column `c` of row `16p + l`, zero
/// past the last row.
pub(super) fn pack_panels(x: &[f32], w: usize, scale: f32, xt: &mut [f32]) {
    for (p, panel) in xt.chunks_exact_mut(w * W).enumerate() {
        for l in 0..W {
            let row = x.get((p * W + l) * w..(p * W + l + 1) * w);
            for c in 0..w {
                panel[c * W + l] = row.map_or(0.0, |row| row[c] * scale);
            }
        }
    }
}

/// `Sᵀ ← K_j Q_iᵀ`: row `j` of `st` (`cols×ld`) holds key `j`'s score with
/// each query, for the keys `k` (`cols×d_k`) and the packed queries `qt`.
#[target_feature(enable = "avx512f")]
pub(super) fn scores(k: &[f32], d_k: usize, qt: &[f32], st: &mut [f32]) {
    scores_then(k, d_k, qt, st, |_, _, _| {});
}

/// [`scores`], each block, once written, going to `then(st, [row, panel],
/// [rows, panels])` while it is still in the L1 cache.
#[target_feature(enable = "avx512f")]
pub(super) fn scores_then(
    k: &[f32],
    d_k: usize,
    qt: &[f32],
    st: &mut [f32],
    mut then: impl FnMut(&mut [f32], [usize; 2], [usize; 2]),
) {
    let (cols, ld) = (k.len() / d_k, qt.len() / d_k);
    for_blocks([cols, ld / W], |[j, p], [rows, panels]| {
        let (a, b) = (&k[j * d_k..], &qt[p * d_k * W..]);
        let c = &mut st[j * ld + p * W..];
        // a[r, t] = K[j + r][t], b[p, t] = Qᵀ panel p, coordinate t.
        block_of((a, [d_k, 1]), (b, [d_k * W, W]), d_k, (c, ld), [rows, panels], false);
        then(st, [j, p], [rows, panels]);
    });
}

/// `Oᵀ ← Oᵀ diag(α) + V_jᵀ Pᵀ`: the output so far (`d_v×ld`) rescaled by
/// each query's `α` (if any), plus the weights `pt` (`cols×ld`) times the
/// values `v` (`cols×d_v`).
#[target_feature(enable = "avx512f")]
fn weighted_values((pt, ld): (&[f32], usize), alpha: Option<&[f32]>, v: &[f32], ot: &mut [f32]) {
    let (cols, d_v) = (pt.len() / ld, ot.len() / ld);
    if let Some(alpha) = alpha {
        for row in ot.chunks_exact_mut(ld) {
            for (o, a) in row.chunks_exact_mut(W).zip(alpha.chunks_exact(W)) {
                // SAFETY: both chunks hold 16 numbers.
                unsafe {
                    let scaled =
                        _mm512_mul_ps(_mm512_loadu_ps(o.as_ptr()), _mm512_loadu_ps(a.as_ptr()));
                    _mm512_storeu_ps(o.as_mut_ptr(), scaled);
                }
            }
        }
    }
    for_blocks([d_v, ld / W], |[c, p], [rows, panels]| {
        let (a, b) = (&v[c..], &pt[p * W..]);
        let o = &mut ot[c * ld + p * W..];
        // a[r, t] = V[t][c + r], b[p, t] = Pᵀ row t, panel p.
        block_of((a, [1, d_v]), (b, [W, ld]), cols, (o, ld), [rows, panels], true);
    });
}

/// Calls `f([row, panel], [rows, panels])` on blocks covering `rows` rows
/// by `panels` panels: [`PANELS`] panels across (then 2 or 1 for the last),
/// and [`ROWS`] rows down (then 4 or 1 for the last).
pub(super) fn for_blocks([rows, panels]: [usize; 2], mut f: impl FnMut([usize; 2], [usize; 2])) {
    let largest = |left: usize, sizes: [usize; 3]| sizes.into_iter().find(|&s| s <= left);
    let mut p = 0;
    while let Some(across) = largest(panels - p, [PANELS, 2, 1]) {
        let mut r = 0;
        while let Some(down) = largest(rows - r, [ROWS, 4, 1]) {
            f([r, p], [down, across]);
            r += down;
        }
        p += across;
    }
}

/// A matrix and its two strides, or a matrix and its row stride.
pub(super) type Strided<'a> = (&'a [f32], [usize; 2]);

/// [`block`] for `rows` rows (6, 4 or 1) and `panels` panels (4, 2 or 1).
#[target_feature(enable = "avx512f")]
pub(super) fn block_of(
    a: Strided,
    b: Strided,
    depth: usize,
    c: (&mut [f32], usize),
    [rows, panels]: [usize; 2],
    accumulate: bool,
) {
    match (rows, panels) {
        (ROWS, PANELS) => block::<ROWS, PANELS>(a, b, depth, c, accumulate),
        (ROWS, 2) => block::<ROWS, 2>(a, b, depth, c, accumulate),
        (ROWS, _) => block::<ROWS, 1>(a, b, depth, c, accumulate),
        (4, PANELS) => block::<4, PANELS>(a, b, depth, c, accumulate),
        (4, 2) => block::<4, 2>(a, b, depth, c, accumulate),
        (4, _) => block::<4, 1>(a, b, depth, c, accumulate),
        (_, PANELS) => block::<1, PANELS>(a, b, depth, c, accumulate),
        (_, 2) => block::<1, 2>(a, b, depth, c, accumulate),
        _ => block::<1, 1>(a, b, depth, c, accumulate),
    }
}

// ANCHOR: block
/// The micro-kernel: `C ← C + A·B` (or `C ← A·B`) for `R` rows of `C` by
/// `P` registers of 16 queries, with `A` read one number at a time and `B`
/// sixteen at a time:
///
/// `C[r][16p .. 16p+16] (+)= Σ_t a[r·a_r + t·a_t] · b[p·b_p + t·b_t .. +16]`
///
/// over `t < depth`, row `r` of `C` at `c[r·c_r]`. The `R×P` sums stay in
/// registers for the whole of `t`; each step loads `P` registers of `B`
/// and broadcasts `R` numbers of `A`, for `R·P` fused multiply-adds.
///
/// The loop takes two steps an iteration. Written one step an iteration,
/// the compiler unrolled it four times itself and loaded the broadcasts of
/// the four steps ahead of their multiply-adds: more than the 32 vector
/// registers, so that sums went to the stack and back at every step.
#[target_feature(enable = "avx512f")]
fn block<const R: usize, const P: usize>(
    (a, [a_r, a_t]): Strided,
    (b, [b_p, b_t]): Strided,
    depth: usize,
    (c, c_r): (&mut [f32], usize),
    accumulate: bool,
) {
    assert!(depth >= 1 && a.len() > (R - 1) * a_r + (depth - 1) * a_t);
    assert!(b.len() >= (P - 1) * b_p + (depth - 1) * b_t + W);
    assert!(c.len() >= (R - 1) * c_r + P * W);
    let (a, b, c) = (a.as_ptr(), b.as_ptr(), c.as_mut_ptr());
    let mut sums = [[_mm512_setzero_ps(); P]; R];
    if accumulate {
        for (r, sums) in sums.iter_mut().enumerate() {
            for (p, sum) in sums.iter_mut().enumerate() {
                // SAFETY: r < R, p < P: inside `c` (asserted).
                *sum = unsafe { _mm512_loadu_ps(c.add(r * c_r + p * W)) };
            }
        }
    }
    let step = |t: usize, sums: &mut [[__m512; P]; R]| {
        let mut b_t_p = [_mm512_setzero_ps(); P];
        for (p, b_t_p) in b_t_p.iter_mut().enumerate() {
            // SAFETY: p < P, t < depth: inside `b` (asserted).
            *b_t_p = unsafe { _mm512_loadu_ps(b.add(p * b_p + t * b_t)) };
        }
        for (r, sums) in sums.iter_mut().enumerate() {
            // SAFETY: r < R, t < depth: inside `a` (asserted).
            let a_r_t = _mm512_set1_ps(unsafe { *a.add(r * a_r + t * a_t) });
            for (sum, &b_t_p) in sums.iter_mut().zip(&b_t_p) {
                *sum = _mm512_fmadd_ps(a_r_t, b_t_p, *sum);
            }
        }
    };
    let mut t = 0;
    while t + 2 <= depth {
        step(t, &mut sums);
        step(t + 1, &mut sums);
        t += 2;
    }
    if t < depth {
        step(t, &mut sums);
    }
    for (r, sums) in sums.iter().enumerate() {
        for (p, &sum) in sums.iter().enumerate() {
            // SAFETY: as for the loads of `c`.
            unsafe { _mm512_storeu_ps(c.add(r * c_r + p * W), sum) };
        }
    }
}
// ANCHOR_END: block
