//! The language model's weights as a safetensors file: each tensor under
//! its name ([`crate::nn::Parameters::named_slices`]), `f32`, and the
//! sizes in the file's metadata.

use std::collections::HashMap;

use super::model::{LanguageModel, LmConfig, SHAKESPEARE_MODEL};
use crate::decoder::{LatentSizes, Positions, Recipe};
use crate::error::AttnError;
use crate::nn::{check_room, invalid, metadata, read_into, size, to_safetensors, Activation};
use crate::rope_scaling::RopeScaling;

/// A RoPE scaling as the metadata's words: its method, then its numbers
/// (`linear 4`, `yarn 8 64 32 1`: factor, trained length, β_fast, β_slow,
/// then `no_temperature` if it has none;
/// `llama3 8 64 1 4`: factor, trained length, low, high).
fn scaling_words(scaling: RopeScaling) -> String {
    match scaling {
        RopeScaling::None => "none".into(),
        RopeScaling::Linear { factor } => format!("linear {factor}"),
        RopeScaling::NtkAware { factor } => format!("ntk_aware {factor}"),
        RopeScaling::Yarn { factor, trained, beta_fast, beta_slow, temperature } => {
            let without = if temperature { "" } else { " no_temperature" };
            format!("yarn {factor} {trained} {beta_fast} {beta_slow}{without}")
        }
        RopeScaling::Llama3 { factor, trained, low, high } => {
            format!("llama3 {factor} {trained} {low} {high}")
        }
    }
}

/// The scaling that [`scaling_words`] wrote as `words` (its numbers are
/// checked with the model's configuration).
fn scaling_from_words(words: &str) -> Result<RopeScaling, AttnError> {
    let bad = || invalid(format!("the metadata's rope_scaling is {words:?}, not a RoPE scaling"));
    let parts: Vec<&str> = words.split(' ').collect();
    let number = |i: usize| parts.get(i).and_then(|w| w.parse::<f64>().ok()).ok_or_else(bad);
    let length = |i: usize| parts.get(i).and_then(|w| w.parse::<usize>().ok()).ok_or_else(bad);
    let (method, count) = (parts[0], parts.len());
    let scaling = match (method, count) {
        ("none", 1) => RopeScaling::None,
        ("linear", 2) => RopeScaling::Linear { factor: number(1)? },
        ("ntk_aware", 2) => RopeScaling::NtkAware { factor: number(1)? },
        ("yarn", 5 | 6) => RopeScaling::Yarn {
            factor: number(1)?,
            trained: length(2)?,
            beta_fast: number(3)?,
            beta_slow: number(4)?,
            temperature: match parts.get(5) {
                None => true,
                Some(&"no_temperature") => false,
                Some(_) => return Err(bad()),
            },
        },
        ("llama3", 5) => RopeScaling::Llama3 {
            factor: number(1)?,
            trained: length(2)?,
            low: number(3)?,
            high: number(4)?,
        },
        _ => return Err(bad()),
    };
    Ok(scaling)
}

/// The metadata keys that hold the sizes, in [`LmConfig`]'s order.
const SIZES: [&str; 6] = ["vocab", "context", "d_model", "heads", "layers", "d_ff"];

impl LmConfig {
    fn sizes(&self) -> [usize; 6] {
        [self.vocab, self.context, self.d_model, self.heads, self.layers, self.d_ff]
    }

    /// The shape of the tensor `name` of a model of this configuration.
    fn shape(&self, name: &str) -> Vec<usize> {
        let (d, f) = (self.d_model, self.d_ff);
        let LatentSizes { d_c, d_r } = self.latent.unwrap_or(LatentSizes { d_c: 0, d_r: 0 });
        match name.rsplit('.').next() {
            _ if name == "tokens" => vec![self.vocab, d],
            _ if name == "positions" => vec![self.context, d],
            _ if name == "head.w" => vec![d, self.vocab],
            _ if name == "head.b" => vec![self.vocab],
            Some("gamma" | "beta" | "b2") => vec![d],
            Some("b1") => vec![f],
            Some("w1") => vec![d, f],
            Some("w2") => vec![f, d],
            Some("w_k" | "w_v") => vec![d, self.d_kv()],
            // Latent attention's (a model without it has no such tensor).
            Some("w_qr") => vec![d, self.heads * d_r],
            Some("w_dkv") => vec![d, d_c],
            Some("w_kr") => vec![d, d_r],
            Some("w_uk" | "w_uv") => vec![d_c, d],
            _ => vec![d, d], // W_Q, W_O
        }
    }
}

