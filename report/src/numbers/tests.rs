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

// The holes of the old checker, each closed by a mutation it passed.

#[test]
fn a_binding_binds_one_place_so_a_stale_copy_fails() {
    // The old checker bound every "0.731" of the page once one was bound:
    // a stale copy in another section passed.
    let text = "## Weights\n\nThe weight is 0.731.\n\n## Summary\n\nThe weight was 0.731.\n";
    // (A binding binds its place and the same figure in the same section.)
    let mut b = page(text);
    b.rounded("0.731", 0.731_05);
    let unbound = b.unbound();
    assert_eq!(unbound, ["book/test.md:7 (§ Summary): 0.731"], "{unbound:?}");
    b.rounded("0.731", 0.731_05);
    assert!(b.unbound().is_empty());
}

#[test]
fn a_number_repeated_from_an_output_block_needs_its_own_binding() {
    // The old checker bound a prose number anywhere on the page that
    // repeated any number of a quoted output block. Now only the block's own
    // section reads it freely; another section binds it itself.
    let text = "## Run\n\n```text\nloss 1.81\n```\n\nIt ends at 1.81.\n\n## Summary\n\nThe loss ends at 1.81.\n";
    let mut b = page(text);
    b.quoted("```text\nloss 1.81\n```");
    assert_eq!(b.unbound(), ["book/test.md:11 (§ Summary): 1.81"]);
    b.section("Summary").again("1.81");
    assert!(b.unbound().is_empty());
}

#[test]
#[should_panic(expected = "repeats no figure")]
fn again_needs_a_figure_the_test_checked() {
    page("## A\n\nSee 17.\n").section("A").again("17");
}

#[test]
fn a_section_scopes_the_bindings_and_names_itself_in_failures() {
    let text = "# Page\n\n## First\n\nSee 17 here.\n\n## Second\n\nAnd 17 there.\n";
    let mut b = page(text);
    b.section("Second").exact("17", 17.0);
    assert_eq!(b.unbound(), ["book/test.md:5 (§ First): 17"]);
}

#[test]
#[should_panic(expected = "(§ First)")]
fn a_number_outside_the_section_cannot_be_bound_from_it() {
    let text = "## First\n\nNothing here.\n\n## Second\n\nBut 17 here.\n";
    page(text).section("First").exact("17", 17.0);
}

#[test]
fn a_number_written_as_a_word_is_a_number() {
    // The old checker saw no number in "six tests fail".
    let text = "Changing it makes six tests fail, over two training runs.\n\nOne head at a time.\n";
    let found: Vec<String> = tokens(text).into_iter().map(|t| t.text).collect();
    assert_eq!(found, ["six", "two"]);
    let mut b = page(text);
    assert_eq!(b.unbound().len(), 2);
    b.exact("six", 6.0).exact("two", 2.0);
    assert!(b.unbound().is_empty());
}

#[test]
#[should_panic(expected = "the text says Six")]
fn a_word_bound_to_another_count_fails() {
    page("Six tests fail.\n").exact("Six", 5.0);
}

#[test]
fn a_constant_is_read_from_the_code_it_lives_in() {
    assert_eq!(number_in_source("checks/benches/attention.rs", "D", "= "), 64.0);
    assert_eq!(captured("src/lm/sample.rs", r"let draws = ([0-9_]+);"), [60_000.0]);
}

#[test]
#[should_panic(expected = "no fn or const NO_SUCH_CONSTANT")]
fn a_missing_constant_is_named() {
    number_in_source("checks/benches/attention.rs", "NO_SUCH_CONSTANT", "= ");
}
