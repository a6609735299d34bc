//! The code of chapters 14 to 17 and of the appendix's backward pass, under
//! the same search: the language model (its configuration, passes, caches,
//! decoding and data), latent attention, the sliding cache, the cache's
//! cost, the recurrent translator, ROUGE, the gradient check, the fast
//! backward pass and the smoothed loss. Sizes run up to and past the
//! crate's limits, values through NaN and ±∞, caches come from other
//! models: an error, or an `Ok` holding finite numbers only.

use attn::grad::check_gradient;
use attn::kv_bytes::{kv_bytes_per_token, KvLayout};
use attn::latent::LatentAttention;
use attn::lm::{
    even_offsets, random_offsets, repeated_sequences, Decoding, Forgetting, LanguageModel,
    LatentSizes, LmConfig, Positions, Sampler, SplitMix64, SHAKESPEARE_MODEL,
};
use attn::nn::smoothed_cross_entropy;
use attn::rope_scaling::RopeScaling;
use attn::sliding::SlidingCache;
use attn::translation::{batch, mean_rouge, rouge_l, rouge_n, summary_set, RnnConfig, RnnSeq2Seq};

use super::*;

/// A model's size: small most of the time, sometimes past every limit.
fn model_size() -> impl Strategy<Value = usize> {
    prop_oneof![12 => 1usize..9, 1 => Just(0usize), 1 => Just(1usize << 33), 1 => Just(usize::MAX)]
}

/// A size no model can have.
fn bad_size() -> impl Strategy<Value = usize> {
    prop_oneof![Just(0usize), Just(3usize), Just(1usize << 33), Just(usize::MAX)]
}

/// A language model's configuration: a small one that builds, with any
/// positions (rotary ones scaled by YaRN, or by a factor below 1 that no
/// model can have; ALiBi; or none), multi-head, grouped or latent attention; and, one time
/// in three, one of its sizes replaced by one no model can have.
fn lm_config() -> impl Strategy<Value = LmConfig> {
    let shape = (1usize..9, 1usize..9, 1usize..3, 1usize..4, 1usize..3, 1usize..9);
    let kind = (0usize..6, 0usize..3, 0usize..24, bad_size());
    (shape, kind).prop_map(
        |((vocab, context, d_head, heads, layers, d_ff), (place, attention, bad, size))| {
            let d_model = 2 * d_head * heads;
            let yarn = RopeScaling::Yarn {
                factor: 4.0,
                trained: 2,
                beta_fast: 8.0,
                beta_slow: 1.0,
                temperature: true,
            };
            let positions = match place {
                0 => Positions::Learned,
                1 => Positions::Rotary,
                2 => Positions::ScaledRotary(yarn),
                3 => Positions::None,
                4 => Positions::Alibi,
                _ => Positions::ScaledRotary(RopeScaling::Linear { factor: 0.5 }),
            };
            let kv_heads = if attention == 1 { 1 } else { heads };
            let latent = (attention == 2).then_some(LatentSizes { d_c: d_model, d_r: 2 });
            let mut c = LmConfig {
                vocab,
                context,
                d_model,
                heads,
                kv_heads,
                layers,
                d_ff,
                positions,
                latent,
                ..SHAKESPEARE_MODEL
            };
            match bad {
                0 => c.vocab = size,
                1 => c.context = size,
                2 => c.d_model = size,
                3 => c.heads = size,
                4 => c.kv_heads = size,
                5 => c.layers = size,
                6 => c.d_ff = size,
                7 => c.latent = Some(LatentSizes { d_c: size, d_r: 2 }),
                _ => {}
            }
            c
        },
    )
}

/// Token ids: most within a small vocabulary, some past it.
fn tokens(max_len: usize) -> impl Strategy<Value = Vec<usize>> {
    proptest::collection::vec(
        prop_oneof![8 => 0usize..8, 1 => Just(9), 1 => Just(usize::MAX)],
        0..max_len,
    )
}

/// A model built from `config` if it is small enough to build in a test.
fn small_model(config: LmConfig, seed: u64) -> Option<LanguageModel<f32>> {
    let small = config.parameter_count().is_some_and(|p| p <= 200_000)
        && config.context <= 16
        && config.d_ff <= 16;
    small.then(|| LanguageModel::<f32>::new(config, seed).ok()).flatten()
}

