//! The AVX-512 kernel's online softmax, 16 queries to a register, and its
//! exponential on 16 lanes.

use std::arch::x86_64::{
    __m512, __mmask16, _mm512_add_ps, _mm512_cmp_ps_mask, _mm512_cmpge_epi32_mask, _mm512_fmadd_ps,
    _mm512_fnmadd_ps, _mm512_loadu_ps, _mm512_mask_blend_ps, _mm512_mask_max_ps,
    _mm512_maskz_mov_ps, _mm512_max_ps, _mm512_scalef_ps, _mm512_set1_epi32, _mm512_set1_ps,
    _mm512_setr_epi32, _mm512_setzero_ps, _mm512_storeu_ps, _mm512_sub_ps, _CMP_EQ_OQ, _CMP_NLE_UQ,
    _CMP_UNORD_Q,
};

use super::W;
use crate::real::{EXP_LOWEST, EXP_POLYNOMIAL, LN2_HI, LN2_LO, LOG2_E, ROUND};

/// The online softmax of every column of `st` (`cols×ld`: one column a
/// query), 16 queries at a time: the scores become `exp(s − M_new)` (0
/// where the causal mask hides the key), `M` and `ℓ` are updated, and
/// `α = exp(M_old − M_new)` is kept for the output so far.
///
/// With `shift = Some(j0 − i0)`, key `j` is hidden from query `r` when
/// `j + shift > r`. A score of `+∞` or NaN is an error: its query and value.
#[target_feature(enable = "avx512f")]
pub(super) fn softmax_columns(
    st: &mut [f32],
    ld: usize,
    shift: Option<isize>,
    max: &mut [f32],
    sum: &mut [f32],
    alpha: &mut [f32],
) -> Result<(), (usize, f32)> {
    let cols = st.len() / ld;
    assert!(st.len() == cols * ld && [max.len(), sum.len(), alpha.len()] == [ld; 3]);
    for g in (0..ld).step_by(W) {
        // Lane l sees key j when j + shift ≤ g + l: every lane when
        // j + shift ≤ g, none when j + shift > g + 15.
        let (keys, all_from) = match shift {
            None => (cols, cols),
            Some(shift) => {
                let keys = (g as isize + W as isize - shift).clamp(0, cols as isize);
                let all = (g as isize + 1 - shift).clamp(0, keys);
                (keys as usize, all as usize)
            }
        };
        let seen_by = |j: usize| seen_lanes(shift, j, g);
        let column = |j: usize| st[j * ld + g..j * ld + g + W].as_ptr();
        // Pass 1: the maximum of each lane; x·0 + poison is NaN once an x
        // is NaN or infinite. Four of each, over every fourth key, so that
        // no step waits for the one before (a maximum takes 4 cycles).
        let mut block_max = [_mm512_set1_ps(f32::NEG_INFINITY); 4];
        let mut poison = [_mm512_setzero_ps(); 4];
        let unrolled = all_from - all_from % 4;
        for j in (0..unrolled).step_by(4) {
            for u in 0..4 {
                let x = unsafe { _mm512_loadu_ps(column(j + u)) }; // SAFETY: 16 numbers
                block_max[u] = _mm512_max_ps(x, block_max[u]);
                poison[u] = _mm512_fmadd_ps(x, _mm512_setzero_ps(), poison[u]);
            }
        }
        for j in unrolled..keys {
            let x = unsafe { _mm512_loadu_ps(column(j)) }; // SAFETY: 16 numbers
            block_max[0] = _mm512_mask_max_ps(block_max[0], seen_by(j), x, block_max[0]);
            poison[0] = _mm512_fmadd_ps(x, _mm512_setzero_ps(), poison[0]);
        }
        let pair =
            |x: [__m512; 4], f: fn(__m512, __m512) -> __m512| f(f(x[0], x[1]), f(x[2], x[3]));
        let block_max = pair(block_max, |a, b| _mm512_max_ps(a, b));
        let poison = pair(poison, |a, b| _mm512_add_ps(a, b));
        let suspect = _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(poison, poison);
        if suspect != 0 {
            check_scores(st, ld, g, keys, seen_by)?; // −∞ is allowed, +∞ and NaN are not
        }
        let old = unsafe { _mm512_loadu_ps(max[g..g + W].as_ptr()) }; // SAFETY: 16 numbers
        let new = _mm512_max_ps(old, block_max);
        // α = exp(M_old − M_new), and 1 for a query that has seen nothing yet.
        let nothing = _mm512_cmp_ps_mask::<_CMP_EQ_OQ>(new, _mm512_set1_ps(f32::NEG_INFINITY));
        let a = _mm512_mask_blend_ps(nothing, exp(_mm512_sub_ps(old, new)), _mm512_set1_ps(1.0));
        // Pass 2: the exponentials and their sum.
        let mut totals = [_mm512_setzero_ps(); 2];
        let st = st.as_mut_ptr();
        for j in 0..cols {
            // SAFETY: j < cols and g + 16 ≤ ld: inside `st` (asserted).
            let x = unsafe { _mm512_loadu_ps(st.add(j * ld + g)) };
            let e = match j {
                j if j < all_from => exp(_mm512_sub_ps(x, new)),
                j if j < keys => _mm512_maskz_mov_ps(seen_by(j), exp(_mm512_sub_ps(x, new))),
                _ => _mm512_setzero_ps(), // hidden from all 16 queries
            };
            totals[j % 2] = _mm512_add_ps(totals[j % 2], e);
            unsafe { _mm512_storeu_ps(st.add(j * ld + g), e) }; // SAFETY: as above
        }
        let l = unsafe { _mm512_loadu_ps(sum[g..g + W].as_ptr()) }; // SAFETY: 16 numbers
        let l = _mm512_fmadd_ps(l, a, _mm512_add_ps(totals[0], totals[1]));
        // SAFETY: each slice has 16 numbers from g.
        unsafe {
            _mm512_storeu_ps(sum[g..g + W].as_mut_ptr(), l);
            _mm512_storeu_ps(max[g..g + W].as_mut_ptr(), new);
            _mm512_storeu_ps(alpha[g..g + W].as_mut_ptr(), a);
        }
    }
    Ok(())
}

