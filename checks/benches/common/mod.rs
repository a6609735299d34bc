//! Benchmarks shared by chapter 8's run (`benches/attention.rs`) and the
//! appendix's (`benches/fast.rs`): the softmax's exponential, and the
//! matrix product the multi-head layer is built on.

use attn::linalg::matrix_product;
use attn::multihead::MultiHeadAttention;
use attn::real::exp_nonpositive;
use criterion::{BenchmarkId, Criterion};
use ndarray::Array2;
use std::hint::black_box;

/// `f32::exp` and `exp_nonpositive` on a million exponents in a row
/// (`std_exp` and `exp_nonpositive` at n = 2²⁰).
pub fn bench_exp(c: &mut Criterion) {
    let x: Vec<f32> = (0..1 << 20).map(|i| -((i % 1000) as f32) / 50.0).collect();
    let mut out = vec![0.0_f32; x.len()];
    let mut group = c.benchmark_group("exp");
    group.bench_function(BenchmarkId::new("std_exp", x.len()), |b| {
        b.iter(|| {
            for (o, &x) in out.iter_mut().zip(black_box(&x)) {
                *o = x.exp();
            }
        })
    });
    group.bench_function(BenchmarkId::new("exp_nonpositive", x.len()), |b| {
        b.iter(|| {
            for (o, &x) in out.iter_mut().zip(black_box(&x)) {
                *o = exp_nonpositive(x);
            }
        })
    });
    group.finish();
}

/// One `n×d_model` by `d_model×d_model` product through the crate's
/// product, the one the layer runs, at the shape of its projections
/// (`matmul_512` at n = 512).
pub fn bench_product(c: &mut Criterion, layer: &MultiHeadAttention, x: &Array2<f32>) {
    let mut group = c.benchmark_group("product");
    group.bench_function(BenchmarkId::new("matmul_512", x.nrows()), |b| {
        b.iter(|| matrix_product(black_box(x), &layer.weights().w_q).unwrap())
    });
    group.finish();
}
