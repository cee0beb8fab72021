//! What a profiled regression attaches to its benchmark in the report (`profile`).
//!
//! A verdict says that a benchmark got slower; the profile says where. After a regression,
//! `kgate check` with `gate.on_regression: profile` runs the benchmark once more per side under
//! a deeper capture (callgrind on the CPU) and keeps the functions whose costs changed most.
//! Everything that was not done (no tool, no budget left, a side that cannot be re-run) is a
//! note here, never a silent gap.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The deeper capture of one regressed benchmark.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BenchmarkProfile {
    /// The tool: `callgrind`, `ncu`, or `protocol` (the benchmark's own counters, shown in its
    /// metrics).
    pub tool: String,
    /// The sides that were profiled: `base`, `head`, both, or none.
    pub sides: Vec<String>,
    /// Event names of the costs below (Valgrind's: `Ir`, `D1mr`, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<String>,
    /// The functions whose costs changed most (by self `Ir`, then inclusive `Ir`), largest
    /// change first; with one side profiled, that side's costliest functions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub functions: Vec<FunctionChange>,
    /// Functions left out of `functions` (beyond the top ones).
    #[serde(default)]
    pub functions_left_out: usize,
    /// What was skipped or could not be done, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Wall time the profiling runs of this benchmark took, in seconds.
    pub seconds: f64,
}

/// One function's costs on each side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FunctionChange {
    /// The function's name as the profile gives it (demangled).
    pub function: String,
    /// Its source file, when the binary has debug information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The first source line with a cost in it, when the binary has line tables.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    /// Costs on the base side (absent: not profiled, or the function did not run there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<FunctionCost>,
    /// Costs on the head side (absent: not profiled, or the function did not run there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<FunctionCost>,
    /// Head minus base of the self `Ir` (a missing side counts 0); absent with one side
    /// profiled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_ir_change: Option<i64>,
    /// Head minus base of the inclusive `Ir`, as `self_ir_change`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inclusive_ir_change: Option<i64>,
}

/// A function's costs in one profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FunctionCost {
    /// Instructions executed in the function itself.
    pub self_ir: i64,
    /// Instructions executed in it and in what it called (a recursive call counts again).
    pub inclusive_ir: i64,
    /// First-level data-cache misses (D1mr + D1mw) in the function itself, when simulated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_d1_misses: Option<i64>,
    /// Last-level misses (ILmr + DLmr + DLmw) in the function itself, when simulated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_ll_misses: Option<i64>,
}
