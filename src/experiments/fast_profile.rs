//! The appendix "Making it fast": where the fast kernel's time goes, and
//! what each of its changes to chapter 9's kernel saves. Each phase of the
//! inner loop runs alone over every tile of one call, on one thread, done
//! chapter 9's way and the fast kernel's way, and is timed: the scores
//! `Q_i K_jᵀ`, the exponentials with their row sums and the output's
//! rescaling, and the product `P_ij V_j`. Then the whole call at each of a
//! few tile sizes; and the tables the appendix quotes from what was
//! measured. Experiment and report helpers, not a reader's API.

use std::time::Instant;

use gemm::Parallelism;
use ndarray::linalg::general_mat_mul;
use ndarray::{s, Array1, Array2, ArrayView2, ArrayViewMut2};
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

use super::fast_data::machine_value;
use super::measurements::{bad, data_rows, number};
use super::provenance::{one_run, Provenance};
use crate::complexity::attention_flops;
use crate::error::AttnError;
use crate::fast::{exponentials, fast_attention_with, product, Tiles, FAST_TILES};
use crate::scaling::standard_normal;
use crate::show::table;
use crate::tiled::{online_softmax_step, tiled_attention};

/// One phase's mean time in seconds, chapter 9's way and the fast kernel's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Phase {
    /// `"scores"`, `"softmax"` or `"output"`.
    pub name: &'static str,
    /// With ndarray's product, or chapter 9's online softmax step.
    pub chapter_9: f64,
    /// With the `gemm` crate's product, or the fused exponentials.
    pub fast: f64,
}

/// A tile of `rows×cols` starting at query `i0` and key `j0`.
type TilePair = (usize, usize, usize, usize);

/// Every (query tile, key tile) pair of an `n×n` call, no mask.
fn tile_pairs(n: usize, tiles: Tiles) -> Vec<TilePair> {
    let mut pairs = Vec::new();
    for i0 in (0..n).step_by(tiles.query) {
        for j0 in (0..n).step_by(tiles.key) {
            pairs.push((i0, j0, tiles.query.min(n - i0), tiles.key.min(n - j0)));
        }
    }
    pairs
}

/// The mean seconds `f` takes over `repeats` runs, after one run to warm
/// the caches (the statistic of every timing in the appendix).
fn mean_of(repeats: usize, mut f: impl FnMut()) -> f64 {
    f();
    let start = Instant::now();
    for _ in 0..repeats {
        f();
    }
    start.elapsed().as_secs_f64() / repeats as f64
}

/// `c ← a·b` (or `c + a·b`) by ndarray, as chapter 9 does, or by `gemm`.
fn multiply(
    fast: bool,
    c: &mut ArrayViewMut2<f32>,
    a: ArrayView2<f32>,
    b: ArrayView2<f32>,
    add: bool,
) {
    if fast {
        product(c, a, b, add, Parallelism::None);
    } else {
        general_mat_mul(1.0, &a, &b, if add { 1.0 } else { 0.0 }, c);
    }
}

