//! A decoder's configuration: its sizes, how it knows positions, what
//! attention its blocks run, and which of the book's two recipes it
//! follows.

use crate::check::{check_model_sizes, check_parameters, check_total, MAX_ENTRIES};
use crate::error::AttnError;
use crate::kv_bytes::KvLayout;
use crate::nn::Activation;
use crate::rope_scaling::{RopeFrequencies, RopeScaling};

// ANCHOR: config
/// The sizes of a decoder-only model, and how it is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DecoderConfig {
    /// Tokens in the vocabulary.
    pub vocab: usize,
    /// The most tokens the model reads at once.
    pub context: usize,
    /// Token width.
    pub d_model: usize,
    /// Attention heads per block.
    pub heads: usize,
    /// Key/value heads per block, a divisor of `heads`: `heads` for
    /// multi-head attention, fewer to share them among groups of query
    /// heads (grouped-query), 1 for multi-query attention (chapter 17).
    pub kv_heads: usize,
    /// Number of blocks.
    pub layers: usize,
    /// Hidden width of the FFN.
    pub d_ff: usize,
    /// How the model knows where each token is.
    pub positions: Positions,
    /// `None` for multi-head (or grouped-query) attention; the widths of
    /// the latent and of the rotary parts for multi-head latent attention
    /// (chapter 17), which needs rotary positions and `kv_heads = heads`.
    pub latent: Option<LatentSizes>,
    /// The FFN's non-linearity.
    pub activation: Activation,
    /// Biases, the output head and the initialisation.
    pub recipe: Recipe,
}

/// Where a token is: a learned embedding per position, added to the
/// token's, or rotary positions (RoPE, chapter 7), which turn each head's
/// queries and keys by their positions and learn nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Positions {
    /// A learned vector for each of the `context` positions.
    Learned,
    /// Rotary positions: scores depend only on the distance between query
    /// and key.
    Rotary,
    /// Rotary positions with their frequencies scaled for a context longer
    /// than the trained one (position interpolation, NTK-aware, YaRN or
    /// Llama 3's; [`crate::rope_scaling`]).
    ScaledRotary(RopeScaling),
    /// No positions at all (NoPE): the causal mask alone tells a query how
    /// many keys came before it, from which a model can learn where it is
    /// (Kazemnejad et al., 2023).
    None,
    /// ALiBi (chapter 7; Press et al., 2022): each head's scores less
    /// `slope·(i − j)`, the slopes of [`crate::position::alibi_slopes`],
    /// nothing added to the tokens and nothing learned.
    Alibi,
}

impl Positions {
    /// How rotary positions turn queries and keys: `None` for learned
    /// positions, ALiBi and none, [`RopeScaling::None`] for plain RoPE.
    ///
    /// Every kind but learned positions has no table of positions, so a
    /// model reads past its context (through a sliding window).
    pub fn rope(self) -> Option<RopeScaling> {
        match self {
            Positions::Learned | Positions::None | Positions::Alibi => None,
            Positions::Rotary => Some(RopeScaling::None),
            Positions::ScaledRotary(scaling) => Some(scaling),
        }
    }
}

/// Which of the book's two recipes a decoder follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Recipe {
    /// Chapter 12's: biases in the FFN and the output head (none in
    /// attention's projections, as in chapter 5), a shift `β` in every
    /// LayerNorm, an output head of its own (`W`, `b`), weights drawn
    /// `N(0, 1/fan-in)` as chapter 4 draws them.
    WithBiases,
    /// Chapter 16's, GPT-2's as nanoGPT trains it: no bias and no shift
    /// anywhere, the token embedding as the output head (tied: the logits
    /// are `z Eᵀ`), GPT-2's initialisation.
    Tied,
}
// ANCHOR_END: config

/// The widths of multi-head latent attention beyond its heads' `d_h =
/// d_model/heads`: the cached latent `d_c` and the rotary parts `d_r`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LatentSizes {
    /// The latent's width.
    pub d_c: usize,
    /// The rotary query and key parts' width (even).
    pub d_r: usize,
}

impl DecoderConfig {
    /// Checks that every one of `tokens` is in the vocabulary; the error
    /// names them `name`.
    pub(crate) fn check_token_ids(
        &self,
        name: &'static str,
        tokens: &[usize],
    ) -> Result<(), AttnError> {
        match tokens.iter().find(|&&t| t >= self.vocab) {
            Some(&token) => Err(AttnError::OutOfRange {
                name,
                value: token,
                requirement: "must be less than the vocabulary's size",
                limit: self.vocab,
            }),
            None => Ok(()),
        }
    }

