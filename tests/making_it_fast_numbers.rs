//! The appendix "Making it fast" quotes the output of `cargo run --example
//! making_it_fast`, which reads the files one run of `cargo xtask measure
//! fast` committed in `book/data/`. These tests rebuild every quoted block
//! from the same files and functions, require the appendix to quote it
//! verbatim, and check the claims its prose makes about the data. Every
//! measured figure is bound with its source (`Bindings::from`): the whole
//! appendix compares figures of that one run, all means. Each section of
//! the page is bound by a function of its own, place by place, in the
//! order the section shows its numbers; the constants the text states come
//! from the crate, from the report's shapes of the run, from the committed
//! files, or from the source of the test the sentence describes.

use attn::complexity::{activation_bytes, attention_flops};
use attn::experiments::roofline::{
    attention_bytes, attention_intensity, backward_flops, backward_intensity,
    causal_attention_flops, naive_product_intensity, tiled_intensity, LANES_256, LANES_512,
    REGISTERS_512,
};
use attn::fast::{Tiles, AVX512_BLOCK, FAST_TILES};
use attn::multihead::multihead_flops;
use attn::tiled::{KEY_BLOCK, QUERY_BLOCK};
use regex::Regex;
use report::fast_data::{
    blas_table, exponential_report, layer_line, numpy_table, zen_core, FastData, HEAD_WIDTH, LAYER,
    LENGTHS, LONGEST, PRODUCT_FLOPS, ZEN_CORES,
};
use report::fast_lm::{lm_training_table, mean, LmTraining};
use report::fast_profile::{profile_table, tiles_table, working_set, ProfileData};
use report::fast_report::{
    backward_table, fast_table, layer_report, machine_report, product_report, roofline_points,
    roofline_report, speed_report, vs_pytorch, SPREAD,
};
use report::provenance::Provenance;

mod common;

use report::numbers::{captured, number_in_source, Bindings};

const PAGE: &str = "making-it-fast.md";

fn lowest(xs: &[f64]) -> f64 {
    xs.iter().cloned().fold(f64::INFINITY, f64::min)
}

fn highest(xs: &[f64]) -> f64 {
    xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max)
}

/// Bits of a vector of `lanes` `f32`.
fn bits(lanes: usize) -> f64 {
    (lanes * 8 * std::mem::size_of::<f32>()) as f64
}

/// MiB of an `n×n` matrix of `f32`.
fn mib(n: u64) -> f64 {
    ((4 * n * n) >> 20) as f64
}

/// Every number the appendix shows is bound: quoted output, or a value
/// registered here with its check, or exempt (`report::numbers::exemption`).
#[test]
fn every_number_is_bound() {
    let d = FastData::read().unwrap();
    let p = ProfileData::read().unwrap();
    let mut sources: Vec<Provenance> = d.sources.clone();
    sources.extend(p.sources.iter().cloned());
    let sources: Vec<&Provenance> = sources.iter().collect();
    let mut b = Bindings::new(PAGE);
    measuring_honestly(&mut b, &sources, &d);
    against_numpy(&mut b, &sources, &d);
    three_choices(&mut b, &sources, &d);
    one_multihead_layer(&mut b, &sources, &d);
    with_a_blas(&mut b, &sources, &d);
    knowing_the_limit(&mut b, &sources, &d, &p);
    a_kernel_written_for_speed(&mut b);
    sixteen_queries_to_a_register(&mut b, &d);
    maxima_that_may_lag(&mut b);
    where_the_time_goes(&mut b, &sources, &d, &p);
    choosing_the_tiles(&mut b, &sources, &p);
    against_pytorch(&mut b, &sources, &d);
    how_close_and_how_sure(&mut b, &sources, &d, &p);
    where_each_kernel_sits(&mut b, &sources, &d, &p);
    the_backward_pass(&mut b);
    five_products(&mut b, &sources, &d, &p);
    training_with_it(&mut b, &d);
    // "Means of seven runs each": the profile's repeats.
    b.section("Exact attention at the machine's limit").exact(
        "seven",
        report::numbers::number_in_source("examples/making_it_fast_data.rs", "REPEATS", "= "),
    );
    b.section("");
    b.assert_all_bound();
}

fn measuring_honestly(b: &mut Bindings, sources: &[&Provenance], d: &FastData) {
    b.section("Measuring honestly");
    b.from(sources).quoted(&d.sources[0].line);
    // Every file of the run records the allocator settings it ran with.
    let settings = "MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=2147483647";
    b.quoted(settings).claim(
        "ours do, in every data file's header",
        sources.iter().all(|p| p.line.contains(settings)),
    );
}

