//! The checker checks: a page with a number nothing computes fails it, and
//! binding the number to its computed value (only to the right one) passes.

use super::*;

fn page(text: &str) -> Bindings {
    Bindings::from_text("test.md", text.to_string())
}

#[test]
fn numbers_in_prose_are_found_and_code_is_left_alone() {
    let text = "The mean is 2.5 and the peak 1,024.\n\n```rust,ignore\nlet x = 17;\n```\n";
    let found: Vec<String> = tokens(text).into_iter().map(|t| t.text).collect();
    assert_eq!(found, ["2.5", "1024"]);
    assert_eq!(parse("1,024"), 1024.0);
}

#[test]
fn an_unbound_number_fails_and_a_bound_one_passes() {
    let text = "Attention over 4 keys gives the weight 0.731 to the first.\n";
    let b = page(text);
    let unbound = b.unbound();
    assert!(unbound.iter().any(|u| u.ends_with(": 0.731")), "{unbound:?}");
    let mut b = page(text);
    b.rounded("0.731", 0.731_05).exact("4", 4.0);
    assert_eq!(b.unbound(), Vec::<String>::new());
}

#[test]
#[should_panic]
fn a_number_bound_to_another_value_fails() {
    page("The weight is 0.731.\n").rounded("0.731", 0.75);
}

#[test]
fn a_claim_about_data_must_be_registered() {
    let text = "The error grows with the length.\n";
    assert!(page(text).unbound().iter().any(|u| u.contains("unchecked claim")));
    let mut b = page(text);
    b.claim("The error grows", true);
    assert!(b.unbound().is_empty());
}

#[test]
#[should_panic]
fn a_claim_the_data_do_not_support_fails() {
    page("The error grows with the length.\n").claim("The error grows", false);
}
