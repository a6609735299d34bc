//! Reading a BERT-style model's `config.json` and `model.safetensors` into
//! the crate's layers.

use std::path::Path;

use ndarray::{Array1, Array2, ArrayRef2};
use safetensors::SafeTensors;

use super::Bert;
use crate::block::{Activation, EncoderLayer, FeedForward, LayerNorm, Norm};
use crate::error::AttnError;
use crate::multihead::MultiHeadAttention;
use crate::nn::{AttentionBiases, AttentionWeights};

/// One tensor of a safetensors file: its name, shape and element type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorShape {
    /// E.g. `encoder.layer.0.attention.self.query.weight`.
    pub name: String,
    /// E.g. `[384, 384]`.
    pub shape: Vec<usize>,
    /// E.g. `F32`.
    pub dtype: String,
}

// ANCHOR: pytorch_linear
/// PyTorch's `nn.Linear` stores its weight as `out×in` and computes
/// `y = x Wᵀ + b`; the crate multiplies `x W` with `W` as `in×out`. So a
/// PyTorch weight enters the crate transposed.
pub fn pytorch_linear(weight: &ArrayRef2<f32>) -> Array2<f32> {
    weight.t().as_standard_layout().into_owned() // in×out
}
// ANCHOR_END: pytorch_linear

/// The error for `file` in `dir`.
fn model_error(dir: &Path, file: &str, reason: impl ToString) -> AttnError {
    AttnError::ModelFile { path: dir.join(file).display().to_string(), reason: reason.to_string() }
}

/// Every tensor of `dir/model.safetensors`, sorted by name.
pub fn tensor_shapes(dir: &Path) -> Result<Vec<TensorShape>, AttnError> {
    let bytes = read(dir, "model.safetensors")?;
    let file =
        SafeTensors::deserialize(&bytes).map_err(|e| model_error(dir, "model.safetensors", e))?;
    let mut shapes: Vec<TensorShape> = file
        .tensors()
        .into_iter()
        .map(|(name, view)| TensorShape {
            name,
            shape: view.shape().to_vec(),
            dtype: format!("{:?}", view.dtype()),
        })
        .collect();
    shapes.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(shapes)
}

fn read(dir: &Path, file: &str) -> Result<Vec<u8>, AttnError> {
    std::fs::read(dir.join(file)).map_err(|e| model_error(dir, file, e))
}

/// The tensors of a safetensors file, by name, as `f32` arrays.
struct Tensors<'a> {
    file: SafeTensors<'a>,
    dir: &'a Path,
}

impl Tensors<'_> {
    /// The tensor `name`, which must be `f32` with `shape`.
    fn get(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, AttnError> {
        let error = |reason: String| model_error(self.dir, "model.safetensors", reason);
        let view = self.file.tensor(name).map_err(|_| error(format!("no tensor named {name}")))?;
        if view.dtype() != safetensors::Dtype::F32 || view.shape() != shape {
            return Err(error(format!(
                "{name} is {:?} {:?}, expected F32 {shape:?}",
                view.dtype(),
                view.shape()
            )));
        }
        let values: Vec<f32> = view
            .data()
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        match values.iter().position(|x| !x.is_finite()) {
            Some(i) => Err(error(format!("{name} holds {} at index {i}", values[i]))),
            None => Ok(values),
        }
    }

    fn vector(&self, name: &str, len: usize) -> Result<Array1<f32>, AttnError> {
        Ok(Array1::from(self.get(name, &[len])?))
    }

    fn matrix(&self, name: &str, rows: usize, cols: usize) -> Result<Array2<f32>, AttnError> {
        let values = self.get(name, &[rows, cols])?;
        Ok(Array2::from_shape_vec((rows, cols), values).expect("checked: rows·cols values"))
    }

    /// A PyTorch `nn.Linear` from `in_` to `out` named `prefix`: its weight
    /// in the crate's layout (`in×out`) and its bias.
    fn linear(
        &self,
        prefix: &str,
        in_: usize,
        out: usize,
    ) -> Result<(Array2<f32>, Array1<f32>), AttnError> {
        let w = self.matrix(&format!("{prefix}.weight"), out, in_)?;
        Ok((pytorch_linear(&w), self.vector(&format!("{prefix}.bias"), out)?))
    }

    fn layer_norm(&self, prefix: &str, d: usize, eps: f32) -> Result<LayerNorm, AttnError> {
        let gamma = self.vector(&format!("{prefix}.weight"), d)?;
        let beta = self.vector(&format!("{prefix}.bias"), d)?;
        LayerNorm::from_parameters(gamma, beta, eps)
    }
}

