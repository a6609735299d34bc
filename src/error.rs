//! The one error type of the crate.
//!
//! Every public function checks the shapes of its arguments before it touches
//! the data, and reports a mismatch with both shapes in the message, e.g.
//! `keys have d_k = 32 but queries have d_k = 64 (queries: 3×64, keys: 4×32)`.

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
    /// A token appended to a [`crate::cache::KvCache`] whose key or value
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
    /// A matrix product `a·b` whose inner sizes differ: `a` must have as
    /// many columns as `b` has rows.
    ProductShapes {
        /// The shape of `a`, `m×k`.
        a: Shape,
        /// The shape of `b`, `k×n`.
        b: Shape,
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
    /// An array or a model whose sizes multiply to more than the crate
    /// builds: an error here rather than an allocation failure, which would
    /// abort the process.
    TooLarge {
        /// What would have been built, e.g. `"the scores QKᵀ"`.
        what: &'static str,
        /// The sizes whose product is too large.
        sizes: Vec<usize>,
        /// The most entries (or parameters) allowed.
        limit: usize,
    },
    /// A model parameter that is not finite (set through
    /// [`crate::nn::Parameters::slices_mut`], say): what it computes cannot
    /// be trusted.
    NonFiniteParameter {
        /// The parameter tensor, e.g. `"block 1 W_Q"`.
        tensor: String,
        /// The first entry that is not finite.
        value: f64,
    },
    /// A sequence longer than a model can read.
    TooLong {
        /// What is too long, e.g. `"the token ids"`.
        what: &'static str,
        /// Its length.
        len: usize,
        /// The most the model reads (the positions it learned).
        max: usize,
    },
    /// An optimiser step that would make a parameter non-finite (a learning
    /// rate too large for the parameters' float type); the step was not
    /// taken.
    NonFiniteUpdate {
        /// The parameter tensor, e.g. `"block 1 W_Q"`.
        tensor: String,
        /// The value the first such parameter would have taken.
        value: f64,
    },
    /// A pretrained model's file (weights, configuration, tokenizer) that
    /// cannot be read, or does not hold what the model needs.
    ModelFile {
        /// The file's path.
        path: String,
        /// What is wrong, e.g. `"no tensor named encoder.layer.0.attention.self.query.weight"`.
        reason: String,
    },
    /// A text that cannot be a language model's corpus, or a corpus's
    /// files that are missing or not whole.
    Corpus {
        /// Where the text came from: a directory, or `"the text"`.
        source: String,
        /// What is wrong, and what to do.
        reason: String,
    },
    /// A dataset's file that is missing, not whole, or not what it should
    /// hold.
    Dataset {
        /// The file, or `"the text"`.
        source: String,
        /// What is wrong, and what to do.
        reason: String,
    },
    /// A text to encode (a prompt) with a character outside the vocabulary.
    NotInVocabulary {
        /// The text, as the caller passed it.
        text: String,
        /// Where the character is, counted in characters from 0.
        at: usize,
        /// The character.
        character: char,
        /// How many characters the vocabulary has.
        size: usize,
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
    /// A count or an index past the size it is measured against: a head
    /// past the number of heads, a length past the padded length.
    OutOfRange {
        /// The argument's name.
        name: &'static str,
        /// The value given.
        value: usize,
        /// What the value must satisfy, e.g. `"must be less than the number
        /// of heads h"`.
        requirement: &'static str,
        /// The size it is measured against (the number of heads, say).
        limit: usize,
    },
    /// An argument that is not a number does not fit: a forward pass of
    /// another model, gradients of another model's shape.
    Mismatched {
        /// The argument's name.
        name: &'static str,
        /// What it must satisfy.
        requirement: &'static str,
    },
    /// A paged KV cache's pool with no free block left for a token that
    /// needs one: the token was not read. Finish or pause a sequence to
    /// free its blocks, or make a larger pool.
    PoolFull {
        /// The blocks the pool holds, all in use.
        blocks: usize,
        /// The tokens a block holds.
        block_size: usize,
    },
    /// The GPU (the `gpu` feature) could not be found, set up or run.
    Gpu {
        /// What was being done, e.g. `"finding an adapter"`.
        stage: &'static str,
        /// What went wrong, and what to do.
        reason: String,
    },
}

mod display;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_both_shapes() {
        let e = AttnError::KeyWidthMismatch { queries: (3, 64), keys: (4, 32) };
        assert_eq!(
            e.to_string(),
            "keys have d_k = 32 but queries have d_k = 64 (queries: 3×64, keys: 4×32)"
        );
        let e = AttnError::KeyValueCountMismatch { keys: (4, 8), values: (5, 2) };
        assert_eq!(
            e.to_string(),
            "values have m = 5 rows but keys have m = 4 (keys: 4×8, values: 5×2)"
        );
    }
}
