//! The forward pass of the tiny Transformer, and its backward pass: every
//! step of the forward pass undone in reverse order (chapters 11 and 12).

use ndarray::ArrayRef2;

use super::{TinyTransformer, EPS, VOCAB};
use crate::check::check_indices;
use crate::error::AttnError;
use crate::linalg::matmul;
use crate::grad::Matrix;
use crate::masking::causal_mask;
use crate::nn::{
    check_d_logits, check_finite_parameters, check_logits, check_same_model, cross_entropy,
    embedding_backward, embedding_forward, fingerprint, layer_norm_backward, layer_norm_forward,
    linear_backward, Activation, BlockCache, Heads, LayerNormCache,
};

/// The forward pass's result: logits and what the backward pass needs.
pub struct Forward {
    logits: Matrix,   // BT×VOCAB
    fingerprint: u64, // of the model that ran it: backward checks it
    tokens: Vec<Vec<usize>>,
    heads: usize,
    blocks: Vec<BlockCache<f64>>,
    ln_f: LayerNormCache<f64>,
    z: Matrix,
}

// ANCHOR: forward
impl TinyTransformer {
    /// The forward pass over `B` sequences of equal length `T ≤ context`.
    pub fn forward(&self, batch: &[Vec<usize>]) -> Result<Forward, AttnError> {
        self.forward_through(batch, self.blocks.len())
    }

    /// The forward pass through the first `depth` blocks only, read out by
    /// the final LayerNorm and head as if the rest were absent (what the
    /// residual stream already predicts after `depth` blocks).
    pub fn forward_through(
        &self,
        batch: &[Vec<usize>],
        depth: usize,
    ) -> Result<Forward, AttnError> {
        self.check_batch(batch)?;
        check_finite_parameters(self)?;
        if depth > self.blocks.len() {
            return Err(AttnError::OutOfRange {
                name: "depth",
                value: depth,
                requirement: "must be at most the model's number of blocks",
                limit: self.blocks.len(),
            });
        }
        let t = batch[0].len();
        let heads = Heads::new(t, t, self.config.heads);
        let causal = |_: usize| causal_mask(t, t);
        // Token plus position embeddings: BT×d.
        let mut x = embedding_forward(batch, &self.tokens, &self.positions);
        let mut caches = Vec::new();
        for block in &self.blocks[..depth] {
            // x ← x + MultiHead(LayerNorm(x)), causal; x ← x + FFN(LayerNorm(x)).
            let (out, cache) = block.forward(&x, heads, causal, Activation::Gelu, EPS)?;
            x = out;
            caches.push(cache);
        }
        let (z, ln_f) = layer_norm_forward(&x, &self.ln_f[0], &self.ln_f[1], EPS);
        let logits = matmul(&z, &self.head.0) + &self.head.1;
        check_logits(&logits)?;
        Ok(Forward {
            logits,
            fingerprint: fingerprint(self, self.config),
            tokens: batch.to_vec(),
            heads: self.config.heads,
            blocks: caches,
            ln_f,
            z,
        })
    }

    // ANCHOR_END: forward
    /// Checks that `batch` holds at least one sequence, that all have the
    /// same length, between 1 and the context, and that every token exists.
    fn check_batch(&self, batch: &[Vec<usize>]) -> Result<(), AttnError> {
        let Some(first) = batch.first() else {
            return Err(AttnError::InvalidArgument {
                name: "batch",
                value: 0.0,
                requirement: "must hold at least one sequence",
            });
        };
        let t = first.len();
        if t == 0 || t > self.config.context() || batch.iter().any(|s| s.len() != t) {
            return Err(AttnError::InvalidArgument {
                name: "sequence length",
                value: t as f64,
                requirement:
                    "must be the same for every sequence, from 1 to the model's context (2k)",
            });
        }
        if let Some(&token) = batch.iter().flatten().find(|&&token| token >= VOCAB) {
            return Err(AttnError::InvalidArgument {
                name: "token",
                value: token as f64,
                requirement: "must be a digit 0–9 or the separator 10",
            });
        }
        Ok(())
    }
}

impl Forward {
    /// The logits, `BT×VOCAB`: row `b·T + i` scores the token after position
    /// `i` of sequence `b`.
    pub fn logits(&self) -> &Matrix {
        &self.logits
    }

