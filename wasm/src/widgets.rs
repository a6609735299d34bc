//! What each interactive figure computes, with the crate's own functions.
//! Everything here is safe Rust over `attn`; the pages reach it through
//! [`crate::abi`], and the golden test runs it natively. A widget's fixed
//! data (keys, seeds, sizes) lives here too, so that the page's script
//! only draws.

use attn::error::AttnError;
use attn::exercises::ch02::softmax_with_temperature;
use attn::exercises::ch06::sliding_window_mask;
use attn::masking::{
    causal_mask, causal_mask_bottom_right, key_padding_mask, masked_attention, Padding,
};
use attn::position::rope;
use attn::scaled_dot_product_attention;
use attn::scaling::{frobenius_norm, softmax_jacobian, standard_normal};
use attn::softmax::softmax_rows;
use attn::vision::{Vit, PIXELS};
use ndarray::{s, Array1, Array2};
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

/// Chapter 2's widget: four keys in the plane, each its own value
/// (`V = K`), so the output is a point too, inside the keys' hull.
pub const KEYS: [[f32; 2]; 4] = [[-2.0, 1.5], [2.0, 2.0], [1.5, -2.0], [-1.0, -1.5]];

/// Chapter 2: one query `[x, y]` against [`KEYS`], `d_k = 2`. Returns the
/// four weights and the output point, from `scaled_dot_product_attention`.
pub fn query_among_keys(query: [f32; 2]) -> Result<(Vec<f32>, [f32; 2]), AttnError> {
    let q = Array2::from_shape_fn((1, 2), |(_, c)| query[c]);
    let k = Array2::from_shape_fn((KEYS.len(), 2), |(j, c)| KEYS[j][c]);
    let attention = scaled_dot_product_attention(&q, &k, &k)?;
    let output = [attention.output[[0, 0]], attention.output[[0, 1]]];
    Ok((attention.weights.row(0).to_vec(), output))
}

/// Chapter 3's widget: the number of keys, and the widest `d_k` its slider
/// reaches.
pub const SATURATION_KEYS: usize = 8;
/// The widest `d_k` of chapter 3's widget.
pub const SATURATION_MAX_D_K: usize = 1024;
const SATURATION_SEED: u64 = 3;

/// What chapter 3's widget shows for one setting.
#[derive(Debug, Clone, PartialEq)]
pub struct Saturation {
    /// `softmax(s / τ)` of the [`SATURATION_KEYS`] scores.
    pub weights: Vec<f32>,
    /// The scores `s_j = q · k_j`, unscaled.
    pub scores: Vec<f32>,
    /// `‖J‖_F`, the Frobenius norm of the softmax's Jacobian at `weights`.
    pub jacobian_norm: f64,
    /// The largest weight (1 when the softmax saturates, `1/8` uniform).
    pub largest: f32,
}

/// Chapter 3: a query and [`SATURATION_KEYS`] keys with `N(0, 1)` entries
/// (the first `d_k` of [`SATURATION_MAX_D_K`] fixed draws, so that moving
/// the slider adds dimensions rather than drawing new vectors), their
/// scores divided by the temperature `tau`, the softmax and its Jacobian's
/// norm. `tau = √d_k` is chapter 3's scaling; `tau = 1`, none.
pub fn saturation(d_k: usize, tau: f32) -> Result<Saturation, AttnError> {
    if d_k == 0 || d_k > SATURATION_MAX_D_K {
        return Err(AttnError::InvalidArgument {
            name: "d_k",
            value: d_k as f64,
            requirement: "must be from 1 to 1024, the widget's widest",
        });
    }
    let mut rng = StdRng::seed_from_u64(SATURATION_SEED);
    let q = standard_normal(1, SATURATION_MAX_D_K, &mut rng);
    let k = standard_normal(SATURATION_KEYS, SATURATION_MAX_D_K, &mut rng);
    let scores: Array1<f32> = k.slice(s![.., ..d_k]).dot(&q.slice(s![0, ..d_k]));
    let weights = softmax_with_temperature(&scores, tau)?;
    let jacobian_norm = frobenius_norm(&softmax_jacobian(&weights)?);
    let largest = weights.iter().copied().fold(0.0, f32::max);
    Ok(Saturation { weights: weights.to_vec(), scores: scores.to_vec(), jacobian_norm, largest })
}

