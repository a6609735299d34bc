//! Solutions to the end-of-chapter exercises, one module a chapter (and
//! `fast` for the appendix "Making it fast").
//!
//! The book shows them in collapsed blocks; they are compiled and tested here
//! like every other listing.

pub mod ch01;
pub mod ch02;
pub mod ch03;
pub mod ch04;
pub mod ch05;
pub mod ch06;
pub mod ch07;
pub mod ch08;
pub mod ch09;
pub mod ch10;
pub mod ch11;
pub mod ch12;
pub mod ch13;
pub mod ch14;
pub mod ch15;
pub mod ch16;
pub mod ch17;
pub mod ch18;
pub mod ch19;
pub mod ch20;
pub mod ch21;
pub mod fast;
