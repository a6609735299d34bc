//! The language model's configuration and parameters.

use ndarray::{Array1, Array2};
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

use crate::check::{check_model_sizes, check_parameters};
use crate::error::AttnError;
use crate::kv_bytes::KvLayout;
use crate::nn::latent::LatentWeights;
use crate::nn::{BlockAttention, FfnParams, Parameters, PreNormBlock};
use crate::real::Real;

// ANCHOR: config
/// The sizes of a decoder-only language model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LmConfig {
    /// Tokens in the vocabulary (characters, here).
    pub vocab: usize,
    /// The most tokens the model reads at once.
    pub context: usize,
    /// Token width.
    pub d_model: usize,
    /// Attention heads per block.
    pub heads: usize,
    /// Key/value heads per block, a divisor of `heads`: `heads` for
    /// multi-head attention, fewer to share them among groups of query
    /// heads (grouped-query), 1 for multi-query attention.
    pub kv_heads: usize,
    /// Number of blocks.
    pub layers: usize,
    /// Hidden width of the FFN.
    pub d_ff: usize,
    /// How the model knows where each token is.
    pub positions: Positions,
    /// `None` for multi-head (or grouped-query) attention; the widths of
    /// the latent and of the rotary parts for multi-head latent attention
    /// (chapter 16), which needs rotary positions and `kv_heads = heads`.
    pub latent: Option<LatentSizes>,
}

/// The widths of multi-head latent attention beyond its heads' `d_h =
/// d_model/heads`: the cached latent `d_c` and the rotary parts `d_r`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LatentSizes {
    /// The latent's width.
    pub d_c: usize,
    /// The rotary query and key parts' width (even).
    pub d_r: usize,
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
}

/// The book's language model: 4 blocks of 4 heads, 128 wide, reading 64
/// characters, over Shakespeare's 84 characters.
pub const SHAKESPEARE_MODEL: LmConfig = LmConfig {
    vocab: 84,
    context: 64,
    d_model: 128,
    heads: 4,
    kv_heads: 4,
    layers: 4,
    d_ff: 512,
    positions: Positions::Learned,
    latent: None,
};
// ANCHOR_END: config

