//! The training stack's matrix product written for AVX-512, the processors
//! whose vector registers hold 16 `f32`: twice the numbers per instruction
//! of the 256-bit kernels the `gemm` crate runs on a stable compiler (it
//! keeps its AVX-512 kernels behind its `nightly` feature). It and
//! [`super::matmul_gemm`] are a named pair, tested bit for bit equal at every shape
//! chapter 16's training step multiplies; [`super::matmul`] chooses this
//! one for `f32` where the processor has AVX-512.
//!
//! The product `C = A B` is cut as BLIS cuts it (Van Zee and van de Geijn,
//! 2015), with the appendix's micro-kernel shape:
//!
//! - `B` is packed once into panels of [`NR`] columns (4 registers), each
//!   panel's `k` rows one after the other, zeros past the last column;
//! - [`block`] multiplies [`MR`] rows of `A`, read where they are (each
//!   number broadcast to a register), by one panel over one *chain* of the
//!   `k` steps: 6 rows by 64 columns in 24 registers, one number of `A`
//!   times four registers of `B` at each step. (Packing `A` as well, as
//!   BLIS does, cost a quarter of the kernel's time at the training
//!   stack's narrow shapes, where each number of `A` meets only 128
//!   columns.)
//!
//! Each entry of `C` is the sum of its chains' sums in order of `k`, each
//! chain one multiply-add after another in order of `k`, from zero. The
//! caller gives the chain's length: `gemm`'s own, so that the two give the
//! same bits, whatever the band or the thread.

use std::arch::x86_64::{
    __m512, _mm512_add_ps, _mm512_fmadd_ps, _mm512_loadu_ps, _mm512_mask_storeu_ps,
    _mm512_maskz_loadu_ps, _mm512_set1_ps, _mm512_setzero_ps,
};

use ndarray::{ArrayView2, ArrayViewMut2, Axis};
use rayon::prelude::*;

/// Lanes of one register of `f32`.
pub(crate) const W: usize = 16;

/// Rows of `A` a [`block`] takes: 6 rows by 4 registers are 24 accumulators,
/// with room for the 4 registers of `B` and the broadcast number.
pub(crate) const MR: usize = 6;

/// Columns of a panel of `B`: 4 registers.
pub(crate) const NR: usize = 4 * W;

/// Whether this processor runs AVX-512.
pub(crate) fn available() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
}

/// `len` numbers aligned to 64 bytes, inside a vector 16 longer, so that
/// no load of 16 `f32` straddles two cache lines.
pub(crate) struct Aligned {
    buffer: Vec<f32>,
    start: usize,
    len: usize,
}

impl Aligned {
    pub(crate) fn zeros(len: usize) -> Aligned {
        let buffer = vec![0.0; len + W];
        let start = buffer.as_ptr().align_offset(64);
        assert!(start < W, "f32 is 4-aligned, so 64 is 16 away at most");
        Aligned { buffer, start, len }
    }

    pub(crate) fn get(&self) -> &[f32] {
        &self.buffer[self.start..self.start + self.len]
    }

    pub(crate) fn get_mut(&mut self) -> &mut [f32] {
        &mut self.buffer[self.start..self.start + self.len]
    }
}

/// `B` (`k×n`, any strides) in panels of [`NR`] columns: panel `j`'s row
/// `p` is `NR` numbers at `(j·k + p)·NR`, zeros past `B`'s last column.
#[inline(never)]
fn pack_b(b: ArrayView2<f32>, out: &mut [f32]) {
    let (k, n) = b.dim();
    assert!(out.len() >= n.div_ceil(NR) * k * NR);
    let ((rs, cs), base) = ((b.strides()[0], b.strides()[1]), b.as_ptr());
    for (j, panel) in out.chunks_exact_mut(k * NR).take(n.div_ceil(NR)).enumerate() {
        let cols = NR.min(n - j * NR);
        for (p, row) in panel.chunks_exact_mut(NR).enumerate() {
            for (col, x) in row.iter_mut().enumerate() {
                let at = (p as isize) * rs + ((j * NR + col) as isize) * cs;
                // SAFETY: `p < k` and `j·NR + col < n`: inside the view.
                *x = if col < cols { unsafe { *base.offset(at) } } else { 0.0 };
            }
        }
    }
}

/// `c ← a·b`: `a` is `m×k` and `b` is `k×n`, any strides; `c` is `m×n`,
/// rows contiguous, and its entries are only written. With more than one
/// of the pool's `threads`, bands of `c`'s rows go to the threads, `B`
/// packed once for all of them. Each entry is summed in chains of `chain`
/// steps of `k`.
///
/// # Panics
/// If the processor lacks AVX-512 ([`available`]) or the shapes differ:
/// its caller checks both.
pub(crate) fn product(
    mut c: ArrayViewMut2<f32>,
    a: ArrayView2<f32>,
    b: ArrayView2<f32>,
    threads: usize,
    chain: usize,
) {
    assert!(available(), "the caller checks the processor");
    let ((m, k), n) = (a.dim(), b.ncols());
    assert!(b.nrows() == k && c.dim() == (m, n), "the caller checks the shapes");
    if m == 0 || n == 0 {
        return;
    }
    assert!(c.strides()[1] == 1 || n == 1, "c's rows are contiguous");
    if k == 0 {
        c.fill(0.0);
        return;
    }
    let rows = m.div_ceil(threads.max(1)).next_multiple_of(MR);
    let mut packed_b = Aligned::zeros(n.div_ceil(NR) * k * NR);
    pack_b(b, packed_b.get_mut());
    let packed_b = packed_b.get();
    // SAFETY: AVX-512 is available (asserted above); `packed_b` holds every
    // panel of `B`, and each band is `c`'s rows of `a`.
    let band = |(c, a)| unsafe { band_product(c, a, packed_b, chain.max(1)) };
    let bands = c.axis_chunks_iter_mut(Axis(0), rows).zip(a.axis_chunks_iter(Axis(0), rows));
    if rows < m {
        bands.collect::<Vec<_>>().into_par_iter().for_each(band);
    } else {
        bands.for_each(band);
    }
}

