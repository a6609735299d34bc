//! The GPU kernels (`--features gpu`) against the crate's attention on the
//! CPU, every element, on whatever adapter `wgpu` finds: in CI, Mesa's
//! lavapipe, a software Vulkan device. Without an adapter the tests say
//! why and pass, unless `ATTN_GPU_REQUIRED=1` (set by CI) makes a missing
//! adapter a failure.
#![cfg(feature = "gpu")]

use attn::gpu::{Gpu, Mask};
use attn::masking::{causal_mask, masked_attention};
use attn::nn::{attention_backward, attention_forward};
use ndarray::Array2;
use ndarray_rand::rand::{rngs::StdRng, Rng, SeedableRng};

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

/// The CPU's attention under `keep`, and each row's log-sum-exp (in f64)
/// over the keys it keeps (`None` for a row that keeps none).
fn reference([q, k, v]: [&Array2<f32>; 3], keep: &Array2<bool>) -> (Array2<f32>, Vec<Option<f32>>) {
    let d = q.ncols();
    let output = masked_attention(q, k, v, keep).unwrap().output;
    let lse = (0..q.nrows())
        .map(|i| {
            let scores: Vec<f64> = (0..k.nrows())
                .filter(|&j| keep[[i, j]])
                .map(|j| q.row(i).dot(&k.row(j)) as f64 / (d as f64).sqrt())
                .collect();
            let top = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let sum: f64 = scores.iter().map(|s| (s - top).exp()).sum();
            (!scores.is_empty()).then(|| (top + sum.ln()) as f32)
        })
        .collect();
    (output, lse)
}

/// Every element within `tolerance` of the reference, or the first that is not.
fn assert_close(got: &Array2<f32>, want: &Array2<f32>, tolerance: f32, what: &str) {
    assert_eq!(got.dim(), want.dim(), "{what}");
    for ((i, j), (g, w)) in got.indexed_iter().zip(want.iter()).map(|((p, g), w)| (p, (g, w))) {
        assert!((g - w).abs() <= tolerance * (1.0 + w.abs()), "{what}: ({i}, {j}) is {g}, not {w}");
    }
}

/// Past this many iterations of its loops, all counted together for each
/// batch of invocations it runs at once, lavapipe leaves every loop after
/// its first pass and runs on: no error, wrong numbers.
const LOOP_LIMIT: usize = 65_535;

/// A length at which the flash kernel with its inner loops bounded by the
/// row's d4 still agrees with the CPU.
const WITHIN_THE_LIMIT: usize = 130;

/// Keys past where the flash kernel with its inner loops bounded by the
/// row's d4, instead of the constant D4 that the compiler unrolls, is cut
/// short: it passes every smaller shape here and fails at this one,
/// silently wrong.
const PAST_UNROLLING: usize = 2_300;

/// Keys past where the forward kernel walking every key in one dispatch
/// is cut short (by 0.02 at this length).
const LONG_KEYS: usize = 33_000;

/// Queries past one dispatch's span of 8,192 in the dK, dV pass (with
/// 200 keys, four workgroups of them, whose causal start differs).
const LONG_QUERIES: usize = 8_300;

/// Shapes with ragged tiles (n, m not multiples of 64 or 32; d not of 4),
/// and shapes past each of the limits above.
const SHAPES: [(usize, usize, usize); 8] = [
    (1, 1, 1),
    (5, 7, 3),
    (64, 64, 64),
    (65, 33, 17),
    (WITHIN_THE_LIMIT, WITHIN_THE_LIMIT, 64),
    (PAST_UNROLLING, PAST_UNROLLING, 64),
    (64, LONG_KEYS, 4),
    (LONG_QUERIES, 200, 4),
];

/// The loop iterations of a thread of the forward kernel over `m` keys,
/// as lavapipe counts them: per tile of BC keys, the tile loop itself,
/// the loads (BC·D4 vec4s shared by BR threads) and the two loops over
/// the tile's keys; with `unrolled` false, also the loops over a row's D4
/// vec4s, which the compiler would otherwise unroll.
fn forward_iterations(m: usize, unrolled: bool) -> usize {
    let (br, bc, d4) = (64, 32, 16);
    let per_key = if unrolled { 2 } else { 2 * d4 };
    let per_tile = 1 + bc * d4 / br + bc * per_key + if unrolled { 0 } else { d4 };
    m.div_ceil(bc) * per_tile
}

