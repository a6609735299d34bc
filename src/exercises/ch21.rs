//! Chapter 21, exercise 1: the tiles a causal workgroup skips.

use std::ops::Range;

use crate::error::AttnError;

// ANCHOR: key_tiles
/// Exercise 1: the tiles of `bc` keys that workgroup `workgroup` of the
/// flash kernel must load under a causal mask, when each workgroup takes
/// `br` of the `n` queries and there are `m` keys: every tile holding a
/// key that one of its queries sees (query i sees keys 0..=i), and no
/// other.
pub fn key_tiles(
    workgroup: usize,
    (br, bc): (usize, usize),
    n: usize,
    m: usize,
) -> Result<Range<usize>, AttnError> {
    if br == 0 || bc == 0 || m == 0 || workgroup >= n.div_ceil(br.max(1)) {
        return Err(AttnError::InvalidArgument {
            name: "workgroup (of n queries, br a workgroup, bc keys a tile, m keys)",
            value: workgroup as f64,
            requirement: "must be one of the ⌈n/br⌉ workgroups, with br, bc and m at least 1",
        });
    }
    let last_query = ((workgroup + 1) * br).min(n) - 1; // its last real query
    let keys = (last_query + 1).min(m); // it sees keys 0..keys
    Ok(0..keys.div_ceil(bc))
}

/// The tiles of keys the whole grid of workgroups loads, causal and not:
/// what the skip saves.
pub fn tiles_loaded(
    (br, bc): (usize, usize),
    n: usize,
    m: usize,
) -> Result<(usize, usize), AttnError> {
    key_tiles(0, (br, bc), n, m)?; // checks the sizes, with no workgroup at n = 0
    let groups = n.div_ceil(br);
    let mut causal = 0;
    for workgroup in 0..groups {
        causal += key_tiles(workgroup, (br, bc), n, m)?.len();
    }
    Ok((causal, groups * m.div_ceil(bc)))
}
// ANCHOR_END: key_tiles

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray_rand::rand::{rngs::StdRng, Rng, SeedableRng};

    /// Every tile the range names holds a key some query of the workgroup
    /// sees, and every tile outside it holds none.
    #[test]
    fn the_tiles_are_those_holding_a_key_some_query_sees() {
        let mut rng = StdRng::seed_from_u64(21);
        for _ in 0..300 {
            let (br, bc): (usize, usize) = (rng.random_range(1..9), rng.random_range(1..9));
            let (n, m): (usize, usize) = (rng.random_range(1..40), rng.random_range(1..40));
            for workgroup in 0..n.div_ceil(br) {
                let queries = workgroup * br..((workgroup + 1) * br).min(n);
                let needed = |tile: usize| {
                    let keys = tile * bc..((tile + 1) * bc).min(m);
                    keys.clone().any(|j| queries.clone().any(|i| j <= i))
                };
                let range = key_tiles(workgroup, (br, bc), n, m).unwrap();
                for tile in 0..m.div_ceil(bc) {
                    assert_eq!(
                        range.contains(&tile),
                        needed(tile),
                        "br {br}, bc {bc}, n {n}, m {m}"
                    );
                }
            }
        }
    }

    /// Causal attention loads a little over half the tiles: at n = m =
    /// 2,300 with the kernel's tiles, between a half and 0.52.
    #[test]
    fn causal_loads_about_half_the_tiles() {
        let (causal, all) = tiles_loaded((64, 32), 2_300, 2_300).unwrap();
        let share = causal as f64 / all as f64;
        assert!((0.5..0.52).contains(&share), "{causal} of {all}");
        assert!(key_tiles(3, (4, 4), 12, 5).is_err(), "workgroup 3 of 3");
        assert!(key_tiles(0, (0, 4), 12, 5).is_err(), "br = 0");
    }
}
