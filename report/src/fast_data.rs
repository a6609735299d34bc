//! The appendix "Making it fast": the crate, NumPy and PyTorch timed in
//! one run of `cargo xtask measure fast` (its files name the run and the
//! statistic, the mean of repeated calls, in their headers), read once, and
//! the tables of the appendix's first sections. Report helpers, not a
//! reader's API.

use super::measurements::{bad, measured, read_measurements, Measurement};
use super::provenance::{one_run, Provenance};
use crate::error::ReportError;
use crate::show::table;
use attn::multihead::multihead_flops;

/// The files of one appendix run that [`FastData::read`] reads.
pub const FAST_FILES: [&str; 5] = [
    "appendix-timings.csv",
    "appendix-timings-blas.csv",
    "appendix-numpy.csv",
    "appendix-pytorch.csv",
    "appendix-machine.csv",
];

/// The width `d` of the heads the appendix times: its benchmarks', its
/// profile's (whose file's header records it) and its tables'.
pub const HEAD_WIDTH: u64 = 64;

/// The lengths at which the appendix's tables compare kernels.
pub const LENGTHS: [u64; 3] = [1024, 2048, 4096];

/// The length of the profile, the tile sweep and the roofline (whose file's
/// header records it), the longest of [`LENGTHS`].
pub const LONGEST: u64 = LENGTHS[2];

/// The shape of the multi-head layer the appendix times: chapter 5's layer
/// over `n` tokens of width `d_model`, with `heads` heads.
#[derive(Debug, Clone, Copy)]
pub struct LayerShape {
    /// Tokens, queries and keys alike.
    pub n: u64,
    /// The tokens' width.
    pub d_model: u64,
    /// Heads.
    pub heads: u64,
}

/// The layer of the appendix's benchmarks and of PyTorch's
/// `nn.MultiheadAttention` beside it.
pub const LAYER: LayerShape = LayerShape { n: 512, d_model: 512, heads: 8 };

/// AMD's cores the appendix tells apart by their caches: the generation of
/// Zen, its L1 data cache per core in KiB, and whether its FMA units are
/// 512 bits wide. Zen 4 runs a 512-bit instruction as two halves on 256-bit
/// units; Zen 5 in desktop and server processors has 512-bit units (AMD's
/// software optimisation guides for the two). Both have 1 MiB of L2.
pub const ZEN_CORES: [(u32, f64, bool); 2] = [(4, 32.0, false), (5, 48.0, true)];

/// The core of [`ZEN_CORES`] whose L1 data cache is `l1d_kib`, if any.
pub fn zen_core(l1d_kib: f64) -> Option<(u32, f64, bool)> {
    ZEN_CORES.iter().copied().find(|c| c.1 == l1d_kib)
}

/// FLOPs of one `n×d_model` by `d_model×d_model` product of [`LAYER`]
/// (512×512 by 512×512), the shape of each of its projections.
pub const PRODUCT_FLOPS: f64 = 2.0 * (LAYER.n * LAYER.d_model * LAYER.d_model) as f64;

/// The appendix's timings, all means in nanoseconds from one run: the
/// crate's (criterion), the crate's with OpenBLAS, NumPy's and PyTorch's,
/// and the machine's limits.
#[derive(Debug, Clone)]
pub struct FastData {
    /// `appendix-timings.csv`: method (e.g. `fast_1t`), n, mean ns.
    pub crate_ns: Vec<Measurement>,
    /// The lower and upper ends of criterion's 95% interval of each mean.
    pub crate_interval_ns: (Vec<Measurement>, Vec<Measurement>),
    /// `appendix-timings-blas.csv`: the same with `--features blas`.
    pub blas_ns: Vec<Measurement>,
    /// `appendix-numpy.csv`: `numpy_f32` or `numpy_tutorial`, n, mean ns.
    pub numpy_ns: Vec<Measurement>,
    /// `appendix-pytorch.csv`: method with its threads (e.g. `sdpa_2t`), n, mean ns.
    pub pytorch_ns: Vec<Measurement>,
    /// FMA peak of the loop as the compiler builds it, GFLOP/s.
    pub peak: f64,
    /// FMA peak with 512-bit AVX-512 instructions, GFLOP/s, if the
    /// processor has them.
    pub peak_512: Option<f64>,
    /// Triad bandwidth, GB/s.
    pub bandwidth: f64,
    /// The files' headers, in the order of [`FAST_FILES`]: one run, one statistic.
    pub sources: Vec<Provenance>,
}

