//! Multi-head attention,
//! `MultiHead(X_q, X_kv) = Concat(head_1, …, head_h) W_O` with
//! `head_i = Attention(X_q W_Q^i, X_kv W_K^i, X_kv W_V^i)`.
//!
//! The `h` per-head projections `W_Q^i` (`d_model×d_k`, `d_k = d_model/h`) are
//! stored side by side as one `d_model×d_model` matrix `W_Q`, and likewise
//! `W_K`, `W_V`; so one matrix product projects for every head at once, and
//! head `i` is then columns `i·d_k .. (i+1)·d_k`:
//!
//! | step | shape |
//! | --- | --- |
//! | `Q = X_q W_Q` | `n×d_model` |
//! | split heads: reshape to `n×h×d_k`, permute | `h×n×d_k` |
//! | attend per head (scale `1/√d_k`, **not** `1/√d_model`) | `h×n×d_k`, weights `h×n×m` |
//! | merge heads: permute to `n×h×d_k`, reshape | `n×d_model` |
//! | output projection `· W_O` | `n×d_model` |
//!
//! [`multi_head_attention`] is chapter 5's form, one head after another;
//! the layer [`MultiHeadAttention`] runs the training stack's, which does
//! the same on views instead of copies and on every core (tested equal).

use ndarray::{concatenate, s, stack, Array2, Array3, ArrayRef2, ArrayRef3, Axis};
use ndarray_rand::rand::rngs::StdRng;

use crate::attention::scaled_dot_product_attention;
use crate::check::{check_finite, check_model_width};
use crate::error::AttnError;
use crate::linalg::linear;
use crate::nn::{
    mha_forward, mha_from_projections, AttentionBiases, AttentionWeights, Heads, MhaCache,
};
use crate::projection::init_weight;

mod fast;
mod grouped;
pub use fast::fast_multihead;

// ANCHOR: struct
/// A multi-head attention layer with `h` heads of width `d_k = d_model / h`.
/// The fields are private, so that `h` always divides `d_model` and every
/// matrix has its shape: [`MultiHeadAttention::new`] and
/// [`MultiHeadAttention::from_weights`] check it, the accessors read them.
#[derive(Debug, Clone, PartialEq)]
pub struct MultiHeadAttention {
    h: usize,                 // the number of heads
    w: AttentionWeights<f32>, // W_Q, W_K, W_V (the heads side by side), W_O: d_model×d_model each
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
    contiguous.to_shape((n, h * d_k)).expect("n·h·d_k elements").to_owned()
}
// ANCHOR_END: split_merge

// ANCHOR: multi_head
/// `Concat(head_1, …, head_h) W_O`, each head attending with its own `d_k`
/// columns of `Q = X_q W_Q`, `K = X_kv W_K`, `V = X_kv W_V` and its own
/// scale `1/√d_k`: chapter 5's form, one head after another.
pub fn multi_head_attention(
    layer: &MultiHeadAttention,
    x_q: &ArrayRef2<f32>,
    x_kv: &ArrayRef2<f32>,
) -> Result<MultiHeadOutput, AttnError> {
    layer.check_inputs(x_q, x_kv)?;
    let (w, h) = (&layer.w, layer.h);
    let q = split_heads(&w.queries(x_q)?, h)?; // h×n×d_k
    let k = split_heads(&w.keys(x_kv)?, h)?; // h×m×d_k
    let v = split_heads(&w.values(x_kv)?, h)?; // h×m×d_k
    let mut heads = Vec::with_capacity(h);
    for i in 0..h {
        let head = |x: &Array3<f32>| x.index_axis(Axis(0), i).to_owned();
        heads.push(scaled_dot_product_attention(&head(&q), &head(&k), &head(&v))?);
    }
    let outputs: Vec<_> = heads.iter().map(|a| a.output.view()).collect();
    let concat = merge_heads(&stack(Axis(0), &outputs).expect("h heads of n×d_k")); // n×d_model
    let output = w.output(&concat)?; // n×d_model
    let weights: Vec<_> = heads.iter().map(|a| a.weights.view()).collect();
    let weights = stack(Axis(0), &weights).expect("h heads of n×m"); // h×n×m
    Ok(MultiHeadOutput { output, weights })
}
// ANCHOR_END: multi_head

