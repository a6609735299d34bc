//! Multi-head attention,
//! `MultiHead(X_q, X_kv) = Concat(head_1, …, head_h) W_O` with
//! `head_i = Attention(X_q W_Q^i, X_kv W_K^i, X_kv W_V^i)`.
//!
//! The `h` per-head projections `W_Q^i` (`d_model×d_k`, `d_k = d_model/h`) are
//! stored side by side as one `d_model×d_model` matrix `W_Q`, and likewise
//! `W_K`, `W_V`; so one matrix product projects for every head at once, and
//! head `i` is then columns `i·d_k .. (i+1)·d_k` (the layer attends with
//! those views, [`crate::nn`]'s multi-head attention; [`split_heads`] is the
//! same split as the reshape tensor libraries use):
//!
//! | step | shape |
//! | --- | --- |
//! | `Q = X_q W_Q` | `n×d_model` |
//! | split heads: reshape to `n×h×d_k`, permute | `h×n×d_k` |
//! | attend per head (scale `1/√d_k`, **not** `1/√d_model`) | `h×n×d_k`, weights `h×n×m` |
//! | merge heads: permute to `n×h×d_k`, reshape | `n×d_model` |
//! | output projection `· W_O` | `n×d_model` |

use ndarray::{
    concatenate, s, stack, Array1, Array2, Array3, ArrayRef2, ArrayRef3, ArrayView2, Axis,
};
use ndarray_rand::rand::rngs::StdRng;

use crate::check::{check_finite, check_model_width, check_not_empty};
use crate::error::AttnError;
use crate::nn::attention::{affine, mha_forward, mha_from_projections, Heads, MhaCache};
use crate::projection::init_weight;
use crate::scaling::{entropy, standard_normal};

// ANCHOR: struct
/// A multi-head attention layer with `h` heads of width `d_k = d_model / h`.
/// The fields are private, so that `h` always divides `d_model` and every
/// matrix has its shape: [`MultiHeadAttention::new`] and
/// [`MultiHeadAttention::from_weights`] check it, the accessors read them.
#[derive(Debug, Clone, PartialEq)]
pub struct MultiHeadAttention {
    h: usize,                         // number of heads
    kv_heads: usize,                  // key/value heads: h, or fewer, each shared by h/h_kv heads
    w: [Array2<f32>; 4], // W_Q, W_K, W_V (the heads' projections side by side), W_O; d_model×d_model each
    biases: Option<[Array1<f32>; 4]>, // b_Q, b_K, b_V, b_O (d_model each), if any
}
// ANCHOR_END: struct

/// What a multi-head layer returns.
#[derive(Debug, Clone, PartialEq)]
pub struct MultiHeadOutput {
    /// `n×d_model`.
    pub output: Array2<f32>,
    /// `h×n×m`: each head's attention weights.
    pub weights: Array3<f32>,
}

// ANCHOR: split_merge
/// Checks that `h_kv` key/value heads split `h` query heads into equal groups.
fn check_groups(h: usize, kv_heads: usize) -> Result<(), AttnError> {
    if kv_heads == 0 || !h.is_multiple_of(kv_heads) {
        return Err(AttnError::InvalidArgument {
            name: "h_kv (key/value heads)",
            value: kv_heads as f64,
            requirement: "must divide the number of heads h",
        });
    }
    Ok(())
}

/// Checks that `h` heads split `d_model` evenly.
fn check_heads(d_model: usize, h: usize) -> Result<(), AttnError> {
    for (name, value) in [("d_model", d_model), ("h", h)] {
        if value == 0 {
            return Err(AttnError::InvalidArgument {
                name,
                value: 0.0,
                requirement: "must be at least 1",
            });
        }
    }
    if !d_model.is_multiple_of(h) {
        return Err(AttnError::HeadsDoNotDivide { d_model, h });
    }
    Ok(())
}

/// `n×d_model` → `h×n×d_k`: head `i` gets columns `i·d_k .. (i+1)·d_k`.
pub fn split_heads(x: &ArrayRef2<f32>, h: usize) -> Result<Array3<f32>, AttnError> {
    let (n, d_model) = x.dim();
    check_heads(d_model, h)?;
    check_finite("x", x)?;
    let d_k = d_model / h;
    let x = x.as_standard_layout(); // rows contiguous, so the reshape is a view
    let by_head = x.to_shape((n, h, d_k)).expect("checked: d_model = h · d_k"); // n×h×d_k
    Ok(by_head.permuted_axes([1, 0, 2]).to_owned()) // h×n×d_k
}

