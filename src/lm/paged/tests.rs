use ndarray::Array1;
use ndarray_rand::rand::{rngs::StdRng, Rng, SeedableRng};

use super::*;
use crate::decoder::LatentSizes;
use crate::lm::test_models::small;
use crate::lm::LmCache;
use crate::rope_scaling::RopeScaling;

/// A small model of every kind of attention and position a paged cache
/// serves: multi-head, grouped, multi-query and latent attention; learned,
/// rotary, scaled rotary and no positions.
fn models() -> Vec<(&'static str, LanguageModel<f32>)> {
    let base = small(11, 40);
    let rotary = LmConfig { positions: Positions::Rotary, ..base };
    let configs = [
        ("multi-head, learned positions", base),
        ("multi-head, rotary", rotary),
        ("grouped, rotary", LmConfig { kv_heads: 2, ..rotary }),
        ("multi-query, rotary", LmConfig { kv_heads: 1, ..rotary }),
        ("multi-query, no positions", LmConfig { kv_heads: 1, positions: Positions::None, ..base }),
        (
            "grouped, scaled rotary",
            LmConfig {
                kv_heads: 2,
                positions: Positions::ScaledRotary(RopeScaling::Linear { factor: 2.0 }),
                ..base
            },
        ),
        ("latent", LmConfig { latent: Some(LatentSizes { d_c: 8, d_r: 2 }), ..rotary }),
    ];
    let model = |(i, (name, c)): (usize, (&'static str, LmConfig))| {
        (name, LanguageModel::new(c, 10 + i as u64).unwrap())
    };
    configs.into_iter().enumerate().map(model).collect()
}

fn bits(x: &Array1<f32>) -> Vec<u32> {
    x.iter().map(|x| x.to_bits()).collect()
}

/// Several sequences read their tokens through one pool, their steps
/// interleaved at random so that their blocks are scattered; each step's
/// logits must be those of the sequence's own contiguous cache, bit for
/// bit.
#[test]
fn paged_logits_are_the_contiguous_caches_bit_for_bit() {
    let mut rng = StdRng::seed_from_u64(51);
    for (name, model) in models() {
        for _ in 0..3 {
            let block_size = rng.random_range(1..=7);
            let lengths: Vec<usize> = (0..3).map(|_| rng.random_range(1..=40)).collect();
            let texts: Vec<Vec<usize>> = lengths
                .iter()
                .map(|&n| (0..n).map(|_| rng.random_range(0..11)).collect())
                .collect();
            let blocks: usize = lengths.iter().map(|n| n.div_ceil(block_size)).sum();
            let mut kv = model.new_paged_cache(blocks, block_size).unwrap();
            let mut caches: Vec<LmCache> = texts.iter().map(|_| model.new_cache()).collect();
            let mut sequences: Vec<Sequence> =
                texts.iter().map(|_| kv.start(&[]).unwrap()).collect();
            let mut left: Vec<usize> = (0..3).flat_map(|i| vec![i; lengths[i]]).collect();
            while !left.is_empty() {
                let i = left.swap_remove(rng.random_range(0..left.len()));
                let token = texts[i][sequences[i].len()];
                let contiguous = model.step(token, &mut caches[i]).unwrap();
                let paged = model.step_paged(token, &mut sequences[i], &mut kv).unwrap();
                assert_eq!(bits(&contiguous), bits(&paged), "{name}, block size {block_size}");
            }
            assert_eq!(kv.pool().free_blocks(), 0, "{name}: the pool was just large enough");
            for sequence in sequences {
                kv.finish(sequence).unwrap();
            }
            assert_eq!(kv.pool().free_blocks(), blocks, "{name}: every block came back");
        }
    }
}

/// The test above scatters blocks: a sequence's blocks are not in order in
/// the pool, so an address computed without the table would be wrong.
#[test]
fn interleaved_sequences_get_scattered_blocks() {
    let (_, model) = models().remove(1);
    let mut kv = model.new_paged_cache(6, 2).unwrap();
    let [mut a, mut b] = [kv.start(&[]).unwrap(), kv.start(&[]).unwrap()];
    for t in 0..6 {
        model.step_paged(t, &mut a, &mut kv).unwrap();
        model.step_paged(t, &mut b, &mut kv).unwrap();
    }
    assert_eq!(a.table().blocks(), [0, 2, 4]);
    assert_eq!(b.table().blocks(), [1, 3, 5]);
    assert_eq!(a.table().slot(3).unwrap(), 2 * 2 + 1);
}

/// A full pool refuses the token with a typed error and leaves the
/// sequence as it was; once another sequence ends, the same step succeeds
/// with the contiguous cache's logits.
#[test]
fn a_full_pool_is_an_error_that_leaves_the_sequence_as_it_was() {
    let (_, model) = models().remove(2);
    let mut kv = model.new_paged_cache(3, 2).unwrap();
    let (mut a, mut other) = (kv.start(&[]).unwrap(), kv.start(&[]).unwrap());
    model.step_paged(7, &mut other, &mut kv).unwrap();
    let mut cache = model.new_cache();
    for t in 0..4 {
        model.step(t, &mut cache).unwrap();
        model.step_paged(t, &mut a, &mut kv).unwrap();
    }
    let error = model.step_paged(4, &mut a, &mut kv).unwrap_err();
    assert_eq!(error, AttnError::PoolFull { blocks: 3, block_size: 2 });
    assert!(error.to_string().contains("finish or pause a sequence"));
    assert_eq!((a.len(), a.table().len(), a.table().blocks().len()), (4, 4, 2));
    kv.finish(other).unwrap();
    let paged = model.step_paged(4, &mut a, &mut kv).unwrap();
    assert_eq!(bits(&model.step(4, &mut cache).unwrap()), bits(&paged));
}

/// A fork shares every block; the first write into the shared, partly
/// filled last block copies it; both sequences then go on as if each had
/// its own cache.
#[test]
fn a_fork_copies_the_shared_block_it_writes_into() {
    for (name, model) in models() {
        let mut kv = model.new_paged_cache(8, 4).unwrap();
        let mut a = kv.start(&[]).unwrap();
        let mut cache = model.new_cache();
        for t in [1, 2, 3, 4, 5, 6] {
            model.step(t, &mut cache).unwrap();
            model.step_paged(t, &mut a, &mut kv).unwrap();
        }
        let mut b = kv.fork(&a).unwrap();
        assert_eq!(a.table().blocks(), b.table().blocks());
        assert_eq!(kv.pool().references(a.table().blocks()[1]), 2, "{name}");
        let mut cache_b = model.new_cache();
        for t in [1, 2, 3, 4, 5, 6] {
            model.step(t, &mut cache_b).unwrap();
        }
        for (ta, tb) in [(7, 9), (8, 10), (9, 1)] {
            let (pa, pb) =
                (model.step_paged(ta, &mut a, &mut kv), model.step_paged(tb, &mut b, &mut kv));
            assert_eq!(bits(&model.step(ta, &mut cache).unwrap()), bits(&pa.unwrap()), "{name}");
            assert_eq!(bits(&model.step(tb, &mut cache_b).unwrap()), bits(&pb.unwrap()), "{name}");
        }
        assert_eq!(
            a.table().blocks()[0],
            b.table().blocks()[0],
            "{name}: the full block stays shared"
        );
        assert_ne!(
            a.table().blocks()[1],
            b.table().blocks()[1],
            "{name}: the partly filled one was copied"
        );
        kv.finish(a).unwrap();
        kv.finish(b).unwrap();
        assert_eq!(kv.pool().free_blocks(), 8, "{name}");
    }
}

/// Prompts that share a long prefix: with shared prefixes, each prompt
/// after the first finds exactly the full blocks of the shared prefix
/// before its last token, and every logit is the one computed without
/// sharing.
#[test]
fn shared_prefixes_hit_exactly_the_shared_full_blocks_with_the_same_logits() {
    let mut rng = StdRng::seed_from_u64(52);
    for (name, model) in models() {
        let block_size = 4;
        let prefix: Vec<usize> = (0..14).map(|_| rng.random_range(0..11)).collect();
        let prompts: Vec<Vec<usize>> = (0..5)
            .map(|i| {
                // Tails that differ from their first token on.
                let tail = (0..2 + i).map(|_| rng.random_range(0..11));
                prefix.iter().copied().chain([i]).chain(tail).collect()
            })
            .collect();
        let mut kv = model.new_paged_cache(40, block_size).unwrap();
        kv.share_prefixes();
        let mut expected_hits = 0;
        for (i, prompt) in prompts.iter().enumerate() {
            let mut sequence = kv.start(prompt).unwrap();
            let shared = if i == 0 { 0 } else { prefix.len() / block_size };
            assert_eq!(sequence.len(), shared * block_size, "{name}: prompt {i}");
            expected_hits += shared;
            let mut cache = model.new_cache();
            for (t, &token) in prompt.iter().enumerate() {
                let contiguous = model.step(token, &mut cache).unwrap();
                if t >= sequence.len() {
                    let paged = model.step_paged(token, &mut sequence, &mut kv).unwrap();
                    assert_eq!(bits(&contiguous), bits(&paged), "{name}: prompt {i}, token {t}");
                }
            }
            kv.finish(sequence).unwrap();
        }
        assert_eq!(kv.prefixes().unwrap().hits(), expected_hits, "{name}");
    }
}

/// A block is found only after the same prefix: equal blocks after
/// different first blocks are two entries, and each prompt finds its own.
#[test]
fn a_prefix_block_is_found_only_after_the_same_blocks() {
    let (_, model) = models().remove(1);
    let mut kv = model.new_paged_cache(20, 2).unwrap();
    kv.share_prefixes();
    let read = |prompt: &[usize], kv: &mut PagedKv| {
        let mut sequence = kv.start(prompt).unwrap();
        let found = sequence.len();
        for &token in &prompt[found..] {
            model.step_paged(token, &mut sequence, kv).unwrap();
        }
        kv.finish(sequence).unwrap();
        found / 2
    };
    let (a, b) = ([1, 2, 5, 6, 9], [3, 4, 5, 6, 9]); // the same second block
    assert_eq!([read(&a, &mut kv), read(&b, &mut kv)], [0, 0]);
    assert_eq!([read(&a, &mut kv), read(&b, &mut kv)], [2, 2]);
    assert_eq!(read(&[1, 2, 7, 7, 9], &mut kv), 1);
}

/// When the pool is full, the prefix cache gives back its least recently
/// used block that no sequence holds, and the step goes on.
#[test]
fn a_full_pool_takes_back_the_prefix_caches_unused_blocks() {
    let (_, model) = models().remove(1);
    let mut kv = model.new_paged_cache(3, 2).unwrap();
    kv.share_prefixes();
    let mut a = kv.start(&[1, 2, 3, 4, 5]).unwrap();
    for t in [1, 2, 3, 4, 5] {
        model.step_paged(t, &mut a, &mut kv).unwrap();
    }
    kv.finish(a).unwrap();
    assert_eq!((kv.pool().free_blocks(), kv.prefixes().unwrap().len()), (1, 2));
    let mut b = kv.start(&[6, 6, 6, 6, 6]).unwrap();
    for t in [6, 6, 6, 6, 6] {
        model.step_paged(t, &mut b, &mut kv).unwrap();
    }
    assert_eq!(b.table().blocks().len(), 3);
}

#[test]
fn bad_arguments_are_refused_by_name() {
    let models = models();
    let (_, model) = &models[1];
    let e = |r: Result<PagedKv, AttnError>| r.unwrap_err().to_string();
    assert!(e(model.new_paged_cache(0, 4)).contains("blocks"));
    assert!(e(model.new_paged_cache(4, 0)).contains("block size"));
    assert!(e(model.new_paged_cache(1 << 23, 1 << 20)).contains("paged KV cache"));
    let alibi = LanguageModel::new(LmConfig { positions: Positions::Alibi, ..model.config() }, 1);
    assert!(e(alibi.unwrap().new_paged_cache(4, 4)).contains("ALiBi"));
    let mut kv = model.new_paged_cache(20, 4).unwrap();
    let mut other = model.new_paged_cache(20, 4).unwrap();
    let mut sequence = other.start(&[]).unwrap();
    let err = model.step_paged(0, &mut sequence, &mut kv).unwrap_err();
    assert!(err.to_string().contains("pool it was made for"), "{err}");
    let mut sequence = kv.start(&[]).unwrap();
    assert!(model
        .step_paged(11, &mut sequence, &mut kv)
        .unwrap_err()
        .to_string()
        .contains("token"));
    let (_, another) = &models[0];
    let err = another.step_paged(0, &mut sequence, &mut kv).unwrap_err();
    assert!(err.to_string().contains("cache"), "{err}");
    for t in 0..40 {
        model.step_paged(t % 11, &mut sequence, &mut kv).unwrap();
    }
    let err = model.step_paged(0, &mut sequence, &mut kv).unwrap_err();
    assert!(matches!(err, AttnError::TooLong { len: 41, max: 40, .. }), "{err}");
    assert_eq!(sequence.len(), 40);
}

/// A pass over many rows (a token of several sequences, and runs of
/// tokens of one) gives each row the logits of reading it alone, bit for
/// bit, and leaves the cache as reading them one by one does.
#[test]
fn a_pass_over_many_rows_gives_each_the_logits_of_reading_it_alone() {
    let mut rng = StdRng::seed_from_u64(53);
    for (name, model) in models() {
        let block_size = rng.random_range(1..=5);
        let mut together = model.new_paged_cache(40, block_size).unwrap();
        let mut alone = model.new_paged_cache(40, block_size).unwrap();
        let mut a: Vec<Sequence> = (0..3).map(|_| together.start(&[]).unwrap()).collect();
        let mut b: Vec<Sequence> = (0..3).map(|_| alone.start(&[]).unwrap()).collect();
        for _ in 0..6 {
            let reads: Vec<(usize, usize)> = (0..rng.random_range(1..8))
                .map(|_| (rng.random_range(0..3), rng.random_range(0..11)))
                .collect();
            let mut refs: Vec<&mut Sequence> = a.iter_mut().collect();
            let logits = model.read_paged(&reads, &mut refs, &mut together).unwrap();
            for (row, &(s, token)) in logits.rows().into_iter().zip(&reads) {
                let one = model.step_paged(token, &mut b[s], &mut alone).unwrap();
                assert_eq!(bits(&row.to_owned()), bits(&one), "{name}");
            }
        }
        for (a, b) in a.iter().zip(&b) {
            assert_eq!(
                (a.tokens(), a.table().blocks()),
                (b.tokens(), b.table().blocks()),
                "{name}"
            );
        }
    }
}

/// A pass that cannot be read whole reads nothing.
#[test]
fn a_pass_that_fails_reads_nothing() {
    let (_, model) = models().remove(1);
    let mut kv = model.new_paged_cache(3, 2).unwrap();
    let (mut a, mut b) = (kv.start(&[]).unwrap(), kv.start(&[]).unwrap());
    model.read_paged(&[(0, 1), (1, 2), (0, 3)], &mut [&mut a, &mut b], &mut kv).unwrap();
    let reads = [(0, 4), (1, 5), (1, 6), (0, 7)]; // needs a fourth block
    let err = model.read_paged(&reads, &mut [&mut a, &mut b], &mut kv).unwrap_err();
    assert!(matches!(err, AttnError::PoolFull { .. }), "{err}");
    assert_eq!((a.tokens(), b.tokens(), kv.pool().free_blocks()), (&[1, 3][..], &[2][..], 1));
    let e = |reads: &[(usize, usize)], kv: &mut PagedKv, a: &mut Sequence| {
        model.read_paged(reads, &mut [a], kv).unwrap_err().to_string()
    };
    assert!(e(&[], &mut kv, &mut a).contains("reads"));
    assert!(e(&[(1, 0)], &mut kv, &mut a).contains("sequence"));
    assert!(e(&[(0, 11)], &mut kv, &mut a).contains("token"));
    assert!(e(&[(0, 1); 39], &mut kv, &mut a).contains("does not slide"));
}

/// A copy holds the same keys and values in blocks of its own: both go on
/// as the original would, and a full pool allocates nothing.
#[test]
fn a_copy_goes_on_as_the_original_in_blocks_of_its_own() {
    for (name, model) in models() {
        let mut kv = model.new_paged_cache(5, 3).unwrap();
        let mut a = kv.start(&[]).unwrap();
        model.read_paged(&[(0, 1), (0, 2), (0, 3), (0, 4)], &mut [&mut a], &mut kv).unwrap();
        let mut b = kv.copy(&a).unwrap();
        assert!(a.table().blocks().iter().all(|x| !b.table().blocks().contains(x)), "{name}");
        let one = model.step_paged(5, &mut a, &mut kv).unwrap();
        let other = model.step_paged(5, &mut b, &mut kv).unwrap();
        assert_eq!(bits(&one), bits(&other), "{name}");
        let free = kv.pool().free_blocks();
        assert!(matches!(kv.copy(&a), Err(AttnError::PoolFull { .. })), "{name}");
        assert_eq!(kv.pool().free_blocks(), free, "{name}");
    }
}
