//! `cargo xtask measure gpu`: chapter 21's kernels timed on the adapter
//! `wgpu` finds, by the device's own timestamps (the kernels alone, not
//! the copies), best of 5, at n = m = 256, 1,024 and 4,096, d = 64. A GPU's
//! run goes to `book/data/ch21-gpu.tsv`, with the adapter's name in its
//! header, for the chapter to quote; a software device's (lavapipe) to
//! `target/ch21-gpu-software.tsv`, for its reader only: its times say
//! nothing about a GPU's.
//!
//! ```text
//! cargo xtask measure gpu
//! ```

use attn::gpu::{Gpu, Mask};
use attn::scaling::standard_normal;
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};
use report::provenance::header;

/// The lengths timed, n = m.
const LENGTHS: [usize; 3] = [256, 1_024, 4_096];
/// The width of a head.
const D: usize = 64;
/// Runs of each; the best is kept.
const RUNS: usize = 5;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let gpu = Gpu::new()?;
    println!("adapter: {}", gpu.adapter());
    let mut rows = vec!["kernel\tmask\tn\td\tseconds".to_string()];
    for n in LENGTHS {
        let mut rng = StdRng::seed_from_u64(21);
        let [q, k, v, d_out] = [0; 4].map(|_| standard_normal(n, D, &mut rng));
        for (kernel, mask, name) in [
            ("flash", Mask::None, "none"),
            ("flash", Mask::Causal, "causal"),
            ("plain", Mask::None, "none"),
            ("flash backward", Mask::None, "none"),
            ("flash backward", Mask::Causal, "causal"),
        ] {
            let mut best = f64::INFINITY;
            for _ in 0..RUNS {
                match kernel {
                    "plain" => drop(gpu.attention(&q, &k, &v, mask)?),
                    "flash" => drop(gpu.flash_attention(&q, &k, &v, mask)?),
                    _ => {
                        let forward = gpu.flash_attention(&q, &k, &v, mask)?;
                        gpu.flash_attention_backward([&q, &k, &v], &forward, &d_out, mask)?;
                    }
                }
                let seconds = gpu
                    .last_kernel_seconds()
                    .ok_or_else(|| format!("{} writes no timestamps", gpu.adapter()))?;
                best = best.min(seconds);
            }
            println!("{kernel:>15} {name:>7} n = {n:>5}: {:.3} ms", best * 1e3);
            rows.push(format!("{kernel}\t{name}\t{n}\t{D}\t{best:.6e}"));
        }
    }
    let details =
        format!("adapter: {}; the kernels' own time by the device's timestamps", gpu.adapter());
    let text = format!("{}\n{}\n", header(&format!("best of {RUNS}"), &details), rows.join("\n"));
    let path = if gpu.is_software() {
        println!("\n{} is a software device: its times stay out of the book", gpu.adapter());
        concat!(env!("CARGO_MANIFEST_DIR"), "/target/ch21-gpu-software.tsv")
    } else {
        concat!(env!("CARGO_MANIFEST_DIR"), "/book/data/ch21-gpu.tsv")
    };
    std::fs::write(path, text).map_err(|e| format!("{path}: {e}"))?;
    println!("wrote {path}");
    Ok(())
}