    /// The `T×T` attention weights of `block`, `sequence` and `head`, as the
    /// forward pass kept them for the backward pass.
    pub fn weights(
        &self,
        block: usize,
        sequence: usize,
        head: usize,
    ) -> Result<&Matrix, AttnError> {
        let counts = [
            ("block", block, self.blocks.len()),
            ("sequence", sequence, self.tokens.len()),
            ("head", head, self.heads),
        ];
        check_indices(
            &counts,
            "must be less than the forward pass's number of them",
        )?;
        let attention = &self.blocks[block].attention.attention;
        attention.heads[sequence * self.heads + head].weights()
    }
}

impl TinyTransformer {
    /// The backward pass: the gradient of the loss with respect to every
    /// parameter, given `dL/dlogits`. Each step undoes one step of
    /// [`Self::forward`], in reverse order.
    pub fn backward(
        &self,
        fwd: &Forward,
        d_logits: &ArrayRef2<f64>,
    ) -> Result<TinyTransformer, AttnError> {
        check_d_logits(d_logits, fwd.logits.dim())?;
        check_same_model(fwd.fingerprint, self, self.config)?;
        if fwd.blocks.len() != self.blocks.len() {
            return Err(AttnError::InvalidArgument {
                name: "forward pass depth",
                value: fwd.blocks.len() as f64,
                requirement: "must run through every block of this model (not forward_through)",
            });
        }
        let mut g = self.zeros_like();
        let t = fwd.tokens[0].len();
        let heads = Heads::new(t, t, self.config.heads);
        let (dz, d_head, d_head_b) = linear_backward(&fwd.z, &self.head.0, d_logits);
        g.head = (d_head, d_head_b);
        let (mut dx, dg, db) = layer_norm_backward(&fwd.ln_f, &self.ln_f[0], &dz);
        g.ln_f = [dg, db];
        for (l, (block, cache)) in self.blocks.iter().zip(&fwd.blocks).enumerate().rev() {
            // Back through x₂ = x₁ + FFN(LayerNorm(x₁)), x₁ = x + MultiHead(LayerNorm(x)).
            (dx, g.blocks[l]) = block.backward(cache, heads, Activation::Gelu, &dx);
        }
        // Embeddings: each row of dx goes to its token's and its position's row.
        embedding_backward(&dx, &fwd.tokens, &mut g.tokens, &mut g.positions);
        Ok(g)
    }

    // ANCHOR: loss
    /// The loss on `inputs` with next-token `targets` (one per position,
    /// `None` where there is nothing to predict) and its gradient with
    /// respect to every parameter: forward, cross-entropy, backward.
    pub fn loss_and_gradients(
        &self,
        inputs: &[Vec<usize>],
        targets: &[Option<usize>],
    ) -> Result<(f64, TinyTransformer), AttnError> {
        let fwd = self.forward(inputs)?;
        Self::check_targets(&fwd, targets)?;
        let (loss, d_logits) = cross_entropy(&fwd.logits, targets)?;
        Ok((loss, self.backward(&fwd, &d_logits)?))
    }

    // ANCHOR_END: loss

    /// The loss alone, as [`Self::loss_and_gradients`] computes it.
    pub fn loss(&self, inputs: &[Vec<usize>], targets: &[Option<usize>]) -> Result<f64, AttnError> {
        let fwd = self.forward(inputs)?;
        Self::check_targets(&fwd, targets)?;
        Ok(cross_entropy(&fwd.logits, targets)?.0)
    }

    /// Checks one target (or `None`) per input position, each a token.
    fn check_targets(fwd: &Forward, targets: &[Option<usize>]) -> Result<(), AttnError> {
        if targets.len() != fwd.logits.nrows() {
            return Err(AttnError::InvalidArgument {
                name: "targets",
                value: targets.len() as f64,
                requirement: "must give one target token (or None) per input position",
            });
        }
        match targets.iter().flatten().find(|&&t| t >= VOCAB) {
            Some(&token) => Err(AttnError::InvalidArgument {
                name: "target",
                value: token as f64,
                requirement: "must be a digit 0–9 or the separator 10",
            }),
            None => Ok(()),
        }
    }
}
