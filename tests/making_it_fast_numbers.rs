//! The appendix "Making it fast" quotes the output of `cargo run --example
//! making_it_fast`, which reads the files one run of `cargo xtask measure
//! fast` committed in `book/data/`. These tests rebuild every quoted block
//! from the same files and functions, require the appendix to quote it
//! verbatim, and check the claims its prose makes about the data. Every
//! measured figure is bound with its source (`Bindings::from`): the whole
//! appendix compares figures of that one run, all means.

use attn::complexity::attention_flops;
use attn::fast::roofline::{attention_intensity, naive_product_intensity, tiled_intensity};
use attn::fast::FAST_TILES;
use attn::multihead::multihead_flops;
use attn::tiled::QUERY_BLOCK;
use report::fast_data::{blas_table, exponential_report, layer_line, numpy_table, FastData};
use report::fast_profile::{profile_table, tiles_table, working_set, ProfileData};
use report::fast_report::{
    fast_table, layer_report, machine_report, roofline_points, roofline_report, speed_report,
    vs_pytorch,
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
        "Careful NumPy takes less time than chapter 2's function at all three\nlengths",
        naive_over_numpy.iter().all(|&r| r > 1.0),
    )
    .rounded("1.19", lowest(&naive_over_numpy))
    .rounded("1.39", highest(&naive_over_numpy));
    let tutorial: Vec<f64> = NS
        .iter()
        .map(|&n| d.numpy("numpy_tutorial", n).unwrap() / d.numpy("numpy_f32", n).unwrap())
        .collect();
    s.rounded("2.0", lowest(&tutorial))
        .rounded("3.2", highest(&tutorial));
    // The three changes: the exponentials (an n×n copy at 4096 is 64 MiB,
    // bound with the constants).
    s.quoted(&exponential_report(d).unwrap());
    let count = 4096.0 * 4096.0;
    let saved = count
        * (d.per_exponential("std_exp").unwrap() - d.per_exponential("exp_nonpositive").unwrap());
    s.value("20", saved / 1e6, 0.5);
}

