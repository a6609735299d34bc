//! The language model's KV cache holds what its formula says: the
//! allocator hands out `context · bytes_per_token` for it (and a few bytes
//! of bookkeeping), at once, and nothing more as the model writes.

#[path = "common/counting.rs"]
mod counting;

#[global_allocator]
static ALLOCATOR: counting::Counting = counting::Counting;

use attn::lm::{LmCache, Sampler};

#[test]
fn the_cache_allocates_its_formula_once() {
    let model = report::ch16::book_model().unwrap();
    let context = model.config().context;
    let expected = context * LmCache::bytes_per_token(&model);
    assert_eq!(expected, 262_144); // 64 · 4,096
    let before = counting::current();
    let mut cache = model.new_cache();
    let allocated = counting::current() - before;
    // Bookkeeping: the vectors of heads and the caches' own fields.
    let bookkeeping = 4 * 1024;
    assert!(
        (expected..expected + bookkeeping).contains(&allocated),
        "the cache allocated {allocated} bytes; its formula says {expected}"
    );
    let greedy = Sampler::new(0.0).unwrap();
    let mut token = 0;
    for _ in 0..context {
        let logits = model.step(token, &mut cache).unwrap();
        token = greedy.sample(logits.as_slice().unwrap(), &mut rng()).unwrap();
    }
    assert_eq!(cache.len(), context);
    assert_eq!(
        counting::current() - before,
        allocated,
        "the full cache holds no more than the empty one was given"
    );
    drop(cache);
    a_grouped_model_s_cache_is_smaller_by_its_groups();
}

fn rng() -> ndarray_rand::rand::rngs::StdRng {
    use ndarray_rand::rand::SeedableRng;
    ndarray_rand::rand::rngs::StdRng::seed_from_u64(0)
}

/// With grouped-query and multi-query attention the cache shrinks by
/// `heads / kv_heads`, and the allocator sees exactly that. (Called from
/// the test above: the allocator's count is shared by the test threads.)
fn a_grouped_model_s_cache_is_smaller_by_its_groups() {
    use attn::lm::{LanguageModel, LmConfig, SHAKESPEARE_MODEL};
    let full = 262_144;
    for kv_heads in [4, 2, 1] {
        let config = LmConfig { kv_heads, ..SHAKESPEARE_MODEL };
        let model = LanguageModel::<f32>::new(config, 1).unwrap();
        let expected = config.context * LmCache::bytes_per_token(&model);
        assert_eq!(expected, full / (4 / kv_heads));
        let before = counting::current();
        let cache = model.new_cache();
        let allocated = counting::current() - before;
        assert!(
            (expected..expected + 4 * 1024).contains(&allocated),
            "kv_heads {kv_heads}: the cache allocated {allocated} bytes; its formula says {expected}"
        );
        drop(cache);
    }
    a_latent_model_s_cache_holds_a_latent_and_a_rotary_key();
}

/// With latent attention (a latent of 64 and rotary keys of 16) the cache
/// keeps `d_c + d_r` = 80 numbers a token and block, and the allocator sees
/// them, beside the block's absorbed weights that decoding reads (computed
/// once, with the cache). (Called from the test above.)
fn a_latent_model_s_cache_holds_a_latent_and_a_rotary_key() {
    use attn::lm::{LanguageModel, LatentSizes, LmConfig, Positions, SHAKESPEARE_MODEL};
    let (d_c, d_r) = (64, 16);
    let config = LmConfig {
        positions: Positions::Rotary,
        latent: Some(LatentSizes { d_c, d_r }),
        ..SHAKESPEARE_MODEL
    };
    let model = LanguageModel::<f32>::new(config, 1).unwrap();
    let expected = config.context * LmCache::bytes_per_token(&model);
    assert_eq!(expected, 64 * 4 * (d_c + d_r) * 4);
    let (d, h, layers) = (config.d_model, config.heads, config.layers);
    // Per block: per head W_Q^i (W_UK^i)ᵀ and W_UV^i W_O^i, and W_QR, W_DKV, W_KR.
    let absorbed = layers * (h * 2 * d * d_c + d * h * d_r + d * d_c + d * d_r) * 4;
    drop(model.new_cache()); // the products' scratch space, kept for later products
    let before = counting::current();
    let mut cache = model.new_cache();
    let allocated = counting::current() - before;
    assert_eq!(cache.latent_bytes(), Some(expected));
    assert!(
        (expected + absorbed..expected + absorbed + 4 * 1024).contains(&allocated),
        "the latent cache allocated {allocated} bytes; its formula says {expected} and {absorbed} of weights"
    );
    for token in 0..2 * config.context {
        model.step(token % config.vocab, &mut cache).unwrap();
    }
    assert_eq!(cache.len(), config.context);
    assert_eq!(
        counting::current() - before,
        allocated,
        "writing past the context allocates nothing that stays"
    );
}
