//! FlashAttention-2's backward pass on AVX-512: one pass, five products a
//! pair of tiles, with the AVX-512 forward pass's layout (queries across
//! the 16 lanes of a register) and its one micro-kernel
//! ([`super::avx512::block_of`]).
//!
//! For each key tile `j` and each query tile `i` that sees it:
//!
//! - `Sᵀ = K_j Q_iᵀ / √d_k` and `Pᵀ = exp(Sᵀ − lse_i)`, 0 where the mask hides a key;
//! - `dPᵀ = V_j dO_iᵀ` and `dSᵀ = Pᵀ ⊙ (dPᵀ − D_i)`;
//! - `dV_j += P_ijᵀ dO_i`, `dK_j += dS_ijᵀ Q_i / √d_k`;
//! - `dQ_iᵀ += K_jᵀ dS_ijᵀ` (and `/ √d_k` once at the end).
//!
//! The portable backward pass needs seven products, because it computes
//! `dQ` in a second pass to keep every sum in one order. Here `dQ` is
//! summed in place instead, in fixed bands of key tiles (tile `t` in band
//! `t % 8`), each with its own `dQᵀ`, added in a fixed tree at the end:
//! the bits do not depend on the number of threads, and up to eight
//! threads can share the work. The price is memory: `Q` and `dO` are
//! copied once, packed both ways, and each band being summed has a `dQᵀ`
//! (up to four at once on one thread): copies of an `n×d` matrix that
//! grow with `n`.

use ndarray::{Array2, ArrayRef2, ArrayViewMut2, Axis};

use super::avx512::{block_of, exp, for_blocks, pack_panels, scores, seen_lanes, Aligned, W};
use super::Tiles;
use std::arch::x86_64::{
    _mm512_loadu_ps, _mm512_maskz_mov_ps, _mm512_min_ps, _mm512_mul_ps, _mm512_setzero_ps,
    _mm512_storeu_ps, _mm512_sub_ps,
};

/// The bands of key tiles whose `dQ` are summed apart (fewer when there
/// are fewer key tiles): more than the threads a machine is expected to
/// have, so that every thread has a band to run.
const BANDS: usize = 8;

/// A band's key tiles: the first key of each, and its rows of `dK`, `dV`.
type KeyTiles<'a> = Vec<(usize, ArrayViewMut2<'a, f32>, ArrayViewMut2<'a, f32>)>;

/// The sum of the bands' `dQᵀ`, in a fixed tree: the first half's sum plus
/// the second half's, down to single bands, whichever threads run them.
#[target_feature(enable = "avx512f")]
fn sum_of_bands(x: &Packed, mut bands: Vec<KeyTiles>) -> Aligned {
    if bands.len() == 1 {
        return band(x, bands.pop().expect("one band"));
    }
    let second = bands.split_off(bands.len() / 2);
    let (mut first, second) = rayon::join(|| sum_of_bands(x, bands), || sum_of_bands(x, second));
    first.get_mut().iter_mut().zip(second.get()).for_each(|(a, &b)| *a += b);
    first
}

/// What every tile pair reads: the inputs, packed once.
struct Packed<'a> {
    k: &'a [f32],
    v: &'a [f32],
    qt: Aligned,        // Q/√d_k in panels of 16 queries (n rounded up to 16)
    q_rows: Aligned,    // Q/√d_k, rows of d_k rounded up to 16
    dot: Aligned,       // dO in panels of 16 queries
    do_rows: Aligned,   // dO, rows of d_v rounded up to 16
    lse: Vec<f32>,      // n rounded up to 16 (0 past n)
    d: Vec<f32>,        // D_i = rowsum(dO_i ⊙ O_i), the same
    dims: [usize; 4],   // n, m, d_k, d_v
    widths: [usize; 2], // d_k and d_v rounded up to 16
    causal: bool,
    tiles: Tiles,
}

/// The numbers of `x`, whose rows are contiguous.
fn slice(x: &ArrayRef2<f32>) -> &[f32] {
    x.as_slice().expect("standard layout")
}

/// `rows×w` rows (contiguous) times `scale` into rows of `wide` numbers,
/// aligned, zero past `w`.
fn padded_rows(x: &[f32], w: usize, wide: usize, scale: f32) -> Aligned {
    let rows = x.len() / w;
    let mut out = Aligned::zeros(rows * wide);
    for (to, from) in out.get_mut().chunks_exact_mut(wide).zip(x.chunks_exact(w)) {
        to.iter_mut().zip(from).for_each(|(t, &f)| *t = f * scale);
    }
    out
}

