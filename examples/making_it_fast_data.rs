//! The appendix "Making it fast": this core's limits and the fast kernel's
//! profile, measured (run by `cargo xtask measure fast`, which passes the
//! date, the machine and the run in `ATTN_RUN_HEADER`), one thread, into
//! `book/data/`, each figure the mean of repeated runs:
//!
//! - `appendix-machine.csv`: the f32 FMA peak and the memory bandwidth of a
//!   STREAM triad;
//! - `appendix-profile.csv`: each phase of the loop at n = 4096, d = 64,
//!   chapter 9's way, the portable kernel's and the AVX-512 kernel's (empty
//!   on a processor without it), and the AVX-512 kernel's scores with their
//!   weights, fused (`fused`, the AVX-512 column alone);
//! - `appendix-tiles.csv`: the whole call at n = 4096, d = 64, chapter 9's
//!   kernel, the portable kernel, and the fast kernel (the best this
//!   processor runs) with each tile size.

use attn::experiments::profile::{phases, whole_calls};
use attn::experiments::roofline::{fma_peak, fma_peak_512, triad_bandwidth};
use attn::fast::{Tiles, FAST_TILES};
use attn::tiled::{KEY_BLOCK, QUERY_BLOCK};
use report::provenance::header;

const N: usize = 4096;
const D: usize = 64;
const REPEATS: usize = 7;

fn write(file: &str, text: &str) -> std::io::Result<()> {
    let path = format!("{}/book/data/{file}", env!("CARGO_MANIFEST_DIR"));
    std::fs::write(path, text)?;
    print!("{text}");
    Ok(())
}

/// This core's data caches as `appendix-machine.csv` lines, in KiB, from
/// Linux's `/sys` (`l1d_kib`, `l2_kib`, `l3_kib`; none elsewhere).
fn caches_kib() -> String {
    let mut lines = String::new();
    for (index, key) in [(0, "l1d_kib"), (2, "l2_kib"), (3, "l3_kib")] {
        let path = format!("/sys/devices/system/cpu/cpu0/cache/index{index}/size");
        if let Ok(size) = std::fs::read_to_string(path) {
            let kib = size.trim().trim_end_matches('K');
            lines += &format!("{key},{kib}\n");
        }
    }
    lines
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let peak = fma_peak(20_000_000, 5)?;
    let wide = fma_peak_512(20_000_000, 5)?
        .map_or(String::new(), |p| format!("fma_peak_512_gflops,{p:.1}\n"));
    let bandwidth = triad_bandwidth(1 << 25, 10)?; // 3 arrays of 128 MiB
    let machine = header(
        "mean",
        "one thread: 5 FMA runs as compiled, 5 with 512-bit AVX-512 instructions, \
         10 triads of 2^25 floats; caches from /sys",
    );
    write(
        "appendix-machine.csv",
        &format!(
            "{machine}\nquantity,value\nfma_peak_gflops,{peak:.1}\n{wide}\
             triad_gbytes_per_s,{bandwidth:.1}\n{}",
            caches_kib()
        ),
    )?;
    let mut profile = format!(
        "{}\nphase,chapter_9_ns,portable_ns,avx512_ns\n",
        header(
            "mean",
            &format!(
                "one thread: n = {N}, d = {D}, {}×{} tiles, {REPEATS} runs",
                FAST_TILES.query, FAST_TILES.key
            )
        )
    );
    let ns = |s: f64| (s * 1e9).round();
    let (three, fused) = phases(N, D, FAST_TILES, REPEATS)?;
    for phase in three {
        let avx512 = phase.avx512.map_or(String::new(), |s| ns(s).to_string());
        profile += &format!("{},{},{},{avx512}\n", phase.name, ns(phase.chapter_9), ns(phase.fast));
    }
    if let Some(fused) = fused {
        profile += &format!("fused,,,{}\n", ns(fused));
    }
    write("appendix-profile.csv", &profile)?;
    let tiles: Vec<Tiles> = [64, 128, 256, 512]
        .into_iter()
        .flat_map(|query| [128, 256, 512, 1024].map(|key| Tiles { query, key }))
        .collect();
    let (chapter_9, portable, fast) = whole_calls(N, D, &tiles, REPEATS)?;
    let mut calls = format!(
        "{}\nkernel,query_tile,key_tile,mean_ns\n",
        header("mean", &format!("one thread: n = {N}, d = {D}, {REPEATS} runs"))
    );
    calls += &format!("tiled,{QUERY_BLOCK},{KEY_BLOCK},{:.0}\n", chapter_9 * 1e9);
    let (query, key) = (FAST_TILES.query, FAST_TILES.key);
    calls += &format!("portable,{query},{key},{:.0}\n", portable * 1e9);
    for (t, seconds) in tiles.iter().zip(fast) {
        calls += &format!("fast,{},{},{:.0}\n", t.query, t.key, seconds * 1e9);
    }
    Ok(write("appendix-tiles.csv", &calls)?)
}
