//! Grouped-query attention (chapter 17): `h` query heads sharing `h_kv`
//! key/value heads, so that a cache holds `h/h_kv` times fewer keys and
//! values.

use ndarray::{s, Array2, ArrayRef2, Axis};
use ndarray_rand::rand::rngs::StdRng;

use super::{check_heads, MultiHeadAttention};
use crate::error::AttnError;
use crate::nn::{AttentionBiases, AttentionWeights};
use crate::projection::init_weight;

/// Checks that `h_kv` key/value heads split `h` query heads into equal groups.
pub(super) fn check_groups(h: usize, kv_heads: usize) -> Result<(), AttnError> {
    if kv_heads == 0 || !h.is_multiple_of(kv_heads) {
        return Err(AttnError::InvalidArgument {
            name: "h_kv (key/value heads)",
            value: kv_heads as f64,
            requirement: "must divide the number of heads h",
        });
    }
    Ok(())
}

impl MultiHeadAttention {
    // ANCHOR: grouped
    /// A grouped-query layer: `h` query heads sharing `h_kv` key/value heads
    /// (`h_kv` divides `h`), query head `i` reading key/value head
    /// `i / (h/h_kv)`. `W_Q` and `W_O` are `d_model×d_model`, `W_K` and `W_V`
    /// only `d_model × h_kv·d_k`, so the keys and values a cache holds per
    /// token shrink by `h/h_kv`. `h_kv = h` is [`MultiHeadAttention::new`]'s
    /// layer, `h_kv = 1` multi-query attention. Weights drawn as `new` draws
    /// them.
    pub fn grouped(
        d_model: usize,
        h: usize,
        kv_heads: usize,
        rng: &mut StdRng,
    ) -> Result<Self, AttnError> {
        check_heads(d_model, h)?;
        check_groups(h, kv_heads)?;
        let d_kv = kv_heads * (d_model / h);
        let mut w = |cols| init_weight(d_model, cols, rng);
        let w = AttentionWeights::new(w(d_model)?, w(d_kv)?, w(d_kv)?, w(d_model)?);
        Ok(MultiHeadAttention { h, w })
    }
    // ANCHOR_END: grouped

    /// The number of key/value heads `h_kv`: `h` unless the layer is grouped.
    pub fn kv_heads(&self) -> usize {
        self.w.w_k.ncols() / self.d_k()
    }

    /// The multi-head layer that computes what this one does: each query
    /// head given its own copy of its group's `W_K` and `W_V` columns
    /// (`d_model×d_model` each). For a multi-head layer, itself.
    pub fn to_multi_head(&self) -> MultiHeadAttention {
        let (d_k, per_group) = (self.d_k(), self.h / self.kv_heads());
        let copied = |w: &ArrayRef2<f32>| {
            let mut out = Array2::zeros((w.nrows(), self.h * d_k));
            for i in 0..self.h {
                let j = i / per_group; // the group query head i reads
                out.slice_mut(s![.., i * d_k..(i + 1) * d_k])
                    .assign(&w.slice(s![.., j * d_k..(j + 1) * d_k]));
            }
            out
        };
        let row =
            |b: &ndarray::Array1<f32>| copied(&b.view().insert_axis(Axis(0))).remove_axis(Axis(0));
        let w = &self.w;
        let biases = w.biases.as_ref().map(|b| AttentionBiases {
            b_q: b.b_q.clone(),
            b_k: row(&b.b_k),
            b_v: row(&b.b_v),
            b_o: b.b_o.clone(),
        });
        MultiHeadAttention {
            h: self.h,
            w: AttentionWeights {
                w_q: w.w_q.clone(),
                w_k: copied(&w.w_k),
                w_v: copied(&w.w_v),
                w_o: w.w_o.clone(),
                biases,
            },
        }
    }
}
