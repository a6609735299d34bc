//! The notation appendix is held to the book's rule: every number it shows
//! is bound or exempt, and the constants it quotes are the crate's.

mod common;

use report::numbers::Bindings;

#[test]
fn every_number_is_bound() {
    let mut b = Bindings::new("notation.md");
    // ω_i = 10000^(−2i/d_model): the base of the crate's frequencies.
    let omega = attn::position::frequencies(20).unwrap();
    b.rounded("10000", omega[1].powf(-10.0));
    // d_ff = 4 d_model in the paper's base model (chapter 10's configuration).
    let c = attn::block::CHAPTER_CONFIG;
    b.exact("4", (c.d_ff / c.d_model) as f64);
    // d_v need not equal d_k: chapter 2's worked example has d_k = 4, d_v = 2.
    let (_, k, v) = attn::attention::worked_example();
    b.exact("4", k.ncols() as f64).exact("2", v.ncols() as f64);
    b.assert_all_bound();
}