fn against_numpy(b: &mut Bindings, sources: &[&Provenance], d: &FastData) {
    b.section("Against NumPy");
    b.exact("64", HEAD_WIDTH as f64);
    let mut s = b.from(sources);
    s.quoted(&numpy_table(d, &LENGTHS).unwrap());
    let naive_over_numpy: Vec<f64> = LENGTHS
        .iter()
        .map(|&n| d.ours("naive_1t", n).unwrap() / d.numpy("numpy_f32", n).unwrap())
        .collect();
    s.claim(
        "Chapter 2's function takes less time than careful NumPy at all three\nlengths",
        naive_over_numpy.iter().all(|&r| r < 1.0),
    )
    .rounded("0.77", lowest(&naive_over_numpy))
    .rounded("0.89", highest(&naive_over_numpy));
    // "all three lengths": the lengths compared.
    assert_eq!(LENGTHS.len(), 3);
    b.exact("256", bits(LANES_256)).exact("512", bits(LANES_512));
    let tutorial: Vec<f64> = LENGTHS
        .iter()
        .map(|&n| d.numpy("numpy_tutorial", n).unwrap() / d.numpy("numpy_f32", n).unwrap())
        .collect();
    b.from(sources).rounded("1.9", lowest(&tutorial)).rounded("2.3", highest(&tutorial));
}

fn three_choices(b: &mut Bindings, sources: &[&Provenance], d: &FastData) {
    b.section("Three choices in chapter 2's function");
    // An n×n copy at the longest length, and the polynomial's degree: its
    // coefficients multiply r², r³, …, and r + 1 comes first.
    let coefficients = captured("src/real.rs", r"EXP_POLYNOMIAL: \[f32; (\d+)\]")[0];
    b.exact("4096", LONGEST as f64)
        .exact("64", mib(LONGEST))
        .exact("7", coefficients + 1.0)
        .exact("4096", LONGEST as f64);
    let mut s = b.from(sources);
    s.quoted(&exponential_report(d).unwrap());
    let count = (LONGEST * LONGEST) as f64;
    let saved = count
        * (d.per_exponential("std_exp").unwrap() - d.per_exponential("exp_nonpositive").unwrap());
    s.value("18", saved / 1e6, 0.5);
    b.exact("4096", LONGEST as f64);
}

fn one_multihead_layer(b: &mut Bindings, sources: &[&Provenance], d: &FastData) {
    b.section("One multi-head layer");
    let flops = layer_flops();
    b.exact("512", LAYER.n as f64)
        .exact("512", LAYER.d_model as f64)
        .exact("8", LAYER.heads as f64)
        // The product of a projection: n×d_model by d_model×d_model, twice.
        .exact("512", LAYER.n as f64)
        .exact("512", LAYER.d_model as f64)
        .exact("512", LAYER.d_model as f64)
        .exact("512", LAYER.d_model as f64);
    let (layer, product) = (
        d.layer_gflops("multihead_1t", false).unwrap(),
        d.layer_gflops("matmul_512", false).unwrap(),
    );
    let mut s = b.from(sources);
    s.quoted(&layer_line(d).unwrap());
    s.rounded("1.61", flops / 1e9)
        .rounded("128", product)
        .rounded("102", layer)
        .rounded("80%", 100.0 * layer / product)
        .rounded("20%", 100.0 - 100.0 * layer / product);
    // The softmax's exponentials: one for each score of each head.
    b.value("2", (LAYER.heads * LAYER.n * LAYER.n) as f64 / 1e6, 0.2);
}

