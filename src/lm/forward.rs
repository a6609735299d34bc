//! The language model's forward pass over a batch of sequences, its loss,
//! and its backward pass.

use ndarray::{Array2, ArrayRef2};

use super::model::{LanguageModel, Positions};
use crate::check::check_indices;
use crate::error::AttnError;
use crate::linalg::matmul;
use crate::masking::causal_mask;
use crate::nn::{
    check_d_logits, check_finite_parameters, check_logits, check_same_model, cross_entropy,
    embedding_backward, embedding_forward, fingerprint, layer_norm_backward, layer_norm_forward,
    Activation, BlockCache, Heads, LayerNormCache,
};
use crate::real::Real;

/// LayerNorm's `ε`, as PyTorch's default.
pub(super) const EPS: f64 = 1e-5;
/// The FFN's activation: the exact GELU, `x·Φ(x)`.
pub(super) const ACTIVATION: Activation = Activation::GeluErf;

/// How a forward pass computes each head's attention.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttentionPath {
    /// Chapter 2's attention, each head keeping its weights, which
    /// [`LmForward::weights`] reads and the backward pass uses.
    Weights,
    /// The appendix's fused kernel where it applies (a model in `f32`, the
    /// causal mask): each head keeps one log-sum-exp a query instead of its
    /// weights, and the backward pass computes them again, tile by tile.
    Fused,
}

/// The forward pass's result: the logits, and what the backward pass needs.
pub struct LmForward<F> {
    logits: Array2<F>, // B·T × V
    fingerprint: u64,  // of the model that ran it: backward checks it
    tokens: Vec<Vec<usize>>,
    blocks: Vec<BlockCache<F>>,
    ln_f: LayerNormCache<F>,
    z: Array2<F>, // the final LayerNorm's output, B·T × d
}

// ANCHOR: forward
impl<F: Real> LanguageModel<F> {
    /// The forward pass over `B` sequences of equal length `T ≤ context`:
    /// row `b·T + i` of the logits scores the token after position `i` of
    /// sequence `b`, having seen only positions `0..=i` (the causal mask).
    pub fn forward(&self, batch: &[Vec<usize>]) -> Result<LmForward<F>, AttnError> {
        self.forward_on(batch, AttentionPath::Weights)
    }

    /// [`Self::forward`], each head's attention computed by `path`.
    pub fn forward_on(
        &self,
        batch: &[Vec<usize>],
        path: AttentionPath,
    ) -> Result<LmForward<F>, AttnError> {
        self.check_batch(batch, self.config.context)?;
        let t = batch[0].len();
        self.forward_masked(batch, causal_mask(t, t), path)
    }

    /// The forward pass with the mask `keep` (`T×T`) for every sequence.
    fn forward_masked(
        &self,
        batch: &[Vec<usize>],
        keep: Array2<bool>,
        path: AttentionPath,
    ) -> Result<LmForward<F>, AttnError> {
        check_finite_parameters(self)?;
        let heads = Heads {
            fused: path == AttentionPath::Fused,
            ..self.heads(batch[0].len())
        };
        let mask = |_: usize| keep.clone();
        let eps = F::of(EPS);
        // Token plus position embeddings (or, with rotary positions, the
        // token embeddings alone): B·T × d.
        let mut x = match self.config.positions {
            Positions::Learned => embedding_forward(batch, &self.tokens, &self.positions),
            Positions::Rotary => token_embeddings(batch, &self.tokens),
        };
        let mut blocks = Vec::with_capacity(self.blocks.len());
        for block in &self.blocks {
            let (out, cache) = block.forward(&x, heads, mask, ACTIVATION, eps)?;
            x = out;
            blocks.push(cache);
        }
        let (z, ln_f) = layer_norm_forward(&x, &self.ln_f[0], &self.ln_f[1], eps);
        let logits = matmul(&z, &self.tokens.t()); // the head is Eᵀ: B·T × V
        check_logits(&logits)?;
        Ok(LmForward {
            logits,
            fingerprint: fingerprint(self, self.config),
            tokens: batch.to_vec(),
            blocks,
            ln_f,
            z,
        })
    }
    // ANCHOR_END: forward

