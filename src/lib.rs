//! kgate: a performance-regression gate for compute kernels.
//!
//! The pipeline runs one way, one module per stage:
//! [`config`] → [`plan`] → [`runner`] (capture backends in [`run::backend`], which record
//! through [`capture`] from [`model::protocol`] lines, [`cpu`] readings of [`perf`] and
//! [`valgrind`] output, and ncu's CSV) → [`results`] (then [`derived`] and
//! [`utilization`] with device [`profile`]s) → [`compare`] (with [`stats`], [`inference`],
//! [`compare::explain`], [`waivers`]) → [`render`] → [`github`]. The words every stage shares
//! sit below them all: [`metric`], [`units`], [`verdict`], [`protocol`], [`exit`].
//! Imports point only to earlier stages and to that vocabulary (a test checks the module
//! graph has no cycle).
//!
//! Inputs besides a live run: [`import`] reads files that profilers and harnesses wrote
//! elsewhere; [`baseline`], [`gitref`], [`worktree`] and [`history`] supply what is compared
//! against; [`shard`] and [`selection`] split and narrow a suite. [`fingerprint`],
//! [`accelerator`] and [`envkey`] describe the machine. [`calibrate`] sizes the gate from A/A
//! runs. The command-line layer ([`cli`], [`commands`]) only parses flags and calls into these.

pub mod baseline;
pub mod capture;
pub mod cli;
pub mod compare;
pub mod config;
pub mod cpu;
pub mod derive;
pub mod github;
pub mod import;
pub mod machine;
pub mod model;
pub mod perf;
pub mod plan;
pub mod progress;
pub mod render;
pub mod run;
pub mod runner;
pub mod schema;
pub mod stats;
pub mod valgrind;
pub mod worktree;
