//! Positional information: sinusoidal encodings, rotary embeddings (RoPE)
//! and ALiBi's distance bias.
//!
//! Self-attention alone cannot tell positions apart: permuting the input
//! rows permutes the output rows and changes nothing else. The three schemes
//! here give it positions in three places:
//!
//! | scheme | where position enters | shape |
//! | --- | --- | --- |
//! | [`sinusoidal`] | added to the token vectors, once, before the first layer | `positions×d_model` |
//! | [`rope`] | queries and keys rotated by an angle proportional to position, in every layer | `n×d_k` in, `n×d_k` out |
//! | [`alibi_bias`] | a penalty `−slope·(i − j)` added to the scores, per head | `n×n` |

use ndarray::{Array1, Array2, ArrayRef2};

use crate::check::{check_finite, check_overflow, check_size};
use crate::error::AttnError;
use crate::real::Real;

/// Checks that `d` is a positive, even width: the schemes here work on
/// pairs of dimensions `(2f, 2f+1)`.
pub(crate) fn check_even(name: &'static str, d: usize) -> Result<(), AttnError> {
    if d == 0 || d % 2 == 1 {
        return Err(AttnError::InvalidArgument {
            name,
            value: d as f64,
            requirement: "must be even and > 0 (dimensions come in sin/cos pairs)",
        });
    }
    Ok(())
}

// ANCHOR: sinusoidal
/// The `d/2` angular frequencies `ω_f = 1 / 10000^(2f/d)`, `f = 0, …, d/2 − 1`:
/// from 1 radian per position down to almost `1/10000`.
pub fn frequencies(d: usize) -> Result<Array1<f64>, AttnError> {
    check_size("the frequencies", 1, d / 2)?;
    Ok(Array1::from(omegas(d)))
}

/// [`frequencies`] for a width some array already has.
pub(crate) fn omegas(d: usize) -> Vec<f64> {
    (0..d / 2).map(|f| 10000f64.powf(-2.0 * f as f64 / d as f64)).collect()
}

/// The sinusoidal encoding of positions `0..positions`: a `positions×d_model`
/// matrix with, for each pair `f`,
///
/// `PE[pos, 2f] = sin(pos · ω_f)` and `PE[pos, 2f + 1] = cos(pos · ω_f)`:
/// sine and cosine of the same frequency **interleaved**, side by side.
pub fn sinusoidal(positions: usize, d_model: usize) -> Result<Array2<f32>, AttnError> {
    check_even("d_model", d_model)?;
    check_size("positional encoding", positions, d_model)?;
    let omega = frequencies(d_model)?;
    Ok(Array2::from_shape_fn((positions, d_model), |(pos, col)| {
        let angle = pos as f64 * omega[col / 2]; // columns 2f and 2f+1 share ω_f
        let value = if col % 2 == 0 { angle.sin() } else { angle.cos() };
        value as f32
    }))
}
// ANCHOR_END: sinusoidal

// ANCHOR: offset_map
/// The linear map `M_Δ` with `PE(pos + Δ) = M_Δ · PE(pos)` for every `pos`:
/// block-diagonal, one 2×2 rotation by `Δ · ω_f` per pair `(sin, cos)`,
///
/// ```text
/// ⎡ sin((pos+Δ)ω) ⎤   ⎡  cos Δω   sin Δω ⎤ ⎡ sin(pos·ω) ⎤
/// ⎣ cos((pos+Δ)ω) ⎦ = ⎣ −sin Δω   cos Δω ⎦ ⎣ cos(pos·ω) ⎦
/// ```
///
/// It depends on the offset `delta` only, not on `pos`.
pub fn offset_map(delta: usize, d_model: usize) -> Result<Array2<f32>, AttnError> {
    check_even("d_model", d_model)?;
    check_size("offset map", d_model, d_model)?;
    let mut m = Array2::zeros((d_model, d_model));
    for (f, omega) in frequencies(d_model)?.iter().enumerate() {
        let (sin, cos) = (delta as f64 * omega).sin_cos();
        let (s, c) = (2 * f, 2 * f + 1); // the sin row and the cos row of pair f
        m[[s, s]] = cos as f32;
        m[[s, c]] = sin as f32;
        m[[c, s]] = -sin as f32;
        m[[c, c]] = cos as f32;
    }
    Ok(m)
}
// ANCHOR_END: offset_map

