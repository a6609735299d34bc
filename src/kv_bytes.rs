//! What a KV cache costs: bytes per token, from a model's configuration, by
//! one formula for every way of sharing or compressing keys and values.

use crate::error::AttnError;

// ANCHOR: layout
/// What one layer's cache keeps for each token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KvLayout {
    /// A key and a value for each of `kv_heads` heads, `d_head` wide:
    /// multi-head attention (`kv_heads` = heads), grouped-query (fewer),
    /// multi-query (1).
    Heads {
        /// Key/value heads.
        kv_heads: usize,
        /// Width of one head's key (and value).
        d_head: usize,
    },
    /// A latent of width `d_c` and one rotary key of width `d_r`, shared by
    /// every head: multi-head latent attention.
    Latent {
        /// Latent width.
        d_c: usize,
        /// Rotary key width.
        d_r: usize,
    },
}

impl KvLayout {
    /// Numbers one layer caches per token: `2·kv_heads·d_head`, or `d_c + d_r`.
    pub fn numbers_per_layer(&self) -> Option<usize> {
        match *self {
            KvLayout::Heads { kv_heads, d_head } => kv_heads.checked_mul(d_head)?.checked_mul(2),
            KvLayout::Latent { d_c, d_r } => d_c.checked_add(d_r),
        }
    }
}

/// Bytes of KV cache per token: `layers · numbers per layer · bytes per
/// number` (2 for the 16-bit floats models are served in, 4 for `f32`).
pub fn kv_bytes_per_token(
    layers: usize,
    layout: KvLayout,
    bytes_per_number: usize,
) -> Result<usize, AttnError> {
    let widths = match layout {
        KvLayout::Heads { kv_heads, d_head } => [("kv_heads", kv_heads), ("d_head", d_head)],
        KvLayout::Latent { d_c, d_r } => [("d_c", d_c), ("d_c + d_r", d_c.saturating_add(d_r))],
    };
    let counts = [("layers", layers), ("bytes per number", bytes_per_number)];
    crate::check::check_nonzero(&[counts, widths].concat())?;
    layout
        .numbers_per_layer()
        .and_then(|n| n.checked_mul(layers)?.checked_mul(bytes_per_number))
        .ok_or(AttnError::InvalidArgument {
            name: "cache configuration",
            value: layers as f64,
            requirement: "must give a size in bytes that fits in a usize",
        })
}
// ANCHOR_END: layout

/// A published model's attention, as its configuration file states it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PublishedModel {
    /// The model's name.
    pub name: &'static str,
    /// Layers (blocks).
    pub layers: usize,
    /// Query heads.
    pub heads: usize,
    /// What each layer caches per token.
    pub layout: KvLayout,
}

// ANCHOR: published
/// Four published models' attention: `num_hidden_layers`,
/// `num_attention_heads`, `num_key_value_heads` and the head width
/// (`hidden_size / num_attention_heads`) of their configurations, and
/// DeepSeek-V2's `kv_lora_rank` and `qk_rope_head_dim`.
pub const PUBLISHED: [PublishedModel; 4] = [
    PublishedModel {
        name: "Llama-2-7B",
        layers: 32,
        heads: 32,
        layout: KvLayout::Heads { kv_heads: 32, d_head: 128 },
    },
    PublishedModel {
        name: "Llama-3-8B",
        layers: 32,
        heads: 32,
        layout: KvLayout::Heads { kv_heads: 8, d_head: 128 },
    },
    PublishedModel {
        name: "Mistral-7B",
        layers: 32,
        heads: 32,
        layout: KvLayout::Heads { kv_heads: 8, d_head: 128 },
    },
    PublishedModel {
        name: "DeepSeek-V2",
        layers: 60,
        heads: 128,
        layout: KvLayout::Latent { d_c: 512, d_r: 64 },
    },
];
// ANCHOR_END: published

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_formula_for_each_layout() {
        let bytes = |m: &PublishedModel| kv_bytes_per_token(m.layers, m.layout, 2).unwrap();
        let [llama2, llama3, mistral, deepseek] = PUBLISHED.map(|m| bytes(&m));
        assert_eq!(llama2, 2 * 32 * 32 * 128 * 2); // 512 KiB a token
        assert_eq!(llama3, llama2 / 4); // 8 key/value heads for 32
        assert_eq!(mistral, llama3);
        assert_eq!(deepseek, 60 * (512 + 64) * 2);
        let huge = KvLayout::Heads { kv_heads: usize::MAX, d_head: 2 };
        assert!(kv_bytes_per_token(1, huge, 2).is_err());
    }
}
