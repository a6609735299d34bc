//! The appendix "Making it fast" quotes the output of `cargo run --example
//! making_it_fast`, which reads the committed measurements in `book/data/`.
//! These tests rebuild every quoted block from the same files and
//! functions, require the appendix to quote it verbatim, and check the
//! claims its prose makes about the data.

use attn::experiments::fast_profile::{profile_table, tiles_table, working_set, ProfileData};
use attn::experiments::fast_report::{
    fast_table, layer_report, machine_report, roofline_points, roofline_report, targets_report,
    FastData,
};
use attn::experiments::measurements::{
    blas_table, data_file, lookup, millis, numpy_table, provenance, read_measurements, Measurement,
};
use attn::fast::FAST_TILES;
use attn::multihead::multihead_flops;

mod common;

use common::numbers::Bindings;

const PAGE: &str = "making-it-fast.md";
const PRODUCT_FLOPS: f64 = 2.0 * 512.0 * 512.0 * 512.0;

fn read(name: &str, method: &str, value: &str) -> Vec<Measurement> {
    read_measurements(&data_file(name).unwrap(), method, value).unwrap()
}

fn numpy_block_and_its_claims(b: &mut Bindings) {
    let t = read("ch08-timings.csv", "function", "mean_ns");
    let numpy_csv = data_file("ch08-numpy.csv").unwrap();
    let numpy = read_measurements(&numpy_csv, "version", "seconds").unwrap();
    let lengths = [1024, 2048, 4096];
    b.quoted(&format!(
        "{}\n{}\n```",
        numpy_csv.lines().next().unwrap(),
        numpy_table(&numpy, &t, &lengths).unwrap()
    ));
    let np = |v: &str, n| lookup(&numpy, v, n).unwrap() * 1e3;
    let factors: Vec<f64> = lengths
        .iter()
        .map(|&n| np("numpy_tutorial", n) / np("numpy_f32", n))
        .collect();
    let lo = factors.iter().cloned().fold(f64::INFINITY, f64::min);
    let hi = factors.iter().cloned().fold(0.0, f64::max);
    b.rounded("1.9", lo)
        .rounded("2.2", hi)
        .value("2", lo, 0.5)
        .value("2", hi, 0.5);
    let at_most = lengths
        .iter()
        .all(|&n| millis(&t, "naive", n).unwrap() <= np("numpy_f32", n));
    b.claim("its time is at most", at_most);
    // "The margins at n = 1024 and 2048 are a few percent".
    for n in [1024, 2048] {
        let margin = 1.0 - millis(&t, "naive", n).unwrap() / np("numpy_f32", n);
        assert!((0.0..0.05).contains(&margin), "n = {n}: {margin}");
    }
    b.exact("64", 64);
}

fn the_three_changes(b: &mut Bindings) {
    let t = read("ch08-timings.csv", "function", "mean_ns");
    // An n×n copy at 4096 is 64 MiB.
    b.exact("64", ((4 * 4096 * 4096) >> 20) as f64)
        .exact("4096", 4096);
    let per = |f| lookup(&t, f, 1 << 20).unwrap() / (1 << 20) as f64;
    let (std_exp, fast) = (per("std_exp"), per("exp_nonpositive"));
    b.quoted(&format!(
        "exp per element: f32::exp {std_exp:.2} ns, exp_nonpositive {fast:.2} ns"
    ));
    // "16.8 million exponentials: about 43 ms ... more than half of the 73 ms".
    let exps = 4096.0 * 4096.0;
    b.rounded("16.8", exps / 1e6)
        .rounded("43", exps * std_exp / 1e6)
        .rounded("73", millis(&t, "naive", 4096).unwrap());
    assert!(exps * std_exp / 1e6 > 0.5 * millis(&t, "naive", 4096).unwrap());
}

fn multihead_line(b: &mut Bindings) {
    let t = read("ch08-timings.csv", "function", "mean_ns");
    let (layer, product) = (
        millis(&t, "multihead", 512).unwrap(),
        millis(&t, "matmul_512", 512).unwrap(),
    );
    let flops = multihead_flops(512, 512, 512, 8).unwrap() as f64;
    let (layer_speed, product_speed) = (flops / (layer * 1e6), PRODUCT_FLOPS / (product * 1e6));
    b.quoted(&format!(
        "layer: {layer:.2} ms, {layer_speed:.0} GFLOP/s; a 512×512 by 512×512 product: {product:.3} ms, {product_speed:.0} GFLOP/s"
    ));
    b.rounded("1.61", flops / 1e9)
        .rounded("80%", 100.0 * layer_speed / product_speed)
        .rounded("94", product_speed)
        .rounded("75", layer_speed)
        .exact("512", 512)
        .exact("8", 8);
    // "2 million exponentials": h · n² of them.
    b.value("2", (8 * 512 * 512) as f64 / 1e6, 0.2);
}

