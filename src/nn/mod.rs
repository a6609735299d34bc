//! The training stack: every layer of the book's Transformers once, as a
//! forward pass that keeps what its backward pass needs and the backward
//! pass, generic over `f32` and `f64` ([`crate::real::Real`]); the loss; the
//! optimiser and its schedule; parameters and checkpoints. Chapter 10's
//! layers run these forward passes, chapter 11 checks the backward passes
//! against finite differences, and every trained model (chapters 12 and 13)
//! is assembled from them.
//!
//! | operation | forward | backward |
//! | --- | --- | --- |
//! | softmax (rows) | `P = softmax(S)` | `dS = P ⊙ (dP − rowsum(dP ⊙ P))` |
//! | attention | `S = QKᵀ/√d_k`, `P = softmax(S)`, `O = PV` | `dV = PᵀdO`, `dP = dO Vᵀ`, `dQ = dS K/√d_k`, `dK = dSᵀQ/√d_k` |
//! | multi-head attention | `Q = XW_Q`, … per head, `concat(O_i) W_O` | each head's, then back through the projections |
//! | linear | `Y = XW + b` | `dX = dY Wᵀ`, `dW = XᵀdY`, `db = Σ_rows dY` |
//! | LayerNorm | `Y = x̂ γ + β`, `x̂ = (X − μ)/σ` | `dX = (dx̂ − mean(dx̂) − x̂ · mean(dx̂ ⊙ x̂)) / σ` |
//! | FFN | `act(XW₁ + b₁)W₂ + b₂` | two linear layers and `act′` |
//! | additive attention | `S_ij = uᵀ tanh(q_i A_q + k_j A_k)`, softmax, `PV` | as attention to `dS`, then `dH_ij = dS_ij u` through `tanh` |
//! | GRU (Cho et al., 2014) | `z, r = σ(…)`, `ĥ = tanh(xW_h + (r ⊙ h)U_h)`, `h = z ⊙ h + (1 − z) ⊙ ĥ` | back through time, step by step |
//! | embeddings | `E[token] + P[position]` | each row's gradient to its token and position |
//! | cross-entropy | `L = −mean log softmax(Z)[target]` | `dZ = (softmax(Z) − onehot) / count` |

pub(crate) mod additive;
pub(crate) mod attention;
mod block;
pub(crate) mod gru;
pub(crate) mod latent;
pub(crate) mod layers;
pub(crate) mod loss;
pub(crate) mod multihead;
mod optim;
mod params;
mod safetensors_file;
pub(crate) mod sublayer;

pub use attention::{attention_backward, attention_forward, softmax_backward, AttentionCache};
pub(crate) use block::{
    flat, flat_mut, kept_weights, remove_heads, BlockAttention, BlockCache, CrossAttention, Memory,
    PreNormBlock,
};
pub(crate) use layers::{
    embedding_backward, embedding_forward, ffn_backward, ffn_forward, FfnWeights,
};
pub use layers::{gelu, gelu_erf, Activation};
pub use layers::{layer_norm_backward, layer_norm_forward, LayerNormCache, NormWeights};
pub(crate) use loss::log_softmax;
pub use loss::{cross_entropy, smoothed_cross_entropy};
pub(crate) use multihead::{head_columns, head_slices, mha_from_projections};
pub use multihead::{
    mha_backward, mha_forward, AttentionBiases, AttentionWeights, HeadCache, Heads, MhaCache,
    MhaGradients,
};
pub(crate) use optim::{check_learning_rate, check_warmup};
pub use optim::{clip_gradient_norm, warmup_cosine, warmup_cosine_to, Adam};
pub use params::Parameters;
pub(crate) use params::{
    check_d_logits, check_finite_parameters, check_logits, check_same_model, fingerprint, invalid,
    matrices_of, read_checkpoint, read_header, write_checkpoint, zeroed,
};
#[cfg(test)]
pub(crate) use safetensors_file::edited_file;
pub(crate) use safetensors_file::{check_room, metadata, read_into, size, to_safetensors};
pub(crate) use sublayer::ffn_sublayer;