// ANCHOR: look_back
/// The scores `X W_Q (X W_K)ᵀ` of a layer with `W_Q = M_Δ` and `W_K = I`,
/// for the inputs `x`, one position per row from 0 (`n×d_model`), without
/// the division by `√d_k`, which changes no ranking. When the inputs are
/// the encoding alone, query `i` scores key `j` by
/// `PE(i) · M_Δ PE(j) = PE(i) · PE(j + Δ) = Σ_f cos((i − j − Δ) ω_f)`,
/// largest at `j = i − Δ`.
pub fn look_back_scores(x: &ArrayRef2<f32>, delta: usize) -> Result<Array2<f32>, AttnError> {
    check_finite("x", x)?;
    check_size("look-back scores", x.nrows(), x.nrows())?;
    let w_q = offset_map(delta, x.ncols())?; // W_K = I, so W_Q W_Kᵀ = M_Δ
    let scores = x.dot(&w_q).dot(&x.t());
    check_overflow("look-back scores", &scores)?; // products of huge entries
    Ok(scores)
}
// ANCHOR_END: look_back

// ANCHOR: rope
/// Rotary position embedding: row `r` of `x` (a query or key at position
/// `first_position + r`) has each pair `(x_2f, x_2f+1)` rotated by the angle
/// `pos · ω_f`:
///
/// `(x_2f, x_2f+1) ↦ (x_2f cos θ − x_2f+1 sin θ, x_2f sin θ + x_2f+1 cos θ)`,
/// `θ = pos · ω_f`. Shape in = shape out = `n×d_k`, `d_k` even.
pub fn rope(x: &ArrayRef2<f32>, first_position: usize) -> Result<Array2<f32>, AttnError> {
    check_even("d_k", x.ncols())?;
    check_positions(first_position, x.nrows())?;
    check_finite("x", x)?;
    let mut out = x.to_owned();
    rotate_by(&mut out, first_position, Rotation::Forward, &omegas(x.ncols()));
    check_overflow("RoPE's rotated rows", &out)?; // a·cos − b·sin of huge a, b
    Ok(out)
}

/// Which way [`rotate`] turns: by `+θ` (RoPE), or by `−θ`, its inverse and
/// transpose (the backward pass of RoPE, which rotates gradients back).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rotation {
    Forward,
    Back,
}

/// Rotates each pair `f` of columns of each row `r` of `x` in place by
/// `±pos · ω_f`, with `pos = first + r` and `ω_f = omega[f]`; any float type.
pub(crate) fn rotate_by<F: Real>(x: &mut ArrayRef2<F>, first: usize, way: Rotation, omega: &[f64]) {
    let sign = if way == Rotation::Forward { 1.0 } else { -1.0 };
    for (r, mut row) in x.rows_mut().into_iter().enumerate() {
        let pos = (first + r) as f64;
        for (f, omega_f) in omega.iter().enumerate() {
            let (sin, cos) = (sign * pos * omega_f).sin_cos();
            let (sin, cos) = (F::of(sin), F::of(cos));
            let (a, b) = (row[2 * f], row[2 * f + 1]);
            row[2 * f] = a * cos - b * sin;
            row[2 * f + 1] = a * sin + b * cos;
        }
    }
}
// ANCHOR_END: rope

/// [`rotate_by`] with plain RoPE's frequencies, [`frequencies`].
pub(crate) fn rotate<F: Real>(x: &mut ArrayRef2<F>, first_position: usize, way: Rotation) {
    rotate_by(x, first_position, way, &omegas(x.ncols()));
}

