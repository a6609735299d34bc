//! Chapter 7's parameters, shared by its example and its numbers test, and
//! the look-back experiment: a layer whose `W_Q W_Kᵀ` is the offset map
//! `M_Δ`, given the encoding alone and the encoding plus random content.

use attn::position::{look_back_scores, sinusoidal};
use attn::scaling::standard_normal;
use ndarray::ArrayRef2;
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

use crate::error::ReportError;
use crate::show::table;

/// The permutation the example applies to 7 tokens: row `r` of the
/// permuted input is row `PERMUTATION[r]` of the input.
pub const PERMUTATION: [usize; 7] = [3, 0, 6, 2, 5, 1, 4];
/// Figure 7.1's encoding: positions and width.
pub const SINUSOIDAL_FIGURE: (usize, usize) = (64, 128);
/// Figure 7.2's positions (0 to `CURVE_POSITIONS − 1`) and width.
pub const CURVE_POSITIONS: usize = 101;
/// Figure 7.2's width.
pub const CURVE_WIDTH: usize = 128;
/// Figure 7.3's largest distance.
pub const SIMILARITY_DISTANCE: usize = 400;
/// The numbers of heads whose ALiBi slopes the example prints; Figure 7.4
/// shows heads of the first.
pub const SLOPE_HEADS: [usize; 2] = [8, 12];
/// Figure 7.4's heads, counted from 0, of `SLOPE_HEADS[0]`.
pub const FIGURE_HEADS: [usize; 4] = [0, 1, 3, 7];
/// Quiz 3's distance between a key and its query, in a model with
/// `SLOPE_HEADS[0]` ALiBi heads.
pub const QUIZ_DISTANCE: usize = 512;
/// The width of the encodings of the offset-map check and the look-back
/// experiment.
pub const OFFSET_WIDTH: usize = 64;
/// Their positions: 0 to `OFFSET_POSITIONS − 1`.
pub const OFFSET_POSITIONS: usize = 200;
/// The offsets Δ both use.
pub const OFFSETS: [usize; 4] = [1, 5, 17, 99];
/// The width whose range of frequencies the example prints (the original
/// Transformer's `d_model`).
pub const RANGE_WIDTH: usize = 512;
/// Figure 7.2's dimensions of the encoding at `d_model = 128`.
pub const CURVE_DIMENSIONS: [usize; 4] = [10, 11, 20, 40];
/// Figure 7.3's widths.
pub const SIMILARITY_WIDTHS: [usize; 3] = [64, 128, 512];
/// The RoPE table's positions: (query `i`, key `j`).
pub const ROPE_POSITIONS: [(usize, usize); 4] = [(5, 2), (105, 102), (1005, 1002), (2, 5)];
/// Figure 7.4's positions: 0 to `ALIBI_POSITIONS − 1`.
pub const ALIBI_POSITIONS: usize = 8;
/// The seed of the look-back experiment's random content.
pub const CONTENT_SEED: u64 = 70;

/// One row of the look-back experiment: an offset Δ, the number of
/// queries that have a key Δ positions back (`i ≥ Δ`), and how many of
/// them score that key highest, with the encoding alone and with random
/// content added to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LookBack {
    /// The offset Δ.
    pub delta: usize,
    /// The queries `i ≥ Δ`.
    pub queries: usize,
    /// Those whose highest score is key `i − Δ`, for inputs `X = PE`.
    pub alone: usize,
    /// The same, for `X = PE + content`.
    pub with_content: usize,
}

/// How many queries `i ≥ delta` give key `i − delta` their highest score.
pub fn peaks_at_offset(scores: &ArrayRef2<f32>, delta: usize) -> usize {
    (delta..scores.nrows())
        .filter(|&i| {
            let row = scores.row(i);
            let best = (0..row.len()).max_by(|&a, &b| row[a].total_cmp(&row[b]));
            best == Some(i - delta)
        })
        .count()
}

/// The look-back experiment at [`OFFSET_WIDTH`] over [`OFFSET_POSITIONS`],
/// for each of [`OFFSETS`]: the content is a matrix of standard normal
/// entries (standard deviation 1), drawn once with [`CONTENT_SEED`].
pub fn look_back() -> Result<Vec<LookBack>, ReportError> {
    let pe = sinusoidal(OFFSET_POSITIONS, OFFSET_WIDTH)?;
    let content =
        standard_normal(OFFSET_POSITIONS, OFFSET_WIDTH, &mut StdRng::seed_from_u64(CONTENT_SEED));
    let x = &pe + &content;
    OFFSETS
        .iter()
        .map(|&delta| {
            Ok(LookBack {
                delta,
                queries: OFFSET_POSITIONS - delta,
                alone: peaks_at_offset(&look_back_scores(&pe, delta)?, delta),
                with_content: peaks_at_offset(&look_back_scores(&x, delta)?, delta),
            })
        })
        .collect()
}

/// The block the example prints for [`look_back`]'s rows.
pub fn look_back_block(rows: &[LookBack]) -> String {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.delta.to_string(),
                format!("{} of {}", r.alone, r.queries),
                format!("{} of {}", r.with_content, r.queries),
            ]
        })
        .collect();
    format!(
        "W_Q W_Kᵀ = M_Δ, d_model = {OFFSET_WIDTH}, positions 0 to {}:\n\
         queries i ≥ Δ whose highest score is key i − Δ\n{}",
        OFFSET_POSITIONS - 1,
        table(&["Δ", "X = PE", "X = PE + content"], &cells)
    )
}