/// Times the three phases of the loop at `n×d` with `tiles`, each both
/// ways, the mean of `repeats` runs (a few seconds at `n = 4096`).
pub fn phases(n: usize, d: usize, tiles: Tiles, repeats: usize) -> [Phase; 3] {
    let mut rng = StdRng::seed_from_u64(n as u64);
    let [q, k, v] = [(); 3].map(|_| standard_normal(n, d, &mut rng));
    let mut s_tile = Array2::<f32>::zeros((tiles.query, tiles.key));
    let mut out = Array2::<f32>::zeros((tiles.query, d));
    let mut max = Array1::<f32>::from_elem(tiles.query, f32::NEG_INFINITY);
    let mut sum = Array1::<f32>::zeros(tiles.query);
    let pairs = tile_pairs(n, tiles);
    let mut time = |fast: bool, phase: usize| {
        mean_of(repeats, || {
            for &(i0, j0, rows, cols) in &pairs {
                let mut s_ij = s_tile.slice_mut(s![..rows, ..cols]);
                match phase {
                    0 => {
                        let q_i = q.slice(s![i0..i0 + rows, ..]);
                        multiply(
                            fast,
                            &mut s_ij,
                            q_i,
                            k.slice(s![j0..j0 + cols, ..]).t(),
                            false,
                        )
                    }
                    1 => {
                        for r in 0..rows {
                            let mut row = s_ij.row_mut(r);
                            let scores = row.as_slice_mut().expect("contiguous rows");
                            let alpha = if fast {
                                exponentials(scores, &mut max[r], &mut sum[r]).ok()
                            } else {
                                online_softmax_step(scores, &mut max[r], &mut sum[r]).ok()
                            };
                            let alpha = alpha.expect("finite scores");
                            out.row_mut(r).map_inplace(|o| *o *= alpha);
                        }
                    }
                    _ => {
                        let mut o_i = out.slice_mut(s![..rows, ..]);
                        let v_j = v.slice(s![j0..j0 + cols, ..]);
                        multiply(fast, &mut o_i, s_ij.view(), v_j, true)
                    }
                }
            }
        })
    };
    let names = ["scores", "softmax", "output"];
    [0, 1, 2].map(|p| Phase {
        name: names[p],
        chapter_9: time(false, p),
        fast: time(true, p),
    })
}

/// The whole call at `n×d` on one thread, the mean of `repeats` runs:
/// chapter 9's kernel, then the fast kernel with each of `tiles`.
pub fn whole_calls(n: usize, d: usize, tiles: &[Tiles], repeats: usize) -> (f64, Vec<f64>) {
    let mut rng = StdRng::seed_from_u64(n as u64);
    let [q, k, v] = [(); 3].map(|_| standard_normal(n, d, &mut rng));
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("a one-thread pool");
    let chapter_9 = mean_of(repeats, || {
        tiled_attention(&q, &k, &v, false).expect("finite inputs");
    });
    let fast = tiles
        .iter()
        .map(|&t| {
            mean_of(repeats, || {
                pool.install(|| fast_attention_with(&q, &k, &v, false, t).expect("finite inputs"));
            })
        })
        .collect();
    (chapter_9, fast)
}

/// The fast kernel's profile at n = 4096, d = 64 (`appendix-profile.csv`)
/// and the whole calls with each tile size (`appendix-tiles.csv`), in ns.
#[derive(Debug, Clone)]
pub struct ProfileData {
    /// Phase name, chapter 9's way, the fast kernel's way.
    pub phases: Vec<(String, f64, f64)>,
    /// Chapter 9's whole call.
    pub tiled: f64,
    /// The fast kernel's whole call with each `Tiles`.
    pub calls: Vec<(Tiles, f64)>,
    /// The cache sizes in KiB, `[L1d, L2, L3]`.
    pub caches: [f64; 3],
    /// The headers of the profile, the tile sweep and the machine's file:
    /// one run, one statistic.
    pub sources: Vec<Provenance>,
}

/// The files [`ProfileData::read`] reads.
pub const PROFILE_FILES: [&str; 3] = [
    "appendix-profile.csv",
    "appendix-tiles.csv",
    "appendix-machine.csv",
];

impl ProfileData {
    /// Reads the files of [`PROFILE_FILES`] from `book/data/`, and checks
    /// that they are one measurement run with one statistic.
    pub fn read() -> Result<ProfileData, AttnError> {
        let [profile, tiles, machine] = PROFILE_FILES.map(Provenance::read);
        let ((p, profile), (t, tiles), (m, machine)) = (profile?, tiles?, machine?);
        one_run(&[&p, &t, &m])?;
        let mut data = ProfileData::parse(&profile, &tiles, &machine)?;
        data.sources = vec![p, t, m];
        Ok(data)
    }

