//! The appendix "Making it fast" quotes the output of `cargo run --example
//! making_it_fast`, which reads the files one run of `cargo xtask measure
//! fast` committed in `book/data/`. These tests rebuild every quoted block
//! from the same files and functions, require the appendix to quote it
//! verbatim, and check the claims its prose makes about the data. Every
//! measured figure is bound with its source (`Bindings::from`): the whole
//! appendix compares figures of that one run, all means.

use attn::complexity::attention_flops;
use attn::experiments::roofline::{
    attention_intensity, backward_flops, backward_intensity, naive_product_intensity,
    tiled_intensity,
};
use attn::fast::{Tiles, AVX512_BLOCK, FAST_TILES};
use attn::multihead::multihead_flops;
use attn::tiled::QUERY_BLOCK;
use report::fast_data::{
    blas_table, exponential_report, layer_line, numpy_table, FastData, PRODUCT_FLOPS,
};
use report::fast_lm::{lm_training_table, mean, LmTraining};
use report::fast_profile::{profile_table, tiles_table, working_set, ProfileData};
use report::fast_report::{
    backward_table, fast_table, layer_report, machine_report, product_report, roofline_points,
    roofline_report, speed_report, vs_pytorch, SPREAD,
};
use report::provenance::Provenance;

mod common;

use report::numbers::Bindings;

const PAGE: &str = "making-it-fast.md";
const NS: [u64; 3] = [1024, 2048, 4096];

fn lowest(xs: &[f64]) -> f64 {
    xs.iter().cloned().fold(f64::INFINITY, f64::min)
}

fn highest(xs: &[f64]) -> f64 {
    xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max)
}

/// Every number the appendix shows is bound: quoted output, or a value
/// registered here with its check, or exempt (`tests/common/numbers.rs`).
#[test]
fn every_number_is_bound() {
    let d = FastData::read().unwrap();
    let p = ProfileData::read().unwrap();
    let mut sources: Vec<Provenance> = d.sources.clone();
    sources.extend(p.sources.iter().cloned());
    let sources: Vec<&Provenance> = sources.iter().collect();
    let mut b = Bindings::new(PAGE);
    b.from(&sources).quoted(&d.sources[0].line);
    // Every file of the run records the allocator settings it ran with.
    let settings = "MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=2147483647";
    b.quoted(settings).claim(
        "ours do, in every data file's header",
        sources.iter().all(|p| p.line.contains(settings)),
    );
    numpy_and_the_three_changes(&mut b, &sources, &d);
    layer_and_blas(&mut b, &sources, &d);
    the_machine_and_the_profile(&mut b, &sources, &d, &p);
    against_pytorch(&mut b, &sources, &d, &p);
    the_backward_pass(&mut b, &sources, &d);
    backward_estimate(&mut b, &sources, &p);
    training_with_it(&mut b, &d);
    the_roofline(&mut b, &sources, &d, &p);
    // Constants of the text: d = 64 (and an n×n matrix of f32 at n = 4096
    // is 64 MiB), the tests' sizes and tolerance, F = 4n²d.
    let mib = |n: u64| ((4 * n * n) >> 20) as f64;
    b.exact("64", 64)
        .exact("64", mib(4096))
        .exact("4096", 4096)
        .exact("512", 512)
        .exact("2048", 2048)
        .exact("8192", 8192)
        .exact("8,192", 8192)
        .exact("1e-5", 1e-5)
        // exp_nonpositive: six coefficients times r², plus r + 1.
        .exact("7", 7)
        .exact("4", attention_flops(1, 1))
        .exact("16", 16)
        .exact("8", 8)
        .exact("2147483647", i32::MAX);
    // The AVX-512 micro-kernel's block: rows, registers across, their
    // product, in the 32 vector registers AVX-512 has; the tests' ragged
    // tiles (src/fast/tests.rs, ODD_TILES).
    let [rows, across] = AVX512_BLOCK;
    b.exact("24", (rows * across) as f64)
        .exact("64", (across * 16) as f64)
        .exact("32", 32)
        .exact("37", 37)
        .exact("45", 45)
        .exact("10", backward_flops(1, 1))
        .exact("1e-4", 1e-4)
        // The lag a key tile's scores may have over the running maxima
        // (src/fast/avx512/softmax.rs), and the tests' jump past it.
        .rounded("2981", 8f64.exp())
        .exact("100", 100);
    b.assert_all_bound();
}