    // ANCHOR: forward_window
    /// Sliding-window attention, for a model with rotary positions: the
    /// forward pass over sequences of any length in which every position
    /// sees only itself and the `window − 1` before it, in every block.
    /// What the sliding KV cache computes (`step`).
    pub fn forward_window(
        &self,
        batch: &[Vec<usize>],
        window: usize,
    ) -> Result<LmForward<F>, AttnError> {
        if self.config.positions != Positions::Rotary || window == 0 {
            return Err(AttnError::InvalidArgument {
                name: "window",
                value: window as f64,
                requirement: "must be at least 1, in a model with rotary positions",
            });
        }
        self.check_batch(batch, usize::MAX)?;
        let t = batch[0].len();
        let band = Array2::from_shape_fn((t, t), |(i, j)| j <= i && i - j < window);
        self.forward_masked(batch, band, AttentionPath::Weights)
    }
    // ANCHOR_END: forward_window

    /// The backward pass: the gradient of the loss with respect to every
    /// parameter, given `dL/dlogits`, as a model of the same shape.
    pub fn backward(
        &self,
        fwd: &LmForward<F>,
        d_logits: &ArrayRef2<F>,
    ) -> Result<LanguageModel<F>, AttnError> {
        check_d_logits(d_logits, fwd.logits.dim())?;
        check_same_model(fwd.fingerprint, self, self.config)?;
        let heads = self.heads(fwd.tokens[0].len());
        let mut g = crate::nn::zeroed(self);
        // logits = z Eᵀ: dz = dlogits E, and E's gradient as the head.
        let dz = matmul(d_logits, &self.tokens);
        g.tokens = matmul(&d_logits.t(), &fwd.z);
        let (mut dx, d_gamma, _) = layer_norm_backward(&fwd.ln_f, &self.ln_f[0], &dz);
        g.ln_f[0] = d_gamma; // β is held at 0: its gradient is dropped
        for (l, (block, cache)) in self.blocks.iter().zip(&fwd.blocks).enumerate().rev() {
            (dx, g.blocks[l]) = block.backward(cache, heads, ACTIVATION, &dx);
        }
        for b in &mut g.blocks {
            // No biases: their gradients are dropped.
            b.ln1[1].fill(F::zero());
            b.ln2[1].fill(F::zero());
            b.ffn.b1.fill(F::zero());
            b.ffn.b2.fill(F::zero());
        }
        // E's gradient as the embedding is added to its gradient as the head.
        match self.config.positions {
            Positions::Learned => {
                embedding_backward(&dx, &fwd.tokens, &mut g.tokens, &mut g.positions)
            }
            Positions::Rotary => {
                for (row, &token) in dx.rows().into_iter().zip(fwd.tokens.iter().flatten()) {
                    g.tokens.row_mut(token).scaled_add(F::one(), &row);
                }
            }
        }
        Ok(g)
    }

    /// The sizes of every block's attention over sequences of `t` tokens.
    fn heads(&self, t: usize) -> Heads {
        Heads {
            groups: self.config.kv_heads,
            rotary: self.config.positions == Positions::Rotary,
            ..Heads::new(t, t, self.config.heads)
        }
    }

    // ANCHOR: loss
    /// The mean cross-entropy of predicting each next token, and the
    /// gradients: `inputs` are `B` windows of the text, `targets` the same
    /// windows one token later.
    pub fn loss_and_gradients(
        &self,
        inputs: &[Vec<usize>],
        targets: &[Vec<usize>],
    ) -> Result<(f64, LanguageModel<F>), AttnError> {
        self.loss_and_gradients_on(inputs, targets, AttentionPath::Weights)
    }
    // ANCHOR_END: loss

