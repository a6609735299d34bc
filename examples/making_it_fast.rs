//! Appendix, Making it fast: prints the comparison with NumPy, the cost of
//! the exponential, the multi-head layer's speed and the timings with
//! OpenBLAS, all read from `book/data/` (written by `cargo xtask measure`,
//! `cargo xtask measure --blas` and `tools/numpy_attention.py`).
//!
//! ```text
//! cargo run --release --example making_it_fast
//! ```

use attn::experiments::fast_profile::{profile_table, tiles_table, ProfileData};
use attn::experiments::fast_report::{
    fast_table, layer_report, machine_report, roofline_points, roofline_report, targets_report,
    FastData,
};
use attn::experiments::measurements::{
    blas_table, data_file, lookup, millis, numpy_table, provenance, read_measurements, Measurement,
};
use attn::experiments::roofline::roofline;
use attn::multihead::multihead_flops;
use attn::AttnError;

mod plot;

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

    let fast = FastData::parse(
        &data_file("appendix-timings.csv")?,
        &data_file("appendix-pytorch.csv")?,
        &data_file("appendix-machine.csv")?,
    )?;
    println!("\n== The machine's limits ==");
    println!("{}", machine_report(&fast));
    let profile = ProfileData::parse(
        &data_file("appendix-profile.csv")?,
        &data_file("appendix-tiles.csv")?,
        &data_file("appendix-machine.csv")?,
    )?;
    println!("\n== Where the fast kernel's time goes, d = 64 ==");
    println!("{}", profile_table(&profile)?);
    println!("\n== The tiles ==");
    println!("{}", tiles_table(&profile)?);
    println!("{}", provenance(&data_file("appendix-profile.csv")?));
    let ns = [1024, 2048, 4096];
    println!("\n== Exact attention against PyTorch's SDPA, d = 64 (ms) ==");
    println!("{}", fast_table(&fast, &ns, false)?);
    println!("\n== Causal ==");
    println!("{}", fast_table(&fast, &ns, true)?);
    println!("\n== The multi-head layer, n = 512, d_model = 512, h = 8 ==");
    println!("{}", layer_report(&fast)?);
    println!("\n== The targets ==");
    println!("{}", targets_report(&fast)?);
    println!("\n== The roofline ==");
    println!("{}", roofline_report(&fast, 4096)?);
    println!("\n{}", provenance(&data_file("appendix-timings.csv")?));
    println!("{}", provenance(&data_file("appendix-pytorch.csv")?));
    draw_roofline(&fast)?;
    Ok(())
}

/// The roofline at n = 4096: the two roofs (bandwidth times intensity, and
/// the FMA peak) and each kernel as a point, on log–log axes.
fn draw_roofline(fast: &FastData) -> Result<(), AttnError> {
    let roof: Vec<(f64, f64)> = (0..=40)
        .map(|i| 2f64.powf(i as f64 / 3.0)) // 1 to 2¹³ FLOP per byte
        .map(|x| (x, roofline(x, fast.peak, fast.bandwidth)))
        .collect();
    let colours = [
        plotters::style::RGBColor(20, 20, 20),
        plot::BLUE_,
        plot::GREEN_,
        plot::ORANGE_,
        plot::PURPLE_,
        plot::BROWN_,
    ];
    let mut series = vec![plot::Series {
        label: "roof: min(FMA peak, intensity × bandwidth)".into(),
        points: roof,
        colour: plot::GREY_,
        dashed: true,
    }];
    for ((name, intensity, achieved), colour) in roofline_points(fast, 4096)?
        .into_iter()
        .zip(colours.into_iter().cycle())
    {
        series.push(plot::Series {
            label: name,
            points: vec![(intensity, achieved)],
            colour,
            dashed: false,
        });
    }
    let chart = plot::Chart {
        title: "The roofline of one core, n = 4096, d = 64",
        x_desc: "arithmetic intensity (FLOP per byte, log)",
        y_desc: "GFLOP/s (log)",
        log2_x: true,
        log10_y: true,
        y_range: (10.0, 300.0),
    };
    let path = plot::line_charts("appendix-roofline.svg", &[(chart, series)]);
    println!("wrote {}", path.display());
    Ok(())
}