fn with_a_blas(b: &mut Bindings, sources: &[&Provenance], d: &FastData) {
    b.section("With a BLAS");
    let mut s = b.from(sources);
    s.quoted(&blas_table(d, &LENGTHS).unwrap());
    // Both OpenBLAS builds report the same kernels in their headers.
    let core = "openblas core: Haswell";
    let (blas, numpy) = (&d.sources[1], &d.sources[2]);
    assert!(blas.line.contains(core) && numpy.line.contains(core));
    s.quoted(core);
    b.exact("256", bits(LANES_256))
        .exact("512", bits(LANES_512))
        .exact("512", LAYER.n as f64)
        .exact("512", LAYER.d_model as f64);
    let (layer, product) = (
        d.layer_gflops("multihead_1t", false).unwrap(),
        d.layer_gflops("matmul_512", false).unwrap(),
    );
    let (layer_blas, product_blas) = (
        d.layer_gflops("multihead_1t", true).unwrap(),
        d.layer_gflops("matmul_512", true).unwrap(),
    );
    let gain = |m: &str| -> Vec<f64> {
        LENGTHS.iter().map(|&n| d.ours(m, n).unwrap() / d.ours_blas(m, n).unwrap()).collect()
    };
    let (naive, tiled) = (gain("naive_1t"), gain("tiled_1t"));
    let slower: Vec<f64> = naive.iter().map(|g| 1.0 / g).collect();
    let mut s = b.from(sources);
    s.rounded("127", product_blas)
        .rounded("128", product)
        .rounded("104", layer_blas)
        .rounded("102", layer)
        .claim(
            "the layer at 104 instead of 102: no gain",
            (layer_blas / layer - 1.0).abs() < 0.05 && (product_blas / product - 1.0).abs() < 0.05,
        )
        .claim("Tiled attention takes less\ntime with OpenBLAS", tiled.iter().all(|&g| g > 1.0))
        .rounded("1.15", lowest(&tiled))
        .rounded("1.19", highest(&tiled))
        .rounded("1.01", lowest(&slower))
        .rounded("1.21", highest(&slower))
        // More beyond the page's 10% (SPREAD), the same within it.
        .claim(
            "more at $n = 2048$ and $4096$ and the\nsame at $1024$",
            slower[0] < SPREAD && slower[1..].iter().all(|&r| r > SPREAD),
        );
    b.exact("2048", LENGTHS[1] as f64)
        .exact("4096", LENGTHS[2] as f64)
        .exact("1024", LENGTHS[0] as f64);
    let of_numpy = |m: &str| -> Vec<f64> {
        LENGTHS
            .iter()
            .map(|&n| d.ours_blas(m, n).unwrap() / d.numpy("numpy_f32", n).unwrap())
            .collect()
    };
    let (tiled, naive) = (of_numpy("tiled_1t"), of_numpy("naive_1t"));
    b.from(sources)
        .rounded("0.73", lowest(&tiled))
        .rounded("0.98", highest(&tiled))
        .rounded("0.90", lowest(&naive))
        .rounded("1.02", highest(&naive));
}

fn knowing_the_limit(b: &mut Bindings, sources: &[&Provenance], d: &FastData, p: &ProfileData) {
    b.section("Knowing the limit");
    let (wide, narrow) = (bits(LANES_512), bits(LANES_256));
    let mut s = b.from(sources);
    s.quoted(&machine_report(d));
    let wide_peak = d.peak_512.expect("the run's machine has AVX-512");
    let peak = d.roof();
    s.claim(
        "On this processor the two loops reach the same peak, within 1%",
        (d.peak / wide_peak - 1.0).abs() < 0.01,
    )
    .at_most("1%", 100.0 * (d.peak / wide_peak - 1.0).abs());
    // "512-bit AVX-512 instructions", "512-bit instructions too",
    // "512-bit `zmm` registers", "256-bit vectors (its `prefer-256-bit`".
    b.exact("512", wide)
        .exact("512", wide)
        .exact("512", wide)
        .exact("512", wide)
        .exact("256", narrow)
        .exact("256", narrow)
        // Its 512×512 product.
        .exact("512", LAYER.n as f64)
        .exact("512", LAYER.d_model as f64);
    let product = d.layer_gflops("matmul_512", false).unwrap();
    let product_blas = d.layer_gflops("matmul_512", true).unwrap();
    let mut s = b.from(sources);
    s.rounded("128", product)
        .rounded("49%", 100.0 * product / peak)
        .rounded("127", product_blas)
        .claim(
            "The crate's own\nmatrix products, in this run, stayed below half of it",
            product < peak / 2.0 && product_blas < peak / 2.0,
        );
    // "no AVX-512 kernels", "256-bit vectors", "512-bit vectors", then the
    // paragraph on the width of the units.
    b.exact("512", wide).exact("256", narrow).exact("512", wide);
    let zen = |wide: bool| ZEN_CORES.iter().find(|c| c.2 == wide).unwrap().0 as f64;
    b.exact("256", narrow)
        .exact("512", wide)
        .exact("512", wide)
        .exact("5", zen(true))
        .exact("512", wide)
        .exact("256", narrow)
        .exact("4", zen(false))
        .exact("5", zen(true))
        .exact("512", wide)
        .exact("256", narrow)
        .exact("256", narrow)
        .exact("512", wide);
    // The run's processor: its caches name the core.
    let [l1, l2, _] = p.caches;
    let (generation, _, units_512) = zen_core(l1).expect("the caches of a Zen core");
    let other = ZEN_CORES.iter().find(|c| c.0 != generation).unwrap();
    let portable_over_avx512: Vec<f64> = ["scores", "output"]
        .iter()
        .map(|name| {
            let x = p.phases.iter().find(|x| x.0 == *name).unwrap();
            x.2 / x.3.expect("the run's machine has AVX-512")
        })
        .collect();
    let mut s = b.from(sources);
    s.rounded("48", l1).rounded("1024", l2);
    s.claim(
        "the profile below agrees with units 512 bits wide",
        units_512 && portable_over_avx512.iter().all(|r| (1.9..2.1).contains(r)),
    );
    b.exact("5", generation as f64)
        .exact("4", other.0 as f64)
        .claim("whose L1 data cache is smaller", other.1 < l1)
        .exact("512", wide)
        .exact("512", wide)
        .exact("256", narrow);
    // The roofline: F = 4n²d over 16nd bytes, n/4; causal n/8.
    let n = LONGEST;
    b.exact("4", attention_flops(1, 1))
        .exact("16", activation_bytes(1, 1))
        .exact("4", n as f64 / attention_intensity(n, HEAD_WIDTH, false).unwrap())
        .exact(
            "8",
            n as f64
                / (causal_attention_flops(n, HEAD_WIDTH) / attention_bytes(n, HEAD_WIDTH, false)),
        )
        .exact("4", n as f64 / attention_intensity(n, HEAD_WIDTH, false).unwrap());
}

