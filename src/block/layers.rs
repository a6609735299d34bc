//! Encoder and decoder layers built from the block's pieces, and the
//! encoder-decoder stack of the original Transformer (chapter 10).

use ndarray::{Array2, Array3, ArrayRef2};
use ndarray_rand::rand::rngs::StdRng;

use super::{residual, Activation, FeedForward, LayerNorm, Norm};
use crate::check::{check_model_width, check_parameters};
use crate::error::AttnError;
use crate::masking::causal_mask;
use crate::multihead::MultiHeadAttention;

/// The sizes of a Transformer block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// Token width.
    pub d_model: usize,
    /// Heads per attention layer.
    pub h: usize,
    /// Hidden width of the FFN (4·d_model in the paper).
    pub d_ff: usize,
    /// FFN non-linearity.
    pub activation: Activation,
    /// Placement of the LayerNorms.
    pub norm: Norm,
}

/// The configuration chapter 10's example follows: small enough to print,
/// shaped like the paper's base model (`d_ff = 4·d_model`, ReLU, post-norm).
pub const CHAPTER_CONFIG: Config =
    Config { d_model: 64, h: 4, d_ff: 256, activation: Activation::Relu, norm: Norm::Post };

// ANCHOR: encoder_layer
/// An encoder layer: self-attention, then the FFN, each a residual
/// sub-layer.
#[derive(Debug, Clone, PartialEq)]
pub struct EncoderLayer {
    attention: MultiHeadAttention, // self-attention over the input
    ffn: FeedForward,              // the position-wise network
    ln1: LayerNorm,                // normalisation of the attention sub-layer
    ln2: LayerNorm,                // normalisation of the FFN sub-layer
    norm: Norm,                    // post- or pre-norm
}

impl EncoderLayer {
    /// A freshly initialised layer.
    pub fn new(c: Config, rng: &mut StdRng) -> Result<Self, AttnError> {
        Ok(EncoderLayer {
            attention: MultiHeadAttention::new(c.d_model, c.h, rng)?,
            ffn: FeedForward::new(c.d_model, c.d_ff, c.activation, rng)?,
            ln1: LayerNorm::new(c.d_model),
            ln2: LayerNorm::new(c.d_model),
            norm: c.norm,
        })
    }

    /// `x` (`n×d_model`) → `n×d_model`.
    pub fn forward(&self, x: &ArrayRef2<f32>) -> Result<Array2<f32>, AttnError> {
        let x = residual(x, &self.ln1, self.norm, |x| Ok(self.attention.forward(x, x)?.output))?;
        residual(&x, &self.ln2, self.norm, |x| self.ffn.forward(x))
    }
}
// ANCHOR_END: encoder_layer

impl EncoderLayer {
    /// A layer from given parts, which must all have the same width.
    pub fn from_parts(
        attention: MultiHeadAttention,
        ffn: FeedForward,
        [ln1, ln2]: [LayerNorm; 2],
        norm: Norm,
    ) -> Result<Self, AttnError> {
        check_widths(attention.d_model(), &[ffn.d_model(), ln1.d_model(), ln2.d_model()])?;
        Ok(EncoderLayer { attention, ffn, ln1, ln2, norm })
    }

    // ANCHOR: forward_masked
    /// [`Self::forward`] with a mask on the self-attention: `keep` is `n×n`
    /// (a key-padding mask, say, chapter 6). Returns the output, `n×d_model`,
    /// and the attention weights of every head, `h×n×n`.
    pub fn forward_masked(
        &self,
        x: &ArrayRef2<f32>,
        keep: &ArrayRef2<bool>,
    ) -> Result<(Array2<f32>, Array3<f32>), AttnError> {
        let mut weights = Array3::zeros((0, 0, 0));
        let x = residual(x, &self.ln1, self.norm, |x| {
            let attended = self.attention.forward_masked(x, x, keep)?;
            weights = attended.weights;
            Ok(attended.output)
        })?;
        let output = residual(&x, &self.ln2, self.norm, |x| self.ffn.forward(x))?;
        Ok((output, weights))
    }
    // ANCHOR_END: forward_masked

    /// The self-attention sub-layer.
    pub fn attention(&self) -> &MultiHeadAttention {
        &self.attention
    }

    /// The feed-forward sub-layer.
    pub fn ffn(&self) -> &FeedForward {
        &self.ffn
    }

    /// The normalisations of the attention and the FFN sub-layers.
    pub fn layer_norms(&self) -> [&LayerNorm; 2] {
        [&self.ln1, &self.ln2]
    }