/// Checks that positions `first .. first + n` exist: their last one fits
/// in a `usize`.
pub(crate) fn check_positions(first: usize, n: usize) -> Result<(), AttnError> {
    match first.checked_add(n) {
        Some(_) => Ok(()),
        None => Err(AttnError::InvalidArgument {
            name: "first position",
            value: first as f64,
            requirement: "plus the number of rows must fit in a usize",
        }),
    }
}

/// The largest change of a row's Euclidean norm between `before` and
/// `after`, two matrices of the same shape (RoPE should change no norm).
pub fn largest_norm_change(
    before: &ArrayRef2<f32>,
    after: &ArrayRef2<f32>,
) -> Result<f32, AttnError> {
    if before.dim() != after.dim() {
        return Err(AttnError::ShapesDiffer {
            what: "the vectors before and after",
            left: before.dim(),
            right: after.dim(),
        });
    }
    let norm = |x: ndarray::ArrayView1<f32>| x.dot(&x).sqrt();
    let changes =
        before.rows().into_iter().zip(after.rows()).map(|(a, b)| (norm(a) - norm(b)).abs());
    let largest = changes.fold(0.0, |m: f32, c| if c > m || c.is_nan() { c } else { m });
    if !largest.is_finite() {
        return Err(AttnError::InvalidArgument {
            name: "rows before and after",
            value: f64::from(largest),
            requirement: "must have finite norms",
        });
    }
    Ok(largest)
}

// ANCHOR: alibi
/// ALiBi's slopes for `h` heads: the geometric sequence `2^(−8/h)`,
/// `2^(−16/h)`, …, `2^(−8)` when `h` is a power of two. Otherwise the paper
/// takes the slopes for the nearest power of two below `h`, `p`, and fills
/// up with every other slope of the sequence for `2p` heads.
pub fn alibi_slopes(h: usize) -> Result<Vec<f32>, AttnError> {
    if h == 0 {
        return Err(AttnError::InvalidArgument {
            name: "h",
            value: 0.0,
            requirement: "must be at least 1",
        });
    }
    check_size("ALiBi slopes (one per head)", 1, h)?;
    let geometric = |heads: usize| -> Vec<f32> {
        let step = -8.0 / heads as f64;
        (1..=heads).map(|g| 2f64.powf(step * g as f64) as f32).collect()
    };
    if h.is_power_of_two() {
        return Ok(geometric(h));
    }
    let p = 1 << h.ilog2(); // the largest power of two below h
    let mut slopes = geometric(p);
    slopes.extend(geometric(2 * p).into_iter().step_by(2).take(h - p));
    Ok(slopes)
}

// ANCHOR_END: alibi

// ANCHOR: alibi_bias
/// The `n×n` ALiBi bias of one head with slope `slope`, causal:
/// `−slope·(i − j)` for keys `j ≤ i`, and `−∞` for future keys `j > i`.
/// It is added to the scores (see [`crate::masking::biased_attention`]).
/// `slope·(n − 1)` must be finite: a bias of `−∞` would drop a key.
pub fn alibi_bias(n: usize, slope: f32) -> Result<Array2<f32>, AttnError> {
    check_size("ALiBi bias", n, n)?;
    if !(slope * n.saturating_sub(1) as f32).is_finite() {
        return Err(AttnError::InvalidArgument {
            name: "ALiBi slope",
            value: f64::from(slope),
            requirement: "must be finite, and small enough that slope·(n − 1) is too",
        });
    }
    Ok(Array2::from_shape_fn((n, n), |(i, j)| {
        if j <= i {
            slope * (j as f32 - i as f32) // −slope·(i − j), and +0 on the diagonal
        } else {
            f32::NEG_INFINITY
        }
    }))
}
// ANCHOR_END: alibi_bias