    /// [`Self::loss_and_gradients`], each head's attention computed by `path`.
    pub fn loss_and_gradients_on(
        &self,
        inputs: &[Vec<usize>],
        targets: &[Vec<usize>],
        path: AttentionPath,
    ) -> Result<(f64, LanguageModel<F>), AttnError> {
        let fwd = self.forward_on(inputs, path)?;
        let (loss, d_logits) = cross_entropy(&fwd.logits, &self.targets(&fwd, targets)?)?;
        Ok((loss.wide(), self.backward(&fwd, &d_logits)?))
    }

    /// The loss alone, as [`Self::loss_and_gradients`] computes it.
    pub fn loss(&self, inputs: &[Vec<usize>], targets: &[Vec<usize>]) -> Result<f64, AttnError> {
        let fwd = self.forward(inputs)?;
        Ok(cross_entropy(&fwd.logits, &self.targets(&fwd, targets)?)?
            .0
            .wide())
    }

    /// The targets as one per row of the logits, checked: the inputs'
    /// shape, every one a token.
    fn targets(
        &self,
        fwd: &LmForward<F>,
        targets: &[Vec<usize>],
    ) -> Result<Vec<Option<usize>>, AttnError> {
        let shape = |s: &[Vec<usize>]| (s.len(), s.first().map_or(0, Vec::len));
        let same_length = targets.iter().all(|s| s.len() == fwd.tokens[0].len());
        if shape(targets) != shape(&fwd.tokens) || !same_length {
            return Err(AttnError::ShapesDiffer {
                what: "the targets and the inputs (sequences × tokens)",
                left: shape(targets),
                right: shape(&fwd.tokens),
            });
        }
        self.check_tokens(targets)?;
        Ok(targets.iter().flatten().map(|&t| Some(t)).collect())
    }

    /// Checks that `batch` holds at least one sequence, all of the same
    /// length, from 1 to `longest`, of tokens of the vocabulary.
    fn check_batch(&self, batch: &[Vec<usize>], longest: usize) -> Result<(), AttnError> {
        let Some(first) = batch.first() else {
            return Err(AttnError::InvalidArgument {
                name: "batch",
                value: 0.0,
                requirement: "must hold at least one sequence",
            });
        };
        let t = first.len();
        if t == 0 || batch.iter().any(|s| s.len() != t) {
            return Err(AttnError::InvalidArgument {
                name: "sequence length",
                value: t as f64,
                requirement: "must be at least 1 and the same for every sequence",
            });
        }
        if t > longest {
            return Err(AttnError::TooLong {
                what: "the sequences",
                len: t,
                max: longest,
            });
        }
        self.check_tokens(batch)
    }

    fn check_tokens(&self, batch: &[Vec<usize>]) -> Result<(), AttnError> {
        match batch.iter().flatten().find(|&&t| t >= self.config.vocab) {
            Some(&token) => Err(AttnError::OutOfRange {
                name: "token",
                value: token,
                requirement: "must be less than the vocabulary's size",
                limit: self.config.vocab,
            }),
            None => Ok(()),
        }
    }
}

/// Row `b·T + i` is the embedding of token `i` of sequence `b`.
fn token_embeddings<F: Real>(batch: &[Vec<usize>], tokens: &ArrayRef2<F>) -> Array2<F> {
    let rows: Vec<usize> = batch.iter().flatten().copied().collect();
    tokens.select(ndarray::Axis(0), &rows)
}

impl<F: Real> LmForward<F> {
    /// The logits, `B·T × V`.
    pub fn logits(&self) -> &Array2<F> {
        &self.logits
    }

    /// The `T×T` attention weights of `block`, `sequence` and `head`.
    pub fn weights(
        &self,
        block: usize,
        sequence: usize,
        head: usize,
    ) -> Result<&Array2<F>, AttnError> {
        let heads = self
            .blocks
            .first()
            .map_or(0, |b| b.attention.attention.heads.len())
            / self.tokens.len();
        let counts = [
            ("block", block, self.blocks.len()),
            ("sequence", sequence, self.tokens.len()),
            ("head", head, heads),
        ];
        check_indices(
            &counts,
            "must be less than the forward pass's number of them",
        )?;
        self.blocks[block].attention.attention.heads[sequence * heads + head].weights()
    }
}