/// The masks of chapter 6's widget.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MaskKind {
    /// Every key kept.
    None,
    /// `causal_mask`: query `i` sees keys `0..=i`.
    Causal,
    /// `causal_mask_bottom_right`: the queries are the last `n` of `m` keys.
    BottomRight,
    /// Chapter 6's exercise 1: the last `w` positions (square, `m = n`).
    Window(usize),
    /// `key_padding_mask`: the first `len` keys are real, the rest padding.
    Padding(usize),
}

impl MaskKind {
    /// The kind from the page's numbers: `kind` 0 to 4 in the order above,
    /// `param` the window or the real length.
    pub fn from_code(kind: u32, param: usize) -> Result<MaskKind, AttnError> {
        Ok(match kind {
            0 => MaskKind::None,
            1 => MaskKind::Causal,
            2 => MaskKind::BottomRight,
            3 => MaskKind::Window(param),
            4 => MaskKind::Padding(param),
            _ => {
                return Err(AttnError::InvalidArgument {
                    name: "mask kind",
                    value: f64::from(kind),
                    requirement:
                        "must be 0 (none), 1 (causal), 2 (bottom right), 3 (window) or 4 (padding)",
                })
            }
        })
    }
}

/// The largest `n` and `m` of chapter 6's widget.
pub const MASK_MAX: usize = 8;
const MASK_SEED: u64 = 6;

/// What chapter 6's widget shows: the mask and the weights, `n×m` each,
/// row by row, and which queries have every key masked (their weights are
/// zero, and so is their output).
#[derive(Debug, Clone, PartialEq)]
pub struct Masked {
    /// `true` where query `i` may attend to key `j`.
    pub keep: Vec<bool>,
    /// The weights of `masked_attention`.
    pub weights: Vec<f32>,
    /// For each query, whether the mask drops every key.
    pub blind: Vec<bool>,
}

/// Chapter 6: the mask of `kind` for `n` queries over `m` keys (a window
/// is square: `m` must equal `n`), and the weights of `masked_attention`
/// with it on fixed random `Q`, `K`, `V` (`d = 4`).
pub fn masked_weights(kind: MaskKind, n: usize, m: usize) -> Result<Masked, AttnError> {
    for (name, size) in [("n", n), ("m", m)] {
        if size == 0 || size > MASK_MAX {
            return Err(AttnError::InvalidArgument {
                name,
                value: size as f64,
                requirement: "must be from 1 to 8, the widget's largest",
            });
        }
    }
    if matches!(kind, MaskKind::Window(_)) && m != n {
        return Err(AttnError::InvalidArgument {
            name: "m",
            value: m as f64,
            requirement: "must equal n for a sliding window: each query is one of the keys",
        });
    }
    let keep = match kind {
        MaskKind::None => Array2::from_elem((n, m), true),
        MaskKind::Causal => causal_mask(n, m),
        MaskKind::BottomRight => causal_mask_bottom_right(n, m)?,
        MaskKind::Window(w) => sliding_window_mask(n, w)?,
        MaskKind::Padding(len) => key_padding_mask(n, len, m, Padding::Right)?,
    };
    let mut rng = StdRng::seed_from_u64(MASK_SEED);
    let q = standard_normal(MASK_MAX, 4, &mut rng);
    let k = standard_normal(MASK_MAX, 4, &mut rng);
    let v = standard_normal(MASK_MAX, 4, &mut rng);
    let (q, k, v) = (q.slice(s![..n, ..]), k.slice(s![..m, ..]), v.slice(s![..m, ..]));
    let attention = masked_attention(&q, &k, &v, &keep)?;
    Ok(Masked {
        keep: keep.iter().copied().collect(),
        weights: attention.weights.iter().copied().collect(),
        blind: keep.rows().into_iter().map(|row| !row.iter().any(|&k| k)).collect(),
    })
}

/// The width of chapter 7's query and key, and the largest position its
/// sliders reach.
pub const ROPE_D: usize = 8;
/// The largest position of chapter 7's widget.
pub const ROPE_MAX_POSITION: usize = 63;
const ROPE_SEED: u64 = 7;

/// What chapter 7's widget shows for one pair of positions.
#[derive(Debug, Clone, PartialEq)]
pub struct RopeScore {
    /// `RoPE(q, p_q) · RoPE(k, p_k)`.
    pub score: f32,
    /// `p_q − p_k`, the only thing the score depends on.
    pub offset: i64,
    /// The rotated query, [`ROPE_D`] wide.
    pub q: Vec<f32>,
    /// The rotated key.
    pub k: Vec<f32>,
}

