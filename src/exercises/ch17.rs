//! Chapter 17: sharing and forgetting keys.

use ndarray::{s, Array2};

use crate::error::AttnError;
use crate::kv_bytes::KvLayout;
use crate::multihead::MultiHeadAttention;
use crate::nn::AttentionWeights;

// ANCHOR: mean_pool
/// Exercise 1: a multi-head layer turned into a grouped-query layer of
/// `kv_heads` key/value heads, as Ainslie et al. (2023) convert a checkpoint: each
/// group's `W_K` and `W_V` columns are the mean of its heads' columns;
/// `W_Q` and `W_O` are kept. `kv_heads` must divide the layer's heads, and
/// the layer must be multi-head (every head its own keys) and without biases.
pub fn mean_pool_key_value_heads(
    layer: &MultiHeadAttention,
    kv_heads: usize,
) -> Result<MultiHeadAttention, AttnError> {
    let h = layer.h();
    if layer.kv_heads() != h || layer.weights().biases.is_some() {
        return Err(AttnError::InvalidArgument {
            name: "layer to pool",
            value: layer.kv_heads() as f64,
            requirement: "must be multi-head (h_kv = h) and without biases",
        });
    }
    if kv_heads == 0 || !h.is_multiple_of(kv_heads) {
        return Err(AttnError::InvalidArgument {
            name: "h_kv (key/value heads)",
            value: kv_heads as f64,
            requirement: "must divide the number of heads h",
        });
    }
    let (d, d_k, per_group) = (layer.d_model(), layer.d_k(), h / kv_heads);
    let pool = |w: &Array2<f32>| {
        let mut out = Array2::zeros((d, kv_heads * d_k));
        for i in 0..h {
            let j = i / per_group; // the group head i joins
            let mut group = out.slice_mut(s![.., j * d_k..(j + 1) * d_k]);
            group += &(&w.slice(s![.., i * d_k..(i + 1) * d_k]) / per_group as f32);
        }
        out
    };
    let w = layer.weights();
    let pooled = AttentionWeights::new(w.w_q.clone(), pool(&w.w_k), pool(&w.w_v), w.w_o.clone());
    MultiHeadAttention::from_weights(pooled, h)
}
// ANCHOR_END: mean_pool

// ANCHOR: layout_from_config
/// Exercise 3: a model's layers and cache layout from its Hugging Face
/// `config.json`: latent (`kv_lora_rank`, `qk_rope_head_dim`) if it has a
/// latent, else `num_key_value_heads` heads (all `num_attention_heads` when
/// absent) of width `head_dim`, or `hidden_size / num_attention_heads`.
/// A configuration that is not JSON, lacks a count, has a count that is not
/// a whole number `> 0`, half a latent, or heads that do not divide evenly,
/// is an error.
pub fn layout_from_config(config: &str) -> Result<(usize, KvLayout), AttnError> {
    let bad = |name: &'static str, requirement: &'static str| AttnError::InvalidArgument {
        name,
        value: f64::NAN,
        requirement,
    };
    let json: serde_json::Value =
        serde_json::from_str(config).map_err(|_| bad("config", "must be JSON"))?;
    let field = |name: &'static str| -> Result<Option<usize>, AttnError> {
        match json.get(name) {
            None => Ok(None),
            Some(v) => match v.as_u64().and_then(|n| usize::try_from(n).ok()) {
                Some(n) if n > 0 => Ok(Some(n)),
                _ => Err(bad(name, "must be a whole number > 0")),
            },
        }
    };
    let need = |name| field(name)?.ok_or(bad(name, "must be in the configuration"));
    let (layers, heads) = (need("num_hidden_layers")?, need("num_attention_heads")?);
    match (field("kv_lora_rank")?, field("qk_rope_head_dim")?) {
        (Some(d_c), Some(d_r)) => return Ok((layers, KvLayout::Latent { d_c, d_r })),
        (None, None) => {}
        _ => return Err(bad("kv_lora_rank", "and qk_rope_head_dim: a latent has both or neither")),
    }
    let kv_heads = field("num_key_value_heads")?.unwrap_or(heads);
    if !heads.is_multiple_of(kv_heads) {
        return Err(bad("num_key_value_heads", "must divide num_attention_heads"));
    }
    let d_head = match field("head_dim")? {
        Some(d) => d,
        None => match need("hidden_size")? {
            hidden if hidden.is_multiple_of(heads) => hidden / heads, // never a width of 0
            _ => return Err(bad("hidden_size", "must be a multiple of num_attention_heads")),
        },
    };
    Ok((layers, KvLayout::Heads { kv_heads, d_head }))
}
// ANCHOR_END: layout_from_config

