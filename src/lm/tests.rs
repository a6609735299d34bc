//! The language model's backward pass against finite differences, and its
//! forward pass against what it must not see.

use ndarray::Array2;

use super::*;
use crate::grad::gradient_error;
use crate::nn::Parameters;
use crate::rope_scaling::RopeScaling;

const SMALL: LmConfig = LmConfig {
    vocab: 7,
    context: 5,
    d_model: 8,
    heads: 2,
    kv_heads: 2,
    layers: 2,
    d_ff: 12,
    positions: Positions::Learned,
    latent: None,
    ..SHAKESPEARE_MODEL
};

/// A small `f64` model whose weights are large enough (`N(0, 0.5²)`, `γ`
/// around 1) for every path to matter, and a batch of two windows.
fn problem() -> (LanguageModel<f64>, Vec<Vec<usize>>, Vec<Option<usize>>) {
    problem_with(SMALL)
}

/// The small model's variants: learned or rotary positions, each with
/// multi-head attention (2 key/value heads) and multi-query attention (1),
/// latent attention (a latent of 6, rotary parts of 2), and rotary
/// positions scaled by each method (trained on the context, 5; YaRN's
/// factor with multi-query attention as well), no positions at all, and
/// ALiBi.
fn variants() -> Vec<LmConfig> {
    let rotary = LmConfig { positions: Positions::Rotary, ..SMALL };
    let mqa = |c: LmConfig| LmConfig { kv_heads: 1, ..c };
    let latent = LmConfig { latent: Some(LatentSizes { d_c: 6, d_r: 2 }), ..rotary };
    let scaled = |scaling| LmConfig { positions: Positions::ScaledRotary(scaling), ..SMALL };
    let yarn = scaled(RopeScaling::Yarn {
        factor: 4.0,
        trained: 5,
        beta_fast: 2.0,
        beta_slow: 0.5,
        temperature: true,
    });
    vec![
        SMALL,
        rotary,
        mqa(SMALL),
        mqa(rotary),
        latent,
        scaled(RopeScaling::Linear { factor: 2.0 }),
        scaled(RopeScaling::NtkAware { factor: 3.0 }),
        yarn,
        mqa(yarn),
        scaled(RopeScaling::Llama3 { factor: 4.0, trained: 5, low: 0.5, high: 2.0 }),
        LmConfig { positions: Positions::None, ..SMALL },
        LmConfig { positions: Positions::Alibi, ..SMALL },
    ]
}

fn problem_with(config: LmConfig) -> (LanguageModel<f64>, Vec<Vec<usize>>, Vec<Option<usize>>) {
    let mut model = LanguageModel::<f64>::new(config, 11).unwrap();
    for (t, tensor) in model.slices_mut().into_iter().enumerate() {
        for (i, x) in tensor.iter_mut().enumerate() {
            *x = if *x == 1.0 { 1.0 + 0.1 * ((t + i) % 5) as f64 } else { *x * 25.0 };
        }
    }
    let inputs = vec![vec![1, 4, 6, 0, 4], vec![3, 3, 2, 5, 1]];
    let targets = [4, 6, 0, 4, 2, 3, 2, 5, 1, 1].map(Some).to_vec();
    (model, inputs, targets)
}

#[test]
fn every_gradient_matches_finite_differences() {
    for config in variants() {
        every_gradient_matches_finite_differences_with(config);
    }
}

fn every_gradient_matches_finite_differences_with(config: LmConfig) {
    let (model, inputs, targets) = problem_with(config);
    let (_, grads) = model.loss_and_gradients(&inputs, &targets).unwrap();
    let names = model.named_slices();
    for (t, (name, values)) in names.iter().enumerate() {
        let x = Array2::from_shape_vec((1, values.len()), values.to_vec()).unwrap();
        let analytic =
            Array2::from_shape_vec((1, values.len()), grads.slices()[t].to_vec()).unwrap();
        let loss = |x: &Array2<f64>| {
            let mut m = model.clone();
            m.slices_mut()[t].copy_from_slice(x.as_slice().unwrap());
            m.loss(&inputs, &targets).unwrap()
        };
        let error = gradient_error(&analytic, loss, &x);
        assert!(error < 1e-6, "{config:?}, {name}: relative error {error:e}");
    }
}

