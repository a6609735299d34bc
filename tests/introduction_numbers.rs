//! The introduction states no measurement, but it is held to the same rule
//! as every chapter: every number it shows is bound or exempt.

mod common;

use report::numbers::Bindings;

#[test]
fn every_number_is_bound() {
    Bindings::new("introduction.md").assert_all_bound();
}
