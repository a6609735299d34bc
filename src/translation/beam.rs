//! Decoding a sequence from a model's next-token distribution: greedy, and
//! beam search (Graves, 2012; Sutskever, Vinyals and Le, 2014), which keeps
//! the `width` most probable prefixes at each step instead of one.

use crate::error::AttnError;

/// A decoded sequence and its log-probability `Σ_t ln p(y_t | y_<t)`.
#[derive(Debug, Clone, PartialEq)]
pub struct Hypothesis {
    /// The tokens, from the first after the start token; it ends with `eos`
    /// if the model ended it.
    pub tokens: Vec<usize>,
    /// The sum of the chosen tokens' log-probabilities.
    pub log_prob: f64,
}

/// The widest beam [`beam_search`] accepts: a step sorts up to `width ×
/// vocabulary` candidates, and an unbounded width would keep every
/// hypothesis, `vocabulary^t` of them at step `t`.
pub const MAX_BEAM_WIDTH: usize = 1_000;

// ANCHOR: beam
/// Beam search: start from the empty prefix; at each step extend every kept
/// prefix by every token, score each extension by its total
/// log-probability, and keep the `width` best. A prefix that ends with
/// `eos` is finished and kept as it is. Stops when every kept prefix is
/// finished or after `max_len` tokens, and returns the best. `next` gives,
/// for a prefix, the log-probabilities of every possible next token.
/// Width 1 is greedy decoding.
pub fn beam_search(
    next: impl Fn(&[usize]) -> Result<Vec<f64>, AttnError>,
    eos: usize,
    width: usize,
    max_len: usize,
) -> Result<Hypothesis, AttnError> {
    if width == 0 || max_len == 0 {
        return Err(AttnError::InvalidArgument {
            name: "beam width and maximum length",
            value: width.min(max_len) as f64,
            requirement: "must both be at least 1",
        });
    }
    if width > MAX_BEAM_WIDTH {
        return Err(AttnError::InvalidArgument {
            name: "beam width",
            value: width as f64,
            requirement: "must be at most 1,000: the beam holds up to width × vocabulary \
                          candidates a step",
        });
    }
    let finished = |h: &Hypothesis| h.tokens.last() == Some(&eos);
    let mut beam = vec![Hypothesis { tokens: Vec::new(), log_prob: 0.0 }];
    for _ in 0..max_len {
        if beam.iter().all(finished) {
            break;
        }
        let mut candidates = Vec::new();
        for h in beam {
            if finished(&h) {
                candidates.push(h);
                continue;
            }
            for (token, log_p) in next(&h.tokens)?.into_iter().enumerate() {
                check_log_prob(log_p)?;
                let mut tokens = h.tokens.clone();
                tokens.push(token);
                candidates.push(Hypothesis { tokens, log_prob: h.log_prob + log_p });
            }
        }
        // Best first; ties go to the earlier candidate, so the search is
        // deterministic.
        candidates.sort_by(|a, b| b.log_prob.total_cmp(&a.log_prob));
        candidates.truncate(width);
        beam = candidates;
    }
    beam.into_iter().next().ok_or(AttnError::InvalidArgument {
        name: "next-token distribution",
        value: 0.0,
        requirement: "must give at least one token",
    })
}
// ANCHOR_END: beam

/// A log-probability is at most 0 and not NaN (`−∞`: the token is impossible).
fn check_log_prob(log_p: f64) -> Result<(), AttnError> {
    if log_p <= 0.0 {
        return Ok(());
    }
    Err(AttnError::InvalidArgument {
        name: "log-probability",
        value: log_p,
        requirement: "must be ≤ 0 (and not NaN)",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A toy model over tokens {0, 1, 2 = EOS} where greedy decoding is
    /// misled: the first step prefers 0 (0.6 against 0.4), but after 0 the
    /// model is unsure (each continuation 1/3), while after 1 it is sure
    /// (EOS with 0.9). Greedy finds 0 then anything: 0.6 · 1/3 = 0.2; the
    /// best sequence is 1 EOS: 0.4 · 0.9 = 0.36.
    fn misleading(prefix: &[usize]) -> Result<Vec<f64>, AttnError> {
        let p: [f64; 3] = match prefix {
            [] => [0.6, 0.4, 0.0],
            [0] => [1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0],
            [1] => [0.05, 0.05, 0.9],
            _ => [0.0, 0.0, 1.0],
        };
        Ok(p.map(f64::ln).to_vec())
    }

    #[test]
    fn a_beam_of_two_finds_what_greedy_misses() {
        let greedy = beam_search(misleading, 2, 1, 5).unwrap();
        assert_eq!(greedy.tokens[0], 0);
        assert!((greedy.log_prob.exp() - 0.6 / 3.0).abs() < 1e-12);
        let beam = beam_search(misleading, 2, 2, 5).unwrap();
        assert_eq!(beam.tokens, vec![1, 2]);
        assert!((beam.log_prob.exp() - 0.36).abs() < 1e-12);
    }

    #[test]
    fn stops_at_max_len_and_rejects_bad_input() {
        let never_ends = |_: &[usize]| Ok(vec![0.0_f64, f64::NEG_INFINITY]);
        let h = beam_search(never_ends, 1, 3, 4).unwrap();
        assert_eq!(h.tokens, vec![0, 0, 0, 0]);
        assert!(beam_search(misleading, 2, 0, 5).is_err());
        assert!(beam_search(|_: &[usize]| Ok(vec![f64::NAN]), 0, 1, 2).is_err());
        assert!(beam_search(|_: &[usize]| Ok(vec![0.5]), 0, 1, 2).is_err());
        assert!(beam_search(|_: &[usize]| Ok(vec![]), 0, 1, 2).is_err());
    }
}
