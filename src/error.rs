//! The one error type of the crate.
//!
//! Every public function checks the shapes of its arguments before it touches
//! the data, and reports a mismatch with both shapes in the message, e.g.
//! `keys have d_k = 32 but queries have d_k = 64 (queries: 3×64, keys: 4×32)`.

use std::fmt;

/// A shape as `(rows, columns)`, printed as `rows×columns`.
pub type Shape = (usize, usize);

/// What can be wrong with the arguments of a function in this crate.
#[derive(Debug, Clone, PartialEq)]
pub enum AttnError {
    /// Queries and keys must have the same width `d_k`, since scores are
    /// their dot products.
    KeyWidthMismatch {
        /// Shape of `Q`, `n×d_k`.
        queries: Shape,
        /// Shape of `K`, `m×d_k`.
        keys: Shape,
    },
    /// Keys and values must have the same number of rows `m`: value `j`
    /// belongs to key `j`.
    KeyValueCountMismatch {
        /// Shape of `K`, `m×d_k`.
        keys: Shape,
        /// Shape of `V`, `m×d_v`.
        values: Shape,
    },
    /// An input with no rows or no columns: there is nothing to attend over.
    Empty {
        /// Which argument was empty (`"queries"`, `"keys"`, `"values"`, …).
        name: &'static str,
        /// Its shape.
        shape: Shape,
    },
    /// An input sequence whose rows are not `d_model` wide.
    ModelWidthMismatch {
        /// Which input (`"x"`, `"decoder input"`, `"encoder output"`, …).
        name: &'static str,
        /// The width the layer was built for.
        d_model: usize,
        /// The input's shape.
        shape: Shape,
    },
    /// A mask must have one entry per score: `n×m`.
    MaskShapeMismatch {
        /// The scores' shape, `n×m`.
        scores: Shape,
        /// The mask's shape.
        mask: Shape,
    },
    /// Multi-head attention splits `d_model` into `h` equal heads.
    HeadsDoNotDivide {
        /// The model width.
        d_model: usize,
        /// The number of heads asked for.
        h: usize,
    },
    /// A batch of queries, keys and values whose batch sizes differ.
    BatchSizeMismatch {
        /// Batch size of `Q`.
        queries: usize,
        /// Batch size of `K`.
        keys: usize,
        /// Batch size of `V`.
        values: usize,
    },
    /// A token appended to a [`crate::masking::KvCache`] whose key or value
    /// width differs from the cached ones.
    CacheWidthMismatch {
        /// `"key"` or `"value"` (a query of the wrong width is a [`AttnError::KeyWidthMismatch`]).
        name: &'static str,
        /// The width the cache holds.
        cached: usize,
        /// The new vector's width.
        new: usize,
    },
    /// A causal method (causal linear or local attention, decoding with a KV
    /// cache) needs one key per query, at the same positions.
    NotSelfAttention {
        /// Number of queries, `n`.
        queries: usize,
        /// Number of keys, `m`.
        keys: usize,
    },
    /// Two matrices that must have the same shape (an approximation and the
    /// exact result, say) do not.
    ShapesDiffer {
        /// What is compared, e.g. `"approximation and exact output"`.
        what: &'static str,
        /// The first shape.
        left: Shape,
        /// The second shape.
        right: Shape,
    },
    /// A measurement the book's data files should hold is missing.
    MissingMeasurement {
        /// The method, e.g. `"naive"`.
        method: String,
        /// The sequence length.
        n: u64,
    },
    /// A score softmax cannot weigh: NaN, or `+∞` (`−∞` is a dropped key).
    InvalidScore {
        /// `(row, column)` of the first such score (row 0 for a single row).
        position: (usize, usize),
        /// The score.
        value: f32,
    },
    /// A result computed from finite inputs that does not fit in `f32`.
    Overflow {
        /// What overflowed, e.g. `"the scores QKᵀ/√d_k"`.
        what: &'static str,
        /// `(row, column)` of the first entry that is not finite.
        position: (usize, usize),
        /// That entry: `±∞`, or NaN (`∞ − ∞`).
        value: f32,
    },
    /// A gradient that is not finite: an optimiser step would make the
    /// parameters non-finite too.
    NonFiniteGradient {
        /// The parameter tensor, e.g. `"block 1 W_Q"`.
        tensor: String,
        /// The first entry that is not finite.
        value: f64,
    },
    /// A data file of `book/data` that cannot be read.
    MissingDataFile {
        /// The file's path.
        path: String,
        /// Why it cannot be read.
        reason: String,
    },
    /// Two committed data files put side by side whose figures come from
    /// different measurement runs or are different statistics (a mean and a
    /// best-of), which the book never compares.
    MixedMeasurements {
        /// The first file, its run and statistic.
        first: String,
        /// The file that differs from it.
        second: String,
    },
    /// A pretrained model's file (weights, configuration, tokenizer) that
    /// cannot be read, or does not hold what the model needs.
    ModelFile {
        /// The file's path.
        path: String,
        /// What is wrong, e.g. `"no tensor named encoder.layer.0.attention.self.query.weight"`.
        reason: String,
    },
    /// A saved model that cannot be read back.
    InvalidWeights {
        /// What is wrong, e.g. `"tensor 3 has 10 values, expected 12"`.
        reason: String,
    },
    /// A scalar argument outside its allowed range (e.g. a temperature ≤ 0).
    InvalidArgument {
        /// The argument's name.
        name: &'static str,
        /// The value given.
        value: f64,
        /// What the value must satisfy, e.g. `"must be finite and > 0"`.
        requirement: &'static str,
    },
}

