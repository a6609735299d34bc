//! A pretrained BERT-style encoder, run by the book's own layers (chapter 15).
//!
//! The model is sentence-transformers' `all-MiniLM-L6-v2`: the encoder of
//! chapter 10 with post-norm layers, learned positions and the exact GELU,
//! whose weights were trained by others on a billion sentence pairs. Nothing
//! here is new machinery: the embeddings are table lookups, every layer is an
//! [`EncoderLayer`] built from chapter 5's [`MultiHeadAttention`] (with
//! biases) and chapter 10's [`FeedForward`] and [`LayerNorm`], and padding
//! is chapter 6's key-padding mask.
//!
//! | step | shape |
//! | --- | --- |
//! | WordPiece token ids, `[CLS] … [SEP]` | `n` |
//! | word + position + token-type embeddings, LayerNorm | `n×d_model` |
//! | 6 encoder layers (12 heads, `d_ff = 1536`) | `n×d_model`, weights `h×n×n` per layer |
//! | mean over the real tokens, divided by its length | `d_model` |
//!
//! [`MultiHeadAttention`]: crate::multihead::MultiHeadAttention
//! [`FeedForward`]: crate::block::FeedForward

use ndarray::{s, Array1, Array2, Array3, ArrayRef1, ArrayRef2, Axis};

use crate::block::{EncoderLayer, LayerNorm};
use crate::check::{check_finite, check_not_empty};
use crate::error::AttnError;
use crate::masking::{key_padding_mask, Padding};
use crate::nn::embedding_forward;

mod heads;
mod load;
mod tokenize;

pub use heads::{
    ablations, embeddings, head_statistics, pair_similarities, unrelated_similarities, Ablation,
    HeadStatistics,
};
pub use load::{pytorch_linear, tensor_shapes, TensorShape};
pub use tokenize::{Tokens, WordPiece};

/// The token id of `[PAD]`, which fills a short sentence up to the length
/// of the longest in a batch.
pub const PAD: u32 = 0;

// ANCHOR: bert
/// A BERT-style encoder: embeddings, then post-norm encoder layers. The
/// fields are private: [`Bert::load`] checks that every table and layer is
/// `d_model` wide.
#[derive(Debug, Clone, PartialEq)]
pub struct Bert {
    word: Array2<f32>,         // vocabulary×d_model: one row per WordPiece token
    position: Array2<f32>,     // 512×d_model: one learned row per position
    token_type: Array2<f32>,   // 2×d_model: first or second sentence (always the first here)
    ln: LayerNorm,             // over the summed embeddings, ε = 1e-12
    layers: Vec<EncoderLayer>, // post-norm, exact GELU
}
// ANCHOR_END: bert

/// What [`Bert::encode`] returns.
#[derive(Debug, Clone, PartialEq)]
pub struct Encoded {
    /// The last layer's output, `n×d_model`.
    pub hidden: Array2<f32>,
    /// Every layer's attention weights, `h×n×n` each, first layer first.
    pub weights: Vec<Array3<f32>>,
}

impl Bert {
    // ANCHOR: embed
    /// The input of the first layer for token ids `ids` (`n` of them):
    /// `LayerNorm(word[id_i] + position[i] + token_type[0])`, `n×d_model`.
    pub fn embed(&self, ids: &[u32]) -> Result<Array2<f32>, AttnError> {
        self.check_ids(ids)?;
        let tokens = [ids.iter().map(|&id| id as usize).collect()]; // one sequence
        let x = embedding_forward(&tokens, &self.word, &self.position); // as chapter 12's model
        self.ln.forward(&(x + self.token_type.row(0)))
    }
    // ANCHOR_END: embed

