//! The appendix "Making it fast", its last sections: the machine's limits,
//! the fast kernel and the chapters' attention against PyTorch, and the
//! points of the roofline, from one run (`FastData`). Report helpers, not a
//! reader's API.

use super::fast_data::{FastData, HEAD_WIDTH, LAYER, LENGTHS, PRODUCT_FLOPS};
use crate::error::ReportError;
use crate::show::table;
use attn::complexity::attention_flops;
use attn::experiments::roofline::{
    attention_bytes, backward_bytes, backward_flops, causal_attention_flops, roofline,
};

/// The machine's limits and the ridge points between them: the FMA peak of
/// the portable loop as the compiler builds it, and with 512-bit AVX-512
/// instructions (when the processor has them).
pub fn machine_report(d: &FastData) -> String {
    let wide = d.peak_512.map_or(String::new(), |p| {
        format!("\nf32 FMA peak, 512-bit AVX-512:       {p:.1} GFLOP/s")
    });
    let ridges = match d.peak_512 {
        Some(p) => format!("{:.1} and {:.1} FLOP per byte", d.peak / d.bandwidth, p / d.bandwidth),
        None => format!("{:.1} FLOP per byte", d.peak / d.bandwidth),
    };
    format!(
        "f32 FMA peak, the loop as compiled:  {:.1} GFLOP/s{wide}\n\
         memory bandwidth (triad):            {:.1} GB/s\n\
         ridge points:                        {ridges}",
        d.peak, d.bandwidth,
    )
}

/// Milliseconds per call at `ns`, d = 64, plain or causal: the chapters'
/// functions, the portable kernel, the fast kernel (the best this processor
/// runs) and PyTorch's SDPA on 1 and 2 threads, and the fast kernel's speed
/// relative to PyTorch's (PyTorch's time / ours).
pub fn fast_table(d: &FastData, ns: &[u64], causal: bool) -> Result<String, ReportError> {
    let c = if causal { "_causal" } else { "" };
    let mut rows = Vec::new();
    for &n in ns {
        let [fast_1, fast_2] =
            [d.ours(&format!("fast{c}_1t"), n)?, d.ours(&format!("fast{c}_2t"), n)?];
        let [torch_1, torch_2] =
            [d.theirs(&format!("sdpa{c}_1t"), n)?, d.theirs(&format!("sdpa{c}_2t"), n)?];
        rows.push(vec![
            n.to_string(),
            format!("{:.2}", d.ours(&format!("naive{c}_1t"), n)?),
            format!("{:.2}", d.ours(&format!("tiled{c}_1t"), n)?),
            format!("{:.2}", d.ours(&format!("portable{c}_1t"), n)?),
            format!("{fast_1:.2}"),
            format!("{fast_2:.2}"),
            format!("{torch_1:.2}"),
            format!("{torch_2:.2}"),
            format!("{:.2}", torch_1 / fast_1),
            format!("{:.2}", torch_2 / fast_2),
            format!("{:.2}", fast_1 / fast_2),
        ]);
    }
    let title = if causal {
        "causal attention, ms per call (mean), d = 64"
    } else {
        "plain attention (no mask), ms per call (mean), d = 64"
    };
    Ok(format!(
        "{title}\n{}",
        table(
            &[
                "n",
                "naive",
                "tiled",
                "portable",
                "fast 1t",
                "fast 2t",
                "PyTorch 1t",
                "PyTorch 2t",
                "vs PyTorch 1t",
                "vs PyTorch 2t",
                "2t speed-up",
            ],
            &rows,
        )
    ))
}

/// Milliseconds per backward pass at `ns`, d = 64, plain and causal: the
/// crate's (`fast_attention_backward`) and PyTorch's (its SDPA's, through
/// autograd) on 1 and 2 threads, and PyTorch's time over ours.
pub fn backward_table(d: &FastData, ns: &[u64]) -> Result<String, ReportError> {
    let mut rows = Vec::new();
    for (c, mask) in [("", "plain"), ("_causal", "causal")] {
        for &n in ns {
            let (o1, o2) =
                (d.ours(&format!("backward{c}_1t"), n)?, d.ours(&format!("backward{c}_2t"), n)?);
            let (t1, t2) = (
                d.theirs(&format!("sdpa{c}_backward_1t"), n)?,
                d.theirs(&format!("sdpa{c}_backward_2t"), n)?,
            );
            rows.push(vec![
                mask.to_string(),
                n.to_string(),
                format!("{o1:.2}"),
                format!("{o2:.2}"),
                format!("{t1:.2}"),
                format!("{t2:.2}"),
                format!("{:.2}", t1 / o1),
                format!("{:.2}", t2 / o2),
            ]);
        }
    }
    Ok(format!(
        "the backward pass, ms per call (mean), d = 64\n{}",
        table(
            &[
                "mask",
                "n",
                "ours 1t",
                "ours 2t",
                "PyTorch 1t",
                "PyTorch 2t",
                "vs PyTorch 1t",
                "vs PyTorch 2t",
            ],
            &rows,
        )
    ))
}