fn numpy_and_the_three_changes(b: &mut Bindings, sources: &[&Provenance], d: &FastData) {
    let mut s = b.from(sources);
    s.quoted(&numpy_table(d, &NS).unwrap());
    let naive_over_numpy: Vec<f64> = NS
        .iter()
        .map(|&n| d.ours("naive_1t", n).unwrap() / d.numpy("numpy_f32", n).unwrap())
        .collect();
    s.claim(
        "Chapter 2's function takes less time than careful NumPy at all three\nlengths",
        naive_over_numpy.iter().all(|&r| r < 1.0),
    )
    .rounded("0.77", lowest(&naive_over_numpy))
    .rounded("0.89", highest(&naive_over_numpy));
    let tutorial: Vec<f64> = NS
        .iter()
        .map(|&n| d.numpy("numpy_tutorial", n).unwrap() / d.numpy("numpy_f32", n).unwrap())
        .collect();
    s.rounded("1.9", lowest(&tutorial)).rounded("2.3", highest(&tutorial));
    // The three changes: the exponentials (an n×n copy at 4096 is 64 MiB,
    // bound with the constants).
    s.quoted(&exponential_report(d).unwrap());
    let count = 4096.0 * 4096.0;
    let saved = count
        * (d.per_exponential("std_exp").unwrap() - d.per_exponential("exp_nonpositive").unwrap());
    s.value("18", saved / 1e6, 0.5);
}

fn layer_and_blas(b: &mut Bindings, sources: &[&Provenance], d: &FastData) {
    let mut s = b.from(sources);
    s.quoted(&layer_line(d).unwrap());
    let flops = multihead_flops(512, 512, 512, 8).unwrap() as f64;
    let (layer, product) = (
        d.layer_gflops("multihead_1t", false).unwrap(),
        d.layer_gflops("matmul_512", false).unwrap(),
    );
    let (layer_blas, product_blas) = (
        d.layer_gflops("multihead_1t", true).unwrap(),
        d.layer_gflops("matmul_512", true).unwrap(),
    );
    s.rounded("1.61", flops / 1e9)
        .rounded("80%", 100.0 * layer / product)
        .rounded("20%", 100.0 - 100.0 * layer / product)
        .rounded("128", product)
        .rounded("102", layer);
    b.value("2", (8 * 512 * 512) as f64 / 1e6, 0.2)
        // Its four projections, each a 512×512 by 512×512 product.
        .rounded("1.07", 4.0 * PRODUCT_FLOPS / 1e9);
    let mut s = b.from(sources);
    s.quoted(&blas_table(d, &NS).unwrap());
    // Both OpenBLAS builds report the same kernels in their headers.
    let core = "openblas core: Haswell";
    let blas = &d.sources[1];
    let numpy = &d.sources[2];
    assert!(blas.line.contains(core) && numpy.line.contains(core));
    s.quoted(core);
    s.rounded("127", product_blas)
        .rounded("128", product)
        .rounded("104", layer_blas)
        .rounded("102", layer)
        .claim(
            "the layer at 104 instead of 102: no gain",
            (layer_blas / layer - 1.0).abs() < 0.05 && (product_blas / product - 1.0).abs() < 0.05,
        );
    let gain = |m: &str| -> Vec<f64> {
        NS.iter().map(|&n| d.ours(m, n).unwrap() / d.ours_blas(m, n).unwrap()).collect()
    };
    let (naive, tiled) = (gain("naive_1t"), gain("tiled_1t"));
    let slower: Vec<f64> = naive.iter().map(|g| 1.0 / g).collect();
    s.claim("Tiled attention takes less\ntime with OpenBLAS", tiled.iter().all(|&g| g > 1.0))
        .rounded("1.15", lowest(&tiled))
        .rounded("1.19", highest(&tiled))
        .rounded("1.01", lowest(&slower))
        .rounded("1.21", highest(&slower))
        // More beyond the page's 10% (SPREAD), the same within it.
        .claim(
            "more at $n = 2048$ and $4096$ and the\nsame at $1024$",
            slower[0] < SPREAD && slower[1..].iter().all(|&r| r > SPREAD),
        );
    let of_numpy = |m: &str| -> Vec<f64> {
        NS.iter().map(|&n| d.ours_blas(m, n).unwrap() / d.numpy("numpy_f32", n).unwrap()).collect()
    };
    let (tiled, naive) = (of_numpy("tiled_1t"), of_numpy("naive_1t"));
    s.rounded("0.73", lowest(&tiled))
        .rounded("0.98", highest(&tiled))
        .rounded("0.90", lowest(&naive))
        .rounded("1.02", highest(&naive));
}

