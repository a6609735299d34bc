//! A Vision Transformer's weights as a safetensors file, as the language
//! model's are: each tensor under its name, `f32`, and the sizes and the
//! kind of positions in the file's metadata.

use std::collections::HashMap;

use super::vit::{PatchPositions, Vit, VitConfig};
use super::CLASSES;
use crate::error::AttnError;
use crate::nn::{check_room, invalid, metadata, read_into, size, to_safetensors};

/// The metadata keys that hold the sizes, in [`VitConfig`]'s order.
const SIZES: [&str; 5] = ["patch", "d_model", "heads", "layers", "d_ff"];

/// How the metadata names each kind of positions.
const POSITIONS: [(PatchPositions, &str); 3] = [
    (PatchPositions::None, "none"),
    (PatchPositions::Learned, "learned"),
    (PatchPositions::RowColumn, "row_column"),
];

impl VitConfig {
    fn sizes(&self) -> [usize; 5] {
        [self.patch, self.d_model, self.heads, self.layers, self.d_ff]
    }

    /// The rows of the position table: one a place (`[CLS]` and the
    /// patches), one a grid row and one a grid column, or none.
    pub(crate) fn position_places(&self) -> usize {
        match self.positions {
            PatchPositions::None => 0,
            PatchPositions::Learned => self.patches() + 1,
            PatchPositions::RowColumn => 2 * self.grid(),
        }
    }

    /// The number of parameters of a model of these sizes, `None` past
    /// `usize`.
    pub fn parameter_count(&self) -> Option<usize> {
        let VitConfig { patch, d_model: d, layers, d_ff: f, .. } = *self;
        let sum =
            |terms: &[Option<usize>]| terms.iter().try_fold(0usize, |s, &t| s.checked_add(t?));
        let times = |a: usize, b: usize| a.checked_mul(b);
        // Per block: W_Q, W_K, W_V, W_O; W₁, b₁, W₂, b₂; two LayerNorms.
        let block =
            sum(&[times(4, times(d, d)?), times(2, times(d, f)?), Some(f + d), times(4, d)])?;
        sum(&[
            times(patch.checked_mul(patch)?, d), // W_E
            Some(d),                             // b_E
            Some(d),                             // [CLS]
            times(self.position_places(), d),
            times(layers, block),
            times(2, d),                             // the final LayerNorm
            times(d, CLASSES)?.checked_add(CLASSES), // the classifier
        ])
    }

    /// The shape of the tensor `name` of a model of this configuration.
    fn shape(&self, name: &str) -> Vec<usize> {
        let (d, f) = (self.d_model, self.d_ff);
        match name.rsplit('.').next() {
            _ if name == "patch.w" => vec![self.patch * self.patch, d],
            _ if name == "cls" => vec![1, d],
            _ if name == "positions" => vec![self.position_places(), d],
            _ if name == "head.w" => vec![d, CLASSES],
            _ if name == "head.b" => vec![CLASSES],
            Some("b1") => vec![f],
            Some("w1") => vec![d, f],
            Some("w2") => vec![f, d],
            Some("gamma" | "beta" | "b2" | "b") => vec![d], // patch.b too
            _ => vec![d, d],                                // W_Q, W_K, W_V, W_O
        }
    }
}

impl Vit<f32> {
    /// The weights as the bytes of a safetensors file, with `provenance`
    /// (where and how they were trained, or `""`) in its metadata; an
    /// error naming the tensor if a weight is not finite.
    pub fn to_safetensors(&self, provenance: &str) -> Result<Vec<u8>, AttnError> {
        let config = self.config();
        let mut metadata: HashMap<String, String> =
            SIZES.iter().zip(config.sizes()).map(|(k, v)| (k.to_string(), v.to_string())).collect();
        metadata.insert("model".into(), "attn::vision::Vit".into());
        let positions = POSITIONS.iter().find(|p| p.0 == config.positions).map(|p| p.1);
        metadata.insert("positions".into(), positions.unwrap_or_default().into());
        if !provenance.is_empty() {
            metadata.insert("provenance".into(), provenance.into());
        }
        to_safetensors(self, |name| config.shape(name), metadata)
    }

