//! A Vision Transformer (Dosovitskiy et al., 2021) sized for the 8×8
//! digits: the image cut into square patches, each patch's pixels a row
//! that a linear layer embeds, a learned `[CLS]` vector in front, positions
//! (learned, learned as row plus column, or none), chapter 10's pre-norm
//! blocks with no mask (every patch sees every patch), and a classifier on
//! `[CLS]`'s final vector.
//!
//! | step | shape (`B` images of `P` patches of `p×p` pixels, width `d`) |
//! | --- | --- |
//! | patches, pixels scaled to `[0, 1]` | `BP×p²` |
//! | patch embedding `X W_E + b_E` | `BP×d` |
//! | `[CLS]` in front, positions added | `B(P+1)×d` |
//! | `L` pre-norm blocks, no mask | `B(P+1)×d` |
//! | `[CLS]`'s rows, final LayerNorm, classifier | `B×10` |

use ndarray::{Array1, Array2, ArrayRef2, Axis};
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

use super::patches::patches_of;
use super::{CLASSES, PIXELS, SIDE};
use crate::check::{check_nonzero, check_total, MAX_ENTRIES, MAX_PARAMETERS};
use crate::decoder::EPS;
use crate::error::AttnError;
use crate::grad::normal_weights as normal;
use crate::linalg::{linear, linear_backward, LinearWeights};
use crate::nn::{
    check_d_logits, check_finite_parameters, check_same_model, fingerprint, flat, flat_mut,
    kept_weights, layer_norm_backward, layer_norm_forward, Activation, AttentionWeights,
    BlockAttention, BlockCache, Heads, LayerNormCache, NormWeights, Parameters, PreNormBlock,
};
use crate::real::Real;

/// How a patch's place enters the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PatchPositions {
    /// None: the blocks see a set of patches, not a grid.
    None,
    /// A learned vector for each of the `P + 1` places, `[CLS]`'s first.
    Learned,
    /// A learned vector for each row of patches plus one for each column.
    RowColumn,
}

/// A Vision Transformer's sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VitConfig {
    /// Pixels a side of a patch: a divisor of 8.
    pub patch: usize,
    /// The width of every vector.
    pub d_model: usize,
    /// Heads of each block's attention, a divisor of `d_model`.
    pub heads: usize,
    /// Blocks.
    pub layers: usize,
    /// The FFN's hidden width.
    pub d_ff: usize,
    /// How patches' places enter.
    pub positions: PatchPositions,
}

impl VitConfig {
    /// Patches a side of the image.
    pub fn grid(&self) -> usize {
        SIDE / self.patch.max(1)
    }

    /// Patches an image: the tokens the blocks see, besides `[CLS]`.
    pub fn patches(&self) -> usize {
        self.grid() * self.grid()
    }

    /// Checks the sizes: at least 1, the patch dividing 8, the heads `d`,
    /// and the parameters' count bounded.
    pub fn check(&self) -> Result<(), AttnError> {
        let VitConfig { patch, d_model, heads, layers, d_ff, .. } = *self;
        let sizes = [
            ("patch", patch),
            ("d_model", d_model),
            ("heads", heads),
            ("layers", layers),
            ("d_ff", d_ff),
        ];
        check_nonzero(&sizes)?;
        if !SIDE.is_multiple_of(patch) {
            return Err(AttnError::InvalidArgument {
                name: "patch",
                value: patch as f64,
                requirement: "must divide the image's side, 8: 1, 2, 4 or 8",
            });
        }
        if !d_model.is_multiple_of(heads) {
            return Err(AttnError::HeadsDoNotDivide { d_model, h: heads });
        }
        // Per block: 4d² + 2d·d_ff, and 4d + d_ff + d of LayerNorms and biases.
        let block =
            [4usize.saturating_mul(d_model).saturating_add(2usize.saturating_mul(d_ff)), d_model];
        check_total("the parameters of a block", &block, MAX_PARAMETERS)?;
        check_total("the parameters", &[layers, block[0] * block[1]], MAX_PARAMETERS)?;
        Ok(())
    }
}

/// A Vision Transformer over the digits, in `f32` unless said.
#[derive(Debug, Clone, PartialEq)]
pub struct Vit<F: Real = f32> {
    config: VitConfig,
    /// `W_E` (`p² × d`) and `b_E`.
    patch: LinearWeights<F>,
    /// `[CLS]`'s vector, `1×d`.
    cls: Array2<F>,
    /// `(P + 1) × d` learned, `2·grid × d` rows then columns, or `0×d`.
    positions: Array2<F>,
    blocks: Vec<PreNormBlock<F>>,
    ln_f: NormWeights<F>,
    /// `d × 10`.
    head: LinearWeights<F>,
}

