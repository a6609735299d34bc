//! # attn — the library behind *Attention, Tested*
//!
//! Every listing in the book is code from this crate, and every number the
//! book quotes is printed by a chapter example and asserted by a test. The
//! modules follow the order in which the book teaches them:
//!
//! | module | chapter |
//! | --- | --- |
//! | [`softmax`] | 1. Scaled dot-product attention (a softmax that cannot overflow) |
//! | [`attention`] | 1. Scaled dot-product attention |
//! | [`scaling`] | 2. Why scale by √d_k (measured) |
//! | [`projection`] | 3. Self- and cross-attention (learned projections) |
//! | [`multihead`] | 4. Multi-head attention |
//! | [`masking`] | 5. Masking (causal, padding, KV cache) |
//! | [`position`] | 6. Positional encoding (sinusoidal, RoPE, ALiBi) |
//! | [`complexity`] | 7. Complexity: the cost model |
//! | [`tiled`] | 7. Exact attention in linear memory (online softmax) |
//! | [`approximate`] | 7. Local and linear attention |
//! | [`block`] | 8. The Transformer block (LayerNorm, FFN, residuals, encoder and decoder) |
//! | [`grad`] | 9. Gradients: backward passes, checked by finite differences |
//! | [`model`] | 10. A tiny Transformer trained to reverse digits |
//! | [`exercises`] | solutions to the end-of-chapter exercises |
//! | [`experiments`] | the chapters' report helpers (what the examples print; not a reader's API) |
//! | [`show`] | formatting of the numbers the examples print |
//!
//! Shapes follow the book's notation: `n` queries, `m` keys and values,
//! width `d_k` for queries and keys, `d_v` for values. Arithmetic is `f32`,
//! except in [`grad`] and [`model`] (chapters 10 and 11), which train in `f64`.
//!
//! Every public function checks its inputs and returns an [`AttnError`] that
//! names the offending shapes, rather than panicking inside `ndarray`.
#![deny(missing_docs)]

// With the `blas` feature, link the system's OpenBLAS (the appendix "Making it fast").
#[cfg(feature = "blas")]
extern crate blas_src;

pub mod approximate;
pub mod attention;
pub mod block;
pub mod complexity;
pub mod error;
pub mod exercises;
pub mod experiments;
pub mod grad;
pub mod masking;
pub mod model;
pub mod multihead;
pub mod position;
pub mod projection;
pub mod scaling;
pub mod show;
pub mod softmax;
pub mod tiled;

pub use attention::{scaled_dot_product_attention, Attention};
pub use error::AttnError;

/// The chapters of the book, doctested: every `rust` fence in them is compiled
/// and run by `cargo test`, exactly as `mdbook test` does.
#[cfg(doctest)]
pub mod chapters {
    #[doc = include_str!("../book/introduction.md")]
    pub struct Introduction;
    #[doc = include_str!("../book/ch01-scaled-dot-product-attention.md")]
    pub struct Ch01ScaledDotProductAttention;
    #[doc = include_str!("../book/ch02-why-scale.md")]
    pub struct Ch02WhyScale;
    #[doc = include_str!("../book/ch03-self-and-cross-attention.md")]
    pub struct Ch03SelfAndCrossAttention;
    #[doc = include_str!("../book/ch04-multi-head-attention.md")]
    pub struct Ch04MultiHeadAttention;
    #[doc = include_str!("../book/ch05-masking.md")]
    pub struct Ch05Masking;
    #[doc = include_str!("../book/ch06-positional-encoding.md")]
    pub struct Ch06PositionalEncoding;
    #[doc = include_str!("../book/ch07-cost-of-attention.md")]
    pub struct Ch07CostOfAttention;
    #[doc = include_str!("../book/ch08-efficient-attention.md")]
    pub struct Ch08EfficientAttention;
    #[doc = include_str!("../book/ch09-transformer-block.md")]
    pub struct Ch09TransformerBlock;
    #[doc = include_str!("../book/ch10-gradients.md")]
    pub struct Ch10Gradients;
    #[doc = include_str!("../book/ch11-training.md")]
    pub struct Ch11Training;
    #[doc = include_str!("../book/notation.md")]
    pub struct Notation;
    #[doc = include_str!("../book/making-it-fast.md")]
    pub struct MakingItFast;
}