    /// A model read from the bytes of a safetensors file that
    /// [`Self::to_safetensors`] wrote. The file is not trusted: its sizes
    /// must make a valid model that the file has room for (checked before
    /// the model is built), and every tensor must be present, `f32`, of its
    /// shape and finite, with no other tensor beside them.
    pub fn from_safetensors(bytes: &[u8]) -> Result<Self, AttnError> {
        let metadata = metadata(bytes)?;
        let [patch, d_model, heads, layers, d_ff] = SIZES.map(|key| size(&metadata, key));
        let named = metadata.get("positions").map(String::as_str).unwrap_or_default();
        let positions = POSITIONS.iter().find(|p| p.1 == named).map(|p| p.0).ok_or_else(|| {
            invalid(format!(
                "the metadata's positions is {named:?}, not \"none\", \"learned\" or \"row_column\""
            ))
        })?;
        let config = VitConfig {
            patch: patch?,
            d_model: d_model?,
            heads: heads?,
            layers: layers?,
            d_ff: d_ff?,
            positions,
        };
        config.check()?;
        check_room(config.parameter_count(), bytes)?;
        let mut model = Vit::new(config, 0)?;
        read_into(bytes, &mut model, |name| config.shape(name))?;
        Ok(model)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::Parameters;

    use crate::vision::train::tests::SMALL;

    #[test]
    fn a_model_reads_back_bit_for_bit_and_counts_its_parameters() {
        for (positions, _) in POSITIONS {
            for patch in [2, 4] {
                let config = VitConfig { patch, positions, ..SMALL };
                let model = Vit::<f32>::new(config, 3).unwrap();
                let count: usize = model.slices().iter().map(|s| s.len()).sum();
                assert_eq!(config.parameter_count(), Some(count), "{config:?}");
                let bytes = model.to_safetensors("# a test").unwrap();
                assert_eq!(Vit::from_safetensors(&bytes).unwrap(), model, "{config:?}");
            }
        }
        let huge = VitConfig { d_model: usize::MAX / 2, ..SMALL };
        assert_eq!(huge.parameter_count(), None);
    }

    /// Writes `model`'s tensors with `edit` applied to the list, and the
    /// metadata `sizes` and `positions`.
    fn file_with(
        model: &Vit<f32>,
        (sizes, positions): ([&str; 5], &str),
        edit: impl FnOnce(&mut Vec<(String, Vec<usize>, Vec<u8>)>),
    ) -> Vec<u8> {
        let config = model.config();
        let mut metadata: HashMap<String, String> =
            SIZES.iter().zip(sizes).map(|(k, v)| (k.to_string(), v.to_string())).collect();
        metadata.insert("positions".into(), positions.into());
        crate::nn::edited_file(model, |n| config.shape(n), metadata, edit)
    }

    #[test]
    fn a_bad_file_is_refused_with_what_is_wrong() {
        let model = Vit::<f32>::new(SMALL, 4).unwrap();
        let sizes = (["4", "8", "2", "2", "16"], "learned");
        let e = |bytes: Vec<u8>| Vit::from_safetensors(&bytes).unwrap_err().to_string();
        assert!(e(vec![1, 2, 3]).contains("cannot read the weights"));
        let truncated = model.to_safetensors("").unwrap()[..200].to_vec();
        assert!(e(truncated).contains("cannot read the weights"));
        let nan =
            file_with(&model, sizes, |t| t[0].2[4..8].copy_from_slice(&f32::NAN.to_le_bytes()));
        assert!(e(nan).contains("patch.w holds NaN at index 1"));
        let missing = file_with(&model, sizes, |t| {
            t.remove(2);
        });
        assert!(e(missing).contains("no tensor cls"));
        let extra = file_with(&model, sizes, |t| t.push(("mask".into(), vec![1], vec![0; 4])));
        assert!(e(extra).contains("\"mask\""));
        let huge = e(file_with(&model, (["4", "8", "2", "100", "16"], "learned"), |_| {}));
        assert!(huge.contains("more than the file"), "{huge}");
        let odd = e(file_with(&model, (["4", "8", "3", "2", "16"], "learned"), |_| {}));
        assert!(odd.contains("heads"), "{odd}");
        let patch = e(file_with(&model, (["3", "8", "2", "2", "16"], "learned"), |_| {}));
        assert!(patch.contains("patch"), "{patch}");
        let word = e(file_with(&model, (["four", "8", "2", "2", "16"], "learned"), |_| {}));
        assert!(word.contains("patch is \"four\""), "{word}");
        let kind = e(file_with(&model, (["4", "8", "2", "2", "16"], "sinusoidal"), |_| {}));
        assert!(kind.contains("positions is \"sinusoidal\""), "{kind}");
        // A file of 2-D positions read as 1-D: the table's shape differs.
        let other = e(file_with(&model, (["4", "8", "2", "2", "16"], "row_column"), |_| {}));
        assert!(other.contains("positions is F32 [5, 8], expected F32 [4, 8]"), "{other}");
    }
}
