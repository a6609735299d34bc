//! Non-finite numbers that once went in or came out unannounced: a
//! backward pass fed NaN, an optimiser step that overflows, and norms and
//! means of vectors whose answers are representable but whose squares or
//! sums are not.

use attn::block::row_statistics;
use attn::model::TinyTransformer;
use attn::nn::{Adam, Parameters};
use attn::pretrained::{cosine, l2_normalize, mean_pool};
use attn::translation::{batch, number_pair, Seq2Seq, Seq2SeqConfig, BOOK_SEQ2SEQ};
use attn::AttnError;
use ndarray::{array, Array2};

use crate::small;

/// NaN in, NaN gradients out: both models' backward passes refuse a
/// non-finite `dL/dlogits`, naming it.
#[test]
fn backward_passes_refuse_a_non_finite_gradient_of_the_logits() {
    let net = TinyTransformer::new(small(), 1).unwrap();
    let fwd = net.forward(&[vec![1, 2, 10, 2]]).unwrap();
    for bad in [f64::NAN, f64::INFINITY] {
        let d_logits = Array2::from_elem(fwd.logits().dim(), bad);
        let err = net.backward(&fwd, &d_logits).unwrap_err();
        assert!(err.to_string().contains("dL/dlogits"), "{err}");
    }

    let (d_model, heads, d_ff, layers) = (8, 2, 12, 1);
    let config = Seq2SeqConfig { d_model, heads, d_ff, layers, ..BOOK_SEQ2SEQ };
    let net = Seq2Seq::new(config, 1).unwrap();
    let pair = number_pair(342_015).unwrap();
    let fwd = net.forward(&batch(&[(&pair.source, &pair.target)]).unwrap()).unwrap();
    let mut d_logits = Array2::zeros(fwd.logits().dim());
    d_logits[[0, 0]] = f64::NAN;
    let err = net.backward(&fwd, &d_logits).unwrap_err();
    assert!(err.to_string().contains("dL/dlogits"), "{err}");
}

/// A valid learning rate whose step overflows: Adam refuses the update and
/// leaves the parameters as they were.
#[test]
fn adam_refuses_a_step_that_would_make_parameters_infinite() {
    let mut net = TinyTransformer::new(small(), 0).unwrap();
    let (_, grads) =
        net.loss_and_gradients(&[vec![1, 2, 10, 2]], &[None, None, Some(2), Some(1)]).unwrap();
    let before = net.clone();
    let mut adam = Adam::new(&net, 1e300).unwrap();
    let err = adam.update(&mut net, &grads, 1e10).unwrap_err();
    assert!(matches!(err, AttnError::NonFiniteUpdate { .. }), "{err}");
    assert_eq!(net, before, "a refused update changes nothing");
    assert!(adam.update(&mut net, &grads, 1e-300).is_ok(), "the optimiser still works");
}

/// Norms and means whose answers are representable, of vectors whose
/// squares or sums are not; and non-finite input, which is an error.
#[test]
fn norms_and_means_of_huge_and_tiny_vectors_are_right() {
    let v = l2_normalize(&array![1e20_f32, 1e20]).unwrap();
    let half = std::f32::consts::FRAC_1_SQRT_2;
    assert!((v[0] - half).abs() < 1e-6 && (v[1] - half).abs() < 1e-6, "{v}");
    let tiny = l2_normalize(&array![1e-30_f32, 1e-30]).unwrap();
    assert!((tiny[0] - half).abs() < 1e-6, "{tiny}");
    assert_eq!(l2_normalize(&array![0.0_f32, 0.0]).unwrap(), array![0.0, 0.0]);
    for (a, b) in [([1e20_f32, 0.0], [1e20, 0.0]), ([1e-30, 1e-30], [2e-30, 2e-30])] {
        let c = cosine(&array![a[0], a[1]], &array![b[0], b[1]]).unwrap();
        assert!((c - 1.0).abs() < 1e-6, "cosine of {a:?} and {b:?} is {c}");
    }
    assert_eq!(cosine(&array![0.0_f32, 0.0], &array![1.0, 0.0]).unwrap(), 0.0);
    for bad in [f32::NAN, f32::INFINITY] {
        assert!(cosine(&array![bad, 0.0], &array![1.0, 0.0]).is_err());
        assert!(l2_normalize(&array![bad, 1.0]).is_err());
    }
    let huge = Array2::from_elem((3, 2), 3e38_f32);
    assert_eq!(mean_pool(&huge, 3).unwrap(), array![3e38, 3e38]);
    // Row [3, −3, 3]·10³⁸: mean 10³⁸, deviations 2, −4, 2 (·10³⁸), so the
    // standard deviation is √8·10³⁸.
    let (mean, std) = row_statistics(&array![[3e38_f32, -3e38, 3e38]]).unwrap();
    assert!((mean / 1e38 - 1.0).abs() < 1e-5, "mean {mean}");
    assert!((std / 1e38 - 8f32.sqrt()).abs() < 1e-5, "std {std}");
}

/// A NaN parameter, set through `slices_mut`, is named as the cause of
/// non-finite logits (it used to be reported as an overflow "although every
/// input is finite").
#[test]
fn a_non_finite_parameter_is_named_as_the_cause() {
    let mut net = TinyTransformer::new(small(), 1).unwrap();
    let tensor = net.named_slices()[3].0.clone();
    net.slices_mut()[3][0] = f64::NAN;
    let Err(err) = net.forward(&[vec![1, 2, 10, 2]]) else {
        panic!("a NaN parameter gave finite logits");
    };
    assert!(
        matches!(&err, AttnError::NonFiniteParameter { tensor: t, .. } if *t == tensor),
        "{err}"
    );
}

/// Chapter 2's fast exponential is built for the exponents a stable
/// softmax makes (`x ≤ 0`), but it is public, so it must be right for every
/// `x`: `e^x` for positive `x` (to `+∞` past `ln f32::MAX`), NaN for NaN.
/// It once returned −2.3·10⁻³⁴ for `e^100` and 1.2·10⁻³⁸ for NaN.
#[test]
fn the_fast_exponential_is_right_outside_its_fast_domain() {
    use attn::real::exp_nonpositive;
    use attn::real::Real;
    for x in [0.5_f32, 1.0, 3.0, 10.0, 42.0, 80.0, 88.0, 88.72] {
        let exact = f64::from(x).exp();
        let got = f64::from(exp_nonpositive(x));
        assert!(
            ((got - exact) / exact).abs() < 3e-7,
            "exp_nonpositive({x}) = {got}, e^x = {exact}"
        );
        assert_eq!(Real::exp_nonpositive(x), exp_nonpositive(x));
    }
    for x in [88.73_f32, 100.0, 1e30, f32::MAX, f32::INFINITY] {
        assert_eq!(exp_nonpositive(x), f32::INFINITY, "exp_nonpositive({x})");
    }
    for nan in [f32::NAN, -f32::NAN] {
        assert!(exp_nonpositive(nan).is_nan(), "exp_nonpositive(NaN)");
        assert!(Real::exp_nonpositive(nan).is_nan());
    }
}
