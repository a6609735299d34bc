//! The encoder–decoder learns the number-words task: a small model trained
//! from scratch in this test reaches the stated bars on held-out numbers,
//! and the model with attention beats the one that sees a single pooled
//! vector of the encoder's output.

use attn::translation::{evaluate, train_seq2seq, translation_set, Seq2SeqConfig, Seq2SeqTraining};

/// Held-out exact-sequence accuracy the model with attention must reach.
const BAR: f64 = 0.7;

#[test]
fn a_small_encoder_decoder_learns_to_translate_and_attention_beats_the_bottleneck() {
    let held_out = translation_set(100, 99, &[]).unwrap();
    let pairs = translation_set(3000, 1, &held_out).unwrap();
    let training = Seq2SeqTraining {
        steps: 1000,
        batch: 32,
        lr: 5e-3,
        warmup: 20,
        seed: 1,
        label_smoothing: 0.0,
    };
    let score = |bottleneck: bool| {
        let config = Seq2SeqConfig {
            d_model: 16,
            heads: 2,
            d_ff: 32,
            layers: 1,
            max_lengths: (12, 8),
            bottleneck,
            vocab: attn::translation::NUMBER_VOCAB,
        };
        let (net, losses) = train_seq2seq(config, &training, &pairs).unwrap();
        assert!(losses[losses.len() - 1] < losses[0], "the loss falls");
        eprintln!("bottleneck {bottleneck}: final loss {:.3}", losses[losses.len() - 1]);
        evaluate(&net, &held_out, 1).unwrap()
    };
    let (attention, bleu) = score(false);
    let (bottleneck, _) = score(true);
    assert!(attention >= BAR, "held-out exact accuracy {attention}, BLEU {}", bleu.score);
    eprintln!("held-out exact: attention {attention}, bottleneck {bottleneck}");
    assert!(attention > bottleneck, "attention {attention} vs bottleneck {bottleneck}");
}
