//! Self- and cross-attention: queries, keys and values as learned linear
//! projections of token vectors.
//!
//! With token vectors as rows, `X_q` (`n×d_model`) supplies the queries and
//! `X_kv` (`m×d_model`) the keys and values:
//!
//! ```text
//! Q = X_q W_Q   (n×d_k)      W_Q: d_model×d_k
//! K = X_kv W_K  (m×d_k)      W_K: d_model×d_k
//! V = X_kv W_V  (m×d_v)      W_V: d_model×d_v
//! ```
//!
//! Self-attention is `X_q = X_kv = X`; cross-attention takes the queries from
//! one sequence (a decoder's) and keys and values from another (an encoder's).

use ndarray::{Array2, ArrayRef2};
use ndarray_rand::rand::rngs::StdRng;
use ndarray_rand::rand_distr::Normal;
use ndarray_rand::RandomExt;

use crate::attention::{scaled_dot_product_attention, Attention};
use crate::check::{check_finite, check_model_width, check_not_empty, check_size};
use crate::error::AttnError;
use crate::linalg::linear;

// ANCHOR: projections
/// The three learned matrices of one attention layer (one head). Private,
/// so that their shapes always fit: [`Projections::new`] and
/// [`Projections::from_weights`] check them, [`Projections::weights`] reads.
#[derive(Debug, Clone, PartialEq)]
pub struct Projections {
    w_q: Array2<f32>, // d_model×d_k: token vector → query
    w_k: Array2<f32>, // d_model×d_k: token vector → key
    w_v: Array2<f32>, // d_model×d_v: token vector → value
}
// ANCHOR_END: projections

// ANCHOR: init
/// A `rows×cols` weight matrix with entries drawn from `N(0, 1/rows)`.
///
/// With `rows = d_model` inputs per output, an input with unit-variance
/// entries gives outputs with variance `d_model · (1/d_model) = 1`, so
/// queries and keys start with unit-variance entries: the case chapter 3
/// analysed, where `q·k/√d_k` has variance 1.
pub fn init_weight(rows: usize, cols: usize, rng: &mut StdRng) -> Result<Array2<f32>, AttnError> {
    check_not_empty("weight matrix", (rows, cols))?;
    check_size("weight matrix", rows, cols)?;
    let std = 1.0 / (rows as f32).sqrt(); // positive and finite: rows ≥ 1
    let normal = Normal::new(0.0, std).map_err(|_| AttnError::InvalidArgument {
        name: "rows",
        value: rows as f64,
        requirement: "must give a finite standard deviation 1/√rows",
    })?;
    Ok(Array2::random_using((rows, cols), normal, rng))
}
// ANCHOR_END: init

impl Projections {
    /// Fresh projections for `d_model`-wide tokens, seeded by `rng`.
    pub fn new(
        d_model: usize,
        d_k: usize,
        d_v: usize,
        rng: &mut StdRng,
    ) -> Result<Self, AttnError> {
        Ok(Projections {
            w_q: init_weight(d_model, d_k, rng)?,
            w_k: init_weight(d_model, d_k, rng)?,
            w_v: init_weight(d_model, d_v, rng)?,
        })
    }

    /// Projections from given weights: `W_Q`, `W_K` (`d_model×d_k`) and
    /// `W_V` (`d_model×d_v`), non-empty and finite.
    pub fn from_weights(
        w_q: Array2<f32>,
        w_k: Array2<f32>,
        w_v: Array2<f32>,
    ) -> Result<Self, AttnError> {
        check_not_empty("W_Q", w_q.dim())?;
        check_not_empty("W_V", w_v.dim())?;
        if w_k.dim() != w_q.dim() || w_v.nrows() != w_q.nrows() {
            let (left, right) = match w_k.dim() != w_q.dim() {
                true => (w_q.dim(), w_k.dim()),
                false => ((w_q.nrows(), w_v.ncols()), w_v.dim()),
            };
            return Err(AttnError::ShapesDiffer {
                what: "W_Q and W_K (d_model×d_k), and W_V's d_model rows",
                left,
                right,
            });
        }
        for (name, w) in [("W_Q", &w_q), ("W_K", &w_k), ("W_V", &w_v)] {
            check_finite(name, w)?;
        }
        Ok(Projections { w_q, w_k, w_v })
    }

