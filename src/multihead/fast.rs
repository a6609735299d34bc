//! The multi-head layer with every head on the fast kernel.

use ndarray::{s, Array2, ArrayRef2, Axis};
use rayon::prelude::*;

use crate::check::{check_finite, check_model_width};
use crate::error::AttnError;
use crate::fast::{attend_into, Kernel, FAST_TILES};
use crate::multihead::MultiHeadAttention;

// ANCHOR: fast_multihead
/// [`crate::multihead::MultiHeadAttention::forward`]'s output (without the
/// weights), with every head attended by [`crate::fast::fast_attention`]'s kernel, the
/// heads in parallel, each writing its columns of the merged heads in place,
/// and the four projections split over the pool's threads.
pub fn fast_multihead(
    layer: &MultiHeadAttention,
    x_q: &ArrayRef2<f32>,
    x_kv: &ArrayRef2<f32>,
) -> Result<Array2<f32>, AttnError> {
    let d_model = layer.d_model();
    check_model_width("query input", x_q, d_model)?;
    check_model_width("key/value input", x_kv, d_model)?;
    check_finite("query input", x_q)?;
    check_finite("key/value input", x_kv)?;
    let w = layer.weights();
    let (q, k, v) = (w.queries(x_q)?, w.keys(x_kv)?, w.values(x_kv)?);
    let d_k = layer.d_k();
    let per_group = layer.h() / layer.kv_heads(); // query heads a key/value head serves
    let mut merged = Array2::zeros((x_q.nrows(), d_model)); // the heads side by side
    merged.axis_chunks_iter_mut(Axis(1), d_k).into_par_iter().enumerate().try_for_each(
        |(i, out)| {
            let g = i / per_group; // head i's key/value head
            let (head, group) = (s![.., i * d_k..(i + 1) * d_k], s![.., g * d_k..(g + 1) * d_k]);
            let (q, k, v) = (q.slice(head), k.slice(group), v.slice(group));
            attend_into([&q, &k, &v], (false, FAST_TILES, Kernel::best()), out, None)
        },
    )?;
    w.output(&merged)
}
// ANCHOR_END: fast_multihead