    // ANCHOR: encode
    /// Runs the encoder over `ids`, of which the first `len` are a sentence
    /// and the rest padding: no query attends to a padding key (chapter 6's
    /// key-padding mask, shared by every head and layer).
    pub fn encode_padded(&self, ids: &[u32], len: usize) -> Result<Encoded, AttnError> {
        let n = ids.len();
        let keep = key_padding_mask(n, len, n, Padding::Right)?; // n×n
        let mut x = self.embed(ids)?; // n×d_model
        let mut weights = Vec::with_capacity(self.layers.len());
        for layer in &self.layers {
            let (output, w) = layer.forward_masked(&x, &keep)?; // n×d_model, h×n×n
            x = output;
            weights.push(w);
        }
        Ok(Encoded { hidden: x, weights })
    }

    /// Runs the encoder over one sentence's ids, with no padding.
    pub fn encode(&self, ids: &[u32]) -> Result<Encoded, AttnError> {
        self.encode_padded(ids, ids.len())
    }
    // ANCHOR_END: encode

    // ANCHOR: sentence_embeddings
    /// The sentence embeddings of a batch of tokenised sentences, `b×d_model`:
    /// each sentence is padded with [`PAD`] to the longest, encoded, and its
    /// real tokens' outputs are averaged and scaled to length 1.
    pub fn sentence_embeddings(&self, batch: &[Vec<u32>]) -> Result<Array2<f32>, AttnError> {
        check_not_empty("the batch", (batch.len(), 1))?;
        let longest = batch.iter().map(Vec::len).max().unwrap_or(0);
        let mut embeddings = Array2::zeros((batch.len(), self.d_model()));
        for (ids, mut row) in batch.iter().zip(embeddings.rows_mut()) {
            let mut padded = ids.clone();
            padded.resize(longest, PAD);
            let hidden = self.encode_padded(&padded, ids.len())?.hidden; // longest×d_model
            row.assign(&l2_normalize(&mean_pool(&hidden, ids.len())?)?);
        }
        Ok(embeddings)
    }
    // ANCHOR_END: sentence_embeddings

    /// The sentence embedding of one tokenised sentence, `d_model`.
    pub fn sentence_embedding(&self, ids: &[u32]) -> Result<Array1<f32>, AttnError> {
        let hidden = self.encode(ids)?.hidden;
        l2_normalize(&mean_pool(&hidden, ids.len())?)
    }

    /// The same model with head `head` of layer `layer` (both counted from
    /// 0) removed, as [`crate::multihead::MultiHeadAttention::without_head`]
    /// does.
    pub fn without_head(&self, layer: usize, head: usize) -> Result<Bert, AttnError> {
        let Some(l) = self.layers.get(layer) else {
            return Err(AttnError::OutOfRange {
                name: "layer",
                value: layer,
                requirement: "must be less than the number of layers",
                limit: self.layers.len(),
            });
        };
        let [ln1, ln2] = l.layer_norms();
        let ablated = EncoderLayer::from_parts(
            l.attention().without_head(head)?,
            l.ffn().clone(),
            [ln1.clone(), ln2.clone()],
            l.norm(),
        )?;
        let mut model = self.clone();
        model.layers[layer] = ablated;
        Ok(model)
    }

    /// Token width.
    pub fn d_model(&self) -> usize {
        self.word.ncols()
    }

    /// The encoder layers, first first.
    pub fn layers(&self) -> &[EncoderLayer] {
        &self.layers
    }

    /// Heads per layer.
    pub fn h(&self) -> usize {
        self.layers.first().map_or(0, |l| l.attention().h())
    }

    /// The size of the vocabulary.
    pub fn vocabulary(&self) -> usize {
        self.word.nrows()
    }

    /// The longest sequence the learned positions cover.
    pub fn max_positions(&self) -> usize {
        self.position.nrows()
    }

    /// Every parameter: the three embedding tables, their LayerNorm, and
    /// each layer's attention (with biases), FFN and two LayerNorms.
    pub fn parameter_count(&self) -> usize {
        let d = self.d_model();
        let tables = self.word.len() + self.position.len() + self.token_type.len();
        let layer = |l: &EncoderLayer| l.attention().parameters() + l.ffn().parameters() + 4 * d;
        tables + 2 * d + self.layers.iter().map(layer).sum::<usize>()
    }

