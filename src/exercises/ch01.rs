//! Chapter 1 exercises: Luong's general multiplicative score.

use ndarray::{Array2, ArrayRef2};

use crate::check::{check_finite, check_not_empty, check_overflow, check_size};
use crate::error::AttnError;

// ANCHOR: multiplicative
/// Exercise 1: Luong's "general" score `s_ij = q_iᵀ W k_j` for queries `Q`
/// (`n×d_q`), keys `K` (`m×d_k`) and `W` (`d_q×d_k`), all at once.
///
/// `S = Q W Kᵀ`, the dot product of the projected queries `QW` with the keys.
/// Empty or non-finite inputs, a `W` of another shape, and scores (or `QW`)
/// too large to hold or past `f32` are errors.
pub fn multiplicative_scores(
    q: &ArrayRef2<f32>,
    k: &ArrayRef2<f32>,
    w: &ArrayRef2<f32>,
) -> Result<Array2<f32>, AttnError> {
    for (name, x) in [("queries", q), ("keys", k), ("W", w)] {
        check_not_empty(name, x.dim())?;
        check_finite(name, x)?;
    }
    if w.dim() != (q.ncols(), k.ncols()) {
        return Err(AttnError::ShapesDiffer {
            what: "W and d_q×d_k (the widths of the queries and the keys)",
            left: w.dim(),
            right: (q.ncols(), k.ncols()),
        });
    }
    check_size("Q W", q.nrows(), k.ncols())?; // both products must fit in memory
    check_size("the scores Q W Kᵀ", q.nrows(), k.nrows())?;
    let scores = q.dot(w).dot(&k.t()); // (n×d_q)(d_q×d_k)(d_k×m) = n×m
    check_overflow("the scores Q W Kᵀ", &scores)?;
    Ok(scores)
}
// ANCHOR_END: multiplicative

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scaling::standard_normal;
    use approx::assert_abs_diff_eq;
    use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

    /// The score of query i and key j is q_i W k_jᵀ, so all of them at once are Q W Kᵀ, an n × m
    /// matrix (ndarray's `dot`). W must be d_q × d_k, as wide as a key and as tall as a query is
    /// wide: for any other shape return `AttnError::ShapesDiffer { what, left, right }` (shapes as
    /// `(rows, columns)`), never a panic from `dot`.
    #[test]
    fn the_general_score_is_a_dot_product_of_projected_queries() {
        let mut rng = StdRng::seed_from_u64(11);
        let (q, k) = (standard_normal(3, 4, &mut rng), standard_normal(5, 2, &mut rng));
        let w = standard_normal(4, 2, &mut rng);
        let s = multiplicative_scores(&q, &k, &w).unwrap();
        assert_eq!(s.dim(), (3, 5));
        assert_abs_diff_eq!(s, q.dot(&w).dot(&k.t()), epsilon = 1e-5);
        let identity = Array2::eye(4);
        let square_k = standard_normal(5, 4, &mut rng);
        assert_abs_diff_eq!(
            multiplicative_scores(&q, &square_k, &identity).unwrap(),
            q.dot(&square_k.t()),
            epsilon = 1e-5
        );
        assert!(multiplicative_scores(&q, &k, &identity).is_err(), "a 4×4 W where 4×2 is needed");
    }
}
