//! Saving and reading the tiny Transformer's weights as text.

use super::{ModelConfig, TinyTransformer};
use crate::error::AttnError;
use crate::nn::{invalid, read_checkpoint, read_header, write_checkpoint};

impl TinyTransformer {
    /// The weights as text: a header line `tiny-transformer k d_model heads
    /// d_ff layers`, then one line per tensor (in [`Parameters::slices`](crate::nn::Parameters::slices) order) of
    /// its values, each rounded to `f32` and written as the shortest decimal
    /// that reads back to that `f32`. Rounding halves the file; the book
    /// reports accuracy for the weights as saved.
    /// Only a digit reverser's weights can be written so (an error names
    /// any other model).
    pub fn to_text(&self) -> Result<String, AttnError> {
        let c = ModelConfig::of(self)?;
        let header =
            format!("tiny-transformer {} {} {} {} {}", c.k, c.d_model, c.heads, c.d_ff, c.layers);
        write_checkpoint(&header, self)
    }

    /// Reads what [`Self::to_text`] wrote. The file is not trusted: the
    /// header's sizes must pass [`ModelConfig::check`] and agree with the
    /// number of values the file holds before anything is allocated, every
    /// value must be a finite `f32`, and nothing may follow the last tensor.
    pub fn from_text(text: &str) -> Result<Self, AttnError> {
        let header = read_header(text, "tiny-transformer ")?;
        let [k, d_model, heads, d_ff, layers] = header[..] else {
            return Err(invalid(format!("the header has {} numbers, expected 5", header.len())));
        };
        let config = ModelConfig { k, d_model, heads, d_ff, layers };
        config.check().map_err(|e| invalid(format!("header: {e}")))?;
        read_checkpoint(text, tensor_count(layers), config.parameter_count(), || {
            TinyTransformer::new(config, 0)
        })
    }
}

/// Parameter tensors of a model with `layers` blocks: two embeddings, twelve
/// a block, the final LayerNorm's two and the head's two.
fn tensor_count(layers: usize) -> usize {
    layers.saturating_mul(12).saturating_add(6)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::Parameters;

    fn small() -> ModelConfig {
        crate::model::gradcheck::SMALL
    }

    #[test]
    fn weights_survive_a_round_trip_through_text() {
        let net = TinyTransformer::new(small(), 5).unwrap();
        let back = TinyTransformer::from_text(&net.to_text().unwrap()).unwrap();
        assert_eq!(back.to_text().unwrap(), net.to_text().unwrap(), "saving is idempotent");
        let (a, b) = (net.slices().concat(), back.slices().concat());
        assert!(
            a.iter().zip(&b).all(|(x, y)| (x - y).abs() <= 1e-7 * x.abs()),
            "f32 rounding only"
        );
        assert!(TinyTransformer::from_text("hello").is_err());
        let truncated: String =
            net.to_text().unwrap().lines().take(3).collect::<Vec<_>>().join("\n");
        let err = TinyTransformer::from_text(&truncated).unwrap_err();
        assert!(
            err.to_string().contains("values in 2 tensors, but the header's model has"),
            "{err}"
        );
    }

    #[test]
    fn the_loader_trusts_nothing_in_its_file() {
        let text = TinyTransformer::new(small(), 5).unwrap().to_text().unwrap();
        let with = |old: &str, new: &str| TinyTransformer::from_text(&text.replacen(old, new, 1));
        let first_value = text.lines().nth(1).unwrap().split(' ').next().unwrap();
        for bad in ["NaN", "inf", "1e39"] {
            let err = with(first_value, bad).unwrap_err().to_string();
            assert!(err.contains("not a finite number"), "{bad}: {err}");
        }
        let trailing = TinyTransformer::from_text(&(text.clone() + "garbage\n")).unwrap_err();
        assert_eq!(
            trailing.to_string(),
            "cannot read the weights: unexpected content after the last tensor: garbage"
        );
        // Sizes that would need tens of GB are refused before any allocation.
        let huge = "tiny-transformer 2 100000 2 100000 2\n1 2 3\n";
        let err = TinyTransformer::from_text(huge).unwrap_err().to_string();
        assert!(
            err.starts_with("cannot read the weights: header: the model's parameters"),
            "{err}"
        );
        let overflow = format!("tiny-transformer {} 8 2 12 2\n", usize::MAX);
        assert!(TinyTransformer::from_text(&overflow).is_err());
        let odd_heads = TinyTransformer::from_text("tiny-transformer 2 8 3 12 2\n");
        assert!(matches!(odd_heads, Err(AttnError::InvalidWeights { .. })));
    }
}