fn a_kernel_written_for_speed(b: &mut Bindings) {
    b.section("A kernel written for speed");
    // tests/fast_memory.rs: the lengths of its forward test.
    let forward = captured("tests/fast_memory.rs", r"for n in \[(\d+), \d+, (\d+)\]");
    let tolerance = captured("src/fast/tests.rs", r"epsilon = (1e-5)")[0];
    b.exact("512", forward[0])
        .exact("8192", forward[1])
        .exact("256", FAST_TILES.query as f64)
        .exact("512", FAST_TILES.key as f64)
        .exact("128", QUERY_BLOCK as f64)
        .exact("256", KEY_BLOCK as f64)
        .exact("1e-5", tolerance);
}

fn sixteen_queries_to_a_register(b: &mut Bindings, d: &FastData) {
    b.section("Sixteen queries to a register");
    let [rows, across] = AVX512_BLOCK;
    let rustc = Regex::new(r"rustc (\d+\.\d+)\.\d+")
        .unwrap()
        .captures(&d.sources[0].line)
        .expect("the run's header names its compiler")[1]
        .parse::<f64>()
        .unwrap();
    let odd =
        captured("src/fast/tests.rs", r"ODD_TILES: Tiles = Tiles \{ query: (\d+), key: (\d+)");
    let tolerance = captured("src/fast/tests.rs", r"epsilon = (1e-5)")[0];
    // "which leaves three registers spare": the block, a row of B's
    // registers and one broadcast.
    assert_eq!(REGISTERS_512 - rows * across - across - 1, 3);
    b.exact("256", bits(LANES_256))
        .exact("512", bits(LANES_512))
        .exact("64", (across * LANES_512) as f64)
        .exact("24", (rows * across) as f64)
        .exact("32", REGISTERS_512 as f64)
        .exact("24", (rows * across) as f64)
        .value("1.95", rustc, 0.0)
        .exact("32", REGISTERS_512 as f64)
        .exact("24", (rows * across) as f64)
        // A load of sixteen f32, 64 bytes.
        .exact("64", (LANES_512 * std::mem::size_of::<f32>()) as f64)
        .exact("1e-5", tolerance)
        .exact("37", odd[0])
        .exact("45", odd[1]);
}

fn maxima_that_may_lag(b: &mut Bindings) {
    b.section("Maxima that may lag");
    let lag = captured("src/fast/avx512/softmax.rs", r"const LAG: f32 = ([\d.]+);")[0];
    let jump = captured("src/fast/tests.rs", r"(\d+)\.0 \+ \(j % 5\)")[0];
    let version = captured("book/bibliography.md", r"reverse-engineered Flash Attention (\d)")[0];
    let tile_kib = (FAST_TILES.query * FAST_TILES.key * 4 / 1024) as f64;
    b.exact("256", FAST_TILES.query as f64)
        .exact("512", FAST_TILES.key as f64)
        .exact("512", tile_kib)
        .exact("512", bits(LANES_512))
        .exact("8", lag)
        .rounded("2981", lag.exp())
        .exact("8", lag)
        .exact("4", version)
        .exact("100", jump);
}