fn blas_table_and_its_claims(b: &mut Bindings) {
    let plain = read("ch08-timings.csv", "function", "mean_ns");
    let blas_csv = data_file("ch08-timings-blas.csv").unwrap();
    let blas = read_measurements(&blas_csv, "function", "mean_ns").unwrap();
    let numpy = read("ch08-numpy.csv", "version", "seconds");
    let gflops =
        |rows: &[Measurement], f: &str, flops: f64| flops / (millis(rows, f, 512).unwrap() * 1e6);
    let layer = multihead_flops(512, 512, 512, 8).unwrap() as f64;
    b.quoted(&format!(
        "{}\n{}\nwith blas: layer {:.0} GFLOP/s, 512×512 by 512×512 product {:.0} GFLOP/s",
        blas_csv.lines().next().unwrap(),
        blas_table(&plain, &blas, &numpy, &[1024, 2048, 4096]).unwrap(),
        gflops(&blas, "multihead", layer),
        gflops(&blas, "matmul_512", PRODUCT_FLOPS)
    ));
    b.claim(
        "BLAS runs the same product faster",
        millis(&blas, "matmul_512", 512).unwrap() < millis(&plain, "matmul_512", 512).unwrap(),
    );
    let (mut tiled_gain, mut naive_gain) = (Vec::new(), Vec::new());
    let (mut blas_beats_numpy, mut naive_at_most) = (true, true);
    for n in [1024, 2048, 4096] {
        let gain = |m| millis(&plain, m, n).unwrap() / millis(&blas, m, n).unwrap();
        assert!(
            gain("naive") > 1.0 && gain("tiled") > gain("naive"),
            "n = {n}"
        );
        tiled_gain.push(gain("tiled"));
        naive_gain.push(gain("naive"));
        let numpy_ms = lookup(&numpy, "numpy_f32", n).unwrap() * 1e3;
        blas_beats_numpy &= ["naive", "tiled"]
            .iter()
            .all(|m| millis(&blas, m, n).unwrap() < numpy_ms);
        naive_at_most &= millis(&plain, "naive", n).unwrap() <= numpy_ms;
    }
    let range = |xs: &[f64]| {
        let lo = xs.iter().cloned().fold(f64::INFINITY, f64::min);
        (lo, xs.iter().cloned().fold(lo, f64::max))
    };
    let ((t_lo, t_hi), (n_lo, n_hi)) = (range(&tiled_gain), range(&naive_gain));
    b.rounded("1.21", t_lo)
        .rounded("1.23", t_hi)
        .rounded("1.08", n_lo)
        .rounded("1.15", n_hi);
    b.claim("1.21 to 1.23\ntimes faster", t_lo > n_hi);
    b.claim(
        "take less time than NumPy's",
        blas_beats_numpy && naive_at_most,
    );
    let numpy_1024 = lookup(&numpy, "numpy_f32", 1024).unwrap() * 1e3;
    assert_eq!(
        format!("{:.2}", millis(&plain, "tiled", 1024).unwrap()),
        format!("{numpy_1024:.2}"),
        "\"tiled attention ties it at n = 1024\""
    );
    b.rounded("104", gflops(&blas, "matmul_512", PRODUCT_FLOPS))
        .rounded("83", gflops(&blas, "multihead", layer))
        .rounded("94", gflops(&plain, "matmul_512", PRODUCT_FLOPS))
        .rounded("75", gflops(&plain, "multihead", layer))
        .exact("1024", 1024);
}

/// Every number the appendix shows is bound: quoted output, or a value
/// registered here with its check, or exempt (`tests/common/numbers.rs`).
#[test]
fn every_number_is_bound() {
    let mut b = Bindings::new(PAGE);
    numpy_block_and_its_claims(&mut b);
    the_three_changes(&mut b);
    multihead_line(&mut b);
    blas_table_and_its_claims(&mut b);
    the_fast_kernel_against_pytorch(&mut b);
    b.assert_all_bound();
}