impl LanguageModel<f32> {
    /// The weights as the bytes of a safetensors file, with `provenance`
    /// (where and how they were trained, or `""`) in its metadata; an
    /// error naming the tensor if a weight is not finite (the file could
    /// not be read back).
    pub fn to_safetensors(&self, provenance: &str) -> Result<Vec<u8>, AttnError> {
        let config = self.config();
        let mut metadata: HashMap<String, String> =
            SIZES.iter().zip(config.sizes()).map(|(k, v)| (k.to_string(), v.to_string())).collect();
        metadata.insert("model".into(), "attn::lm::LanguageModel".into());
        let positions = match config.positions {
            Positions::Learned => "learned",
            Positions::Rotary => "rotary",
            Positions::None => "none",
            Positions::Alibi => "alibi",
            Positions::ScaledRotary(scaling) => {
                metadata.insert("rope_scaling".into(), scaling_words(scaling));
                "scaled_rotary"
            }
        };
        metadata.insert("positions".into(), positions.into());
        metadata.insert("kv_heads".into(), config.kv_heads.to_string());
        if let Some(LatentSizes { d_c, d_r }) = config.latent {
            metadata.insert("latent_d_c".into(), d_c.to_string());
            metadata.insert("latent_d_r".into(), d_r.to_string());
        }
        // Chapter 16's recipe is what a file that does not say has.
        if config.activation != SHAKESPEARE_MODEL.activation {
            let name = match config.activation {
                Activation::Relu => "relu",
                Activation::Gelu => "gelu",
                Activation::GeluErf => "gelu_erf",
            };
            metadata.insert("activation".into(), name.into());
        }
        if config.recipe == Recipe::WithBiases {
            metadata.insert("recipe".into(), "with_biases".into());
        }
        if !provenance.is_empty() {
            metadata.insert("provenance".into(), provenance.into());
        }
        to_safetensors(self, |name| config.shape(name), metadata)
    }