/// The value of `key` in `appendix-machine.csv`.
pub(super) fn machine_value(machine: &str, key: &str) -> Result<f64, ReportError> {
    machine
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{key},")))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| bad("appendix-machine.csv", format!("no {key}")))
}

impl FastData {
    /// Reads the files of [`FAST_FILES`] from `book/data/`, and checks
    /// that they are one measurement run with one statistic.
    pub fn read() -> Result<FastData, ReportError> {
        let files =
            FAST_FILES.iter().map(|f| Provenance::read(f)).collect::<Result<Vec<_>, _>>()?;
        FastData::parse(&files)
    }

    /// Parses the files' headers and texts, in the order of [`FAST_FILES`].
    pub fn parse(files: &[(Provenance, String)]) -> Result<FastData, ReportError> {
        let [(_, timings), (_, blas), (_, numpy), (_, pytorch), (_, machine)] = files else {
            return Err(bad("appendix-timings.csv", "expected the five files of one run"));
        };
        let sources: Vec<Provenance> = files.iter().map(|(p, _)| p.clone()).collect();
        one_run(&sources.iter().collect::<Vec<_>>())?;
        let read_column = |file: &str, text: &str, method: &str, column: &str| {
            read_measurements(text, method, column).map_err(|e| bad(file, e))
        };
        let read =
            |file: &str, text: &str, method: &str| read_column(file, text, method, "mean_ns");
        let with_threads: String = pytorch
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| match l.split(',').collect::<Vec<_>>().as_slice() {
                ["function", "threads", "n", "mean_ns"] => "method,n,mean_ns\n".to_string(),
                [f, t, n, mean] => format!("{f}_{t}t,{n},{mean}\n"),
                _ => String::new(),
            })
            .collect();
        Ok(FastData {
            crate_ns: read(FAST_FILES[0], timings, "function")?,
            crate_interval_ns: (
                read_column(FAST_FILES[0], timings, "function", "low_ns")?,
                read_column(FAST_FILES[0], timings, "function", "high_ns")?,
            ),
            blas_ns: read(FAST_FILES[1], blas, "function")?,
            numpy_ns: read(FAST_FILES[2], numpy, "version")?,
            pytorch_ns: read(FAST_FILES[3], &with_threads, "method")?,
            peak: machine_value(machine, "fma_peak_gflops")?,
            peak_512: machine_value(machine, "fma_peak_512_gflops").ok(),
            bandwidth: machine_value(machine, "triad_gbytes_per_s")?,
            sources,
        })
    }

    /// Milliseconds of the crate's `method` at `n`.
    pub fn ours(&self, method: &str, n: u64) -> Result<f64, ReportError> {
        Ok(measured(&self.crate_ns, method, n)? / 1e6)
    }

    /// Criterion's 95% interval of the mean of the crate's `method` at `n`,
    /// in milliseconds.
    pub fn ours_interval(&self, method: &str, n: u64) -> Result<(f64, f64), ReportError> {
        let (low, high) = &self.crate_interval_ns;
        Ok((measured(low, method, n)? / 1e6, measured(high, method, n)? / 1e6))
    }

    /// The roof of the roofline: the higher of the two FMA peaks measured,
    /// with 512-bit instructions (if the processor has them) and with the
    /// loop as compiled.
    pub fn roof(&self) -> f64 {
        self.peak_512.map_or(self.peak, |p| p.max(self.peak))
    }

    /// Milliseconds of the crate's `method` at `n`, built with OpenBLAS.
    pub fn ours_blas(&self, method: &str, n: u64) -> Result<f64, ReportError> {
        Ok(measured(&self.blas_ns, method, n)? / 1e6)
    }

    /// Milliseconds of NumPy's `version` at `n`.
    pub fn numpy(&self, version: &str, n: u64) -> Result<f64, ReportError> {
        Ok(measured(&self.numpy_ns, version, n)? / 1e6)
    }

    /// Milliseconds of PyTorch's `method` at `n`.
    pub fn theirs(&self, method: &str, n: u64) -> Result<f64, ReportError> {
        Ok(measured(&self.pytorch_ns, method, n)? / 1e6)
    }

    /// Nanoseconds per exponential of `std_exp` or `exp_nonpositive`, timed
    /// on a million exponents in a row.
    pub fn per_exponential(&self, function: &str) -> Result<f64, ReportError> {
        Ok(measured(&self.crate_ns, function, 1 << 20)? / (1 << 20) as f64)
    }

    /// GFLOP/s of the multi-head layer (`multihead_1t`) or of one 512×512
    /// by 512×512 product (`matmul_512`) at n = 512, with or without OpenBLAS.
    pub fn layer_gflops(&self, method: &str, blas: bool) -> Result<f64, ReportError> {
        let LayerShape { n, d_model, heads } = LAYER;
        let flops = match method {
            "matmul_512" => PRODUCT_FLOPS,
            _ => multihead_flops(n as usize, n as usize, d_model as usize, heads as usize)?,
        };
        let ms = if blas { self.ours_blas(method, n)? } else { self.ours(method, n)? };
        Ok(flops / (ms * 1e6))
    }
}

