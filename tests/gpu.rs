//! The GPU kernels (`--features gpu`) against the crate's attention on the
//! CPU, every element, on whatever adapter `wgpu` finds: in CI, Mesa's
//! lavapipe, a software Vulkan device. Without an adapter the tests say
//! why and pass, unless `ATTN_GPU_REQUIRED=1` (set by CI) makes a missing
//! adapter a failure.
#![cfg(feature = "gpu")]

use attn::attention::scaled_dot_product_attention;
use attn::gpu::{Gpu, Mask};
use attn::masking::{causal_mask, masked_attention};
use ndarray::{Array1, Array2};
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

/// The adapter, or `None` (with the reason printed) where none is required.
fn gpu() -> Option<Gpu> {
    match Gpu::new() {
        Ok(gpu) => {
            eprintln!("adapter: {}", gpu.adapter());
            Some(gpu)
        }
        Err(e) if std::env::var("ATTN_GPU_REQUIRED").as_deref() != Ok("1") => {
            eprintln!("skipped: {e}");
            None
        }
        Err(e) => panic!("ATTN_GPU_REQUIRED=1, but {e}"),
    }
}

fn random(rows: usize, cols: usize, rng: &mut StdRng) -> Array2<f32> {
    attn::scaling::standard_normal(rows, cols, rng)
}

/// The CPU's attention and each row's log-sum-exp (in f64).
fn reference(
    q: &Array2<f32>,
    k: &Array2<f32>,
    v: &Array2<f32>,
    mask: Mask,
) -> (Array2<f32>, Array1<f32>) {
    let (n, m, d) = (q.nrows(), k.nrows(), q.ncols());
    let output = match mask {
        Mask::None => scaled_dot_product_attention(q, k, v).unwrap().output,
        Mask::Causal => masked_attention(q, k, v, &causal_mask(n, m)).unwrap().output,
    };
    let lse = Array1::from_shape_fn(n, |i| {
        let seen = if mask == Mask::Causal { (i + 1).min(m) } else { m };
        let scores: Vec<f64> =
            (0..seen).map(|j| q.row(i).dot(&k.row(j)) as f64 / (d as f64).sqrt()).collect();
        let top = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (top + scores.iter().map(|s| (s - top).exp()).sum::<f64>().ln()) as f32
    });
    (output, lse)
}

/// Every element within `tolerance` of the reference, or the first that is not.
fn assert_close(got: &Array2<f32>, want: &Array2<f32>, tolerance: f32, what: &str) {
    assert_eq!(got.dim(), want.dim(), "{what}");
    for ((i, j), (g, w)) in got.indexed_iter().zip(want.iter()).map(|((p, g), w)| (p, (g, w))) {
        assert!((g - w).abs() <= tolerance * (1.0 + w.abs()), "{what}: ({i}, {j}) is {g}, not {w}");
    }
}

/// Shapes with ragged tiles (n, m not multiples of 64 or 32; d not of 4),
/// and n past where a kernel whose loops ran 32 times a key would be cut
/// short by lavapipe's 65,535 iterations an invocation: the flash kernel
/// with its inner loops bounded by the row's d4 instead of the constant
/// D4 (which the compiler unrolls) passes every smaller shape here and
/// fails at 2,300, silently wrong.
const SHAPES: [(usize, usize, usize); 6] =
    [(1, 1, 1), (5, 7, 3), (64, 64, 64), (65, 33, 17), (130, 130, 64), (2_300, 2_300, 64)];

/// Runs `kernel` on every shape of [`SHAPES`], with and without the
/// causal mask (where there are keys for every query), on inputs drawn
/// with `seed`, and holds it to the CPU.
fn on_every_shape(seed: u64, kernel: impl Fn(&Gpu, [&Array2<f32>; 3], Mask, &str)) {
    let Some(gpu) = gpu() else { return };
    let mut rng = StdRng::seed_from_u64(seed);
    for (n, m, d) in SHAPES {
        for mask in [Mask::None, Mask::Causal] {
            if mask == Mask::Causal && m < n {
                continue;
            }
            let (q, k, v) =
                (random(n, d, &mut rng), random(m, d, &mut rng), random(m, d, &mut rng));
            kernel(&gpu, [&q, &k, &v], mask, &format!("n = {n}, m = {m}, d = {d}, {mask:?}"));
        }
    }
}

#[test]
fn the_flash_kernel_equals_the_cpus_attention_everywhere() {
    on_every_shape(52, |gpu, [q, k, v], mask, what| {
        let got = gpu.flash_attention(q, k, v, mask).unwrap();
        let (want, lse) = reference(q, k, v, mask);
        assert_close(&got.output, &want, 1e-5, &format!("flash, {what}"));
        let column = |x: Array1<f32>| x.insert_axis(ndarray::Axis(1));
        assert_close(&column(got.lse), &column(lse), 1e-5, &format!("flash, {what}, lse"));
    });
}

#[test]
fn the_plain_kernels_equal_the_cpus_attention_everywhere() {
    on_every_shape(2, |gpu, [q, k, v], mask, what| {
        let got = gpu.attention(q, k, v, mask).unwrap();
        assert_close(&got, &reference(q, k, v, mask).0, 1e-5, &format!("plain, {what}"));
    });
}
