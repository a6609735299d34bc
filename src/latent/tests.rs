//! Latent attention: the absorbed decoding equals the explicit form, and
//! why the rotary part must stay apart from the latent.

use super::*;
use ndarray_rand::rand::SeedableRng;

fn layer_and_text(n: usize) -> (LatentAttention, Array2<f32>) {
    let mut rng = StdRng::seed_from_u64(41);
    let layer = LatentAttention::new(16, 4, [4, 6, 4], &mut rng).unwrap();
    let x = crate::grad::normal_matrix(n, 16, &mut rng).mapv(|v| v as f32);
    (layer, x)
}

// ANCHOR: absorbed_test
/// Decoding token by token with the up-projections absorbed gives, at
/// every one of 40 steps, the row of the explicit layer's causal output;
/// the cache holds `d_c + d_r` = 10 numbers a token, where the explicit
/// keys and values of 4 heads would be `4·(4 + 4) + 4·4` = 48.
#[test]
fn absorbed_decoding_equals_the_explicit_layer() {
    let (layer, x) = layer_and_text(40);
    let explicit = layer.forward(&x).unwrap();
    let absorbed = layer.absorbed();
    let mut cache = absorbed.new_cache(x.nrows()).unwrap();
    for t in 0..x.nrows() {
        let out = absorbed.step(&x.row(t), &mut cache).unwrap();
        approx::assert_abs_diff_eq!(out, explicit.row(t), epsilon = 1e-4);
    }
    assert_eq!(cache.numbers_per_token(), 10);
}
// ANCHOR_END: absorbed_test

/// Without the decoupled rotary key, absorbed decoding no longer knows
/// where tokens are: dropping `q^R·k^R` from the absorbed scores changes
/// the output.
#[test]
fn the_rotary_part_matters() {
    let (layer, x) = layer_and_text(12);
    let explicit = layer.forward(&x).unwrap();
    let mut absorbed = layer.absorbed();
    absorbed.w_qr.fill(0.0); // no rotary query: q^R·k^R = 0
    let mut cache = absorbed.new_cache(x.nrows()).unwrap();
    let mut apart = 0.0_f32;
    for t in 0..x.nrows() {
        let out = absorbed.step(&x.row(t), &mut cache).unwrap();
        apart = apart.max((&out - &explicit.row(t)).iter().fold(0.0, |m, d| m.max(d.abs())));
    }
    assert!(apart > 1e-2, "{apart}");
}

// ANCHOR: rope_breaks_absorption
/// Why RoPE cannot turn the latent keys themselves: if head `i`'s keys were
/// `RoPE(c W_UK^i)`, the score of query position `t` and key position `j`
/// would be `(x_t W_Q^i) R_{t−j} (c_j W_UK^i)ᵀ`, a different matrix between
/// the two for every distance `t − j`; no single `d_model×d_c` matrix
/// absorbs it. Here the scores of one query against the latents, through
/// the absorbed matrix turned by `t`, miss the rotated keys' scores.
#[test]
fn rope_on_the_latent_keys_cannot_be_absorbed() {
    let (layer, x) = layer_and_text(8);
    let d_h = layer.d_h;
    let c = matmul(&x, &layer.w.w_dkv);
    let w_q = LatentAttention::head(&layer.w.w_q, 0, d_h);
    let w_uk = LatentAttention::head(&layer.w.w_uk, 0, d_h);
    let t = 7;
    // Explicit: RoPE on the query and on every up-projected key.
    let mut q = matmul(&x.slice(s![t..=t, ..]), &w_q);
    rotate(&mut q, t, Rotation::Forward);
    let mut k = matmul(&c, &w_uk);
    rotate(&mut k, 0, Rotation::Forward);
    let want = matmul(&q, &k.t());
    // One absorbed query, W_UK folded in after the query's own turn.
    let folded = matmul(&q, &w_uk.t()); // 1×d_c
    let got = matmul(&folded, &c.t());
    let apart = (&got - &want).iter().fold(0.0_f32, |m, d| m.max(d.abs()));
    assert!(apart > 1e-2, "the turned keys' scores differ: {apart}");
    // Without RoPE on either, folding is exact.
    let plain = matmul(&matmul(&x.slice(s![t..=t, ..]), &w_q), &matmul(&c, &w_uk).t());
    let folded = matmul(&matmul(&matmul(&x.slice(s![t..=t, ..]), &w_q), &w_uk.t()), &c.t());
    approx::assert_abs_diff_eq!(plain, folded, epsilon = 1e-4);
}
// ANCHOR_END: rope_breaks_absorption

#[test]
fn bad_input_is_refused_by_name() {
    let mut rng = StdRng::seed_from_u64(1);
    let e = |r: Result<LatentAttention, AttnError>| r.unwrap_err().to_string();
    assert!(e(LatentAttention::new(16, 4, [4, 6, 3], &mut rng)).contains("d_r"));
    assert!(e(LatentAttention::new(16, 0, [4, 6, 4], &mut rng)).contains("heads"));
    let (layer, x) = layer_and_text(3);
    assert!(layer.forward(&x.slice(s![.., ..15])).is_err());
    let absorbed = layer.absorbed();
    let mut cache = absorbed.new_cache(x.nrows()).unwrap();
    assert!(absorbed.step(&Array1::from_elem(16, f32::NAN), &mut cache).is_err());
    let e = absorbed.new_cache(0).unwrap_err().to_string();
    assert!(e.contains("window"), "{e}");
    let other = LatentAttention::new(16, 4, [4, 8, 4], &mut rng).unwrap();
    let mut wrong = other.absorbed().new_cache(4).unwrap();
    let err = absorbed.step(&x.row(0), &mut wrong).unwrap_err().to_string();
    assert!(err.contains("latent cache"), "{err}");
}
