//! The memory measurements of chapters 8 and 9: the peak number of bytes allocated
//! during one call of naive attention and of tiled attention, counted by a
//! global allocator that wraps the system one. d = 64, f32, one thread.
//!
//! ```text
//! cargo bench --bench memory   # writes book/data/ch08-memory.csv
//! ```
//!
//! Naive attention stops at n = 16,384 (1 GiB of scores); tiled attention
//! goes on to n = 65,536, where naive attention would need 16 GiB. The
//! counts are deterministic: they depend on the sizes allocated, not on
//! timing.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::Instant;

use attn::scaled_dot_product_attention;
use attn::scaling::standard_normal;
use attn::tiled::tiled_attention;
use ndarray::Array2;
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

/// The system allocator, counting the bytes currently allocated and the
/// most ever allocated at once since the last [`reset_peak`].
struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = CURRENT.fetch_add(layout.size(), Relaxed) + layout.size();
            PEAK.fetch_max(now, Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        unsafe { System.dealloc(p, layout) };
        CURRENT.fetch_sub(layout.size(), Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Runs `f` and returns the peak bytes allocated above what was allocated
/// before it started, and the seconds it took.
fn peak_during<T>(f: impl FnOnce() -> T) -> (usize, f64) {
    let before = CURRENT.load(Relaxed);
    PEAK.store(before, Relaxed);
    let t = Instant::now();
    let result = f();
    let seconds = t.elapsed().as_secs_f64();
    drop(result);
    (PEAK.load(Relaxed) - before, seconds)
}

fn main() {
    let d = 64;
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/book/data/ch08-memory.csv");
    let mut csv = String::from("method,n,peak_bytes,output_bytes,seconds\n");
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
            row(
                "naive",
                peak_during(|| scaled_dot_product_attention(&q, &k, &v).unwrap()),
            );
        }
        row(
            "tiled",
            peak_during(|| tiled_attention(&q, &k, &v, false).unwrap()),
        );
    }
    std::fs::write(path, csv).expect("write book/data/ch08-memory.csv");
    println!("wrote {path}");
}