fn layer_and_blas(b: &mut Bindings, sources: &[&Provenance], d: &FastData) {
    let mut s = b.from(sources);
    s.quoted(&layer_line(d).unwrap());
    let flops = multihead_flops(512, 512, 512, 8).unwrap() as f64;
    let (layer, product) = (
        d.layer_gflops("multihead_1t", false).unwrap(),
        d.layer_gflops("matmul_512", false).unwrap(),
    );
    s.rounded("1.61", flops / 1e9)
        .rounded("84%", 100.0 * layer / product)
        .rounded("16%", 100.0 - 100.0 * layer / product)
        .rounded("98", product)
        .rounded("82", layer)
        .value("2", (8 * 512 * 512) as f64 / 1e6, 0.2);
    s.claim(
        "A tuned BLAS runs\nthe same product faster",
        d.ours_blas("matmul_512", 512).unwrap() < d.ours("matmul_512", 512).unwrap(),
    );
    s.quoted(&blas_table(d, &NS).unwrap());
    let gain = |m: &str| -> Vec<f64> {
        NS.iter()
            .map(|&n| d.ours(m, n).unwrap() / d.ours_blas(m, n).unwrap())
            .collect()
    };
    let (naive, tiled) = (gain("naive_1t"), gain("tiled_1t"));
    s.rounded("1.20", lowest(&naive))
        .rounded("1.25", highest(&naive))
        .rounded("1.35", lowest(&tiled))
        .rounded("1.38", highest(&tiled))
        .rounded("154", d.layer_gflops("matmul_512", true).unwrap())
        .rounded("119", d.layer_gflops("multihead_1t", true).unwrap());
    s.claim(
        "Tiled attention gains more\nthan naive attention",
        lowest(&tiled) > highest(&naive),
    );
    s.claim(
        "every attention call\nin the table takes less time",
        naive.iter().chain(&tiled).all(|&g| g > 1.0),
    );
    let beats_numpy =
        |m: &str, n: u64| d.ours_blas(m, n).unwrap() < d.numpy("numpy_f32", n).unwrap();
    s.claim(
        "tiled attention takes less time\nthan NumPy's `float32` version at every length",
        NS.iter().all(|&n| beats_numpy("tiled_1t", n)),
    );
    s.claim(
        "naive attention at\n$n = 1024$ only",
        NS.iter()
            .all(|&n| beats_numpy("naive_1t", n) == (n == 1024)),
    );
    // Both OpenBLAS builds report the same kernels in their headers.
    let core = "openblas core: SkylakeX";
    let blas = &d.sources[1];
    let numpy = &d.sources[2];
    assert!(blas.line.contains(core) && numpy.line.contains(core));
    s.quoted(core);
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
    s.claim(
        "The plain loop reaches about half of the 512-bit peak",
        (0.45..0.6).contains(&(d.peak / wide)),
    );
    s.claim(
        "crate's own matrix products stay below even that lower peak",
        d.layer_gflops("matmul_512", false).unwrap() < d.peak
            && d.layer_gflops("matmul_512", true).unwrap() > d.peak,
    );
    // The profile: phases are (name, chapter 9's ns, the fast kernel's ns).
    s.quoted(&profile_table(p).unwrap());
    let phase = |name: &str| p.phases.iter().find(|x| x.0 == name).unwrap().clone();
    let (scores, softmax, output) = (phase("scores"), phase("softmax"), phase("output"));
    let whole = p.call(FAST_TILES).unwrap();
    s.rounded("72%", 100.0 * (scores.2 + output.2) / whole);
    s.claim(
        "On these shapes `gemm` runs faster than ndarray's\nproduct",
        scores.2 < scores.1 && output.2 < output.1,
    );
    s.claim("runs faster than the scores", output.2 < scores.2);
    s.claim(
        "with\nndarray's product it is the other way round",
        scores.1 < output.1,
    );
    let saved = |x: &(String, f64, f64)| x.1 - x.2;
    s.claim(
        "product with $V$ gains most from the change",
        saved(&output) > saved(&scores) && saved(&output) > saved(&softmax),
    );
    s.claim(
        "takes\n4.17 ms less than chapter 9's separate passes",
        saved(&softmax) > 0.0,
    )
    .rounded("4.17", saved(&softmax) / 1e6);
    s.claim(
        "The\nphases together account for nearly all of the call",
        (scores.2 + softmax.2 + output.2) / whole > 0.9,
    )
    .rounded(
        "4%",
        100.0 * (1.0 - (scores.2 + softmax.2 + output.2) / whole),
    );
    // The tiles.
    s.quoted(&tiles_table(p).unwrap());
    let mut by_time = p.calls.clone();
    by_time.sort_by(|a, b| b.1.total_cmp(&a.1));
    s.claim(
        "The smallest tiles take longest",
        by_time[..2]
            .iter()
            .all(|(t, _)| working_set(*t, 64) <= 192 * 1024),
    );
    let (fastest, fastest_ns) = *by_time.last().unwrap();
    s.quoted(&format!("fastest, {}×{}", fastest.query, fastest.key));
    let large: Vec<f64> = p
        .calls
        .iter()
        .filter(|(t, _)| t.query >= 256 && t.key >= 256)
        .map(|(_, ns)| 100.0 * (ns / fastest_ns - 1.0))
        .collect();
    s.at_most("8%", highest(&large));
    let l2 = p.caches[1] * 1024.0;
    s.claim(
        "whose working set fits one core's L2 cache",
        working_set(fastest, 64) as f64 <= l2,
    )
    .at_most("2%", 100.0 * (whole / fastest_ns - 1.0));
    s.claim(
        "with a working set that also\nfits it",
        working_set(FAST_TILES, 64) as f64 <= l2,
    );
    b.exact("256", FAST_TILES.query as f64)
        .exact("128", QUERY_BLOCK as f64);
}

