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
    let model = report::ch15::book_model().unwrap();
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
        token = greedy
            .sample(logits.as_slice().unwrap(), &mut rng())
            .unwrap();
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
        let config = LmConfig {
            kv_heads,
            ..SHAKESPEARE_MODEL
        };
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
}
