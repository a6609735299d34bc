//! Chapter 19, exercises 1 and 2: serving attention.

use crate::error::AttnError;
use crate::lm::{acceptance, residual};

// ANCHOR: token_in_row
/// Exercise 1: the token of a sequence that row `row` of the pool holds,
/// the inverse of [`crate::paging::BlockTable::slot`]: the sequence's
/// `blocks`, in order, hold its `len` tokens, `block_size` to a block.
/// `None` when the row belongs to no block of the table, or to a place in
/// its last block that no token has reached yet.
pub fn token_in_row(
    blocks: &[usize],
    block_size: usize,
    len: usize,
    row: usize,
) -> Result<Option<usize>, AttnError> {
    if block_size == 0 || len > blocks.len().saturating_mul(block_size) {
        return Err(AttnError::InvalidArgument {
            name: "tokens of the table (len)",
            value: len as f64,
            requirement: "must fit its blocks, of a block size of at least 1",
        });
    }
    let (block, offset) = (row / block_size, row % block_size);
    let Some(i) = blocks.iter().position(|&b| b == block) else {
        return Ok(None); // another sequence's row, or a free one
    };
    let t = i * block_size + offset;
    Ok((t < len).then_some(t))
}
// ANCHOR_END: token_in_row

// ANCHOR: emitted
/// Exercise 2: the exact distribution of the token that speculative
/// sampling writes in place of a draft token `x` drawn from `q`, when the
/// target's distribution is `p`: `x` kept with probability
/// `min(1, p(x)/q(x))`, else a token drawn from the residual. Summed over
/// every `x` the draft can draw, it is `p`.
pub fn emitted(p: &[f64], q: &[f64]) -> Result<Vec<f64>, AttnError> {
    let residual = residual(p, q)?; // checks that p and q are distributions
    let mut out = vec![0.0; p.len()];
    let mut rejected = 0.0; // the probability that the draft token is rejected
    for x in (0..q.len()).filter(|&x| q[x] > 0.0) {
        let keep = acceptance(p, q, x)?;
        out[x] += q[x] * keep;
        rejected += q[x] * (1.0 - keep);
    }
    for (o, r) in out.iter_mut().zip(&residual) {
        *o += rejected * r;
    }
    Ok(out)
}
// ANCHOR_END: emitted

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paging::{BlockPool, BlockTable};
    use ndarray_rand::rand::{rngs::StdRng, Rng, SeedableRng};

    /// Every token of a table lives in the row its `slot` names, and every
    /// other row of the pool holds none of its tokens.
    #[test]
    fn the_row_of_every_token_leads_back_to_it() {
        let mut rng = StdRng::seed_from_u64(19);
        for _ in 0..50 {
            let (b, len) = (rng.random_range(1..6), rng.random_range(0..30));
            let mut pool = BlockPool::new(64, b).unwrap();
            let mut other = BlockTable::new(&pool);
            let mut table = BlockTable::new(&pool);
            for _ in 0..len {
                other.push(&mut pool).unwrap(); // interleaved, so the blocks are scattered
                table.push(&mut pool).unwrap();
            }
            let mut found = 0;
            for row in 0..64 * b {
                if let Some(t) = token_in_row(table.blocks(), b, len, row).unwrap() {
                    assert_eq!(table.slot(t).unwrap(), row, "B = {b}, len = {len}");
                    found += 1;
                }
            }
            assert_eq!(found, len);
        }
        assert!(token_in_row(&[0], 0, 0, 0).is_err());
        assert!(token_in_row(&[0], 4, 5, 0).is_err());
    }

    /// Whatever the draft, the token written is distributed as the
    /// target's: also where the draft gives a token no chance.
    #[test]
    fn the_emitted_distribution_is_the_targets() {
        let mut rng = StdRng::seed_from_u64(19);
        let mut distribution = |n: usize, zeros: bool| {
            let mut d: Vec<f64> = (0..n)
                .map(|_| if zeros && rng.random::<f64>() < 0.3 { 0.0 } else { rng.random() })
                .collect();
            d[0] += 0.1; // never all zero
            let total: f64 = d.iter().sum();
            d.iter().map(|x| x / total).collect::<Vec<f64>>()
        };
        for n in [1, 2, 5, 84] {
            for zeros in [false, true] {
                let (p, q) = (distribution(n, zeros), distribution(n, zeros));
                let e = emitted(&p, &q).unwrap();
                let worst = e.iter().zip(&p).map(|(e, p)| (e - p).abs()).fold(0.0, f64::max);
                assert!(worst < 1e-14, "n = {n}: {worst}");
            }
        }
        // Keeping every draft token would write q, not p.
        let (p, q) = ([0.5, 0.5], [0.9, 0.1]);
        let e = emitted(&p, &q).unwrap();
        assert!((e[0] - 0.5).abs() < 1e-15 && (e[1] - 0.5).abs() < 1e-15, "{e:?}");
        assert!(emitted(&[0.5, 0.5], &[1.0]).is_err());
    }
}
