//! Bad-input tests for public functions that had none (struck off
//! `not_yet_covered.txt` as they gain one): each is called with what a
//! reader could pass by mistake, and must answer with an error.

use attn::lm::{greedy, LanguageModel, Sampler};
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

use crate::SMALL_LM as SMALL;

/// Sampling: no logits, logits that are not finite, and settings outside
/// their ranges are errors.
#[test]
fn sampling_refuses_empty_or_non_finite_logits_and_bad_settings() {
    assert!(greedy(&[]).is_err());
    assert!(greedy(&[0.5, f32::NAN]).is_err());
    assert_eq!(greedy(&[0.5, 2.0, 1.0]).unwrap(), 1);
    let sampler = Sampler::new(1.0).unwrap();
    assert!(sampler.distribution(&[]).is_err());
    assert!(sampler.distribution(&[1.0, f32::INFINITY]).is_err());
    let mut rng = StdRng::seed_from_u64(0);
    assert!(sampler.sample(&[f32::NAN, 1.0], &mut rng).is_err());
    assert!(sampler.top_k(0).is_err());
    for p in [0.0, -0.1, 1.5, f64::NAN] {
        assert!(Sampler::new(1.0).unwrap().top_p(p).is_err(), "top-p {p}");
    }
}

/// The language model's helpers: an empty or unknown prompt, windows that
/// leave the text, no sequences to score.
#[test]
fn the_language_model_s_helpers_refuse_what_they_cannot_read() {
    use attn::lm::{induction_scores, periodic_training_batch, windows, SplitMix64};
    let net = LanguageModel::<f32>::new(SMALL, 1).unwrap();
    assert!(net.next_logits(&[]).is_err());
    assert!(net.next_logits(&[8]).is_err());
    assert!(net.next_logits(&[1; 7]).is_err(), "longer than the context");
    let text = b"\x01\x02\x03\x04\x05\x06\x07\x00\x01\x02";
    assert!(windows(text, &[0], 6).is_ok());
    assert!(windows(text, &[4], 6).is_err(), "the window leaves the text");
    assert!(windows(text, &[usize::MAX], 6).is_err());
    assert!(induction_scores(&net, &[]).is_err());
    assert!(induction_scores(&net, &[vec![9, 9, 9, 9]]).is_err());
    let mut rng = SplitMix64::new(0);
    assert!(periodic_training_batch(&SMALL, &mut rng, 1 << 40).is_err());
    assert_eq!(attn::lm::LmCache::bytes_per_token(&net), 2 * 8 * 4);
}

/// Cross-entropy: targets that do not match the rows, a target past the
/// vocabulary, and empty logits.
#[test]
fn the_loss_refuses_targets_that_do_not_fit_the_logits() {
    use attn::nn::cross_entropy;
    let logits = ndarray::Array2::<f32>::zeros((3, 4));
    assert!(cross_entropy(&logits, &[Some(0), Some(1), None]).is_ok());
    assert!(cross_entropy(&logits, &[Some(0)]).is_err());
    assert!(cross_entropy(&logits, &[Some(0), Some(4), None]).is_err());
    assert!(cross_entropy(&ndarray::Array2::<f32>::zeros((0, 4)), &[]).is_err());
}

/// The translation task's helpers: numbers past the task, mismatched
/// candidates and references, orders of n-grams that are no order.
#[test]
fn the_translation_helpers_refuse_what_the_task_does_not_have() {
    use attn::translation::{
        alignment, balanced_set, corpus_bleu, mean_rouge, number_words, rouge_n, summary_pair,
    };
    assert!(number_words(1_000_000).is_err());
    assert!(alignment(1_000_000).is_err());
    assert!(corpus_bleu(&[vec![3]], &[]).is_err());
    assert!(corpus_bleu(&[], &[]).is_err());
    assert!(mean_rouge(&[vec![3]], &[vec![3], vec![4]]).is_err());
    assert!(rouge_n(&[3], &[3], 0).is_err());
    assert!(balanced_set(10, &[10], 1, &[]).is_err(), "no number has ten words");
    assert!(balanced_set(1 << 40, &[3], 1, &[]).is_err());
    assert!(summary_pair(&[]).is_err());
    assert!(summary_pair(&[(0, 2)]).is_err(), "a run of 2 words");
    assert!(summary_pair(&[(0, 3), (0, 4)]).is_err(), "two runs of one colour in a row");
    assert!(summary_pair(&[(0, 3), (1, 4)]).is_ok());
}

/// The crate's own checks, public for a reader's functions: each refuses
/// what it is there to refuse, naming the argument, and passes the rest.
#[test]
fn the_checks_refuse_what_they_check_for_by_name() {
    use attn::check::*;
    use ndarray::{array, Array2};
    fn e<T>(r: Result<T, attn::AttnError>) -> String {
        r.err().map(|e| e.to_string()).unwrap_or_default()
    }
    assert!(check_size("the test's matrix", 1 << 20, 1 << 20).is_err());
    assert!(check_size("the test's matrix", 1 << 10, 1 << 10).is_ok());
    assert_eq!(check_total("the test's array", &[2, 3, 4], 24).unwrap(), 24);
    assert!(e(check_total("the test's array", &[2, 3, 5], 24)).contains("the test's array"));
    assert!(check_total("the test's array", &[usize::MAX, 2], usize::MAX).is_err(), "overflow");
    assert!(e(check_not_empty("x", (0, 3))).contains('x'));
    assert!(check_not_empty("x", (1, 3)).is_ok());
    assert!(e(check_model_width("x", &Array2::zeros((2, 3)), 4)).contains('x'));
    assert!(check_model_width("x", &Array2::zeros((2, 4)), 4).is_ok());
    assert!(e(check_finite("x", &array![[1.0_f32, f32::NAN]])).contains('x'));
    assert!(check_finite("x", &array![[1.0_f64, 2.0]]).is_ok());
    assert!(e(check_overflow("y", &array![[f32::INFINITY]])).contains('y'));
    assert!(check_overflow("y", &array![[1.0_f32]]).is_ok());
    assert!(e(check_nonzero(&[("d", 1), ("n", 0)])).starts_with('n'));
    assert!(check_nonzero(&[("d", 1)]).is_ok());
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(e(check_positive("tau", bad)).contains("tau"), "{bad}");
    }
    assert!(check_positive("tau", 0.5).is_ok());
}
