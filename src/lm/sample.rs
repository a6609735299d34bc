//! Choosing the next token from a model's logits: greedily, or by sampling
//! with a temperature, top-k and top-p (nucleus) truncation.

use ndarray_rand::rand::{rngs::StdRng, Rng};

use crate::error::AttnError;

// ANCHOR: greedy
/// The most likely token: the index of the largest logit (the first of
/// equal ones). The logits must be finite and at least one.
pub fn greedy(logits: &[f32]) -> Result<usize, AttnError> {
    check_logits(logits)?;
    let best = (1..logits.len()).fold(0, |best, j| if logits[j] > logits[best] { j } else { best });
    Ok(best)
}
// ANCHOR_END: greedy

// ANCHOR: sampler
/// How to sample the next token: `p ∝ exp(z / temperature)` over the
/// logits `z`, then, if set, only the `top_k` most likely tokens, then only
/// the smallest set of most likely tokens whose probability reaches
/// `top_p`, renormalised. Temperature 0 is greedy decoding.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sampler {
    temperature: f64,
    top_k: Option<usize>,
    top_p: Option<f64>,
}
// ANCHOR_END: sampler

impl Sampler {
    /// Sampling at `temperature` (finite and ≥ 0), from every token.
    pub fn new(temperature: f64) -> Result<Sampler, AttnError> {
        if !(temperature.is_finite() && temperature >= 0.0) {
            return Err(AttnError::InvalidArgument {
                name: "temperature",
                value: temperature,
                requirement: "must be finite and ≥ 0 (0 is greedy decoding)",
            });
        }
        Ok(Sampler { temperature, top_k: None, top_p: None })
    }

    /// Keep only the `k ≥ 1` most likely tokens.
    pub fn top_k(self, k: usize) -> Result<Sampler, AttnError> {
        if k == 0 {
            return Err(AttnError::InvalidArgument {
                name: "top-k",
                value: 0.0,
                requirement: "must be at least 1",
            });
        }
        Ok(Sampler { top_k: Some(k), ..self })
    }

    /// Keep only the smallest set of most likely tokens whose probability
    /// reaches `p`, with `0 < p ≤ 1`.
    pub fn top_p(self, p: f64) -> Result<Sampler, AttnError> {
        if !(p > 0.0 && p <= 1.0) {
            return Err(AttnError::InvalidArgument {
                name: "top-p",
                value: p,
                requirement: "must be in (0, 1]",
            });
        }
        Ok(Sampler { top_p: Some(p), ..self })
    }

    // ANCHOR: distribution
    /// The distribution this sampler draws from, given `logits`: one
    /// probability per token, 0 for the tokens truncated away.
    pub fn distribution(&self, logits: &[f32]) -> Result<Vec<f64>, AttnError> {
        let best = greedy(logits)?;
        let mut p = vec![0.0; logits.len()];
        if self.temperature == 0.0 {
            p[best] = 1.0;
            return Ok(p);
        }
        // softmax(z / T), shifted by the largest logit so that no exp overflows.
        let z_max = f64::from(logits[best]);
        for (p, &z) in p.iter_mut().zip(logits) {
            *p = ((f64::from(z) - z_max) / self.temperature).exp();
        }
        // The tokens from most to least likely (ties: the lower index first).
        let mut order: Vec<usize> = (0..p.len()).collect();
        order.sort_by(|&a, &b| p[b].total_cmp(&p[a]).then(a.cmp(&b)));
        // Top-k, then top-p over what top-k kept.
        let mut keep = self.top_k.unwrap_or(p.len()).min(p.len());
        if let Some(top_p) = self.top_p {
            let total: f64 = order[..keep].iter().map(|&j| p[j]).sum();
            let mut mass = 0.0;
            let reached = order[..keep].iter().position(|&j| {
                mass += p[j] / total;
                mass >= top_p
            });
            // The smallest prefix that reaches top_p (all of it, if rounding
            // left the sum a hair below 1).
            keep = reached.map_or(keep, |i| i + 1);
        }
        order[keep..].iter().for_each(|&j| p[j] = 0.0);
        let kept: f64 = p.iter().sum();
        p.iter_mut().for_each(|p| *p /= kept);
        Ok(p)
    }
    // ANCHOR_END: distribution

    // ANCHOR: sample
    /// One token drawn from [`Sampler::distribution`] with `rng`.
    pub fn sample(&self, logits: &[f32], rng: &mut StdRng) -> Result<usize, AttnError> {
        let p = self.distribution(logits)?;
        Ok(draw(&p, rng.random()))
    }
}

/// The token a uniform draw `u ∈ [0, 1)` picks from the distribution `p`:
/// the first whose cumulative probability exceeds `u` (the last token of
/// positive probability if rounding left the sum a hair below `u`; token 0
/// if none has any).
pub(crate) fn draw(p: &[f64], u: f64) -> usize {
    let mut cumulative = 0.0;
    for (j, &p) in p.iter().enumerate() {
        cumulative += p;
        if u < cumulative {
            return j;
        }
    }
    p.iter().rposition(|&p| p > 0.0).unwrap_or(0)
}
// ANCHOR_END: sample