fn the_machine_and_the_profile(
    b: &mut Bindings,
    sources: &[&Provenance],
    d: &FastData,
    p: &ProfileData,
) {
    let mut s = b.from(sources);
    s.quoted(&machine_report(d));
    let wide = d.peak_512.expect("the run's machine has AVX-512");
    let peak = d.roof();
    s.claim(
        "On this processor the two loops reach the same peak, within 1%",
        (d.peak / wide - 1.0).abs() < 0.01,
    )
    .at_most("1%", 100.0 * (d.peak / wide - 1.0).abs());
    let product = d.layer_gflops("matmul_512", false).unwrap();
    s.rounded("49%", 100.0 * product / peak).claim(
        "The crate's own\nmatrix products stay below half of it",
        product < peak / 2.0 && d.layer_gflops("matmul_512", true).unwrap() < peak / 2.0,
    );
    // The profile: phases are (name, chapter 9's ns, the portable
    // kernel's, the AVX-512 kernel's).
    s.quoted(&profile_table(p).unwrap());
    let phase = |name: &str| p.phases.iter().find(|x| x.0 == name).unwrap().clone();
    let (scores, softmax, output) = (phase("scores"), phase("softmax"), phase("output"));
    let avx = |x: &(String, f64, f64, Option<f64>)| x.3.expect("the run's machine has AVX-512");
    let whole = p.call(FAST_TILES).unwrap();
    let product_flops = attention_flops(4096, 64) / 2.0;
    let speed_ups = [&scores, &output].map(|x| x.2 / avx(x));
    s.claim(
        "does each product in about half the portable\nkernel's time",
        speed_ups.iter().all(|r| (1.9..2.1).contains(r)),
    )
    .rounded("1.98", lowest(&speed_ups))
    .rounded("2.08", highest(&speed_ups));
    let rates = [&scores, &output].map(|x| product_flops / avx(x));
    s.rounded("256.6", rates[0])
        .rounded("272.9", rates[1])
        .rounded("98%", 100.0 * rates[0] / peak)
        .rounded("104%", 100.0 * rates[1] / peak)
        .claim("at the limit of the multiply-add units", rates.iter().all(|&r| r > 0.95 * peak));
    let portable = [&scores, &output].map(|x| product_flops / x.2);
    s.rounded("123.6", portable[0])
        .rounded("137.6", portable[1])
        .rounded("47%", 100.0 * portable[0] / peak)
        .rounded("52%", 100.0 * portable[1] / peak);
    let fused = p.fused.expect("the run's machine has AVX-512");
    let weights = fused - avx(&scores);
    let together = fused + avx(&output);
    s.rounded("1.95", weights / 1e6)
        .rounded("2.63", avx(&softmax) / 1e6)
        .claim("less than the 2.63 ms of the two passes it\nreplaces", weights < avx(&softmax))
        .rounded("18.19", together / 1e6)
        .rounded("4%", 100.0 * (1.0 - together / whole))
        .rounded("226.2", attention_flops(4096, 64) / whole)
        .rounded("86%", 100.0 * attention_flops(4096, 64) / whole / peak)
        .claim(
            "turning scores into weights\nis the largest part",
            weights > 0.5 * (whole - avx(&scores) - avx(&output)),
        );
    // The tiles.
    s.quoted(&tiles_table(p).unwrap());
    let l2 = p.caches[1] * 1024.0;
    let (fastest, fastest_ns) = p.calls.iter().cloned().min_by(|a, b| a.1.total_cmp(&b.1)).unwrap();
    let gap = |ns: f64| 100.0 * (ns / fastest_ns - 1.0);
    let fitting: Vec<f64> = p
        .calls
        .iter()
        .filter(|(t, _)| working_set(*t, 64) as f64 <= l2)
        .map(|&(_, ns)| gap(ns))
        .collect();
    let all: Vec<f64> = p.calls.iter().map(|&(_, ns)| gap(ns)).collect();
    let close: Vec<f64> = all.iter().cloned().filter(|&g| g <= 4.0).collect();
    s.at_most("11%", highest(&all))
        .claim("the fastest, 64×128", fastest == Tiles { query: 64, key: 128 })
        .value("12", fitting.len() as f64, 0.0)
        .at_most("7%", highest(&fitting))
        .value("6", close.len() as f64, 0.0)
        .value("16", p.calls.len() as f64, 0.0)
        .at_most("4%", highest(&close))
        .rounded("6%", gap(p.call(FAST_TILES).unwrap()));
    let largest = Tiles { query: 512, key: 1024 };
    s.claim(
        "whose working set does not fit, takes the longest",
        working_set(largest, 64) as f64 > l2
            && p.calls.iter().all(|&(_, ns)| ns <= p.call(largest).unwrap()),
    );
    b.exact("256", FAST_TILES.query as f64).exact("128", QUERY_BLOCK as f64);
}