/// What the forward pass keeps for the backward pass.
pub struct VitForward<F> {
    logits: Array2<F>,
    fingerprint: u64, // of the model that ran it: backward checks it
    patches: Array2<F>,
    blocks: Vec<BlockCache<F>>,
    ln_f: LayerNormCache<F>,
    z: Array2<F>,
}

impl<F: Real> VitForward<F> {
    /// The logits, `B×10`: row `b` scores image `b`'s ten digits.
    pub fn logits(&self) -> &Array2<F> {
        &self.logits
    }

    /// What `head` of `block` attends to in `image`: its `(P+1)×(P+1)`
    /// weights, row and column 0 `[CLS]`, row and column `1 + j` patch `j`.
    pub fn weights(
        &self,
        block: usize,
        image: usize,
        head: usize,
    ) -> Result<&Array2<F>, AttnError> {
        kept_weights(&self.blocks, ("image", self.logits.nrows()), [block, image, head])
    }
}

impl<F: Real> Vit<F> {
    /// A fresh model: every matrix drawn with deviation `1/√fan-in`, the
    /// embeddings with 0.02, biases 0 and LayerNorms the identity.
    pub fn new(config: VitConfig, seed: u64) -> Result<Self, AttnError> {
        config.check()?;
        let mut rng = StdRng::seed_from_u64(seed);
        let (d, f, p2) = (config.d_model, config.d_ff, config.patch * config.patch);
        let by_fan_in = |rows: usize| 1.0 / (rows as f64).sqrt();
        let patch =
            LinearWeights { w: normal(&mut rng, p2, d, by_fan_in(p2)), b: Array1::zeros(d) };
        let cls = normal(&mut rng, 1, d, 0.02);
        let positions = normal(&mut rng, config.position_places(), d, 0.02);
        let blocks = (0..config.layers)
            .map(|_| {
                let [w_q, w_k, w_v, w_o] = [0; 4].map(|_| normal(&mut rng, d, d, by_fan_in(d)));
                let attention = BlockAttention::Heads(AttentionWeights::new(w_q, w_k, w_v, w_o));
                let ffn =
                    (normal(&mut rng, d, f, by_fan_in(d)), normal(&mut rng, f, d, by_fan_in(f)));
                PreNormBlock::fresh(d, attention, ffn)
            })
            .collect();
        let head = LinearWeights {
            w: normal(&mut rng, d, CLASSES, by_fan_in(d)),
            b: Array1::zeros(CLASSES),
        };
        Ok(Vit { config, patch, cls, positions, blocks, ln_f: NormWeights::identity(d), head })
    }

    /// The model's sizes.
    pub fn config(&self) -> VitConfig {
        self.config
    }

    /// The rows of `positions` that place `place` adds (`[CLS]` is place
    /// 0, patch `j` place `1 + j`): its own row, its patch's grid row and
    /// grid column, or none.
    fn position_rows(&self, place: usize) -> Vec<usize> {
        let g = self.config.grid();
        match self.config.positions {
            PatchPositions::Learned => vec![place],
            PatchPositions::RowColumn if place > 0 => vec![(place - 1) / g, g + (place - 1) % g],
            PatchPositions::RowColumn | PatchPositions::None => vec![],
        }
    }

    /// The position vector place `place` receives (the sum of its rows of
    /// the table), in `f64`.
    pub(crate) fn position_of(&self, place: usize) -> Vec<f64> {
        let mut v = vec![0.0; self.config.d_model];
        for r in self.position_rows(place) {
            v.iter_mut().zip(self.positions.row(r)).for_each(|(a, &x)| *a += x.wide());
        }
        v
    }

    /// How every block's heads attend: over the `P + 1` tokens of an image.
    fn heads(&self) -> Heads {
        let t = self.config.patches() + 1;
        Heads::new(t, t, self.config.heads)
    }

    // ANCHOR: forward
    /// The forward pass over `images`: their logits, and what the backward
    /// pass needs.
    pub fn forward(&self, images: &[[u8; PIXELS]]) -> Result<VitForward<F>, AttnError> {
        let c = self.config;
        let (b, t) = (images.len(), c.patches() + 1);
        check_nonzero(&[("images", b)])?;
        let patches = patches_of(images, c.patch)?; // B·P × p²
        check_finite_parameters(self)?;
        check_total("the vectors of a block", &[b, t, c.d_ff.max(c.d_model)], MAX_ENTRIES)?;
        check_total("the attention weights of a block", &[b, c.heads, t, t], MAX_ENTRIES)?;
        let e = linear("the patch embeddings", &patches, &self.patch.w, Some(&self.patch.b))?;
        let mut x = Array2::zeros((b * t, c.d_model)); // B·(P+1) × d
        for i in 0..b {
            x.row_mut(i * t).assign(&self.cls.row(0));
            for j in 1..t {
                x.row_mut(i * t + j).assign(&e.row(i * (t - 1) + j - 1));
            }
            for j in 0..t {
                for r in self.position_rows(j) {
                    x.row_mut(i * t + j).scaled_add(F::one(), &self.positions.row(r));
                }
            }
        }
        let (eps, everything) = (F::of(EPS), |_: usize| Array2::from_elem((t, t), true));
        let mut caches = Vec::with_capacity(c.layers);
        for block in &self.blocks {
            let (out, cache) =
                block.forward(&x, self.heads(), everything, Activation::GeluErf, eps)?;
            x = out;
            caches.push(cache);
        }
        let cls_rows: Vec<usize> = (0..b).map(|i| i * t).collect();
        let cls = x.select(Axis(0), &cls_rows); // B×d
        let (z, ln_f) = layer_norm_forward(&cls, &self.ln_f.gamma, &self.ln_f.beta, eps)?;
        let logits = linear("the logits", &z, &self.head.w, Some(&self.head.b))?;
        let fingerprint = fingerprint(self, self.config);
        Ok(VitForward { logits, fingerprint, patches, blocks: caches, ln_f, z })
    }
    // ANCHOR_END: forward

