//! The appendix "Making it fast": this core's limits, measured, into
//! `book/data/appendix-machine.csv` (run by `cargo xtask measure`, which
//! passes the date and machine in `ATTN_MEASURED`): the f32 FMA peak and
//! the memory bandwidth of a STREAM triad, one thread.

use attn::experiments::roofline::{fma_peak, triad_bandwidth};

fn main() -> std::io::Result<()> {
    let peak = fma_peak(20_000_000, 5);
    let bandwidth = triad_bandwidth(1 << 25, 10); // 3 arrays of 128 MiB
    let measured = std::env::var("ATTN_MEASURED").unwrap_or_else(|_| "(undated)".into());
    let text = format!(
        "# measured {measured}, by `cargo xtask measure`: best of 5 FMA runs, 10 triads of 2^25 floats\n\
         quantity,value\nfma_peak_gflops,{peak:.1}\ntriad_gbytes_per_s,{bandwidth:.1}\n"
    );
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/book/data/appendix-machine.csv"
    );
    std::fs::write(path, &text)?;
    print!("{text}");
    Ok(())
}
