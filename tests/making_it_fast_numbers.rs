//! The appendix "Making it fast" quotes the output of `cargo run --example
//! making_it_fast`, which reads the files one run of `cargo xtask measure
//! fast` committed in `book/data/`. These tests rebuild every quoted block
//! from the same files and functions, require the appendix to quote it
//! verbatim, and check the claims its prose makes about the data. Every
//! measured figure is bound with its source (`Bindings::from`): the whole
//! appendix compares figures of that one run, all means.

use attn::complexity::attention_flops;
use attn::fast::roofline::{
    attention_intensity, backward_flops, backward_intensity, naive_product_intensity,
    tiled_intensity,
};
use attn::fast::{Tiles, AVX512_BLOCK, FAST_TILES};
use attn::multihead::multihead_flops;
use attn::tiled::QUERY_BLOCK;
use report::fast_data::{blas_table, exponential_report, layer_line, numpy_table, FastData};
use report::fast_profile::{profile_table, tiles_table, working_set, ProfileData};
use report::fast_report::{
    backward_table, fast_table, layer_report, machine_report, roofline_points, roofline_report,
    speed_report, vs_pytorch, SPREAD,
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
        .exact("1e-4", 1e-4);
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
    .rounded("1.14", lowest(&naive_over_numpy))
    .rounded("1.29", highest(&naive_over_numpy));
    let tutorial: Vec<f64> = NS
        .iter()
        .map(|&n| d.numpy("numpy_tutorial", n).unwrap() / d.numpy("numpy_f32", n).unwrap())
        .collect();
    s.rounded("2.0", lowest(&tutorial))
        .rounded("2.9", highest(&tutorial));
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
        .rounded("75%", 100.0 * layer / product)
        .rounded("25%", 100.0 - 100.0 * layer / product)
        .rounded("107", product)
        .rounded("80", layer)
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
    s.rounded("1.14", lowest(&naive))
        .rounded("1.25", highest(&naive))
        .rounded("1.33", lowest(&tiled))
        .rounded("1.38", highest(&tiled))
        .rounded("174", d.layer_gflops("matmul_512", true).unwrap())
        .rounded("115", d.layer_gflops("multihead_1t", true).unwrap());
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
        "naive attention at\n$n = 1024$ and $2048$",
        NS.iter()
            .all(|&n| beats_numpy("naive_1t", n) == (n <= 2048)),
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
    // The profile: phases are (name, chapter 9's ns, the portable
    // kernel's, the AVX-512 kernel's).
    s.quoted(&profile_table(p).unwrap());
    let phase = |name: &str| p.phases.iter().find(|x| x.0 == name).unwrap().clone();
    let (scores, softmax, output) = (phase("scores"), phase("softmax"), phase("output"));
    let avx = |x: &(String, f64, f64, Option<f64>)| x.3.expect("the run's machine has AVX-512");
    let whole = p.call(FAST_TILES).unwrap();
    let product_flops = attention_flops(4096, 64) / 2.0;
    let halves = [&scores, &output].map(|x| avx(x) / x.2);
    s.claim(
        "does each product in a little more than half the\nportable kernel's time",
        halves.iter().all(|r| (0.5..0.6).contains(r)),
    )
    .rounded("1.75", 1.0 / highest(&halves))
    .rounded("1.92", 1.0 / lowest(&halves))
    .claim(
        "about a quarter of the portable kernel's time",
        (0.22..0.28).contains(&(avx(&softmax) / softmax.2)),
    );
    let rates = [&scores, &output].map(|x| product_flops / avx(x));
    s.rounded("201.5", rates[0])
        .rounded("195.3", rates[1])
        .rounded("82%", 100.0 * rates[0] / wide)
        .rounded("79%", 100.0 * rates[1] / wide)
        .rounded("87%", 100.0 * (avx(&scores) + avx(&output)) / whole);
    let portable = [&scores, &output].map(|x| product_flops / x.2);
    s.rounded("105.1", portable[0])
        .rounded("111.6", portable[1])
        .rounded("79%", 100.0 * portable[0] / d.peak)
        .rounded("84%", 100.0 * portable[1] / d.peak)
        .claim(
            "the same arithmetic on registers twice as wide",
            rates.iter().all(|&r| r > d.peak) && portable.iter().all(|&r| r < d.peak),
        );
    let together = avx(&scores) + avx(&softmax) + avx(&output);
    s.claim("add up to 1% more than its whole\ncall", together > whole)
        .rounded("1%", 100.0 * (together / whole - 1.0));
    // The tiles.
    s.quoted(&tiles_table(p).unwrap());
    let l2 = p.caches[1] * 1024.0;
    let (fastest, fastest_ns) = p
        .calls
        .iter()
        .cloned()
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap();
    let fitting: Vec<f64> = p
        .calls
        .iter()
        .filter(|(t, _)| working_set(*t, 64) as f64 <= l2)
        .map(|(_, ns)| 100.0 * (ns / fastest_ns - 1.0))
        .collect();
    s.at_most("11%", highest(&fitting));
    let close = p
        .calls
        .iter()
        .filter(|(_, ns)| ns / fastest_ns <= 1.04)
        .count();
    let close_gaps: Vec<f64> = p
        .calls
        .iter()
        .map(|(_, ns)| 100.0 * (ns / fastest_ns - 1.0))
        .filter(|&gap| gap <= 4.0)
        .collect();
    s.value("11", close as f64, 0.0)
        .value("16", p.calls.len() as f64, 0.0)
        .at_most("4%", highest(&close_gaps))
        .claim("256×512, the fastest here too", fastest == FAST_TILES);
    let largest = Tiles {
        query: 512,
        key: 1024,
    };
    s.claim(
        "whose working set does not\nfit",
        working_set(largest, 64) as f64 > l2,
    )
    .claim(
        "takes much longer",
        p.calls
            .iter()
            .all(|(t, ns)| *t == largest || *ns < p.call(largest).unwrap() / 1.5),
    )
    .rounded("71%", 100.0 * (p.call(largest).unwrap() / fastest_ns - 1.0));
    b.exact("256", FAST_TILES.query as f64)
        .exact("128", QUERY_BLOCK as f64);
}

