//! Loops that could not end: drawing more distinct numbers than the
//! exclusions leave, and a beam with no bound on its width.

use attn::translation::{beam_search, number_pair, translation_set, MAX_BEAM_WIDTH};

#[test]
fn a_translation_set_that_the_exclusions_make_infeasible_is_an_error() {
    // Every number from 1 to 200,000 excluded: the draws would mostly miss.
    let all: Vec<_> = (1..=200_000).map(|x| number_pair(x).unwrap()).collect();
    let err = translation_set(1, 0, &all).unwrap_err();
    assert!(err.to_string().starts_with("excluded numbers must be at most 100,000"), "{err}");
    // A tenth excluded and a tenth asked for: it ends.
    let set = translation_set(1_000, 0, &all[..100_000]).unwrap();
    assert!(set.iter().all(|p| p.number > 100_000));
}

#[test]
fn a_beam_wider_than_the_bound_is_an_error_and_the_bound_is_the_message_s() {
    let uniform = |_: &[usize]| Ok(vec![-(13f64.ln()); 13]);
    let err = beam_search(uniform, 0, usize::MAX, 20).unwrap_err();
    let bound = MAX_BEAM_WIDTH.to_string();
    let with_comma = format!("{},{:03}", &bound[..bound.len() - 3], &bound[bound.len() - 3..]);
    assert!(err.to_string().contains(&format!("at most {with_comma}")), "{err}");
    assert!(beam_search(uniform, 0, MAX_BEAM_WIDTH, 3).is_ok());
}
