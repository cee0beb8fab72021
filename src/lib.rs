//! kgate: a performance-regression gate for compute kernels.
//!
//! The pipeline runs one way, one module per stage:
//! [`config`] → [`plan`] → [`runner`] (with [`capture`] and [`protocol`]) → [`results`] →
//! [`compare`] (with [`stats`]) → [`render`]. [`import`] feeds results from files written
//! elsewhere; [`baseline`] and [`worktree`] supply what is compared against. The command-line
//! layer ([`cli`], [`commands`]) only parses flags and calls into these.

pub mod baseline;
pub mod capture;
pub mod capture_ncu;
pub mod cli;
pub mod commands;
pub mod compare;
pub mod config;
pub mod exit;
pub mod fingerprint;
pub mod fsutil;
pub mod import;
pub mod metric;
pub mod plan;
pub mod progress;
pub mod protocol;
pub mod render;
pub mod results;
pub mod runner;
pub mod schema;
pub mod stats;
pub mod units;
pub mod worktree;