#[test]
fn a_position_sees_only_itself_and_the_past() {
    for config in variants() {
        a_position_sees_only_itself_and_the_past_with(config);
    }
}

fn a_position_sees_only_itself_and_the_past_with(config: LmConfig) {
    let (model, inputs, _) = problem_with(config);
    let before = model.forward(&inputs).unwrap().logits().clone();
    let mut changed = inputs.clone();
    changed[0][3] = 2; // a later token of sequence 0
    let after = model.forward(&changed).unwrap().logits().clone();
    for row in 0..10 {
        let same = before.row(row) == after.row(row);
        assert_eq!(same, !(3..5).contains(&row), "row {row}");
    }
}

#[test]
fn bad_batches_are_refused_by_name() {
    let (model, inputs, targets) = problem();
    let e = |r: Result<f64, crate::AttnError>| r.unwrap_err().to_string();
    assert!(e(model.loss(&[vec![0; 6]], &[Some(0); 6])).contains("6"));
    assert!(e(model.loss(&[vec![7]], &[Some(0)])).contains("token"));
    assert!(e(model.loss(&[vec![1]], &[Some(7)])).contains("target"));
    assert!(e(model.loss(&[], &[])).contains("batch"));
    assert!(e(model.loss(&[vec![1, 2], vec![1]], &[Some(1); 3])).contains("length"));
    assert!(e(model.loss(&inputs, &targets[..5])).contains("targets"));
    let mut nan = model.clone();
    nan.slices_mut()[3][0] = f64::NAN;
    assert!(e(nan.loss(&inputs, &targets)).contains("blocks.0.w_q"));
}

/// The small model in `f32`, with the same large weights.
fn small_f32() -> LanguageModel<f32> {
    small_f32_with(SMALL)
}

fn small_f32_with(config: LmConfig) -> LanguageModel<f32> {
    let (model, _, _) = problem_with(config);
    let mut out = LanguageModel::<f32>::new(config, 11).unwrap();
    for (to, from) in out.slices_mut().into_iter().zip(model.slices()) {
        to.iter_mut().zip(from).for_each(|(t, f)| *t = *f as f32);
    }
    out
}

#[test]
fn the_cache_gives_the_logits_of_recomputing_at_every_step() {
    for config in variants() {
        the_cache_gives_the_logits_of_recomputing_with(config);
    }
}

fn the_cache_gives_the_logits_of_recomputing_with(config: LmConfig) {
    let model = small_f32_with(config);
    let tokens = [3, 1, 4, 1, 5];
    let mut cache = model.new_cache();
    for t in 0..tokens.len() {
        let cached = model.step(tokens[t], &mut cache).unwrap();
        let recomputed = model.next_logits(&tokens[..=t]).unwrap();
        let scale = recomputed.iter().fold(1.0_f32, |m, x| m.max(x.abs()));
        for (a, b) in cached.iter().zip(&recomputed) {
            assert!((a - b).abs() <= 1e-5 * scale, "step {t}: {a} vs {b}");
        }
    }
    assert_eq!(cache.len(), 5);
    if config.positions == Positions::Learned {
        let e = model.step(0, &mut cache).unwrap_err().to_string();
        assert!(e.contains("6") && e.contains("5"), "{e}");
    }
}

#[test]
fn cached_and_recomputed_generation_write_the_same_text() {
    let model = small_f32();
    for sampler in [Sampler::new(0.0).unwrap(), Sampler::new(1.0).unwrap().top_p(0.9).unwrap()] {
        let cached = model.generate(&[2], 12, &sampler, 5, Decoding::Cached).unwrap();
        let recomputed = model.generate(&[2], 12, &sampler, 5, Decoding::Recompute).unwrap();
        assert_eq!(cached, recomputed);
        assert_eq!(cached.len(), 13);
    }
}

#[test]
fn a_cache_of_another_model_or_a_bad_token_is_refused() {
    let model = small_f32();
    let other = LanguageModel::<f32>::new(LmConfig { layers: 1, ..SMALL }, 1).unwrap();
    let mut cache = other.new_cache();
    assert!(model.step(0, &mut cache).unwrap_err().to_string().contains("cache"));
    let mut cache = model.new_cache();
    assert!(model.step(7, &mut cache).unwrap_err().to_string().contains("token"));
    let sampler = Sampler::new(0.0).unwrap();
    assert!(model.generate(&[], 3, &sampler, 0, Decoding::Cached).is_err());
}