fn where_the_time_goes(b: &mut Bindings, sources: &[&Provenance], d: &FastData, p: &ProfileData) {
    b.section("Where the time goes");
    let wide = bits(LANES_512);
    // The profile's file records its shape (`ProfileData::read` checks it).
    b.exact("4096", LONGEST as f64)
        .exact("64", HEAD_WIDTH as f64)
        .exact("512", wide)
        .exact("256", FAST_TILES.query as f64)
        .exact("512", FAST_TILES.key as f64)
        .exact("128", QUERY_BLOCK as f64)
        .exact("256", KEY_BLOCK as f64)
        .exact("512", wide)
        .exact("512", wide)
        .exact("512", wide)
        .exact("512", wide);
    let peak = d.roof();
    let mut s = b.from(sources);
    s.quoted(&profile_table(p).unwrap());
    let phase = |name: &str| p.phases.iter().find(|x| x.0 == name).unwrap().clone();
    let (scores, softmax, output) = (phase("scores"), phase("softmax"), phase("output"));
    let avx = |x: &(String, f64, f64, Option<f64>)| x.3.expect("the run's machine has AVX-512");
    let whole = p.call(FAST_TILES).unwrap();
    let flops = attention_flops(LONGEST, HEAD_WIDTH);
    let product_flops = flops / 2.0;
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
        .rounded("226.2", flops / whole)
        .rounded("86%", 100.0 * flops / whole / peak)
        .claim(
            "turning scores into weights\nis the largest part",
            weights > 0.5 * (whole - avx(&scores) - avx(&output)),
        );
}

fn choosing_the_tiles(b: &mut Bindings, sources: &[&Provenance], p: &ProfileData) {
    b.section("Choosing the tiles");
    let mut s = b.from(sources);
    s.quoted(&tiles_table(p).unwrap());
    let l2 = p.caches[1] * 1024.0;
    let d = HEAD_WIDTH as usize;
    let (fastest, fastest_ns) = p.calls.iter().cloned().min_by(|a, b| a.1.total_cmp(&b.1)).unwrap();
    let gap = |ns: f64| 100.0 * (ns / fastest_ns - 1.0);
    let fitting: Vec<f64> = p
        .calls
        .iter()
        .filter(|(t, _)| working_set(*t, d) as f64 <= l2)
        .map(|&(_, ns)| gap(ns))
        .collect();
    let all: Vec<f64> = p.calls.iter().map(|&(_, ns)| gap(ns)).collect();
    let close: Vec<f64> = all.iter().cloned().filter(|&g| g <= 4.0).collect();
    let largest = p.calls.iter().map(|c| c.0).max_by_key(|t| t.query * t.key).unwrap();
    s.at_most("11%", highest(&all))
        .claim("the fastest, 64×128", fastest == Tiles { query: 64, key: 128 });
    b.exact("64", fastest.query as f64).exact("128", fastest.key as f64);
    let mut s = b.from(sources);
    s.value("12", fitting.len() as f64, 0.0)
        .at_most("7%", highest(&fitting))
        .value("6", close.len() as f64, 0.0)
        .value("16", p.calls.len() as f64, 0.0)
        .at_most("4%", highest(&close))
        .claim(
            "whose working set does not fit, takes the longest",
            working_set(largest, d) as f64 > l2
                && p.calls.iter().all(|&(_, ns)| ns <= p.call(largest).unwrap()),
        );
    b.exact("512", largest.query as f64)
        .exact("1024", largest.key as f64)
        .exact("256", FAST_TILES.query as f64)
        .exact("512", FAST_TILES.key as f64);
    b.from(sources).rounded("6%", gap(p.call(FAST_TILES).unwrap()));
}

