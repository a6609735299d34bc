//! The appendix "Making it fast": the fast kernel's profile as measured
//! (`attn::experiments::profile` times it), and the tables the appendix quotes.

use super::fast_data::{machine_value, HEAD_WIDTH, LONGEST};
use super::measurements::{bad, data_rows, number};
use super::provenance::{one_run, Provenance};
use crate::error::ReportError;
use crate::show::table;
use attn::complexity::attention_flops;
use attn::fast::{Tiles, FAST_TILES};

/// The fast kernel's profile at n = 4096, d = 64 (`appendix-profile.csv`)
/// and the whole calls with each tile size (`appendix-tiles.csv`), in ns.
#[derive(Debug, Clone)]
pub struct ProfileData {
    /// Phase name, chapter 9's way, the portable kernel's, the AVX-512
    /// kernel's (if the processor has it).
    pub phases: Vec<(String, f64, f64, Option<f64>)>,
    /// The AVX-512 kernel's scores with their weights, fused (its path for
    /// every key tile after a query tile's first), if the processor has it.
    pub fused: Option<f64>,
    /// Chapter 9's whole call.
    pub tiled: f64,
    /// The portable kernel's whole call, at `FAST_TILES`.
    pub portable: f64,
    /// The fast kernel's whole call with each `Tiles`.
    pub calls: Vec<(Tiles, f64)>,
    /// The cache sizes in KiB, `[L1d, L2, L3]`.
    pub caches: [f64; 3],
    /// The headers of the profile, the tile sweep and the machine's file:
    /// one run, one statistic.
    pub sources: Vec<Provenance>,
}

/// The files [`ProfileData::read`] reads.
pub const PROFILE_FILES: [&str; 3] =
    ["appendix-profile.csv", "appendix-tiles.csv", "appendix-machine.csv"];

impl ProfileData {
    /// Reads the files of [`PROFILE_FILES`] from `book/data/`, and checks
    /// that they are one measurement run with one statistic.
    pub fn read() -> Result<ProfileData, ReportError> {
        let [profile, tiles, machine] = PROFILE_FILES.map(Provenance::read);
        let ((p, profile), (t, tiles), (m, machine)) = (profile?, tiles?, machine?);
        one_run(&[&p, &t, &m])?;
        let shape = format!("n = {LONGEST}, d = {HEAD_WIDTH}");
        for source in [&p, &t] {
            if !source.line.contains(&shape) {
                return Err(bad(&source.file, format!("is not of the shape {shape}")));
            }
        }
        let mut data = ProfileData::parse(&profile, &tiles, &machine)?;
        data.sources = vec![p, t, m];
        Ok(data)
    }

    /// Parses the texts of `appendix-profile.csv`, `appendix-tiles.csv` and
    /// the cache sizes of `appendix-machine.csv` (without their sources).
    pub fn parse(profile: &str, tiles: &str, machine: &str) -> Result<ProfileData, ReportError> {
        let (mut phases, mut fused) = (Vec::new(), None);
        for r in data_rows(profile, ',') {
            let f = "appendix-profile.csv";
            let [name, ours_9, portable, avx512] = r.as_slice() else {
                return Err(bad(f, format!("bad row {r:?}")));
            };
            if *name == "fused" {
                fused = Some(number(f, avx512)?);
                continue;
            }
            let avx512 = match *avx512 {
                "" => None,
                ns => Some(number(f, ns)?),
            };
            phases.push((name.to_string(), number(f, ours_9)?, number(f, portable)?, avx512));
        }
        let (mut tiled, mut portable, mut calls) = (None, None, Vec::new());
        for r in data_rows(tiles, ',') {
            let f = "appendix-tiles.csv";
            let [kernel, query, key, ns] = r.as_slice() else {
                return Err(bad(f, format!("bad row {r:?}")));
            };
            let ns = number(f, ns)?;
            match *kernel {
                "tiled" => tiled = Some(ns),
                "portable" => portable = Some(ns),
                _ => calls.push((Tiles { query: number(f, query)?, key: number(f, key)? }, ns)),
            }
        }
        let cache = |key: &str| machine_value(machine, key);
        Ok(ProfileData {
            phases,
            fused,
            tiled: tiled.ok_or_else(|| bad("appendix-tiles.csv", "no tiled row"))?,
            portable: portable.ok_or_else(|| bad("appendix-tiles.csv", "no portable row"))?,
            calls,
            caches: [cache("l1d_kib")?, cache("l2_kib")?, cache("l3_kib")?],
            sources: Vec::new(),
        })
    }