/// Logits must be at least one, and finite.
pub(super) fn check_logits(logits: &[f32]) -> Result<(), AttnError> {
    if logits.is_empty() {
        return Err(AttnError::Empty { name: "logits", shape: (1, 0) });
    }
    match logits.iter().position(|z| !z.is_finite()) {
        Some(j) => {
            Err(AttnError::Overflow { what: "the logits", position: (0, j), value: logits[j] })
        }
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray_rand::rand::SeedableRng;

    const LOGITS: [f32; 6] = [1.0, 3.0, -2.0, 2.5, 0.0, 3.0];

    #[test]
    fn greedy_takes_the_first_largest_logit() {
        assert_eq!(greedy(&LOGITS).unwrap(), 1);
        assert_eq!(greedy(&[0.5]).unwrap(), 0);
    }

    #[test]
    fn temperature_zero_top_1_and_a_cold_temperature_are_greedy() {
        let mut rng = StdRng::seed_from_u64(1);
        let one_hot = |j: usize| (0..6).map(|i| f64::from(u8::from(i == j))).collect::<Vec<_>>();
        assert_eq!(Sampler::new(0.0).unwrap().distribution(&LOGITS).unwrap(), one_hot(1));
        let top_1 = Sampler::new(1.0).unwrap().top_k(1).unwrap();
        assert_eq!(top_1.distribution(&LOGITS).unwrap(), one_hot(1));
        let distinct = [1.0, 3.0, -2.0, 2.5, 0.0, 2.9];
        let cold = Sampler::new(1e-3).unwrap();
        let p = cold.distribution(&distinct).unwrap();
        assert_eq!(p[1], 1.0); // 1 − 4·10⁻⁴⁴ rounds to 1
        assert!(p.iter().enumerate().all(|(j, &p)| j == 1 || p < 1e-43), "{p:?}");
        for _ in 0..100 {
            assert_eq!(top_1.sample(&LOGITS, &mut rng).unwrap(), 1);
            assert_eq!(cold.sample(&distinct, &mut rng).unwrap(), 1);
        }
    }

    #[test]
    fn temperature_one_is_the_softmax() {
        let p = Sampler::new(1.0).unwrap().distribution(&LOGITS).unwrap();
        let e: Vec<f64> = LOGITS.iter().map(|&z| f64::from(z).exp()).collect();
        let sum: f64 = e.iter().sum();
        for (p, e) in p.iter().zip(&e) {
            assert!((p - e / sum).abs() < 1e-15, "{p} vs {}", e / sum);
        }
    }

    #[test]
    fn top_p_keeps_the_smallest_set_that_reaches_p_and_never_the_empty_one() {
        let t1 = Sampler::new(1.0).unwrap();
        let full = t1.distribution(&LOGITS).unwrap();
        // From most to least likely: tokens 1 and 5 (equal), 3, 0, 4, 2.
        let order = [1, 5, 3, 0, 4, 2];
        let mut mass = 0.0;
        for (size, &j) in order.iter().enumerate() {
            let reached = mass + full[j];
            for p in [mass + 1e-9, reached] {
                let kept = t1.top_p(p).unwrap().distribution(&LOGITS).unwrap();
                let expected: Vec<usize> = order[..=size].to_vec();
                let got: Vec<usize> = (0..6).filter(|&i| kept[i] > 0.0).collect();
                let mut expected = expected;
                expected.sort();
                assert_eq!(got, expected, "top-p {p}");
                let sum: f64 = kept.iter().sum();
                assert!((sum - 1.0).abs() < 1e-12);
            }
            mass = reached;
        }
        let tiny = t1.top_p(1e-12).unwrap().distribution(&LOGITS).unwrap();
        assert_eq!(tiny[1], 1.0, "the most likely token is never dropped");
    }

    #[test]
    fn top_k_then_top_p_renormalises_what_top_k_kept() {
        let both = Sampler::new(1.0).unwrap().top_k(3).unwrap().top_p(0.999).unwrap();
        let p = both.distribution(&LOGITS).unwrap();
        let kept: Vec<usize> = (0..6).filter(|&i| p[i] > 0.0).collect();
        assert_eq!(kept, vec![1, 3, 5]);
    }

    /// Pearson's χ² statistic of 60,000 seeded draws against the
    /// distribution, over the tokens kept; with 4 kept tokens (3 degrees of
    /// freedom) a correct sampler exceeds 16.27 one time in 1,000.
    #[test]
    fn draws_follow_the_distribution() {
        let sampler = Sampler::new(0.8).unwrap().top_k(4).unwrap();
        let p = sampler.distribution(&LOGITS).unwrap();
        let mut rng = StdRng::seed_from_u64(7);
        let draws = 60_000;
        let mut counts = [0usize; 6];
        for _ in 0..draws {
            counts[sampler.sample(&LOGITS, &mut rng).unwrap()] += 1;
        }
        let chi2: f64 = (0..6)
            .filter(|&j| p[j] > 0.0)
            .map(|j| {
                let expected = p[j] * draws as f64;
                (counts[j] as f64 - expected).powi(2) / expected
            })
            .sum();
        assert_eq!(counts[2] + counts[4], 0, "truncated tokens were drawn: {counts:?}");
        assert!(chi2 < 16.27, "χ² = {chi2} over 3 degrees of freedom: {counts:?} vs {p:?}");
    }

    #[test]
    fn bad_arguments_are_refused_by_name() {
        let e = |r: Result<Sampler, AttnError>| r.unwrap_err().to_string();
        assert!(e(Sampler::new(-1.0)).contains("temperature"));
        assert!(e(Sampler::new(f64::NAN)).contains("temperature"));
        assert!(e(Sampler::new(1.0).unwrap().top_k(0)).contains("top-k"));
        assert!(e(Sampler::new(1.0).unwrap().top_p(0.0)).contains("top-p"));
        assert!(e(Sampler::new(1.0).unwrap().top_p(1.5)).contains("top-p"));
        assert!(greedy(&[]).is_err());
        let nan = Sampler::new(1.0).unwrap().distribution(&[0.0, f32::NAN]);
        assert!(nan.unwrap_err().to_string().contains("logits"));
    }
}
