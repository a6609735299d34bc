//! The decoder's forward pass over a batch of sequences, its loss, and its
//! backward pass: every step of the forward pass undone in reverse order
//! (chapters 11 and 12).

use ndarray::{Array2, ArrayRef2, Axis};

use super::{Decoder, Positions, Recipe};
use crate::check::{check_total, MAX_ENTRIES};
use crate::error::AttnError;
use crate::linalg::{linear, linear_backward, matmul};
use crate::masking::{band_mask, causal_mask};
use crate::nn::{
    check_d_logits, check_finite_parameters, check_logits, check_same_model, cross_entropy,
    embedding_backward, embedding_forward, fingerprint, kept_weights, layer_norm_backward,
    layer_norm_forward, BlockCache, Heads, LayerNormCache,
};
use crate::real::Real;

/// LayerNorm's `ε`, as PyTorch's default.
pub const EPS: f64 = 1e-5;

/// How a forward pass computes each head's attention.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttentionPath {
    /// Chapter 2's attention, each head keeping its weights, which
    /// [`DecoderForward::weights`] reads and the backward pass uses.
    Weights,
    /// The appendix's fused kernel where it applies (a model in `f32`, the
    /// causal mask): each head keeps one log-sum-exp a query instead of its
    /// weights, and the backward pass computes them again, tile by tile.
    Fused,
}

/// The forward pass's result: the logits, and what the backward pass needs.
pub struct DecoderForward<F> {
    logits: Array2<F>, // B·T × V
    fingerprint: u64,  // of the model that ran it: backward checks it
    tokens: Vec<Vec<usize>>,
    blocks: Vec<BlockCache<F>>,
    ln_f: LayerNormCache<F>,
    z: Array2<F>, // the final LayerNorm's output, B·T × d
}

// ANCHOR: forward
impl<F: Real> Decoder<F> {
    /// The forward pass over `B` sequences of equal length `T ≤ context`:
    /// row `b·T + i` of the logits scores the token after position `i` of
    /// sequence `b`, having seen only positions `0..=i` (the causal mask).
    pub fn forward(&self, batch: &[Vec<usize>]) -> Result<DecoderForward<F>, AttnError> {
        self.forward_through(batch, self.blocks.len())
    }

    /// The forward pass through the first `depth` blocks, with the mask
    /// `keep` (`T×T`) for every sequence and the blocks' `heads`.
    fn run(
        &self,
        batch: &[Vec<usize>],
        (keep, depth): (&Array2<bool>, usize),
        heads: Heads,
    ) -> Result<DecoderForward<F>, AttnError> {
        check_finite_parameters(self)?;
        let eps = F::of(EPS); // LayerNorm's ε, 10⁻⁵
        let mut x = self.embed(batch); // B·T × d
        let mut caches = Vec::with_capacity(depth);
        for block in &self.blocks[..depth] {
            // x ← x + MultiHead(LayerNorm(x)); x ← x + FFN(LayerNorm(x)).
            let mask = |_: usize| keep.clone();
            let (out, cache) = block.forward(&x, heads, mask, self.config.activation, eps)?;
            x = out;
            caches.push(cache);
        }
        let (z, ln_f_cache) = layer_norm_forward(&x, &self.ln_f.gamma, &self.ln_f.beta, eps)?;
        let logits = self.logits(&z)?; // B·T × V
        Ok(DecoderForward {
            logits,
            fingerprint: fingerprint(self, self.config),
            tokens: batch.to_vec(),
            blocks: caches,
            ln_f: ln_f_cache,
            z,
        })
    }
}
// ANCHOR_END: forward

impl<F: Real> Decoder<F> {
    /// [`Self::forward`], each head's attention computed by `path`.
    pub fn forward_on(
        &self,
        batch: &[Vec<usize>],
        path: AttentionPath,
    ) -> Result<DecoderForward<F>, AttnError> {
        self.check_batch(batch, self.config.context)?;
        let t = batch[0].len();
        self.run(batch, (&causal_mask(t, t), self.blocks.len()), self.heads(t, path))
    }

    /// The forward pass through the first `depth` blocks only, read out by
    /// the final LayerNorm and head as if the rest were absent (what the
    /// residual stream already predicts after `depth` blocks).
    pub fn forward_through(
        &self,
        batch: &[Vec<usize>],
        depth: usize,
    ) -> Result<DecoderForward<F>, AttnError> {
        self.check_batch(batch, self.config.context)?;
        if depth > self.blocks.len() {
            return Err(AttnError::OutOfRange {
                name: "depth",
                value: depth,
                requirement: "must be at most the model's number of blocks",
                limit: self.blocks.len(),
            });
        }
        let t = batch[0].len();
        self.run(batch, (&causal_mask(t, t), depth), self.heads(t, AttentionPath::Weights))
    }