    /// Post- or pre-norm.
    pub fn norm(&self) -> Norm {
        self.norm
    }
}

/// Checks that every part of a layer is `d_model` wide.
fn check_widths(d_model: usize, widths: &[usize]) -> Result<(), AttnError> {
    match widths.iter().find(|&&w| w != d_model) {
        Some(&w) => Err(AttnError::ShapesDiffer {
            what: "the attention's d_model and every other part's",
            left: (1, d_model),
            right: (1, w),
        }),
        None => Ok(()),
    }
}

// ANCHOR: decoder_layer
/// A decoder layer: masked (causal) self-attention, cross-attention over the
/// encoder's output, then the FFN; three residual sub-layers.
#[derive(Debug, Clone, PartialEq)]
pub struct DecoderLayer {
    self_attention: MultiHeadAttention, // causal, over the decoder's input
    cross_attention: MultiHeadAttention, // queries from the decoder, keys and values from the encoder
    ffn: FeedForward,                    // the position-wise network
    ln: [LayerNorm; 3],                  // one normalisation per sub-layer
    norm: Norm,                          // post- or pre-norm
}

impl DecoderLayer {
    /// A freshly initialised layer.
    pub fn new(c: Config, rng: &mut StdRng) -> Result<Self, AttnError> {
        Ok(DecoderLayer {
            self_attention: MultiHeadAttention::new(c.d_model, c.h, rng)?,
            cross_attention: MultiHeadAttention::new(c.d_model, c.h, rng)?,
            ffn: FeedForward::new(c.d_model, c.d_ff, c.activation, rng)?,
            ln: [0, 1, 2].map(|_| LayerNorm::new(c.d_model)),
            norm: c.norm,
        })
    }

    /// `y` (`n×d_model`, the decoder's tokens) and `memory` (`m×d_model`, the
    /// encoder's output) → `n×d_model`.
    pub fn forward(
        &self,
        y: &ArrayRef2<f32>,
        memory: &ArrayRef2<f32>,
    ) -> Result<Array2<f32>, AttnError> {
        let causal = causal_mask(y.nrows(), y.nrows());
        let y = residual(y, &self.ln[0], self.norm, |y| {
            Ok(self.self_attention.forward_masked(y, y, &causal)?.output)
        })?;
        let y = residual(&y, &self.ln[1], self.norm, |y| {
            Ok(self.cross_attention.forward(y, memory)?.output)
        })?;
        residual(&y, &self.ln[2], self.norm, |y| self.ffn.forward(y))
    }
}
// ANCHOR_END: decoder_layer

impl DecoderLayer {
    /// A layer from given parts, which must all have the same width.
    pub fn from_parts(
        self_attention: MultiHeadAttention,
        cross_attention: MultiHeadAttention,
        ffn: FeedForward,
        ln: [LayerNorm; 3],
        norm: Norm,
    ) -> Result<Self, AttnError> {
        let widths = [
            cross_attention.d_model(),
            ffn.d_model(),
            ln[0].d_model(),
            ln[1].d_model(),
            ln[2].d_model(),
        ];
        check_widths(self_attention.d_model(), &widths)?;
        Ok(DecoderLayer { self_attention, cross_attention, ffn, ln, norm })
    }

    /// The causal self-attention sub-layer.
    pub fn self_attention(&self) -> &MultiHeadAttention {
        &self.self_attention
    }

    /// The cross-attention sub-layer.
    pub fn cross_attention(&self) -> &MultiHeadAttention {
        &self.cross_attention
    }

    /// The feed-forward sub-layer.
    pub fn ffn(&self) -> &FeedForward {
        &self.ffn
    }

    /// The normalisations of the three sub-layers.
    pub fn layer_norms(&self) -> &[LayerNorm; 3] {
        &self.ln
    }
}

// ANCHOR: stack
/// An encoder-decoder stack of `N` layers each, as in the original Transformer.
#[derive(Debug, Clone, PartialEq)]
pub struct Transformer {
    d_model: usize,
    encoder: Vec<EncoderLayer>,
    decoder: Vec<DecoderLayer>,
    encoder_ln: Option<LayerNorm>, // pre-norm closes each stack with a LayerNorm
    decoder_ln: Option<LayerNorm>,
}