fn against_pytorch(b: &mut Bindings, sources: &[&Provenance], d: &FastData, p: &ProfileData) {
    let mut s = b.from(sources);
    s.quoted(&fast_table(d, &NS, false).unwrap())
        .quoted(&fast_table(d, &NS, true).unwrap())
        .quoted(&layer_report(d).unwrap())
        .quoted(&product_report(d).unwrap())
        .quoted(&speed_report(d).unwrap());
    assert!(d.sources[3].line.contains("BLAS mkl"));
    let peak = d.roof();
    let comparisons = vs_pytorch(d, &NS).unwrap();
    let of = |label: &str| comparisons.iter().find(|c| c.0 == label).unwrap().1.clone();
    let forward: Vec<f64> =
        ["plain, 1 thread", "plain, 2 threads", "causal, 1 thread", "causal, 2 threads"]
            .iter()
            .flat_map(|l| of(l))
            .collect();
    let backward: Vec<f64> = [
        "backward, plain, 1 thread",
        "backward, plain, 2 threads",
        "backward, causal, 1 thread",
        "backward, causal, 2 threads",
    ]
    .iter()
    .flat_map(|l| of(l))
    .collect();
    let everything: Vec<f64> = comparisons.iter().flat_map(|c| c.1.clone()).collect();
    let torch_product = PRODUCT_FLOPS / (d.theirs("product_1t", 512).unwrap() * 1e6);
    let sdpa = attention_flops(4096, 64) / (d.theirs("sdpa_1t", 4096).unwrap() * 1e6);
    s.rounded("44%", 100.0 * torch_product / peak)
        .claim(
            "less than\n`gemm`'s 256-bit kernels",
            torch_product < d.layer_gflops("matmul_512", false).unwrap(),
        )
        .rounded("36%", 100.0 * sdpa / peak)
        .claim(
            "In every comparison the fast kernel's mean is below PyTorch's, by far\nmore than 10%",
            everything.iter().all(|&r| r > SPREAD),
        )
        .rounded("2.06", lowest(&forward))
        .rounded("3.16", highest(&forward))
        .rounded("1.87", lowest(&backward))
        .rounded("3.24", highest(&backward));
    let plain_1 = of("plain, 1 thread");
    let fast = attention_flops(4096, 64) / (d.ours("fast_1t", 4096).unwrap() * 1e6);
    s.rounded("2.24", lowest(&plain_1))
        .rounded("2.37", highest(&plain_1))
        .rounded("19.36", d.ours("fast_1t", 4096).unwrap())
        .rounded("84%", 100.0 * fast / peak)
        .rounded("45.50", d.theirs("sdpa_1t", 4096).unwrap());
    let (sweep, criterion) = (p.call(FAST_TILES).unwrap() / 1e6, d.ours("fast_1t", 4096).unwrap());
    s.rounded("2%", 100.0 * (1.0 - sweep / criterion)).rounded("10%", 100.0 * (SPREAD - 1.0));
    let speed_up: Vec<f64> =
        NS.iter().map(|&n| d.ours("fast_1t", n).unwrap() / d.ours("fast_2t", n).unwrap()).collect();
    s.rounded("1.82", lowest(&speed_up))
        .rounded("1.91", highest(&speed_up))
        .claim("less than 2, the number of cores", highest(&speed_up) < 2.0);
    let layer = [of("the layer, 1 thread")[0], of("the layer, 2 threads")[0]];
    s.claim(
        "The multi-head layer, too, takes less time than PyTorch's",
        layer.iter().all(|&r| r > 1.0) && layer.iter().all(|&r| r < lowest(&forward)),
    )
    .rounded("1.42", layer[0])
    .rounded("1.55", layer[1]);
}

