//! # report — the machinery of the book *Attention, Tested*
//!
//! The reader's crate, `attn`, holds the mechanisms, layers, models and
//! training the chapters teach. This crate holds what the book needs around
//! them: the chapters' longer experiments, the tables the examples print
//! and the numbers tests quote, and the readers of the measurement files
//! under `book/data/` (each names the run that produced it, see
//! [`provenance`]). Nothing in `attn` depends on it.
#![deny(missing_docs)]

pub mod ch01;
pub mod ch02;
pub mod ch03;
pub mod ch04;
pub mod ch05;
pub mod ch06;
pub mod ch07;
pub mod ch08;
pub mod ch09;
pub mod ch11;
pub mod ch12;
pub mod ch13;
pub mod ch14_lengths;
pub mod ch14_summary;
pub mod ch15;
pub mod ch15_data;
pub mod ch15_report;
pub mod ch16;
pub mod ch16_control;
pub mod ch16_report;
pub mod ch17;
pub mod ch18;
pub mod ch19;
pub mod ch20;
pub mod error;
pub mod fast_data;
pub mod fast_lm;
pub mod fast_profile;
pub mod fast_report;
pub mod golden;
pub mod measurements;
pub mod numbers;
pub mod plot;
pub mod provenance;
pub mod show;
pub mod train_step;

use std::path::Path;

/// The repository: `book/`, `target/` and this crate's `report/` are in it.
pub fn root() -> &'static Path {
    let report = Path::new(env!("CARGO_MANIFEST_DIR"));
    report.parent().unwrap_or(report)
}
