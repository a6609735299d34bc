//! The appendix "Making it fast", its last sections: the fast kernel and
//! the chapters' attention against PyTorch, from the files one session of
//! `cargo xtask measure fast` and `tools/torch_attention.py` wrote, and the
//! points of its roofline. Report helpers, not a reader's API.

use super::measurements::{bad, measured, read_measurements, Measurement};
use super::roofline::{attention_intensity, roofline};
use crate::complexity::attention_flops;
use crate::error::AttnError;
use crate::show::table;

/// The appendix's measurements: the crate's criterion means and PyTorch's
/// mean times, both in nanoseconds, and the machine's limits.
#[derive(Debug, Clone)]
pub struct FastData {
    /// `appendix-timings.csv`: method (e.g. `fast_1t`), n, mean ns.
    pub crate_ns: Vec<Measurement>,
    /// `appendix-pytorch.csv`: method with its threads (e.g. `sdpa_2t`), n, mean ns.
    pub pytorch_ns: Vec<Measurement>,
    /// FMA peak, GFLOP/s.
    pub peak: f64,
    /// Triad bandwidth, GB/s.
    pub bandwidth: f64,
}

/// The value of `key` in `appendix-machine.csv`.
pub(super) fn machine_value(machine: &str, key: &str) -> Result<f64, AttnError> {
    machine
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{key},")))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| bad("appendix-machine.csv", format!("no {key}")))
}

impl FastData {
    /// Parses the three files' texts.
    pub fn parse(timings: &str, pytorch: &str, machine: &str) -> Result<FastData, AttnError> {
        let crate_ns = read_measurements(timings, "function", "mean_ns")
            .map_err(|e| bad("appendix-timings.csv", e))?;
        let with_threads: String = pytorch
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| {
                let c: Vec<&str> = l.split(',').collect();
                match c.as_slice() {
                    ["function", "threads", "n", "mean_ns", "best_ns"] => {
                        "method,n,ns\n".to_string()
                    }
                    [f, t, n, mean, _] => format!("{f}_{t}t,{n},{mean}\n"),
                    _ => String::new(),
                }
            })
            .collect();
        let pytorch_ns = read_measurements(&with_threads, "method", "ns")
            .map_err(|e| bad("appendix-pytorch.csv", e))?;
        Ok(FastData {
            crate_ns,
            pytorch_ns,
            peak: machine_value(machine, "fma_peak_gflops")?,
            bandwidth: machine_value(machine, "triad_gbytes_per_s")?,
        })
    }

    /// Milliseconds of the crate's `method` at `n`.
    pub fn ours(&self, method: &str, n: u64) -> Result<f64, AttnError> {
        Ok(measured(&self.crate_ns, method, n)? / 1e6)
    }

    /// Milliseconds of PyTorch's `method` at `n`.
    pub fn theirs(&self, method: &str, n: u64) -> Result<f64, AttnError> {
        Ok(measured(&self.pytorch_ns, method, n)? / 1e6)
    }
}

/// The machine's limits and the ridge point between them.
pub fn machine_report(d: &FastData) -> String {
    format!(
        "f32 FMA peak, one core:      {:.1} GFLOP/s\n\
         memory bandwidth (triad):    {:.1} GB/s\n\
         ridge point:                 {:.1} FLOP per byte",
        d.peak,
        d.bandwidth,
        d.peak / d.bandwidth
    )
}

/// Milliseconds per call at `ns`, d = 64, plain or causal: the chapters'
/// functions, the fast kernel and PyTorch's SDPA on 1 and 2 threads, and
/// the fast kernel's speed relative to PyTorch's (PyTorch's time / ours).
pub fn fast_table(d: &FastData, ns: &[u64], causal: bool) -> Result<String, AttnError> {
    let c = if causal { "_causal" } else { "" };
    let mut rows = Vec::new();
    for &n in ns {
        let [fast_1, fast_2] = [
            d.ours(&format!("fast{c}_1t"), n)?,
            d.ours(&format!("fast{c}_2t"), n)?,
        ];
        let [torch_1, torch_2] = [
            d.theirs(&format!("sdpa{c}_1t"), n)?,
            d.theirs(&format!("sdpa{c}_2t"), n)?,
        ];
        rows.push(vec![
            n.to_string(),
            format!("{:.2}", d.ours(&format!("naive{c}_1t"), n)?),
            format!("{:.2}", d.ours(&format!("tiled{c}_1t"), n)?),
            format!("{fast_1:.2}"),
            format!("{fast_2:.2}"),
            format!("{torch_1:.2}"),
            format!("{torch_2:.2}"),
            format!("{:.2}", torch_1 / fast_1),
            format!("{:.2}", torch_2 / fast_2),
            format!("{:.2}", fast_1 / fast_2),
        ]);
    }
    Ok(table(
        &[
            "n",
            "naive",
            "tiled",
            "fast 1t",
            "fast 2t",
            "PyTorch 1t",
            "PyTorch 2t",
            "vs PyTorch 1t",
            "vs PyTorch 2t",
            "2t speed-up",
        ],
        &rows,
    ))
}