/// The sizes `config.json` gives.
struct Config {
    vocabulary: usize,
    positions: usize,
    d_model: usize,
    h: usize,
    d_ff: usize,
    layers: usize,
    eps: f32,
    activation: Activation,
}

/// The number of encoder layers whose tensors a weights file holds
/// (`encoder.layer.{i}.…` for `i` from 0).
fn layers_in(file: &SafeTensors) -> usize {
    let layer = |name: &str| name.strip_prefix("encoder.layer.")?.split('.').next()?.parse().ok();
    file.names().iter().filter_map(|n| layer(n)).map(|i: usize| i + 1).max().unwrap_or(0)
}

fn read_config(dir: &Path) -> Result<Config, AttnError> {
    let text = read(dir, "config.json")?;
    let json: serde_json::Value =
        serde_json::from_slice(&text).map_err(|e| model_error(dir, "config.json", e))?;
    // Each field read strictly: missing, or of another type, is an error
    // naming it (fields the model does not use are ignored).
    fn field<T: serde::de::DeserializeOwned>(
        dir: &Path,
        json: &serde_json::Value,
        key: &str,
    ) -> Result<T, AttnError> {
        let value = json.get(key).ok_or(format!("no field {key}"));
        let typed = value.and_then(|v| T::deserialize(v).map_err(|e| format!("{key}: {e}")));
        typed.map_err(|reason| model_error(dir, "config.json", reason))
    }
    let read = |key: &str| field::<usize>(dir, &json, key);
    let eps: f32 = field(dir, &json, "layer_norm_eps")?;
    if !(eps.is_finite() && eps > 0.0) {
        let reason = format!("layer_norm_eps {eps} is not a positive number");
        return Err(model_error(dir, "config.json", reason));
    }
    let act: String = field(dir, &json, "hidden_act")?;
    let activation = match act.as_str() {
        "gelu" => Activation::GeluErf,
        "gelu_new" | "gelu_pytorch_tanh" => Activation::Gelu,
        "relu" => Activation::Relu,
        other => {
            let reason = format!("hidden_act {other:?} is not gelu, gelu_new or relu");
            return Err(model_error(dir, "config.json", reason));
        }
    };
    Ok(Config {
        vocabulary: read("vocab_size")?,
        positions: read("max_position_embeddings")?,
        d_model: read("hidden_size")?,
        h: read("num_attention_heads")?,
        d_ff: read("intermediate_size")?,
        layers: read("num_hidden_layers")?,
        eps,
        activation,
    })
}