/// The gradients `(dQ, dK, dV)` of attention of `q` over `k`, `v` (rows
/// contiguous), from the output's gradient `d_out`, the saved `lse` and
/// `D`, with `tiles` (their query side a multiple of 16).
///
/// # Safety
/// The processor must run AVX-512 ([`super::avx512::available`]).
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn gradients(
    [q, k, v, d_out]: [&ArrayRef2<f32>; 4],
    (lse, d): (&[f32], &[f32]),
    causal: bool,
    tiles: Tiles,
) -> (Array2<f32>, Array2<f32>, Array2<f32>) {
    let [n, m, d_k, d_v] = [q.nrows(), k.nrows(), q.ncols(), v.ncols()];
    assert!(tiles.query.is_multiple_of(W), "query tiles start on a panel");
    let (n_pad, widths) = (n.next_multiple_of(W), [d_k, d_v].map(|w| w.next_multiple_of(W)));
    let scale = 1.0 / (d_k as f32).sqrt();
    let mut qt = Aligned::zeros(n_pad * d_k);
    pack_panels(slice(q), d_k, scale, qt.get_mut());
    let mut dot = Aligned::zeros(n_pad * d_v);
    pack_panels(slice(d_out), d_v, 1.0, dot.get_mut());
    let padded = |x: &[f32]| {
        let mut y = vec![0.0; n_pad];
        y[..n].copy_from_slice(x);
        y
    };
    let x = Packed {
        k: slice(k),
        v: slice(v),
        qt,
        q_rows: padded_rows(slice(q), d_k, widths[0], scale),
        dot,
        do_rows: padded_rows(slice(d_out), d_v, widths[1], 1.0),
        lse: padded(lse),
        d: padded(d),
        dims: [n, m, d_k, d_v],
        widths,
        causal,
        tiles,
    };
    let (mut dk, mut dv) = (Array2::zeros((m, d_k)), Array2::zeros((m, d_v)));
    // Key tile t goes to band t % bands, with its rows of dK and dV.
    let key_tiles = m.div_ceil(tiles.key);
    let mut bands: Vec<KeyTiles> = (0..BANDS.min(key_tiles).max(1)).map(|_| Vec::new()).collect();
    let count = bands.len();
    let dk_tiles = dk.axis_chunks_iter_mut(Axis(0), tiles.key);
    for (t, (dk_j, dv_j)) in dk_tiles.zip(dv.axis_chunks_iter_mut(Axis(0), tiles.key)).enumerate() {
        bands[t % count].push((t * tiles.key, dk_j, dv_j));
    }
    // dQ = (the bands' dQᵀ, summed pairwise)ᵀ / √d_k.
    let dqt = sum_of_bands(&x, bands);
    let mut dq = Array2::zeros((n, d_k));
    for (c, column) in dqt.get().chunks_exact(n_pad).enumerate() {
        for (i, &sum) in column[..n].iter().enumerate() {
            dq[[i, c]] = sum * scale;
        }
    }
    (dq, dk, dv)
}