/// With rotary positions (or none) the cache slides: far past the context
/// (5), each step's cached logits equal those of sliding-window attention
/// over the whole text (every position sees the 5 last, in every block),
/// because rotary scores depend only on the distance between query and key
/// (and scores without positions on neither). They
/// are *not* those of reading the last 5 tokens afresh: in a model of
/// several blocks, a cached key also carries what its token saw before the
/// window.
#[test]
fn a_sliding_rotary_cache_is_sliding_window_attention() {
    for config in variants().into_iter().filter(|c| c.positions != Positions::Learned) {
        a_sliding_rotary_cache_is_sliding_window_attention_with(config);
    }
}

fn a_sliding_rotary_cache_is_sliding_window_attention_with(config: LmConfig) {
    let model = small_f32_with(config);
    let context = SMALL.context;
    let sampler = Sampler::new(1.0).unwrap();
    let text = model.generate(&[1], 300, &sampler, 3, Decoding::Cached).unwrap();
    let windowed = model.forward_window(std::slice::from_ref(&text), context).unwrap();
    let mut cache = model.new_cache();
    let mut afresh_differs = false;
    for t in 0..text.len() {
        let cached = model.step(text[t], &mut cache).unwrap();
        let expected = windowed.logits().row(t);
        let scale = expected.iter().fold(1.0_f32, |m, x| m.max(x.abs()));
        for (a, b) in cached.iter().zip(expected) {
            assert!((a - b).abs() <= 1e-4 * scale, "step {t}: {a} vs {b}");
        }
        assert_eq!(cache.len(), (t + 1).min(context));
        let afresh = model.next_logits(&text[(t + 1).saturating_sub(context)..=t]).unwrap();
        afresh_differs |= cached.iter().zip(&afresh).any(|(a, b)| (a - b).abs() > 1e-2 * scale);
    }
    assert_eq!(cache.read(), 301);
    assert!(afresh_differs, "reading the window afresh should differ past the context");
    let refused = small_f32().forward_window(&[vec![1; 8]], 5);
    assert!(refused.is_err_and(|e| e.to_string().contains("learned positions")));
}

#[test]
fn a_removed_head_no_longer_reaches_the_output() {
    let model = small_f32();
    let (_, inputs, _) = problem();
    let without = model.without_heads(&[(1, 2)]).unwrap();
    let a = model.forward(&inputs).unwrap().logits().clone();
    let b = without.forward(&inputs).unwrap().logits().clone();
    assert!((&a - &b).iter().any(|d| d.abs() > 1e-3));
    // Head 2 of block 1 reads W_O's rows 4 to 7 (d_k = 4): all zero now.
    let w_o = without.blocks[0].attn.matrices()[3];
    assert!(w_o.rows().into_iter().skip(4).take(4).all(|r| r.iter().all(|&x| x == 0.0)));
    assert!(model.without_heads(&[(1, 3)]).is_err());
    assert!(model.without_heads(&[(3, 1)]).is_err());
}

/// Training the book's model gives the same bits on one, two and three
/// threads:
/// the threads split work whose every sum keeps its order, so a reader's
/// machine reproduces the committed weights whatever its core count.
#[test]
fn training_gives_the_same_bits_on_one_two_and_three_threads() {
    let text: Vec<u8> = (0..4_000u32).map(|i| ((i * 7 + i / 13) % 84) as u8).collect();
    let recipe =
        LmTraining { steps: 2, warmup: 1, log_every: 1, log_windows: 2, ..SHAKESPEARE_TRAINING };
    let train = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            let mut model = LanguageModel::<f32>::new(SHAKESPEARE_MODEL, 1).unwrap();
            let log = train_lm(&mut model, &text, &text, &recipe, |_, _| {}).unwrap();
            let losses: Vec<_> = log.iter().map(|e| (e.train_loss, e.validation_loss)).collect();
            (model, losses)
        })
    };
    let one = train(1);
    for threads in [2, 3] {
        let other = train(threads);
        assert_eq!(one.1, other.1);
        assert!(one.0 == other.0, "the weights differ between 1 and {threads} threads");
    }
}

