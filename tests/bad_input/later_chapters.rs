//! Bad-input tests for the public functions of chapters 12 to 17 and the
//! appendix that had none: the decoder's other passes, the language
//! model's corpus, training loop and file, the translators' helpers, the
//! gradient checks and the fast kernels on a chosen kernel.

use attn::lm::{AttentionPath, LanguageModel, LmTraining, SplitMix64, SHAKESPEARE_TRAINING};
use attn::nn::Parameters;

use crate::SMALL_LM as SMALL;

/// The decoder's passes through part of the model, on another path, and
/// without some heads: a depth, a head or targets the model does not have
/// are errors naming them.
#[test]
fn the_decoder_s_other_passes_refuse_what_the_model_does_not_have() {
    let net = LanguageModel::<f32>::new(SMALL, 1).unwrap();
    let batch = vec![vec![1, 2, 3]];
    let fused = AttentionPath::Fused;
    assert!(net.forward_on(&batch, fused).is_ok());
    assert!(net.forward_on(&[vec![1, 8]], fused).is_err(), "a token past the vocabulary");
    assert!(net.forward_on(&[vec![1; 7]], fused).is_err(), "longer than the context");
    assert!(net.forward_through(&batch, 1).is_ok());
    let e = net.forward_through(&batch, 2).err().unwrap().to_string();
    assert!(e.contains("depth"), "{e}");
    let targets = [Some(2), Some(3), None];
    assert!(net.loss_and_gradients_on(&batch, &targets, fused).is_ok());
    assert!(net.loss_and_gradients_on(&batch, &targets[..2], fused).is_err());
    assert!(net.loss_and_gradients_on(&batch, &[Some(8), None, None], fused).is_err());
    assert!(net.without_heads(&[(1, 2)]).is_ok(), "block and head counted from 1");
    for removed in [(0, 1), (1, 0), (2, 1), (1, 3), (usize::MAX, usize::MAX)] {
        assert!(net.without_heads(&[removed]).is_err(), "{removed:?}");
    }
}

/// The corpus reader, the training loop and the weights writer: a missing
/// corpus says how to fetch it; batches the model cannot read, and
/// recipes that cannot train, are errors before a step; a model with a
/// number that is not finite is not written.
#[test]
fn the_language_model_s_corpus_training_and_file_refuse_what_they_cannot_use() {
    let e = attn::lm::Corpus::shakespeare("/nonexistent/corpus").unwrap_err().to_string();
    assert!(e.contains("cargo xtask corpus"), "{e}");
    let mut net = LanguageModel::<f32>::new(SMALL, 1).unwrap();
    let recipe = LmTraining { steps: 2, batch: 1, warmup: 1, log_every: 1, ..SHAKESPEARE_TRAINING };
    let train = |net: &mut LanguageModel<f32>, recipe: &LmTraining, token: usize| {
        let next_batch = |_: &mut SplitMix64| Ok((vec![vec![1, token]], vec![Some(token), None]));
        attn::lm::train_on_batches(net, recipe, next_batch, |_| Ok(1.0), |_, _| {})
    };
    assert!(train(&mut net, &recipe, 2).is_ok());
    assert!(train(&mut net, &recipe, 8).is_err(), "a token past the vocabulary");
    for bad in [
        LmTraining { lr: f64::NAN, ..recipe },
        LmTraining { log_every: 0, ..recipe },
        LmTraining { steps: usize::MAX, ..recipe },
    ] {
        assert!(train(&mut net, &bad, 2).is_err(), "{bad:?}");
    }
    assert!(net.to_safetensors("# a test").is_ok());
    net.slices_mut()[0][0] = f32::NAN;
    // A file the reader would refuse is not written (it was, before).
    let e = net.to_safetensors("# a test").err().map(|e| e.to_string()).unwrap_or_default();
    assert!(e.contains("NaN") && e.contains("tokens"), "{e}");
}

