//! The GPU kernels (`--features gpu`) refuse what they cannot compute
//! before anything runs on the device.

use attn::gpu::{Gpu, Mask};
use ndarray::Array2;

#[test]
fn the_gpu_kernels_refuse_wide_rows_mismatched_values_and_nan() {
    let gpu = match Gpu::new() {
        Ok(gpu) => gpu,
        Err(e) if std::env::var("ATTN_GPU_REQUIRED").as_deref() != Ok("1") => {
            eprintln!("skipped: {e}");
            return;
        }
        Err(e) => panic!("ATTN_GPU_REQUIRED=1, but {e}"),
    };
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
}
