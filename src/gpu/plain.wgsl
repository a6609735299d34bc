// Attention as chapter 2 writes it, in three passes over GPU memory:
// the n×m scores S = Q Kᵀ · scale, a softmax along each row of S, and
// O = P V. Each pass is a grid of threads that share nothing but the
// buffers; the scores make the round trip to memory twice, which is
// what FlashAttention (flash.wgsl) avoids. Rows are vec4s, padded with
// zeros.

// (common.wgsl comes first: Sizes, and bindings 0 to 4.)
@group(0) @binding(5) var<storage, read_write> p: array<f32>; // n × m: S, then P

const WIDTH: u32 = 64u; // threads a row in the softmax

// ANCHOR: scores
/// One thread a score: s_ij = q_i · k_j · scale, or LOWEST where masked.
@compute @workgroup_size(8, 8)
fn scores(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.y;
    let j = id.x;
    if i >= sizes.n || j >= sizes.m {
        return;
    }
    var s = LOWEST;
    if sees(i, j) {
        s = 0.0;
        for (var c = 0u; c < sizes.d4; c++) {
            s += dot(q[i * sizes.d4 + c], k[j * sizes.d4 + c]);
        }
        s *= sizes.scale;
    }
    p[i * sizes.m + j] = s;
}
// ANCHOR_END: scores

// ANCHOR: softmax
var<workgroup> partial: array<f32, 64>;

/// The sum (or, with `take_max`, the maximum) of the WIDTH threads'
/// values, by halving: every thread gets it.
fn reduce(t: u32, value: f32, take_max: bool) -> f32 {
    partial[t] = value;
    workgroupBarrier();
    for (var half = WIDTH / 2u; half > 0u; half /= 2u) {
        if t < half {
            let other = partial[t + half];
            partial[t] = select(partial[t] + other, max(partial[t], other), take_max);
        }
        workgroupBarrier();
    }
    let total = partial[0];
    workgroupBarrier(); // before anyone writes partial again
    return total;
}

/// One workgroup a row: its maximum, then its sum of exponentials, then
/// the row divided by that sum, each thread a stride of the row.
@compute @workgroup_size(64)
fn softmax_rows(@builtin(workgroup_id) wg: vec3<u32>,
                @builtin(local_invocation_index) t: u32) {
    let row = wg.x * sizes.m;
    var top = LOWEST;
    for (var j = t; j < sizes.m; j += WIDTH) {
        top = max(top, p[row + j]);
    }
    top = reduce(t, top, true);
    var sum = 0.0;
    for (var j = t; j < sizes.m; j += WIDTH) {
        let s = p[row + j];
        let e = select(0.0, exp(s - top), s > LOWEST);
        p[row + j] = e;
        sum += e;
    }
    sum = reduce(t, sum, false);
    let inv = select(0.0, 1.0 / sum, sum > 0.0); // every key masked: a zero row
    for (var j = t; j < sizes.m; j += WIDTH) {
        p[row + j] *= inv;
    }
}
// ANCHOR_END: softmax

/// One thread a vec4 of the output: o_i = Σ_j p_ij v_j.
@compute @workgroup_size(64)
fn weighted_values(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.x / sizes.d4;
    let c = id.x % sizes.d4;
    if i >= sizes.n {
        return;
    }
    var out = vec4<f32>(0.0);
    for (var j = 0u; j < sizes.m; j++) {
        out += p[i * sizes.m + j] * v[j * sizes.d4 + c];
    }
    o[i * sizes.d4 + c] = out;
}