/// `h×n×d_k` → `n×d_model`: the inverse of [`split_heads`] (Concat of heads).
pub fn merge_heads(heads: &ArrayRef3<f32>) -> Array2<f32> {
    let (h, n, d_k) = heads.dim();
    let by_token = heads.view().permuted_axes([1, 0, 2]); // n×h×d_k
    let contiguous = by_token.as_standard_layout();
    contiguous
        .to_shape((n, h * d_k))
        .expect("n·h·d_k elements")
        .to_owned()
}
// ANCHOR_END: split_merge

impl MultiHeadAttention {
    // ANCHOR: new
    /// A layer for `d_model`-wide tokens with `h` heads, weights drawn as in
    /// chapter 4 (`N(0, 1/d_model)`). `d_model` must be a multiple of `h`.
    pub fn new(d_model: usize, h: usize, rng: &mut StdRng) -> Result<Self, AttnError> {
        check_heads(d_model, h)?;
        let mut w = || init_weight(d_model, d_model, rng);
        Ok(MultiHeadAttention {
            h,
            kv_heads: h,
            w: [w()?, w()?, w()?, w()?],
            biases: None,
        })
    }
    // ANCHOR_END: new

    /// A layer from given weights, `[W_Q, W_K, W_V, W_O]`, each
    /// `d_model×d_model` and finite, with `h` heads dividing `d_model`.
    pub fn from_weights(weights: [Array2<f32>; 4], h: usize) -> Result<Self, AttnError> {
        let d_model = weights[0].nrows();
        check_heads(d_model, h)?;
        for (name, w) in ["W_Q", "W_K", "W_V", "W_O"].into_iter().zip(&weights) {
            if w.dim() != (d_model, d_model) {
                return Err(AttnError::ShapesDiffer {
                    what: "W_Q and every other weight of the layer (d_model×d_model)",
                    left: (d_model, d_model),
                    right: w.dim(),
                });
            }
            check_finite(name, w)?;
        }
        Ok(MultiHeadAttention {
            h,
            kv_heads: h,
            w: weights,
            biases: None,
        })
    }

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
        Ok(MultiHeadAttention {
            h,
            kv_heads,
            w: [w(d_model)?, w(d_kv)?, w(d_kv)?, w(d_model)?],
            biases: None,
        })
    }
    // ANCHOR_END: grouped

    /// A grouped-query layer from given weights: `W_Q`, `W_O`
    /// `d_model×d_model`, `W_K`, `W_V` `d_model × h_kv·d_k`, all finite.
    pub fn from_grouped_weights(
        weights: [Array2<f32>; 4],
        h: usize,
        kv_heads: usize,
    ) -> Result<Self, AttnError> {
        let d_model = weights[0].nrows();
        check_heads(d_model, h)?;
        check_groups(h, kv_heads)?;
        let d_kv = kv_heads * (d_model / h);
        let shapes = [
            (d_model, d_model),
            (d_model, d_kv),
            (d_model, d_kv),
            (d_model, d_model),
        ];
        for ((name, w), shape) in ["W_Q", "W_K", "W_V", "W_O"]
            .into_iter()
            .zip(&weights)
            .zip(shapes)
        {
            if w.dim() != shape {
                return Err(AttnError::ShapesDiffer {
                    what: "a grouped layer's weight and its shape (W_K, W_V: d_model × h_kv·d_k)",
                    left: shape,
                    right: w.dim(),
                });
            }
            check_finite(name, w)?;
        }
        Ok(MultiHeadAttention {
            h,
            kv_heads,
            w: weights,
            biases: None,
        })
    }

    /// The same layer with a bias added after each projection,
    /// `[b_Q, b_K, b_V, b_O]`, each `d_model` long and finite: `Q = X_q W_Q + b_Q`,
    /// and so on, as in PyTorch's `nn.MultiheadAttention` and BERT (chapter 14).
    pub fn with_biases(self, biases: [Array1<f32>; 4]) -> Result<Self, AttnError> {
        let pairs = [
            ("b_Q", "W_Q's columns and b_Q"),
            ("b_K", "W_K's columns and b_K"),
            ("b_V", "W_V's columns and b_V"),
            ("b_O", "W_O's columns and b_O"),
        ];
        for (((name, what), b), w) in pairs.into_iter().zip(&biases).zip(&self.w) {
            if b.len() != w.ncols() {
                return Err(AttnError::ShapesDiffer {
                    what,
                    left: (1, w.ncols()),
                    right: (1, b.len()),
                });
            }
            check_finite(name, &b.view().insert_axis(Axis(0)))?;
        }
        Ok(MultiHeadAttention {
            biases: Some(biases),
            ..self
        })
    }

    /// The biases `[b_Q, b_K, b_V, b_O]`, if the layer has any.
    pub fn biases(&self) -> Option<[&Array1<f32>; 4]> {
        let [b_q, b_k, b_v, b_o] = self.biases.as_ref()?;
        Some([b_q, b_k, b_v, b_o])
    }

    /// The number of heads `h`.
    pub fn h(&self) -> usize {
        self.h
    }

    /// The multi-head layer that computes what this one does: each query
    /// head given its own copy of its group's `W_K` and `W_V` columns
    /// (`d_model×d_model` each). For a multi-head layer, itself.
    pub fn to_multi_head(&self) -> MultiHeadAttention {
        let (d_k, per_group) = (self.d_k(), self.h / self.kv_heads);
        let copied = |w: &ArrayRef2<f32>| {
            let mut out = Array2::zeros((w.nrows(), self.h * d_k));
            for i in 0..self.h {
                let j = i / per_group; // the group query head i reads
                out.slice_mut(s![.., i * d_k..(i + 1) * d_k])
                    .assign(&w.slice(s![.., j * d_k..(j + 1) * d_k]));
            }
            out
        };
        let row = |b: &Array1<f32>| copied(&b.view().insert_axis(Axis(0))).remove_axis(Axis(0));
        let [w_q, w_k, w_v, w_o] = &self.w;
        MultiHeadAttention {
            h: self.h,
            kv_heads: self.h,
            w: [w_q.clone(), copied(w_k), copied(w_v), w_o.clone()],
            biases: self
                .biases
                .as_ref()
                .map(|[b_q, b_k, b_v, b_o]| [b_q.clone(), row(b_k), row(b_v), b_o.clone()]),
        }
    }

    /// The number of key/value heads `h_kv`: `h` unless the layer is grouped.
    pub fn kv_heads(&self) -> usize {
        self.kv_heads
    }

    /// The weights `[W_Q, W_K, W_V, W_O]`, each `d_model×d_model` (`W_K`,
    /// `W_V` `d_model × h_kv·d_k` if grouped); head `i` of `W_Q` is columns
    /// `i·d_k .. (i + 1)·d_k`.
    pub fn weights(&self) -> [&Array2<f32>; 4] {
        let [w_q, w_k, w_v, w_o] = &self.w;
        [w_q, w_k, w_v, w_o]
    }

    /// The model width.
    pub fn d_model(&self) -> usize {
        self.w[0].nrows()
    }

    /// The width of one head, `d_k = d_model / h`.
    pub fn d_k(&self) -> usize {
        self.d_model() / self.h
    }

    /// Parameters: four `d_model×d_model` matrices, `4·d_model²` (`W_K`
    /// and `W_V` narrower if grouped), plus a bias for each matrix's
    /// columns if the layer has biases.
    pub fn parameters(&self) -> usize {
        let biases = self
            .biases
            .as_ref()
            .map_or(0, |b| b.iter().map(|b| b.len()).sum());
        self.w.iter().map(|w| w.len()).sum::<usize>() + biases
    }

    // ANCHOR: without_head
    /// The same layer with head `i` (counted from 0) removed: the rows
    /// `i·d_k .. (i+1)·d_k` of `W_O`, which carry head `i`'s output into the
    /// result, set to zero. The other heads, and `b_O`, are unchanged.
    pub fn without_head(&self, i: usize) -> Result<Self, AttnError> {
        if i >= self.h {
            return Err(AttnError::OutOfRange {
                name: "head",
                value: i,
                requirement: "must be less than the number of heads h",
                limit: self.h,
            });
        }
        let d_k = self.d_k();
        let mut ablated = self.clone();
        ablated.w[3]
            .slice_mut(s![i * d_k..(i + 1) * d_k, ..])
            .fill(0.0);
        Ok(ablated)
    }
    // ANCHOR_END: without_head

    fn check_width(&self, name: &'static str, x: &ArrayRef2<f32>) -> Result<(), AttnError> {
        check_model_width(name, x, self.d_model())
    }

    // ANCHOR: forward
    /// Multi-head attention of queries from `x_q` (`n×d_model`) over keys and
    /// values from `x_kv` (`m×d_model`).
    pub fn forward(
        &self,
        x_q: &ArrayRef2<f32>,
        x_kv: &ArrayRef2<f32>,
    ) -> Result<MultiHeadOutput, AttnError> {
        self.attend(x_q, x_kv, None)
    }

    /// Runs the crate's multi-head attention with this layer's weights, and
    /// `keep` (`n×m`, shared by every head) if there is a mask.
    fn attend(
        &self,
        x_q: &ArrayRef2<f32>,
        x_kv: &ArrayRef2<f32>,
        keep: Option<&ArrayRef2<bool>>,
    ) -> Result<MultiHeadOutput, AttnError> {
        self.check_inputs(x_q, x_kv)?;
        let sizes = self.sizes(x_q, x_kv);
        let weights = (&self.w, self.biases.as_ref());
        let mask = |_| keep.map(|keep| keep.to_owned());
        let (output, cache) = mha_forward(x_q, x_kv, weights, sizes, mask)?;
        self.output(output, &cache)
    }
    // ANCHOR_END: forward

    /// Checks that both inputs are `d_model` wide and finite.
    fn check_inputs(&self, x_q: &ArrayRef2<f32>, x_kv: &ArrayRef2<f32>) -> Result<(), AttnError> {
        self.check_width("query input", x_q)?;
        self.check_width("key/value input", x_kv)?;
        check_finite("query input", x_q)?;
        check_finite("key/value input", x_kv)
    }

    /// One sequence of `n` queries over `m` keys, `h` heads.
    fn sizes(&self, x_q: &ArrayRef2<f32>, x_kv: &ArrayRef2<f32>) -> Heads {
        let (tq, tk, heads) = (x_q.nrows(), x_kv.nrows(), self.h);
        Heads {
            groups: self.kv_heads,
            ..Heads::new(tq, tk, heads)
        }
    }

    /// The layer's output with each head's weights stacked, `h×n×m`.
    fn output(
        &self,
        output: Array2<f32>,
        cache: &MhaCache<f32>,
    ) -> Result<MultiHeadOutput, AttnError> {
        let per_head = (cache.heads.iter())
            .map(|head| head.weights().map(|p| p.view()))
            .collect::<Result<Vec<_>, _>>()?;
        let weights = stack(Axis(0), &per_head).expect("h heads of the same n×m");
        Ok(MultiHeadOutput { output, weights })
    }

    // ANCHOR: forward_masked
    /// [`Self::forward`] with a mask: `keep` is `n×m`, shared by every head
    /// (chapter 6), e.g. the causal mask in a decoder's self-attention.
    pub fn forward_masked(
        &self,
        x_q: &ArrayRef2<f32>,
        x_kv: &ArrayRef2<f32>,
        keep: &ArrayRef2<bool>,
    ) -> Result<MultiHeadOutput, AttnError> {
        self.attend(x_q, x_kv, Some(keep))
    }
    // ANCHOR_END: forward_masked

    // ANCHOR: fused
    /// The same layer with one fused projection: `X [W_Q | W_K | W_V]`
    /// (`d_model×3·d_model`) in a single matrix product, then sliced. Self-
    /// attention only, since all three come from the same `X`.
    pub fn forward_fused(&self, x: &ArrayRef2<f32>) -> Result<MultiHeadOutput, AttnError> {
        self.check_inputs(x, x)?;
        let d = self.d_model();
        let [w_q, w_k, w_v, w_o] = &self.w;
        let w_qkv = concatenate![Axis(1), *w_q, *w_k, *w_v]; // d×3d
        let b_qkv = self.biases.as_ref().map(|[b_q, b_k, b_v, _]| {
            concatenate![Axis(0), *b_q, *b_k, *b_v] // [b_Q | b_K | b_V]
        });
        let qkv = affine(
            "the projections X [W_Q | W_K | W_V]",
            x,
            &w_qkv,
            b_qkv.as_ref(),
        )?; // n×3d
        let d_kv = self.w[1].ncols(); // d, or h_kv·d_k if grouped
        let starts = [0, d, d + d_kv, d + 2 * d_kv];
        let [q, k, v] = [0, 1, 2].map(|i| qkv.slice(s![.., starts[i]..starts[i + 1]]).to_owned());
        let b_o = self.biases.as_ref().map(|b| &b[3]);
        let sizes = self.sizes(x, x);
        let (output, cache) = mha_from_projections([q, k, v], (w_o, b_o), sizes, |_| None)?;
        self.output(output, &cache)
    }
    // ANCHOR_END: fused
}