impl Transformer {
    /// The encoder: source tokens `x` (`m×d_model`) → memory (`m×d_model`).
    pub fn encode(&self, x: &ArrayRef2<f32>) -> Result<Array2<f32>, AttnError> {
        check_model_width("source tokens", x, self.d_model)?; // also with no layers
        let mut x = x.to_owned(); // each layer returns a new one
        for layer in &self.encoder {
            x = layer.forward(&x)?;
        }
        match &self.encoder_ln {
            Some(ln) => ln.forward(&x),
            None => Ok(x),
        }
    }

    /// The decoder: target tokens `y` (`n×d_model`) attending to `memory`.
    pub fn decode(
        &self,
        y: &ArrayRef2<f32>,
        memory: &ArrayRef2<f32>,
    ) -> Result<Array2<f32>, AttnError> {
        check_model_width("target tokens", y, self.d_model)?; // also with no layers
        check_model_width("memory", memory, self.d_model)?;
        let mut y = y.to_owned(); // each layer returns a new one
        for layer in &self.decoder {
            y = layer.forward(&y, memory)?;
        }
        match &self.decoder_ln {
            Some(ln) => ln.forward(&y),
            None => Ok(y),
        }
    }
}
// ANCHOR_END: stack

impl Transformer {
    /// `layers` encoder and `layers` decoder layers of configuration `c`.
    pub fn new(c: Config, layers: usize, rng: &mut StdRng) -> Result<Self, AttnError> {
        // The weight matrices, as a whole: an encoder layer has one
        // attention (4·d²) and an FFN (2·d·d_ff), a decoder layer two and one.
        let (d, d_ff) = (c.d_model, c.d_ff);
        let matrices = (|| {
            let attention = d.checked_mul(d)?.checked_mul(4)?;
            let ffn = d.checked_mul(d_ff)?.checked_mul(2)?;
            let pair = attention.checked_mul(3)?.checked_add(ffn.checked_mul(2)?)?;
            pair.checked_mul(layers)
        })();
        check_parameters(matrices, [layers, d, d_ff])?;
        let final_ln = || (c.norm == Norm::Pre).then(|| LayerNorm::new(c.d_model));
        Ok(Transformer {
            d_model: c.d_model,
            encoder: (0..layers).map(|_| EncoderLayer::new(c, rng)).collect::<Result<_, _>>()?,
            decoder: (0..layers).map(|_| DecoderLayer::new(c, rng)).collect::<Result<_, _>>()?,
            encoder_ln: final_ln(),
            decoder_ln: final_ln(),
        })
    }
}

impl Transformer {
    /// The encoder's layers.
    pub fn encoder_layers(&self) -> &[EncoderLayer] {
        &self.encoder
    }

    /// The decoder's layers.
    pub fn decoder_layers(&self) -> &[DecoderLayer] {
        &self.decoder
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scaling::standard_normal;
    use approx::assert_abs_diff_eq;
    use ndarray::s;
    use ndarray_rand::rand::SeedableRng;

    // ANCHOR: shapes_test
    #[test]
    fn every_layer_keeps_the_shape_and_the_decoder_is_causal() {
        let mut rng = StdRng::seed_from_u64(8);
        for norm in [Norm::Post, Norm::Pre] {
            let c = Config { d_model: 16, h: 4, d_ff: 64, activation: Activation::Relu, norm };
            let model = Transformer::new(c, 2, &mut rng).unwrap();
            let (x, y) = (standard_normal(7, 16, &mut rng), standard_normal(5, 16, &mut rng));
            let memory = model.encode(&x).unwrap();
            assert_eq!(memory.dim(), (7, 16));
            let out = model.decode(&y, &memory).unwrap();
            assert_eq!(out.dim(), (5, 16));
            // Changing decoder token 3 changes no output before position 3.
            let mut y2 = y.clone();
            y2.row_mut(3).fill(9.0);
            let out2 = model.decode(&y2, &memory).unwrap();
            assert_abs_diff_eq!(out.slice(s![..3, ..]), out2.slice(s![..3, ..]), epsilon = 1e-5);
            assert!((&out.row(3) - &out2.row(3)).iter().any(|d| d.abs() > 1e-3));
        }
    }
    // ANCHOR_END: shapes_test

    #[test]
    fn widths_are_checked() {
        let mut rng = StdRng::seed_from_u64(1);
        let c =
            Config { d_model: 8, h: 2, d_ff: 16, activation: Activation::Gelu, norm: Norm::Pre };
        let layer = EncoderLayer::new(c, &mut rng).unwrap();
        let err = layer.forward(&Array2::zeros((3, 6))).unwrap_err();
        assert_eq!(
            err.to_string(),
            "LayerNorm input has rows of width 6 but the layer expects d_model = 8 (shape 3×6)"
        );
    }
}
