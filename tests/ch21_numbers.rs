//! Chapter 21 quotes the constants of the GPU kernels (`src/gpu/*.wgsl`)
//! and of their tests (`tests/gpu.rs`), which run on lavapipe in CI; it
//! quotes no timing, as the book's machine has no GPU. These tests bind
//! every number it shows to the code it speaks of.

use attn::exercises::ch21::tiles_loaded;
use report::numbers::{number_in_source, Bindings};

const CHAPTER: &str = "ch21-attention-on-a-gpu.md";
const FLASH: &str = "src/gpu/flash.wgsl";
const BACKWARD: &str = "src/gpu/backward.wgsl";
const TESTS: &str = "tests/gpu.rs";

/// A constant of a WGSL file: `const NAME: u32 = 64u;`.
fn wgsl(path: &str, name: &str) -> f64 {
    number_in_source(path, name, ": u32 = ")
}

/// A constant of the crate or its tests: `const NAME: usize = 8_192;`.
fn constant(path: &str, name: &str) -> f64 {
    number_in_source(path, name, ": usize = ")
}

/// The kernels' sizes: queries a workgroup, keys a tile, vec4s a row.
fn sizes() -> (f64, f64, f64) {
    (wgsl(FLASH, "BR"), wgsl(FLASH, "BC"), wgsl(FLASH, "D4"))
}

#[test]
fn every_number_is_bound() {
    let mut b = Bindings::new(CHAPTER);
    let (br, bc, d4) = sizes();
    let max_d = constant("src/gpu/mod.rs", "MAX_D");
    let span = constant("src/gpu/run.rs", "SPAN");
    let limit = constant(TESTS, "LOOP_LIMIT");
    let kib = |vec4s: f64| vec4s * 16.0 / 1024.0;

    b.section("Threads, workgroups and memory");
    b.exact("64", br);
    let vec4_bytes = 4 * std::mem::size_of::<f32>();
    b.exact("16", vec4_bytes as f64).exact("64", max_d).exact("16", d4);
    b.exact("16", kib(2.0 * bc * d4)).exact("64", br);

    b.section("Chapter 2, in three passes");
    let width = wgsl("src/gpu/plain.wgsl", "WIDTH");
    let side = number_in_source("src/gpu/device.rs", "attention", "m.div_ceil(");
    b.exact("8", side).exact("8", side);
    b.exact("64", width);
    let max_rows = constant("src/gpu/mod.rs", "MAX_ROWS");
    b.exact("65,535", max_rows).rounded("17", max_rows * max_rows * 4.0 / 1e9);

    b.section("Tiles become workgroups");
    b.exact("64", br).exact("32", bc).exact("8", kib(bc * d4)).exact("32", bc);
    b.exact("64", br).exact("32", bc).exact("16", d4).exact("64", br).exact("64", br);

    b.section("The backward pass, without atomics");
    b.exact("16", wgsl(BACKWARD, "BQ"));

    b.section("The host");
    b.exact("8,192", span);

    b.section("What a software device teaches");
    b.exact("65,535", limit);
    b.exact("130", constant(TESTS, "WITHIN_THE_LIMIT"));
    b.exact("2,300", constant(TESTS, "PAST_UNROLLING"));
    b.exact("16", d4).exact("16", d4);
    // Per key: the two loops over the tile's keys; per tile, the tile loop
    // and the shared loads.
    let per_key = 2.0 + (1.0 + bc * d4 / br) / bc;
    b.value("29,000", limit / per_key, 500.0);
    b.exact("8,192", span);
    b.value(
        "1e-5",
        number_in_source(TESTS, "the_flash_kernel_equals_the_cpus_attention_everywhere", "&want, "),
        0.0,
    );
    b.exact("64", (8 * std::mem::size_of::<f64>()) as f64);
    b.value(
        "1e-4",
        number_in_source(
            TESTS,
            "the_flash_backward_kernels_equal_the_cpus_backward_everywhere",
            "&want, ",
        ),
        0.0,
    );
    b.exact("2,300", constant(TESTS, "PAST_UNROLLING"));
    b.exact("33,000", constant(TESTS, "LONG_KEYS"));
    b.exact("8,300", constant(TESTS, "LONG_QUERIES"));
    b.exact("33,000", constant(TESTS, "LONG_KEYS"));

    b.section("Exercises");
    let n = constant(TESTS, "PAST_UNROLLING") as usize;
    let (causal, all) = tiles_loaded((br as usize, bc as usize), n, n).unwrap();
    b.exact("2,300", n as f64).rounded("0.51", causal as f64 / all as f64);
    b.exact("128", 2.0 * d4 * 4.0).exact("32", bc).exact("256", 4.0 * d4 * 4.0);
    b.exact("128", 2.0 * max_d);

    b.section("Quiz");
    b.exact("130", constant(TESTS, "WITHIN_THE_LIMIT")).exact("2,300", n as f64);
    b.exact("65,535", limit);
    b.assert_all_bound();
}