// ANCHOR: lagging
/// How far a score may be above its query's running maximum for a key
/// tile to keep that maximum as the softmax's reference: a weight is at
/// most `e^8 ≈ 2981`, so no weight or sum comes near the range of `f32`.
/// The output, until its final division by the sum, can be up to that
/// factor larger than with exact maxima: values near `10³⁴` could make it
/// overflow (an error) where the two passes would not.
pub(super) const LAG: f32 = 8.0;

/// The scores `Sᵀ = K_j Q_iᵀ` of a key tile (`k`, `d_k` wide) and their
/// weights against the running maxima as they stand, `e^(s − M)`: no new
/// maximum, no rescaling of the sums or of the output, and each block of
/// scores turned into weights while it is still in the L1 cache. If every
/// score is at most [`LAG`] above its query's maximum (a NaN is not),
/// adds each query's weights into `sum` and returns true; if not, returns
/// false, leaving `sum` as it was, and the caller does the tile again with
/// [`softmax_columns`].
#[target_feature(enable = "avx512f")]
pub(super) fn weights_lagging(
    (k, d_k): (&[f32], usize),
    qt: &[f32],
    st: &mut [f32],
    max: &[f32],
    [sum, tile_sum]: [&mut [f32]; 2],
) -> bool {
    let ld = max.len();
    assert!(tile_sum.len() == ld && sum.len() == ld);
    tile_sum.fill(0.0);
    let mut within = true;
    super::scores_then(k, d_k, qt, st, |st, [j, p], [rows, panels]| {
        if !within {
            return; // the tile is done again: its weights are not needed
        }
        for q in p..p + panels {
            let lanes = q * W..(q + 1) * W;
            // SAFETY (every load and store): 16 numbers from the start of
            // a range of 16 inside its slice.
            let m = unsafe { _mm512_loadu_ps(max[lanes.clone()].as_ptr()) };
            let mut total = unsafe { _mm512_loadu_ps(tile_sum[lanes.clone()].as_ptr()) };
            for r in j..j + rows {
                let at = st[r * ld + q * W..r * ld + (q + 1) * W].as_mut_ptr();
                let centred = _mm512_sub_ps(unsafe { _mm512_loadu_ps(at) }, m);
                let far = _mm512_cmp_ps_mask::<_CMP_NLE_UQ>(centred, _mm512_set1_ps(LAG));
                within &= far == 0;
                let e = exp(centred);
                total = _mm512_add_ps(total, e);
                unsafe { _mm512_storeu_ps(at, e) };
            }
            unsafe { _mm512_storeu_ps(tile_sum[lanes].as_mut_ptr(), total) };
        }
    });
    if within {
        sum.iter_mut().zip(&*tile_sum).for_each(|(s, t)| *s += t);
    }
    within
}

