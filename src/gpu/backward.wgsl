// FlashAttention-2's backward pass (Dao, 2023) in WGSL: dQ, dK and dV
// from Q, K, V, dO and what the forward pass kept, O and each query's
// log-sum-exp, without the n×m weights. A tile's weights are computed
// again, P_ij = exp(s_ij − lse_i), and chapter 11's backward is applied:
//
//   dV_j += P_ij dO_i      dP_ij = dO_i · V_j      dS_ij = P_ij (dP_ij − D_i)
//   dK_j += dS_ij Q_i · scale                      dQ_i += dS_ij K_j · scale
//
// with D_i = dO_i · O_i, one number a query, computed once (`rows`).
//
// Three kernels, as the appendix's CPU kernel has two passes: `rows`;
// `queries`, a thread a query owning its dQ_i, walking tiles of keys;
// `keys`, a thread a key owning its dK_j and dV_j, walking tiles of
// queries. Each owns what it sums, so no two threads add into the same
// row, and no atomic addition (whose order, and so whose bits, would
// change from run to run) is needed. Each dispatch walks a span,
// begin..end, of at most 8,192 keys (or queries), carrying on from the
// sums the last one wrote.

// (common.wgsl and flash.wgsl come first: Sizes, bindings 0 to 6, the
// key tiles and load_tile.)
@group(0) @binding(7) var<storage, read> d_o: array<vec4<f32>>;      // dO, n × d4
@group(0) @binding(8) var<storage, read_write> d_rows: array<f32>;   // D, n
@group(0) @binding(9) var<storage, read_write> dq: array<vec4<f32>>; // n × d4
@group(0) @binding(10) var<storage, read_write> dkv: array<vec4<f32>>; // dK, then dV: 2m × d4

const BQ: u32 = 16u; // queries a tile in the `keys` pass

// ANCHOR: backward_rows
/// D_i = dO_i · O_i, a thread a query.
@compute @workgroup_size(64)
fn rows(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.x;
    if i >= sizes.n {
        return;
    }
    var d_i = 0.0;
    for (var c = 0u; c < sizes.d4; c++) {
        d_i += dot(d_o[i * sizes.d4 + c], o[i * sizes.d4 + c]);
    }
    d_rows[i] = d_i;
}
// ANCHOR_END: backward_rows

// ANCHOR: backward_queries
/// dQ: a workgroup of BR queries, one a thread, walking key tiles as the
/// forward kernel does.
@compute @workgroup_size(64)
fn queries(@builtin(workgroup_id) wg: vec3<u32>,
           @builtin(local_invocation_index) t: u32) {
    let i = wg.x * BR + t;
    let inside_n = i < sizes.n;
    var q_i: array<vec4<f32>, 16>;
    var do_i: array<vec4<f32>, 16>;
    var dq_i: array<vec4<f32>, 16>;
    for (var c = 0u; c < D4; c++) {
        let inside = inside_n && c < sizes.d4;
        let at = select(0u, i * sizes.d4 + c, inside);
        q_i[c] = select(vec4<f32>(0.0), q[at], inside) * sizes.scale;
        do_i[c] = select(vec4<f32>(0.0), d_o[at], inside);
        dq_i[c] = vec4<f32>(0.0);
        if inside && sizes.begin > 0u {
            dq_i[c] = dq[at]; // carried from the keys before begin
        }
    }
    let lse_i = lse[select(0u, i, inside_n)];
    let d_i = d_rows[select(0u, i, inside_n)];
    var end = sizes.end;
    if sizes.mask == 1u {
        end = min(end, (wg.x + 1u) * BR);
    }
    for (var j0 = sizes.begin; j0 < end; j0 += BC) {
        workgroupBarrier();
        load_tile(j0, t);
        workgroupBarrier();
        for (var jj = 0u; jj < BC; jj++) {
            if inside_n && j0 + jj < end && sees(i, j0 + jj) {
                var s = 0.0;
                var dp = 0.0;
                for (var c = 0u; c < D4; c++) {
                    s += dot(q_i[c], k_tile[jj * D4 + c]);
                    dp += dot(do_i[c], v_tile[jj * D4 + c]);
                }
                let ds = exp(s - lse_i) * (dp - d_i) * sizes.scale;
                for (var c = 0u; c < D4; c++) {
                    dq_i[c] += ds * k_tile[jj * D4 + c];
                }
            }
        }
    }
    if inside_n {
        for (var c = 0u; c < sizes.d4; c++) {
            dq[i * sizes.d4 + c] = dq_i[c];
        }
    }
}
// ANCHOR_END: backward_queries

