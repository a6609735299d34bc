//! Chapter 8 exercises: predicting naive attention's peak memory.

use crate::error::AttnError;

// ANCHOR: naive_peak
/// Exercise 2: the bytes naive attention holds at once for `n` queries, `m`
/// keys, widths `d_k` and `d_v`, in `f32`.
///
/// The `n×m` scores (the weights overwrite them), the `n×d_v` output and
/// the `n×d_k` copy of `Q / √d_k`: `4(nm + n·d_v + n·d_k)`. A size of 0
/// (attention needs a query, a key and widths) and a count past `u64` are
/// errors.
pub fn naive_peak_bytes(n: u64, m: u64, d_k: u64, d_v: u64) -> Result<u64, AttnError> {
    for (name, size) in [("n", n), ("m", m), ("d_k", d_k), ("d_v", d_v)] {
        if size == 0 {
            let requirement = "must be at least 1";
            return Err(AttnError::InvalidArgument { name, value: 0.0, requirement });
        }
    }
    let floats = [n.checked_mul(m), n.checked_mul(d_v), n.checked_mul(d_k)]
        .into_iter()
        .try_fold(0_u64, |total, part| total.checked_add(part?));
    floats.and_then(|f| f.checked_mul(4)).ok_or(AttnError::InvalidArgument {
        name: "n",
        value: n as f64,
        requirement: "with these m, d_k and d_v gives more bytes than a u64 can count",
    })
}
// ANCHOR_END: naive_peak

#[cfg(test)]
mod tests {
    use super::*;
    /// Count what naive attention allocates, not its inputs: the n × m scores (the weights
    /// overwrite them), the n × d_v output and the n × d_k copy of Q/√d_k, four bytes an f32.
    /// Count with `checked_mul` and `checked_add`: when a product or sum overflows u64, return
    /// `AttnError::InvalidArgument` named "n", so that the message starts "n with these m".
    #[test]
    fn rectangular_shapes_count_each_matrix_once_and_overflow_is_an_error() {
        assert_eq!(naive_peak_bytes(3, 5, 2, 7).unwrap(), 4 * (15 + 21 + 6));
        let error = naive_peak_bytes(1 << 32, 1 << 32, 64, 64).unwrap_err();
        assert!(error.to_string().starts_with("n with these m"), "{error}");
    }
}