    /// The backward pass: every parameter's gradient given `dL/dlogits`,
    /// as a model of the same shape.
    pub fn backward(
        &self,
        fwd: &VitForward<F>,
        d_logits: &ArrayRef2<F>,
    ) -> Result<Vit<F>, AttnError> {
        let c = self.config;
        check_same_model(fwd.fingerprint, self, self.config)?;
        check_d_logits(d_logits, fwd.logits.dim())?;
        let (b, t) = (fwd.logits.nrows(), c.patches() + 1);
        let mut g = self.zeros_like();
        let (dz, head) = linear_backward(&fwd.z, &self.head.w, d_logits)?;
        let (d_cls, ln_f) = layer_norm_backward(&fwd.ln_f, &self.ln_f.gamma, &dz)?;
        (g.head, g.ln_f) = (head, ln_f);
        // Only [CLS]'s rows reach the classifier.
        let mut dx = Array2::zeros((b * t, c.d_model));
        for i in 0..b {
            dx.row_mut(i * t).assign(&d_cls.row(i));
        }
        for (l, (block, cache)) in self.blocks.iter().zip(&fwd.blocks).enumerate().rev() {
            (dx, g.blocks[l]) = block.backward(cache, self.heads(), Activation::GeluErf, &dx)?;
        }
        let mut d_e = Array2::zeros((b * (t - 1), c.d_model));
        for i in 0..b {
            g.cls.row_mut(0).scaled_add(F::one(), &dx.row(i * t));
            for j in 0..t {
                let row = dx.row(i * t + j);
                for r in self.position_rows(j) {
                    g.positions.row_mut(r).scaled_add(F::one(), &row);
                }
                if j > 0 {
                    d_e.row_mut(i * (t - 1) + j - 1).assign(&row);
                }
            }
        }
        let (_, patch) = linear_backward(&fwd.patches, &self.patch.w, &d_e)?;
        g.patch = patch;
        Ok(g)
    }

    /// A model of the same shape, every parameter 0.
    pub fn zeros_like(&self) -> Self {
        crate::nn::zeroed(self)
    }

    fn tensors(&self) -> Vec<(String, &[F])> {
        let mut out = vec![
            ("patch.w".to_string(), flat(&self.patch.w)),
            ("patch.b".to_string(), flat(&self.patch.b)),
            ("cls".to_string(), flat(&self.cls)),
            ("positions".to_string(), flat(&self.positions)),
        ];
        for (l, b) in self.blocks.iter().enumerate() {
            out.extend(
                b.tensors(true).into_iter().map(|(name, x)| (format!("blocks.{l}.{name}"), x)),
            );
        }
        out.push(("ln_f.gamma".into(), flat(&self.ln_f.gamma)));
        out.push(("ln_f.beta".into(), flat(&self.ln_f.beta)));
        out.push(("head.w".into(), flat(&self.head.w)));
        out.push(("head.b".into(), flat(&self.head.b)));
        out
    }
}

impl<F: Real> Parameters for Vit<F> {
    type Real = F;

    fn slices(&self) -> Vec<&[F]> {
        self.tensors().into_iter().map(|(_, s)| s).collect()
    }

    fn slices_mut(&mut self) -> Vec<&mut [F]> {
        let mut out = vec![
            flat_mut(&mut self.patch.w),
            flat_mut(&mut self.patch.b),
            flat_mut(&mut self.cls),
            flat_mut(&mut self.positions),
        ];
        for b in &mut self.blocks {
            out.extend(b.tensors_mut(true));
        }
        out.push(flat_mut(&mut self.ln_f.gamma));
        out.push(flat_mut(&mut self.ln_f.beta));
        out.push(flat_mut(&mut self.head.w));
        out.push(flat_mut(&mut self.head.b));
        out
    }

    fn named_slices(&self) -> Vec<(String, &[F])> {
        self.tensors()
    }
}

#[cfg(test)]
mod tests;