/// The rotary small model, and a text eight times its context.
fn rotary_and_long_text() -> (LanguageModel<f32>, Vec<usize>) {
    let model = small_f32_with(LmConfig { positions: Positions::Rotary, ..SMALL });
    let text = (0..40).map(|i| (i * 5 + i / 3) % SMALL.vocab).collect();
    (model, text)
}

fn logits_through(
    model: &LanguageModel<f32>,
    text: &[usize],
    mut cache: LmCache,
) -> Vec<Array2<f32>> {
    text.iter().map(|&t| model.step(t, &mut cache).unwrap().insert_axis(ndarray::Axis(0))).collect()
}

fn largest_gap(a: &[Array2<f32>], b: &[Array2<f32>], steps: std::ops::Range<usize>) -> f32 {
    steps.flat_map(|t| (&a[t] - &b[t]).into_iter()).fold(0.0, |m, d| m.max(d.abs()))
}

/// A window as long as the text forgets nothing: at every step, the row of
/// causal attention over the whole text, at positions past the context.
#[test]
fn a_window_as_long_as_the_text_is_attention_over_all_of_it() {
    let (model, text) = rotary_and_long_text();
    let cache = model.new_cache_forgetting(Forgetting::Window(40)).unwrap();
    let cached = logits_through(&model, &text, cache);
    let whole = model.forward_window(std::slice::from_ref(&text), 40).unwrap();
    for (t, row) in cached.iter().enumerate() {
        approx::assert_abs_diff_eq!(row.row(0), whole.logits().row(t), epsilon = 1e-4);
    }
}

/// Positions within the cache change nothing for a window alone (a
/// rotary score depends only on distance), and, with sinks, nothing until
/// a token is evicted; after that the sinks' cache reads other keys.
#[test]
fn sinks_read_at_cache_positions() {
    let (model, text) = rotary_and_long_text();
    let plain = logits_through(&model, &text, model.new_cache());
    let cache = |f| model.new_cache_forgetting(f).unwrap();
    let renumbered =
        logits_through(&model, &text, cache(Forgetting::Sinks { sinks: 0, window: 5 }));
    assert!(largest_gap(&plain, &renumbered, 0..40) < 1e-4);
    let sinks = logits_through(&model, &text, cache(Forgetting::Sinks { sinks: 2, window: 3 }));
    assert!(largest_gap(&plain, &sinks, 0..5) < 1e-4, "nothing evicted yet");
    assert!(largest_gap(&plain, &sinks, 5..40) > 1e-2, "tokens 0 and 1 kept instead");
}

/// The losses read through the cache are the model's own loss, token by
/// token; a learned-position model gets no forgetting cache.
#[test]
fn losses_through_a_cache_are_the_model_s_loss() {
    let (model, text) = rotary_and_long_text();
    let losses = model.losses_through(&text[..5], model.new_cache()).unwrap();
    let mean = losses.iter().sum::<f64>() / losses.len() as f64;
    let loss = model
        .loss(&[text[..4].to_vec()], &text[1..5].iter().map(|&t| Some(t)).collect::<Vec<_>>())
        .unwrap();
    assert!((mean - loss).abs() < 1e-5, "{mean} vs {loss}");
    let e = small_f32().new_cache_forgetting(Forgetting::Window(9)).unwrap_err();
    assert!(e.to_string().contains("rotary"), "{e}");
}