/// Formats a shape the way the book writes it: `3×64`.
fn shape(s: Shape) -> String {
    format!("{}×{}", s.0, s.1)
}

impl fmt::Display for AttnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            AttnError::KeyWidthMismatch { queries, keys } => write!(
                f,
                "keys have d_k = {} but queries have d_k = {} (queries: {}, keys: {})",
                keys.1,
                queries.1,
                shape(queries),
                shape(keys)
            ),
            AttnError::KeyValueCountMismatch { keys, values } => write!(
                f,
                "values have m = {} rows but keys have m = {} (keys: {}, values: {})",
                values.0,
                keys.0,
                shape(keys),
                shape(values)
            ),
            AttnError::Empty { name, shape: s } => write!(
                f,
                "{name} has shape {}, which is empty: at least one row and one column are needed",
                shape(s)
            ),
            AttnError::ModelWidthMismatch {
                name,
                d_model,
                shape: s,
            } => write!(
                f,
                "{name} has rows of width {} but the layer expects d_model = {d_model} (shape {})",
                s.1,
                shape(s)
            ),
            AttnError::MaskShapeMismatch { scores, mask } => write!(
                f,
                "the mask is {} but the scores are {} (n queries × m keys)",
                shape(mask),
                shape(scores)
            ),
            AttnError::HeadsDoNotDivide { d_model, h } => write!(
                f,
                "d_model = {d_model} cannot be split into h = {h} equal heads \
                 ({d_model} is not a multiple of {h})"
            ),
            AttnError::BatchSizeMismatch {
                queries,
                keys,
                values,
            } => write!(
                f,
                "batch sizes differ: queries {queries}, keys {keys}, values {values}"
            ),
            AttnError::InvalidArgument {
                name,
                value,
                requirement,
            } => write!(f, "{name} {requirement}, got {}", shortest(value)),
            AttnError::NotSelfAttention { queries, keys } => write!(
                f,
                "causal attention needs one key per query, but there are {queries} queries and {keys} keys"
            ),
            AttnError::ShapesDiffer { what, left, right } => write!(
                f,
                "{what} must have the same shape, but they are {} and {}",
                shape(left),
                shape(right)
            ),
            AttnError::MissingMeasurement { ref method, n } => write!(
                f,
                "no measurement of {method} at n = {n} in book/data (run `cargo xtask measure`)"
            ),
            AttnError::InvalidScore { position, value } => write!(
                f,
                "score ({}, {}) is {value}: softmax needs finite scores, or −∞ for a dropped key",
                position.0, position.1
            ),
            AttnError::Overflow {
                what,
                position,
                value,
            } => write!(
                f,
                "{what} overflow f32: entry ({}, {}) is {value} although every input is finite \
                 (scale the inputs down)",
                position.0, position.1
            ),
            AttnError::NonFiniteGradient { ref tensor, value } => write!(
                f,
                "the gradient of {tensor} holds {value}: a step would make the parameters \
                 non-finite"
            ),
            AttnError::MissingDataFile {
                ref path,
                ref reason,
            } => write!(f, "cannot read {path}: {reason} (run `cargo xtask measure`)"),
            AttnError::MixedMeasurements {
                ref first,
                ref second,
            } => write!(
                f,
                "{first} and {second} are not one measurement run with one statistic, so their \
                 figures cannot be compared: measure them again together (`cargo xtask measure fast`)"
            ),
            AttnError::ModelFile {
                ref path,
                ref reason,
            } => write!(
                f,
                "cannot load the model from {path}: {reason} (`cargo xtask model` fetches it)"
            ),
            AttnError::InvalidWeights { ref reason } => {
                write!(f, "cannot read the weights: {reason}")
            }
            AttnError::CacheWidthMismatch { name, cached, new } => write!(
                f,
                "the new {name} has width {new} but the cache expects width {cached}"
            ),
        }
    }
}