    /// Checks that every size is at least 1, that the heads split `d_model`
    /// evenly, and that the parameters and a block's cache fit in memory.
    pub fn check(&self) -> Result<(), AttnError> {
        let sizes = [
            ("vocab", self.vocab),
            ("context", self.context),
            ("d_model", self.d_model),
            ("heads", self.heads),
            ("kv_heads", self.kv_heads),
            ("layers", self.layers),
            ("d_ff", self.d_ff),
        ];
        check_model_sizes(&sizes, (self.d_model, self.heads))?;
        if !self.heads.is_multiple_of(self.kv_heads) {
            return Err(AttnError::InvalidArgument {
                name: "kv_heads",
                value: self.kv_heads as f64,
                requirement: "must divide heads: each key/value head serves a group of query heads",
            });
        }
        let d_k = self.d_model / self.heads;
        if let Some(scaling) = self.positions.rope() {
            if !d_k.is_multiple_of(2) {
                return Err(AttnError::InvalidArgument {
                    name: "d_k with rotary positions",
                    value: d_k as f64,
                    requirement: "must be even: RoPE turns pairs of coordinates",
                });
            }
            RopeFrequencies::of_heads(d_k, scaling)?; // its factor and parameters
        }
        if self.positions == Positions::Alibi && self.kv_heads != self.heads {
            return Err(AttnError::InvalidArgument {
                name: "kv_heads with ALiBi",
                value: self.kv_heads as f64,
                requirement: "must equal heads: each head's cache reads keys with its own slope",
            });
        }
        if let Some(latent) = self.latent {
            self.check_latent(latent)?;
        }
        check_parameters(self.parameter_count(), [self.layers, self.d_model, self.d_ff])?;
        // The cache holds `context` rows of keys and values in every block,
        // allocated at once by `new_cache`: checked as a whole.
        let width = self.kv_layout().numbers_per_layer().unwrap_or(usize::MAX);
        check_total("the KV cache", &[self.layers, self.context, width], MAX_ENTRIES).map(|_| ())
    }

    /// Latent attention's requirements: rotary positions, no key/value
    /// heads of its own, an even `d_r` of at least 2, a `d_c` of at least 1.
    fn check_latent(&self, LatentSizes { d_c, d_r }: LatentSizes) -> Result<(), AttnError> {
        let refuse = |name, value: usize, requirement| {
            Err(AttnError::InvalidArgument { name, value: value as f64, requirement })
        };
        if self.positions != Positions::Rotary {
            return refuse(
                "latent attention without plain rotary positions",
                0,
                "needs plain rotary positions: its decoupled rotary key is where positions \
                 enter (scaled RoPE is not offered for it)",
            );
        }
        if self.kv_heads != self.heads {
            return refuse(
                "kv_heads with latent attention",
                self.kv_heads,
                "must equal heads: the latent is shared by every head",
            );
        }
        if d_c == 0 {
            return refuse("d_c", d_c, "must be at least 1");
        }
        if d_r == 0 || !d_r.is_multiple_of(2) {
            return refuse(
                "d_r",
                d_r,
                "must be even and at least 2: RoPE turns pairs of coordinates",
            );
        }
        Ok(())
    }

    /// The number of parameters, or `None` if it does not fit in a `usize`:
    /// `(V + T)·d` embeddings (`V·d` with rotary positions); per block the
    /// two LayerNorms' `2d` (`4d` with their shifts), the FFN's `2d·d_ff`
    /// (and `d_ff + d` biases) and the attention's (`2d² + 2d·d_kv`: `W_K`
    /// and `W_V` are `d × d_kv`; with latent attention `2d² + d·h·d_r +
    /// d·d_c + d·d_r + 2·d_c·d`); the final LayerNorm's `d` (`2d`); and an
    /// output head of its own, `d·V + V`, unless it is the token embedding.
    pub fn parameter_count(&self) -> Option<usize> {
        let (d, f, v) = (self.d_model, self.d_ff, self.vocab);
        let biases = self.recipe == Recipe::WithBiases;
        let norms = if biases { 2 } else { 1 }; // γ, and β with biases
        let embeddings = v.checked_add(self.learned_positions())?.checked_mul(d)?;
        let attention = match self.latent {
            None => d.checked_mul(self.d_kv())?.checked_mul(2)?,
            Some(LatentSizes { d_c, d_r }) => [
                d.checked_mul(self.heads)?.checked_mul(d_r)?,
                d.checked_mul(d_c)?,
                d.checked_mul(d_r)?,
                d_c.checked_mul(d)?.checked_mul(2)?,
            ]
            .into_iter()
            .try_fold(0, usize::checked_add)?,
        };
        let ffn_biases = if biases { f.checked_add(d)? } else { 0 };
        let block =
            [d.checked_mul(2 * norms)?, d.checked_mul(d)?.checked_mul(2)?, attention, ffn_biases]
                .into_iter()
                .try_fold(d.checked_mul(f)?.checked_mul(2)?, usize::checked_add)?;
        let head = match self.recipe {
            Recipe::WithBiases => d.checked_mul(v)?.checked_add(v)?,
            Recipe::Tied => 0,
        };
        block
            .checked_mul(self.layers)?
            .checked_add(embeddings)?
            .checked_add(d.checked_mul(norms)?)?
            .checked_add(head)
    }

    /// The width of a block's keys (and of its values): `kv_heads · d_k`,
    /// `d_model` for multi-head attention. It saturates at `usize::MAX` for
    /// sizes whose product does not fit, which [`Self::check`] refuses.
    pub fn d_kv(&self) -> usize {
        self.kv_heads.saturating_mul(self.d_model / self.heads.max(1))
    }

    /// What a block's cache holds per token: a key and a value of every
    /// key/value head, or with latent attention the latent and the rotary key.
    pub fn kv_layout(&self) -> KvLayout {
        match self.latent {
            None => KvLayout::Heads {
                kv_heads: self.kv_heads,
                d_head: self.d_model / self.heads.max(1),
            },
            Some(LatentSizes { d_c, d_r }) => KvLayout::Latent { d_c, d_r },
        }
    }

    /// Rows of the position table: the context with learned positions, 0
    /// with rotary ones.
    pub(crate) fn learned_positions(&self) -> usize {
        match self.positions {
            Positions::Learned => self.context,
            Positions::Rotary | Positions::ScaledRotary(_) | Positions::None | Positions::Alibi => {
                0
            }
        }
    }
}