// ANCHOR_END: lagging

/// The lanes of the 16 queries from `g` that see key `j`: under the causal
/// mask, with `shift = Some(j0 − i0)`, query `g + l` sees key `j` when
/// `j + shift ≤ g + l`; without it, every lane.
#[target_feature(enable = "avx512f")]
pub(in crate::fast) fn seen_lanes(shift: Option<isize>, j: usize, g: usize) -> __mmask16 {
    match shift {
        Some(shift) if j as isize + shift > g as isize => {
            let first = (j as isize + shift - g as isize).min(W as isize) as i32;
            let lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
            _mm512_cmpge_epi32_mask(lanes, _mm512_set1_epi32(first))
        }
        _ => 0xFFFF,
    }
}

/// The first score of the 16 queries from `g` that is `+∞` or NaN among
/// the keys each sees, as an error: its query and its value.
fn check_scores(
    st: &[f32],
    ld: usize,
    g: usize,
    keys: usize,
    seen_by: impl Fn(usize) -> __mmask16,
) -> Result<(), (usize, f32)> {
    for j in 0..keys {
        let seen = seen_by(j);
        for l in (0..W).filter(|l| seen >> l & 1 == 1) {
            let x = st[j * ld + g + l];
            if x.is_nan() || x == f32::INFINITY {
                return Err((g + l, x));
            }
        }
    }
    Ok(())
}

/// `e^x` on 16 lanes, by [`crate::real::exp_nonpositive`]'s method
/// and coefficients, with fused multiply-adds, the polynomial in one
/// Horner chain (`1 + r(1 + r(½ + …))`), and `vscalefps` for `2^ν`. For
/// `x < EXP_LOWEST` it gives `e^EXP_LOWEST`, below `2·10⁻³⁸`, not 0.
#[target_feature(enable = "avx512f")]
pub(in crate::fast) fn exp(x: __m512) -> __m512 {
    let set = _mm512_set1_ps;
    let clamped = _mm512_max_ps(x, set(EXP_LOWEST));
    let t = _mm512_fmadd_ps(clamped, set(LOG2_E), set(ROUND));
    let nu = _mm512_sub_ps(t, set(ROUND)); // ν = round(x / ln 2)
    let r = _mm512_fnmadd_ps(nu, set(LN2_HI), clamped);
    let r = _mm512_fnmadd_ps(nu, set(LN2_LO), r); // |r| ≤ ln 2 / 2
    let e_r = EXP_POLYNOMIAL[1..]
        .iter()
        .chain(&[1.0, 1.0])
        .fold(set(EXP_POLYNOMIAL[0]), |p, &c| _mm512_fmadd_ps(p, r, set(c)));
    _mm512_scalef_ps(e_r, nu) // e^r · 2^ν
}
