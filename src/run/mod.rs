//! The run stage's parts beside the runner loop ([`crate::run::runner`]).
//!
//! [`backend`] holds the capture backends: each way of measuring a repetition (a timer, the
//! benchmark's own report, a counter tool wrapped around it) behind one trait, so the runner
//! treats them alike.

pub mod backend;
pub mod identity;
pub mod process;
pub mod progress;
pub mod runner;
pub mod secrets;
pub mod worktree;

/// `PATH` of a process started with a cleared environment (the runner's benchmarks, and the
/// tools the valgrind backend looks up on it).
pub const FIXED_PATH: &str = "/usr/local/bin:/usr/bin:/bin";