fn against_pytorch(b: &mut Bindings, sources: &[&Provenance], d: &FastData) {
    b.section("Against PyTorch");
    let wide = bits(LANES_512);
    let mut s = b.from(sources);
    s.quoted(&fast_table(d, &LENGTHS, false).unwrap())
        .quoted(&fast_table(d, &LENGTHS, true).unwrap())
        .quoted(&layer_report(d).unwrap())
        .quoted(&product_report(d).unwrap());
    assert!(d.sources[3].line.contains("BLAS mkl"));
    b.exact("512", wide)
        .exact("512", LAYER.n as f64)
        .exact("512", LAYER.d_model as f64)
        .exact("8", LAYER.heads as f64);
    let peak = d.roof();
    let torch_product = PRODUCT_FLOPS / (d.theirs("product_1t", LAYER.n).unwrap() * 1e6);
    let sdpa = attention_flops(LONGEST, HEAD_WIDTH) / (d.theirs("sdpa_1t", LONGEST).unwrap() * 1e6);
    let mut s = b.from(sources);
    s.rounded("44%", 100.0 * torch_product / peak).claim(
        "less than\n`gemm`'s 256-bit kernels",
        torch_product < d.layer_gflops("matmul_512", false).unwrap(),
    );
    b.exact("256", bits(LANES_256));
    b.from(sources).rounded("36%", 100.0 * sdpa / peak);
    b.exact("512", wide).exact("512", wide);
}

fn how_close_and_how_sure(
    b: &mut Bindings,
    sources: &[&Provenance],
    d: &FastData,
    p: &ProfileData,
) {
    b.section("How close, and how sure");
    let mut s = b.from(sources);
    s.quoted(&speed_report(d).unwrap());
    let spread = 100.0 * (SPREAD - 1.0);
    let (sweep, criterion) =
        (p.call(FAST_TILES).unwrap() / 1e6, d.ours("fast_1t", LONGEST).unwrap());
    s.rounded("10%", spread);
    b.exact("4096", LONGEST as f64);
    let peak = d.roof();
    let comparisons = vs_pytorch(d, &LENGTHS).unwrap();
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
    let plain_1 = of("plain, 1 thread");
    let fast = attention_flops(LONGEST, HEAD_WIDTH) / (criterion * 1e6);
    let mut s = b.from(sources);
    s.rounded("2%", 100.0 * (1.0 - sweep / criterion))
        .rounded("10%", spread)
        .claim(
            "In every comparison the fast kernel's mean is below PyTorch's, by far\nmore than 10%",
            everything.iter().all(|&r| r > SPREAD),
        )
        .rounded("10%", spread)
        .rounded("2.06", lowest(&forward))
        .rounded("3.16", highest(&forward))
        .rounded("1.87", lowest(&backward))
        .rounded("3.24", highest(&backward))
        .rounded("2.24", lowest(&plain_1))
        .rounded("2.37", highest(&plain_1));
    b.exact("4096", LONGEST as f64);
    let speed_up: Vec<f64> = LENGTHS
        .iter()
        .map(|&n| d.ours("fast_1t", n).unwrap() / d.ours("fast_2t", n).unwrap())
        .collect();
    let layer = [of("the layer, 1 thread")[0], of("the layer, 2 threads")[0]];
    let mut s = b.from(sources);
    s.rounded("19.36", criterion)
        .rounded("84%", 100.0 * fast / peak)
        .rounded("45.50", d.theirs("sdpa_1t", LONGEST).unwrap())
        .rounded("1.82", lowest(&speed_up))
        .rounded("1.91", highest(&speed_up))
        .claim("less than 2, the number of cores", highest(&speed_up) < 2.0)
        .claim(
            "The multi-head layer, too, takes less time than PyTorch's",
            layer.iter().all(|&r| r > 1.0) && layer.iter().all(|&r| r < lowest(&forward)),
        )
        .rounded("1.42", layer[0])
        .rounded("1.55", layer[1]);
    // Its four projections, each a product of PRODUCT_FLOPS.
    let flops = layer_flops();
    b.rounded("1.07", 4.0 * PRODUCT_FLOPS / 1e9)
        .rounded("1.61", flops / 1e9)
        .exact("256", bits(LANES_256))
        .exact("512", bits(LANES_512));
}

