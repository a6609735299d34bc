//! The appendix "Making it fast": the fast kernel against the chapters'
//! attention, on 1 and 2 threads, the multi-head layer and the product it
//! is built on, and the softmax's exponential, all in one run. `cargo xtask
//! measure fast` runs it (into `target/criterion-fast`, and again with
//! `--features blas` for the functions the `blas` feature changes) and
//! collects criterion's means in `book/data/appendix-timings.csv` and
//! `appendix-timings-blas.csv`; NumPy and PyTorch are timed on the same
//! shapes in the same run.
//!
//! Function names end in `_1t` or `_2t`: the size of the `rayon` pool the
//! call runs in. The `_1t` functions that build no pool of their own run in
//! the global pool, which `cargo xtask measure fast` gives one thread
//! (`RAYON_NUM_THREADS=1`): the crate's products split large products over
//! the pool's threads.

use attn::fast::{
    fast_attention, fast_attention_backward, fast_attention_forward, fast_attention_on, Kernel,
    FAST_TILES,
};
use attn::masking::{causal_mask, masked_attention};
use attn::multihead::fast_multihead;
use attn::multihead::MultiHeadAttention;
use attn::scaled_dot_product_attention;
use attn::scaling::standard_normal;
use attn::tiled::tiled_attention;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};
use std::hint::black_box;
use std::time::Duration;

mod common;

const D: usize = 64;

fn bench_fast(c: &mut Criterion) {
    let mut group = c.benchmark_group("fast");
    group.sample_size(10);
    group.warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(2));
    let pools = [1, 2].map(|t| rayon::ThreadPoolBuilder::new().num_threads(t).build().unwrap());
    for n in [1024, 2048, 4096] {
        let mut rng = StdRng::seed_from_u64(n as u64);
        let [q, k, v] = [(); 3].map(|_| standard_normal(n, D, &mut rng));
        let mask = causal_mask(n, n);
        let id = |name: &str| BenchmarkId::new(name, n);
        group.bench_function(id("naive_1t"), |b| {
            b.iter(|| scaled_dot_product_attention(black_box(&q), &k, &v).unwrap())
        });
        group.bench_function(id("naive_causal_1t"), |b| {
            b.iter(|| masked_attention(black_box(&q), &k, &v, &mask).unwrap())
        });
        group.bench_function(id("tiled_1t"), |b| {
            b.iter(|| tiled_attention(black_box(&q), &k, &v, false).unwrap())
        });
        group.bench_function(id("tiled_causal_1t"), |b| {
            b.iter(|| tiled_attention(black_box(&q), &k, &v, true).unwrap())
        });
        for causal in [false, true] {
            let name = if causal { "portable_causal_1t" } else { "portable_1t" };
            group.bench_function(id(name), |b| {
                b.iter(|| {
                    let q = black_box(&q);
                    fast_attention_on(q, &k, &v, causal, FAST_TILES, Kernel::Portable).unwrap()
                })
            });
        }
        let d_out = standard_normal(n, D, &mut rng);
        for (pool, t) in pools.iter().zip(["1t", "2t"]) {
            group.bench_function(id(&format!("fast_{t}")), |b| {
                b.iter(|| pool.install(|| fast_attention(black_box(&q), &k, &v, false).unwrap()))
            });
            group.bench_function(id(&format!("fast_causal_{t}")), |b| {
                b.iter(|| pool.install(|| fast_attention(black_box(&q), &k, &v, true).unwrap()))
            });
            for (causal, name) in [(false, "backward"), (true, "backward_causal")] {
                // The backward pass alone, from a forward pass kept aside.
                let forward = fast_attention_forward(&q, &k, &v, causal).unwrap();
                group.bench_function(id(&format!("{name}_{t}")), |b| {
                    b.iter(|| {
                        pool.install(|| {
                            fast_attention_backward(black_box(&q), &k, &v, &forward, &d_out)
                                .unwrap()
                        })
                    })
                });
            }
        }
    }
    let (n, d_model, h) = (512, 512, 8);
    let mut rng = StdRng::seed_from_u64(8);
    let layer = MultiHeadAttention::new(d_model, h, &mut rng).unwrap();
    let x = standard_normal(n, d_model, &mut rng);
    group.bench_function(BenchmarkId::new("multihead_1t", n), |b| {
        b.iter(|| layer.forward(black_box(&x), &x).unwrap())
    });
    for (pool, t) in pools.iter().zip(["1t", "2t"]) {
        group.bench_function(BenchmarkId::new(format!("fast_multihead_{t}"), n), |b| {
            b.iter(|| pool.install(|| fast_multihead(&layer, black_box(&x), &x).unwrap()))
        });
    }
    group.finish();
    common::bench_product(c, &layer, &x);
}

criterion_group!(benches, bench_fast, common::bench_exp);
criterion_main!(benches);