    /// Checks that there are between 1 and the model's positions ids, each
    /// in the vocabulary.
    fn check_ids(&self, ids: &[u32]) -> Result<(), AttnError> {
        check_not_empty("the token ids", (ids.len(), 1))?;
        if ids.len() > self.max_positions() {
            let (len, max) = (ids.len(), self.max_positions());
            return Err(AttnError::TooLong { what: "the token ids", len, max });
        }
        match ids.iter().find(|&&id| id as usize >= self.vocabulary()) {
            Some(&id) => Err(AttnError::OutOfRange {
                name: "token id",
                value: id as usize,
                requirement: "must be less than the vocabulary size",
                limit: self.vocabulary(),
            }),
            None => Ok(()),
        }
    }
}

// ANCHOR: pool
/// The mean of the first `len` rows of `hidden` (`n×d_model`): the sentence's
/// real tokens, without the padding after them.
pub fn mean_pool(hidden: &ArrayRef2<f32>, len: usize) -> Result<Array1<f32>, AttnError> {
    if len == 0 || len > hidden.nrows() {
        return Err(AttnError::OutOfRange {
            name: "len",
            value: len,
            requirement: "must be at least 1 and at most the number of rows",
            limit: hidden.nrows(),
        });
    }
    check_finite("hidden", hidden)?;
    let real = hidden.slice(s![..len, ..]).mapv(f64::from); // f64: a sum of f32s can overflow
    Ok((real.sum_axis(Axis(0)) / len as f64).mapv(|x| x as f32))
}

/// `v / ‖v‖`, the direction of `v`; only a zero vector gives zeros. The
/// length is summed in `f64`, where the square of any `f32` is finite and
/// nonzero.
pub fn l2_normalize(v: &ArrayRef1<f32>) -> Result<Array1<f32>, AttnError> {
    direction("v", v)
}

/// [`l2_normalize`], naming the vector in its error.
fn direction(name: &'static str, v: &ArrayRef1<f32>) -> Result<Array1<f32>, AttnError> {
    check_finite(name, &v.view().insert_axis(Axis(0)))?;
    let norm = v.iter().map(|&x| f64::from(x).powi(2)).sum::<f64>().sqrt();
    if norm == 0.0 {
        return Ok(Array1::zeros(v.len()));
    }
    Ok(v.mapv(|x| (f64::from(x) / norm) as f32))
}
// ANCHOR_END: pool

/// The cosine of the angle between `a` and `b`: their dot product over the
/// product of their lengths (`0` if either is zero); both must be finite.
pub fn cosine(a: &ArrayRef1<f32>, b: &ArrayRef1<f32>) -> Result<f32, AttnError> {
    if a.len() != b.len() {
        return Err(AttnError::ShapesDiffer {
            what: "the two vectors of a cosine",
            left: (1, a.len()),
            right: (1, b.len()),
        });
    }
    Ok(direction("a", a)?.dot(&direction("b", b)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn mean_pool_ignores_the_padding_rows() {
        let hidden = array![[1.0_f32, 2.0], [3.0, 4.0], [100.0, -100.0]];
        assert_eq!(mean_pool(&hidden, 2).unwrap(), array![2.0, 3.0]);
        assert!(mean_pool(&hidden, 0).is_err());
        assert!(mean_pool(&hidden, 4).is_err());
    }

    #[test]
    fn normalised_vectors_have_length_one_and_cosines_are_scale_free() {
        let v = l2_normalize(&array![3.0_f32, 4.0]).unwrap();
        assert_eq!(v, array![0.6, 0.8]);
        assert_eq!(l2_normalize(&array![0.0_f32, 0.0]).unwrap(), array![0.0, 0.0]);
        let c = cosine(&array![1.0_f32, 0.0], &array![5.0, 5.0]).unwrap();
        assert!((c - std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-6);
        assert!(cosine(&array![1.0_f32], &array![1.0, 2.0]).is_err());
    }
}