/// NumPy's tutorial version (`float64` by accident) and its careful
/// `float32` version beside the crate's naive, tiled and tiled causal
/// attention, in milliseconds per call at `ns`, one thread.
pub fn numpy_table(d: &FastData, ns: &[u64]) -> Result<String, ReportError> {
    let mut rows = Vec::new();
    for &n in ns {
        let mut row = vec![n.to_string()];
        for version in ["numpy_tutorial", "numpy_f32"] {
            row.push(format!("{:.2}", d.numpy(version, n)?));
        }
        for method in ["naive_1t", "tiled_1t", "tiled_causal_1t"] {
            row.push(format!("{:.2}", d.ours(method, n)?));
        }
        rows.push(row);
    }
    let header = ["n", "NumPy (f64 by accident)", "NumPy f32", "naive", "tiled", "tiled causal"];
    Ok(table(&header, &rows))
}

/// Naive and tiled attention without and with OpenBLAS beside NumPy's
/// `float32` version, in milliseconds per call at `ns`, and the layer's and
/// the product's GFLOP/s with OpenBLAS.
pub fn blas_table(d: &FastData, ns: &[u64]) -> Result<String, ReportError> {
    let mut rows = Vec::new();
    for &n in ns {
        rows.push(vec![
            n.to_string(),
            format!("{:.2}", d.ours("naive_1t", n)?),
            format!("{:.2}", d.ours_blas("naive_1t", n)?),
            format!("{:.2}", d.ours("tiled_1t", n)?),
            format!("{:.2}", d.ours_blas("tiled_1t", n)?),
            format!("{:.2}", d.numpy("numpy_f32", n)?),
        ]);
    }
    let header = ["n", "naive", "naive, blas", "tiled", "tiled, blas", "NumPy f32"];
    Ok(format!(
        "{}\nwith blas: layer {:.0} GFLOP/s, 512×512 by 512×512 product {:.0} GFLOP/s",
        table(&header, &rows),
        d.layer_gflops("multihead_1t", true)?,
        d.layer_gflops("matmul_512", true)?
    ))
}

/// The cost of the exponentials: each function's time per exponential on
/// a million exponents in a row, and what n = 4096's n² exponentials would
/// take at those rates (an estimate: in a call they run inside the softmax's
/// passes over memory, not in a loop of their own).
pub fn exponential_report(d: &FastData) -> Result<String, ReportError> {
    let (std_exp, fast) = (d.per_exponential("std_exp")?, d.per_exponential("exp_nonpositive")?);
    let count = (LONGEST * LONGEST) as f64;
    Ok(format!(
        "exp per element: f32::exp {std_exp:.2} ns, exp_nonpositive {fast:.2} ns\n\
         n = {LONGEST}, {:.1} million exponentials at those rates: {:.1} ms and {:.1} ms",
        count / 1e6,
        count * std_exp / 1e6,
        count * fast / 1e6
    ))
}

/// Chapter 5's layer at n = 512, d_model = 512, h = 8, and one product of
/// its projections' shape: time and GFLOP/s.
pub fn layer_line(d: &FastData) -> Result<String, ReportError> {
    Ok(format!(
        "layer: {:.2} ms, {:.0} GFLOP/s; a 512×512 by 512×512 product: {:.3} ms, {:.0} GFLOP/s",
        d.ours("multihead_1t", LAYER.n)?,
        d.layer_gflops("multihead_1t", false)?,
        d.ours("matmul_512", LAYER.n)?,
        d.layer_gflops("matmul_512", false)?
    ))
}
