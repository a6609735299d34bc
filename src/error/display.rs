//! How each [`AttnError`] reads: a sentence that names what the caller
//! passed, in the book's notation.

use std::fmt;

use super::{AttnError, Shape};

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
            AttnError::OutOfRange {
                name,
                value,
                requirement,
                limit,
            } => write!(f, "{name} {requirement} ({limit}), got {value}"),
            AttnError::Mismatched { name, requirement } => write!(f, "{name} {requirement}"),
            AttnError::Gpu { stage, ref reason } => write!(f, "the GPU failed {stage}: {reason}"),
            AttnError::PoolFull { blocks, block_size } => write!(
                f,
                "the KV cache's pool is full: all {blocks} blocks of {block_size} tokens are in \
                 use; finish or pause a sequence to free its blocks, or make a larger pool"
            ),
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
            AttnError::ProductShapes { a, b } => write!(
                f,
                "a·b needs as many columns in a as rows in b, but a is {} and b is {}",
                shape(a),
                shape(b)
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
            AttnError::TooLarge {
                what,
                ref sizes,
                limit,
            } => {
                let shape: Vec<String> = sizes.iter().map(usize::to_string).collect();
                write!(
                    f,
                    "{what} would need {} entries, more than the {limit} (2^{}) the crate \
                     builds at once: use smaller sizes",
                    shape.join(" × "),
                    limit.ilog2()
                )
            }
            AttnError::NonFiniteParameter { ref tensor, value } => write!(
                f,
                "the model's parameter {tensor} holds {value}: its outputs would not be finite \
                 (reload or retrain the model)"
            ),
            AttnError::TooLong { what, len, max } => write!(
                f,
                "{what} are {len} long, but the model learned only {max} positions"
            ),
            AttnError::NonFiniteUpdate { ref tensor, value } => write!(
                f,
                "the step would set a parameter of {tensor} to {value}: the learning rate \
                 (times its schedule factor) is too large; the parameters were left unchanged"
            ),
            AttnError::ModelFile {
                ref path,
                ref reason,
            } => write!(
                f,
                "cannot load the model from {path}: {reason} (`cargo xtask model` fetches it)"
            ),
            AttnError::Corpus {
                ref source,
                ref reason,
            } => write!(f, "cannot use {source} as a corpus: {reason}"),
            AttnError::Dataset {
                ref source,
                ref reason,
            } => write!(f, "cannot read the dataset from {source}: {reason}"),
            AttnError::NotInVocabulary {
                ref text,
                at,
                character,
                size,
            } => write!(
                f,
                "cannot encode {text:?}: character {at}, {character:?}, is not one of the \
                 vocabulary's {size} characters"
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
