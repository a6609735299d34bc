//! The appendix's fast kernel keeps chapter 9's property: beyond its output,
//! it allocates nothing that grows with `n`. A global allocator counts the
//! bytes allocated at once during a call, on a one-thread pool.

use attn::fast::fast_attention;
use attn::scaling::standard_normal;
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

#[path = "common/counting.rs"]
mod counting;
use counting::{peak_during, Counting};

#[global_allocator]
static ALLOCATOR: Counting = Counting;

#[test]
fn scratch_does_not_grow_with_n() {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let d = 64;
    let mut beyond_output = Vec::new();
    for n in [512, 2048, 8192] {
        let mut rng = StdRng::seed_from_u64(n as u64);
        let [q, k, v] = [(); 3].map(|_| standard_normal(n, d, &mut rng));
        pool.install(|| fast_attention(&q, &k, &v, false).unwrap()); // warm up the pool
        let peak = peak_during(|| {
            pool.install(|| fast_attention(&q, &k, &v, false).unwrap());
        });
        beyond_output.push(peak - 4 * n * d);
    }
    // The same scratch at every n (a tile of queries, a tile of scores, the
    // matrix product's packing buffers), well below one n×n matrix.
    assert_eq!(beyond_output[0], beyond_output[2], "{beyond_output:?}");
    assert!(
        beyond_output[2] < 4 * 8192 * 8192 / 100,
        "{beyond_output:?}"
    );
}
