//! The language model, latent and sliding attention and the cache sizes,
//! which came after the first contract tests: one test per class of defect
//! a probe of them found, each failing on the crate before its fix.

use attn::lm::{Decoding, Forgetting, LanguageModel, LmConfig, Positions, Sampler};
use attn::nn::Parameters;
use attn::AttnError;
use ndarray_rand::rand::{rngs::StdRng, SeedableRng};

/// A small model with rotary positions, which reads texts of any length.
const ROTARY: LmConfig = LmConfig { positions: Positions::Rotary, ..crate::SMALL_LM };

fn model(config: LmConfig) -> LanguageModel<f32> {
    LanguageModel::<f32>::new(config, 1).unwrap()
}

fn too_large<T>(r: Result<T, AttnError>) -> bool {
    matches!(r, Err(AttnError::TooLarge { .. }))
}

/// Class 1: sizes are checked as a whole before anything proportional to
/// them is allocated. A text of 2^16 tokens asks for a 2^16 × 2^16 mask
/// and weights: an error, not an abort.
#[test]
fn a_text_too_long_to_attend_over_is_an_error_before_any_allocation() {
    // A context long enough to take the text: the weights are what is too large.
    let net = model(LmConfig { context: 1 << 16, ..ROTARY });
    let long = vec![vec![1; 1 << 16]];
    assert!(too_large(net.forward(&long)), "forward");
    assert!(too_large(net.forward_window(&long, 4)), "forward_window");
    let mut rng = StdRng::seed_from_u64(0);
    let latent = attn::latent::LatentAttention::new(4, 2, [2, 2, 2], &mut rng).unwrap();
    let x = ndarray::Array2::zeros((1 << 16, 4));
    assert!(too_large(latent.forward(&x)), "latent forward");
}

/// A model read with scaled RoPE: a learned model, a factor below 1, a
/// context of 0 or one whose cache cannot fit are refused with errors
/// naming them.
#[test]
fn a_scaled_rope_the_model_cannot_take_is_refused() {
    use attn::rope_scaling::RopeScaling;
    let rotary = model(ROTARY);
    let e = model(crate::SMALL_LM).with_scaled_rope(8, RopeScaling::None).unwrap_err();
    assert!(e.to_string().contains("rotary"), "{e}");
    let e = rotary.with_scaled_rope(8, RopeScaling::NtkAware { factor: f64::NAN }).unwrap_err();
    assert!(e.to_string().contains("scale factor"), "{e}");
    let e = rotary.with_scaled_rope(0, RopeScaling::None).unwrap_err();
    assert!(e.to_string().contains("context"), "{e}");
    assert!(too_large(rotary.with_scaled_rope(usize::MAX, RopeScaling::None)), "huge context");
    let e = model(crate::SMALL_LM).with_context(8).unwrap_err().to_string();
    assert!(e.contains("learned positions"), "{e}");
    assert!(rotary.with_context(0).unwrap_err().to_string().contains("context"));
    assert!(too_large(rotary.with_context(usize::MAX)), "huge context");
    assert_eq!(rotary.with_context(8).unwrap().config().context, 8);
}

/// A passkey text that cannot hold its key, over a vocabulary too small
/// for the markers, digits and filler, or too long to allocate, is an
/// error naming what was passed.
#[test]
fn a_passkey_that_cannot_be_written_is_refused() {
    use attn::lm::{passkey, passkey_batch, SplitMix64};
    let mut rng = SplitMix64::new(1);
    for (len, distance, vocab) in [(64, 0, 84), (64, 64, 84), (0, 5, 84), (64, 30, 0)] {
        let e = passkey(&mut rng, len, distance, vocab).unwrap_err().to_string();
        assert!(e.contains("distance") || e.contains("vocab"), "{e}");
    }
    assert!(too_large(passkey(&mut rng, 1 << 40, 30, 84)), "a text past the limit");
    let huge = LmConfig { context: 1 << 40, ..ROTARY };
    assert!(too_large(passkey_batch(&huge, &mut rng, 4)), "a batch past the limit");
    assert!(passkey_batch(&ROTARY, &mut rng, 0).is_err(), "no texts");
}

/// Class 1: a configuration whose cache would not fit in memory is
/// refused when the model is built, so that `new_cache` (which allocates
/// the whole context at once) never meets it.
#[test]
fn a_configuration_whose_cache_cannot_be_held_is_refused() {
    let huge = LmConfig { context: 1 << 25, layers: 1024, d_ff: 8, ..ROTARY };
    assert!(too_large(LanguageModel::<f32>::new(huge, 1)));
}