var<workgroup> q_tile: array<vec4<f32>, 256>;  // BQ × D4, scaled: 4 KiB
var<workgroup> do_tile: array<vec4<f32>, 256>; // 4 KiB
var<workgroup> lse_tile: array<f32, 16>;
var<workgroup> d_tile: array<f32, 16>;

/// Copies queries i0..i0 + BQ (scaled), their dO, lse and D into the
/// tiles, every thread a share.
fn load_queries(i0: u32, t: u32) {
    for (var e = t; e < BQ * D4; e += BR) {
        let i = i0 + e / D4;
        let c = e % D4;
        let inside = i < sizes.n && c < sizes.d4;
        let at = select(0u, i * sizes.d4 + c, inside);
        q_tile[e] = select(vec4<f32>(0.0), q[at], inside) * sizes.scale;
        do_tile[e] = select(vec4<f32>(0.0), d_o[at], inside);
    }
    if t < BQ {
        let i = i0 + t;
        let at = select(0u, i, i < sizes.n);
        lse_tile[t] = select(LOWEST, lse[at], i < sizes.n);
        d_tile[t] = select(0.0, d_rows[at], i < sizes.n);
    }
}

// ANCHOR: backward_keys
/// dK and dV: a workgroup of BR keys, one a thread, walking tiles of BQ
/// queries held in workgroup memory.
@compute @workgroup_size(64)
fn keys(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
    let j = wg.x * BR + t;
    let inside_m = j < sizes.m;
    var k_j: array<vec4<f32>, 16>;
    var v_j: array<vec4<f32>, 16>;
    var dk_j: array<vec4<f32>, 16>;
    var dv_j: array<vec4<f32>, 16>;
    let carry = sizes.begin > 0u;
    for (var c = 0u; c < D4; c++) {
        let inside = inside_m && c < sizes.d4;
        let at = select(0u, j * sizes.d4 + c, inside);
        k_j[c] = select(vec4<f32>(0.0), k[at], inside);
        v_j[c] = select(vec4<f32>(0.0), v[at], inside);
        dk_j[c] = vec4<f32>(0.0);
        dv_j[c] = vec4<f32>(0.0);
        if inside && carry {
            dk_j[c] = dkv[at];
            dv_j[c] = dkv[sizes.m * sizes.d4 + at];
        }
    }
    // Causal: no query before this workgroup's first key sees any of them.
    var start = sizes.begin;
    if sizes.mask == 1u {
        start = max(start, wg.x * BR);
    }
    for (var i0 = start; i0 < sizes.end; i0 += BQ) {
        workgroupBarrier();
        load_queries(i0, t);
        workgroupBarrier();
        for (var ii = 0u; ii < BQ; ii++) {
            let i = i0 + ii;
            if inside_m && i < sizes.end && sees(i, j) {
                var s = 0.0;
                var dp = 0.0;
                for (var c = 0u; c < D4; c++) {
                    s += dot(q_tile[ii * D4 + c], k_j[c]);
                    dp += dot(do_tile[ii * D4 + c], v_j[c]);
                }
                let p = exp(s - lse_tile[ii]);
                let ds = p * (dp - d_tile[ii]);
                for (var c = 0u; c < D4; c++) {
                    dv_j[c] += p * do_tile[ii * D4 + c];
                    dk_j[c] += ds * q_tile[ii * D4 + c];
                }
            }
        }
    }
    if inside_m {
        for (var c = 0u; c < sizes.d4; c++) {
            dkv[j * sizes.d4 + c] = dk_j[c];
            dkv[(sizes.m + j) * sizes.d4 + c] = dv_j[c];
        }
    }
}
// ANCHOR_END: backward_keys