/// Training through the fused kernel: the same loss and gradients as with
/// the weights kept, within `f32`'s rounding, for every variant (latent
/// attention keeps its weights: its heads are not fused); an `f64` model,
/// which has no fused kernel, gives the same bits; and a fused forward
/// pass has no weights to show.
#[test]
fn the_fused_path_trains_as_the_path_that_keeps_the_weights() {
    for config in variants() {
        let (wide, inputs, targets) = problem_with(config);
        let mut model = LanguageModel::<f32>::new(config, 11).unwrap();
        for (to, from) in model.slices_mut().into_iter().zip(wide.slices()) {
            to.iter_mut().zip(from).for_each(|(t, &f)| *t = f as f32 / 5.0);
        }
        let on = |path| model.loss_and_gradients_on(&inputs, &targets, path).unwrap();
        let ((loss_w, g_w), (loss_f, g_f)) = (on(AttentionPath::Weights), on(AttentionPath::Fused));
        assert!((loss_w - loss_f).abs() < 1e-5, "{config:?}: {loss_w} {loss_f}");
        for ((name, a), b) in g_w.named_slices().into_iter().zip(g_f.slices()) {
            let gap = a.iter().zip(b).fold(0.0_f32, |m, (x, y)| m.max((x - y).abs()));
            let size = a.iter().fold(1.0_f32, |m, x| m.max(x.abs()));
            assert!(gap < 1e-4 * size, "{config:?} {name}: {gap} of {size}");
        }
        let on_wide = |path| wide.loss_and_gradients_on(&inputs, &targets, path).unwrap();
        let (same, other) = (on_wide(AttentionPath::Weights), on_wide(AttentionPath::Fused));
        assert_eq!(same.0, other.0);
        assert_eq!(same.1.slices(), other.1.slices());
    }
    let model = LanguageModel::<f32>::new(SMALL, 11).unwrap();
    let inputs = vec![vec![1, 4, 6, 0, 4]];
    let fused = model.forward_on(&inputs, AttentionPath::Fused).unwrap();
    assert!(fused.weights(0, 0, 0).is_err());
    assert!(model.forward(&inputs).unwrap().weights(0, 0, 0).is_ok());
}

/// Attention sinks read keys at their places in the cache, turned by
/// plain RoPE: a model whose RoPE is scaled is refused such a cache, with
/// the reason, rather than read with the wrong frequencies.
#[test]
fn a_scaled_rotary_model_refuses_positions_within_the_cache() {
    let scaling = RopeScaling::Linear { factor: 2.0 };
    let model = small_f32_with(LmConfig { positions: Positions::ScaledRotary(scaling), ..SMALL });
    let sinks = model.new_cache_forgetting(Forgetting::Sinks { sinks: 1, window: 3 });
    assert!(sinks.unwrap_err().to_string().contains("plain rotary positions"));
    assert!(model.new_cache_forgetting(Forgetting::Window(3)).is_ok());
}

/// A rotary model read with scaled RoPE: with a factor of 1 it is the
/// model itself, bit for bit, at any context; with another factor its
/// logits move; a learned model and a factor below 1 are refused.
#[test]
fn a_rotary_model_reads_longer_with_its_rope_scaled() {
    let rotary = small_f32_with(LmConfig { positions: Positions::Rotary, ..SMALL });
    let text = vec![vec![3, 1, 4, 1, 5]];
    let plain = rotary.forward(&text).unwrap();
    let same = rotary.with_scaled_rope(12, RopeScaling::Linear { factor: 1.0 }).unwrap();
    assert_eq!(same.forward(&text).unwrap().logits(), plain.logits());
    let longer = vec![(0..12).map(|i| i % 7).collect::<Vec<usize>>()];
    assert!(same.forward(&longer).is_ok());
    let scaled = rotary.with_scaled_rope(12, RopeScaling::Linear { factor: 2.0 }).unwrap();
    assert_ne!(scaled.forward(&text).unwrap().logits(), plain.logits());
    let e = small_f32().with_scaled_rope(12, RopeScaling::None).unwrap_err().to_string();
    assert!(e.contains("rotary"), "{e}");
    let e = rotary.with_scaled_rope(12, RopeScaling::Linear { factor: 0.5 }).unwrap_err();
    assert!(e.to_string().contains("scale factor"), "{e}");
}

/// ALiBi gives each head's cache its own slope, so heads cannot share
/// keys and values; and its biases move the logits of a model with no
/// positions (the same weights).
#[test]
fn alibi_needs_a_cache_a_head_and_moves_the_logits() {
    let grouped = LmConfig { positions: Positions::Alibi, kv_heads: 1, ..SMALL };
    let e = LanguageModel::<f32>::new(grouped, 1).unwrap_err().to_string();
    assert!(e.contains("kv_heads with ALiBi"), "{e}");
    let alibi = small_f32_with(LmConfig { positions: Positions::Alibi, ..SMALL });
    let text = vec![vec![3, 1, 4, 1, 5]];
    let none =
        LanguageModel { config: LmConfig { positions: Positions::None, ..SMALL }, ..alibi.clone() };
    let (a, b) = (alibi.forward(&text).unwrap(), none.forward(&text).unwrap());
    assert_eq!(a.logits().row(0), b.logits().row(0), "the first token sees itself alone");
    assert_ne!(a.logits().row(4), b.logits().row(4));
}
