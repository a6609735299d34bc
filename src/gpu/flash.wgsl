// FlashAttention-2's forward pass (Dao, 2023) in WGSL: softmax(Q Kᵀ · scale) V
// without ever writing the n×m scores to memory.
//
// A workgroup of BR threads takes BR queries, one a thread; each thread
// keeps its query and its output row in registers. The workgroup walks
// the keys in tiles of BC: all its threads copy a tile of keys and values
// into workgroup memory together (the GPU's fast, shared memory), then each
// thread scores its query against the tile and folds the tile into its
// output with the online softmax of chapter 9: the running maximum m, the
// running sum l, and the output rescaled by exp(m_old − m_new) whenever the
// maximum grows. Rows are vec4s of at most D4 = 16 (d ≤ 64), padded with
// zeros, so that a dot product is 16 four-wide `dot`s.
//
// The loops over a row's vec4s run to the constant D4, not to the row's
// own d4: a loop of constant length is unrolled by the shader compiler.
// Mesa's lavapipe silently cuts a shader's loops short after 65,535
// iterations, counted for each batch of invocations it runs together;
// with loops to d4 left in, this kernel loses keys from n ≈ 2,000 on and
// returns wrong numbers without an error, which the tests (n = 2,300)
// catch. Even so, a thread's loops run about twice per
// key, so a dispatch walks only the keys begin..end, at most 8,192 of them
// (the host's SPAN), and the next carries on from the output and
// log-sum-exp it wrote: the online softmax again, between dispatches.

// (common.wgsl comes first: Sizes, and bindings 0 to 4.)
@group(0) @binding(5) var<storage, read_write> lse: array<f32>;

const BR: u32 = 64u;     // queries a workgroup, one a thread
const BC: u32 = 32u;     // keys a tile
const D4: u32 = 16u;     // the most vec4s a row holds

// ANCHOR: tiles
var<workgroup> k_tile: array<vec4<f32>, 512>; // BC × D4: 8 KiB
var<workgroup> v_tile: array<vec4<f32>, 512>; // the WebGPU default allows 16 KiB in all

/// Copies keys and values j0..j0 + BC into the tiles, every thread a share.
fn load_tile(j0: u32, t: u32) {
    for (var e = t; e < BC * D4; e += BR) {
        let j = j0 + e / D4;
        let c = e % D4;
        let inside = j < sizes.m && c < sizes.d4;
        let at = select(0u, j * sizes.d4 + c, inside);
        k_tile[e] = select(vec4<f32>(0.0), k[at], inside);
        v_tile[e] = select(vec4<f32>(0.0), v[at], inside);
    }
}
// ANCHOR_END: tiles

// ANCHOR: flash_setup
@compute @workgroup_size(64)
fn forward(@builtin(workgroup_id) wg: vec3<u32>,
           @builtin(local_invocation_index) t: u32) {
    let i = wg.x * BR + t; // this thread's query (past n: it only helps load)
    let carry = sizes.begin > 0u; // carry on from the keys before begin
    var q_i: array<vec4<f32>, 16>;
    var o_i: array<vec4<f32>, 16>;
    for (var c = 0u; c < D4; c++) {
        let inside = i < sizes.n && c < sizes.d4;
        let at = select(0u, i * sizes.d4 + c, inside);
        q_i[c] = select(vec4<f32>(0.0), q[at], inside) * sizes.scale; // scaled once
        o_i[c] = vec4<f32>(0.0);
        if inside && carry {
            o_i[c] = o[at];
        }
    }
    var s_max = LOWEST; // the largest score so far
    var l_i = 0.0;      // Σ exp(s − s_max) so far
    if carry && i < sizes.n {
        s_max = lse[i]; // the output so far is normalised: l = 1 at s_max = lse
        l_i = select(0.0, 1.0, s_max > LOWEST);
    }
// ANCHOR_END: flash_setup
// ANCHOR: flash_loop
    // Causal: no query of this workgroup sees a key past its last query.
    var end = sizes.end;
    if sizes.mask == 1u {
        end = min(end, (wg.x + 1u) * BR);
    }
    for (var j0 = sizes.begin; j0 < end; j0 += BC) {
        workgroupBarrier(); // the last tile is read by everyone
        load_tile(j0, t);
        workgroupBarrier(); // this tile is written by everyone
        var s: array<f32, 32>; // the tile's scores
        var s_max_new = s_max;
        for (var jj = 0u; jj < BC; jj++) {
            let j = j0 + jj;
            var score = LOWEST;
            if i < sizes.n && j < end && sees(i, j) {
                score = 0.0;
                for (var c = 0u; c < D4; c++) {
                    score += dot(q_i[c], k_tile[jj * D4 + c]);
                }
            }
            s[jj] = score;
            s_max_new = max(s_max_new, score);
        }
        let alpha = exp(s_max - s_max_new); // rescales what came before
        l_i *= alpha;
        for (var c = 0u; c < D4; c++) {
            o_i[c] *= alpha;
        }
        for (var jj = 0u; jj < BC; jj++) {
            if s[jj] > LOWEST {
                let p = exp(s[jj] - s_max_new);
                l_i += p;
                for (var c = 0u; c < D4; c++) {
                    o_i[c] += p * v_tile[jj * D4 + c];
                }
            }
        }
        s_max = s_max_new;
    }
    if i < sizes.n {
        let inv = select(0.0, 1.0 / l_i, l_i > 0.0); // no key seen: a zero row
        for (var c = 0u; c < sizes.d4; c++) {
            o[i * sizes.d4 + c] = o_i[c] * inv;
        }
        lse[i] = select(LOWEST, s_max + log(l_i), l_i > 0.0);
    }
}
// ANCHOR_END: flash_loop
