//! The book's measurements that are not layers: the appendix's timers of
//! the fast kernel's phases ([`profile`]) and its measures of this core's
//! limits and of where each attention sits against them ([`roofline`]).
//! A model is never built from these; the examples and the appendix call
//! them to produce the tables and figures they quote.

pub mod profile;
pub mod roofline;
