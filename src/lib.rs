//! kgate: a performance-regression gate for compute kernels.
//!
//! Each folder is one stage of the pipeline, and imports point only to earlier stages and to
//! the shared vocabulary below them all (`tests/it/architecture.rs` fails on any cycle;
//! `docs/architecture.md` has the tree):
//!
//! [`config`] → [`plan`] → [`run`] (the runner, and one capture backend per file in
//! [`run::backend`], whose output [`capture`] parses) or [`import`] (files that profilers and
//! harnesses wrote elsewhere) → results → [`derive`](mod@derive) (utilization from counters) →
//! [`compare`] (against what [`baseline`] supplies: stored baselines, git refs, history) →
//! [`render`] → [`github`]. [`bisect`] sits above run and compare: it measures commits of a
//! history against a known-good one to locate a regression. [`gate`] is the pipeline as
//! library functions (check, compare, import, merge, history, and what `ci` posts), each over a
//! plain options struct and returning a value; [`cli`] parses flags into those structs and
//! writes what comes back.
//!
//! Below them: [`model`] (metrics, units, verdicts, the protocol, the results and report
//! contracts, exit codes), [`store`] (their files read and written atomically), [`machine`]
//! (fingerprints and environment keys) and [`stats`] (rank tests, multiplicity, prediction
//! intervals, change points). [`schema`] generates the JSON
//! Schemas from the types.

/// Test helper: asserts that `text` contains `needle`, and shows the text when it does not.
#[cfg(test)]
macro_rules! assert_contains {
    ($text:expr, $needle:expr $(,)?) => {{
        let (text, needle): (&str, &str) = (&$text, &$needle);
        assert!(text.contains(needle), "{needle:?} is not in:\n{text}");
    }};
}

pub mod baseline;
pub mod bisect;
pub mod capture;
pub mod cli;
pub mod compare;
pub mod config;
pub mod derive;
pub mod gate;
pub mod github;
pub mod gitlab;
pub mod import;
pub mod machine;
pub mod model;
pub mod plan;
pub mod profile;
pub mod render;
pub mod run;
pub mod schema;
pub mod stats;
pub mod store;