fn where_each_kernel_sits(
    b: &mut Bindings,
    sources: &[&Provenance],
    d: &FastData,
    p: &ProfileData,
) {
    b.section("Where each kernel sits");
    let mut s = b.from(sources);
    s.quoted(&roofline_report(d, LONGEST).unwrap());
    let points = roofline_points(d, LONGEST).unwrap();
    let point = |name: &str| points.iter().find(|p| p.0 == name).unwrap().clone();
    let peak = d.roof();
    let (fast, torch, causal) = (point("fast"), point("PyTorch SDPA"), point("fast causal"));
    // The alt text: the ridge, and where the kernels sit.
    s.rounded("6", peak / d.bandwidth)
        .claim(
            "the roof of the loop as compiled would lie on it and is left out",
            (d.peak / d.peak_512.unwrap() - 1.0).abs() < 0.01,
        )
        .rounded("16", point("naive").1)
        .rounded("1024", torch.1)
        .rounded("512", causal.1)
        .rounded("1280", point("fast backward").1);
    // Figure A.1's length.
    b.exact("4096", LONGEST as f64);
    let below = ["naive", "tiled", "portable", "PyTorch SDPA", "PyTorch backward"];
    let sweep = attention_flops(LONGEST, HEAD_WIDTH) / p.call(FAST_TILES).unwrap();
    let mut s = b.from(sources);
    s.claim(
        "Every other kernel, the crate's and PyTorch's,\nstays below half the peak",
        below.iter().all(|k| point(k).2 < peak / 2.0),
    )
    .claim(
        "the fast kernel, forward and backward, is near the roof",
        ["fast", "fast backward"].iter().all(|k| point(k).2 > 0.8 * peak),
    )
    .rounded("221.8", fast.2)
    .rounded("84%", 100.0 * fast.2 / peak)
    .rounded("94.4", torch.2)
    .rounded("226.2", sweep)
    .rounded("86%", 100.0 * sweep / peak);
    assert!(d.sources[3].line.contains("cpu capability AVX512"));
    // The backward pass: 10n²d FLOPs at 5n/16 FLOP per byte.
    assert_eq!(backward_intensity(4096, 64).unwrap(), 5.0 * 4096.0 / 16.0);
    b.exact("10", backward_flops(1, 1))
        .exact("16", 5.0 * LONGEST as f64 / backward_intensity(LONGEST, HEAD_WIDTH).unwrap());
    // Memory: the tiled kernels' re-reads, naive attention's phases.
    let (tiled, fast_tiles) = (
        tiled_intensity(LONGEST, HEAD_WIDTH, QUERY_BLOCK as u64).unwrap(),
        tiled_intensity(LONGEST, HEAD_WIDTH, FAST_TILES.query as u64).unwrap(),
    );
    let naive = attention_intensity(LONGEST, HEAD_WIDTH, true).unwrap();
    let exponentials =
        (LONGEST * LONGEST) as f64 * d.per_exponential("exp_nonpositive").unwrap() / 1e6;
    b.exact("128", QUERY_BLOCK as f64)
        .rounded("62", tiled)
        .exact("256", FAST_TILES.query as f64)
        .rounded("120", fast_tiles)
        .claim(
            "both still far above\nthe ridge point",
            tiled.min(fast_tiles) > 2.0 * peak / d.bandwidth,
        )
        .rounded("15.8", naive)
        .rounded("31", naive_product_intensity(LONGEST, HEAD_WIDTH).unwrap())
        .exact("64", mib(LONGEST))
        .exact("64", mib(LONGEST));
    let mut s = b.from(sources);
    s.claim("above the ridge point of this processor", naive > peak / d.bandwidth)
        .rounded("32%", 100.0 * point("naive").2 / peak)
        .value("4", exponentials, 0.5);
}

fn the_backward_pass(b: &mut Bindings) {
    b.section("The backward pass, tile by tile");
    let tolerance =
        captured("src/fast/backward/tests.rs", r"relative_gap\(fast, exact\) < (1e-4)")[0];
    let lengths = captured("tests/fast_memory.rs", r"let ns = \[(\d+), [\d, ]+, (\d+)\];");
    b.exact("512", bits(LANES_512))
        // Chapter 11's backward pass in f64.
        .exact("64", (8 * std::mem::size_of::<f64>()) as f64)
        .exact("1e-4", tolerance)
        .exact("512", lengths[0])
        .exact("8,192", lengths[1]);
}