fn the_backward_pass(b: &mut Bindings, sources: &[&Provenance], d: &FastData) {
    let mut s = b.from(sources);
    s.quoted(&backward_table(d, &NS).unwrap());
    let comparisons = vs_pytorch(d, &NS).unwrap();
    let of = |label: &str| comparisons.iter().find(|c| c.0 == label).unwrap().1.clone();
    let one: Vec<f64> =
        [of("backward, plain, 1 thread"), of("backward, causal, 1 thread")].concat();
    let two: Vec<f64> =
        [of("backward, plain, 2 threads"), of("backward, causal, 2 threads")].concat();
    s.rounded("2.30", lowest(&one))
        .rounded("2.43", highest(&one))
        .rounded("1.87", lowest(&two))
        .rounded("3.24", highest(&two));
    let torch_speed_up: Vec<f64> = ["sdpa_backward", "sdpa_causal_backward"]
        .iter()
        .flat_map(|f| {
            NS.iter().map(move |&n| {
                d.theirs(&format!("{f}_1t"), n).unwrap() / d.theirs(&format!("{f}_2t"), n).unwrap()
            })
        })
        .collect();
    s.rounded("1.45", lowest(&torch_speed_up)).rounded("1.85", highest(&torch_speed_up));
    let points = roofline_points(d, 4096).unwrap();
    let point = |name: &str| points.iter().find(|p| p.0 == name).unwrap().2;
    s.rounded("221.7", point("fast backward"))
        .rounded("84%", 100.0 * point("fast backward") / d.roof())
        .rounded("94.0", point("PyTorch backward"));
    s.rounded("48.43", d.ours("backward_1t", 4096).unwrap());
}

fn backward_estimate(b: &mut Bindings, sources: &[&Provenance], p: &ProfileData) {
    let mut s = b.from(sources);
    let phase = |name: &str| p.phases.iter().find(|x| x.0 == name).unwrap().3.unwrap();
    let rate = attention_flops(4096, 64) / (phase("scores") + phase("output")); // FLOP per ns
    s.rounded("41", backward_flops(4096, 64) / rate / 1e6);
}