// ANCHOR: flops
/// Floating-point operations of one multi-head forward pass, counting a
/// multiply-add as 2: projections `2·n·d²` (Q), `2·2·m·d²` (K, V), `2·n·d²`
/// (output); per head `2·n·m·d_k` for `QKᵀ` and again for `weights·V`, so
/// `4·n·m·d` over all heads. The softmax's `O(h·n·m)` is left out.
///
/// `h` cancels: `h` heads of width `d/h` cost the same as one of width `d`.
pub fn multihead_flops(n: usize, m: usize, d_model: usize, h: usize) -> Result<f64, AttnError> {
    check_heads(d_model, h)?;
    let d_k = (d_model / h) as f64;
    let (n, m, d_model, h) = (n as f64, m as f64, d_model as f64, h as f64); // no overflow
    let projections = 2.0 * n * d_model * d_model // Q = X_q W_Q
        + 2.0 * 2.0 * m * d_model * d_model // K and V
        + 2.0 * n * d_model * d_model; // output projection
    let attention = h * (2.0 * n * m * d_k + 2.0 * n * m * d_k); // QKᵀ and weights·V per head
    Ok(projections + attention)
}
// ANCHOR_END: flops

/// Mean entropy (nats) of each head's rows of weights: `h` numbers, each
/// between 0 (every query looks at one key) and `ln m` (uniform).
pub fn head_entropies(weights: &ArrayRef3<f32>) -> Result<Vec<f64>, AttnError> {
    let (_, n, m) = weights.dim();
    check_not_empty("weights of each head (n×m)", (n, m))?;
    if let Some(&bad) = weights.iter().find(|w| !(0.0..=1.0).contains(*w)) {
        return Err(AttnError::InvalidArgument {
            name: "attention weight",
            value: f64::from(bad),
            requirement: "must lie in [0, 1]",
        });
    }
    let mean_entropy = |head: ArrayView2<f32>| {
        head.rows().into_iter().map(|r| entropy(&r)).sum::<f64>() / n as f64
    };
    Ok(weights.outer_iter().map(mean_entropy).collect())
}

// ANCHOR: embed
/// Random (seeded) `d_model`-wide embeddings for `words`: one `N(0, 1)`
/// vector per distinct lower-cased word, so "The" and "the" share a row.
/// A stand-in for a learned embedding table, with no position information.
pub fn embed_words(words: &[&str], d_model: usize, seed: u64) -> Array2<f32> {
    use ndarray_rand::rand::SeedableRng;
    let mut vocabulary: Vec<String> = words.iter().map(|w| w.to_lowercase()).collect();
    vocabulary.sort();
    vocabulary.dedup();
    let mut rng = StdRng::seed_from_u64(seed);
    let table = standard_normal(vocabulary.len(), d_model, &mut rng);
    let mut x = Array2::<f32>::zeros((words.len(), d_model));
    for (i, w) in words.iter().enumerate() {
        let id = vocabulary
            .binary_search(&w.to_lowercase())
            .expect("in the vocabulary");
        x.row_mut(i).assign(&table.row(id));
    }
    x
}
// ANCHOR_END: embed

mod fast;
pub use fast::fast_multihead;

#[cfg(test)]
mod tests;
