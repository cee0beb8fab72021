//! Verdicts: the words a comparison ends in, for a whole run and for each benchmark and metric.
//!
//! They sit below everything that decides, stores or shows them (the comparison, the adaptive
//! looks recorded with results, the reports), so that none of those has to reach into another
//! for the vocabulary.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The outcome of a whole comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RunVerdict {
    Pass,
    Regressed,
    Inconclusive,
    NoBaseline,
    /// A benchmark could not be measured on a side (it failed, crashed or timed out, or its
    /// build did): the run says nothing about it, so it is an error, never a pass.
    Error,
}

/// The verdict of a benchmark or metric.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Regressed,
    Inconclusive,
    Improved,
    /// A change smaller than the threshold that is not small enough to call "unchanged": the
    /// equivalence interval lies within ±threshold but not within ±the equivalence margin.
    WithinThreshold,
    Unchanged,
    /// None of the benchmark's metrics may fail the build (their rule, their source or the
    /// environments say so); never counted as unchanged.
    NotGated,
    New,
    Missing,
    /// Not run because no changed file matches its `paths` (`kgate check --changed-since`), or
    /// not selected (`--bench`).
    Skipped,
    /// It failed on a side (the baseline's or the candidate's run, or its build): nothing was
    /// measured to compare, so the run is an error (exit 2).
    Failed,
    /// Not measured: what its performance depends on (`identity:`) has the same digest on both
    /// sides, and so does its declaration. It passes.
    Identical,
    /// The candidate failed its correctness check (a protocol `{"correct": false}` line, a
    /// CUTLASS `Disposition` other than `passed`): it fails the gate whatever its speed, and
    /// the run regresses (exit 1) unless an error wins.
    Incorrect,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Regressed => "regressed",
            Verdict::Inconclusive => "inconclusive",
            Verdict::Improved => "improved",
            Verdict::WithinThreshold => "within-threshold",
            Verdict::Unchanged => "unchanged",
            Verdict::NotGated => "not-gated",
            Verdict::New => "new",
            Verdict::Missing => "missing",
            Verdict::Skipped => "skipped",
            Verdict::Failed => "failed",
            Verdict::Identical => "identical",
            Verdict::Incorrect => "incorrect",
        }
    }
}
