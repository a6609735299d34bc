//! The small models the language model's unit tests serve, page and
//! speculate with.

use super::{LmConfig, SHAKESPEARE_MODEL};

/// A model of 2 blocks of 4 heads, 16 wide, over `vocab` tokens, reading
/// `context`: small enough for a test, with every head a group could share.
pub(crate) fn small(vocab: usize, context: usize) -> LmConfig {
    LmConfig {
        vocab,
        context,
        d_model: 16,
        heads: 4,
        kv_heads: 4,
        layers: 2,
        d_ff: 32,
        ..SHAKESPEARE_MODEL
    }
}
