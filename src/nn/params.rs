//! What every trainable model of the book is to its optimiser and to its
//! checkpoint files: a list of named parameter tensors.

use ndarray::ArrayRef2;

use crate::error::AttnError;
use crate::real::Real;

/// A model an optimiser can update: its parameter tensors as flat slices,
/// in a fixed order, with names. The gradients are a model of the same
/// shape. [`super::Adam`] works on any of them.
pub trait Parameters {
    /// The float type of the parameters, `f32` or `f64`.
    type Real: Real;
    /// Every parameter tensor as a flat slice, in a fixed order.
    fn slices(&self) -> Vec<&[Self::Real]>;
    /// [`Parameters::slices`], mutable.
    fn slices_mut(&mut self) -> Vec<&mut [Self::Real]>;
    /// Every tensor's name and values, in the same order.
    fn named_slices(&self) -> Vec<(String, &[Self::Real])>;
    /// The number of parameters.
    fn parameter_count(&self) -> usize {
        self.slices().iter().map(|s| s.len()).sum()
    }
}

/// Which of `model`'s tensors weight decay shrinks: the matrices, not the
/// vectors (biases, LayerNorms' `γ` and `β`), told apart by their names,
/// in [`Parameters::slices`]' order.
pub(crate) fn matrices_of<P: Parameters>(model: &P) -> Vec<bool> {
    let vector =
        |name: &str| [".gamma", ".beta", ".b", ".b1", ".b2"].iter().any(|end| name.ends_with(end));
    model.named_slices().iter().map(|(name, _)| !vector(name)).collect()
}

/// A hash of a model's configuration and of every parameter's bits: a
/// forward pass records it, and the backward pass refuses a forward pass of
/// another model (or of the same model before an update).
///
/// The parameters go through a multiply–xor mix (eight lanes, so that it
/// keeps up with memory): each step `h ← (h ⊕ bits)·P` is a bijection of
/// `h`, so changing any one parameter always changes its lane (and the
/// hash, but for a chance of 2⁻⁶⁴). It guards against mistakes, not
/// against an adversary, and runs at a fraction of a general-purpose
/// hasher's cost, which every forward and backward pass pays.
pub(crate) fn fingerprint<M: Parameters>(model: &M, config: impl std::hash::Hash) -> u64 {
    use std::hash::{Hash, Hasher};
    const P: u64 = 0x9E37_79B9_7F4A_7C15 | 1; // odd, so that ·P is a bijection
    let mut lanes = [1u64, 2, 3, 4, 5, 6, 7, 8];
    let mix = |h: &mut u64, x: &M::Real| *h = (*h ^ x.wide().to_bits()).wrapping_mul(P);
    for tensor in model.slices() {
        let chunks = tensor.chunks_exact(8);
        lanes.iter_mut().zip(chunks.remainder()).for_each(|(h, x)| mix(h, x));
        for chunk in chunks {
            lanes.iter_mut().zip(chunk).for_each(|(h, x)| mix(h, x));
        }
        lanes[0] ^= tensor.len() as u64; // where one tensor ends
    }
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    config.hash(&mut hasher);
    lanes.hash(&mut hasher);
    hasher.finish()
}

/// Checks that the forward pass that recorded `recorded` ran `model` with
/// its current parameters.
pub(crate) fn check_same_model(
    recorded: u64,
    model: &impl Parameters,
    config: impl std::hash::Hash,
) -> Result<(), AttnError> {
    if recorded == fingerprint(model, config) {
        return Ok(());
    }
    Err(AttnError::Mismatched {
        name: "forward pass",
        requirement: "must come from this model, with its current parameters",
    })
}

/// A model of the same shape as `model` with every parameter 0 (to hold
/// gradients).
pub(crate) fn zeroed<P: Parameters + Clone>(model: &P) -> P {
    let mut z = model.clone();
    for s in z.slices_mut() {
        s.fill(P::Real::of(0.0));
    }
    z
}

/// Checks that a forward pass's logits are finite: they are not when the
/// arithmetic overflowed on the way, and a loss of them would be meaningless.
pub(crate) fn check_logits<F: Real>(logits: &ArrayRef2<F>) -> Result<(), AttnError> {
    match logits.indexed_iter().find(|(_, x)| !x.is_finite()) {
        Some(((i, j), &value)) => Err(AttnError::Overflow {
            what: "the logits",
            position: (i, j),
            value: value.wide() as f32,
        }),
        None => Ok(()),
    }
}

/// Checks that every parameter of `model` is finite (one could have been
/// set to NaN through [`Parameters::slices_mut`]); the error names the
/// tensor. A forward pass starts with it, so that a non-finite weight is
/// not reported later as an overflow of finite inputs.
pub(crate) fn check_finite_parameters<P: Parameters>(model: &P) -> Result<(), AttnError> {
    for (t, values) in model.slices().into_iter().enumerate() {
        if let Some(bad) = values.iter().find(|x| !x.wide().is_finite()) {
            let tensor = model.named_slices().swap_remove(t).0; // named only on failure
            let value = bad.wide();
            return Err(AttnError::NonFiniteParameter { tensor, value });
        }
    }
    Ok(())
}

