//! A trained model's weights as a safetensors file: each tensor under its
//! name ([`Parameters::named_slices`]), `f32`, little-endian, and the sizes
//! in the file's metadata, which a reader checks before it builds anything.
//! The language model and the Vision Transformer write and read theirs
//! through these.

use std::collections::HashMap;

use safetensors::{tensor::TensorView, Dtype, SafeTensors};

use super::params::{check_finite_parameters, invalid};
use super::Parameters;
use crate::error::AttnError;

/// The bytes of a safetensors file holding `model`'s tensors, each of the
/// shape `shape` gives its name, with `metadata`; an error naming the
/// tensor if a weight is not finite (the file could not be read back).
pub(crate) fn to_safetensors<P: Parameters<Real = f32>>(
    model: &P,
    shape: impl Fn(&str) -> Vec<usize>,
    metadata: HashMap<String, String>,
) -> Result<Vec<u8>, AttnError> {
    check_finite_parameters(model)?;
    let bytes: Vec<(String, Vec<u8>)> = model
        .named_slices()
        .into_iter()
        .map(|(name, values)| (name, values.iter().flat_map(|x| x.to_le_bytes()).collect()))
        .collect();
    let views = bytes
        .iter()
        .map(|(name, data)| {
            let view = TensorView::new(Dtype::F32, shape(name), data);
            view.map(|v| (name.clone(), v)).map_err(|e| invalid(e.to_string()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    safetensors::serialize(views, Some(metadata)).map_err(|e| invalid(e.to_string()))
}

/// The metadata of a safetensors file's header, read without the tensors.
pub(crate) fn metadata(bytes: &[u8]) -> Result<HashMap<String, String>, AttnError> {
    let (_, header) = SafeTensors::read_metadata(bytes).map_err(|e| invalid(e.to_string()))?;
    Ok(header.metadata().clone().unwrap_or_default())
}

/// The size `key` of the metadata, a whole number.
pub(crate) fn size(metadata: &HashMap<String, String>, key: &str) -> Result<usize, AttnError> {
    let value = metadata.get(key).ok_or_else(|| invalid(format!("the metadata has no {key}")))?;
    value.parse().map_err(|e| invalid(format!("the metadata's {key} is {value:?}: {e}")))
}

/// Checks that a file of `bytes` can hold `parameters` `f32`s, before a
/// model of that many is built.
pub(crate) fn check_room(parameters: Option<usize>, bytes: &[u8]) -> Result<(), AttnError> {
    let count = parameters.unwrap_or(usize::MAX);
    if count.saturating_mul(4) > bytes.len() {
        return Err(invalid(format!(
            "the metadata's sizes make {count} parameters, more than the file's {} bytes hold",
            bytes.len()
        )));
    }
    Ok(())
}

/// Fills `model`'s tensors from the safetensors file `bytes`: every tensor
/// must be present, `f32`, of the shape `shape` gives its name, and finite,
/// with no other tensor beside them.
pub(crate) fn read_into<P: Parameters<Real = f32>>(
    bytes: &[u8],
    model: &mut P,
    shape: impl Fn(&str) -> Vec<usize>,
) -> Result<(), AttnError> {
    let file = SafeTensors::deserialize(bytes).map_err(|e| invalid(e.to_string()))?;
    let names: Vec<String> = model.named_slices().into_iter().map(|(n, _)| n).collect();
    if let Some(extra) = file.names().into_iter().find(|n| !names.iter().any(|m| m == *n)) {
        return Err(invalid(format!("the file holds a tensor {extra:?} the model does not have")));
    }
    for (name, tensor) in names.iter().zip(model.slices_mut()) {
        let view =
            file.tensor(name).map_err(|_| invalid(format!("the file has no tensor {name}")))?;
        let shape = shape(name);
        if view.dtype() != Dtype::F32 || view.shape() != shape {
            return Err(invalid(format!(
                "{name} is {:?} {:?}, expected F32 {shape:?}",
                view.dtype(),
                view.shape()
            )));
        }
        for (i, (x, b)) in tensor.iter_mut().zip(view.data().chunks_exact(4)).enumerate() {
            *x = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            if !x.is_finite() {
                return Err(invalid(format!("{name} holds {x} at index {i}")));
            }
        }
    }
    Ok(())
}

/// For the models' tests: a safetensors file of `model`'s tensors (each of
/// the shape `shape` gives) with `edit` applied to the list, and `metadata`.
#[cfg(test)]
pub(crate) fn edited_file<P: Parameters<Real = f32>>(
    model: &P,
    shape: impl Fn(&str) -> Vec<usize>,
    metadata: HashMap<String, String>,
    edit: impl FnOnce(&mut Vec<(String, Vec<usize>, Vec<u8>)>),
) -> Vec<u8> {
    let mut tensors: Vec<(String, Vec<usize>, Vec<u8>)> = model
        .named_slices()
        .into_iter()
        .map(|(n, v)| {
            let shape = shape(&n);
            (n, shape, v.iter().flat_map(|x| x.to_le_bytes()).collect())
        })
        .collect();
    edit(&mut tensors);
    let views: Vec<_> = tensors
        .iter()
        .map(|(n, s, d)| (n.clone(), TensorView::new(Dtype::F32, s.clone(), d).unwrap()))
        .collect();
    safetensors::serialize(views, Some(metadata)).unwrap()
}
