//! Agreement with an independent reference: golden vectors computed by
//! PyTorch (`F.scaled_dot_product_attention`, `nn.MultiheadAttention`) and
//! committed under `tests/golden/` by `tools/golden.py` (see its header for
//! how to regenerate; CI only reads the files). Tolerance: 1e-5 in f32.

use approx::assert_abs_diff_eq;
use attn::masking::{causal_mask, masked_attention};
use attn::multihead::{multi_head_attention, MultiHeadAttention};
use attn::scaled_dot_product_attention;
use ndarray::Axis;

mod common;

use common::golden::load;

const TOLERANCE: f32 = 1e-5;

#[test]
fn scaled_dot_product_attention_matches_pytorch() {
    for file in ["sdpa_4x6_d8.txt", "sdpa_3x9_d64.txt"] {
        let g = load(file);
        let a = scaled_dot_product_attention(&g["q"], &g["k"], &g["v"]).unwrap();
        assert_abs_diff_eq!(a.output, g["output"], epsilon = TOLERANCE);
    }
}

#[test]
fn causal_attention_matches_pytorch() {
    let g = load("sdpa_causal_5_d8.txt");
    let keep = causal_mask(5, 5);
    let a = masked_attention(&g["q"], &g["k"], &g["v"], &keep).unwrap();
    assert_abs_diff_eq!(a.output, g["output"], epsilon = TOLERANCE);
}

#[test]
fn multi_head_attention_matches_pytorch() {
    for (file, h) in [("mha_5x7_d16_h4.txt", 4), ("mha_6x6_d64_h8.txt", 8)] {
        let g = load(file);
        let weights = ["w_q", "w_k", "w_v", "w_o"].map(|w| g[w].clone());
        let mha = MultiHeadAttention::from_weights(weights.into(), h).unwrap();
        // The layer, and chapter 5's form, one head after another.
        let small = multi_head_attention(&mha, &g["x_q"], &g["x_kv"]).unwrap();
        for out in [mha.forward(&g["x_q"], &g["x_kv"]).unwrap(), small] {
            assert_abs_diff_eq!(out.output, g["output"], epsilon = TOLERANCE);
            for (i, head) in out.weights.axis_iter(Axis(0)).enumerate() {
                assert_abs_diff_eq!(head, g[&format!("weights_head{i}")], epsilon = TOLERANCE);
            }
        }
    }
}