/// Checks the gradient a backward pass starts from: `dL/dlogits` must have
/// the logits' shape and hold only finite numbers (NaN in would be NaN in
/// every gradient out).
pub(crate) fn check_d_logits<F: Real>(
    d_logits: &ArrayRef2<F>,
    logits: (usize, usize),
) -> Result<(), AttnError> {
    if d_logits.dim() != logits {
        return Err(AttnError::ShapesDiffer {
            what: "dL/dlogits and the logits",
            left: d_logits.dim(),
            right: logits,
        });
    }
    crate::check::check_finite("dL/dlogits", d_logits)
}

/// A checkpoint as text: a header line, then one line per tensor (in
/// [`Parameters::slices`] order) of its values, space-separated, each
/// rounded to `f32` and written as the shortest decimal that reads back to
/// that `f32` (Rust's `{}` formatting). Rounding to `f32` halves the file;
/// the book reports accuracy for the weights as saved. A weight that is
/// not finite as an `f32` is an error naming its tensor: the file could not
/// be read back.
pub(crate) fn write_checkpoint(header: &str, model: &impl Parameters) -> Result<String, AttnError> {
    let mut text = format!("{header}\n");
    for (t, tensor) in model.slices().into_iter().enumerate() {
        let values: Vec<f32> = tensor.iter().map(|&x| x.wide() as f32).collect();
        if let Some(&bad) = values.iter().find(|x| !x.is_finite()) {
            let tensor = model.named_slices().swap_remove(t).0;
            return Err(AttnError::NonFiniteParameter { tensor, value: f64::from(bad) });
        }
        let values: Vec<String> = values.iter().map(f32::to_string).collect();
        text += &values.join(" ");
        text.push('\n');
    }
    Ok(text)
}

/// The lines of a checkpoint after its provenance comments (`# …` lines
/// before the header, which name the run that trained it).
fn checkpoint_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines().skip_while(|l| l.starts_with('#'))
}

/// The numbers of a checkpoint's header line, which must start with `kind`.
pub(crate) fn read_header(text: &str, kind: &str) -> Result<Vec<usize>, AttnError> {
    checkpoint_lines(text)
        .next()
        .and_then(|l| l.strip_prefix(kind))
        .ok_or_else(|| invalid(format!("not a {} file", kind.trim())))?
        .split_whitespace()
        .map(|w| w.parse().map_err(|e| invalid(format!("header: {e}"))))
        .collect()
}

/// Reads the `count` tensors after the header and loads them into `model`.
/// The file is not trusted: every value must be a finite `f32`, the values
/// must number `parameters` (checked before `model` is built, so that the
/// file's size, not its header, bounds the memory used), and nothing may
/// follow the last tensor.
pub(crate) fn read_checkpoint<P: Parameters>(
    text: &str,
    count: usize,
    parameters: Option<usize>,
    model: impl FnOnce() -> Result<P, AttnError>,
) -> Result<P, AttnError> {
    let mut lines = checkpoint_lines(text).skip(1);
    let tensors: Vec<Vec<f32>> = lines
        .by_ref()
        .take(count)
        .enumerate()
        .map(|(i, line)| read_tensor(i, line).map_err(invalid))
        .collect::<Result<_, _>>()?;
    let values: usize = tensors.iter().map(Vec::len).sum();
    if Some(values) != parameters {
        return Err(invalid(format!(
            "the file holds {values} values in {} tensors, but the header's model has \
             {} parameters in {count}",
            tensors.len(),
            parameters.unwrap_or(usize::MAX),
        )));
    }
    if let Some(extra) = lines.find(|l| !l.trim().is_empty()) {
        let start: String = extra.chars().take(20).collect();
        return Err(invalid(format!("unexpected content after the last tensor: {start}")));
    }
    let mut model = model()?;
    for (i, (tensor, values)) in model.slices_mut().into_iter().zip(&tensors).enumerate() {
        if values.len() != tensor.len() {
            let reason =
                format!("tensor {i} has {} values, expected {}", values.len(), tensor.len());
            return Err(invalid(reason));
        }
        tensor.iter_mut().zip(values).for_each(|(t, &v)| *t = P::Real::of(f64::from(v)));
    }
    Ok(model)
}

/// The error for a checkpoint file that does not hold a model.
pub(crate) fn invalid(reason: String) -> AttnError {
    AttnError::InvalidWeights { reason }
}

/// The values of tensor `i`'s line, each a finite `f32`.
fn read_tensor(i: usize, line: &str) -> Result<Vec<f32>, String> {
    line.split_whitespace()
        .map(|w| match w.parse::<f32>() {
            Ok(x) if x.is_finite() => Ok(x),
            Ok(x) => Err(format!("tensor {i}: {w} is {x} in f32, not a finite number")),
            Err(e) => Err(format!("tensor {i}: {e}")),
        })
        .collect()
}
