//! Shared by the chapters' number tests: a chapter must quote, verbatim,
//! what its example prints, and every number it shows must be bound.

#![allow(dead_code)]

pub mod book;
pub mod golden;
