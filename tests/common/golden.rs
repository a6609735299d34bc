//! Golden files (`tests/golden/`), read by the report crate's reader.

#[allow(unused_imports)] // not every test reads golden files
pub use report::golden::load;
