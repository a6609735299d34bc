use ndarray_rand::rand::{Rng, SeedableRng};

use super::*;
use crate::decoder::LatentSizes;
use crate::lm::test_models::small;
use crate::lm::{Decoding, LmConfig, Positions};

fn models() -> Vec<LanguageModel<f32>> {
    let base = small(11, 48);
    let rotary = LmConfig { positions: Positions::Rotary, ..base };
    let latent = LmConfig { latent: Some(LatentSizes { d_c: 8, d_r: 2 }), ..rotary };
    [base, LmConfig { kv_heads: 2, ..rotary }, latent]
        .into_iter()
        .map(|c| LanguageModel::new(c, 7).unwrap())
        .collect()
}

/// Requests of varied lengths, some sharing a prefix, greedy and sampled.
fn workload(n: usize, seed: u64) -> Vec<Request> {
    let mut rng = StdRng::seed_from_u64(seed);
    let samplers = [
        Sampler::new(0.0).unwrap(),
        Sampler::new(1.0).unwrap(),
        Sampler::new(0.8).unwrap().top_k(3).unwrap(),
    ];
    let shared: Vec<usize> = (0..9).map(|_| rng.random_range(0..11)).collect();
    (0..n)
        .map(|i| {
            let own = (0..rng.random_range(1..16)).map(|_| rng.random_range(0..11));
            let prompt = match i % 2 {
                0 => shared.iter().copied().chain(own).collect(),
                _ => own.collect(),
            };
            let count = rng.random_range(1..=48 - 24);
            Request { prompt, count, sampler: samplers[i % 3], seed: i as u64 }
        })
        .collect()
}

fn serve<'a>(
    model: &'a LanguageModel<f32>,
    requests: &[Request],
    (policy, blocks, share): (Policy, usize, bool),
) -> (Vec<Served>, Vec<StepReport>, Server<'a>) {
    let mut kv = model.new_paged_cache(blocks, 4).unwrap();
    if share {
        kv.share_prefixes();
    }
    let mut server = Server::new(model, kv, policy).unwrap();
    for r in requests {
        server.submit(r.clone()).unwrap();
    }
    let reports = server.run().unwrap();
    let mut served = server.served().to_vec();
    served.sort_by_key(|s| s.id);
    (served, reports, server)
}

const CONTINUOUS: Policy = Policy { batching: Batching::Continuous, slots: 4, token_budget: 12 };

/// Every request's text is the text it gets alone, whatever the batching,
/// the sharing of prefixes and the attention.
#[test]
fn every_request_writes_the_text_it_writes_alone() {
    let requests = workload(12, 1);
    for model in models() {
        let alone: Vec<Vec<usize>> = requests
            .iter()
            .map(|r| {
                model.generate(&r.prompt, r.count, &r.sampler, r.seed, Decoding::Cached).unwrap()
            })
            .collect();
        let statics = Policy { batching: Batching::Static, ..CONTINUOUS };
        for (policy, share) in [(CONTINUOUS, false), (CONTINUOUS, true), (statics, false)] {
            let (served, reports, server) = serve(&model, &requests, (policy, 40, share));
            let texts: Vec<Vec<usize>> = served.into_iter().map(|s| s.text).collect();
            assert_eq!(texts, alone, "{policy:?}, prefixes shared: {share}");
            assert!(reports.iter().all(|r| r.tokens <= 12 && r.running <= 4));
            let cached = server.cache().prefixes().map_or(0, |p| p.len());
            assert_eq!(server.cache().pool().free_blocks() + cached, 40, "every block back");
            if share {
                assert!(server.cache().prefixes().unwrap().hits() > 0);
            }
        }
    }
}

/// First come, first served, and no request starves: each waits at most as
/// many steps as the requests before it have tokens to read.
#[test]
fn requests_are_admitted_in_order_and_wait_at_most_what_is_ahead_of_them() {
    let requests = workload(16, 2);
    let model = &models()[1];
    for blocks in [12, 20, 40] {
        for batching in [Batching::Continuous, Batching::Static] {
            let policy = Policy { batching, ..CONTINUOUS };
            let (served, _, _) = serve(model, &requests, (policy, blocks, false));
            let mut ahead = 0;
            for (s, r) in served.iter().zip(&requests) {
                assert!(s.admitted - s.arrived <= ahead, "request {} waited too long", s.id);
                ahead += r.len();
            }
            assert!(served.windows(2).all(|w| w[0].admitted <= w[1].admitted), "in order");
        }
    }
}

/// Continuous batching fills a slot as soon as it frees: the same
/// requests are done in fewer steps than a batch at a time.
#[test]
fn continuous_batching_needs_fewer_steps_than_static() {
    let requests = workload(16, 3);
    let model = &models()[0];
    let statics = Policy { batching: Batching::Static, ..CONTINUOUS };
    let (_, continuous, _) = serve(model, &requests, (CONTINUOUS, 40, false));
    let (_, batched, _) = serve(model, &requests, (statics, 40, false));
    assert!(continuous.len() < batched.len(), "{} against {}", continuous.len(), batched.len());
}

#[test]
fn bad_policies_are_refused_by_name_and_a_request_may_fill_the_pool() {
    let models = models();
    let model = &models[0];
    let kv = || model.new_paged_cache(8, 4).unwrap();
    let e = |p: Policy| Server::new(model, kv(), p).unwrap_err().to_string();
    assert!(e(Policy { slots: 0, ..CONTINUOUS }).contains("slot"));
    assert!(e(Policy { token_budget: 3, ..CONTINUOUS }).contains("token budget"));
    let other = models[1].new_paged_cache(8, 4).unwrap();
    assert!(Server::new(model, other, CONTINUOUS).unwrap_err().to_string().contains("cache"));
    let mut server = Server::new(model, kv(), CONTINUOUS).unwrap();
    let request =
        Request { prompt: vec![1; 29], count: 3, sampler: Sampler::new(0.0).unwrap(), seed: 0 };
    assert_eq!(server.submit(request).unwrap(), 0, "29 + 3 tokens fill the 8 blocks of 4");
}