/// Checks that `h` heads split `d_model` evenly.
pub(crate) fn check_heads(d_model: usize, h: usize) -> Result<(), AttnError> {
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

impl MultiHeadAttention {
    // ANCHOR: new
    /// A layer for `d_model`-wide tokens with `h` heads, weights drawn as in
    /// chapter 4 (`N(0, 1/d_model)`). `d_model` must be a multiple of `h`.
    pub fn new(d_model: usize, h: usize, rng: &mut StdRng) -> Result<Self, AttnError> {
        check_heads(d_model, h)?;
        let mut w = || init_weight(d_model, d_model, rng);
        let w = AttentionWeights::new(w()?, w()?, w()?, w()?);
        Ok(MultiHeadAttention { h, w })
    }
    // ANCHOR_END: new

    /// A layer from given weights, checked: `W_Q` and `W_O` `d_model×d_model`,
    /// `W_K` and `W_V` `d_model×d_model` or, for a grouped layer (chapter
    /// 16), `d_model × h_kv·d_k` with `h_kv` dividing `h`; any biases as
    /// long as their matrices are wide; every number finite.
    pub fn from_weights(w: AttentionWeights<f32>, h: usize) -> Result<Self, AttnError> {
        let d_model = w.w_q.nrows();
        check_heads(d_model, h)?;
        let kv_heads = w.w_k.ncols() / (d_model / h);
        grouped::check_groups(h, kv_heads)?;
        let d_kv = kv_heads * (d_model / h);
        let shapes = [(d_model, d_model), (d_model, d_kv), (d_model, d_kv), (d_model, d_model)];
        let names = ["W_Q", "W_K", "W_V", "W_O"];
        for ((name, m), shape) in names.into_iter().zip(w.matrices()).zip(shapes) {
            if m.dim() != shape {
                return Err(AttnError::ShapesDiffer {
                    what: "a layer's weight and its shape (W_Q, W_O: d_model×d_model; \
                           W_K, W_V: d_model × h_kv·d_k)",
                    left: shape,
                    right: m.dim(),
                });
            }
            check_finite(name, m)?;
        }
        let biases = w.biases.clone();
        let layer = MultiHeadAttention { h, w: AttentionWeights { biases: None, ..w } };
        match biases {
            Some(b) => layer.with_biases(b),
            None => Ok(layer),
        }
    }

    /// The same layer with a bias added after each projection, each as long
    /// as its matrix is wide and finite: `Q = X_q W_Q + b_Q`, and so on, as
    /// in PyTorch's `nn.MultiheadAttention` and BERT (chapter 15).
    pub fn with_biases(self, biases: AttentionBiases<f32>) -> Result<Self, AttnError> {
        let pairs = [
            ("b_Q", "W_Q's columns and b_Q"),
            ("b_K", "W_K's columns and b_K"),
            ("b_V", "W_V's columns and b_V"),
            ("b_O", "W_O's columns and b_O"),
        ];
        let vectors = biases.vectors();
        for (((name, what), b), w) in pairs.into_iter().zip(vectors).zip(self.w.matrices()) {
            if b.len() != w.ncols() {
                return Err(AttnError::ShapesDiffer {
                    what,
                    left: (1, w.ncols()),
                    right: (1, b.len()),
                });
            }
            check_finite(name, &b.view().insert_axis(Axis(0)))?;
        }
        let w = AttentionWeights { biases: Some(biases), ..self.w };
        Ok(MultiHeadAttention { w, ..self })
    }

    /// The number of heads `h`.
    pub fn h(&self) -> usize {
        self.h
    }

    /// The weights: `W_Q`, `W_K`, `W_V`, `W_O` and the biases, if any; head
    /// `i` of `W_Q` is columns `i·d_k .. (i + 1)·d_k`.
    pub fn weights(&self) -> &AttentionWeights<f32> {
        &self.w
    }

    /// The model width.
    pub fn d_model(&self) -> usize {
        self.w.w_q.nrows()
    }

    /// The width of one head, `d_k = d_model / h`.
    pub fn d_k(&self) -> usize {
        self.d_model() / self.h
    }

    /// Parameters: four `d_model×d_model` matrices, `4·d_model²` (`W_K`
    /// and `W_V` narrower if grouped), plus a bias for each matrix's
    /// columns if the layer has biases.
    pub fn parameters(&self) -> usize {
        let biases =
            (self.w.biases.as_ref()).map_or(0, |b| b.vectors().iter().map(|b| b.len()).sum());
        self.w.matrices().iter().map(|w| w.len()).sum::<usize>() + biases
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
        ablated.w.w_o.slice_mut(s![i * d_k..(i + 1) * d_k, ..]).fill(0.0);
        Ok(ablated)
    }
    // ANCHOR_END: without_head

    /// Checks that both inputs are `d_model` wide and finite.
    fn check_inputs(&self, x_q: &ArrayRef2<f32>, x_kv: &ArrayRef2<f32>) -> Result<(), AttnError> {
        check_model_width("query input", x_q, self.d_model())?;
        check_model_width("key/value input", x_kv, self.d_model())
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
    // ANCHOR_END: forward

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

    /// Runs the training stack's multi-head attention with this layer's
    /// weights, and `keep` (`n×m`, shared by every head) if there is a mask.
    fn attend(
        &self,
        x_q: &ArrayRef2<f32>,
        x_kv: &ArrayRef2<f32>,
        keep: Option<&ArrayRef2<bool>>,
    ) -> Result<MultiHeadOutput, AttnError> {
        self.check_inputs(x_q, x_kv)?;
        let mask = |_| keep.map(|keep| keep.to_owned());
        let (output, cache) = mha_forward(x_q, x_kv, &self.w, self.heads(x_q, x_kv), mask)?;
        self.output(output, &cache)
    }

    /// One sequence of `n` queries over `m` keys, `h` heads.
    fn heads(&self, x_q: &ArrayRef2<f32>, x_kv: &ArrayRef2<f32>) -> Heads {
        Heads::new(x_q.nrows(), x_kv.nrows(), self.h).with_kv_heads(self.kv_heads())
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

    // ANCHOR: fused
    /// The same layer with one fused projection: `X [W_Q | W_K | W_V]`
    /// (`d_model×3·d_model`) in a single matrix product, then sliced. Self-
    /// attention only, since all three come from the same `X`.
    pub fn forward_fused(&self, x: &ArrayRef2<f32>) -> Result<MultiHeadOutput, AttnError> {
        self.check_inputs(x, x)?;
        let w = &self.w;
        let w_qkv = concatenate![Axis(1), w.w_q, w.w_k, w.w_v]; // d×3d
        let b = w.biases.as_ref();
        let b_qkv = b.map(|b| concatenate![Axis(0), b.b_q, b.b_k, b.b_v]); // [b_Q | b_K | b_V]
        let qkv = linear("the projections X [W_Q | W_K | W_V]", x, &w_qkv, b_qkv.as_ref())?;
        let (d_q, d_kv) = (w.w_q.ncols(), w.w_k.ncols()); // the widths of Q and of K, V
        let starts = [0, d_q, d_q + d_kv, d_q + 2 * d_kv];
        let [q, k, v] = [0, 1, 2].map(|i| qkv.slice(s![.., starts[i]..starts[i + 1]]).to_owned());
        self.attend_projections([q, k, v])
    }
    // ANCHOR_END: fused

    /// The rest of [`Self::forward`] (unmasked) from the projections
    /// `[Q, K, V]` of one sequence: every head attends with its columns,
    /// then `W_O` mixes the concatenated heads.
    fn attend_projections(
        &self,
        [q, k, v]: [Array2<f32>; 3],
    ) -> Result<MultiHeadOutput, AttnError> {
        let heads = Heads::new(q.nrows(), k.nrows(), self.h).with_kv_heads(self.kv_heads());
        let b_o = self.w.biases.as_ref().map(|b| &b.b_o);
        let no_mask = |_| None;
        let (output, cache) = mha_from_projections([q, k, v], (&self.w.w_o, b_o), heads, no_mask)?;
        self.output(output, &cache)
    }
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

#[cfg(test)]
mod tests;
