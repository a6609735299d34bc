//! Chapter 5's experiment: a sentence's random embeddings, and each head's
//! mean entropy.

use attn::error::AttnError;
use attn::multihead::MultiHeadAttention;
use attn::scaling::{entropy, standard_normal};
use ndarray::{Array2, ArrayRef3, ArrayView2};
use ndarray_rand::rand::rngs::StdRng;

/// The original Transformer's base model (Vaswani et al., 2017), whose
/// attention layer the chapter's exercise and quiz count: its width
/// `d_model`.
pub const BASE_D_MODEL: usize = 512;

/// The base model's number of heads.
pub const BASE_HEADS: usize = 8;

/// The bug of dividing every head's scores by `√d_model` instead of
/// `√d_k`, applied to a copy of `layer`: its queries are rescaled by
/// `√(d_k/d_model)`, which is the same as the wrong divisor. At `h = 1`
/// the two divisors are equal and the copy is the layer.
pub fn scaled_by_sqrt_d_model(layer: &MultiHeadAttention) -> Result<MultiHeadAttention, AttnError> {
    let mut w = layer.weights().clone();
    let factor = (layer.d_k() as f32 / layer.d_model() as f32).sqrt();
    w.w_q.mapv_inplace(|x| x * factor);
    MultiHeadAttention::from_weights(w, layer.h())
}

/// Mean entropy (nats) of each head's rows of weights: `h` numbers, each
/// between 0 (every query looks at one key) and `ln m` (uniform).
pub fn head_entropies(weights: &ArrayRef3<f32>) -> Result<Vec<f64>, AttnError> {
    let (_, n, m) = weights.dim();
    if n == 0 || m == 0 {
        return Err(AttnError::Empty { name: "weights of each head (n×m)", shape: (n, m) });
    }
    if let Some(&bad) = weights.iter().find(|w| !(0.0..=1.0).contains(*w)) {
        return Err(AttnError::InvalidArgument {
            name: "attention weight",
            value: f64::from(bad),
            requirement: "must lie in [0, 1]",
        });
    }
    let mean_entropy = |head: ArrayView2<f32>| {
        head.rows().into_iter().map(|r| entropy(&r)).sum::<f64>() / n as f64
    };
    Ok(weights.outer_iter().map(mean_entropy).collect())
}

/// Random (seeded) `d_model`-wide embeddings for `words`: one `N(0, 1)`
/// vector per distinct lower-cased word, so "The" and "the" share a row.
/// A stand-in for a learned embedding table, with no position information.
pub fn embed_words(words: &[&str], d_model: usize, seed: u64) -> Array2<f32> {
    use ndarray_rand::rand::SeedableRng;
    let mut vocabulary: Vec<String> = words.iter().map(|w| w.to_lowercase()).collect();
    vocabulary.sort();
    vocabulary.dedup();
    let mut rng = StdRng::seed_from_u64(seed);
    let table = standard_normal(vocabulary.len(), d_model, &mut rng);
    let mut x = Array2::<f32>::zeros((words.len(), d_model));
    for (i, w) in words.iter().enumerate() {
        let id = vocabulary.binary_search(&w.to_lowercase()).expect("in the vocabulary");
        x.row_mut(i).assign(&table.row(id));
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;
    use attn::multihead::MultiHeadAttention;
    use ndarray::Array3;
    use ndarray_rand::rand::SeedableRng;

    #[test]
    fn entropies_lie_between_zero_and_ln_m() {
        let mut rng = StdRng::seed_from_u64(11);
        let mha = MultiHeadAttention::new(32, 4, &mut rng).unwrap();
        let (x_q, x_kv) = (standard_normal(5, 32, &mut rng), standard_normal(7, 32, &mut rng));
        let w = mha.forward(&x_q, &x_kv).unwrap().weights;
        for e in head_entropies(&w).unwrap() {
            assert!(e > 0.0 && e < 7f64.ln(), "{e}");
        }
        let uniform = Array3::from_elem((2, 3, 4), 0.25_f32);
        for e in head_entropies(&uniform).unwrap() {
            assert!((e - 4f64.ln()).abs() < 1e-6);
        }
    }

    #[test]
    fn equal_words_get_equal_embeddings() {
        let x = embed_words(&["The", "cat", "the"], 8, 1);
        assert_eq!(x.row(0), x.row(2));
        assert_ne!(x.row(0), x.row(1));
    }
}