/// The long shapes are long enough: past the limit for a kernel that
/// does not unroll, or that walks every key in one dispatch, and within
/// it for the kernel as it is.
#[test]
fn the_long_shapes_are_past_the_loop_limit() {
    assert!(forward_iterations(WITHIN_THE_LIMIT, false) < LOOP_LIMIT);
    assert!(forward_iterations(PAST_UNROLLING, false) > LOOP_LIMIT);
    assert!(forward_iterations(LONG_KEYS, true) > LOOP_LIMIT);
    assert!(forward_iterations(attn::gpu::SPAN, true) < LOOP_LIMIT / 2);
    const { assert!(LONG_QUERIES > attn::gpu::SPAN) };
}

/// The masks each shape is run with, and the keep-matrix each stands
/// for: none, causal (top left: query i sees keys 0..=i, also where there
/// are fewer keys than queries), and a random one whose first row keeps
/// no key.
fn masks(n: usize, m: usize, rng: &mut StdRng) -> Vec<(&'static str, Array2<bool>)> {
    let mut random = Array2::from_shape_fn((n, m), |_| rng.random::<f32>() < 0.7);
    random.row_mut(0).fill(false);
    vec![
        ("none", Array2::from_elem((n, m), true)),
        ("random", random),
        ("causal", causal_mask(n, m)),
    ]
}

/// Runs `kernel` on every shape of [`SHAPES`] under every mask of
/// [`masks`], on inputs drawn with `seed`, and holds it to the CPU.
fn on_every_shape(seed: u64, kernel: impl Fn(&Gpu, [&Array2<f32>; 3], &Array2<bool>, Mask, &str)) {
    let Some(gpu) = gpu() else { return };
    let mut rng = StdRng::seed_from_u64(seed);
    for (n, m, d) in SHAPES {
        let (q, k, v) = (random(n, d, &mut rng), random(m, d, &mut rng), random(m, d, &mut rng));
        for (name, keep) in masks(n, m, &mut rng) {
            let mask = match name {
                "none" => Mask::None,
                "causal" => Mask::Causal,
                _ => Mask::Keep(&keep),
            };
            let what = format!("n = {n}, m = {m}, d = {d}, mask {name}");
            kernel(&gpu, [&q, &k, &v], &keep, mask, &what);
        }
    }
}

#[test]
fn the_flash_kernel_equals_the_cpus_attention_everywhere() {
    on_every_shape(52, |gpu, [q, k, v], keep, mask, what| {
        let got = gpu.flash_attention(q, k, v, mask).unwrap();
        let (want, lse) = reference([q, k, v], keep);
        assert_close(&got.output, &want, 1e-5, &format!("flash, {what}"));
        for (i, (got, want)) in got.lse.iter().zip(lse).enumerate() {
            if let Some(want) = want {
                assert!((got - want).abs() <= 1e-5 * (1.0 + want.abs()), "{what}: lse {i}");
            }
        }
    });
}

#[test]
fn the_plain_kernels_equal_the_cpus_attention_everywhere() {
    on_every_shape(2, |gpu, [q, k, v], keep, mask, what| {
        let got = gpu.attention(q, k, v, mask).unwrap();
        assert_close(&got, &reference([q, k, v], keep).0, 1e-5, &format!("plain, {what}"));
    });
}

/// The CPU's gradients `(dQ, dK, dV)` under `keep`, in f64, as f32.
fn reference_gradients(
    [q, k, v]: [&Array2<f32>; 3],
    keep: &Array2<bool>,
    d_out: &Array2<f32>,
) -> [Array2<f32>; 3] {
    let wide = |x: &Array2<f32>| x.mapv(f64::from);
    let (q, k, v, d_out) = (wide(q), wide(k), wide(v), wide(d_out));
    let sqrt_d = (q.ncols() as f64).sqrt();
    let (_, cache) = attention_forward(&q, &k, &v, Some(keep), sqrt_d).unwrap();
    let grads = attention_backward(&q, &k, &v, &cache, &d_out).unwrap();
    grads.map(|g| g.mapv(|x| x as f32))
}

