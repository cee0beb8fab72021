//! What a measurement is: its source on the trust ladder, its good direction, its gate rule.
//!
//! Counters read from hardware registers are ground truth; a compiler's cost-model estimate is
//! not. Every metric carries its source so that policy (which sources may fail a build) and
//! every report (which figures are estimates) can tell them apart.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where a metric's values come from, most trustworthy first (DESIGN.md's trust ladder).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// Read from hardware performance-counter registers.
    Hardware,
    /// Computed from hardware counters and a declared clock (utilization, bandwidth).
    Derived,
    /// A device or host timer (process wall time, CUDA events, `Instant`).
    Timer,
    /// A simulator such as valgrind's cache model: deterministic, but a model.
    Simulated,
    /// A number the benchmark printed without saying how it measured it.
    Reported,
    /// A static cost-model estimate (compiler FLOP counts and the like).
    Estimate,
}

impl Source {
    /// Sources allowed to fail a build unless the policy says otherwise.
    pub const DEFAULT_GATING: [Source; 4] = [
        Source::Hardware,
        Source::Derived,
        Source::Timer,
        Source::Simulated,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Source::Hardware => "hardware",
            Source::Derived => "derived",
            Source::Timer => "timer",
            Source::Simulated => "simulated",
            Source::Reported => "reported",
            Source::Estimate => "estimate",
        }
    }
}

/// When noisy metrics (timers, hardware counters) may fail the build. Deterministic counts
/// (valgrind's `simulated` metrics, whose cache geometry kgate pins) mean the same on every
/// machine and gate whatever this says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum NoisyMetrics {
    /// Unless baseline and candidate ran on different environments (different CPU or
    /// accelerator model, driver, clocks or tool versions): a timing from another machine says
    /// nothing about the change.
    #[default]
    SameEnvironment,
    /// Only when both sides were measured in this job (`kgate check --against`) or a stored
    /// baseline is judged against a recorded history (the prediction interval): a single
    /// baseline stored by another job carries that job's offset.
    SameJob,
    /// Always, even across environments: for runners known to be alike.
    Always,
}

impl NoisyMetrics {
    pub fn as_str(self) -> &'static str {
        match self {
            NoisyMetrics::SameEnvironment => "same-environment",
            NoisyMetrics::SameJob => "same-job",
            NoisyMetrics::Always => "always",
        }
    }
}

/// Suffix naming an estimate of another metric (`flops_estimate` estimates `flops`).
pub const ESTIMATE_SUFFIX: &str = "_estimate";

/// Which way is better for a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Smaller is better (times, misses, instructions).
    #[default]
    Lower,
    /// Larger is better (throughput, utilization, hit rate).
    Higher,
}

/// A tolerance for deterministic metrics: a relative bound or an absolute one in the metric's
/// unit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Tolerance {
    /// Relative: 0.01 allows a 1 % change.
    Relative(f64),
    /// Absolute, in the metric's unit.
    Absolute(f64),
}

/// How one metric is gated, resolved from the configuration when the results were recorded so
/// that `kgate compare` needs nothing but the two result files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GateRule {
    /// Whether a regression of this metric fails the gate.
    pub gates: bool,
    /// The smallest relative change that counts (0.05 is 5 %).
    pub threshold: f64,
    /// When set, the metric is treated as deterministic and compared against this tolerance
    /// instead of with a statistical test.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerance: Option<Tolerance>,
}

impl Default for GateRule {
    fn default() -> Self {
        GateRule {
            gates: true,
            threshold: 0.05,
            tolerance: None,
        }
    }
}

/// The usual direction of a metric from its name and unit: rates per second, hit rates,
/// throughputs and other percentages (utilization, occupancy, % of peak) are better higher,
/// except percentages of stalls; everything else (times, counts, bytes moved) lower.
pub fn direction_of(metric: &str, unit: &str) -> Direction {
    let name = metric.to_ascii_lowercase();
    let higher = unit.ends_with("/second")
        || unit.ends_with("/s")
        || name.ends_with("_per_second")
        || name.contains("throughput")
        || name.contains("hit_rate")
        || (unit == "%" && !name.contains("stall"));
    if higher {
        Direction::Higher
    } else {
        Direction::Lower
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throughputs_and_percentages_are_better_higher() {
        use Direction::{Higher, Lower};
        for (name, unit, want) in [
            ("gpu__time_duration.sum", "ns", Lower),
            ("dram__bytes_read.sum", "byte", Lower),
            ("lts__t_sector_hit_rate.pct", "%", Higher),
            ("Memory Throughput", "%", Higher),
            ("dram__bytes.sum.per_second", "byte/second", Higher),
            ("bytes_per_second", "", Higher),
            ("smsp__pcsamp_warps_issue_stalled_barrier.pct", "%", Lower),
        ] {
            assert_eq!(direction_of(name, unit), want, "{name} ({unit})");
        }
    }
}