#[cfg(test)]
mod tests {
    use super::*;
    use crate::masking::biased_attention;
    use crate::projection::Projections;
    use crate::scaling::standard_normal;
    use approx::assert_abs_diff_eq;
    use ndarray::{array, Axis};
    use ndarray_rand::rand::{rngs::StdRng, seq::SliceRandom, SeedableRng};
    use std::panic::AssertUnwindSafe;

    // ANCHOR: equivariance_test
    #[test]
    fn without_positions_self_attention_is_permutation_equivariant() {
        let mut rng = StdRng::seed_from_u64(6);
        let layer = Projections::new(16, 8, 8, &mut rng).unwrap();
        let x = standard_normal(7, 16, &mut rng);
        let mut perm: Vec<usize> = (0..7).collect();
        perm.shuffle(&mut rng);
        let x_perm = x.select(Axis(0), &perm); // row r of x_perm is row perm[r] of x
        let out = layer.self_attention(&x).unwrap().output;
        let out_perm = layer.self_attention(&x_perm).unwrap().output;
        assert_abs_diff_eq!(out_perm, out.select(Axis(0), &perm), epsilon = 1e-5);

        // With positions added, the same permutation changes the outputs.
        let pe = sinusoidal(7, 16).unwrap();
        let out = layer.self_attention(&(&x + &pe)).unwrap().output;
        let out_perm = layer.self_attention(&(&x_perm + &pe)).unwrap().output;
        let moved = (&out_perm - &out.select(Axis(0), &perm)).mapv(f32::abs);
        assert!(moved.iter().any(|&d| d > 1e-2));
    }
    // ANCHOR_END: equivariance_test

    // ANCHOR: sinusoidal_test
    /// Entries worked out by hand, asserted of `encode`: `sinusoidal`, or
    /// one of the bugs the test after this listing writes out.
    fn check_by_hand(encode: impl Fn(usize, usize) -> Array2<f32>) {
        let pe = encode(3, 4);
        // Position 0: sin 0 = 0 and cos 0 = 1, interleaved.
        assert_eq!(pe.row(0), array![0.0, 1.0, 0.0, 1.0]);
        // Position 1, pair 0 (ω = 1) and pair 1 (ω = 1/10000^(2/4) = 0.01).
        let expected = array![1f32.sin(), 1f32.cos(), 0.01f32.sin(), 0.01f32.cos()];
        assert_abs_diff_eq!(pe.row(1), expected, epsilon = 1e-7);
        // Position 2: ω_1 · 2 = 0.02.
        assert_abs_diff_eq!(pe[[2, 2]], 0.02f32.sin(), epsilon = 1e-7);
        assert_abs_diff_eq!(pe[[2, 1]], 2f32.cos(), epsilon = 1e-7);
        // Widths 512 as in the paper: the last pair has ω = 10000^(−510/512).
        let pe = encode(101, 512);
        let omega = 10000f64.powf(-510.0 / 512.0);
        assert_abs_diff_eq!(pe[[100, 510]], (100.0 * omega).sin() as f32, epsilon = 1e-7);
        assert_abs_diff_eq!(pe[[100, 511]], (100.0 * omega).cos() as f32, epsilon = 1e-7);
    }

    #[test]
    fn sinusoidal_values_by_hand() {
        check_by_hand(|positions, d_model| sinusoidal(positions, d_model).unwrap());
    }
    // ANCHOR_END: sinusoidal_test

    #[test]
    fn an_odd_width_is_an_error() {
        let err = sinusoidal(4, 7).unwrap_err();
        assert_eq!(
            err.to_string(),
            "d_model must be even and > 0 (dimensions come in sin/cos pairs), got 7"
        );
        assert!(rope(&Array2::zeros((2, 3)), 0).is_err());
        assert!(alibi_slopes(0).is_err());
    }