/// The last section: the machine's limits, the fast kernel and PyTorch in
/// one session, the roofline, and what the prose says about them.
fn the_fast_kernel_against_pytorch(b: &mut Bindings) {
    let d = FastData::parse(
        &data_file("appendix-timings.csv").unwrap(),
        &data_file("appendix-pytorch.csv").unwrap(),
        &data_file("appendix-machine.csv").unwrap(),
    )
    .unwrap();
    let ns = [1024, 2048, 4096];
    b.quoted(&machine_report(&d));
    b.quoted(&fast_table(&d, &ns, false).unwrap());
    b.quoted(&fast_table(&d, &ns, true).unwrap());
    b.quoted(&layer_report(&d).unwrap());
    b.quoted(&roofline_report(&d, 4096).unwrap());
    let provenance = |file: &str| provenance(&data_file(file).unwrap()).to_string();
    b.quoted(&format!(
        "{}\n{}",
        provenance("appendix-timings.csv"),
        provenance("appendix-pytorch.csv")
    ));
    let ratio = |c: &str, t: &str, n| {
        d.theirs(&format!("sdpa{c}_{t}"), n).unwrap() / d.ours(&format!("fast{c}_{t}"), n).unwrap()
    };
    let all = |c: &str, t: &str, f: &dyn Fn(f64) -> bool| ns.iter().all(|&n| f(ratio(c, t, n)));
    b.quoted(&targets_report(&d).unwrap());
    b.exact("60%", 60).exact("1.8", 1.8);
    let speed_up = d.ours("fast_1t", 4096).unwrap() / d.ours("fast_2t", 4096).unwrap();
    b.claim("A speed-up above 2 from a second thread", speed_up > 2.0);
    let plain_misses = !all("", "1t", &|r| r >= 1.0) && !all("", "2t", &|r| r >= 1.0);
    b.claim("falls short, on one thread and on two", plain_misses);
    b.claim("attention falls short", plain_misses);
    b.claim(
        "level\nwith PyTorch on one thread",
        all("_causal", "1t", &|r| (r - 1.0).abs() < 0.1),
    );
    b.claim("ahead on two", all("_causal", "2t", &|r| r > 1.0));

    let p = ProfileData::parse(
        &data_file("appendix-profile.csv").unwrap(),
        &data_file("appendix-tiles.csv").unwrap(),
        &data_file("appendix-machine.csv").unwrap(),
    )
    .unwrap();
    b.quoted(&profile_table(&p).unwrap());
    b.quoted(&format!(
        "{}\n```\n\n```text\n{}",
        tiles_table(&p).unwrap(),
        provenance("appendix-profile.csv")
    ));
    the_profile_and_the_tiles(b, &p, d.theirs("sdpa_1t", 4096).unwrap() * 1e6, d.peak);

    let points = roofline_points(&d, 4096).unwrap();
    let ridge = d.peak / d.bandwidth;
    b.claim(
        "Every kernel sits under the flat part of the roof",
        points.iter().all(|p| p.1 > ridge && p.2 < d.peak),
    );
    b.rounded("5", ridge).rounded("16", points[0].1);
    b.claim(
        "PyTorch's CPU\nkernel reaches a larger share of the peak",
        points[5].2 > points[3].2,
    );
    b.claim("PyTorch highest", points.iter().all(|p| p.2 <= points[5].2));
    b.exact("16", 16)
        .exact("64", 64)
        .exact("512", 512)
        .exact("2048", 2048)
        .exact("8192", 8192);
    b.exact("1e-5", 1e-5);
    // F = 4n²d, and I = n/4 without stored scores.
    b.exact("4", attn::complexity::attention_flops(1, 1));
    assert_eq!(
        attn::experiments::roofline::attention_intensity(4096, 64, false),
        4096.0 / 4.0
    );
}

/// What the prose says of the profile (ns) and of the tile sweep.
fn the_profile_and_the_tiles(b: &mut Bindings, p: &ProfileData, torch_ns: f64, peak: f64) {
    let phase = |name: &str| p.phases.iter().find(|x| x.0 == name).unwrap().clone();
    let (scores, softmax, output) = (phase("scores"), phase("softmax"), phase("output"));
    let whole = p.call(FAST_TILES).unwrap();
    let products = scores.2 + output.2;
    b.rounded("80%", 100.0 * products / whole);
    b.claim(
        "On these shapes `gemm` runs faster than ndarray's\nproduct",
        scores.2 < scores.1 && output.2 < output.1,
    );
    b.claim("runs faster than the scores", output.2 < scores.2);
    let saved = |x: &(String, f64, f64)| x.1 - x.2;
    b.claim(
        "the product with $V$ gains most from the\nchange",
        saved(&output) > saved(&scores) && saved(&output) > saved(&softmax),
    );
    b.claim(
        "The phases together account for nearly all of the call",
        (scores.2 + softmax.2 + output.2) / whole > 0.9,
    );
    b.rounded("43.2", products / 1e6)
        .rounded("82%", 100.0 * products / torch_ns);
    let product_flops = attn::complexity::attention_flops(4096, 64) / 2.0;
    b.rounded("90%", 100.0 * product_flops / scores.2.min(output.2) / peak);
    // The tiles.
    let mut by_time = p.calls.clone();
    by_time.sort_by(|a, b| b.1.total_cmp(&a.1));
    b.claim(
        "The smallest tiles take longest",
        by_time[..2]
            .iter()
            .all(|(t, _)| working_set(*t, 64) <= 192 * 1024),
    );
    let fastest = by_time.last().unwrap();
    let large: Vec<f64> = p
        .calls
        .iter()
        .filter(|(t, _)| t.query >= 256 && t.key >= 256)
        .map(|(_, ns)| 100.0 * (ns / fastest.1 - 1.0))
        .collect();
    b.at_most("4%", large.iter().cloned().fold(0.0, f64::max));
    let l2 = p.caches[1] * 1024.0;
    b.claim(
        "even past the L2 cache",
        working_set(fastest.0, 64) as f64 > l2,
    );
    b.at_most("3%", 100.0 * (whole / fastest.1 - 1.0));
    b.claim(
        "with a working set that fits one core's L2 cache",
        working_set(FAST_TILES, 64) as f64 <= l2,
    );
    b.exact("256", 256).exact("4096", 4096);
}
