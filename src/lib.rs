//! # attn — the library behind *Attention, Tested*
//!
//! Every listing in the book is code from this crate, and every number the
//! book quotes is printed by a chapter example and asserted by a test. The
//! modules follow the order in which the book teaches them:
//!
//! | module | chapter |
//! | --- | --- |
//! | [`real`] | the two float types every layer is generic over (`f32`, `f64`) |
//! | [`linalg`] | the matrix product and the linear layer every other module uses |
//! | [`origins`] | 1. Where attention came from (kernel regression, additive scores) |
//! | [`softmax`] | 2. Scaled dot-product attention (a softmax that cannot overflow) |
//! | [`attention`] | 2. Scaled dot-product attention |
//! | [`scaling`] | 3. Why scale by √d_k (measured) |
//! | [`projection`] | 4. Self- and cross-attention (learned projections) |
//! | [`multihead`] | 5. Multi-head attention |
//! | [`masking`] | 6. Masking (causal, padding, band and sink masks; the one attention function every layer calls) |
//! | [`cache`] | 6. The KV cache, and what every cache offers the attention that reads it |
//! | [`position`] | 7. Positional encoding (sinusoidal, RoPE, ALiBi) |
//! | [`complexity`] | 8. The cost of attention |
//! | [`tiled`] | 9. Exact attention in linear memory (online softmax) |
//! | [`approximate`] | 9. Local and linear attention |
//! | [`block`] | 10. The Transformer block (LayerNorm, FFN, residuals, encoder and decoder) |
//! | [`nn`] | 10–12. The training stack: each layer's forward and backward pass once, generic over `f32`/`f64`; the loss, Adam, checkpoints |
//! | [`grad`] | 11. Gradients: the backward passes checked by finite differences |
//! | [`decoder`] | 12 and 16. The decoder-only Transformer, one struct for both chapters' models |
//! | [`model`] | 12. A tiny Transformer trained to reverse digits |
//! | [`translation`] | 13. A toy translation task (number words to digits) and corpus BLEU, for an encoder–decoder that learns it |
//! | [`pretrained`] | 15. A pretrained encoder (all-MiniLM-L6-v2) loaded into the crate's layers |
//! | [`lm`] | 16. A language model that writes (Shakespeare, one character a token) |
//! | [`kv_bytes`] | 17. What a KV cache costs, for every way of sharing or compressing it |
//! | [`latent`] | 17. Multi-head latent attention |
//! | [`sliding`] | 17. Forgetting keys: sliding windows and attention sinks |
//! | [`rope_scaling`] | 18. Longer than trained: RoPE's frequencies past the trained length (interpolation, NTK-aware, YaRN, Llama 3) |
//! | [`paging`] | 19. Serving attention: a KV cache in blocks, shared prefixes |
//! | [`vision`] | 20. Attention on images: the digits a Vision Transformer reads |
//! | [`fast`] | Appendix: making it fast (exact attention on several threads, FlashAttention-2's loop order) |
//! | `gpu` (with `--features gpu`) | 21. Attention on a GPU: attention and FlashAttention-2's passes in WGSL, through `wgpu` |
//! | [`experiments`] | the appendix's timers and roofline measures: measurements, not layers |
//! | [`exercises`] | solutions to the end-of-chapter exercises |
//!
//! The modules depend one way: `real` on nothing of the crate, `linalg`
//! only on it, the error type and the checks; the fast kernels sit above
//! what they speed up, and the experiments above everything they measure.
//! A test (`tests/layers.rs`) fails on any cycle.
//!
//! Shapes follow the book's notation: `n` queries, `m` keys and values,
//! width `d_k` for queries and keys, `d_v` for values. Arithmetic is `f32`,
//! except where chapters 11 to 13 check gradients and train in `f64`; the
//! layers in [`nn`] are written once for both ([`real::Real`]).
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
pub mod cache;
pub mod check;
pub mod complexity;
pub mod decoder;
pub mod error;
pub mod exercises;
pub mod experiments;
pub mod fast;
#[cfg(feature = "gpu")]
pub mod gpu;
pub mod grad;
pub mod kv_bytes;
pub mod latent;
pub mod linalg;
pub mod lm;
pub mod masking;
pub mod model;
pub mod multihead;
pub mod nn;
pub mod origins;
pub mod paging;
pub mod position;
#[cfg(feature = "pretrained")]
pub mod pretrained;
pub mod projection;
pub mod real;
pub mod rope_scaling;
pub mod scaling;
pub mod sliding;
pub mod softmax;
pub mod tiled;
pub mod translation;
pub mod vision;

pub use attention::{scaled_dot_product_attention, Attention};
pub use check::{MAX_ENTRIES, MAX_PARAMETERS};
pub use error::AttnError;

/// The chapters of the book, doctested: every `rust` fence in them is compiled
/// and run by `cargo test`, exactly as `mdbook test` does.
#[cfg(doctest)]
pub mod chapters {
    #[doc = include_str!("../book/introduction.md")]
    pub struct Introduction;
    #[doc = include_str!("../book/ch01-where-attention-came-from.md")]
    pub struct Ch01WhereAttentionCameFrom;
    #[doc = include_str!("../book/ch02-scaled-dot-product-attention.md")]
    pub struct Ch02ScaledDotProductAttention;
    #[doc = include_str!("../book/ch03-why-scale.md")]
    pub struct Ch03WhyScale;
    #[doc = include_str!("../book/ch04-self-and-cross-attention.md")]
    pub struct Ch04SelfAndCrossAttention;
    #[doc = include_str!("../book/ch05-multi-head-attention.md")]
    pub struct Ch05MultiHeadAttention;
    #[doc = include_str!("../book/ch06-masking.md")]
    pub struct Ch06Masking;
    #[doc = include_str!("../book/ch07-positional-encoding.md")]
    pub struct Ch07PositionalEncoding;
    #[doc = include_str!("../book/ch08-cost-of-attention.md")]
    pub struct Ch08CostOfAttention;
    #[doc = include_str!("../book/ch09-efficient-attention.md")]
    pub struct Ch09EfficientAttention;
    #[doc = include_str!("../book/ch10-transformer-block.md")]
    pub struct Ch10TransformerBlock;
    #[doc = include_str!("../book/ch11-gradients.md")]
    pub struct Ch11Gradients;
    #[doc = include_str!("../book/ch12-training.md")]
    pub struct Ch12Training;
    #[doc = include_str!("../book/ch13-attention-learns-to-align.md")]
    pub struct Ch13AttentionLearnsToAlign;
    #[doc = include_str!("../book/ch14-the-bottleneck-measured.md")]
    pub struct Ch14TheBottleneckMeasured;
    #[doc = include_str!("../book/ch15-attention-in-a-trained-model.md")]
    pub struct Ch15AttentionInATrainedModel;
    #[doc = include_str!("../book/ch16-a-language-model-that-writes.md")]
    pub struct Ch16ALanguageModelThatWrites;
    #[doc = include_str!("../book/ch17-sharing-and-forgetting-keys.md")]
    pub struct Ch17SharingAndForgettingKeys;
    #[doc = include_str!("../book/ch18-longer-than-trained.md")]
    pub struct Ch18LongerThanTrained;
    #[doc = include_str!("../book/ch19-serving-attention.md")]
    pub struct Ch19ServingAttention;
    #[doc = include_str!("../book/ch20-attention-on-images.md")]
    pub struct Ch20AttentionOnImages;
    #[doc = include_str!("../book/notation.md")]
    pub struct Notation;
    #[doc = include_str!("../book/making-it-fast.md")]
    pub struct MakingItFast;
}
