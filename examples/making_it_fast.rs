//! Appendix, Making it fast: prints the comparison with NumPy, the cost of
//! the exponential, the multi-head layer's speed and the timings with
//! OpenBLAS, all read from `book/data/` (written by `cargo xtask measure`,
//! `cargo xtask measure --blas` and `tools/numpy_attention.py`).
//!
//! ```text
//! cargo run --release --example making_it_fast
//! ```

use attn::experiments::measurements::{
    blas_table, data_file, lookup, millis, numpy_table, read_measurements, Measurement,
};
use attn::multihead::multihead_flops;
use attn::AttnError;

/// FLOPs of a 512×512 by 512×512 matrix product.
const PRODUCT_FLOPS: f64 = 2.0 * 512.0 * 512.0 * 512.0;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let timings = read_measurements(&data_file("ch08-timings.csv")?, "function", "mean_ns")?;

    println!("== Against NumPy, d = 64, one thread (ms) ==");
    let numpy_csv = data_file("ch08-numpy.csv")?;
    let numpy = read_measurements(&numpy_csv, "version", "seconds")?;
    println!("{}", numpy_csv.lines().next().unwrap_or(""));
    println!("{}", numpy_table(&numpy, &timings, &[1024, 2048, 4096])?);

    let per_exp =
        |f: &str| lookup(&timings, f, 1 << 20).map_or(f64::NAN, |ns| ns / (1 << 20) as f64);
    println!(
        "\nexp per element: f32::exp {:.2} ns, exp_nonpositive {:.2} ns",
        per_exp("std_exp"),
        per_exp("exp_nonpositive")
    );

    println!("\n== One multi-head layer, n = 512, d_model = 512, h = 8 ==");
    let layer_flops = multihead_flops(512, 512, 512, 8)? as f64;
    let (layer, product) = (
        millis(&timings, "multihead", 512)?,
        millis(&timings, "matmul_512", 512)?,
    );
    println!(
        "layer: {layer:.2} ms, {:.0} GFLOP/s; a 512×512 by 512×512 product: {product:.3} ms, {:.0} GFLOP/s",
        layer_flops / (layer * 1e6),
        PRODUCT_FLOPS / (product * 1e6)
    );

    println!("\n== With `--features blas`: the system's OpenBLAS, one thread (ms) ==");
    let blas_csv = data_file("ch08-timings-blas.csv")?;
    println!("{}", blas_csv.lines().next().unwrap_or(""));
    let blas = read_measurements(&blas_csv, "function", "mean_ns")?;
    println!(
        "{}",
        blas_table(&timings, &blas, &numpy, &[1024, 2048, 4096])?
    );
    let gflops = |rows: &[Measurement], f: &str, flops: f64| -> Result<f64, AttnError> {
        Ok(flops / (millis(rows, f, 512)? * 1e6))
    };
    println!(
        "with blas: layer {:.0} GFLOP/s, 512×512 by 512×512 product {:.0} GFLOP/s",
        gflops(&blas, "multihead", layer_flops)?,
        gflops(&blas, "matmul_512", PRODUCT_FLOPS)?
    );
    Ok(())
}
