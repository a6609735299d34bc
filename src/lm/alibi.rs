//! The KV cache of a language model with ALiBi positions: a head's sliding
//! cache whose scores are read less `slope·(t − j)`, for the newest token
//! `t` and each token `j` held.

use ndarray::{Array1, Array2, ArrayRef1, Axis};

use crate::cache::KeyValueCache;
use crate::error::AttnError;
use crate::masking::biased_attention;
use crate::sliding::SlidingCache;

/// One head's cache of keys and values with its ALiBi slope: the tokens
/// held carry their places in the text, so a key's bias is its distance
/// from the newest token, however far the text has run.
#[derive(Debug)]
pub(super) struct AlibiCache {
    held: SlidingCache,
    slope: f32,
}

impl AlibiCache {
    pub(super) fn new(held: SlidingCache, slope: f32) -> Self {
        AlibiCache { held, slope }
    }
}

impl KeyValueCache for AlibiCache {
    fn append(&mut self, k_t: &ArrayRef1<f32>, v_t: &ArrayRef1<f32>) -> Result<(), AttnError> {
        self.held.append(k_t, v_t)
    }

    /// Chapter 7's biased attention over the tokens held, the newest's
    /// query against each key `j`, less `slope·(t − j)`.
    fn attend(&self, q_t: &ArrayRef1<f32>) -> Result<Array1<f32>, AttnError> {
        let (tokens, k, v) = self.held.held_in_order();
        let newest = tokens.last().copied().unwrap_or(0);
        let bias = Array2::from_shape_fn((1, tokens.len()), |(_, j)| {
            -self.slope * (newest - tokens[j]) as f32
        });
        let q = q_t.to_owned().insert_axis(Axis(0));
        Ok(biased_attention(&q, &k, &v, &bias)?.output.row(0).to_owned())
    }

    fn len(&self) -> usize {
        self.held.len()
    }
}
