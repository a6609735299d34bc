//! The timings of chapters 8 and 9 and of the appendix "Making it fast":
//! every attention in the crate over n = 128 … 4096 at d = 64, the
//! multi-head layer at n = 512, d_model = 512, h = 8, the matrix
//! product it is built on, and the softmax's exponential. One thread, f32:
//! `cargo xtask measure` gives `rayon`'s global pool one thread
//! (`RAYON_NUM_THREADS=1`), since the crate's products split large
//! products over the pool's threads.
//!
//! ```text
//! MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=2147483647 RAYON_NUM_THREADS=1 cargo bench -p attn-checks --bench attention
//! cargo xtask measure   # all of it, criterion's estimates → book/data/ch08-timings.csv
//! ```
//!
//! The two variables keep glibc from returning large buffers to the kernel
//! after each call, so a run does not pay page faults for a fresh n×n
//! buffer every time (which can double the time at n = 4096).

use attn::approximate::{causal_linear_attention, linear_attention, local_attention};
use attn::masking::{causal_mask, masked_attention};
use attn::multihead::MultiHeadAttention;
use attn::scaled_dot_product_attention;
use attn::scaling::standard_normal;
use attn::tiled::tiled_attention;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use ndarray::Array2;
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};
use std::hint::black_box;
use std::time::Duration;

mod common;

const D: usize = 64;
const LENGTHS: [usize; 6] = [128, 256, 512, 1024, 2048, 4096];
/// The window of the local attention in the benchmark.
const WINDOW: usize = 256;

fn qkv(n: usize) -> (Array2<f32>, Array2<f32>, Array2<f32>) {
    let mut rng = StdRng::seed_from_u64(n as u64);
    (
        standard_normal(n, D, &mut rng),
        standard_normal(n, D, &mut rng),
        standard_normal(n, D, &mut rng),
    )
}

fn bench_attention(c: &mut Criterion) {
    let mut group = c.benchmark_group("attention");
    group.sample_size(10);
    group.warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(2));
    for n in LENGTHS {
        let (q, k, v) = qkv(n);
        let causal = causal_mask(n, n);
        let id = |name| BenchmarkId::new(name, n);
        group.bench_function(id("naive"), |b| {
            b.iter(|| scaled_dot_product_attention(black_box(&q), &k, &v).unwrap())
        });
        group.bench_function(id("tiled"), |b| {
            b.iter(|| tiled_attention(black_box(&q), &k, &v, false).unwrap())
        });
        group.bench_function(id("naive_causal"), |b| {
            b.iter(|| masked_attention(black_box(&q), &k, &v, &causal).unwrap())
        });
        group.bench_function(id("tiled_causal"), |b| {
            b.iter(|| tiled_attention(black_box(&q), &k, &v, true).unwrap())
        });
        group.bench_function(id("local_causal"), |b| {
            b.iter(|| local_attention(black_box(&q), &k, &v, WINDOW).unwrap())
        });
        group.bench_function(id("linear"), |b| {
            b.iter(|| linear_attention(black_box(&q), &k, &v).unwrap())
        });
        group.bench_function(id("linear_causal"), |b| {
            b.iter(|| causal_linear_attention(black_box(&q), &k, &v).unwrap())
        });
    }
    group.finish();
}

fn bench_multihead(c: &mut Criterion) {
    let (n, d_model, h) = (512, 512, 8);
    let mut rng = StdRng::seed_from_u64(8);
    let layer = MultiHeadAttention::new(d_model, h, &mut rng).unwrap();
    let x = standard_normal(n, d_model, &mut rng);
    let mut group = c.benchmark_group("layer");
    group.measurement_time(Duration::from_secs(3));
    group.bench_function(BenchmarkId::new("multihead", n), |b| {
        b.iter(|| layer.forward(black_box(&x), &x).unwrap())
    });
    group.finish();
    common::bench_product(c, &layer, &x);
}

criterion_group!(benches, bench_attention, bench_multihead, common::bench_exp);
criterion_main!(benches);