/// One band's key tiles, in order: writes each tile's `dK_j`, `dV_j`, and
/// returns the band's `dQᵀ` (`d_k × n` rounded up to 16).
#[target_feature(enable = "avx512f")]
fn band(x: &Packed, key_tiles: KeyTiles) -> Aligned {
    let [n, _, d_k, d_v] = x.dims;
    let [wk, wv] = x.widths;
    let (bq, bk) = (x.tiles.query, x.tiles.key);
    let n_pad = n.next_multiple_of(W);
    let mut dqt = Aligned::zeros(d_k * n_pad);
    let (mut st, mut dst) = (Aligned::zeros(bk * bq), Aligned::zeros(bk * bq));
    let (mut dk, mut dv) = (Aligned::zeros(bk * wk), Aligned::zeros(bk * wv));
    for (j0, mut dk_j, mut dv_j) in key_tiles {
        let cols = dk_j.nrows();
        let (k_j, v_j) = (&x.k[j0 * d_k..(j0 + cols) * d_k], &x.v[j0 * d_v..(j0 + cols) * d_v]);
        let (dk, dv) = (&mut dk.get_mut()[..cols * wk], &mut dv.get_mut()[..cols * wv]);
        dk.fill(0.0);
        dv.fill(0.0);
        // Under the causal mask the queries before j0 see none of these keys.
        let first = if x.causal { j0 - j0 % bq } else { 0 };
        for i0 in (first..n).step_by(bq) {
            let rows = bq.min(n - i0);
            let ld = rows.next_multiple_of(W);
            let (st, dst) = (&mut st.get_mut()[..cols * ld], &mut dst.get_mut()[..cols * ld]);
            let lanes = i0..i0 + ld;
            scores(k_j, d_k, &x.qt.get()[i0 * d_k..(i0 + ld) * d_k], st);
            let shift = x.causal.then_some(j0 as isize - i0 as isize);
            weights(st, ld, shift, &x.lse[lanes.clone()]);
            scores(v_j, d_v, &x.dot.get()[i0 * d_v..(i0 + ld) * d_v], dst); // dPᵀ
            score_gradients(st, dst, &x.d[lanes]);
            // dV_j += Pᵀ dO_i and dK_j += dSᵀ Q_i/√d_k: key rows, d across.
            let q_i = &x.q_rows.get()[i0 * wk..];
            let do_i = &x.do_rows.get()[i0 * wv..];
            for (p, b, w, out) in [(&*st, do_i, wv, &mut *dv), (&*dst, q_i, wk, &mut *dk)] {
                for_blocks([cols, w / W], |[j, c], shape| {
                    let (a, b) = ((&p[j * ld..], [ld, 1]), (&b[c * W..], [W, w]));
                    let out = (&mut out[j * w + c * W..], w);
                    block_of(a, b, rows, out, shape, true);
                });
            }
            // dQ_iᵀ += K_jᵀ dSᵀ: coordinates down, queries across.
            for_blocks([d_k, ld / W], |[c, p], shape| {
                let (a, b) = ((&k_j[c..], [1, d_k]), (&dst[p * W..], [W, ld]));
                let out = (&mut dqt.get_mut()[c * n_pad + i0 + p * W..], n_pad);
                block_of(a, b, cols, out, shape, true);
            });
        }
        for (to, from, w) in [(&mut dk_j, &*dk, wk), (&mut dv_j, &*dv, wv)] {
            for (mut row, from) in to.rows_mut().into_iter().zip(from.chunks_exact(w)) {
                row.iter_mut().zip(from).for_each(|(t, &f)| *t = f);
            }
        }
    }
    dqt
}

/// `Pᵀ = exp(Sᵀ − lse)` on `st` (`cols×ld`), 16 queries at a time, 0 where
/// the causal mask hides a key (`shift` as in the forward pass's softmax).
#[target_feature(enable = "avx512f")]
fn weights(st: &mut [f32], ld: usize, shift: Option<isize>, lse: &[f32]) {
    let cols = st.len() / ld;
    assert!(st.len() == cols * ld && lse.len() == ld);
    for g in (0..ld).step_by(W) {
        // SAFETY: 16 numbers from g.
        let lse = unsafe { _mm512_loadu_ps(lse[g..g + W].as_ptr()) };
        for j in 0..cols {
            let seen = seen_lanes(shift, j, g);
            let at = &mut st[j * ld + g..j * ld + g + W];
            // SAFETY: 16 numbers. S ≤ lse but for rounding: P ≤ 1.
            unsafe {
                let s = _mm512_loadu_ps(at.as_ptr());
                let centred = _mm512_min_ps(_mm512_sub_ps(s, lse), _mm512_setzero_ps());
                _mm512_storeu_ps(at.as_mut_ptr(), _mm512_maskz_mov_ps(seen, exp(centred)));
            }
        }
    }
}

/// `dSᵀ = Pᵀ ⊙ (dPᵀ − D)` into `dst`, which holds `dPᵀ`; `d` per query.
#[target_feature(enable = "avx512f")]
fn score_gradients(pt: &[f32], dst: &mut [f32], d: &[f32]) {
    let ld = d.len();
    assert!(pt.len() == dst.len() && pt.len().is_multiple_of(ld));
    for (p, ds) in pt.chunks_exact(ld).zip(dst.chunks_exact_mut(ld)) {
        for ((p, ds), d) in p.chunks_exact(W).zip(ds.chunks_exact_mut(W)).zip(d.chunks_exact(W)) {
            // SAFETY: each chunk holds 16 numbers.
            unsafe {
                let centred =
                    _mm512_sub_ps(_mm512_loadu_ps(ds.as_ptr()), _mm512_loadu_ps(d.as_ptr()));
                let grad = _mm512_mul_ps(_mm512_loadu_ps(p.as_ptr()), centred);
                _mm512_storeu_ps(ds.as_mut_ptr(), grad);
            }
        }
    }
}
