//! Converting instead of training: chapter 16's multi-head model turned
//! into grouped-query and multi-query models by mean-pooling its key/value
//! heads (exercise 1, in every block), as Ainslie et al. (2023) convert a
//! checkpoint, then trained a little more (`book/data/ch17-pooled.tsv`,
//! written by `cargo xtask train kv`).

use std::collections::HashMap;

use ndarray::Array2;

use attn::exercises::ch17::mean_pool_key_value_heads;
use attn::lm::{LanguageModel, LmConfig, LmTraining, SHAKESPEARE_TRAINING};
use attn::multihead::MultiHeadAttention;
use attn::nn::AttentionWeights;
use attn::nn::Parameters;
use attn::AttnError;

use crate::error::ReportError;
use crate::measurements::number;

/// The training that follows the conversion: 5% of chapter 16's steps, as
/// Ainslie et al. train theirs 5% more, warming up for a tenth of them.
pub const FINE_TUNING: LmTraining = LmTraining { steps: 100, warmup: 10, ..SHAKESPEARE_TRAINING };

/// The grouped-query model of `kv_heads` key/value heads made from the
/// multi-head `model`: in every block, exercise 1's
/// `mean_pool_key_value_heads`; every other tensor copied as it is.
pub fn mean_pooled(
    model: &LanguageModel<f32>,
    kv_heads: usize,
) -> Result<LanguageModel<f32>, ReportError> {
    let c = model.config();
    let mut pooled = LanguageModel::<f32>::new(LmConfig { kv_heads, ..c }, 0)?;
    let source: HashMap<String, &[f32]> = model.named_slices().into_iter().collect();
    let tensor = |name: &str| {
        source.get(name).copied().ok_or(AttnError::Mismatched {
            name: "model to pool",
            requirement: "must be a multi-head language model (its blocks' w_q, w_k, w_v, w_o)",
        })
    };
    let mut converted: HashMap<String, Array2<f32>> = HashMap::new();
    let d = c.d_model;
    for l in 0..c.layers {
        let name = |w: &str| format!("blocks.{l}.{w}");
        let mut weights = Vec::new();
        for w in ["w_q", "w_k", "w_v", "w_o"] {
            let values = tensor(&name(w))?.to_vec();
            weights.push(Array2::from_shape_vec((d, d), values).map_err(|_| {
                AttnError::Mismatched {
                    name: "model to pool",
                    requirement: "must be multi-head: every projection d × d",
                }
            })?);
        }
        let [w_q, w_k, w_v, w_o]: [Array2<f32>; 4] = weights.try_into().expect("four projections");
        let weights = AttentionWeights::new(w_q, w_k, w_v, w_o);
        let layer = MultiHeadAttention::from_weights(weights, c.heads)?;
        let grouped = mean_pool_key_value_heads(&layer, kv_heads)?;
        converted.insert(name("w_k"), grouped.weights().w_k.clone());
        converted.insert(name("w_v"), grouped.weights().w_v.clone());
    }
    let names: Vec<String> = pooled.named_slices().into_iter().map(|(n, _)| n).collect();
    for (name, to) in names.iter().zip(pooled.slices_mut()) {
        match converted.get(name) {
            Some(w) => to.iter_mut().zip(w).for_each(|(t, x)| *t = *x), // row-major
            None => to.copy_from_slice(tensor(name)?),
        }
    }
    Ok(pooled)
}

/// One converted run: the multi-head model of `seed`, pooled to
/// `kv_heads`, its validation loss before pooling, after it, and after
/// [`FINE_TUNING`].
#[derive(Debug, Clone, PartialEq)]
pub struct Pooled {
    /// Key/value heads it was pooled to.
    pub kv_heads: usize,
    /// The seed of the multi-head model.
    pub seed: u64,
    /// The multi-head model's loss.
    pub multi_head: f64,
    /// Right after pooling.
    pub pooled: f64,
    /// After the fine-tuning.
    pub fine_tuned: f64,
}