    /// Parses the texts of `appendix-profile.csv`, `appendix-tiles.csv` and
    /// the cache sizes of `appendix-machine.csv` (without their sources).
    pub fn parse(profile: &str, tiles: &str, machine: &str) -> Result<ProfileData, AttnError> {
        let mut phases = Vec::new();
        for r in data_rows(profile, ',') {
            let f = "appendix-profile.csv";
            let [name, ours_9, fast] = r.as_slice() else {
                return Err(bad(f, format!("bad row {r:?}")));
            };
            phases.push((name.to_string(), number(f, ours_9)?, number(f, fast)?));
        }
        let (mut tiled, mut calls) = (None, Vec::new());
        for r in data_rows(tiles, ',') {
            let f = "appendix-tiles.csv";
            let [kernel, query, key, ns] = r.as_slice() else {
                return Err(bad(f, format!("bad row {r:?}")));
            };
            let ns = number(f, ns)?;
            match *kernel {
                "tiled" => tiled = Some(ns),
                _ => calls.push((
                    Tiles {
                        query: number(f, query)?,
                        key: number(f, key)?,
                    },
                    ns,
                )),
            }
        }
        let cache = |key: &str| machine_value(machine, key);
        Ok(ProfileData {
            phases,
            tiled: tiled.ok_or_else(|| bad("appendix-tiles.csv", "no tiled row"))?,
            calls,
            caches: [cache("l1d_kib")?, cache("l2_kib")?, cache("l3_kib")?],
            sources: Vec::new(),
        })
    }

    /// The fast kernel's whole call with `tiles`, in ns.
    pub fn call(&self, tiles: Tiles) -> Result<f64, AttnError> {
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
/// phase chapter 9's way and the fast kernel's, the time saved, the
/// products' GFLOP/s and each phase's share of the fast call.
pub fn profile_table(p: &ProfileData) -> Result<String, AttnError> {
    let product_flops = attention_flops(4096, 64) / 2.0; // each of the two products
    let whole = p.call(FAST_TILES)?;
    let label = |name: &str| match name {
        "scores" => "scores Q_i K_jᵀ",
        "softmax" => "exponentials, sums, rescaling",
        _ => "output P_ij V_j",
    };
    let ms = |ns: f64| format!("{:.2}", ns / 1e6);
    let mut rows = Vec::new();
    let (mut sum_9, mut sum_fast) = (0.0, 0.0);
    for (name, ours_9, fast) in &p.phases {
        sum_9 += ours_9;
        sum_fast += fast;
        let gflops = match name.as_str() {
            "softmax" => String::new(),
            _ => format!("{:.1}", product_flops / fast),
        };
        rows.push(vec![
            label(name).to_string(),
            ms(*ours_9),
            ms(*fast),
            ms(ours_9 - fast),
            gflops,
            format!("{:.0}%", 100.0 * fast / whole),
        ]);
    }
    rows.push(vec![
        "the phases together".into(),
        ms(sum_9),
        ms(sum_fast),
        ms(sum_9 - sum_fast),
        String::new(),
        format!("{:.0}%", 100.0 * sum_fast / whole),
    ]);
    rows.push(vec![
        "the whole call".into(),
        ms(p.tiled),
        ms(whole),
        ms(p.tiled - whole),
        format!("{:.1}", 2.0 * product_flops / whole),
        "100%".into(),
    ]);
    Ok(table(
        &[
            "n = 4096, one thread",
            "chapter 9 (ms)",
            "fast (ms)",
            "saved (ms)",
            "GFLOP/s",
            "of the call",
        ],
        &rows,
    ))
}

/// The fast kernel's whole call at n = 4096 with each tile size, with the
/// tile's working set against the caches.
pub fn tiles_table(p: &ProfileData) -> Result<String, AttnError> {
    let rows: Vec<Vec<String>> = p
        .calls
        .iter()
        .map(|&(t, ns)| {
            vec![
                format!("{}×{}", t.query, t.key),
                format!("{}", working_set(t, 64) / 1024),
                format!("{:.2}", ns / 1e6),
            ]
        })
        .collect();
    Ok(format!(
        "{}\ncaches per core: L1d {:.0} KiB, L2 {:.0} KiB; L3 {:.0} KiB shared",
        table(
            &["tiles (queries×keys)", "working set (KiB)", "ms, n = 4096"],
            &rows
        ),
        p.caches[0],
        p.caches[1],
        p.caches[2]
    ))
}
