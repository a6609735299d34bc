//! Timing of `scaled_dot_product_attention` (n = m, d_k = d_v = 64, f32).
//!
//! ```text
//! cargo bench --bench attention
//! ```
//!
//! The inputs are deterministic (no RNG needed for timing): entries follow a
//! fixed smooth pattern so softmax sees varied, finite scores.

use attn::scaled_dot_product_attention;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ndarray::Array2;
use std::hint::black_box;

fn inputs(n: usize, d: usize) -> Array2<f32> {
    Array2::from_shape_fn((n, d), |(i, j)| {
        ((i * 31 + j * 17) % 97) as f32 / 97.0 - 0.5
    })
}

fn bench_attention(c: &mut Criterion) {
    let d = 64;
    let mut group = c.benchmark_group("scaled_dot_product_attention");
    for n in [128, 256, 512, 1024] {
        let x = inputs(n, d);
        // Two n×n×d matrix products, 2 FLOPs per multiply-add.
        group.throughput(Throughput::Elements((4 * n * n * d) as u64));
        group.bench_with_input(BenchmarkId::from_parameter(n), &x, |b, x| {
            b.iter(|| scaled_dot_product_attention(black_box(x), x, x).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, bench_attention);
criterion_main!(benches);