    /// The fast kernel's whole call with `tiles`, in ns.
    pub fn call(&self, tiles: Tiles) -> Result<f64, ReportError> {
        self.calls
            .iter()
            .find(|(t, _)| *t == tiles)
            .map(|&(_, ns)| ns)
            .ok_or_else(|| bad("appendix-tiles.csv", format!("no row for {tiles:?}")))
    }
}

/// The bytes one query tile keeps in cache while a key tile passes: its
/// queries and output (`query×d` each), the key and value tiles (`key×d`
/// each) and the tile of scores (`query×key`), in f32.
pub fn working_set(tiles: Tiles, d: usize) -> usize {
    4 * (2 * tiles.query * d + 2 * tiles.key * d + tiles.query * tiles.key)
}

/// Where the time of one call goes at n = 4096, d = 64, one thread: each
/// phase chapter 9's way, the portable kernel's and the AVX-512 kernel's
/// (— without it), the AVX-512 kernel's scores and weights fused, the
/// products' GFLOP/s in the fastest kernel, the phases together (for the
/// AVX-512 kernel, those of a key tile after the first: the fused scores
/// and weights, then the output) and the whole call.
pub fn profile_table(p: &ProfileData) -> Result<String, ReportError> {
    let product_flops = attention_flops(LONGEST, HEAD_WIDTH) / 2.0; // each of the two products
    let whole = p.call(FAST_TILES)?; // the fast kernel: the best this processor runs
    let label = |name: &str| match name {
        "scores" => "scores Q_i K_jᵀ",
        "softmax" => "exponentials, sums, rescaling",
        _ => "output P_ij V_j",
    };
    let ms = |ns: f64| format!("{:.2}", ns / 1e6);
    let wide = |ns: Option<f64>| ns.map_or("—".to_string(), ms);
    let mut rows = Vec::new();
    let mut sums = [0.0; 2];
    for (name, ours_9, portable, avx512) in &p.phases {
        let best = avx512.unwrap_or(*portable);
        sums = [sums[0] + ours_9, sums[1] + portable];
        let gflops = match name.as_str() {
            "softmax" => String::new(),
            _ => format!("{:.1}", product_flops / best),
        };
        if name == "output" {
            if let Some(fused) = p.fused {
                rows.push(vec![
                    "scores and weights, fused".into(),
                    "—".into(),
                    "—".into(),
                    ms(fused),
                    String::new(),
                ]);
            }
        }
        rows.push(vec![label(name).to_string(), ms(*ours_9), ms(*portable), wide(*avx512), gflops]);
    }
    let output = p.phases.iter().find(|x| x.0 == "output").and_then(|x| x.3);
    let together = p.fused.zip(output).map(|(f, o)| f + o);
    rows.push(vec![
        "the phases together".into(),
        ms(sums[0]),
        ms(sums[1]),
        wide(together),
        String::new(),
    ]);
    rows.push(vec![
        "the whole call".into(),
        ms(p.tiled),
        ms(p.portable),
        wide(together.map(|_| whole)),
        format!("{:.1}", 2.0 * product_flops / whole),
    ]);
    Ok(table(
        &["n = 4096, one thread", "chapter 9 (ms)", "portable (ms)", "AVX-512 (ms)", "GFLOP/s"],
        &rows,
    ))
}

/// The fast kernel's whole call at n = 4096 with each tile size, with the
/// tile's working set against the caches.
pub fn tiles_table(p: &ProfileData) -> Result<String, ReportError> {
    let rows: Vec<Vec<String>> = p
        .calls
        .iter()
        .map(|&(t, ns)| {
            vec![
                format!("{}×{}", t.query, t.key),
                format!("{}", working_set(t, HEAD_WIDTH as usize) / 1024),
                format!("{:.2}", ns / 1e6),
            ]
        })
        .collect();
    Ok(format!(
        "{}\ncaches per core: L1d {:.0} KiB, L2 {:.0} KiB; L3 {:.0} KiB shared",
        table(&["tiles (queries×keys)", "working set (KiB)", "ms, n = 4096"], &rows),
        p.caches[0],
        p.caches[1],
        p.caches[2]
    ))
}
