//! Serving refuses bad input by name: the paged cache's pool and tables,
//! the prefix cache, the server's requests and speculative decoding's
//! distributions. A sequence, a table or a prefix cache used with another
//! pool than its own would read or free another sequence's blocks: an
//! error, never a silently wrong answer.

use attn::lm::{acceptance, verify, Batching, LanguageModel, Policy, Request, Sampler, Server};
use attn::paging::{BlockPool, BlockTable, PrefixCache};
use attn::AttnError;

use crate::SMALL_LM as SMALL;

fn model() -> LanguageModel<f32> {
    LanguageModel::new(SMALL, 1).unwrap()
}

#[test]
fn a_pool_refuses_blocks_it_does_not_hand_out() {
    let mut pool = BlockPool::new(2, 3).unwrap();
    assert!(pool.release(0).unwrap_err().to_string().contains("block in use"));
    assert!(pool.share(5).unwrap_err().to_string().contains("block in use"));
    assert_eq!(pool.references(5), 0, "a block past the pool is held by none");
    let (mut table, other) = (BlockTable::new(&pool), BlockPool::new(2, 3).unwrap());
    table.push(&mut pool).unwrap();
    assert!(table.slot(1).unwrap_err().to_string().contains("token"));
    let mut other = other;
    for e in [table.truncate(0, &mut other), table.fork(&mut other).map(|_| ())] {
        assert!(e.unwrap_err().to_string().contains("pool it was made for"));
    }
}

#[test]
fn a_prefix_cache_keeps_to_one_pool() {
    let mut pool = BlockPool::new(4, 2).unwrap();
    let mut cache = PrefixCache::new();
    let mut table = BlockTable::new(&pool);
    table.push(&mut pool).unwrap();
    assert!(cache.insert(&table, &[1, 2], &mut pool).unwrap_err().to_string().contains("tokens"));
    cache.insert(&table, &[1], &mut pool).unwrap();
    let mut other = BlockPool::new(4, 2).unwrap();
    let e = |r: Result<(), AttnError>| r.unwrap_err().to_string();
    assert!(e(cache.lookup(&[1, 2, 3], &mut other).map(|_| ())).contains("prefix cache"));
    assert!(e(cache.evict(&mut other).map(|_| ())).contains("prefix cache"));
    assert!(e(cache.insert(&table, &[1], &mut other)).contains("prefix cache"));
}

#[test]
fn a_paged_cache_refuses_another_caches_sequences_and_bad_tokens() {
    let model = model();
    let e = |r: Result<(), AttnError>| r.unwrap_err().to_string();
    assert!(e(model.new_paged_cache(0, 2).map(|_| ())).contains("blocks"));
    let (mut kv, mut other) =
        (model.new_paged_cache(4, 2).unwrap(), model.new_paged_cache(4, 2).unwrap());
    assert!(e(kv.start(&[8]).map(|_| ())).contains("prompt's token"));
    let mut theirs = other.start(&[]).unwrap();
    model.step_paged(1, &mut theirs, &mut other).unwrap();
    assert!(e(model.step_paged(1, &mut theirs, &mut kv).map(|_| ())).contains("pool"));
    assert!(
        e(model.read_paged(&[(0, 1)], &mut [&mut theirs], &mut kv).map(|_| ())).contains("pool")
    );
    assert!(e(kv.fork(&theirs).map(|_| ())).contains("pool"));
    assert!(e(kv.copy(&theirs).map(|_| ())).contains("pool"));
    assert!(e(kv.truncate(&mut theirs, 0)).contains("pool"));
    assert_eq!(theirs.len(), 1, "a refused truncation forgets nothing");
    let mine = kv.start(&[]).unwrap();
    assert!(e(other.finish(mine)).contains("pool"));
    let mut mine = kv.start(&[]).unwrap();
    assert!(e(model.step_paged(8, &mut mine, &mut kv).map(|_| ())).contains("token"));
    assert!(e(model.read_paged(&[], &mut [&mut mine], &mut kv).map(|_| ())).contains("reads"));
}

#[test]
fn a_server_refuses_requests_it_could_never_serve() {
    let model = model();
    let policy = Policy { batching: Batching::Continuous, slots: 2, token_budget: 4 };
    let mut server = Server::new(&model, model.new_paged_cache(2, 2).unwrap(), policy).unwrap();
    let request = |prompt: Vec<usize>, count| Request {
        prompt,
        count,
        sampler: Sampler::new(0.0).unwrap(),
        seed: 0,
    };
    let mut e = |r: Request| server.submit(r).unwrap_err().to_string();
    assert!(e(request(vec![], 1)).contains("prompt"));
    assert!(e(request(vec![9], 1)).contains("prompt"));
    assert!(e(request(vec![1; 4], usize::MAX)).contains("long"));
    assert!(e(request(vec![1; 4], 1)).contains("fit the pool"));
}

#[test]
fn speculative_decoding_refuses_what_is_not_a_distribution() {
    let e = |r: Result<f64, AttnError>| r.unwrap_err().to_string();
    assert!(e(acceptance(&[0.5, 0.5], &[1.0], 0)).contains("distributions"));
    assert!(e(acceptance(&[0.5, 0.5], &[-0.5, 1.5], 0)).contains("draft's distribution"));
    let v = verify(&[1.0, 0.0], &[0.0, 1.0], 3, [0.5, 0.5]);
    assert!(v.unwrap_err().to_string().contains("draft token"));
    let model = model();
    let mut draft = attn::lm::ModelDraft::new(&model).unwrap();
    let greedy = Sampler::new(0.0).unwrap();
    let r = model.generate_speculative((&[], 2), (&greedy, 0), &mut draft, 2);
    assert!(r.unwrap_err().to_string().contains("prompt"));
}

/// A table whose blocks were released behind its back refuses to truncate
/// or fork, all or nothing: it stays whole, and no count changes.
#[test]
fn a_table_refuses_changes_it_could_not_finish() {
    let mut pool = BlockPool::new(2, 2).unwrap();
    let mut table = BlockTable::new(&pool);
    for _ in 0..3 {
        table.push(&mut pool).unwrap();
    }
    pool.release(1).unwrap(); // not the table's to give
    let before = (pool.references(0), pool.free_blocks());
    assert!(table.truncate(0, &mut pool).unwrap_err().to_string().contains("block in use"));
    assert!(table.fork(&mut pool).unwrap_err().to_string().contains("block in use"));
    assert_eq!((pool.references(0), pool.free_blocks()), before);
    assert_eq!((table.len(), table.slot(2).unwrap()), (3, 2));
}

#[test]
fn a_server_refuses_a_cache_whose_blocks_sequences_hold() {
    let model = model();
    let mut kv = model.new_paged_cache(2, 2).unwrap();
    let mut sequence = kv.start(&[]).unwrap();
    model.step_paged(1, &mut sequence, &mut kv).unwrap();
    let policy = Policy { batching: Batching::Continuous, slots: 1, token_budget: 1 };
    let err = Server::new(&model, kv, policy).unwrap_err().to_string();
    assert!(err.contains("finish every sequence"), "{err}");
}

#[test]
fn a_draft_token_the_draft_could_not_draw_and_draws_outside_0_1_are_refused() {
    let (p, q) = ([1.0, 0.0], [1.0, 0.0]);
    assert!(acceptance(&p, &q, 1).unwrap_err().to_string().contains("q(x) > 0"));
    for u in [[1.0, 0.5], [0.5, f64::NAN], [-0.1, 0.5]] {
        let err = verify(&p, &q, 0, u).unwrap_err().to_string();
        assert!(err.contains("uniform draw"), "{err}");
    }
}