    /// A model read from the bytes of a safetensors file that
    /// [`Self::to_safetensors`] wrote. The file is not trusted: the sizes
    /// must make a valid model whose parameters the file holds (checked
    /// before the model is built), and every tensor must be present, `f32`,
    /// of its shape and finite, with no other tensor beside them.
    pub fn from_safetensors(bytes: &[u8]) -> Result<Self, AttnError> {
        let metadata = metadata(bytes)?;
        let size = |key: &str| size(&metadata, key);
        let [vocab, context, d_model, heads, layers, d_ff] = SIZES.map(size);
        // Files written before rotary positions existed do not say: learned.
        let positions = match metadata.get("positions").map(String::as_str) {
            None | Some("learned") => Positions::Learned,
            Some("rotary") => Positions::Rotary,
            Some("none") => Positions::None,
            Some("alibi") => Positions::Alibi,
            Some("scaled_rotary") => {
                let words = metadata.get("rope_scaling").map_or("", String::as_str);
                Positions::ScaledRotary(scaling_from_words(words)?)
            }
            Some(other) => {
                return Err(invalid(format!(
                    "the metadata's positions is {other:?}, not \"learned\", \"rotary\", \
                     \"scaled_rotary\", \"none\" or \"alibi\""
                )))
            }
        };
        // Files written before grouped-query attention existed do not say:
        // one key/value head per head.
        let kv_heads = match metadata.get("kv_heads") {
            None => None,
            Some(_) => Some(size("kv_heads")?),
        };
        // Only latent attention's files give its widths.
        let latent = match metadata.get("latent_d_c") {
            None => None,
            Some(_) => Some(LatentSizes { d_c: size("latent_d_c")?, d_r: size("latent_d_r")? }),
        };
        let heads = heads?;
        // Files of chapter 16's recipe do not say.
        let activation = match metadata.get("activation").map(String::as_str) {
            None | Some("gelu_erf") => Activation::GeluErf,
            Some("gelu") => Activation::Gelu,
            Some("relu") => Activation::Relu,
            Some(other) => return Err(invalid(format!("the metadata's activation is {other:?}"))),
        };
        let recipe = match metadata.get("recipe").map(String::as_str) {
            None | Some("tied") => Recipe::Tied,
            Some("with_biases") => Recipe::WithBiases,
            Some(other) => return Err(invalid(format!("the metadata's recipe is {other:?}"))),
        };
        let config = LmConfig {
            vocab: vocab?,
            context: context?,
            d_model: d_model?,
            heads,
            kv_heads: kv_heads.unwrap_or(heads),
            layers: layers?,
            d_ff: d_ff?,
            positions,
            latent,
            activation,
            recipe,
        };
        config.check()?;
        check_room(config.parameter_count(), bytes)?;
        let mut model = LanguageModel::new(config, 0)?;
        read_into(bytes, &mut model, |name| config.shape(name))?;
        Ok(model)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: LmConfig = LmConfig {
        vocab: 6,
        context: 4,
        d_model: 8,
        heads: 2,
        kv_heads: 2,
        layers: 2,
        d_ff: 16,
        positions: Positions::Learned,
        latent: None,
        ..SHAKESPEARE_MODEL
    };

    #[test]
    fn a_model_reads_back_bit_for_bit() {
        let scaled = [
            RopeScaling::Linear { factor: 2.5 },
            RopeScaling::NtkAware { factor: 1.0 / 0.3 },
            RopeScaling::Yarn {
                factor: 8.0,
                trained: 64,
                beta_fast: 32.0,
                beta_slow: 1.0,
                temperature: true,
            },
            RopeScaling::Yarn {
                factor: 8.0,
                trained: 64,
                beta_fast: 32.0,
                beta_slow: 1.0,
                temperature: false,
            },
            RopeScaling::Llama3 { factor: 8.0, trained: 8192, low: 1.0, high: 4.0 },
        ];
        let scaled = scaled.map(Positions::ScaledRotary);
        let unscaled = [Positions::Learned, Positions::Rotary, Positions::None, Positions::Alibi];
        for positions in unscaled.into_iter().chain(scaled) {
            let model = LanguageModel::<f32>::new(LmConfig { positions, ..SMALL }, 4).unwrap();
            let bytes = model.to_safetensors("# a test").unwrap();
            assert_eq!(LanguageModel::from_safetensors(&bytes).unwrap(), model);
        }
        let latent = LmConfig {
            positions: Positions::Rotary,
            latent: Some(LatentSizes { d_c: 6, d_r: 2 }),
            ..SMALL
        };
        let model = LanguageModel::<f32>::new(latent, 4).unwrap();
        let bytes = model.to_safetensors("").unwrap();
        assert_eq!(LanguageModel::from_safetensors(&bytes).unwrap(), model);
    }

    #[test]
    fn a_scaling_the_metadata_garbles_is_refused_naming_it() {
        let rotary = LmConfig { positions: Positions::Rotary, ..SMALL };
        let model = LanguageModel::<f32>::new(rotary, 4).unwrap();
        let read = |words: &str| {
            let sizes =
                SIZES.iter().zip(rotary.sizes()).map(|(k, v)| (k.to_string(), v.to_string()));
            let mut metadata: HashMap<String, String> = sizes.collect();
            metadata.insert("positions".into(), "scaled_rotary".into());
            metadata.insert("rope_scaling".into(), words.into());
            let bytes = crate::nn::edited_file(&model, |n| rotary.shape(n), metadata, |_| {});
            LanguageModel::<f32>::from_safetensors(&bytes)
        };
        for garbled in ["", "yarn 8 sixty-four 32 1", "linear", "linear 2 3", "cubic 2"] {
            let e = read(garbled).unwrap_err().to_string();
            assert!(e.contains("rope_scaling") && e.contains(&format!("{garbled:?}")), "{e}");
        }
        let e = read("linear 0.5").unwrap_err().to_string();
        assert!(e.contains("scale factor") && e.contains("0.5"), "{e}");
        let none = read("none").unwrap().config().positions;
        assert_eq!(none, Positions::ScaledRotary(RopeScaling::None));
    }

    /// Writes `model`'s tensors with `edit` applied to the list, and the
    /// metadata `sizes`.
    fn file_with(
        model: &LanguageModel<f32>,
        sizes: [&str; 6],
        edit: impl FnOnce(&mut Vec<(String, Vec<usize>, Vec<u8>)>),
    ) -> Vec<u8> {
        let config = model.config();
        let metadata = SIZES.iter().zip(sizes).map(|(k, v)| (k.to_string(), v.to_string()));
        crate::nn::edited_file(model, |n| config.shape(n), metadata.collect(), edit)
    }

    #[test]
    fn a_bad_file_is_refused_with_what_is_wrong() {
        let model = LanguageModel::<f32>::new(SMALL, 4).unwrap();
        let sizes = ["6", "4", "8", "2", "2", "16"];
        let e = |bytes: Vec<u8>| LanguageModel::from_safetensors(&bytes).unwrap_err().to_string();
        assert!(e(vec![1, 2, 3]).contains("cannot read the weights"));
        let truncated = model.to_safetensors("").unwrap()[..200].to_vec();
        assert!(e(truncated).contains("cannot read the weights"));
        let nan =
            file_with(&model, sizes, |t| t[3].2[0..4].copy_from_slice(&f32::NAN.to_le_bytes()));
        assert!(e(nan).contains("blocks.0.w_q holds NaN at index 0"));
        let missing = file_with(&model, sizes, |t| {
            t.remove(1);
        });
        assert!(e(missing).contains("no tensor positions"));
        let extra = file_with(&model, sizes, |t| t.push(("bias".into(), vec![1], vec![0; 4])));
        assert!(e(extra).contains("\"bias\""));
        let huge = ["6", "4", "8", "2", "100", "16"];
        let h = e(file_with(&model, huge, |_| {}));
        assert!(h.contains("more than the file"), "{h}");
        let odd = ["6", "4", "8", "3", "2", "16"];
        assert!(e(file_with(&model, odd, |_| {})).contains("heads"));
        let word = ["six", "4", "8", "2", "2", "16"];
        assert!(e(file_with(&model, word, |_| {})).contains("vocab is \"six\""));
        let narrower = ["6", "4", "8", "2", "2", "8"];
        assert!(e(file_with(&model, narrower, |_| {}))
            .contains("blocks.0.w1 is F32 [8, 16], expected F32 [8, 8]"));
    }
}