fn against_pytorch(b: &mut Bindings, sources: &[&Provenance], d: &FastData, p: &ProfileData) {
    let mut s = b.from(sources);
    s.quoted(&fast_table(d, &NS, false).unwrap())
        .quoted(&fast_table(d, &NS, true).unwrap())
        .quoted(&layer_report(d).unwrap())
        .quoted(&speed_report(d).unwrap());
    // Every comparison, labelled as in the report's rows.
    let comparisons = vs_pytorch(d, &NS).unwrap();
    let ratios: Vec<f64> = comparisons.iter().flat_map(|c| c.1.clone()).collect();
    s.claim(
        "PyTorch's call takes less time than the fast kernel's in\nevery comparison",
        ratios.iter().all(|&r| r < 1.0),
    )
    .rounded("46%", 100.0 * lowest(&ratios))
    .rounded("73%", 100.0 * highest(&ratios));
    let one_thread: Vec<f64> = comparisons
        .iter()
        .filter(|c| c.0.ends_with("1 thread"))
        .flat_map(|c| c.1.clone())
        .collect();
    s.rounded("46%", 100.0 * lowest(&one_thread))
        .rounded("54%", 100.0 * highest(&one_thread));
    let speed_up = |n| d.ours("fast_1t", n).unwrap() / d.ours("fast_2t", n).unwrap();
    s.claim(
        "second thread nearly halves the fast kernel's time for plain",
        [2048, 4096]
            .iter()
            .all(|&n| (1.9..=2.0).contains(&speed_up(n))),
    );
    // The two products alone against PyTorch's whole call.
    let phase = |name: &str| p.phases.iter().find(|x| x.0 == name).unwrap().2;
    let products = phase("scores") + phase("output");
    let torch = d.theirs("sdpa_1t", 4096).unwrap();
    s.rounded("39.07", products / 1e6)
        .rounded("26.53", torch)
        .claim("more than PyTorch's whole call", products / 1e6 > torch)
        .claim(
            "why the fast kernel falls short",
            ratios.iter().all(|&r| r < 1.0),
        );
}

fn the_roofline(b: &mut Bindings, sources: &[&Provenance], d: &FastData, p: &ProfileData) {
    let mut s = b.from(sources);
    s.quoted(&roofline_report(d, 4096).unwrap());
    let points = roofline_points(d, 4096).unwrap();
    let (torch, ours) = (&points[5], &points[..5]);
    s.rounded("161.9", torch.2).rounded("132.9", d.peak).claim(
        "PyTorch's call runs at 161.9 GFLOP/s, more than the 132.9 GFLOP/s",
        torch.2 > d.peak,
    );
    assert!(d.sources[3].line.contains("cpu capability AVX512"));
    // The products' rates, from the profile, against the compiled loop's peak.
    let product_flops = attention_flops(4096, 64) / 2.0;
    let phase = |name: &str| p.phases.iter().find(|x| x.0 == name).unwrap().2;
    let (scores, output) = (
        product_flops / phase("scores"),
        product_flops / phase("output"),
    );
    s.rounded("106.2", scores)
        .rounded("113.9", output)
        .rounded("80%", 100.0 * scores / d.peak)
        .rounded("86%", 100.0 * output / d.peak);
    // The alt text: every crate kernel under the lower roof, PyTorch between.
    let wide = d.roof();
    s.claim(
        "Every crate kernel is below the lower roof",
        ours.iter().all(|k| k.2 < d.peak) && torch.2 > d.peak && torch.2 < wide,
    )
    .rounded("15", wide / d.bandwidth)
    .rounded("16", points[0].1)
    .rounded("1024", torch.1);
    // Memory: the tiled kernels' re-reads, naive attention's phases.
    let (tiled, fast) = (
        tiled_intensity(4096, 64, QUERY_BLOCK as u64),
        tiled_intensity(4096, 64, FAST_TILES.query as u64),
    );
    s.rounded("62", tiled).rounded("120", fast).claim(
        "both still far above\neither ridge point",
        tiled.min(fast) > 2.0 * wide / d.bandwidth,
    );
    assert_eq!(attention_intensity(4096, 64, false), 4096.0 / 4.0);
    let naive = attention_intensity(4096, 64, true);
    s.rounded("15.8", naive)
        .claim(
            "at the upper ridge point",
            (naive / (wide / d.bandwidth) - 1.0).abs() < 0.1,
        )
        .rounded("31", naive_product_intensity(4096, 64));
}