/// Reads `book/data/ch17-pooled.tsv`.
pub fn pooled_runs() -> Result<Vec<Pooled>, ReportError> {
    let file = "ch17-pooled.tsv";
    super::rows(file, 5)?
        .iter()
        .map(|f| {
            Ok(Pooled {
                kv_heads: number(file, &f[0])?,
                seed: number(file, &f[1])?,
                multi_head: number(file, &f[2])?,
                pooled: number(file, &f[3])?,
                fine_tuned: number(file, &f[4])?,
            })
        })
        .collect()
}

/// The conversion's table: per key/value heads, the mean over seeds of
/// each loss, and that of the variant trained from the start.
pub fn pooled_table(runs: &[Pooled], trained: &[super::Variant]) -> String {
    let mut out =
        String::from("kv heads  multi-head  pooled  after 100 steps  trained from the start\n");
    for g in [2, 1] {
        let these: Vec<&Pooled> = runs.iter().filter(|r| r.kv_heads == g).collect();
        let mean =
            |f: fn(&Pooled) -> f64| super::mean(&these.iter().map(|r| f(r)).collect::<Vec<_>>());
        let scratch = super::mean(&super::losses_of(trained, super::Attention::KvHeads(g)));
        out += &format!(
            "{g:>8}  {:>10.4}  {:>6.4}  {:>15.4}  {scratch:>22.4}\n",
            mean(|r| r.multi_head),
            mean(|r| r.pooled),
            mean(|r| r.fine_tuned)
        );
    }
    out.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ch17::LATENT;
    use attn::lm::{Positions, SHAKESPEARE_MODEL};

    const SMALL: LmConfig = LmConfig {
        vocab: 7,
        context: 6,
        d_model: 8,
        heads: 4,
        kv_heads: 4,
        layers: 2,
        d_ff: 12,
        positions: Positions::Rotary,
        latent: None,
        ..SHAKESPEARE_MODEL
    };

    /// Pooling to as many key/value heads as heads changes nothing; pooling
    /// a model whose heads already share their group's keys and values
    /// gives the grouped model they were copied from, logit for logit.
    #[test]
    fn pooling_keeps_what_is_already_shared() {
        let model = LanguageModel::<f32>::new(SMALL, 3).unwrap();
        assert_eq!(mean_pooled(&model, 4).unwrap(), model);
        let grouped = LanguageModel::<f32>::new(LmConfig { kv_heads: 2, ..SMALL }, 3).unwrap();
        // The grouped model as a multi-head one: each group's columns copied
        // to both of its heads.
        let mut copied = LanguageModel::<f32>::new(SMALL, 0).unwrap();
        let from: HashMap<String, Vec<f32>> =
            grouped.named_slices().into_iter().map(|(n, s)| (n, s.to_vec())).collect();
        let names: Vec<String> = copied.named_slices().into_iter().map(|(n, _)| n).collect();
        for (name, to) in names.iter().zip(copied.slices_mut()) {
            let w = &from[name];
            if name.ends_with("w_k") || name.ends_with("w_v") {
                // 8 rows of 2 groups × 2 columns → 8 rows of 4 heads × 2.
                for (r, row) in to.chunks_mut(8).enumerate() {
                    for (c, x) in row.iter_mut().enumerate() {
                        *x = w[r * 4 + (c / 4) * 2 + c % 2];
                    }
                }
            } else {
                to.copy_from_slice(w);
            }
        }
        let tokens = vec![vec![1, 5, 2, 6, 0, 3]];
        let logits = |m: &LanguageModel<f32>| m.forward(&tokens).unwrap().logits().clone();
        assert_eq!(logits(&copied), logits(&grouped), "the copies are the grouped model");
        let pooled = mean_pooled(&copied, 2).unwrap();
        assert_eq!(pooled, grouped);
    }

    #[test]
    fn a_latent_model_or_a_bad_grouping_is_refused() {
        let latent =
            LmConfig { positions: Positions::Rotary, latent: Some(LATENT), ..SHAKESPEARE_MODEL };
        let model = LanguageModel::<f32>::new(latent, 1).unwrap();
        assert!(mean_pooled(&model, 2).is_err());
        let model = LanguageModel::<f32>::new(SMALL, 1).unwrap();
        assert!(mean_pooled(&model, 3).is_err());
    }
}