    // ANCHOR: offset_test
    #[test]
    fn a_fixed_linear_map_shifts_every_position_by_delta() {
        let d_model = 64;
        let pe = sinusoidal(200, d_model).unwrap();
        for delta in [0, 1, 5, 17, 99] {
            let m_delta = offset_map(delta, d_model).unwrap();
            for pos in 0..200 - delta {
                let shifted = m_delta.dot(&pe.row(pos));
                assert_abs_diff_eq!(shifted, pe.row(pos + delta), epsilon = 2e-5);
            }
        }
    }
    // ANCHOR_END: offset_test

    // ANCHOR: look_back_test
    #[test]
    fn with_w_q_w_k_t_equal_to_m_delta_every_query_scores_delta_back_highest() {
        let (n, d_model) = (200, 64);
        let pe = sinusoidal(n, d_model).unwrap();
        for delta in [0, 1, 5, 17, 99] {
            let scores = look_back_scores(&pe, delta).unwrap();
            for i in delta..n {
                let row = scores.row(i);
                let best = (0..n).max_by(|&a, &b| row[a].total_cmp(&row[b])).unwrap();
                assert_eq!(best, i - delta, "query {i}, Δ = {delta}");
                // Every cosine is 1 there: d_model/2 pairs.
                assert_abs_diff_eq!(row[i - delta], d_model as f32 / 2.0, epsilon = 1e-3);
            }
        }
    }
    // ANCHOR_END: look_back_test

    /// Each bug the chapter names, written out: the checks above must fail
    /// on every one of them, or they would not catch it.
    #[test]
    fn the_checks_catch_the_bugs_the_chapter_names() {
        let fails = |check: &dyn Fn()| std::panic::catch_unwind(AssertUnwindSafe(check)).is_err();
        // The concatenated layout: every sine first, then every cosine.
        let concatenated = |positions: usize, d: usize| {
            let order: Vec<usize> = (0..d).step_by(2).chain((1..d).step_by(2)).collect();
            sinusoidal(positions, d).unwrap().select(Axis(1), &order)
        };
        // The column index in the exponent: 10000^(−2·col/d).
        let column_exponent = |positions: usize, d: usize| {
            Array2::from_shape_fn((positions, d), |(pos, col)| {
                let angle = pos as f64 * 10000f64.powf(-2.0 * col as f64 / d as f64);
                (if col % 2 == 0 { angle.sin() } else { angle.cos() }) as f32
            })
        };
        // RoPE's rotation written in place: the second coordinate is
        // computed from the already-rotated first one.
        let in_place = |x: &Array2<f32>, first_position: usize| {
            let mut out = x.clone();
            let omega = frequencies(x.ncols()).unwrap();
            for (r, mut row) in out.rows_mut().into_iter().enumerate() {
                let pos = (first_position + r) as f64;
                for (f, omega_f) in omega.iter().enumerate() {
                    let (sin, cos) = (pos * omega_f).sin_cos();
                    let (sin, cos) = (sin as f32, cos as f32);
                    row[2 * f] = row[2 * f] * cos - row[2 * f + 1] * sin;
                    row[2 * f + 1] = row[2 * f] * sin + row[2 * f + 1] * cos;
                }
            }
            out
        };
        // ALiBi's sequence started at 2^0 instead of 2^(−8/h).
        let from_one = |h: usize| (0..h).map(|g| 2f32.powf(-8.0 * g as f32 / h as f32)).collect();
        let caught = [
            fails(&|| check_by_hand(concatenated)),
            fails(&|| check_by_hand(column_exponent)),
            fails(&|| check_rope(in_place)),
            fails(&|| check_slopes(from_one)),
        ];
        assert_eq!(caught, [true; 4], "a check passed a bug it should catch");
        // The crate's own functions pass the same checks.
        check_by_hand(|positions, d| sinusoidal(positions, d).unwrap());
        check_rope(|x, first_position| rope(x, first_position).unwrap());
        check_slopes(|h| alibi_slopes(h).unwrap());
    }

