//! The book's interactive figures run this crate, compiled to WebAssembly:
//! [`widgets`] computes what each figure shows with `attn`'s own functions,
//! and [`abi`] hands the numbers to the page's script (`theme/widgets.js`),
//! which only draws. The golden test (`tests/golden.rs`) runs the same
//! functions natively; the browser check asks the pages for the same
//! settings and compares.
//!
//! Built by `cargo xtask serve`, `build` and `test` with Debian's
//! `rustc-web` (the rustup toolchain here cannot add the wasm32 target):
//! see `xtask/src/wasm.rs`.

pub mod abi;
pub mod gpu;
pub mod widgets;
pub mod writer;