/// The translators' helpers: a layer, pair or head the pass does not have;
/// a hand-made summary pair; ids past the vocabularies; beams of no width.
#[test]
fn the_translators_helpers_refuse_what_the_pass_does_not_have() {
    use attn::translation::{
        batch, evaluate, next_log_probs, number_pair, rnn_alignment_score, spans, summary_pair,
        summary_words, translate_all, RnnSeq2Seq, Seq2Seq, Seq2SeqConfig, BOOK_RNN, BOOK_SEQ2SEQ,
    };
    let config = Seq2SeqConfig { d_model: 8, heads: 2, d_ff: 16, layers: 1, ..BOOK_SEQ2SEQ };
    let net = Seq2Seq::new(config, 1).unwrap();
    let pair = number_pair(42).unwrap();
    let fwd = net.forward(&batch(&[(&pair.source, &pair.target)]).unwrap()).unwrap();
    assert!(fwd.cross_weights(0, 0, 1).is_ok());
    for (layer, b, head) in [(1, 0, 0), (0, 1, 0), (0, 0, 2), (usize::MAX, 0, 0)] {
        assert!(fwd.cross_weights(layer, b, head).is_err(), "{:?}", (layer, b, head));
    }
    let rnn = RnnSeq2Seq::new(BOOK_RNN, 1).unwrap();
    assert!(rnn_alignment_score(&rnn, std::slice::from_ref(&pair)).is_ok());
    let mut wrong = pair.clone();
    wrong.number += 1;
    assert!(rnn_alignment_score(&rnn, &[wrong]).is_err(), "words of another number");
    let mut summary = summary_pair(&[(0, 3), (1, 4)]).unwrap();
    assert_eq!(spans(&summary).unwrap(), vec![0..3, 0..3, 3..7, 3..7], "each target word's run");
    summary.source.pop();
    assert!(spans(&summary).is_err(), "a source shorter than its runs");
    assert_eq!(summary_words(&[3, 99, usize::MAX], true), ["red", "?", "?"]);
    assert!(next_log_probs(&net, &pair.source, &[]).is_ok());
    assert!(next_log_probs(&net, &[usize::MAX], &[]).is_err());
    assert!(next_log_probs(&net, &pair.source, &[999]).is_err());
    assert!(next_log_probs(&net, &pair.source, &[3; 100]).is_err(), "longer than the model");
    let pairs = [pair];
    assert!(translate_all(&net, &pairs, 1).is_ok());
    for width in [0, usize::MAX] {
        assert!(translate_all(&net, &pairs, width).is_err(), "width {width}");
        assert!(evaluate(&net, &pairs, width).is_err(), "width {width}");
    }
    assert!(evaluate(&net, &pairs[..0], 1).is_err(), "no pairs to score");
}

/// The gradient checks take only a seed, and any seed gives finite
/// errors; chapter 11's experiment refuses widths and trials it cannot run.
#[test]
fn the_gradient_checks_take_any_seed_and_refuse_experiments_they_cannot_run() {
    use attn::grad::*;
    for seed in [0, u64::MAX] {
        let errors = all_checks(seed).unwrap();
        assert!(errors.iter().all(|(_, e)| e.is_finite() && *e < 1e-4), "{errors:?}");
        for e in [
            check_attention(seed, true),
            check_softmax(seed),
            check_linear(seed),
            check_layer_norm(seed),
            check_ffn(seed),
            check_cross_entropy(seed),
        ] {
            assert!(e.unwrap() < 1e-4);
        }
    }
    assert!(query_gradients(&[4], 2, 0).is_ok());
    for (d_ks, trials) in [(&[4][..], 0), (&[0][..], 2), (&[1 << 40][..], 2)] {
        assert!(query_gradients(d_ks, trials, 0).is_err(), "{d_ks:?} × {trials}");
    }
    // Trials past the bound on the numbers drawn: an error before the
    // first (this ran until killed before the bound).
    let e = query_gradients(&[4], 1 << 40, 0).unwrap_err().to_string();
    assert!(e.contains("random numbers"), "{e}");
    assert!(gradient_norms(&[4; 1000], 1 << 20, 0).is_err());
}

