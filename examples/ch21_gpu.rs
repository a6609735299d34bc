//! Chapter 21, Attention on a GPU: the WGSL kernels on whatever adapter
//! `wgpu` finds (a GPU, or Mesa's lavapipe, a software one), against the
//! crate's CPU kernels, forward and backward, causal and not; and the keys
//! one dispatch walks. Needs the `gpu` feature, and on a machine without a
//! GPU, `apt install mesa-vulkan-drivers`.
//!
//! ```text
//! cargo run --example ch21_gpu --features gpu
//! cargo run --example ch21_gpu --features gpu -- --span 33000   # --help
//! ```

use std::time::Instant;

use attn::fast::{fast_attention_backward, fast_attention_forward};
use attn::gpu::{Gpu, Mask, SPAN};
use attn::scaling::standard_normal;
use clap::{value_parser, Arg, Command};
use ndarray::Array2;
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};
use report::error::ReportError;

/// The largest difference between two matrices' entries.
fn worst(a: &Array2<f32>, b: &Array2<f32>) -> f32 {
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

fn main() -> Result<(), ReportError> {
    let matches = Command::new("ch21_gpu")
        .about("Chapter 21: attention in WGSL on the adapter wgpu finds, against the CPU")
        .arg(
            Arg::new("span")
                .long("span")
                .value_parser(value_parser!(usize))
                .help(format!("Keys a dispatch of the last run walks [default: {SPAN}]")),
        )
        .get_matches();
    let span = matches.get_one::<usize>("span").copied().unwrap_or(SPAN);
    let gpu = Gpu::new()?;
    println!("adapter: {}", gpu.adapter());
    let mut rng = StdRng::seed_from_u64(21);
    let (n, d) = (2_300, 64);
    let [q, k, v, d_out] = [0; 4].map(|_| standard_normal(n, d, &mut rng));
    println!("\n== n = m = {n}, d = {d}: largest difference from the CPU's kernels ==");
    println!(
        "{:>7} {:>9} {:>9} {:>9} {:>9} {:>9}   seconds: GPU flash, plain, CPU",
        "mask", "O", "lse", "dQ", "dK", "dV"
    );
    for (name, mask, causal) in [("none", Mask::None, false), ("causal", Mask::Causal, true)] {
        let start = Instant::now();
        let flash = gpu.flash_attention(&q, &k, &v, mask)?;
        let flash_time = start.elapsed().as_secs_f64();
        let start = Instant::now();
        let plain = gpu.attention(&q, &k, &v, mask)?;
        let plain_time = start.elapsed().as_secs_f64();
        let start = Instant::now();
        let cpu = fast_attention_forward(&q, &k, &v, causal)?;
        let cpu_time = start.elapsed().as_secs_f64();
        let (dq, dk, dv) = gpu.flash_attention_backward([&q, &k, &v], &flash, &d_out, mask)?;
        let (want_dq, want_dk, want_dv) = fast_attention_backward(&q, &k, &v, &cpu, &d_out)?;
        let lse = flash.lse.iter().zip(&cpu.lse).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
        println!(
            "{name:>7} {:>9.1e} {lse:>9.1e} {:>9.1e} {:>9.1e} {:>9.1e}   {flash_time:.3}, {plain_time:.3}, {cpu_time:.3}",
            worst(&flash.output, &cpu.output).max(worst(&plain, &cpu.output)),
            worst(&dq, &want_dq),
            worst(&dk, &want_dk),
            worst(&dv, &want_dv),
        );
    }
    let (n, m, d) = (64, 33_000, 4);
    let [q, k, v] = [n, m, m].map(|rows| standard_normal(rows, d, &mut rng));
    let want = fast_attention_forward(&q, &k, &v, false)?.output;
    println!("\n== {n} queries, {m} keys, d = {d}: the flash kernel's largest difference from the CPU's ==");
    for span in [SPAN, m, span] {
        let got = gpu.flash_attention_in_spans([&q, &k, &v], Mask::None, span)?;
        println!(
            "{:>6} keys a dispatch ({} dispatch{}): {:.1e}",
            span,
            m.div_ceil(span),
            if m.div_ceil(span) == 1 { "" } else { "es" },
            worst(&got.output, &want)
        );
    }
    println!("\n(The seconds are one run each, on this machine, with the copies to and from the device.)");
    Ok(())
}