impl Bert {
    // ANCHOR: load
    /// Loads the encoder in `dir`: `config.json` for its sizes,
    /// `model.safetensors` (Hugging Face's names) for its weights.
    pub fn load(dir: &Path) -> Result<Bert, AttnError> {
        let c = read_config(dir)?;
        let bytes = read(dir, "model.safetensors")?;
        let file = SafeTensors::deserialize(&bytes)
            .map_err(|e| model_error(dir, "model.safetensors", e))?;
        let in_file = layers_in(&file);
        if c.layers != in_file {
            let reason = format!(
                "num_hidden_layers is {} but model.safetensors holds {in_file} layers",
                c.layers
            );
            return Err(model_error(dir, "config.json", reason));
        }
        let t = Tensors { file, dir };
        let d = c.d_model;
        let mut layers = Vec::with_capacity(c.layers);
        for i in 0..c.layers {
            let p = format!("encoder.layer.{i}");
            let (w_q, b_q) = t.linear(&format!("{p}.attention.self.query"), d, d)?;
            let (w_k, b_k) = t.linear(&format!("{p}.attention.self.key"), d, d)?;
            let (w_v, b_v) = t.linear(&format!("{p}.attention.self.value"), d, d)?;
            let (w_o, b_o) = t.linear(&format!("{p}.attention.output.dense"), d, d)?;
            let weights = AttentionWeights::new(w_q, w_k, w_v, w_o);
            let biases = AttentionBiases { b_q, b_k, b_v, b_o };
            let attention = MultiHeadAttention::from_weights(weights, c.h)?.with_biases(biases)?;
            let (w1, b1) = t.linear(&format!("{p}.intermediate.dense"), d, c.d_ff)?;
            let (w2, b2) = t.linear(&format!("{p}.output.dense"), c.d_ff, d)?;
            let ffn = FeedForward::from_weights(w1, b1, w2, b2, c.activation)?;
            let ln1 = t.layer_norm(&format!("{p}.attention.output.LayerNorm"), d, c.eps)?;
            let ln2 = t.layer_norm(&format!("{p}.output.LayerNorm"), d, c.eps)?;
            layers.push(EncoderLayer::from_parts(attention, ffn, [ln1, ln2], Norm::Post)?);
        }
        Ok(Bert {
            word: t.matrix("embeddings.word_embeddings.weight", c.vocabulary, d)?,
            position: t.matrix("embeddings.position_embeddings.weight", c.positions, d)?,
            token_type: t.matrix("embeddings.token_type_embeddings.weight", 2, d)?,
            ln: t.layer_norm("embeddings.LayerNorm", d, c.eps)?,
            layers,
        })
    }
    // ANCHOR_END: load
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn a_pytorch_weight_enters_transposed() {
        // PyTorch: out = 2, in = 3, y = W x.
        let w_torch = array![[1.0_f32, 2.0, 3.0], [4.0, 5.0, 6.0]];
        let x = array![[1.0_f32, 0.0, -1.0]];
        let y = x.dot(&pytorch_linear(&w_torch)); // 1×2
        assert_eq!(y, array![[-2.0, -2.0]]);
        assert_eq!(pytorch_linear(&w_torch).dim(), (3, 2));
    }

    #[test]
    fn a_missing_model_names_the_file_and_the_fix() {
        let err = Bert::load(Path::new("/nonexistent/model")).unwrap_err();
        let message = err.to_string();
        assert!(message.contains("/nonexistent/model/config.json"), "{message}");
        assert!(message.contains("cargo xtask model"), "{message}");
    }

    /// A model directory under the target directory holding `config`, and a
    /// weights file with one tensor of each of `layers` encoder layers.
    fn model_dir(name: &str, config: &str, layers: usize) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("attn-load-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("config.json"), config).unwrap();
        let bytes = [0u8; 4];
        let names: Vec<String> = (0..layers).map(|i| format!("encoder.layer.{i}.x")).collect();
        let views: Vec<_> = names
            .iter()
            .map(|n| {
                (
                    n.clone(),
                    safetensors::tensor::TensorView::new(safetensors::Dtype::F32, vec![1], &bytes)
                        .unwrap(),
                )
            })
            .collect();
        safetensors::tensor::serialize_to_file(views, None, &dir.join("model.safetensors"))
            .unwrap();
        dir
    }

    const CONFIG: &str = r#"{"vocab_size": 30, "max_position_embeddings": 16,
        "hidden_size": 8, "num_attention_heads": 2, "intermediate_size": 12,
        "num_hidden_layers": LAYERS, "layer_norm_eps": EPS, "hidden_act": "gelu"}"#;

    #[test]
    fn the_configuration_is_read_strictly_and_checked_against_the_weights() {
        let config = |layers: &str, eps: &str| CONFIG.replace("LAYERS", layers).replace("EPS", eps);
        let cases = [
            ("string-eps", config("2", r#""0.5""#), "layer_norm_eps: invalid type: string"),
            (
                "no-eps",
                config("2", "1e-12").replace(r#", "layer_norm_eps": 1e-12"#, ""),
                "no field layer_norm_eps",
            ),
            ("negative-eps", config("2", "-1"), "layer_norm_eps -1 is not a positive number"),
            ("float-layers", config("2.5", "1e-12"), "num_hidden_layers: invalid type"),
            (
                "huge-layers",
                config("1099511627776", "1e-12"),
                "num_hidden_layers is 1099511627776 but model.safetensors holds 2 layers",
            ),
        ];
        for (name, text, expected) in cases {
            let dir = model_dir(name, &text, 2);
            let err = Bert::load(&dir).unwrap_err().to_string();
            std::fs::remove_dir_all(&dir).unwrap();
            assert!(err.contains(expected), "{name}: {err}");
            assert!(err.contains("config.json"), "{name}: {err}");
        }
    }
}