fn against_pytorch(b: &mut Bindings, sources: &[&Provenance], d: &FastData, p: &ProfileData) {
    let mut s = b.from(sources);
    s.quoted(&fast_table(d, &NS, false).unwrap())
        .quoted(&fast_table(d, &NS, true).unwrap())
        .quoted(&layer_report(d).unwrap())
        .quoted(&speed_report(d).unwrap());
    let comparisons = vs_pytorch(d, &NS).unwrap();
    let of = |label: &str| comparisons.iter().find(|c| c.0 == label).unwrap().1.clone();
    let forward: Vec<f64> = [
        "plain, 1 thread",
        "plain, 2 threads",
        "causal, 1 thread",
        "causal, 2 threads",
    ]
    .iter()
    .flat_map(|l| of(l))
    .collect();
    s.claim(
        "In every comparison of the forward pass of attention the fast kernel's\nmean is below PyTorch's",
        forward.iter().all(|&r| r > 1.0),
    )
    .rounded("1.01", lowest(&forward))
    .rounded("1.54", highest(&forward));
    let (plain_2, causal_1, causal_2, plain_1) = (
        of("plain, 2 threads"),
        of("causal, 1 thread"),
        of("causal, 2 threads"),
        of("plain, 1 thread"),
    );
    let beyond = |r: f64| r > SPREAD;
    s.rounded("1.13", lowest(&plain_2))
        .rounded("1.17", highest(&plain_2))
        .rounded("1.10", lowest(&causal_1))
        .rounded("1.21", highest(&causal_1))
        .rounded("1.19", lowest(&causal_2))
        .rounded("1.54", highest(&causal_2))
        .claim(
            "ours takes\nless time, or ties at $n = 2048$ on one thread (1.10 to two decimals, a\nlittle under)",
            plain_2.iter().chain(&causal_2).all(|&r| beyond(r))
                && causal_1[1] < SPREAD
                && (causal_1[1] * 100.0).round() == 110.0
                && beyond(causal_1[0])
                && beyond(causal_1[2]),
        )
        .claim("1.05: a tie", plain_1.iter().all(|&r| !beyond(r)))
        .rounded("1.01", lowest(&plain_1))
        .rounded("1.05", highest(&plain_1));
    let phase = |name: &str| p.phases.iter().find(|x| x.0 == name).unwrap().3.unwrap();
    let products = phase("scores") + phase("output");
    let wide = d.roof();
    let product_flops = attention_flops(4096, 64) / 2.0;
    s.rounded("21.65", products / 1e6)
        .claim(
            "at about 80% of the 512-bit peak",
            [phase("scores"), phase("output")]
                .iter()
                .all(|&ns| (0.77..0.83).contains(&(product_flops / ns / wide))),
        )
        .value(
            "80%",
            50.0 * product_flops * (1.0 / phase("scores") + 1.0 / phase("output")) / wide,
            3.0,
        )
        .rounded("3.53", phase("softmax") / 1e6)
        .rounded("29.10", d.theirs("sdpa_1t", 4096).unwrap());
    let (sweep, criterion) = (
        p.call(FAST_TILES).unwrap() / 1e6,
        d.ours("fast_1t", 4096).unwrap(),
    );
    s.rounded("25.02", sweep)
        .rounded("27.80", criterion)
        .rounded("10%", 100.0 * (1.0 - sweep / criterion))
        .rounded("10%", 100.0 * (SPREAD - 1.0))
        .claim(
            "10% apart",
            ((1.0 - sweep / criterion) - (SPREAD - 1.0)).abs() < 0.005,
        );
    let speed_up = d.ours("fast_1t", 4096).unwrap() / d.ours("fast_2t", 4096).unwrap();
    let ((low_1, high_1), (low_2, high_2)) = (
        d.ours_interval("fast_1t", 4096).unwrap(),
        d.ours_interval("fast_2t", 4096).unwrap(),
    );
    s.claim("to less than half", speed_up > 2.0)
        .rounded("2.08", speed_up)
        .rounded("2.03", low_1 / high_2)
        .rounded("2.13", high_1 / low_2)
        .claim("above 2, the number of\nthreads", low_1 / high_2 > 2.0);
    let layer = [of("the layer, 1 thread")[0], of("the layer, 2 threads")[0]];
    s.claim(
        "The multi-head layer is where PyTorch stays ahead",
        layer.iter().all(|&r| r < 1.0),
    )
    .rounded("0.76", layer[0])
    .rounded("0.73", layer[1]);
}

