//! The GPU kernels (`--features gpu`) refuse what they cannot compute
//! before anything runs on the device.

use attn::gpu::{Gpu, Mask};
use ndarray::Array2;

/// The adapter, or `None` (with the reason printed) where none is required.
fn gpu() -> Option<Gpu> {
    match Gpu::new() {
        Ok(gpu) => Some(gpu),
        Err(e) if std::env::var("ATTN_GPU_REQUIRED").as_deref() != Ok("1") => {
            eprintln!("skipped: {e}");
            None
        }
        Err(e) => panic!("ATTN_GPU_REQUIRED=1, but {e}"),
    }
}

#[test]
fn the_gpu_kernels_refuse_wide_rows_mismatched_values_and_nan() {
    let Some(gpu) = gpu() else { return };
    let (q, wide) = (Array2::<f32>::zeros((2, 4)), Array2::<f32>::zeros((2, 65)));
    let e = gpu.flash_attention(&wide, &wide, &wide, Mask::None).unwrap_err().to_string();
    assert!(e.contains("d_v"), "{e}");
    let narrow = Array2::<f32>::zeros((2, 3));
    let e = gpu.attention(&q, &q, &narrow, Mask::None).unwrap_err().to_string();
    assert!(e.contains("d_v"), "d_v ≠ d_k: {e}");
    let mut nan = q.clone();
    nan[[1, 1]] = f32::NAN;
    let e = gpu.flash_attention(&nan, &q, &q, Mask::Causal).unwrap_err().to_string();
    assert!(e.contains("queries"), "NaN: {e}");
    let keep = Array2::from_elem((3, 2), true);
    let e = gpu.flash_attention(&q, &q, &q, Mask::Keep(&keep)).unwrap_err().to_string();
    assert!(e.contains("mask"), "a 3×2 mask for 2×2 scores: {e}");
    let long = Array2::<f32>::zeros((65_535, 1));
    let e = gpu.attention(&long, &long, &long, Mask::None).unwrap_err().to_string();
    assert!(e.contains("scores"), "65,535² scores in one buffer: {e}");
    let huge = Array2::<f32>::from_elem((2, 4), 1e30);
    let e = gpu.attention(&huge, &huge, &q, Mask::None).unwrap_err().to_string();
    assert!(e.contains("GPU"), "scores past f32: {e}");
    let e = gpu.flash_attention_in_spans([&q, &q, &q], Mask::None, 0).unwrap_err().to_string();
    assert!(e.contains("span"), "a span of 0 keys: {e}");
}

#[test]
fn the_gpu_backward_refuses_what_the_forward_did_not_return() {
    let Some(gpu) = gpu() else { return };
    let q = Array2::<f32>::from_shape_fn((3, 4), |(i, j)| (i + j) as f32 / 7.0);
    let forward = gpu.flash_attention(&q, &q, &q, Mask::Causal).unwrap();
    let backward = |forward: &attn::gpu::FlashOutput, d_out: &Array2<f32>| {
        gpu.flash_attention_backward([&q, &q, &q], forward, d_out, Mask::Causal)
            .unwrap_err()
            .to_string()
    };
    let mut short = forward.clone();
    short.lse = short.lse.slice(ndarray::s![..2]).to_owned();
    let e = backward(&short, &q);
    assert!(e.contains("log-sum-exp"), "two of three lse: {e}");
    let mut nan = forward.clone();
    nan.lse[1] = f32::NAN;
    assert!(backward(&nan, &q).contains("log-sum-exp"), "a NaN lse");
    let e = backward(&forward, &Array2::zeros((3, 5)));
    assert!(e.contains("dO"), "dO 3×5 for a 3×4 output: {e}");
    let mut d_out = q.clone();
    d_out[[2, 0]] = f32::INFINITY;
    assert!(backward(&forward, &d_out).contains("dO"), "an infinite dO");
    let e = gpu
        .flash_attention_backward([&q, &q, &q], &forward, &q, Mask::None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("mask"), "no mask for a causal forward pass: {e}");
    let (one, other) =
        (Array2::from_elem((3, 3), true), Array2::from_shape_fn((3, 3), |(_, j)| j == 0));
    let kept = gpu.flash_attention(&q, &q, &q, Mask::Keep(&one)).unwrap();
    let e = gpu
        .flash_attention_backward([&q, &q, &q], &kept, &q, Mask::Keep(&other))
        .unwrap_err()
        .to_string();
    assert!(e.contains("mask"), "another keep mask: {e}");
    assert!(gpu.flash_attention_backward([&q, &q, &q], &kept, &q, Mask::Keep(&one)).is_ok());
    let mut wide = forward.clone();
    wide.output = Array2::zeros((3, 5));
    assert!(backward(&wide, &q).contains("output"), "an output of another shape");
}