fn five_products(b: &mut Bindings, sources: &[&Provenance], d: &FastData, p: &ProfileData) {
    b.section("Five products on AVX-512");
    let slope = captured("tests/fast_memory.rs", r"s < (\d+)\.0\)")[0];
    let bands = number_in_source("src/fast/avx512_backward.rs", "BANDS", "usize = ");
    // The allocation test's inputs (Q, K, V, dO) and outputs (dQ, dK, dV).
    let inputs = captured("tests/fast_memory.rs", r"let \[q, k, v, d_out\] = \[\(\); (\d)\]")[0];
    let outputs = captured("tests/fast_memory.rs", r"peak - 4 \* \((\d) \* n \* d \+ n\)")[0];
    b.exact("512", bits(LANES_512))
        .exact("512", bits(LANES_512))
        .exact("512", bits(LANES_512))
        .exact("8", bands)
        .exact("9", slope)
        .exact("7", inputs + outputs);
    let mut s = b.from(sources);
    s.quoted(&backward_table(d, &LENGTHS).unwrap());
    let comparisons = vs_pytorch(d, &LENGTHS).unwrap();
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
            LENGTHS.iter().map(move |&n| {
                d.theirs(&format!("{f}_1t"), n).unwrap() / d.theirs(&format!("{f}_2t"), n).unwrap()
            })
        })
        .collect();
    let points = roofline_points(d, LONGEST).unwrap();
    let point = |name: &str| points.iter().find(|p| p.0 == name).unwrap().2;
    s.rounded("1.45", lowest(&torch_speed_up))
        .rounded("1.85", highest(&torch_speed_up))
        .rounded("221.7", point("fast backward"));
    b.exact("4096", LONGEST as f64);
    // At the rate of the forward products in the profile.
    let phase = |name: &str| p.phases.iter().find(|x| x.0 == name).unwrap().3.unwrap();
    let rate = attention_flops(LONGEST, HEAD_WIDTH) / (phase("scores") + phase("output"));
    b.from(sources)
        .rounded("84%", 100.0 * point("fast backward") / d.roof())
        .rounded("94.0", point("PyTorch backward"))
        .rounded("41", backward_flops(LONGEST, HEAD_WIDTH) / rate / 1e6)
        .rounded("48.43", d.ours("backward_1t", LONGEST).unwrap());
}

/// Training chapter 16's model both ways, from the file of the same run.
fn training_with_it(b: &mut Bindings, d: &FastData) {
    b.section("Training with it");
    let lm = LmTraining::read(&d.sources[0].run).unwrap();
    let steps = Regex::new(r"over steps (\d+) to (\d+)")
        .unwrap()
        .captures(&lm.source.line)
        .expect("the file's header names the steps it timed")[2]
        .parse::<f64>()
        .unwrap();
    b.exact("300", steps);
    // "three times in turn": three runs of each path on each count of threads.
    for fused in [false, true] {
        for threads in lm.threads() {
            assert_eq!(lm.speeds(fused, threads).len(), 3);
        }
    }
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
    b.exact("64", c.context as f64)
        .exact("4", attention_flops(1, 1))
        .rounded("8%", 100.0 * share)
        // If time followed FLOPs: the step without attention's share.
        .rounded("1.08", 1.0 / (1.0 - share))
        .exact("1024", LENGTHS[0] as f64);
}

/// The roofline places each kernel by one count of its work: the FLOPs that
/// give its GFLOP/s are the FLOPs its intensity divides by its bytes. The
/// causal kernel is credited with half the plain FLOPs over the same bytes,
/// so it sits at half the plain kernel's intensity (`n/8`, not `n/4`).
#[test]
fn the_causal_point_counts_the_same_work_for_its_flops_and_its_bytes() {
    let d = FastData::read().unwrap();
    let points = roofline_points(&d, LONGEST).unwrap();
    let point = |name: &str| points.iter().find(|p| p.0 == name).unwrap().clone();
    let (causal, plain) = (point("fast causal"), point("fast"));
    let flops = causal_attention_flops(LONGEST, HEAD_WIDTH);
    let bytes = attention_bytes(LONGEST, HEAD_WIDTH, false);
    assert_eq!(causal.1, flops / bytes);
    assert_eq!(causal.2, flops / (d.ours("fast_causal_1t", LONGEST).unwrap() * 1e6));
    assert_eq!(causal.1, plain.1 / 2.0);
    assert_eq!(causal.1, LONGEST as f64 / 8.0);
    // Every point: GFLOP/s over intensity is the same bytes per second as
    // the kernel's bytes over its time.
    let bytes_per_ns = |p: &(String, f64, f64)| p.2 / p.1;
    let plain_time = d.ours("fast_1t", LONGEST).unwrap() * 1e6;
    assert!((bytes_per_ns(&plain) - bytes / plain_time).abs() < 1e-12 * bytes_per_ns(&plain));
}

/// The FLOPs of the appendix's multi-head layer (`LAYER`).
fn layer_flops() -> f64 {
    multihead_flops(
        LAYER.n as usize,
        LAYER.n as usize,
        LAYER.d_model as usize,
        LAYER.heads as usize,
    )
    .unwrap()
}