/// One band of `c`'s rows: the same rows of `a` times every packed panel
/// of `B`, `chain` steps of `k` at a time.
///
/// # Safety
/// The processor must run AVX-512; `b` must be all of `B` packed as
/// [`pack_b`] packs it.
#[inline(never)]
#[target_feature(enable = "avx512f")]
unsafe fn band_product(mut c: ArrayViewMut2<f32>, a: ArrayView2<f32>, b: &[f32], chain: usize) {
    let ((m, n), k) = (c.dim(), a.ncols());
    assert!(a.nrows() == m && b.len() >= n.div_ceil(NR) * k * NR);
    let ldc = if m > 1 { c.strides()[0] as usize } else { n };
    let (c, [rs, cs]) = (c.as_mut_ptr(), [a.strides()[0], a.strides()[1]]);
    for p0 in (0..k).step_by(chain) {
        let steps = chain.min(k - p0);
        for j in 0..n.div_ceil(NR) {
            let panel = &b[(j * k + p0) * NR..][..steps * NR];
            let masks = column_masks(n - j * NR);
            for i in 0..m.div_ceil(MR) {
                let rows = MR.min(m - i * MR);
                // Rows i·MR.., from column p0: a row past the last repeats
                // it (its sums are never stored).
                let a_rows: [*const f32; MR] = std::array::from_fn(|r| {
                    let at = (i * MR + r.min(rows - 1)) as isize * rs + p0 as isize * cs;
                    // SAFETY: that row and column are inside `a`.
                    unsafe { a.as_ptr().offset(at) }
                });
                // SAFETY: the tile's `rows` rows and masked columns lie
                // inside `c` (rows `i·MR..`, columns `j·NR..`, `ldc` apart),
                // and `steps` columns of each row pointer inside `a`.
                let tile = unsafe { c.add(i * MR * ldc + j * NR) };
                unsafe { block((a_rows, cs), panel, (tile, ldc), rows, masks, p0 > 0) };
            }
        }
    }
}

/// Which of a panel's 4 registers' lanes hold one of `cols` columns.
fn column_masks(cols: usize) -> [u16; 4] {
    std::array::from_fn(|r| {
        let lanes = cols.saturating_sub(r * W).min(W);
        ((1u32 << lanes) - 1) as u16
    })
}

/// The micro-kernel: [`MR`] rows of `A` (from `a`'s pointers, `cs`
/// apart along a row) times a panel of [`NR`] columns over
/// `panel.len() / NR` steps, `C ← S` or, with `accumulate`, `C ← C + S`,
/// only `rows` rows and the `masks`' columns stored.
///
/// # Safety
/// The processor must run AVX-512; each row pointer must have the panel's
/// steps of numbers `cs` apart; `c` must hold `rows` rows `ldc` apart,
/// each with the columns `masks` keep.
#[target_feature(enable = "avx512f")]
unsafe fn block(
    (a, cs): ([*const f32; MR], isize),
    panel: &[f32],
    (c, ldc): (*mut f32, usize),
    rows: usize,
    masks: [u16; 4],
    accumulate: bool,
) {
    let steps = panel.len() / NR;
    assert!(rows <= MR);
    let mut acc = [[_mm512_setzero_ps(); 4]; MR];
    for p in 0..steps {
        // SAFETY: `p·NR + 64 ≤ panel.len()`.
        let b: [__m512; 4] =
            std::array::from_fn(|r| unsafe { _mm512_loadu_ps(panel.as_ptr().add(p * NR + r * W)) });
        for (row, acc) in acc.iter_mut().enumerate() {
            // SAFETY: `p < steps`, which the caller promises each row has.
            let a = _mm512_set1_ps(unsafe { *a[row].offset(p as isize * cs) });
            for (acc, b) in acc.iter_mut().zip(b) {
                *acc = _mm512_fmadd_ps(a, b, *acc);
            }
        }
    }
    for (row, acc) in acc.iter().enumerate().take(rows) {
        for (r, (&acc, &mask)) in acc.iter().zip(&masks).enumerate() {
            // SAFETY: the caller promises row `row`'s masked lanes.
            unsafe {
                let at = c.add(row * ldc + r * W);
                let sum = match accumulate {
                    true => _mm512_add_ps(_mm512_maskz_loadu_ps(mask, at), acc),
                    false => acc,
                };
                _mm512_mask_storeu_ps(at, mask, sum);
            }
        }
    }
}