    // ANCHOR: forward_window
    /// Sliding-window attention, for a model without learned positions: the
    /// forward pass over sequences of any length in which every position
    /// sees only itself and the `window − 1` before it, in every block.
    /// What the sliding KV cache computes (`step`).
    pub fn forward_window(
        &self,
        batch: &[Vec<usize>],
        window: usize,
    ) -> Result<DecoderForward<F>, AttnError> {
        if self.config.positions == Positions::Learned || window == 0 {
            return Err(AttnError::InvalidArgument {
                name: "window",
                value: window as f64,
                requirement: "must be at least 1, in a model without learned positions",
            });
        }
        self.check_batch(batch, usize::MAX)?;
        let t = batch[0].len();
        let band = band_mask(t, window)?;
        self.run(batch, (&band, self.blocks.len()), self.heads(t, AttentionPath::Weights))
    }
    // ANCHOR_END: forward_window

    /// Token plus position embeddings, or, without learned positions, the
    /// token embeddings alone: row `b·T + i` for token `i` of sequence `b`.
    fn embed(&self, batch: &[Vec<usize>]) -> Array2<F> {
        match self.config.positions {
            Positions::Learned => embedding_forward(batch, &self.tokens, &self.positions),
            Positions::Rotary | Positions::ScaledRotary(_) | Positions::None | Positions::Alibi => {
                let rows: Vec<usize> = batch.iter().flatten().copied().collect();
                self.tokens.select(Axis(0), &rows)
            }
        }
    }

    // ANCHOR: logits
    /// The output head: `z W + b`, or `z Eᵀ` where the head is the token
    /// embedding (tied).
    pub(crate) fn logits(&self, z: &ArrayRef2<F>) -> Result<Array2<F>, AttnError> {
        let logits = match &self.head {
            Some(head) => linear("the logits", z, &head.w, Some(&head.b))?,
            None => matmul(z, &self.tokens.t()),
        };
        check_logits(&logits)?;
        Ok(logits)
    }
    // ANCHOR_END: logits

    /// How every block's heads attend over sequences of `t` tokens.
    fn heads(&self, t: usize, path: AttentionPath) -> Heads {
        let heads = Heads::new(t, t, self.config.heads).with_kv_heads(self.config.kv_heads);
        let heads = match self.config.positions.rope() {
            Some(scaling) => heads.rotary(scaling),
            None => heads,
        };
        let alibi = self.config.positions == Positions::Alibi;
        Heads { fused: path == AttentionPath::Fused, alibi, ..heads }
    }

    /// The backward pass: the gradient of the loss with respect to every
    /// parameter, given `dL/dlogits`, as a model of the same shape.
    pub fn backward(
        &self,
        fwd: &DecoderForward<F>,
        d_logits: &ArrayRef2<F>,
    ) -> Result<Decoder<F>, AttnError> {
        check_d_logits(d_logits, fwd.logits.dim())?;
        check_same_model(fwd.fingerprint, self, self.config)?;
        if fwd.blocks.len() != self.blocks.len() {
            return Err(AttnError::InvalidArgument {
                name: "forward pass depth",
                value: fwd.blocks.len() as f64,
                requirement: "must run through every block of this model (not forward_through)",
            });
        }
        let heads = self.heads(fwd.tokens[0].len(), AttentionPath::Weights);
        let mut g = self.zeros_like();
        let dz = match &self.head {
            Some(head) => {
                let (dz, d_head) = linear_backward(&fwd.z, &head.w, d_logits)?;
                g.head = Some(d_head);
                dz
            }
            // logits = z Eᵀ: dz = dlogits E, and E's gradient as the head.
            None => {
                g.tokens = matmul(&d_logits.t(), &fwd.z);
                matmul(d_logits, &self.tokens)
            }
        };
        let mut dx;
        (dx, g.ln_f) = layer_norm_backward(&fwd.ln_f, &self.ln_f.gamma, &dz)?;
        for (l, (block, cache)) in self.blocks.iter().zip(&fwd.blocks).enumerate().rev() {
            (dx, g.blocks[l]) = block.backward(cache, heads, self.config.activation, &dx)?;
        }
        if self.config.recipe == Recipe::Tied {
            g.drop_biases(); // held at 0: their gradients are dropped
        }
        // Each row of dx goes to its token's row (added to E's gradient as
        // the head, if tied), and to its position's.
        match self.config.positions {
            Positions::Learned => {
                embedding_backward(&dx, &fwd.tokens, &mut g.tokens, &mut g.positions)
            }
            Positions::Rotary | Positions::ScaledRotary(_) | Positions::None | Positions::Alibi => {
                for (row, &token) in dx.rows().into_iter().zip(fwd.tokens.iter().flatten()) {
                    g.tokens.row_mut(token).scaled_add(F::one(), &row);
                }
            }
        }
        Ok(g)
    }