/// Class 2: token ids are checked against the vocabulary where they enter.
#[test]
fn tokens_past_the_vocabulary_are_errors_everywhere() {
    let net = model(ROTARY);
    let past = ROTARY.vocab;
    let through = net.losses_through(&[1, past], net.new_cache());
    assert!(matches!(through, Err(AttnError::OutOfRange { .. })), "{through:?}");
    let greedy = Sampler::new(0.0).unwrap();
    let none = net.generate(&[past], 0, &greedy, 0, Decoding::Cached);
    assert!(matches!(none, Err(AttnError::OutOfRange { .. })), "{none:?}");
    let logits = ndarray::Array2::<f64>::zeros((2, 3));
    let smoothed = attn::nn::smoothed_cross_entropy(&logits, &[Some(0), Some(3)], 0.1);
    assert!(smoothed.is_err(), "{:?}", smoothed.ok());
}

/// Class 3: a cache knows the shape of the model that made it, and any
/// other model refuses it, wider or narrower.
#[test]
fn a_cache_of_another_model_is_refused() {
    let net = model(ROTARY);
    let wider = model(LmConfig { d_model: 16, ..ROTARY });
    let narrower = model(LmConfig { d_model: 4, ..ROTARY });
    for other in [&wider, &narrower] {
        let mut cache = other.new_cache();
        let step = net.step(1, &mut cache);
        assert!(matches!(step, Err(AttnError::Mismatched { name: "cache", .. })), "{step:?}");
        let through = net.losses_through(&[1, 2, 3], other.new_cache());
        assert!(matches!(through, Err(AttnError::Mismatched { name: "cache", .. })));
    }
    let forgetting = other_forgetting(&net);
    assert!(net.losses_through(&[1, 2, 3], forgetting).is_ok(), "its own cache, of any kind");
}

/// Class 3, beyond the language model: the fast multi-head layer reads a
/// grouped layer's shared heads (it indexed past them), and the alignment
/// scores refuse a pair whose words are not its number's and a model that
/// does not attend.
#[test]
fn grouped_layers_and_hand_made_pairs_are_read_right_or_refused() {
    use attn::multihead::{fast_multihead, MultiHeadAttention};
    let mut rng = StdRng::seed_from_u64(3);
    let layer = MultiHeadAttention::grouped(16, 4, 2, &mut rng).unwrap();
    let x = attn::scaling::standard_normal(9, 16, &mut rng);
    let fast = fast_multihead(&layer, &x, &x).unwrap();
    let plain = layer.forward(&x, &x).unwrap().output;
    let gap = (&fast - &plain).iter().fold(0.0_f32, |m, d| m.max(d.abs()));
    assert!(gap < 1e-5, "fast and plain grouped layers differ by {gap}");

    use attn::translation::{alignment_scores, number_pair, Seq2Seq, Seq2SeqConfig, BOOK_SEQ2SEQ};
    let config = Seq2SeqConfig { d_model: 8, heads: 2, d_ff: 16, layers: 1, ..BOOK_SEQ2SEQ };
    let net = Seq2Seq::new(config, 1).unwrap();
    let mut pair = number_pair(42).unwrap();
    assert!(alignment_scores(&net, std::slice::from_ref(&pair)).is_ok());
    pair.number = 24; // the words still say 42
    assert!(alignment_scores(&net, std::slice::from_ref(&pair)).is_err());
    let pooled = Seq2Seq::new(Seq2SeqConfig { bottleneck: true, ..config }, 1).unwrap();
    assert!(alignment_scores(&pooled, &[number_pair(42).unwrap()]).is_err());
}

fn other_forgetting(net: &LanguageModel<f32>) -> attn::lm::LmCache {
    net.new_cache_forgetting(Forgetting::Window(4)).unwrap()
}

/// Class 4: size arithmetic never overflows: a count that does not fit is
/// an error (or `None`), not a panic.
#[test]
fn sizes_whose_product_overflows_are_errors() {
    let odd = LmConfig { kv_heads: usize::MAX, ..ROTARY };
    assert_eq!(odd.parameter_count(), None);
    assert!(odd.check().is_err());
    let _ = odd.d_kv(); // must not panic
    let mut rng = StdRng::seed_from_u64(0);
    let big = 1_usize << 33;
    let latent = attn::latent::LatentAttention::new(4, big, [big, 2, 2], &mut rng);
    assert!(latent.is_err());
}

/// Class 5: loops have bounds a caller can see: a count past the
/// documented limit is an error before the first step.
#[test]
fn a_count_past_the_limit_is_an_error_before_the_first_step() {
    let net = model(ROTARY);
    let greedy = Sampler::new(0.0).unwrap();
    let long = net.generate(&[1], 1 << 40, &greedy, 0, Decoding::Cached);
    assert!(too_large(long), "a count of 2^40");
    // ROUGE-L's work is the product of the two lengths.
    let text = vec![3; 1 << 16];
    assert!(too_large(attn::translation::rouge_l(&text, &text)));
    // Counts of windows and sequences are checked before they are drawn.
    assert!(too_large(attn::lm::even_offsets(1 << 40, 100, 4)));
    assert!(too_large(attn::lm::even_offsets(2, 100, usize::MAX)));
    assert!(too_large(attn::lm::repeated_sequences(1, 1 << 40, 4, 8)));
    assert!(too_large(attn::translation::summary_set(1 << 40, 1, 2..6)));
}

