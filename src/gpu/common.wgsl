// What every kernel is given: the sizes, Q, K and V to read, the output
// to write, a mask to read (binding 5 and those past 6 are each kernel's
// own). Rows are vec4s, padded with zeros; the host prepends this file to
// each kernel's.

// ANCHOR: common
struct Sizes {
    n: u32,      // queries
    m: u32,      // keys and values
    d4: u32,     // vec4s a row
    mask: u32,   // 0: every key; 1: causal, keys 0..=i; 2: as `keep` says
    scale: f32,  // 1/√d_k
    begin: u32,  // the keys this dispatch walks, begin..end (the flash
    end: u32,    // kernels; the dK, dV pass walks queries)
}

@group(0) @binding(0) var<uniform> sizes: Sizes;
@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> k: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> v: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> o: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read> keep: array<u32>; // n × m, with mask 2

const LOWEST: f32 = -3.0e38; // a masked score: exp(LOWEST − anything) is 0

/// Whether query i sees key j.
fn sees(i: u32, j: u32) -> bool {
    if j >= sizes.m {
        return false;
    }
    switch sizes.mask {
        case 1u: { return j <= i; }
        case 2u: { return keep[i * sizes.m + j] != 0u; }
        default: { return true; }
    }
}
// ANCHOR_END: common
