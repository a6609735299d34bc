//! The memory measurements of chapters 8 and 9: the peak number of bytes allocated
//! during one call of naive attention and of tiled attention, counted by a
//! global allocator that wraps the system one. d = 64, f32, one thread.
//!
//! ```text
//! cargo bench -p attn-checks --bench memory   # writes book/data/ch08-memory.csv
//! ```
//!
//! Naive attention stops at n = 16,384 (1 GiB of scores); tiled attention
//! goes on to n = 65,536, where naive attention would need 16 GiB. The
//! counts are deterministic: they depend on the sizes allocated, not on
//! timing.

use std::time::Instant;

use attn::scaled_dot_product_attention;
use attn::scaling::standard_normal;
use attn::tiled::tiled_attention;
use ndarray::Array2;
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

#[path = "../../tests/common/counting.rs"]
mod counting;
use counting::{peak_during, Counting};

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The peak bytes `f` allocates above the start, and the seconds it takes
/// (not counting the drop of its result), after one call that is not
/// counted: the matrix-product library allocates a buffer for each thread
/// the first time it runs there (the size of the L2 cache) and keeps it,
/// which is not a cost of the call being measured.
fn peak_and_seconds<T>(f: impl Fn() -> T) -> (usize, f64) {
    drop(f());
    let mut seconds = 0.0;
    let peak = peak_during(|| {
        let t = Instant::now();
        let result = f();
        seconds = t.elapsed().as_secs_f64();
        result
    });
    (peak, seconds)
}

fn main() {
    let d = 64;
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../book/data/ch08-memory.csv");
    let mut csv = format!(
        "{}\nmethod,n,peak_bytes,output_bytes,seconds\n",
        report::provenance::header(
            "peak of one call",
            "one thread, d = 64: the peak bytes of one call after one uncounted call, counted \
             by a global allocator, and the seconds of that call"
        )
    );
    for p in 10..=16 {
        let n = 1usize << p;
        let mut rng = StdRng::seed_from_u64(n as u64);
        let (q, k, v): (Array2<f32>, Array2<f32>, Array2<f32>) = (
            standard_normal(n, d, &mut rng),
            standard_normal(n, d, &mut rng),
            standard_normal(n, d, &mut rng),
        );
        let output_bytes = 4 * n * d;
        let mut row = |method: &str, (peak, seconds): (usize, f64)| {
            let line = format!("{method},{n},{peak},{output_bytes},{seconds:.3}\n");
            eprint!("{line}");
            csv += &line;
        };
        if n <= 16_384 {
            row("naive", peak_and_seconds(|| scaled_dot_product_attention(&q, &k, &v).unwrap()));
        }
        row("tiled", peak_and_seconds(|| tiled_attention(&q, &k, &v, false).unwrap()));
    }
    std::fs::write(path, csv).expect("write book/data/ch08-memory.csv");
    println!("wrote {path}");
}
