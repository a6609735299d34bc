//! The AVX-512 kernel's phases, each timed alone: the appendix's profile.

use super::{
    pack_queries, scores, softmax_columns, weighted_values, weights_lagging, Scratch, Tiles, W,
};

/// The seconds each phase of this loop takes alone over `pairs` of tiles
/// (query start, key start, rows, columns) of one call without the mask,
/// as `time` measures a closure: the scores (with the queries' packing), the
/// online softmax's two passes, the weighted values, and the scores with
/// their weights computed block by block against maxima kept from earlier
/// tiles (the path of every key tile after a query tile's first). The
/// appendix's profile.
///
/// # Safety
/// The processor must run AVX-512 ([`super::available`]).
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn phase_times(
    [q, k, v]: [&[f32]; 3],
    [d_k, d_v]: [usize; 2],
    (tiles, pairs): (Tiles, &[(usize, usize, usize, usize)]),
    mut time: impl FnMut(&mut dyn FnMut()) -> f64,
) -> [f64; 4] {
    let mut s = Scratch::new([d_k, d_v], tiles);
    let mut phase = |which: usize| {
        time(&mut || {
            for &(i0, j0, rows, cols) in pairs {
                let ld = rows.next_multiple_of(W);
                let (qt, ot) = (&mut s.qt.get_mut()[..d_k * ld], &mut s.ot.get_mut()[..d_v * ld]);
                let st = &mut s.st.get_mut()[..cols * ld];
                let [max, sum, alpha, tile_sum] =
                    [&mut s.max, &mut s.sum, &mut s.alpha, &mut s.tile_sum].map(|x| &mut x[..ld]);
                let k_j = &k[j0 * d_k..(j0 + cols) * d_k];
                match which {
                    0 => {
                        pack_queries(&q[i0 * d_k..(i0 + rows) * d_k], d_k, qt);
                        scores(k_j, d_k, qt, st);
                    }
                    1 => {
                        max.fill(f32::NEG_INFINITY); // scores of 0 or earlier weights: finite
                        let _ = softmax_columns(st, ld, None, max, sum, alpha);
                    }
                    2 => {
                        weighted_values((st, ld), Some(alpha), &v[j0 * d_v..(j0 + cols) * d_v], ot)
                    }
                    _ => {
                        // Every score of the unit-variance inputs is far
                        // below the lag above a maximum of 0.
                        max.fill(0.0);
                        pack_queries(&q[i0 * d_k..(i0 + rows) * d_k], d_k, qt);
                        let _ = weights_lagging((k_j, d_k), qt, st, max, [sum, tile_sum]);
                    }
                }
            }
        })
    };
    [phase(0), phase(1), phase(2), phase(3)]
}
