//! Chapter 9's printed tables, and the parameters its example, its
//! exercises and its numbers test share.

use attn::approximate::ErrorRow;
use attn::error::AttnError;
use attn::masking::{causal_mask, masked_attention};
use attn::scaled_dot_product_attention;
use attn::scaling::standard_normal;
use attn::tiled::tiled_attention;
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

use crate::show::table;

/// The length of the error experiment: its queries and keys.
pub const ERROR_LENGTH: usize = 1024;
/// The seed of the error experiment's random inputs.
pub const ERROR_SEED: u64 = 7;

/// Exercise 3's window.
pub const EXERCISE_WINDOW: usize = 256;
/// Exercise 3's sequence length.
pub const EXERCISE_LENGTH: usize = 4096;

/// The largest difference between tiled attention and exact attention
/// (chapter 2's function, and chapter 6's with a causal mask) on random
/// inputs of shapes `(n, m, d_k, d_v)` below, at and across the tiles: what
/// "the same outputs to rounding" means in chapters 8 and 9.
pub fn largest_tiled_difference() -> Result<f32, AttnError> {
    let mut rng = StdRng::seed_from_u64(77);
    let mut worst = 0.0_f32;
    for (n, m, d_k, d_v) in
        [(5, 3, 4, 2), (128, 256, 64, 64), (130, 300, 16, 8), (257, 513, 64, 32)]
    {
        let q = standard_normal(n, d_k, &mut rng);
        let k = standard_normal(m, d_k, &mut rng);
        let v = standard_normal(m, d_v, &mut rng);
        let naive = scaled_dot_product_attention(&q, &k, &v)?.output;
        let causal = masked_attention(&q, &k, &v, &causal_mask(n, m))?.output;
        for (exact, masked) in [(naive, false), (causal, true)] {
            let tiled = tiled_attention(&q, &k, &v, masked)?;
            worst = worst.max((&tiled - &exact).fold(0.0, |a, &x| a.max(x.abs())));
        }
    }
    Ok(worst)
}

/// The error table the chapter prints.
pub fn error_table(rows: &[ErrorRow]) -> String {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| vec![r.method.clone(), format!("{:.3}", r.random), format!("{:.3}", r.local)])
        .collect();
    table(&["method", "random Q, K", "Q = K = 2·PE"], &cells)
}
