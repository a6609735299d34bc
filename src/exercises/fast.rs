//! The appendix "Making it fast": the backward pass's `D` from one tile,
//! and two tiles of the online softmax merged.

use ndarray::{Array1, ArrayRef2, Axis};

use crate::check::{check_finite, check_overflow};
use crate::error::AttnError;

// ANCHOR: row_d
/// Exercise 1: the backward pass's `D_i = Σ_a dO_ia O_ia` for each query
/// row `i` of a tile, from the output `O` and its gradient `dO` (both
/// `rows×d_v`): `Σ_j P_ij dP_ij` without the weights `P`. Shapes that
/// differ, entries that are not finite, and a `D` past `f32` are errors.
pub fn row_d(o: &ArrayRef2<f32>, d_o: &ArrayRef2<f32>) -> Result<Array1<f32>, AttnError> {
    if o.dim() != d_o.dim() {
        return Err(AttnError::ShapesDiffer {
            what: "the output O and its gradient dO",
            left: o.dim(),
            right: d_o.dim(),
        });
    }
    check_finite("O", o)?;
    check_finite("dO", d_o)?;
    let d = (o * d_o).sum_axis(Axis(1));
    check_overflow("D", &d.view().insert_axis(Axis(1)))?; // huge O and dO
    Ok(d)
}
// ANCHOR_END: row_d

// ANCHOR: merge
/// One query's softmax over some keys, as the online softmax keeps it: the
/// largest score `m`, the sum `l` of `exp(s_j − m)`, and the output before
/// division, `o = Σ_j exp(s_j − m) v_j`. No keys: `m = −∞`, `l = 0`, `o = 0`.
#[derive(Debug, Clone, PartialEq)]
pub struct Partial {
    /// The largest score.
    pub m: f32,
    /// The sum of the exponentials, each relative to `m`.
    pub l: f32,
    /// The weighted sum of the values, not yet divided by `l`.
    pub o: Array1<f32>,
}

/// Exercise 2: the partial softmax over the keys of `a` and of `b` together
/// (two disjoint sets of keys): each rescaled to the larger of the two
/// maxima. Both outputs must be as wide; `m` must not be NaN or `+∞`; a
/// merged sum or output past `f32` is an error.
pub fn merge_partials(a: &Partial, b: &Partial) -> Result<Partial, AttnError> {
    if a.o.len() != b.o.len() {
        let (left, right) = ((1, a.o.len()), (1, b.o.len()));
        return Err(AttnError::ShapesDiffer { what: "the two outputs", left, right });
    }
    for p in [a, b] {
        let finite = p.l.is_finite() && p.o.iter().all(|x| x.is_finite());
        if p.m.is_nan() || p.m == f32::INFINITY || !finite || p.l < 0.0 {
            let requirement = "must have a maximum below +∞, and a finite sum ≥ 0 and output";
            return Err(AttnError::InvalidArgument {
                name: "partial",
                value: p.m.into(),
                requirement,
            });
        }
    }
    let m = a.m.max(b.m);
    if m == f32::NEG_INFINITY {
        return Ok(a.clone()); // neither has seen a key
    }
    let (alpha, beta) = ((a.m - m).exp(), (b.m - m).exp()); // e^(−∞) = 0
    let (l, o) = (alpha * a.l + beta * b.l, &a.o * alpha + &b.o * beta);
    if !l.is_finite() {
        return Err(AttnError::Overflow { what: "the merged sum ℓ", position: (0, 0), value: l });
    }
    check_overflow("the merged output o", &o.view().insert_axis(Axis(0)))?;
    Ok(Partial { m, l, o })
}
// ANCHOR_END: merge

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scaling::standard_normal;
    use crate::softmax::softmax;
    use ndarray::{Array2, Axis};
    use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

    /// `D_i` is the dot product of row i of O with row i of dO (`sum_axis`
    /// of the elementwise product over the columns). The test compares it with
    /// `Σ_j P_ij dP_ij`, dP = dO Vᵀ, computed from the full weights P. O and dO
    /// of different shapes are an error (`AttnError::ShapesDiffer`).
    #[test]
    fn d_from_the_output_equals_d_from_the_weights() {
        let mut rng = StdRng::seed_from_u64(6);
        let (q, k, v) = (
            standard_normal(5, 4, &mut rng),
            standard_normal(9, 4, &mut rng),
            standard_normal(9, 3, &mut rng),
        );
        let a = crate::scaled_dot_product_attention(&q, &k, &v).unwrap();
        let d_o = standard_normal(5, 3, &mut rng);
        let d_p = d_o.dot(&v.t());
        let from_weights = (&a.weights * &d_p).sum_axis(Axis(1));
        let d = row_d(&a.output, &d_o).unwrap();
        for (i, (x, y)) in d.iter().zip(&from_weights).enumerate() {
            assert!((x - y).abs() < 1e-5, "query {i}: {x} from O, {y} from P");
        }
        assert!(row_d(&a.output, &Array2::zeros((5, 2))).is_err(), "dO 5×2 for O 5×3");
    }

    /// One tile's partial: m its largest score, l = Σ exp(s_j − m), o = Σ
    /// exp(s_j − m) v_j. Merging rescales each side by e^(its m − the larger m),
    /// then adds the l's and the o's. Folding every tile of a row into an empty
    /// partial (m = −∞), in either order, must give softmax(s)·V once o is
    /// divided by l. Outputs of different widths, and an m of NaN or +∞, are
    /// errors.
    #[test]
    fn merging_the_tiles_of_a_row_gives_its_softmax() {
        let mut rng = StdRng::seed_from_u64(7);
        let s = standard_normal(1, 11, &mut rng).remove_axis(Axis(0)) * 4.0;
        let v = standard_normal(11, 3, &mut rng);
        let exact = softmax(&s).unwrap().dot(&v);
        let partial = |keys: std::ops::Range<usize>| {
            let m = keys.clone().map(|j| s[j]).fold(f32::NEG_INFINITY, f32::max);
            let e: Vec<f32> = keys.clone().map(|j| (s[j] - m).exp()).collect();
            let o = keys.zip(&e).fold(Array1::zeros(3), |o, (j, e)| o + &v.row(j) * *e);
            Partial { m, l: e.iter().sum(), o }
        };
        let empty = Partial { m: f32::NEG_INFINITY, l: 0.0, o: Array1::zeros(3) };
        for tile in 1..=11 {
            let tiles: Vec<Partial> =
                (0..11).step_by(tile).map(|j| partial(j..(j + tile).min(11))).collect();
            let forward = tiles.iter().try_fold(empty.clone(), |acc, t| merge_partials(&acc, t));
            let backward =
                tiles.iter().rev().try_fold(empty.clone(), |acc, t| merge_partials(t, &acc));
            for merged in [forward.unwrap(), backward.unwrap()] {
                let gap =
                    (&merged.o / merged.l - &exact).mapv(f32::abs).fold(0.0, |a: f32, &b| a.max(b));
                assert!(gap < 1e-5, "tiles of {tile}: {gap} from softmax(s)·V");
            }
        }
        let wide = Partial { o: Array1::zeros(4), ..empty.clone() };
        assert!(merge_partials(&empty, &wide).is_err(), "outputs of 3 and 4");
        let nan = Partial { m: f32::NAN, ..empty.clone() };
        assert!(merge_partials(&nan, &empty).is_err(), "m = NaN");
    }
}
