//! Chapter 8 exercises: predicting naive attention's peak memory.

use crate::error::AttnError;

// ANCHOR: naive_peak
/// Exercise 2: the bytes naive attention holds at once for `n` queries, `m`
/// keys, widths `d_k` and `d_v`, in `f32`: the `n×m` scores (the weights
/// overwrite them), the `n×d_v` output and the `n×d_k` copy of `Q / √d_k`,
/// `4(nm + n·d_v + n·d_k)`.
pub fn naive_peak_bytes(n: u64, m: u64, d_k: u64, d_v: u64) -> Result<u64, AttnError> {
    let floats = [n.checked_mul(m), n.checked_mul(d_v), n.checked_mul(d_k)]
        .into_iter()
        .try_fold(0_u64, |total, part| total.checked_add(part?));
    floats
        .and_then(|f| f.checked_mul(4))
        .ok_or(AttnError::InvalidArgument {
            name: "n",
            value: n as f64,
            requirement: "with these m, d_k and d_v gives more bytes than a u64 can count",
        })
}
// ANCHOR_END: naive_peak

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::measurements::read_measurements;

    const MEMORY: &str = include_str!("../../book/data/ch08-memory.csv");

    #[test]
    fn the_prediction_misses_the_measured_peak_by_a_constant() {
        let peaks = read_measurements(MEMORY, "method", "peak_bytes").unwrap();
        let naive: Vec<_> = peaks.iter().filter(|r| r.method == "naive").collect();
        assert!(naive.len() >= 5, "the memory benchmark's naive rows");
        let differences: Vec<i64> = naive
            .iter()
            .map(|r| r.value as i64 - naive_peak_bytes(r.n, r.n, 64, 64).unwrap() as i64)
            .collect();
        assert!(
            differences.iter().all(|&d| d == differences[0] && d > 0),
            "measured minus predicted, by n: {differences:?}"
        );
        for r in naive.iter().filter(|r| r.n >= 4096) {
            assert!((differences[0] as f64) < 0.01 * r.value, "n = {}", r.n);
        }
    }

    #[test]
    fn rectangular_shapes_count_each_matrix_once_and_overflow_is_an_error() {
        assert_eq!(naive_peak_bytes(3, 5, 2, 7).unwrap(), 4 * (15 + 21 + 6));
        let error = naive_peak_bytes(1 << 32, 1 << 32, 64, 64).unwrap_err();
        assert!(error.to_string().starts_with("n with these m"), "{error}");
    }
}