// ANCHOR: ring_rows
/// Exercise 4: the token (counted from 0) that each row of a sink-and-window
/// ring holds after `seen` tokens: rows `0..sinks` the first tokens, the
/// `window` rows after them in turn, each new token over the oldest; `None`
/// for a row not written yet. `window` must be at least 1.
pub fn ring_rows(
    seen: usize,
    sinks: usize,
    window: usize,
) -> Result<Vec<Option<usize>>, AttnError> {
    if window == 0 {
        return Err(AttnError::InvalidArgument {
            name: "window",
            value: 0.0,
            requirement: "must be at least 1: the newest token is always kept",
        });
    }
    // A ring too large to hold is an error, not an abort.
    let rows = sinks.saturating_add(window);
    crate::check::check_size("the ring's rows", rows, 1)?;
    let mut ring = vec![None; rows];
    for (t, row) in ring.iter_mut().enumerate().take(seen.min(sinks)) {
        *row = Some(t); // the sinks, never overwritten
    }
    for t in seen.saturating_sub(window).max(sinks)..seen {
        ring[sinks + (t - sinks) % window] = Some(t); // the window's rows in turn
    }
    Ok(ring)
}
// ANCHOR_END: ring_rows

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

    /// Keep W_Q and W_O; head i joins group i / (h / h_kv), and each group's W_K and W_V columns
    /// are the mean of its heads' columns. Build the result from the weights
    /// (`AttentionWeights::new`, `MultiHeadAttention::from_weights`). h_kv = 0, an h_kv that does
    /// not divide h, and a layer that is already grouped or has biases are errors.
    #[test]
    fn pooling_keeps_what_is_shared_and_averages_the_rest() {
        let mut rng = StdRng::seed_from_u64(7);
        let (d, h) = (8, 4);
        let x = crate::scaling::standard_normal(6, d, &mut rng);
        let layer = MultiHeadAttention::new(d, h, &mut rng).unwrap();
        // h_kv = h changes nothing.
        let same = mean_pool_key_value_heads(&layer, h).unwrap();
        assert_eq!(same.forward(&x, &x).unwrap(), layer.forward(&x, &x).unwrap());
        // A layer whose heads already share their group's keys and values
        // is the pooled layer, exactly.
        let grouped = MultiHeadAttention::grouped(d, h, 2, &mut rng).unwrap();
        let mha = grouped.to_multi_head();
        let pooled = mean_pool_key_value_heads(&mha, 2).unwrap();
        assert_eq!(pooled.weights(), grouped.weights());
        // Otherwise the mean changes the output, but keeps each group's mean.
        let pooled = mean_pool_key_value_heads(&layer, 1).unwrap();
        assert_eq!(pooled.kv_heads(), 1);
        let mean = layer.weights().w_k.sum_axis(ndarray::Axis(1)) / h as f32;
        let got = pooled.weights().w_k.sum_axis(ndarray::Axis(1));
        approx::assert_abs_diff_eq!(got, mean, epsilon = 1e-5);
        let out = |l: &MultiHeadAttention| l.forward(&x, &x).unwrap().output;
        assert!((out(&pooled) - out(&layer)).iter().any(|e| e.abs() > 1e-3));
        for g in [0, 3] {
            assert!(mean_pool_key_value_heads(&layer, g).is_err(), "h_kv = {g} of h = 4");
        }
        assert!(mean_pool_key_value_heads(&pooled, 1).is_err(), "already grouped");
    }

    /// Read the JSON with `serde_json::from_str` into a `serde_json::Value`;
    /// `value.get("num_attention_heads")` and `as_u64` read a number. A
    /// latent (both `kv_lora_rank` and `qk_rope_head_dim`) makes the layout
    /// `KvLayout::Latent { d_c, d_r }`; otherwise `KvLayout::Heads`, with
    /// `num_key_value_heads` absent meaning multi-head (as many as the query
    /// heads) and the head width `head_dim`, or `hidden_size` over the heads.
    /// The test reads the four configurations of `attn::kv_bytes::PUBLISHED`.
    #[test]
    fn the_published_configurations_give_the_published_layouts() {
        let configs = [
            r#"{"num_hidden_layers": 32, "num_attention_heads": 32, "hidden_size": 4096}"#,
            r#"{"num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
                "hidden_size": 4096}"#,
            r#"{"num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
                "hidden_size": 4096, "head_dim": 128}"#,
            r#"{"num_hidden_layers": 60, "num_attention_heads": 128, "num_key_value_heads": 128,
                "hidden_size": 5120, "kv_lora_rank": 512, "qk_rope_head_dim": 64}"#,
        ];
        for (config, model) in configs.iter().zip(crate::kv_bytes::PUBLISHED) {
            let (layers, layout) = layout_from_config(config).unwrap();
            assert_eq!((layers, layout), (model.layers, model.layout), "{}", model.name);
        }
    }

    /// A configuration without `num_hidden_layers` or `num_attention_heads`,
    /// with a count of 0 or one that is not a whole number, with key/value
    /// heads that do not divide the query heads, or that is not JSON at all, is
    /// an error (`AttnError::InvalidArgument`), never a panic or a layout of
    /// width 0.
    #[test]
    fn a_configuration_that_does_not_say_is_an_error() {
        for config in [
            r#"{"num_attention_heads": 32, "hidden_size": 4096}"#,
            r#"{"num_hidden_layers": 32, "hidden_size": 4096}"#,
            r#"{"num_hidden_layers": 0, "num_attention_heads": 32, "hidden_size": 4096}"#,
            r#"{"num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 5,
                "hidden_size": 4096}"#,
            r#"{"num_hidden_layers": 32, "num_attention_heads": 32, "hidden_size": 40.5}"#,
            r#"{"num_hidden_layers": 32, "num_attention_heads": 32}"#,
            "not json",
        ] {
            assert!(layout_from_config(config).is_err(), "{config} must be an error");
        }
    }

    /// Row t holds token t while t < sinks; the window's rows take the later
    /// tokens in turn, row sinks + (t − sinks) mod window, each new token over
    /// the oldest. Rows not written yet are None. The tokens held, in order,
    /// must be what `SlidingCache::held` says after the same tokens. A window
    /// of 0, and sinks and a window whose sum overflows, are errors.
    #[test]
    fn the_ring_holds_what_the_cache_holds() {
        use crate::cache::KeyValueCache;
        use crate::sliding::SlidingCache;
        for (sinks, window) in [(0, 1), (0, 4), (2, 3), (4, 8), (1, 1)] {
            let mut cache = SlidingCache::new(1, 1, sinks, window).unwrap();
            for seen in 0..30 {
                let rows = ring_rows(seen, sinks, window).unwrap();
                assert_eq!(rows.len(), sinks + window, "sinks {sinks}, window {window}");
                let mut held: Vec<usize> = rows.iter().flatten().copied().collect();
                held.sort_unstable();
                assert_eq!(held, cache.held(), "sinks {sinks}, window {window}, {seen} seen");
                let sink_rows: Vec<Option<usize>> =
                    (0..sinks).map(|t| (t < seen).then_some(t)).collect();
                assert_eq!(rows[..sinks], sink_rows[..], "the sinks' rows");
                let token = ndarray::Array1::from_elem(1, seen as f32);
                cache.append(&token, &token).unwrap();
            }
        }
        assert!(ring_rows(3, 1, 0).is_err(), "a window of 0 must be an error");
        assert!(ring_rows(3, usize::MAX, 2).is_err(), "a ring too large to hold");
    }
}