fn the_backward_pass(b: &mut Bindings, sources: &[&Provenance], d: &FastData) {
    let mut s = b.from(sources);
    s.quoted(&backward_table(d, &NS).unwrap());
    let comparisons = vs_pytorch(d, &NS).unwrap();
    let of = |label: &str| comparisons.iter().find(|c| c.0 == label).unwrap().1.clone();
    let (plain_2, causal_2) = (
        of("backward, plain, 2 threads"),
        of("backward, causal, 2 threads"),
    );
    s.claim(
        "ours takes less time, or\nties at $n = 1024$ causal",
        plain_2.iter().all(|&r| r > SPREAD)
            && causal_2[0] <= SPREAD
            && causal_2[1..].iter().all(|&r| r > SPREAD),
    )
    .rounded("1.41", lowest(&plain_2))
    .rounded("1.71", highest(&plain_2))
    .rounded("1.08", lowest(&causal_2))
    .rounded("1.43", highest(&causal_2));
    let torch_speed_up: Vec<f64> = ["sdpa_backward", "sdpa_causal_backward"]
        .iter()
        .flat_map(|f| {
            NS.iter().map(move |&n| {
                d.theirs(&format!("{f}_1t"), n).unwrap() / d.theirs(&format!("{f}_2t"), n).unwrap()
            })
        })
        .collect();
    s.rounded("1.15", lowest(&torch_speed_up))
        .rounded("1.30", highest(&torch_speed_up));
    let (plain_1, causal_1) = (
        of("backward, plain, 1 thread"),
        of("backward, causal, 1 thread"),
    );
    let one: Vec<f64> = plain_1.iter().chain(&causal_1).cloned().collect();
    s.rounded("0.92", lowest(&one))
        .rounded("1.04", highest(&one));
    s.claim(
        "On one thread the two tie at\nevery length",
        one.iter().all(|&r| (1.0 / SPREAD..=SPREAD).contains(&r)),
    )
    .claim(
        "above 1 at $n = 1024$ for plain\nattention and at $n = 4096$ for causal attention, below at $n = 2048$",
        plain_1[0] > 1.0 && causal_1[2] > 1.0 && plain_1[1] < 1.0 && causal_1[1] < 1.0,
    );
    let points = roofline_points(d, 4096).unwrap();
    let backward: Vec<f64> = points
        .iter()
        .filter(|p| p.0.contains("backward"))
        .map(|p| p.2)
        .collect();
    assert_eq!(backward.len(), 2);
    s.rounded("166", lowest(&backward))
        .rounded("167", highest(&backward));
    // The five products at the forward products' rate in the profile.
    s.rounded("64.60", d.ours("backward_1t", 4096).unwrap());
}