/// The fast kernels on a chosen kernel: the AVX-512 one on a processor
/// without it is an error, and so are shapes that do not fit, on either.
#[test]
fn the_fast_kernels_on_a_chosen_kernel_refuse_what_they_cannot_do() {
    use attn::fast::{
        fast_attention_backward_on, fast_attention_forward, fast_attention_on, Kernel, Tiles,
        FAST_TILES,
    };
    use ndarray::Array2;
    let (q, k, v) = (Array2::<f32>::ones((4, 3)), Array2::ones((5, 3)), Array2::ones((5, 2)));
    let forward = fast_attention_forward(&q, &k, &v, false).unwrap();
    let d_out = Array2::<f32>::ones((4, 2));
    let kernels: &[Kernel] = if std::is_x86_feature_detected!("avx512f") {
        &[Kernel::Portable, Kernel::Avx512]
    } else {
        assert!(fast_attention_on(&q, &k, &v, false, FAST_TILES, Kernel::Avx512).is_err());
        &[Kernel::Portable]
    };
    for &kernel in kernels {
        assert!(fast_attention_on(&q, &k, &v, false, FAST_TILES, kernel).is_ok());
        assert!(fast_attention_on(&q, &k.t(), &v, false, FAST_TILES, kernel).is_err());
        let no_tiles = Tiles { query: 0, key: 0 };
        assert!(fast_attention_on(&q, &k, &v, true, no_tiles, kernel).is_err());
        let backward = |d_out: &Array2<f32>| {
            fast_attention_backward_on([&q, &k, &v], &forward, d_out, FAST_TILES, kernel)
        };
        assert!(backward(&d_out).is_ok());
        assert!(backward(&Array2::ones((4, 3))).is_err(), "dL/dO of another shape");
        assert!(backward(&Array2::from_elem((4, 2), f32::NAN)).is_err());
    }
    use attn::fast::fast_attention_backward_with;
    assert!(fast_attention_backward_with(&q, &k, &v, &forward, &d_out, FAST_TILES).is_ok());
    let no_tiles = Tiles { query: 0, key: 4 };
    assert!(fast_attention_backward_with(&q, &k, &v, &forward, &d_out, no_tiles).is_err());
    let other = fast_attention_forward(&q, &k, &v, true).unwrap();
    assert!(
        fast_attention_backward_with(&q, &k, &v, &other, &d_out, FAST_TILES).is_ok(),
        "a causal forward pass's state"
    );
}

/// The text checkpoints' writer: a weight that is not finite as an `f32`
/// (NaN, or an `f64` past `f32`'s range) is an error naming its tensor, not
/// a file the reader refuses (each was written before).
#[test]
fn a_checkpoint_that_could_not_be_read_back_is_not_written() {
    use attn::model::TinyTransformer;
    use attn::translation::{RnnSeq2Seq, Seq2Seq, Seq2SeqConfig, BOOK_RNN, BOOK_SEQ2SEQ};
    let mut tiny = TinyTransformer::new(crate::small(), 1).unwrap();
    assert!(TinyTransformer::from_text(&tiny.to_text().unwrap()).is_ok());
    tiny.slices_mut()[1][0] = 1e300;
    let e = tiny.to_text().unwrap_err().to_string();
    assert!(e.contains("inf"), "{e}");
    let mut rnn = RnnSeq2Seq::new(BOOK_RNN, 1).unwrap();
    rnn.slices_mut()[0][0] = f64::NAN;
    assert!(rnn.to_text().is_err());
    let config = Seq2SeqConfig { d_model: 8, heads: 2, d_ff: 16, layers: 1, ..BOOK_SEQ2SEQ };
    let mut net = Seq2Seq::new(config, 1).unwrap();
    assert!(Seq2Seq::from_text(&net.to_text().unwrap()).is_ok());
    net.slices_mut()[0][0] = -1e39; // finite in f64, not in f32
    assert!(net.to_text().is_err());
}