impl std::error::Error for AttnError {}

/// `value` as its shortest decimal: as an `f32` if it is one (an `f32`
/// argument, or a count below 2^24), else as the `f64` it is.
fn shortest(value: f64) -> String {
    let single = value as f32;
    if f64::from(single) == value {
        single.to_string()
    } else {
        value.to_string()
    }
}

/// Checks that `x`, computed from finite inputs, is finite: an entry that is
/// not means `f32` overflowed on the way.
pub(crate) fn check_overflow<F: crate::real::Real>(
    what: &'static str,
    x: &ndarray::ArrayRef2<F>,
) -> Result<(), AttnError> {
    check_overflow_at(what, x, (0, 0))
}

/// [`check_overflow`] for a block of a larger matrix whose first entry is at
/// `offset`: the error names the entry's position in the whole.
pub(crate) fn check_overflow_at<F: crate::real::Real>(
    what: &'static str,
    x: &ndarray::ArrayRef2<F>,
    offset: (usize, usize),
) -> Result<(), AttnError> {
    // One branch-free pass (it vectorises); the position only on failure.
    let finite = match x.as_slice_memory_order() {
        Some(all) => all.iter().fold(true, |ok, v| ok & v.is_finite()),
        None => x.iter().fold(true, |ok, v| ok & v.is_finite()),
    };
    if finite {
        return Ok(());
    }
    match x.indexed_iter().find(|(_, v)| !v.is_finite()) {
        Some(((i, j), &value)) => Err(AttnError::Overflow {
            what,
            position: (offset.0 + i, offset.1 + j),
            value: value.wide() as f32,
        }),
        None => Ok(()),
    }
}

/// The most entries a matrix the crate builds from sizes alone may have:
/// 2^30, 4 GiB of `f32`. A larger request is an error rather than an
/// allocation failure, which would abort the process.
pub const MAX_ENTRIES: usize = 1 << 30;

/// Checks that a `rows×cols` matrix to be built has at most [`MAX_ENTRIES`].
pub(crate) fn check_size(name: &'static str, rows: usize, cols: usize) -> Result<(), AttnError> {
    match rows.checked_mul(cols) {
        Some(entries) if entries <= MAX_ENTRIES => Ok(()),
        _ => Err(AttnError::InvalidArgument {
            name,
            value: rows as f64 * cols as f64,
            requirement: "would have more than 2^30 entries (rows × columns)",
        }),
    }
}

/// Checks that an input has at least one row and one column.
pub(crate) fn check_not_empty(name: &'static str, s: Shape) -> Result<(), AttnError> {
    if s.0 == 0 || s.1 == 0 {
        return Err(AttnError::Empty { name, shape: s });
    }
    Ok(())
}

/// Checks that token vectors `x` are non-empty, `d_model` wide and finite.
pub(crate) fn check_model_width(
    name: &'static str,
    x: &ndarray::ArrayRef2<f32>,
    d_model: usize,
) -> Result<(), AttnError> {
    let s = x.dim();
    check_not_empty(name, s)?;
    if s.1 != d_model {
        return Err(AttnError::ModelWidthMismatch {
            name,
            d_model,
            shape: s,
        });
    }
    check_finite(name, x)
}

/// Checks that an input holds only finite numbers.
pub(crate) fn check_finite(
    name: &'static str,
    x: &ndarray::ArrayRef2<f32>,
) -> Result<(), AttnError> {
    match x.iter().find(|v| !v.is_finite()) {
        Some(&bad) => Err(AttnError::InvalidArgument {
            name,
            value: f64::from(bad),
            requirement: "must hold only finite numbers",
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_both_shapes() {
        let e = AttnError::KeyWidthMismatch {
            queries: (3, 64),
            keys: (4, 32),
        };
        assert_eq!(
            e.to_string(),
            "keys have d_k = 32 but queries have d_k = 64 (queries: 3×64, keys: 4×32)"
        );
        let e = AttnError::KeyValueCountMismatch {
            keys: (4, 8),
            values: (5, 2),
        };
        assert_eq!(
            e.to_string(),
            "values have m = 5 rows but keys have m = 4 (keys: 4×8, values: 5×2)"
        );
    }
}