/// The multi-head layer at n = 512, d_model = 512, h = 8: chapter 5's,
/// the fast one on 1 and 2 threads, and `nn.MultiheadAttention`.
pub fn layer_report(d: &FastData) -> Result<String, AttnError> {
    let n = 512;
    let (fast_1, fast_2) = (
        d.ours("fast_multihead_1t", n)?,
        d.ours("fast_multihead_2t", n)?,
    );
    let (torch_1, torch_2) = (d.theirs("multihead_1t", n)?, d.theirs("multihead_2t", n)?);
    Ok(format!(
        "chapter 5's layer, 1 thread:   {:.2} ms\n\
         fast layer, 1 thread:          {fast_1:.2} ms   PyTorch {torch_1:.2} ms   ratio {:.2}\n\
         fast layer, 2 threads:         {fast_2:.2} ms   PyTorch {torch_2:.2} ms   ratio {:.2}",
        d.ours("multihead_1t", n)?,
        torch_1 / fast_1,
        torch_2 / fast_2
    ))
}

/// The roofline's points at `n` (d = 64, one thread): name, arithmetic
/// intensity (FLOP per byte) and GFLOP/s achieved; a kernel that stores the
/// scores has the naive intensity.
pub fn roofline_points(d: &FastData, n: u64) -> Result<Vec<(String, f64, f64)>, AttnError> {
    let gflops = |ms: f64, causal: bool| {
        let flops = attention_flops(n, 64) / if causal { 2.0 } else { 1.0 };
        flops / (ms * 1e6)
    };
    let point = |name: &str, stores: bool, ms: f64, causal: bool| {
        (
            name.to_string(),
            attention_intensity(n, 64, stores),
            gflops(ms, causal),
        )
    };
    Ok(vec![
        point("naive", true, d.ours("naive_1t", n)?, false),
        point("tiled", false, d.ours("tiled_1t", n)?, false),
        point("tiled causal", false, d.ours("tiled_causal_1t", n)?, true),
        point("fast", false, d.ours("fast_1t", n)?, false),
        point("fast causal", false, d.ours("fast_causal_1t", n)?, true),
        point("PyTorch SDPA", false, d.theirs("sdpa_1t", n)?, false),
    ])
}

/// The points, each with the roofline's bound at its intensity and the
/// share of it reached.
pub fn roofline_report(d: &FastData, n: u64) -> Result<String, AttnError> {
    let rows: Vec<Vec<String>> = roofline_points(d, n)?
        .into_iter()
        .map(|(name, intensity, achieved)| {
            let bound = roofline(intensity, d.peak, d.bandwidth);
            vec![
                name,
                format!("{intensity:.1}"),
                format!("{achieved:.1}"),
                format!("{bound:.1}"),
                format!("{:.0}%", 100.0 * achieved / bound),
            ]
        })
        .collect();
    Ok(table(
        &[
            "n = 4096, one thread",
            "FLOP/byte",
            "GFLOP/s",
            "roof",
            "of roof",
        ],
        &rows,
    ))
}

/// The smallest and largest of `ratios`, as `"a–b×"` (or `"a×"`).
fn range(ratios: &[f64]) -> (f64, String) {
    let lo = ratios.iter().cloned().fold(f64::INFINITY, f64::min);
    let hi = ratios.iter().cloned().fold(0.0, f64::max);
    let text = if ratios.len() == 1 {
        format!("{lo:.2}×")
    } else {
        format!("{lo:.2}–{hi:.2}×")
    };
    (lo, text)
}

/// The appendix's targets against the measurements: each target, the
/// measured ratio (PyTorch's time over the fast kernel's, or one thread's
/// time over two threads'), and whether every measurement meets it.
pub fn targets_report(d: &FastData) -> Result<String, AttnError> {
    let ns = [1024, 2048, 4096];
    let vs_torch = |c: &str, t: &str| -> Result<Vec<f64>, AttnError> {
        ns.iter()
            .map(|&n| {
                Ok(d.theirs(&format!("sdpa{c}_{t}"), n)? / d.ours(&format!("fast{c}_{t}"), n)?)
            })
            .collect()
    };
    let layer = |t: &str| -> Result<Vec<f64>, AttnError> {
        Ok(vec![
            d.theirs(&format!("multihead_{t}"), 512)?
                / d.ours(&format!("fast_multihead_{t}"), 512)?,
        ])
    };
    let speed_up = vec![d.ours("fast_1t", 4096)? / d.ours("fast_2t", 4096)?];
    let share = roofline_points(d, 4096)?[3].2 / d.peak;
    let mut rows = Vec::new();
    for (target, ratios, bar) in [
        ("plain, 1 thread: ≥ 1.0× PyTorch", vs_torch("", "1t")?, 1.0),
        (
            "causal, 1 thread: ≥ 1.0× PyTorch",
            vs_torch("_causal", "1t")?,
            1.0,
        ),
        ("plain, 2 threads: ≥ 1.0× PyTorch", vs_torch("", "2t")?, 1.0),
        (
            "causal, 2 threads: ≥ 1.0× PyTorch",
            vs_torch("_causal", "2t")?,
            1.0,
        ),
        ("2 threads at n = 4096: ≥ 1.8× 1 thread", speed_up, 1.8),
        ("layer, 1 thread: ≥ 1.0× PyTorch", layer("1t")?, 1.0),
        ("layer, 2 threads: ≥ 1.0× PyTorch", layer("2t")?, 1.0),
    ] {
        let (lo, text) = range(&ratios);
        rows.push(vec![
            target.to_string(),
            text,
            if lo >= bar { "yes" } else { "no" }.into(),
        ]);
    }
    rows.push(vec![
        "n = 4096, 1 thread: ≥ 60% of the FMA peak".into(),
        format!("{:.0}%", 100.0 * share),
        if share >= 0.6 { "yes" } else { "no" }.into(),
    ]);
    Ok(table(&["target", "measured", "met"], &rows))
}