impl LmConfig {
    /// Checks that every size is at least 1, that the heads split `d_model`
    /// evenly, and that the parameters fit in memory.
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
        if self.positions == Positions::Rotary && !d_k.is_multiple_of(2) {
            return Err(AttnError::InvalidArgument {
                name: "d_k with rotary positions",
                value: d_k as f64,
                requirement: "must be even: RoPE turns pairs of coordinates",
            });
        }
        if let Some(latent) = self.latent {
            self.check_latent(latent)?;
        }
        // The cache holds `context` rows of keys and values in a block.
        let width = self.kv_layout().numbers_per_layer().unwrap_or(usize::MAX);
        crate::check::check_size("a block's KV cache", self.context, width)?;
        check_parameters(
            self.parameter_count(),
            [self.layers, self.d_model, self.d_ff],
        )
    }

    /// Latent attention's requirements: rotary positions, no key/value
    /// heads of its own, an even `d_r` of at least 2, a `d_c` of at least 1.
    fn check_latent(&self, LatentSizes { d_c, d_r }: LatentSizes) -> Result<(), AttnError> {
        let refuse = |name, value: usize, requirement| {
            Err(AttnError::InvalidArgument {
                name,
                value: value as f64,
                requirement,
            })
        };
        if self.positions != Positions::Rotary {
            return refuse(
                "latent attention with learned positions",
                0,
                "needs rotary positions: its decoupled rotary key is where positions enter",
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
    /// `(V + T)·d` embeddings (`V·d` with rotary positions), per block
    /// `2d + 2d·d_ff` and the attention's (`2d² + 2d·d_kv`: `W_K` and `W_V`
    /// are `d × d_kv`; with latent attention `2d² + d·h·d_r + d·d_c +
    /// d·d_r + 2·d_c·d`), and `d` for the final LayerNorm. The output head
    /// is the token embedding.
    pub fn parameter_count(&self) -> Option<usize> {
        let (d, f) = (self.d_model, self.d_ff);
        let embeddings = self
            .vocab
            .checked_add(self.learned_positions())?
            .checked_mul(d)?;
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
        let block = [
            d.checked_mul(2)?,
            d.checked_mul(d)?.checked_mul(2)?,
            attention,
        ]
        .into_iter()
        .try_fold(d.checked_mul(f)?.checked_mul(2)?, usize::checked_add)?;
        block
            .checked_mul(self.layers)?
            .checked_add(embeddings)?
            .checked_add(d)
    }

    /// The width of a block's keys (and of its values): `kv_heads · d_k`,
    /// `d_model` for multi-head attention.
    pub fn d_kv(&self) -> usize {
        self.kv_heads * (self.d_model / self.heads.max(1))
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
    pub(super) fn learned_positions(&self) -> usize {
        match self.positions {
            Positions::Learned => self.context,
            Positions::Rotary => 0,
        }
    }
}

// ANCHOR: model
/// A decoder-only Transformer that predicts the next token: token and
/// learned position embeddings, pre-norm blocks of causal multi-head
/// attention and a GELU FFN, a final LayerNorm, and an output head that is
/// the token embedding itself (tied). No biases: each LayerNorm has a scale
/// `γ` and no shift, each product no bias (they are held at 0, outside the
/// parameters).
#[derive(Debug, Clone, PartialEq)]
pub struct LanguageModel<F: Real = f32> {
    pub(super) config: LmConfig,
    /// Token embeddings `E`, `V×d`; the logits are `z Eᵀ`.
    pub(super) tokens: Array2<F>,
    /// Learned position embeddings, `context×d` (`0×d` with rotary positions).
    pub(super) positions: Array2<F>,
    pub(super) blocks: Vec<PreNormBlock<F>>,
    /// The final LayerNorm, `[γ, β = 0]`.
    pub(super) ln_f: [Array1<F>; 2],
}
// ANCHOR_END: model

impl<F: Real> LanguageModel<F> {
    /// A freshly initialised model, as GPT-2 initialises one: every matrix
    /// `N(0, 0.02²)`, except the two that write into the residual stream
    /// (`W_O` and the FFN's `W₂`), `N(0, 0.02²/(2·layers))`; every `γ` 1.
    /// The draws are `f64`, rounded to `F`, so that an `f32` and an `f64`
    /// model of one seed hold the same numbers.
    pub fn new(config: LmConfig, seed: u64) -> Result<Self, AttnError> {
        config.check()?;
        let mut rng = StdRng::seed_from_u64(seed);
        let (d, f, d_kv) = (config.d_model, config.d_ff, config.d_kv());
        let residual = 0.02 / (2.0 * config.layers as f64).sqrt();
        let mut normal = |rows, cols, std: f64| {
            (crate::grad::normal_matrix(rows, cols, &mut rng) * std).mapv(F::of)
        };
        let tokens = normal(config.vocab, d, 0.02);
        let positions = normal(config.learned_positions(), d, 0.02);
        let blocks = (0..config.layers)
            .map(|_| PreNormBlock {
                ln1: norm(d),
                attn: match config.latent {
                    None => BlockAttention::Heads(
                        [(d, 0.02), (d_kv, 0.02), (d_kv, 0.02), (d, residual)]
                            .map(|(cols, std)| normal(d, cols, std)),
                    ),
                    Some(LatentSizes { d_c, d_r }) => BlockAttention::Latent(LatentWeights {
                        w_q: normal(d, d, 0.02),
                        w_qr: normal(d, config.heads * d_r, 0.02),
                        w_dkv: normal(d, d_c, 0.02),
                        w_kr: normal(d, d_r, 0.02),
                        w_uk: normal(d_c, d, 0.02),
                        w_uv: normal(d_c, d, 0.02),
                        w_o: normal(d, d, residual),
                    }),
                },
                ln2: norm(d),
                ffn: FfnParams {
                    w1: normal(d, f, 0.02),
                    b1: Array1::zeros(f),
                    w2: normal(f, d, residual),
                    b2: Array1::zeros(d),
                },
            })
            .collect();
        Ok(LanguageModel {
            config,
            tokens,
            positions,
            blocks,
            ln_f: norm(d),
        })
    }

    /// The sizes it was built with.
    pub fn config(&self) -> LmConfig {
        self.config
    }

    /// For each tensor of [`Parameters::slices`], whether it is a matrix
    /// (the embeddings and the weights of products), which AdamW decays,
    /// rather than a LayerNorm's scale, which it does not.
    pub fn matrices(&self) -> Vec<bool> {
        self.named_slices()
            .iter()
            .map(|(name, _)| !name.ends_with(".gamma"))
            .collect()
    }
}

/// A LayerNorm `[γ = 1, β = 0]`.
fn norm<F: Real>(d: usize) -> [Array1<F>; 2] {
    [Array1::ones(d), Array1::zeros(d)]
}

/// Every parameter tensor's name, in [`Parameters::slices`] order; the
/// weights file names them so.
fn names(config: &LmConfig) -> Vec<String> {
    let mut names = vec!["tokens".to_string()];
    if config.positions == Positions::Learned {
        names.push("positions".into());
    }
    let attention: &[&str] = match config.latent {
        None => &["w_q", "w_k", "w_v", "w_o"],
        Some(_) => &LatentWeights::<f32>::NAMES,
    };
    for l in 0..config.layers {
        let block = ["ln1.gamma"]
            .iter()
            .chain(attention)
            .chain(&["ln2.gamma", "w1", "w2"]);
        names.extend(block.map(|p| format!("blocks.{l}.{p}")));
    }
    names.push("ln_f.gamma".into());
    names
}

fn flat<F>(a: &ndarray::ArrayRef<F, impl ndarray::Dimension>) -> &[F] {
    a.as_slice().expect("parameters are contiguous")
}

fn flat_mut<F>(a: &mut ndarray::ArrayRef<F, impl ndarray::Dimension>) -> &mut [F] {
    a.as_slice_mut().expect("parameters are contiguous")
}

impl<F: Real> Parameters for LanguageModel<F> {
    type Real = F;

    fn slices(&self) -> Vec<&[F]> {
        let mut out = vec![flat(&self.tokens)];
        if self.config.positions == Positions::Learned {
            out.push(flat(&self.positions));
        }
        for b in &self.blocks {
            out.push(flat(&b.ln1[0]));
            out.extend(b.attn.matrices().into_iter().map(|w| flat(w)));
            out.extend([flat(&b.ln2[0]), flat(&b.ffn.w1), flat(&b.ffn.w2)]);
        }
        out.push(flat(&self.ln_f[0]));
        out
    }

    fn slices_mut(&mut self) -> Vec<&mut [F]> {
        let mut out = vec![flat_mut(&mut self.tokens)];
        if self.config.positions == Positions::Learned {
            out.push(flat_mut(&mut self.positions));
        }
        for b in &mut self.blocks {
            out.push(flat_mut(&mut b.ln1[0]));
            out.extend(b.attn.matrices_mut().into_iter().map(|w| flat_mut(w)));
            out.push(flat_mut(&mut b.ln2[0]));
            out.push(flat_mut(&mut b.ffn.w1));
            out.push(flat_mut(&mut b.ffn.w2));
        }
        out.push(flat_mut(&mut self.ln_f[0]));
        out
    }

    fn named_slices(&self) -> Vec<(String, &[F])> {
        names(&self.config).into_iter().zip(self.slices()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_book_model_has_the_parameters_its_formula_counts() {
        let model = LanguageModel::<f32>::new(SHAKESPEARE_MODEL, 1).unwrap();
        assert_eq!(model.parameter_count(), 806_528);
        assert_eq!(SHAKESPEARE_MODEL.parameter_count(), Some(806_528));
        let decayed = model.matrices().iter().filter(|&&m| m).count();
        assert_eq!(decayed, 2 + 4 * 6); // embeddings, W_Q..W_O, W₁, W₂
    }

    #[test]
    fn an_f32_and_an_f64_model_of_one_seed_hold_the_same_numbers() {
        let config = LmConfig {
            vocab: 5,
            context: 4,
            d_model: 8,
            heads: 2,
            kv_heads: 2,
            layers: 2,
            d_ff: 16,
            positions: Positions::Learned,
            latent: None,
        };
        let a = LanguageModel::<f32>::new(config, 3).unwrap();
        let b = LanguageModel::<f64>::new(config, 3).unwrap();
        for (x, y) in a.slices().iter().zip(b.slices()) {
            assert!(x.iter().zip(y).all(|(x, y)| *x == *y as f32));
        }
    }

    #[test]
    fn bad_sizes_are_refused_by_name() {
        let e = |c: LmConfig| LanguageModel::<f32>::new(c, 0).unwrap_err().to_string();
        assert!(e(LmConfig {
            heads: 3,
            ..SHAKESPEARE_MODEL
        })
        .contains("heads"));
        assert!(e(LmConfig {
            vocab: 0,
            ..SHAKESPEARE_MODEL
        })
        .contains("vocab"));
        let huge = LmConfig {
            layers: 1 << 40,
            ..SHAKESPEARE_MODEL
        };
        assert!(e(huge).contains("parameters"));
        let long = LmConfig {
            context: 1 << 40,
            positions: Positions::Rotary,
            ..SHAKESPEARE_MODEL
        };
        assert!(e(long).contains("KV cache"));
        let odd = LmConfig {
            d_model: 12,
            heads: 4,
            positions: Positions::Rotary,
            ..SHAKESPEARE_MODEL
        };
        assert!(e(odd).contains("even"));
        let rotary = LmConfig {
            positions: Positions::Rotary,
            ..SHAKESPEARE_MODEL
        };
        assert_eq!(rotary.parameter_count(), Some(806_528 - 64 * 128));
    }

    #[test]
    fn latent_attention_counts_its_parameters_and_refuses_what_it_cannot_be() {
        let latent = LmConfig {
            positions: Positions::Rotary,
            latent: Some(LatentSizes { d_c: 64, d_r: 16 }),
            ..SHAKESPEARE_MODEL
        };
        // Per block, attention's 4·128² become 2·128² + 128·4·16 + 128·64
        // + 128·16 + 2·64·128: 2,048 more.
        assert_eq!(
            latent.parameter_count(),
            Some(806_528 - 64 * 128 + 4 * 2_048)
        );
        let model = LanguageModel::<f32>::new(latent, 1).unwrap();
        assert_eq!(model.parameter_count(), latent.parameter_count().unwrap());
        let e = |c: LmConfig| LanguageModel::<f32>::new(c, 0).unwrap_err().to_string();
        let learned = LmConfig {
            positions: Positions::Learned,
            ..latent
        };
        assert!(e(learned).contains("rotary"));
        assert!(e(LmConfig {
            kv_heads: 2,
            ..latent
        })
        .contains("kv_heads"));
        let odd = LmConfig {
            latent: Some(LatentSizes { d_c: 64, d_r: 3 }),
            ..latent
        };
        assert!(e(odd).contains("d_r"));
        let empty = LmConfig {
            latent: Some(LatentSizes { d_c: 0, d_r: 16 }),
            ..latent
        };
        assert!(e(empty).contains("d_c"));
        let sinks = model.new_cache_forgetting(crate::lm::Forgetting::Sinks {
            sinks: 4,
            window: 60,
        });
        assert!(sinks.unwrap_err().to_string().contains("sinks"));
    }
}
