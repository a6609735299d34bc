//! The chapters' report helpers: what an example prints and its numbers
//! test quotes, formatted once. Not a reader's API: the mechanism, the
//! layers and the models live in the modules the chapters teach.

pub mod ch01;
pub mod ch12;
pub mod ch13;
pub mod ch14;
pub mod ch14_data;
pub mod ch14_report;
pub mod fast_data;
pub mod fast_profile;
pub mod fast_report;
pub mod measurements;
pub mod provenance;
pub mod roofline;