proptest! {
    #![proptest_config(config())]

    /// The language model: any configuration is refused or built; any
    /// tokens, cache, count or poisoned parameter give an error or finite
    /// numbers.
    #[test]
    fn the_language_model_never_panics_aborts_nor_returns_non_finite_numbers(
        config in lm_config(), other in lm_config(), seed in any::<u64>(),
        text in tokens(12), raw in proptest::bool::weighted(0.2),
        window in model_size(), count in model_size(),
        sinks in model_size(), poison in (value(), 0usize..4, any::<usize>()),
    ) {
        let _ = (config.check(), config.parameter_count(), config.d_kv(), config.kv_layout());
        if config.parameter_count().is_none() {
            prop_assert!(LanguageModel::<f32>::new(config, seed).is_err());
        }
        let Some(mut net) = small_model(config, seed) else { return Ok(()) };
        // Tokens of the model's vocabulary most of the time.
        let text: Vec<usize> =
            if raw { text } else { text.iter().map(|t| t % net.config().vocab).collect() };
        let (slice, at, v) = (poison.1, poison.2, poison.0);
        if let Some(s) = net.slices_mut().into_iter().nth(slice) {
            let n = s.len();
            s[at % n] = v;
        }
        let finite = |f: &attn::lm::LmForward<f32>| all_finite(f.logits());
        prop_assert!(holds(net.forward(std::slice::from_ref(&text)), finite));
        prop_assert!(holds(net.forward_window(std::slice::from_ref(&text), window), finite));
        prop_assert!(holds(net.next_logits(&text), |l| all_finite(l)));
        let cache = small_model(other, seed ^ 1).map_or_else(|| net.new_cache(), |o| o.new_cache());
        let finite_losses = |l: &Vec<f64>| l.iter().all(|x| x.is_finite());
        prop_assert!(holds(net.losses_through(&text, cache), finite_losses));
        let mut cache = small_model(other, seed ^ 1).map_or_else(|| net.new_cache(), |o| o.new_cache());
        for &t in text.iter().take(3) {
            prop_assert!(holds(net.step(t, &mut cache), |l| all_finite(l)));
        }
        for forgetting in [Forgetting::Window(window), Forgetting::Sinks { sinks, window }] {
            if let Ok(cache) = net.new_cache_forgetting(forgetting) {
                prop_assert!(holds(net.losses_through(&text, cache), finite_losses));
            }
        }
        let sampler = Sampler::new(1.0).unwrap();
        for decoding in [Decoding::Cached, Decoding::Recompute] {
            let generated = net.generate(&text, count.min(1 << 40), &sampler, seed, decoding);
            prop_assert!(holds(generated, |g| g.len() == text.len() + count));
        }
    }

    /// The language model's data: offsets, windows and synthetic sequences
    /// for any counts and lengths, refused before they are allocated.
    #[test]
    fn the_language_model_s_data_never_panics_nor_aborts(
        (count, len, context, vocab) in (size(), size(), size(), size()),
        seed in any::<u64>(), runs in (size(), size()),
    ) {
        let mut rng = SplitMix64::new(seed);
        prop_assert!(holds(random_offsets(&mut rng, count, len, context), |o| o.len() == count));
        prop_assert!(holds(even_offsets(count, len, context), |o| o.len() == count));
        prop_assert!(holds(repeated_sequences(seed, count, len, vocab), |s| s.len() == count));
        prop_assert!(holds(summary_set(count, seed, runs.0..runs.1), |s| s.len() == count));
    }

    /// Latent attention, the sliding cache and the cache's cost: any sizes,
    /// any rows.
    #[test]
    fn latent_attention_and_the_caches_never_panic_nor_return_non_finite_numbers(
        (d_model, heads, d_h, d_c, d_r) in (model_size(), model_size(), model_size(), model_size(), model_size()),
        (layers, bytes, window, sinks) in (size(), size(), size(), size()),
        x in matrix(6), row in matrix(1),
    ) {
        let mut rng = StdRng::seed_from_u64(0);
        if let Ok(layer) = LatentAttention::new(d_model, heads, [d_h, d_c, d_r], &mut rng) {
            prop_assert!(holds(layer.forward(&x), |o| all_finite(o)));
            let absorbed = layer.absorbed();
            if let Ok(mut cache) = absorbed.new_cache(window.min(64)) {
                let token = row.iter().copied().collect::<Array1<f32>>();
                for _ in 0..3 {
                    prop_assert!(holds(absorbed.step(&token, &mut cache), |o| all_finite(o)));
                }
            }
        }
        let layouts = [KvLayout::Heads { kv_heads: heads, d_head: d_h }, KvLayout::Latent { d_c, d_r }];
        for layout in layouts {
            prop_assert!(holds(kv_bytes_per_token(layers, layout, bytes), |b| *b > 0));
        }
        if let Ok(mut cache) = SlidingCache::new(d_h, d_c, sinks.min(64), window.min(64)) {
            use attn::cache::KeyValueCache;
            let key = row.iter().copied().collect::<Array1<f32>>();
            for _ in 0..3 {
                let _ = cache.append(&key, &key);
                prop_assert!(holds(cache.attend(&key), |o| all_finite(o)));
            }
            prop_assert!(cache.len() <= sinks.min(64) + window.min(64));
        }
        let mut growing = attn::cache::KvCache::new(d_h.min(64), d_c.min(64));
        let key = row.iter().copied().collect::<Array1<f32>>();
        if growing.append(&key, &key).is_ok() {
            prop_assert!(holds(growing.attend(&key), |o| all_finite(o)));
        }
    }

    /// The recurrent translator, ROUGE, the gradient check, the fast
    /// backward pass and the smoothed loss.
    #[test]
    fn the_translator_the_scores_and_the_backward_passes_never_panic_nor_return_non_finite_numbers(
        (d_embed, d_state, d_attention) in (model_size(), model_size(), model_size()),
        attention in any::<bool>(), seed in any::<u64>(),
        ids in tokens(10), other in tokens(10), n in size(), text in "[-0-9.eEaNinf \n]{0,60}",
        [q, k, v, d_out] in attention_inputs(), causal in any::<bool>(), lse in value(),
        (logits, epsilon) in (matrix(5), value()),
        targets in proptest::collection::vec(proptest::option::of(0usize..7), 0..7),
        (point, scale) in (matrix(3), value()),
    ) {
        let config = RnnConfig { d_embed, d_state, d_attention, attention, max_lengths: (12, 8) };
        if config.parameter_count().is_some_and(|p| p <= 100_000) {
            if let (Ok(net), Ok(b)) = (RnnSeq2Seq::new(config, seed), batch(&[(&ids[..], &other[..])])) {
                prop_assert!(holds(net.forward(&b), |f| f.logits().iter().all(|x| x.is_finite())));
            }
        }
        let _ = RnnSeq2Seq::from_text(&text);
        let score = |r: &attn::translation::Rouge| r.f1.is_finite() && (0.0..=1.0).contains(&r.f1);
        prop_assert!(holds(rouge_n(&ids, &other, n), score));
        prop_assert!(holds(rouge_l(&ids, &other), score));
        let _ = mean_rouge(std::slice::from_ref(&ids), std::slice::from_ref(&other));
        if let Ok(mut forward) = attn::fast::fast_attention_forward(&q, &k, &v, causal) {
            let finite_grads = |(a, b, c): &(Array2<f32>, Array2<f32>, Array2<f32>)| {
                all_finite(a) && all_finite(b) && all_finite(c)
            };
            prop_assert!(holds(attn::fast::fast_attention_backward(&q, &k, &v, &forward, &d_out), finite_grads));
            if let Some(first) = forward.lse.first_mut() {
                *first = lse;
            }
            prop_assert!(holds(attn::fast::fast_attention_backward(&q, &k, &v, &forward, &d_out), finite_grads));
        }
        let loss = smoothed_cross_entropy(&logits, &targets, epsilon);
        prop_assert!(holds(loss, |(l, g)| l.is_finite() && all_finite(g)));
        let point = point.mapv(f64::from);
        let s = f64::from(scale);
        let f = |x: &Array2<f64>| x.iter().map(|a| a * a * s).sum::<f64>();
        let analytic = point.mapv(|a| 2.0 * a * s);
        prop_assert!(holds(check_gradient(&analytic, f, &point), |e| e.is_finite() && *e >= 0.0));
    }
}
