use ndarray_rand::rand::{rngs::StdRng, Rng, SeedableRng};

use super::*;
use crate::lm::test_models::small;
use crate::lm::{Corpus, Decoding, LmConfig, Positions};

/// The right end of the interval `[0, b)` of the `u` in `[0, 1)` for which
/// `holds(u)`, which holds up to a point and not after it: found by
/// bisection down to adjacent floats, so that the measure of the interval
/// is exact to a float.
fn boundary(holds: impl Fn(f64) -> bool) -> f64 {
    let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
    if !holds(0.0) {
        return 0.0;
    }
    loop {
        let mid = lo + (hi - lo) / 2.0;
        if mid == lo || mid == hi {
            return hi;
        }
        if holds(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
}

/// The largest draw below 1: it keeps only a token whose acceptance is 1.
const BELOW_1: f64 = 1.0 - f64::EPSILON / 2.0;

/// The exact distribution of the token [`verify`] writes, with the draft
/// token drawn from `q` and both uniform draws uniform: for each draft
/// token, the draws that keep it are an interval, and so are the draws
/// that pick each replacement. Computed from `verify` alone, as a black
/// box.
fn written(p: &[f64], q: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; p.len()];
    for (x, &q_x) in q.iter().enumerate().filter(|(_, &q)| q > 0.0) {
        let keep = boundary(|u| verify(p, q, x, [u, 0.0]).unwrap() == Verdict::Kept(x));
        out[x] += q_x * keep;
        if keep == 1.0 {
            continue; // never replaced
        }
        let mut below = 0.0; // the draws that pick a token before y
        for (y, out) in out.iter_mut().enumerate() {
            let upto = boundary(|u| verify(p, q, x, [BELOW_1, u]).unwrap().token() <= y);
            *out += q_x * (1.0 - keep) * (upto - below);
            below = upto;
        }
    }
    out
}

fn random_distribution(v: usize, zeros: f64, rng: &mut StdRng) -> Vec<f64> {
    let mut d: Vec<f64> = (0..v)
        .map(|_| if rng.random::<f64>() < zeros { 0.0 } else { rng.random::<f64>().powi(3) })
        .collect();
    d[rng.random_range(0..v)] += 0.1; // not all zero
    let total: f64 = d.iter().sum();
    d.iter_mut().for_each(|x| *x /= total);
    d
}

/// The theorem of speculative sampling, checked exactly: over 84
/// characters, whatever the draft's distribution (tokens the target finds
/// likely and the draft never proposes; tokens the draft proposes and the
/// target never writes), the token written is distributed as the
/// target's.
#[test]
fn the_written_token_is_distributed_exactly_as_the_targets() {
    let mut rng = StdRng::seed_from_u64(48);
    for zeros in [0.0, 0.3] {
        for _ in 0..3 {
            let (p, q) = (
                random_distribution(84, zeros, &mut rng),
                random_distribution(84, zeros, &mut rng),
            );
            let w = written(&p, &q);
            for (j, (w, p)) in w.iter().zip(&p).enumerate() {
                assert!((w - p).abs() <= 1e-14, "token {j}: written {w}, target {p}");
            }
            let drafts = written(&q, &q);
            assert!(drafts.iter().zip(&q).all(|(w, q)| (w - q).abs() <= 1e-15), "p = q keeps all");
        }
    }
}

/// A worked example: the draft proposes token 2, which the target never
/// writes, half the time; it is always rejected, and replaced by token 0,
/// which the draft never proposes.
#[test]
fn a_rejected_token_is_replaced_by_what_the_draft_under_proposes() {
    let p = [0.5, 0.5, 0.0];
    let q = [0.0, 0.5, 0.5];
    assert_eq!(acceptance(&p, &q, 2).unwrap(), 0.0);
    assert_eq!(residual(&p, &q).unwrap(), [1.0, 0.0, 0.0]);
    assert_eq!(written(&p, &q), [0.5, 0.5, 0.0]);
}

#[test]
fn bad_distributions_are_refused_by_name() {
    let e = |r: Result<f64, AttnError>| r.unwrap_err().to_string();
    assert!(e(acceptance(&[1.0], &[0.5, 0.5], 0)).contains("distributions"));
    assert!(e(acceptance(&[0.5, 0.6], &[0.5, 0.5], 0)).contains("target's distribution"));
    assert!(e(acceptance(&[0.5, 0.5], &[f64::NAN, 0.5], 0)).contains("draft's distribution"));
    assert!(e(acceptance(&[0.5, 0.5], &[0.5, 0.5], 2)).contains("draft token"));
    assert!(residual(&[], &[]).is_err());
}

fn model(config: LmConfig, seed: u64) -> LanguageModel<f32> {
    LanguageModel::new(config, seed).unwrap()
}

fn config(vocab: usize) -> LmConfig {
    small(vocab, 48)
}

/// With greedy decoding, speculative decoding writes the target's own
/// text, token for token, whatever the draft and `k`: a bigram, a
/// one-layer model, and the target itself.
#[test]
fn greedy_speculative_decoding_writes_the_targets_text() {
    let corpus =
        Corpus::from_text(b"to be, or not to be, that is the question: whether tis nobler")
            .unwrap();
    let v = corpus.vocab().len();
    let greedy = Sampler::new(0.0).unwrap();
    for positions in [Positions::Learned, Positions::Rotary] {
        let target = model(LmConfig { positions, ..config(v) }, 3);
        let small = model(LmConfig { layers: 1, ..config(v) }, 4);
        let prompt = corpus.vocab().encode("to be").unwrap();
        let alone = target.generate(&prompt, 40, &greedy, 0, Decoding::Cached).unwrap();
        for k in [1, 3, 5] {
            let mut bigram = corpus.bigram();
            let (text, stats) =
                target.generate_speculative((&prompt, 40), (&greedy, 0), &mut bigram, k).unwrap();
            assert_eq!(text, alone, "bigram, k = {k}");
            assert!(stats.kept <= stats.proposed && stats.proposed <= stats.rounds * k);
            let mut draft = ModelDraft::new(&small).unwrap();
            let (text, _) =
                target.generate_speculative((&prompt, 40), (&greedy, 0), &mut draft, k).unwrap();
            assert_eq!(text, alone, "one layer, k = {k}");
            let mut itself = ModelDraft::new(&target).unwrap();
            let (text, stats) =
                target.generate_speculative((&prompt, 40), (&greedy, 0), &mut itself, k).unwrap();
            assert_eq!(text, alone, "itself, k = {k}");
            assert_eq!(stats.kept, stats.proposed, "a draft that is the target is always kept");
            assert_eq!(stats.rounds, 40_usize.div_ceil(k + 1));
        }
    }
}

/// Sampling: a draft that is the target keeps every token, and a round
/// writes its kept tokens and one more.
#[test]
fn sampled_rounds_write_their_kept_tokens_and_one_more() {
    let target = model(config(11), 5);
    let sampler = Sampler::new(1.0).unwrap();
    let mut itself = ModelDraft::new(&target).unwrap();
    let (text, stats) =
        target.generate_speculative((&[1, 2], 30), (&sampler, 9), &mut itself, 4).unwrap();
    assert_eq!((text.len(), stats.kept), (32, stats.proposed));
    let small = model(LmConfig { layers: 1, ..config(11) }, 6);
    let mut draft = ModelDraft::new(&small).unwrap();
    let (text, stats) =
        target.generate_speculative((&[1, 2], 30), (&sampler, 9), &mut draft, 4).unwrap();
    assert_eq!(text.len(), 32);
    assert_eq!(stats.kept + stats.rounds, 30, "each round: its kept tokens and one more");
    assert!(stats.kept < stats.proposed, "a random draft is sometimes rejected");
}

#[test]
fn bad_requests_are_refused_by_name() {
    let target = model(config(11), 5);
    let greedy = Sampler::new(0.0).unwrap();
    let mut itself = ModelDraft::new(&target).unwrap();
    let mut e = |prompt: &[usize], count: usize, k: usize| {
        let r = target.generate_speculative((prompt, count), (&greedy, 0), &mut itself, k);
        r.unwrap_err().to_string()
    };
    assert!(e(&[], 3, 2).contains("prompt"));
    assert!(e(&[11], 3, 2).contains("prompt"));
    assert!(e(&[1], 48, 2).contains("does not slide"));
    assert!(e(&[1], 3, MAX_DRAFT + 1).contains("k"));
    let other = model(config(12), 1);
    let mut wrong = ModelDraft::new(&other).unwrap();
    let r = target.generate_speculative((&[1], 3), (&greedy, 0), &mut wrong, 2);
    assert!(r.unwrap_err().to_string().contains("distributions"));
}
