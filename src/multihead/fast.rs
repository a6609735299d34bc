//! The multi-head layer with every head on the fast kernel.

use gemm::Parallelism;
use ndarray::{s, Array2, ArrayRef2, Axis};
use rayon::prelude::*;

use crate::linalg::product;
use crate::fast::{attend_into, Kernel, FAST_TILES};
use crate::check::{check_finite, check_model_width, check_overflow};
use crate::error::AttnError;
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
    let [w_q, w_k, w_v, w_o] = layer.weights();
    let biases = layer.biases();
    let project = |x: &ArrayRef2<f32>, w: &Array2<f32>, i: usize| -> Array2<f32> {
        let mut y = Array2::zeros((x.nrows(), w.ncols()));
        product(
            &mut y.view_mut(),
            x.view(),
            w.view(),
            false,
            Parallelism::Rayon(0),
        );
        match biases {
            Some(b) => y + b[i],
            None => y,
        }
    };
    let (q, k, v) = (
        project(x_q, w_q, 0),
        project(x_kv, w_k, 1),
        project(x_kv, w_v, 2),
    );
    check_overflow("the projections", &q)?;
    check_overflow("the projections", &k)?;
    check_overflow("the projections", &v)?;
    let d_k = layer.d_k();
    let mut merged = Array2::zeros((x_q.nrows(), d_model)); // the heads side by side
    merged
        .axis_chunks_iter_mut(Axis(1), d_k)
        .into_par_iter()
        .enumerate()
        .try_for_each(|(i, out)| {
            let head = s![.., i * d_k..(i + 1) * d_k];
            let (q, k, v) = (q.slice(head), k.slice(head), v.slice(head));
            attend_into([&q, &k, &v], (false, FAST_TILES, Kernel::best()), out, None)
        })?;
    let output = project(&merged, w_o, 3);
    check_overflow("the output", &output)?;
    Ok(output)
}
// ANCHOR_END: fast_multihead
