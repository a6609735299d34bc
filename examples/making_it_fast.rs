//! Appendix, Making it fast: prints every table the appendix quotes, all
//! read from the files one run of `cargo xtask measure fast` wrote in
//! `book/data/` (the crate with and without OpenBLAS, NumPy, PyTorch, the
//! machine's limits, the fast kernel's profile and tiles), and draws the
//! roofline.
//!
//! ```text
//! cargo run --example making_it_fast
//! ```

use attn::experiments::roofline::roofline;
use report::fast_data::{blas_table, exponential_report, layer_line, numpy_table, FastData};
use report::fast_lm::{lm_training_table, LmTraining};
use report::fast_profile::{profile_table, tiles_table, ProfileData};
use report::fast_report::{
    backward_table, fast_table, layer_report, machine_report, product_report, roofline_points,
    roofline_report, speed_report,
};

use report::plot;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let fast = FastData::read()?;
    let ns = [1024, 2048, 4096];
    println!("{}", fast.sources[0].line);
    println!("\n== Against NumPy, d = 64, one thread (ms, mean) ==");
    println!("{}", numpy_table(&fast, &ns)?);
    println!("\n{}", exponential_report(&fast)?);
    println!("\n== One multi-head layer, n = 512, d_model = 512, h = 8 ==");
    println!("{}", layer_line(&fast)?);
    println!("\n== With `--features blas`: the system's OpenBLAS, one thread (ms, mean) ==");
    println!("{}", blas_table(&fast, &ns)?);
    println!("\n== The machine's limits ==");
    println!("{}", machine_report(&fast));
    let profile = ProfileData::read()?;
    println!("\n== Where the fast kernel's time goes, d = 64 ==");
    println!("{}", profile_table(&profile)?);
    println!("\n== The tiles ==");
    println!("{}", tiles_table(&profile)?);
    println!("\n== Exact attention against PyTorch's SDPA, d = 64 ==");
    println!("{}\n", product_report(&fast)?);
    println!("{}", fast_table(&fast, &ns, false)?);
    println!("\n{}", fast_table(&fast, &ns, true)?);
    println!("\n== The backward pass against PyTorch's, d = 64 ==");
    println!("{}", backward_table(&fast, &ns)?);
    let lm = LmTraining::read(&fast.sources[0].run)?;
    println!("\n== Training chapter 16's model through the fused kernel ==");
    println!("{}", lm_training_table(&lm));
    println!("\n== The multi-head layer, n = 512, d_model = 512, h = 8 ==");
    println!("{}", layer_report(&fast)?);
    println!("\n== How close, and how sure ==");
    println!("{}", speed_report(&fast)?);
    println!("\n== The roofline ==");
    println!("{}", roofline_report(&fast, 4096)?);
    draw_roofline(&fast)?;
    Ok(())
}

/// The roofline at n = 4096: the roof (bandwidth times intensity, and the
/// FMA peak), the roof of the loop as compiled where it is more than 1%
/// below, and each kernel as a point, on log–log axes. The legend sits
/// above the roof.
fn draw_roofline(fast: &FastData) -> Result<(), report::error::ReportError> {
    let xs: Vec<f64> = (0..=40).map(|i| 2f64.powf(i as f64 / 3.0)).collect(); // 1 to 2¹³ FLOP per byte
    let roof = |peak: f64| -> Result<Vec<(f64, f64)>, attn::AttnError> {
        xs.iter().map(|&x| Ok((x, roofline(x, peak, fast.bandwidth)?))).collect()
    };
    let colours = [
        plotters::style::RGBColor(20, 20, 20),
        plot::BLUE_,
        plot::GREEN_,
        plot::ORANGE_,
        plot::PURPLE_,
        plot::BROWN_,
        plotters::style::RGBColor(214, 39, 40),  // red
        plotters::style::RGBColor(23, 190, 207), // cyan
    ];
    let mut series = vec![plot::Series {
        label: "roof: min(FMA peak, intensity × bandwidth)".into(),
        points: roof(fast.roof())?,
        colour: plot::GREY_,
        dashed: true,
        spread: Vec::new(),
    }];
    if fast.peak < 0.99 * fast.roof() {
        series.push(plot::Series {
            label: "the same with the FMA loop as compiled".into(),
            points: roof(fast.peak)?,
            colour: plot::GREY_,
            dashed: false,
            spread: Vec::new(),
        });
    }
    for ((name, intensity, achieved), colour) in
        roofline_points(fast, 4096)?.into_iter().zip(colours.into_iter().cycle())
    {
        series.push(plot::Series {
            label: name,
            points: vec![(intensity, achieved)],
            colour,
            dashed: false,
            spread: Vec::new(),
        });
    }
    let chart = plot::Chart {
        title: "The roofline of one core, n = 4096, d = 64",
        x_desc: "arithmetic intensity (FLOP per byte, log)",
        y_desc: "GFLOP/s (log)",
        log2_x: true,
        log10_y: true,
        y_range: (10.0, 100_000.0),
    };
    let path = plot::line_charts("appendix-roofline.svg", &[(chart, series)]);
    println!("wrote {}", path.display());
    Ok(())
}