/// Chapter 7: a fixed random query at position `p_q` and key at `p_k`,
/// each rotated by `rope`, and their dot product, which depends only on
/// `p_q − p_k`.
pub fn rope_score(p_q: usize, p_k: usize) -> Result<RopeScore, AttnError> {
    for (name, p) in [("query position", p_q), ("key position", p_k)] {
        if p > ROPE_MAX_POSITION {
            return Err(AttnError::InvalidArgument {
                name,
                value: p as f64,
                requirement: "must be at most 63, the widget's last position",
            });
        }
    }
    let mut rng = StdRng::seed_from_u64(ROPE_SEED);
    let q = standard_normal(1, ROPE_D, &mut rng);
    let k = standard_normal(1, ROPE_D, &mut rng);
    let (q, k) = (rope(&q, p_q)?, rope(&k, p_k)?);
    Ok(RopeScore {
        score: q.row(0).dot(&k.row(0)),
        offset: p_q as i64 - p_k as i64,
        q: q.into_raw_vec_and_offset().0,
        k: k.into_raw_vec_and_offset().0,
    })
}

/// Chapter 7: the score against the offset `o = p_q − p_k` for every `o`
/// from `−ROPE_MAX_POSITION` to `ROPE_MAX_POSITION`, each measured with
/// the earlier of the two at position 0.
pub fn rope_curve() -> Result<Vec<f32>, AttnError> {
    let max = ROPE_MAX_POSITION as i64;
    (-max..=max)
        .map(|o| rope_score(o.max(0) as usize, (-o).max(0) as usize).map(|r| r.score))
        .collect()
}

/// What chapter 20's widget shows for a drawn digit.
#[derive(Debug, Clone, PartialEq)]
pub struct DigitReading {
    /// The probability of each digit, 0 to 9.
    pub probabilities: Vec<f32>,
    /// Each head's weights from `[CLS]` over the patches in the last
    /// block: `heads × P`, head by head, patch `j` at row `j / g`, column
    /// `j mod g` of the grid.
    pub attention: Vec<f32>,
}

/// Chapter 20: the ViT's reading of `pixels` (64 of them, row by row, each
/// 0 to 16): its probabilities and its last block's `[CLS]` attention.
pub fn read_digit(model: &Vit<f32>, pixels: &[u8]) -> Result<DigitReading, AttnError> {
    let image: [u8; PIXELS] = pixels.try_into().map_err(|_| AttnError::InvalidArgument {
        name: "pixels",
        value: pixels.len() as f64,
        requirement: "must be 64, an 8×8 image row by row",
    })?;
    let fwd = model.forward(&[image])?;
    let probabilities = softmax_rows(fwd.logits())?.row(0).to_vec();
    let c = model.config();
    let mut attention = Vec::with_capacity(c.heads * c.patches());
    for head in 0..c.heads {
        attention.extend(fwd.weights(c.layers - 1, 0, head)?.row(0).iter().skip(1));
    }
    Ok(DigitReading { probabilities, attention })
}

/// Chapter 20's example digits: the first test images, as
/// `book/data/ch20-digits.tsv` keeps them (label, then 64 pixels).
const EXAMPLE_DIGITS: &str = include_str!("../../book/data/ch20-digits.tsv");

/// Chapter 20: example digit `i`: its label, then its 64 pixels.
pub fn example_digit(i: usize) -> Result<Vec<u8>, AttnError> {
    let lines: Vec<&str> = EXAMPLE_DIGITS.lines().filter(|l| !l.starts_with('#')).collect();
    let line = lines.get(i).ok_or(AttnError::OutOfRange {
        name: "example digit",
        value: i,
        requirement: "must be one of the examples",
        limit: lines.len(),
    })?;
    let bad = || AttnError::InvalidArgument {
        name: "example digit",
        value: i as f64,
        requirement: "must be a label and 64 pixels (book/data/ch20-digits.tsv)",
    };
    let (label, pixels) = line.split_once('\t').ok_or_else(bad)?;
    let numbers = std::iter::once(label).chain(pixels.split(' '));
    let digit: Vec<u8> = numbers.map(|x| x.parse().map_err(|_| bad())).collect::<Result<_, _>>()?;
    if digit.len() != 1 + PIXELS {
        return Err(bad());
    }
    Ok(digit)
}
