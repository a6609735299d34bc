//! Chapter 16: a language model that writes.

use crate::error::AttnError;

// ANCHOR: repetition_penalty
/// Exercise 1: a repetition penalty (after Keskar et al., 2019). The logit
/// of every token that already occurs in `previous` is scaled by
/// `penalty ≥ 1` towards less likely. Other logits are unchanged; `penalty =
/// 1` changes nothing.
///
/// A positive logit is divided by the penalty, a negative one multiplied
/// (dividing a negative logit would raise it).
pub fn repetition_penalty(
    logits: &mut [f32],
    previous: &[usize],
    penalty: f32,
) -> Result<(), AttnError> {
    if !(penalty.is_finite() && penalty >= 1.0) {
        return Err(AttnError::InvalidArgument {
            name: "repetition penalty",
            value: f64::from(penalty),
            requirement: "must be finite and ≥ 1",
        });
    }
    if let Some(&token) = previous.iter().find(|&&t| t >= logits.len()) {
        return Err(AttnError::InvalidArgument {
            name: "previous token",
            value: token as f64,
            requirement: "must be less than the number of logits",
        });
    }
    let mut seen = vec![false; logits.len()];
    previous.iter().for_each(|&t| seen[t] = true);
    let penalised = |z: f32| if z > 0.0 { z / penalty } else { z * penalty };
    // Every new logit is checked before any is written: a large penalty
    // times a negative logit can overflow to −∞.
    let new: Vec<f32> =
        logits.iter().zip(&seen).map(|(&z, &s)| if s { penalised(z) } else { z }).collect();
    if let Some(j) = new.iter().position(|z| !z.is_finite()) {
        return Err(AttnError::Overflow {
            what: "the penalised logits",
            position: (0, j),
            value: new[j],
        });
    }
    logits.copy_from_slice(&new);
    Ok(())
}
// ANCHOR_END: repetition_penalty

#[cfg(test)]
mod tests {
    use super::*;

    /// For each token that appears in the history (once, however often it appears), divide its
    /// logit by the penalty if the logit is positive and multiply it by the penalty if it is
    /// negative; leave all others untouched. A penalty of 1 changes nothing.
    #[test]
    fn seen_tokens_become_less_likely_and_others_stay() {
        let mut z = [2.0, -1.0, 0.5, 3.0];
        repetition_penalty(&mut z, &[0, 1, 1], 2.0).unwrap();
        assert_eq!(z, [1.0, -2.0, 0.5, 3.0]);
        let mut same = [2.0, -1.0];
        repetition_penalty(&mut same, &[0, 1], 1.0).unwrap();
        assert_eq!(same, [2.0, -1.0]);
    }

    /// A penalty below 1 would favour repeats, and a token id ≥ the number of logits is no token:
    /// return `AttnError::InvalidArgument` (or `OutOfRange`) before changing anything, so that the
    /// logits are untouched on an error. A penalty so large that a penalised logit overflows to −∞
    /// is an error too (`AttnError::Overflow`): compute every new logit, check them, then write.
    #[test]
    fn a_penalty_below_one_or_an_unknown_token_is_refused() {
        let mut z = [1.0, 2.0];
        assert!(repetition_penalty(&mut z, &[0], 0.5).is_err(), "a penalty of 0.5");
        assert!(repetition_penalty(&mut z, &[2], 1.5).is_err(), "token 2 of 2 logits");
        assert_eq!(z, [1.0, 2.0]);
        let mut z = [-2.0, 1.0];
        assert!(repetition_penalty(&mut z, &[0, 1], 3e38).is_err(), "−2 · 3e38 overflows");
        assert_eq!(z, [-2.0, 1.0], "the logits are untouched on an error");
    }
}