    // ANCHOR: rope_test
    /// RoPE's properties, asserted of `rope`: the crate's, or the bug the
    /// test after this listing writes out.
    fn check_rope(rope: impl Fn(&Array2<f32>, usize) -> Array2<f32>) {
        let mut rng = StdRng::seed_from_u64(7);
        let (q, k) = (standard_normal(1, 64, &mut rng), standard_normal(1, 64, &mut rng));
        // The query at position i, the key at position j.
        let score = |i: usize, j: usize| rope(&q, i).row(0).dot(&rope(&k, j).row(0));
        for (i, j) in [(0, 0), (5, 2), (2, 5), (40, 3), (100, 100)] {
            for shift in [1, 7, 250, 1000] {
                let (a, b) = (score(i, j), score(i + shift, j + shift));
                assert!((a - b).abs() < 1e-4, "({i},{j}) → {a}, shifted by {shift} → {b}");
            }
        }
        assert!((score(5, 2) - score(2, 5)).abs() > 1e-3, "the sign of i − j matters");

        let x = standard_normal(50, 64, &mut rng);
        let rotated = rope(&x, 3);
        for (a, b) in x.rows().into_iter().zip(rotated.rows()) {
            assert_abs_diff_eq!(a.dot(&a).sqrt(), b.dot(&b).sqrt(), epsilon = 1e-4);
        }
        assert_eq!(rope(&x, 0).row(0), x.row(0), "position 0: no rotation");
    }

    #[test]
    fn rope_scores_depend_only_on_the_offset_and_rope_keeps_norms() {
        check_rope(|x, first_position| rope(x, first_position).unwrap());
    }
    // ANCHOR_END: rope_test

    // ANCHOR: alibi_test
    /// The slopes of Press et al. (2022), section 3, asserted of `slopes`:
    /// the crate's, or the bug the test after this listing writes out.
    fn check_slopes(slopes: impl Fn(usize) -> Vec<f32>) {
        // For 8 heads: 1/2, 1/4, …, 1/256.
        let expected: Vec<f32> = (1..=8).map(|g| 1.0 / (1 << g) as f32).collect();
        assert_eq!(slopes(8), expected);
        // 16 heads: the geometric sequence starting at 2^(−0.5).
        let s16 = slopes(16);
        assert_abs_diff_eq!(s16[0], 0.5f32.sqrt(), epsilon = 1e-7);
        assert_eq!(s16[15], 1.0 / 256.0);
        // 12 heads: the 8 slopes, then 2^(−0.5), 2^(−1.5), 2^(−2.5), 2^(−3.5).
        let s12 = slopes(12);
        assert_eq!(s12[..8], expected[..]);
        for (got, e) in s12[8..].iter().zip([-0.5, -1.5, -2.5, -3.5]) {
            assert_abs_diff_eq!(*got, 2f32.powf(e), epsilon = 1e-7);
        }
    }

    #[test]
    fn alibi_slopes_match_the_paper() {
        check_slopes(|h| alibi_slopes(h).unwrap());
    }
    // ANCHOR_END: alibi_test

    #[test]
    fn alibi_penalises_distance_and_hides_the_future() {
        let b = alibi_bias(4, 0.5).unwrap();
        assert_eq!(b.row(3), array![-1.5, -1.0, -0.5, 0.0]);
        assert_eq!(b[[0, 1]], f32::NEG_INFINITY);
        // With equal scores everywhere, nearer keys get more weight.
        let x = Array2::<f32>::zeros((4, 2));
        let v = Array2::from_shape_fn((4, 1), |(j, _)| j as f32);
        let w = biased_attention(&x, &x, &v, &b).unwrap().weights;
        let last = w.row(3);
        assert!((0..3).all(|j| last[j] < last[j + 1]), "{last}");
        assert_eq!(w[[0, 0]], 1.0);
    }
}