#[test]
fn the_flash_backward_kernels_equal_the_cpus_backward_everywhere() {
    on_every_shape(11, |gpu, [q, k, v], keep, mask, what| {
        let mut rng = StdRng::seed_from_u64(q.len() as u64);
        let d_out = random(q.nrows(), q.ncols(), &mut rng);
        let forward = gpu.flash_attention(q, k, v, mask).unwrap();
        let (dq, dk, dv) = gpu.flash_attention_backward([q, k, v], &forward, &d_out, mask).unwrap();
        let [want_dq, want_dk, want_dv] = reference_gradients([q, k, v], keep, &d_out);
        for (got, want, name) in [(dq, want_dq, "dQ"), (dk, want_dk, "dK"), (dv, want_dv, "dV")] {
            assert_close(&got, &want, 1e-4, &format!("{name}, {what}"));
        }
    });
}

/// A dispatch may walk any number of keys, not only whole tiles: the
/// keys of a tile past the span are left to the next. And on lavapipe,
/// walking all LONG_KEYS keys of the long shape in one dispatch is cut short
/// (the control that shows that shape is long enough to catch it).
#[test]
fn any_span_gives_the_same_attention_and_one_dispatch_is_cut_short_on_lavapipe() {
    let Some(gpu) = gpu() else { return };
    let mut rng = StdRng::seed_from_u64(21);
    let (q, k, v) = (random(70, 5, &mut rng), random(130, 5, &mut rng), random(130, 5, &mut rng));
    for (name, keep) in masks(70, 130, &mut rng) {
        let mask = match name {
            "none" => Mask::None,
            "causal" => Mask::Causal,
            _ => Mask::Keep(&keep),
        };
        let (want, _) = reference([&q, &k, &v], &keep);
        for span in [1, 31, 33, 64, 129, 1_000] {
            let got = gpu.flash_attention_in_spans([&q, &k, &v], mask, span).unwrap();
            assert_close(&got.output, &want, 1e-5, &format!("span {span}, mask {name}"));
        }
    }
    if gpu.adapter().contains("llvmpipe") {
        let (q, k, v) =
            (random(64, 4, &mut rng), random(33_000, 4, &mut rng), random(33_000, 4, &mut rng));
        let keep = Array2::from_elem((64, 33_000), true);
        let (want, _) = reference([&q, &k, &v], &keep);
        let one = gpu.flash_attention_in_spans([&q, &k, &v], Mask::None, 33_000).unwrap();
        let worst = (&one.output - &want).iter().fold(0.0_f32, |w, x| w.max(x.abs()));
        assert!(
            worst > 1e-3,
            "one dispatch over 33,000 keys was right ({worst}) on {}",
            gpu.adapter()
        );
    }
}

/// Where the device writes timestamps (lavapipe does), each call keeps the
/// time of its kernels: positive, and none when a call has more
/// dispatches than the query set holds.
#[test]
fn the_kernels_time_is_kept_where_the_device_writes_timestamps() {
    let Some(gpu) = gpu() else { return };
    let mut rng = StdRng::seed_from_u64(4);
    let x = random(300, 16, &mut rng);
    gpu.flash_attention(&x, &x, &x, Mask::Causal).unwrap();
    let Some(flash) = gpu.last_kernel_seconds() else {
        eprintln!("{} writes no timestamps", gpu.adapter());
        return;
    };
    assert!(flash > 0.0 && flash < 10.0, "{flash} s");
    let forward = gpu.flash_attention(&x, &x, &x, Mask::None).unwrap();
    gpu.flash_attention_backward([&x, &x, &x], &forward, &x, Mask::None).unwrap();
    assert!(gpu.last_kernel_seconds().is_some_and(|s| s > 0.0));
    gpu.attention(&x, &x, &x, Mask::None).unwrap();
    let plain = gpu.last_kernel_seconds();
    assert!(plain.is_some_and(|s| s > 0.0), "{plain:?}");
    gpu.flash_attention_in_spans([&x, &x, &x], Mask::None, 1).unwrap(); // 300 dispatches
    assert_eq!(gpu.last_kernel_seconds(), None, "more dispatches than timestamps");
    assert!(gpu.is_software() == gpu.adapter().contains("llvmpipe"), "{}", gpu.adapter());
}