    /// `[W_Q, W_K, W_V]`.
    pub fn weights(&self) -> [&Array2<f32>; 3] {
        [&self.w_q, &self.w_k, &self.w_v]
    }

    /// The token width `d_model` these projections expect.
    pub fn d_model(&self) -> usize {
        self.w_q.nrows()
    }

    fn check_width(&self, name: &'static str, x: &ArrayRef2<f32>) -> Result<(), AttnError> {
        check_model_width(name, x, self.d_model())
    }

    // ANCHOR: attend
    /// Attention with queries from `x_q` (`n×d_model`) and keys and values
    /// from `x_kv` (`m×d_model`): `softmax(X_q W_Q (X_kv W_K)ᵀ / √d_k) X_kv W_V`.
    pub fn attend(
        &self,
        x_q: &ArrayRef2<f32>,
        x_kv: &ArrayRef2<f32>,
    ) -> Result<Attention, AttnError> {
        self.check_width("query input", x_q)?;
        self.check_width("key/value input", x_kv)?;
        let q = linear("the queries X_q W_Q", x_q, &self.w_q, None)?; // n×d_k
        let k = linear("the keys X_kv W_K", x_kv, &self.w_k, None)?; // m×d_k
        let v = linear("the values X_kv W_V", x_kv, &self.w_v, None)?; // m×d_v
        scaled_dot_product_attention(&q, &k, &v)
    }

    /// Self-attention: every token of `x` (`n×d_model`) attends to all of `x`.
    pub fn self_attention(&self, x: &ArrayRef2<f32>) -> Result<Attention, AttnError> {
        self.attend(x, x)
    }

    /// Cross-attention: each of the `n` decoder tokens attends to the `m`
    /// encoder tokens.
    pub fn cross_attention(
        &self,
        decoder: &ArrayRef2<f32>,
        encoder: &ArrayRef2<f32>,
    ) -> Result<Attention, AttnError> {
        self.attend(decoder, encoder)
    }
    // ANCHOR_END: attend
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scaling::standard_normal;
    use ndarray_rand::rand::SeedableRng;

    // ANCHOR: shape_test
    #[test]
    fn shapes_of_self_and_cross_attention() {
        let mut rng = StdRng::seed_from_u64(3);
        let p = Projections::new(16, 8, 4, &mut rng).unwrap();
        let enc = standard_normal(7, 16, &mut rng);
        let dec = standard_normal(5, 16, &mut rng);
        let s = p.self_attention(&enc).unwrap();
        assert_eq!((s.weights.dim(), s.output.dim()), ((7, 7), (7, 4)));
        let c = p.cross_attention(&dec, &enc).unwrap();
        assert_eq!((c.weights.dim(), c.output.dim()), ((5, 7), (5, 4)));
    }
    // ANCHOR_END: shape_test

    #[test]
    fn attend_is_attention_of_the_projections() {
        let mut rng = StdRng::seed_from_u64(4);
        let p = Projections::new(6, 3, 2, &mut rng).unwrap();
        let x = standard_normal(4, 6, &mut rng);
        let by_hand = scaled_dot_product_attention(&x.dot(&p.w_q), &x.dot(&p.w_k), &x.dot(&p.w_v));
        assert_eq!(p.self_attention(&x).unwrap(), by_hand.unwrap());
    }

    #[test]
    fn wrong_token_width_names_the_shapes() {
        let mut rng = StdRng::seed_from_u64(5);
        let p = Projections::new(16, 8, 8, &mut rng).unwrap();
        let dec = standard_normal(5, 16, &mut rng);
        let enc = standard_normal(7, 12, &mut rng);
        let err = p.cross_attention(&dec, &enc).unwrap_err();
        assert_eq!(
            err.to_string(),
            "key/value input has rows of width 12 but the layer expects d_model = 16 (shape 7×12)"
        );
    }

    #[test]
    fn init_has_the_stated_standard_deviation() {
        let mut rng = StdRng::seed_from_u64(6);
        let w = init_weight(256, 256, &mut rng).unwrap();
        let var = w.iter().map(|&x| (x as f64).powi(2)).sum::<f64>() / w.len() as f64;
        assert!((var * 256.0 - 1.0).abs() < 0.02, "variance × d_model = {}", var * 256.0);
    }
}