/// The multi-head layer at n = 512, d_model = 512, h = 8: chapter 5's,
/// the fast one on 1 and 2 threads, and `nn.MultiheadAttention`.
pub fn layer_report(d: &FastData) -> Result<String, ReportError> {
    let n = LAYER.n;
    let (fast_1, fast_2) = (d.ours("fast_multihead_1t", n)?, d.ours("fast_multihead_2t", n)?);
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
/// intensity (FLOP per byte) and GFLOP/s achieved, both from the same
/// count of work: a point's FLOPs divide its bytes for the one and its time
/// for the other. Causal attention is credited with
/// [`causal_attention_flops`], half the plain count, over the same bytes.
/// A kernel that stores the scores moves the naive bytes; the fused kernels
/// are placed where each input is read once, the least traffic any of them
/// can have (their tiles re-read `K` and `V`:
/// `roofline::tiled_intensity`).
pub fn roofline_points(d: &FastData, n: u64) -> Result<Vec<(String, f64, f64)>, ReportError> {
    let d_k = HEAD_WIDTH;
    let point = |name: &str, flops: f64, bytes: f64, ms: f64| {
        (name.to_string(), flops / bytes, flops / (ms * 1e6))
    };
    let forward = |name: &str, stores: bool, ms: f64| {
        point(name, attention_flops(n, d_k), attention_bytes(n, d_k, stores), ms)
    };
    let causal = causal_attention_flops(n, d_k);
    let backward =
        |name: &str, ms: f64| point(name, backward_flops(n, d_k), backward_bytes(n, d_k), ms);
    Ok(vec![
        forward("naive", true, d.ours("naive_1t", n)?),
        forward("tiled", false, d.ours("tiled_1t", n)?),
        forward("portable", false, d.ours("portable_1t", n)?),
        forward("fast", false, d.ours("fast_1t", n)?),
        point("fast causal", causal, attention_bytes(n, d_k, false), d.ours("fast_causal_1t", n)?),
        forward("PyTorch SDPA", false, d.theirs("sdpa_1t", n)?),
        backward("fast backward", d.ours("backward_1t", n)?),
        backward("PyTorch backward", d.theirs("sdpa_backward_1t", n)?),
    ])
}

/// The points, each with the roofline's bound at its intensity (under the
/// 512-bit peak, [`FastData::roof`]) and the share of it reached.
pub fn roofline_report(d: &FastData, n: u64) -> Result<String, ReportError> {
    let rows = roofline_points(d, n)?
        .into_iter()
        .map(|(name, intensity, achieved)| {
            let bound = roofline(intensity, d.roof(), d.bandwidth)?;
            Ok(vec![
                name,
                format!("{intensity:.1}"),
                format!("{achieved:.1}"),
                format!("{bound:.1}"),
                format!("{:.0}%", 100.0 * achieved / bound),
            ])
        })
        .collect::<Result<Vec<Vec<String>>, ReportError>>()?;
    Ok(table(&["n = 4096, one thread", "FLOP/byte", "GFLOP/s", "roof", "of roof"], &rows))
}

/// PyTorch's time over the fast kernel's for each comparison the appendix
/// makes, labelled: plain and causal attention at `ns` on one and two
/// threads, then the multi-head layer at n = 512.
pub fn vs_pytorch(d: &FastData, ns: &[u64]) -> Result<Vec<(&'static str, Vec<f64>)>, ReportError> {
    let ratio =
        |theirs: String, ours: String, n: u64| Ok(d.theirs(&theirs, n)? / d.ours(&ours, n)?);
    let attention = |c: &str, t: &str| -> Result<Vec<f64>, ReportError> {
        ns.iter().map(|&n| ratio(format!("sdpa{c}_{t}"), format!("fast{c}_{t}"), n)).collect()
    };
    let layer = |t: &str| -> Result<Vec<f64>, ReportError> {
        Ok(vec![ratio(format!("multihead_{t}"), format!("fast_multihead_{t}"), LAYER.n)?])
    };
    let backward = |c: &str, t: &str| -> Result<Vec<f64>, ReportError> {
        ns.iter()
            .map(|&n| ratio(format!("sdpa{c}_backward_{t}"), format!("backward{c}_{t}"), n))
            .collect()
    };
    Ok(vec![
        ("plain, 1 thread", attention("", "1t")?),
        ("plain, 2 threads", attention("", "2t")?),
        ("causal, 1 thread", attention("_causal", "1t")?),
        ("causal, 2 threads", attention("_causal", "2t")?),
        ("backward, plain, 1 thread", backward("", "1t")?),
        ("backward, plain, 2 threads", backward("", "2t")?),
        ("backward, causal, 1 thread", backward("_causal", "1t")?),
        ("backward, causal, 2 threads", backward("_causal", "2t")?),
        ("the layer, 1 thread", layer("1t")?),
        ("the layer, 2 threads", layer("2t")?),
    ])
}

/// How far apart two means of this run must be for the appendix to call
/// one faster: the fast kernel's whole call at n = 4096 has two means in
/// the run (criterion's and the tile sweep's), 10% apart.
pub const SPREAD: f64 = 1.1;

/// What a set of ratios says: each is above [`SPREAD`] (ours takes less
/// time), below its inverse (PyTorch's does), or within it (`at every n`
/// when there are several).
fn reading(ratios: &[f64], above: &str, below: &str) -> String {
    let every = if ratios.len() == 1 { "" } else { " at every n" };
    let side = |r: f64| match r {
        r if r > SPREAD => 1,
        r if r < 1.0 / SPREAD => -1,
        _ => 0,
    };
    let sides: Vec<i32> = ratios.iter().map(|&r| side(r)).collect();
    let within = format!("within {:.0}%", 100.0 * (SPREAD - 1.0));
    match (sides.iter().min(), sides.iter().max()) {
        (Some(1), _) => format!("{above}{every}"),
        (_, Some(-1)) => format!("{below}{every}"),
        (Some(0), Some(0)) => format!("{within}{every}"),
        (Some(0), Some(1)) => format!("{above} or {within}, by n"),
        (Some(-1), Some(0)) => format!("{below} or {within}, by n"),
        _ => "it depends on n".to_string(),
    }
}

/// `lo–hi×`, or `x×` for one ratio.
fn range(ratios: &[f64]) -> String {
    let lo = ratios.iter().cloned().fold(f64::INFINITY, f64::min);
    let hi = ratios.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    if ratios.len() == 1 {
        format!("{lo:.2}×")
    } else {
        format!("{lo:.2}–{hi:.2}×")
    }
}

/// The fast kernel against PyTorch, as measured: for each comparison the
/// range of PyTorch's time over ours at n = 1024, 2048 and 4096 (the layer
/// at n = 512), and what it says; then what a second thread buys.
pub fn speed_report(d: &FastData) -> Result<String, ReportError> {
    let ns = LENGTHS;
    let mut rows = Vec::new();
    for (what, ratios) in vs_pytorch(d, &ns)? {
        let verdict = reading(&ratios, "ours takes less time", "PyTorch's takes less time");
        rows.push(vec![what.to_string(), range(&ratios), verdict]);
    }
    let speed_up: Vec<f64> = ns
        .iter()
        .map(|&n| Ok(d.ours("fast_1t", n)? / d.ours("fast_2t", n)?))
        .collect::<Result<_, ReportError>>()?;
    let (largest, at) =
        speed_up
            .iter()
            .zip(ns)
            .fold((0.0, 0), |best, (&s, n)| if s > best.0 { (s, n) } else { best });
    let reading = if largest > 2.0 {
        let ((low_1, high_1), (low_2, high_2)) =
            (d.ours_interval("fast_1t", at)?, d.ours_interval("fast_2t", at)?);
        format!(
            "above 2 at n = {at}, within the means' 95% intervals: {:.2}–{:.2}×",
            low_1 / high_2,
            high_1 / low_2
        )
    } else {
        "at most 2, the number of cores".to_string()
    };
    rows.push(vec!["plain: one thread's time / two threads'".into(), range(&speed_up), reading]);
    Ok(table(&["fast kernel", "PyTorch's time / ours", "reading"], &rows))
}

/// One 512×512 by 512×512 product on one thread, as the crate (the `gemm`
/// crate), the crate built with OpenBLAS and PyTorch (the BLAS its header
/// names) compute it: ms and GFLOP/s, and the share of the FMA peak.
pub fn product_report(d: &FastData) -> Result<String, ReportError> {
    let blas = d.sources[3]
        .line
        .split("; ")
        .find_map(|f| f.split(", ").find_map(|p| p.strip_prefix("BLAS ")))
        .unwrap_or("not reported");
    let rows = [
        ("the crate (gemm)", d.ours("matmul_512", LAYER.n)?),
        ("the crate (OpenBLAS)", d.ours_blas("matmul_512", LAYER.n)?),
        (&*format!("PyTorch ({blas})"), d.theirs("product_1t", LAYER.n)?),
    ]
    .map(|(who, ms)| {
        let gflops = PRODUCT_FLOPS / (ms * 1e6);
        vec![
            who.to_string(),
            format!("{ms:.3}"),
            format!("{gflops:.0}"),
            format!("{:.0}%", 100.0 * gflops / d.roof()),
        ]
    });
    Ok(format!(
        "a 512×512 by 512×512 product, one thread\n{}",
        table(&["", "ms", "GFLOP/s", "of the peak"], &rows)
    ))
}
