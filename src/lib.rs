//! kgate: a performance-regression gate for compute kernels.
//!
//! The pipeline runs one way, one module per stage:
//! [`config`] → [`plan`] → [`runner`] (with [`capture`] and [`protocol`]) → [`results`] →
//! [`compare`] (with [`stats`] and [`inference`]) → [`render`]; [`calibrate`] sizes the gate
//! from A/A runs. [`import`] feeds results from files written
//! elsewhere; [`baseline`] and [`worktree`] supply what is compared against. The command-line
//! layer ([`cli`], [`commands`]) only parses flags and calls into these.

pub mod accelerator;
pub mod adjust;
pub mod baseline;
pub mod calibrate;
pub mod capture;
pub mod capture_ncu;
pub mod changepoint;
pub mod cli;
pub mod commands;
pub mod compare;
pub mod config;
pub mod cpu;
pub mod derived;
pub mod envkey;
pub mod evidence;
pub mod exit;
pub mod explain;
pub mod fingerprint;
pub mod fsutil;
pub mod github;
pub mod gitref;
pub mod history;
pub mod import;
pub mod inference;
pub mod metric;
pub mod perf;
pub mod plan;
pub mod profile;
pub mod progress;
pub mod protocol;
pub mod render;
pub mod results;
pub mod runner;
pub mod schema;
pub mod selection;
pub mod shard;
pub mod stats;
pub mod units;
pub mod utilization;
pub mod valgrind;
pub mod waivers;
pub mod worktree;
