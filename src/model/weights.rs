//! Saving and reading the tiny Transformer's weights as text.

use super::{ModelConfig, TinyTransformer};
use crate::error::AttnError;

impl TinyTransformer {
    /// The weights as text: a header line `tiny-transformer k d_model heads
    /// d_ff layers`, then one line per tensor (in [`Self::slices`] order)
    /// of its values, space-separated, each rounded to `f32` and written as
    /// the shortest decimal that reads back to that `f32` (Rust's `{}`
    /// formatting). Rounding to `f32` halves the file; the book reports
    /// accuracy for the weights as saved.
    pub fn to_text(&self) -> String {
        let c = self.config;
        let mut text = format!(
            "tiny-transformer {} {} {} {} {}\n",
            c.k, c.d_model, c.heads, c.d_ff, c.layers
        );
        for tensor in self.slices() {
            let values: Vec<String> = tensor.iter().map(|&x| format!("{}", x as f32)).collect();
            text += &values.join(" ");
            text.push('\n');
        }
        text
    }

    /// Reads what [`Self::to_text`] wrote.
    pub fn from_text(text: &str) -> Result<Self, AttnError> {
        let invalid = |reason: String| AttnError::InvalidWeights { reason };
        let mut lines = text.lines();
        let header: Vec<usize> = lines
            .next()
            .and_then(|l| l.strip_prefix("tiny-transformer "))
            .ok_or_else(|| invalid("not a tiny-transformer file".into()))?
            .split_whitespace()
            .map(|w| w.parse().map_err(|e| invalid(format!("header: {e}"))))
            .collect::<Result<_, _>>()?;
        let [k, d_model, heads, d_ff, layers] = header[..] else {
            return Err(invalid(format!(
                "the header has {} numbers, expected 5",
                header.len()
            )));
        };
        let mut model = TinyTransformer::new(
            ModelConfig {
                k,
                d_model,
                heads,
                d_ff,
                layers,
            },
            0,
        )?;
        for (i, tensor) in model.slices_mut().into_iter().enumerate() {
            let line = lines
                .next()
                .ok_or_else(|| invalid(format!("tensor {i} is missing")))?;
            let values: Vec<f64> = line
                .split_whitespace()
                .map(|w| {
                    w.parse::<f32>()
                        .map(f64::from)
                        .map_err(|e| invalid(format!("tensor {i}: {e}")))
                })
                .collect::<Result<_, _>>()?;
            if values.len() != tensor.len() {
                let reason = format!(
                    "tensor {i} has {} values, expected {}",
                    values.len(),
                    tensor.len()
                );
                return Err(invalid(reason));
            }
            tensor.copy_from_slice(&values);
        }
        Ok(model)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> ModelConfig {
        ModelConfig {
            k: 2,
            d_model: 8,
            heads: 2,
            d_ff: 12,
            layers: 2,
        }
    }

    #[test]
    fn weights_survive_a_round_trip_through_text() {
        let net = TinyTransformer::new(small(), 5).unwrap();
        let back = TinyTransformer::from_text(&net.to_text()).unwrap();
        assert_eq!(back.to_text(), net.to_text(), "saving is idempotent");
        let (a, b) = (net.slices().concat(), back.slices().concat());
        assert!(
            a.iter()
                .zip(&b)
                .all(|(x, y)| (x - y).abs() <= 1e-7 * x.abs()),
            "f32 rounding only"
        );
        assert!(TinyTransformer::from_text("hello").is_err());
        let truncated: String = net.to_text().lines().take(3).collect::<Vec<_>>().join("\n");
        let err = TinyTransformer::from_text(&truncated).unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot read the weights: tensor 2 is missing"
        );
    }
}
