//! The AVX-512 kernel's phases, each timed alone: the appendix's profile.

use super::{pack_queries, scores, softmax_columns, weighted_values, Scratch, Tiles, W};

/// The seconds each phase of this loop takes alone over `pairs` of tiles
/// (query start, key start, rows, columns) of one call without the mask,
/// as `time` measures a closure: the scores (with the queries' packing), the online
/// softmax, and the weighted values. The appendix's profile.
///
/// # Safety
/// The processor must run AVX-512 ([`available`]).
#[target_feature(enable = "avx512f")]
pub(in crate::fast) unsafe fn phase_times(
    [q, k, v]: [&[f32]; 3],
    [d_k, d_v]: [usize; 2],
    (tiles, pairs): (Tiles, &[(usize, usize, usize, usize)]),
    mut time: impl FnMut(&mut dyn FnMut()) -> f64,
) -> [f64; 3] {
    let mut s = Scratch::new([d_k, d_v], tiles);
    let mut phase = |which: usize| {
        time(&mut || {
            for &(i0, j0, rows, cols) in pairs {
                let ld = rows.next_multiple_of(W);
                let (qt, ot) = (
                    &mut s.qt.get_mut()[..d_k * ld],
                    &mut s.ot.get_mut()[..d_v * ld],
                );
                let st = &mut s.st.get_mut()[..cols * ld];
                let [max, sum, alpha] =
                    [&mut s.max, &mut s.sum, &mut s.alpha].map(|x| &mut x[..ld]);
                match which {
                    0 => {
                        pack_queries(&q[i0 * d_k..(i0 + rows) * d_k], d_k, qt);
                        scores(&k[j0 * d_k..(j0 + cols) * d_k], d_k, qt, st, |_, _, _| {});
                    }
                    1 => {
                        max.fill(f32::NEG_INFINITY); // scores of 0 or earlier weights: finite
                        let _ = softmax_columns(st, ld, None, max, sum, alpha);
                    }
                    _ => {
                        weighted_values((st, ld), Some(alpha), &v[j0 * d_v..(j0 + cols) * d_v], ot)
                    }
                }
            }
        })
    };
    [phase(0), phase(1), phase(2)]
}