/// Training chapter 15's model both ways, from the file of the same run.
fn training_with_it(b: &mut Bindings, d: &FastData) {
    let lm = LmTraining::read(&d.sources[0].run).unwrap();
    let mut s = b.from(&[&lm.source]);
    s.quoted(&lm_training_table(&lm));
    let ratio = |t| mean(&lm.speeds(true, t)) / mean(&lm.speeds(false, t));
    let overlap = |t| {
        let (w, f) = (lm.speeds(false, t), lm.speeds(true, t));
        lowest(&f) <= highest(&w) && lowest(&w) <= highest(&f)
    };
    s.rounded("0.985", ratio(1))
        .rounded("1.020", ratio(2))
        .claim("It is no faster", lm.threads() == [1, 2] && overlap(1) && overlap(2));
    // Chapter 8's count for the book's model: attention's products
    // (4·T²·d a block) against all the forward pass's products.
    let c = attn::lm::SHAKESPEARE_MODEL;
    let (t, d_model) = (c.context as f64, c.d_model as f64);
    let attention = c.layers as f64 * attention_flops(c.context as u64, c.d_model as u64);
    let projections = c.layers as f64 * 2.0 * t * 4.0 * d_model * d_model;
    let ffn = c.layers as f64 * 2.0 * t * 2.0 * d_model * c.d_ff as f64;
    let head = 2.0 * t * d_model * c.vocab as f64;
    let share = attention / (attention + projections + ffn + head);
    b.claim("could not make a step much faster", share < 0.1)
        .rounded("8%", 100.0 * share)
        .exact("64", c.context as f64)
        .exact("300", 300);
}

fn the_roofline(b: &mut Bindings, sources: &[&Provenance], d: &FastData, p: &ProfileData) {
    let mut s = b.from(sources);
    s.quoted(&roofline_report(d, 4096).unwrap());
    let points = roofline_points(d, 4096).unwrap();
    let point = |name: &str| points.iter().find(|p| p.0 == name).unwrap().clone();
    let peak = d.roof();
    let (fast, torch) = (point("fast"), point("PyTorch SDPA"));
    let sweep = attention_flops(4096, 64) / p.call(FAST_TILES).unwrap();
    s.rounded("221.8", fast.2)
        .rounded("84%", 100.0 * fast.2 / peak)
        .rounded("94.4", torch.2)
        .rounded("226.2", sweep)
        .rounded("86%", 100.0 * sweep / peak);
    assert!(d.sources[3].line.contains("cpu capability AVX512"));
    // The text and the alt text: who is below half the peak, who near it.
    let below = ["naive", "tiled", "portable", "PyTorch SDPA", "PyTorch backward"];
    s.claim(
        "Every other kernel, the crate's and PyTorch's,\nstays below half the peak",
        below.iter().all(|k| point(k).2 < peak / 2.0),
    )
    .claim(
        "the fast kernel, forward and backward, is near the roof",
        ["fast", "fast backward"].iter().all(|k| point(k).2 > 0.8 * peak),
    )
    .claim(
        "the roof of the loop as compiled would lie on it and is left out",
        (d.peak / d.peak_512.unwrap() - 1.0).abs() < 0.01,
    )
    .rounded("6", peak / d.bandwidth)
    .rounded("16", points[0].1)
    .rounded("1024", torch.1)
    .rounded("1280", point("fast backward").1);
    assert_eq!(backward_intensity(4096, 64), 5.0 * 4096.0 / 16.0);
    // Memory: the tiled kernels' re-reads, naive attention's phases.
    let (tiled, fast_tiles) = (
        tiled_intensity(4096, 64, QUERY_BLOCK as u64),
        tiled_intensity(4096, 64, FAST_TILES.query as u64),
    );
    s.rounded("62", tiled).rounded("120", fast_tiles).claim(
        "both still far above\nthe ridge point",
        tiled.min(fast_tiles) > 2.0 * peak / d.bandwidth,
    );
    assert_eq!(attention_intensity(4096, 64, false), 4096.0 / 4.0);
    let naive = attention_intensity(4096, 64, true);
    s.rounded("15.8", naive)
        .claim("above the ridge point of this processor", naive > peak / d.bandwidth)
        .rounded("32%", 100.0 * point("naive").2 / peak)
        .rounded("31", naive_product_intensity(4096, 64));
}