/// Class 6: `Ok` means finite. A recurrent model whose parameters are so
/// large that its products overflow gives an error, not infinities.
#[test]
fn a_recurrent_model_that_overflows_gives_an_error() {
    use attn::translation::{batch, number_pair, RnnSeq2Seq, BOOK_RNN};
    let mut net = RnnSeq2Seq::new(BOOK_RNN, 1).unwrap();
    let pair = number_pair(342_015).unwrap();
    let one = batch(&[(&pair.source[..], &pair.target[..])]).unwrap();
    assert!(net.forward(&one).is_ok());
    for slice in net.slices_mut() {
        slice.iter_mut().for_each(|w| *w = 1e300);
    }
    match net.forward(&one) {
        Ok(fwd) => assert!(fwd.logits().iter().all(|x| x.is_finite()), "an Ok with infinities"),
        Err(e) => assert!(matches!(e, AttnError::Overflow { .. }), "{e}"),
    }
}

/// Class 6: a corpus too short to hold a validation
/// pair is refused, so that its bigram baseline is always a number.
#[test]
fn a_corpus_without_a_validation_pair_is_refused() {
    assert!(attn::lm::Corpus::from_text(b"abcdefghij").is_err());
    let corpus = attn::lm::Corpus::from_text(b"abcdefghijk").unwrap();
    assert!(corpus.bigram_loss().is_finite());
}

/// Class 7: zero sizes of a cache are refused, not counted as 0 bytes;
/// targets that do not match the logits' rows, and empty logits, are refused.
#[test]
fn degenerate_sizes_and_mismatched_targets_are_refused() {
    use attn::kv_bytes::{kv_bytes_per_token, KvLayout};
    let heads = KvLayout::Heads { kv_heads: 2, d_head: 4 };
    assert!(kv_bytes_per_token(1, heads, 2).is_ok());
    assert!(kv_bytes_per_token(0, heads, 2).is_err(), "0 layers");
    assert!(kv_bytes_per_token(1, heads, 0).is_err(), "0 bytes a number");
    assert!(kv_bytes_per_token(1, KvLayout::Heads { kv_heads: 0, d_head: 4 }, 2).is_err());
    assert!(kv_bytes_per_token(1, KvLayout::Heads { kv_heads: 2, d_head: 0 }, 2).is_err());
    assert!(kv_bytes_per_token(1, KvLayout::Latent { d_c: 0, d_r: 0 }, 2).is_err());
    let logits = ndarray::Array2::<f64>::zeros((3, 4));
    assert!(attn::nn::smoothed_cross_entropy(&logits, &[Some(0), Some(1)], 0.1).is_err());
    let empty = ndarray::Array2::<f64>::zeros((0, 0));
    assert!(attn::nn::smoothed_cross_entropy(&empty, &[], 0.1).is_err());
}

/// Class 7: a gradient check whose `f` is NaN at one `x + δ` only is an
/// error, not a finite relative error; saved forward state that is not
/// finite is refused by the backward pass.
#[test]
fn nan_near_the_point_or_in_saved_state_is_refused() {
    let x = ndarray::Array2::<f64>::from_elem((2, 2), 0.5);
    let f = |m: &attn::grad::Matrix| if m[[1, 1]] > 0.5 { f64::NAN } else { m.sum() };
    let analytic = ndarray::Array2::<f64>::ones((2, 2));
    assert!(attn::grad::check_gradient(&analytic, f, &x).is_err());
    assert!(attn::grad::check_gradient(&analytic, |m: &attn::grad::Matrix| m.sum(), &x).is_ok());

    let mut rng = StdRng::seed_from_u64(5);
    let q = attn::scaling::standard_normal(8, 4, &mut rng);
    let (k, v) = (q.clone(), q.clone());
    let mut saved = attn::fast::fast_attention_forward(&q, &k, &v, false).unwrap();
    let d_out = ndarray::Array2::<f32>::ones((8, 4));
    assert!(attn::fast::fast_attention_backward(&q, &k, &v, &saved, &d_out).is_ok());
    for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        saved.lse[3] = bad;
        assert!(attn::fast::fast_attention_backward(&q, &k, &v, &saved, &d_out).is_err());
    }
}

/// Class 8: errors name what the caller passed. A model with a NaN
/// parameter is refused by name when it writes, not as a "key" the caller
/// never gave.
#[test]
fn a_nan_parameter_is_named_as_a_parameter() {
    let mut net = model(ROTARY);
    net.slices_mut()[0][0] = f32::NAN;
    let greedy = Sampler::new(0.0).unwrap();
    let error = net.generate(&[1, 2], 2, &greedy, 0, Decoding::Cached).unwrap_err();
    assert!(matches!(error, AttnError::NonFiniteParameter { .. }), "{error}");
    let error = net.step(1, &mut net.new_cache()).unwrap_err();
    assert!(matches!(error, AttnError::NonFiniteParameter { .. }), "{error}");
}