fn backward_estimate(b: &mut Bindings, sources: &[&Provenance], p: &ProfileData) {
    let mut s = b.from(sources);
    let phase = |name: &str| p.phases.iter().find(|x| x.0 == name).unwrap().3.unwrap();
    let rate = attention_flops(4096, 64) / (phase("scores") + phase("output")); // FLOP per ns
    s.rounded("54", backward_flops(4096, 64) / rate / 1e6);
}

fn the_roofline(b: &mut Bindings, sources: &[&Provenance], d: &FastData, p: &ProfileData) {
    let mut s = b.from(sources);
    s.quoted(&roofline_report(d, 4096).unwrap());
    let points = roofline_points(d, 4096).unwrap();
    let point = |name: &str| points.iter().find(|p| p.0 == name).unwrap().clone();
    let wide = d.roof();
    let (fast, torch) = (point("fast"), point("PyTorch SDPA"));
    let sweep = attention_flops(4096, 64) / p.call(FAST_TILES).unwrap();
    s.rounded("154.5", fast.2)
        .rounded("63%", 100.0 * fast.2 / wide)
        .rounded("147.6", torch.2)
        .rounded("171.6", sweep)
        .rounded("70%", 100.0 * sweep / wide)
        .claim(
            "The fast kernel is the first of the crate's above the peak of the loop as\ncompiled",
            ["naive", "tiled", "portable"]
                .iter()
                .all(|k| point(k).2 < d.peak)
                && fast.2 > d.peak,
        );
    assert!(d.sources[3].line.contains("cpu capability AVX512"));
    // The alt text.
    let below = ["naive", "tiled", "portable"];
    let above = [
        "fast",
        "fast causal",
        "PyTorch SDPA",
        "fast backward",
        "PyTorch backward",
    ];
    s.claim(
        "The naive, tiled and portable kernels are below the lower roof",
        below.iter().all(|k| point(k).2 < d.peak)
            && above
                .iter()
                .all(|k| point(k).2 > d.peak && point(k).2 < wide),
    )
    .rounded("16", wide / d.bandwidth)
    .rounded("16", points[0].1)
    .rounded("1024", torch.1)
    .rounded("1280", point("fast backward").1);
    assert_eq!(backward_intensity(4096, 64), 5.0 * 4096.0 / 16.0);
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