    /// Sets every shift `β` and every bias to 0.
    fn drop_biases(&mut self) {
        self.ln_f.beta.fill(F::zero());
        for b in &mut self.blocks {
            b.ln1.beta.fill(F::zero());
            b.ln2.beta.fill(F::zero());
            b.ffn.b1.fill(F::zero());
            b.ffn.b2.fill(F::zero());
        }
    }

    // ANCHOR: loss
    /// The mean cross-entropy of predicting each next token, and the
    /// gradients: `targets` holds one token per position of `inputs`
    /// (sequence after sequence), or `None` where nothing is predicted.
    pub fn loss_and_gradients(
        &self,
        inputs: &[Vec<usize>],
        targets: &[Option<usize>],
    ) -> Result<(f64, Decoder<F>), AttnError> {
        self.loss_and_gradients_on(inputs, targets, AttentionPath::Weights)
    }
    // ANCHOR_END: loss

    /// [`Self::loss_and_gradients`], each head's attention computed by `path`.
    pub fn loss_and_gradients_on(
        &self,
        inputs: &[Vec<usize>],
        targets: &[Option<usize>],
        path: AttentionPath,
    ) -> Result<(f64, Decoder<F>), AttnError> {
        let fwd = self.forward_on(inputs, path)?;
        self.check_targets(&fwd, targets)?;
        let (loss, d_logits) = cross_entropy(&fwd.logits, targets)?;
        Ok((loss.wide(), self.backward(&fwd, &d_logits)?))
    }

    /// The loss alone, as [`Self::loss_and_gradients`] computes it.
    pub fn loss(&self, inputs: &[Vec<usize>], targets: &[Option<usize>]) -> Result<f64, AttnError> {
        let fwd = self.forward(inputs)?;
        self.check_targets(&fwd, targets)?;
        Ok(cross_entropy(&fwd.logits, targets)?.0.wide())
    }

    /// Checks one target (or `None`) per input position, each a token.
    fn check_targets(
        &self,
        fwd: &DecoderForward<F>,
        targets: &[Option<usize>],
    ) -> Result<(), AttnError> {
        if targets.len() != fwd.logits.nrows() {
            return Err(AttnError::InvalidArgument {
                name: "targets",
                value: targets.len() as f64,
                requirement: "must give one target token (or None) per input position",
            });
        }
        let tokens: Vec<usize> = targets.iter().flatten().copied().collect();
        self.check_tokens("target", &[tokens])
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
            return Err(AttnError::TooLong { what: "the sequences", len: t, max: longest });
        }
        self.check_tokens("token", batch)?;
        // What the pass builds from the batch's sizes, each checked as a
        // whole before anything is allocated: a block's attention weights,
        // its widest vectors, and the logits.
        let c = self.config;
        let b = batch.len();
        check_total("the attention weights of a block", &[b, c.heads, t, t], MAX_ENTRIES)?;
        check_total("the vectors of a block", &[b, t, c.d_ff.max(c.d_model)], MAX_ENTRIES)?;
        check_total("the logits", &[b, t, c.vocab], MAX_ENTRIES).map(|_| ())
    }

    /// Checks that every one of `tokens` (named `name`) is in the vocabulary.
    fn check_tokens(&self, name: &'static str, tokens: &[Vec<usize>]) -> Result<(), AttnError> {
        tokens.iter().try_for_each(|sequence| self.check_token_ids(name, sequence))
    }

    /// Checks that every one of `tokens` (named `name`: a prompt, a text)
    /// is in the vocabulary, where a token id enters the model.
    pub(crate) fn check_token_ids(
        &self,
        name: &'static str,
        tokens: &[usize],
    ) -> Result<(), AttnError> {
        self.config.check_token_ids(name, tokens)
    }
}

impl<F: Real> DecoderForward<F> {
    /// The logits, `B·T × V`: row `b·T + i` scores the token after position
    /// `i` of sequence `b`.
    pub fn logits(&self) -> &Array2<F> {
        &self.logits
    }

    /// The `T×T` attention weights of `block`, `sequence` and `head`, as the
    /// forward pass kept them for the backward pass.
    pub fn weights(
        &self,
        block: usize,
        sequence: usize,
        head: usize,
    ) -> Result<&Array2<F>, AttnError> {
        kept_weights(&self.blocks, ("sequence", self.tokens.len()), [block, sequence, head])
    }
}
