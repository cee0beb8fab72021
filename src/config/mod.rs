//! `kgate.yaml`: the benchmark declarations and the gate policy, and their loading.
//!
//! The configuration is the user's main interface, so a mistake in it must be answered with the
//! file, line, column and key at fault and with what was expected there. Parsing goes through
//! serde-saphyr (pure Rust, maintained; serde_yaml is deprecated) with `serde_path_to_error` to
//! recover the key path; checks that types cannot express (duplicate names, `min <= max`) run
//! afterwards and are located with spans.

pub mod derived;
pub mod profile;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use schemars::JsonSchema;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};

use crate::model::metric::{Direction, Source, Tolerance};

/// The only configuration format version so far.
pub const CONFIG_VERSION: u32 = 1;

/// The whole `kgate.yaml`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Configuration format version; must be 1.
    #[serde(default = "default_version")]
    pub version: u32,
    /// A build step run once per revision before any benchmark (for example
    /// `cargo build --release`).
    #[serde(default)]
    pub build: Option<CommandSpec>,
    /// Settings every benchmark inherits unless it sets its own.
    #[serde(default)]
    pub defaults: Defaults,
    /// How comparisons are decided and what fails the gate.
    #[serde(default)]
    pub gate: GatePolicy,
    /// The benchmarks.
    pub benchmarks: Vec<BenchmarkConfig>,
    /// Device profile that counter readings are normalized with (`tpu-v7x`, `tpu-v6e`, `h100`,
    /// `h200`, `b200`, `mi300x`, `cpu`, or a name under `profiles:`); see docs/utilization.md.
    #[serde(default)]
    pub device: Option<String>,
    /// Overrides of built-in device profiles and new profiles (with `base:` naming the profile
    /// they extend), by name.
    #[serde(default)]
    pub profiles: BTreeMap<String, serde_json::Value>,
}

fn default_version() -> u32 {
    CONFIG_VERSION
}

/// Settings that benchmarks inherit.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Defaults {
    /// Warm-up runs discarded before measuring (default 1).
    pub warmup: Option<u32>,
    /// Measured repetitions: a number, or `{min, max}` (default 10).
    pub repetitions: Option<Repetitions>,
    /// Time limit for one run of a benchmark, such as `30s` (default `60s`).
    pub timeout: Option<DurationSpec>,
    /// Capture backends (default `[timer]`).
    pub captures: Option<Vec<CaptureKind>>,
    /// Nsight Compute settings for the `ncu` capture.
    pub ncu: Option<NcuConfig>,
}

/// What decides a comparison and what fails the gate.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GatePolicy {
    /// Significance level of the rank test (default 0.01).
    #[serde(default = "default_alpha")]
    pub alpha: f64,
    /// Smallest relative change that counts as a regression (default `5%`).
    #[serde(default = "default_threshold")]
    pub threshold: Percent,
    /// Exit with status 3 when a gating metric is inconclusive (default false).
    #[serde(default)]
    pub fail_on_inconclusive: bool,
    /// Metric sources allowed to fail the build (default hardware, derived, timer, simulated).
    #[serde(default = "default_sources")]
    pub sources: Vec<Source>,
    /// Compare against a baseline from a different environment (CPU or accelerator model,
    /// driver, clocks, tool versions) with a warning instead of refusing (default false).
    #[serde(default)]
    pub allow_fingerprint_mismatch: bool,
    /// When noisy metrics (timer, hardware, derived) may fail the build: `same-environment`
    /// (default: not when baseline and candidate ran on different environments), `same-job`
    /// (only when both sides ran in this job, or against a recorded history) or `always`.
    /// Deterministic counts (valgrind) gate in every case.
    #[serde(default)]
    pub noisy_metrics: crate::model::metric::NoisyMetrics,
    /// Adjustment of p-values across the gated metrics of a run: `bh` (Benjamini–Hochberg,
    /// default) or `holm`.
    #[serde(default)]
    pub correction: crate::stats::inference::Correction,
    /// Margin of the equivalence claim behind "unchanged", such as `1%` (default: the smaller
    /// of 1 % and each metric's threshold).
    #[serde(default)]
    pub equivalence_margin: Option<Percent>,
    /// Wall-clock budget for adaptive repetitions in `kgate check --against`: no further look
    /// starts once it is spent (default: none, looks run until `repetitions.max`).
    #[serde(default)]
    pub time_budget: Option<DurationSpec>,
}

fn default_alpha() -> f64 {
    0.01
}
fn default_threshold() -> Percent {
    Percent(0.05)
}
fn default_sources() -> Vec<Source> {
    Source::DEFAULT_GATING.to_vec()
}

impl Default for GatePolicy {
    fn default() -> Self {
        GatePolicy {
            alpha: default_alpha(),
            threshold: default_threshold(),
            fail_on_inconclusive: false,
            sources: default_sources(),
            allow_fingerprint_mismatch: false,
            noisy_metrics: crate::model::metric::NoisyMetrics::default(),
            correction: crate::stats::inference::Correction::Bh,
            equivalence_margin: None,
            time_budget: None,
        }
    }
}

/// `ncu` settings of a benchmark (key `ncu` in `kgate.yaml`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NcuConfig {
    /// Metrics to collect (`--metrics`); default: kernel time, throughputs, cycles, clock and
    /// DRAM bytes.
    pub metrics: Option<Vec<String>>,
    /// `--clock-control`: `base` locks clocks to base (ncu's default in most versions), `none`
    /// leaves them free.
    pub clock_control: Option<ClockControl>,
    /// `--cache-control`: `all` flushes caches before each replay pass, `none` does not.
    pub cache_control: Option<CacheControl>,
    /// `--kernel-name`: profile only kernels matching this name (or `regex:…`).
    pub kernel_name: Option<String>,
    /// `--launch-skip`: launches to skip before profiling.
    pub launch_skip: Option<u64>,
    /// `--launch-count`: launches to profile.
    pub launch_count: Option<u64>,
}

/// Values of `--clock-control`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ClockControl {
    Base,
    None,
    Reset,
    Boost,
    ForceBoost,
}

/// Values of `--cache-control`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum CacheControl {
    All,
    None,
}

impl ClockControl {
    pub fn as_str(self) -> &'static str {
        match self {
            ClockControl::Base => "base",
            ClockControl::None => "none",
            ClockControl::Reset => "reset",
            ClockControl::Boost => "boost",
            ClockControl::ForceBoost => "force-boost",
        }
    }
}

impl CacheControl {
    pub fn as_str(self) -> &'static str {
        match self {
            CacheControl::All => "all",
            CacheControl::None => "none",
        }
    }
}

/// The default events of the `perf` capture: instructions, cycles, cache and branch behaviour,
/// and the task clock.
pub const DEFAULT_PERF_EVENTS: &[&str] = &[
    "instructions",
    "cycles",
    "cache-references",
    "cache-misses",
    "branches",
    "branch-misses",
    "task-clock",
];

/// One benchmark.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BenchmarkConfig {
    /// Unique name, used in reports and to match baseline and candidate.
    pub name: String,
    /// What to run: a shell string (run with `sh -c`) or a list of arguments (run directly).
    pub command: CommandSpec,
    /// A build step for this benchmark, run once per revision (identical steps run once).
    pub build: Option<CommandSpec>,
    /// Working directory, relative to the configuration file (default: its folder).
    pub cwd: Option<PathBuf>,
    /// Extra environment variables.
    #[serde(default)]
    #[schemars(schema_with = "scalar_text_map")]
    pub env: BTreeMap<String, String>,
    /// Warm-up runs discarded before measuring.
    pub warmup: Option<u32>,
    /// Measured repetitions: a number, or `{min, max}`.
    pub repetitions: Option<Repetitions>,
    /// Time limit for one run, such as `30s`; the whole process group is killed at the limit.
    pub timeout: Option<DurationSpec>,
    /// Capture backends: `timer` (process wall time) and `protocol` (JSON lines the benchmark
    /// writes to `$KGATE_PROTOCOL_FILE`).
    pub captures: Option<Vec<CaptureKind>>,
    /// Free-form parameters recorded with the results (shape, dtype).
    #[serde(default)]
    #[schemars(schema_with = "scalar_text_map")]
    pub parameters: BTreeMap<String, String>,
    /// Per-metric gate settings, by metric name.
    #[serde(default)]
    pub metrics: BTreeMap<String, MetricConfig>,
    /// Settings of the `perf` capture.
    pub perf: Option<PerfConfig>,
    /// Settings of the `callgrind` and `cachegrind` captures.
    pub valgrind: Option<ValgrindConfig>,
    /// Metrics computed from each repetition's counters, by name (see docs/cpu-counters.md).
    #[serde(default)]
    pub derived: BTreeMap<String, DerivedConfig>,
    /// Files this benchmark depends on (globs relative to the configuration file, such as
    /// `src/matmul/**`); `kgate check --changed-since REF` skips it when none changed.
    #[serde(default)]
    pub paths: Option<Vec<String>>,
    /// Text files the benchmark writes (lowered IR, PTX, MLIR), by a name of your choice: paths
    /// relative to the working directory. Reports show a diff when one changed.
    #[serde(default)]
    pub artifacts: BTreeMap<String, PathBuf>,
    /// Nsight Compute settings for the `ncu` capture (metrics, clock and cache control,
    /// kernel filter, launch skip and count).
    pub ncu: Option<NcuConfig>,
    /// How the benchmark samples hardware counters through the protocol (requested counters,
    /// cumulative or per-interval samples, right-shift scaling); see docs/utilization.md.
    pub counters: Option<CounterSampling>,
}

/// How a benchmark samples hardware counters.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CounterSampling {
    /// Counters to sample; when they exceed the device's counters per pass, kgate splits them
    /// into the fewest passes and tells each repetition its pass through `KGATE_COUNTER_PASS`
    /// and `KGATE_COUNTERS`.
    #[serde(default)]
    pub request: Vec<String>,
    /// `cumulative` (default: each sample is a running total) or `interval` (each sample is
    /// the increase since the previous one).
    #[serde(default)]
    pub mode: Option<String>,
    /// Right-shift bits the device applied to every sample (0–63, default 0).
    #[serde(default)]
    pub scaling: u8,
}
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PerfConfig {
    /// perf event names (default: instructions, cycles, cache-references, cache-misses,
    /// branches, branch-misses, task-clock).
    #[serde(default)]
    pub events: Vec<String>,
}

/// Settings of the Valgrind captures.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ValgrindConfig {
    /// callgrind only: count only inside functions matching this pattern (`--toggle-collect`),
    /// such as `kernels::matmul::*`.
    pub toggle_collect: Option<String>,
}

/// A user-defined derived metric.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DerivedConfig {
    /// Arithmetic over counter names, with `-`, `/` and other non-identifier characters
    /// written as `_`: `1000 * branch_misses / instructions`, `D1mr / Dr`.
    pub expr: String,
    /// Unit of the result (default: none).
    #[serde(default)]
    pub unit: String,
    /// `lower` (default) or `higher` is better.
    pub direction: Option<Direction>,
}

/// Gate settings of one metric.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MetricConfig {
    /// `lower` (default) or `higher` is better.
    pub direction: Option<Direction>,
    /// Smallest relative change that counts, such as `5%`.
    pub threshold: Option<Percent>,
    /// Treat the metric as deterministic: `1%` (relative) or a number (absolute, in the
    /// metric's unit).
    pub tolerance: Option<ToleranceSpec>,
    /// Whether a regression of this metric fails the gate (default true for listed metrics).
    pub gate: Option<bool>,
    /// What the number is, when the benchmark does not say (`timer` for a kernel time it
    /// measured with a clock).
    pub source: Option<Source>,
}

/// Capture backends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CaptureKind {
    /// Process wall time of each repetition, as metric `wall_time`.
    Timer,
    /// JSON lines written by the benchmark to the file named by `KGATE_PROTOCOL_FILE`.
    Protocol,
    /// Hardware performance counters through `perf stat`.
    Perf,
    /// Valgrind's callgrind with cache and branch simulation (deterministic).
    Callgrind,
    /// Valgrind's cachegrind with cache and branch simulation (deterministic).
    Cachegrind,
    /// Each run under Nsight Compute (`ncu --csv --page raw`); every kernel launch a sample.
    Ncu,
}

impl CaptureKind {
    pub fn as_str(self) -> &'static str {
        match self {
            CaptureKind::Timer => "timer",
            CaptureKind::Protocol => "protocol",
            CaptureKind::Perf => "perf",
            CaptureKind::Callgrind => "callgrind",
            CaptureKind::Cachegrind => "cachegrind",
            CaptureKind::Ncu => "ncu",
        }
    }

    /// Whether the capture runs the benchmark under a tool (at most one such capture per
    /// benchmark).
    pub fn wraps(self) -> bool {
        matches!(
            self,
            CaptureKind::Perf | CaptureKind::Callgrind | CaptureKind::Cachegrind | CaptureKind::Ncu
        )
    }

    /// Whether the capture's numbers are deterministic (Valgrind's simulation).
    pub fn deterministic(self) -> bool {
        matches!(self, CaptureKind::Callgrind | CaptureKind::Cachegrind)
    }
}

/// YAML scalars where the loader wants text: `n: 384` is read as the text `384`, so the
/// schema takes numbers and booleans there too (YAML-to-JSON tools type them).
fn scalar_text(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "type": ["string", "number", "boolean"] })
}

fn scalar_text_map(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "additionalProperties": scalar_text(generator),
        "default": {}
    })
}

/// A command: a shell string or an argument list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum CommandSpec {
    /// Run with `sh -c`.
    Shell(String),
    /// Run directly, without a shell.
    Argv(Vec<String>),
}

impl CommandSpec {
    /// The argument vector actually executed.
    pub fn argv(&self) -> Vec<String> {
        match self {
            CommandSpec::Shell(s) => vec!["sh".into(), "-c".into(), s.clone()],
            CommandSpec::Argv(v) => v.clone(),
        }
    }

    /// The command as a user would type it.
    pub fn display(&self) -> String {
        match self {
            CommandSpec::Shell(s) => s.clone(),
            CommandSpec::Argv(v) => v.join(" "),
        }
    }
}

/// As the loader reads it: a non-blank string, or a list whose first item names the program
/// (items may be YAML numbers, read as text: `[./bench, --n, 384]`).
impl JsonSchema for CommandSpec {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "CommandSpec".into()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A command: a shell string (run with `sh -c`) or an argument list (run directly, without a shell).",
            "anyOf": [
                { "description": "Run with `sh -c`.", "type": "string", "pattern": "\\S" },
                {
                    "description": "Run directly, without a shell; the first item is the program.",
                    "type": "array",
                    "prefixItems": [{ "type": ["string", "number", "boolean"], "pattern": "\\S" }],
                    "items": scalar_text(generator),
                    "minItems": 1
                }
            ]
        })
    }
}

impl<'de> Deserialize<'de> for CommandSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = CommandSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a shell command string or a list of arguments, e.g. `./bench --n 256` or `[./bench, --n, \"256\"]`")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<CommandSpec, E> {
                if s.trim().is_empty() {
                    return Err(E::custom("the command is empty; give the program to run"));
                }
                Ok(CommandSpec::Shell(s.to_string()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<CommandSpec, A::Error> {
                let mut argv = Vec::new();
                while let Some(arg) = seq.next_element::<String>()? {
                    argv.push(arg);
                }
                if argv.first().is_none_or(|p| p.trim().is_empty()) {
                    return Err(de::Error::custom(
                        "the argument list is empty; its first item is the program to run",
                    ));
                }
                Ok(CommandSpec::Argv(argv))
            }
        }
        d.deserialize_any(V)
    }
}

/// Measured repetitions: `min` are always run; up to `max` may be run while the evidence is
/// inconclusive (only in interleaved `kgate check --against`, under the alpha-spending plan).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Repetitions {
    pub min: u32,
    pub max: u32,
}

/// As the loader reads it: a number, or `{min}` / `{min, max}` (the derived schema would
/// demand the object with both keys).
impl JsonSchema for Repetitions {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Repetitions".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "Measured repetitions: a number such as `10`, or `{min: 10, max: 30}`: `min` are always run; up to `max` (default `min`) may be run while the evidence is inconclusive (only in interleaved `kgate check --against`, under the alpha-spending plan).",
            "oneOf": [
                { "type": "integer", "minimum": 1, "maximum": u32::MAX },
                {
                    "type": "object",
                    "properties": {
                        "min": { "type": "integer", "minimum": 1, "maximum": u32::MAX },
                        "max": { "type": "integer", "minimum": 1, "maximum": u32::MAX }
                    },
                    "required": ["min"],
                    "additionalProperties": false
                }
            ]
        })
    }
}

impl<'de> Deserialize<'de> for Repetitions {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Range {
            min: u32,
            max: Option<u32>,
        }
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Repetitions;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number of repetitions such as `10`, or `{min: 10, max: 30}`")
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Repetitions, E> {
                let n = u32::try_from(n)
                    .map_err(|_| E::custom(format!("{n} repetitions is too many")))?;
                Ok(Repetitions { min: n, max: n })
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Repetitions, E> {
                if n < 0 {
                    return Err(E::custom(format!(
                        "repetitions must be at least 1, not {n}"
                    )));
                }
                self.visit_u64(n as u64)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Repetitions, A::Error> {
                let r = Range::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(Repetitions {
                    min: r.min,
                    max: r.max.unwrap_or(r.min),
                })
            }
        }
        d.deserialize_any(V)
    }
}

/// A duration written with a unit (`30s`, `500ms`, `2m`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DurationSpec(pub Duration);

impl<'de> Deserialize<'de> for DurationSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = DurationSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a duration with a unit, such as `30s`, `500ms` or `2m`")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<DurationSpec, E> {
                let d = humantime::parse_duration(s.trim()).map_err(|e| {
                    E::custom(format!(
                        "`{s}` is not a duration ({e}); write one with a unit, such as `30s`, `500ms` or `2m`"
                    ))
                })?;
                if d.is_zero() {
                    return Err(E::custom(
                        "a timeout of zero would kill every run; give a positive duration such as `30s`",
                    ));
                }
                Ok(DurationSpec(d))
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<DurationSpec, E> {
                Err(E::custom(format!(
                    "`{n}` has no unit; write `{n}s` for seconds or `{n}ms` for milliseconds"
                )))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<DurationSpec, E> {
                self.visit_u64(n.unsigned_abs())
            }
            fn visit_f64<E: de::Error>(self, n: f64) -> Result<DurationSpec, E> {
                Err(E::custom(format!(
                    "`{n}` has no unit; write `{n}s` for seconds"
                )))
            }
        }
        d.deserialize_any(V)
    }
}

/// What humantime (the duration loader) reads: numbers, fractions included, each with one of
/// its units (`1h 30m`, `1.5s`, `500ms`).
const DURATION_PATTERN: &str = "^\\s*([0-9]+(\\.[0-9]*)?\\s*(nanos|nsec|ns|usec|us|µs|millis|msec|ms|seconds|second|secs|sec|s|minutes|minute|mins|min|m|hours|hour|hrs|hr|h|days|day|d|weeks|week|wks|wk|w|months|month|M|years|year|yrs|yr|y)\\s*)+$";

/// What `parse_percent` reads: a decimal number (as Rust's float parser takes it) and `%`.
const PERCENT_PATTERN: &str = "^\\s*\\+?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)([eE][+-]?[0-9]+)?\\s*%\\s*$";

impl JsonSchema for DurationSpec {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Duration".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "A duration with a unit, such as `30s`, `500ms` or `2m`.",
            "pattern": DURATION_PATTERN
        })
    }
}

/// A percentage written with `%` (`5%`, `0.5 %`), stored as a fraction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Percent(pub f64);

fn parse_percent(s: &str) -> Result<f64, String> {
    let body = s.trim().strip_suffix('%').ok_or_else(|| {
        format!("`{s}` is not a percentage; write it with a percent sign, such as `5%`")
    })?;
    let v: f64 = body.trim().parse().map_err(|_| {
        format!("`{s}` is not a percentage; write a number followed by `%`, such as `5%`")
    })?;
    if !v.is_finite() || !(0.0..=10_000.0).contains(&v) {
        return Err(format!(
            "`{s}` is out of range; a percentage here lies between 0% and 10000%"
        ));
    }
    Ok(v / 100.0)
}

impl<'de> Deserialize<'de> for Percent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Percent;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a percentage such as `5%`")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Percent, E> {
                parse_percent(s).map(Percent).map_err(E::custom)
            }
            fn visit_f64<E: de::Error>(self, n: f64) -> Result<Percent, E> {
                Err(E::custom(format!(
                    "`{n}` is ambiguous; write a percentage with a percent sign, such as `{n}%`"
                )))
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Percent, E> {
                self.visit_f64(n as f64)
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Percent, E> {
                self.visit_f64(n as f64)
            }
        }
        d.deserialize_any(V)
    }
}

impl JsonSchema for Percent {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Percent".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "A percentage with a percent sign, such as `5%`.",
            "pattern": PERCENT_PATTERN
        })
    }
}

/// A tolerance as written: `1%` (relative) or a plain number (absolute).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ToleranceSpec(pub Tolerance);

impl<'de> Deserialize<'de> for ToleranceSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = ToleranceSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a relative tolerance such as `1%`, or an absolute one as a number in the metric's unit")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<ToleranceSpec, E> {
                parse_percent(s)
                    .map(|v| ToleranceSpec(Tolerance::Relative(v)))
                    .map_err(E::custom)
            }
            fn visit_f64<E: de::Error>(self, n: f64) -> Result<ToleranceSpec, E> {
                if !n.is_finite() || n < 0.0 {
                    return Err(E::custom(format!(
                        "an absolute tolerance must be a number ≥ 0, not `{n}`"
                    )));
                }
                Ok(ToleranceSpec(Tolerance::Absolute(n)))
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<ToleranceSpec, E> {
                self.visit_f64(n as f64)
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<ToleranceSpec, E> {
                self.visit_f64(n as f64)
            }
        }
        d.deserialize_any(V)
    }
}

impl JsonSchema for ToleranceSpec {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Tolerance".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "`1%` (relative) or a number ≥ 0 (absolute, in the metric's unit).",
            "oneOf": [
                { "type": "string", "pattern": PERCENT_PATTERN },
                { "type": "number", "minimum": 0 }
            ]
        })
    }
}

/// A configuration that could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(
        "cannot read config `{path}`: {source}\nhint: create one with `kgate init`, or name another with -c FILE"
    )]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The YAML did not match the expected shape; `message` already names file, line, column
    /// and key.
    #[error("{message}")]
    Invalid { message: String },
}

/// A loaded configuration and where it came from.
#[derive(Debug, Clone)]
pub struct LoadedConfig {
    pub config: Config,
    pub path: PathBuf,
    /// Folder that relative paths in the configuration are resolved against.
    pub root: PathBuf,
}

/// Reads and checks a configuration file.
pub fn load(path: &Path) -> Result<LoadedConfig, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let config = parse(&text, &path.display().to_string())?;
    let root = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok(LoadedConfig {
        config,
        path: path.to_path_buf(),
        root,
    })
}

/// Parses configuration text; `file` names it in error messages.
pub fn parse(text: &str, file: &str) -> Result<Config, ConfigError> {
    let mut key_path = String::new();
    let parsed = serde_saphyr::with_deserializer_from_str(text, |de| {
        serde_path_to_error::deserialize::<_, Config>(de).map_err(|e| {
            key_path = e.path().to_string();
            e.into_inner()
        })
    });
    let config = match parsed {
        Ok(c) => c,
        Err(err) => {
            let (line, column) = err
                .location()
                .map(|l| (l.line(), l.column()))
                .unwrap_or((0, 0));
            let raw = err.without_snippet().to_string();
            let message = strip_location_prefix(&raw);
            let key = if key_path.is_empty() || key_path == "." {
                String::new()
            } else {
                format!(" key `{key_path}`:")
            };
            let hint = hint_for(&key_path)
                .map(|h| format!("\nhint: {h}"))
                .unwrap_or_default();
            let snippet = snippet(text, line);
            return Err(ConfigError::Invalid {
                message: format!("{file}:{line}:{column}:{key} {message}{hint}{snippet}"),
            });
        }
    };
    validate(&config, text, file)?;
    Ok(config)
}

/// serde-saphyr prefixes messages with their position; ours carry it already.
fn strip_location_prefix(raw: &str) -> String {
    let mut s = raw.strip_prefix("error: ").unwrap_or(raw);
    if let Some(idx) = s.rfind(" at line ")
        && s[idx..].contains(", column ")
    {
        s = &s[..idx];
    }
    if let Some(rest) = s.strip_prefix("line ")
        && let Some(idx) = rest.find(": ")
    {
        let head = &rest[..idx];
        if head.contains("column") {
            return rest[idx + 2..].to_string();
        }
    }
    s.to_string()
}

/// What is expected at a key, for the errors serde cannot phrase well.
fn hint_for(key_path: &str) -> Option<&'static str> {
    let last = key_path
        .rsplit('.')
        .next()
        .unwrap_or(key_path)
        .trim_end_matches(|c: char| c == ']' || c.is_ascii_digit() || c == '[');
    Some(match last {
        "warmup" => "`warmup` is a whole number of discarded runs, such as `warmup: 2`",
        "repetitions" | "min" | "max" => {
            "`repetitions` is a whole number such as `10`, or `{min: 10, max: 30}`"
        }
        "timeout" => "`timeout` is a duration with a unit, such as `30s`",
        "threshold" => "`threshold` is a percentage, such as `5%`",
        "tolerance" => "`tolerance` is `1%` (relative) or a number (absolute)",
        "captures" => {
            "`captures` lists capture backends: `timer`, `protocol`, `perf`, `callgrind`, `cachegrind`, `ncu`"
        }
        "direction" => "`direction` is `lower` or `higher`",
        "source" | "sources" => {
            "sources are hardware, derived, timer, simulated, reported, estimate"
        }
        "alpha" => "`alpha` is a probability such as `0.01`",
        "correction" => "`correction` is `bh` (Benjamini–Hochberg) or `holm`",
        "equivalence_margin" => "`equivalence_margin` is a percentage, such as `1%`",
        "time_budget" => "`time_budget` is a duration with a unit, such as `10m`",
        "clock_control" => "`clock_control` is `base`, `none`, `reset`, `boost` or `force-boost`",
        "cache_control" => "`cache_control` is `all` or `none`",
        "env" | "parameters" => "a map of names to string values",
        "benchmarks" => "`benchmarks` is a list of entries with at least `name` and `command`",
        _ => return None,
    })
}

/// The offending line with a caret, for context.
fn snippet(text: &str, line: u64) -> String {
    if line == 0 {
        return String::new();
    }
    match text.lines().nth((line - 1) as usize) {
        Some(l) => format!("\n  {line:>4} | {l}"),
        None => String::new(),
    }
}

/// Why a capture list may hold only one of the captures that wrap the command.
const ONE_WRAPPING_CAPTURE: &str = "`perf`, `callgrind`, `cachegrind` and `ncu` each run the benchmark under a tool; list at most one of them per benchmark (declare a second benchmark for another)";

/// Checks that the types cannot express.
fn validate(config: &Config, text: &str, file: &str) -> Result<(), ConfigError> {
    let fail = |needle: Option<&str>, key: String, message: String| {
        let line = needle.and_then(|n| find_line(text, n)).unwrap_or(0);
        let loc = if line > 0 {
            format!("{file}:{line}:")
        } else {
            format!("{file}:")
        };
        Err(ConfigError::Invalid {
            message: format!("{loc} key `{key}`: {message}{}", snippet(text, line)),
        })
    };
    if config.version != CONFIG_VERSION {
        return fail(
            Some("version:"),
            "version".into(),
            format!(
                "unsupported version {}; this kgate reads version {CONFIG_VERSION}",
                config.version
            ),
        );
    }
    if let Some(device) = &config.device
        && let Err(e) = crate::config::profile::resolve(device, &config.profiles)
    {
        return fail(Some("device:"), "device".into(), e.to_string());
    }
    for b in &config.benchmarks {
        if let Some(c) = &b.counters {
            if c.mode
                .as_deref()
                .is_some_and(|m| m != "cumulative" && m != "interval")
            {
                return fail(
                    Some("mode:"),
                    format!("benchmarks[{}].counters.mode", b.name),
                    "must be `cumulative` or `interval`".into(),
                );
            }
            if c.scaling > 63 {
                return fail(
                    Some("scaling:"),
                    format!("benchmarks[{}].counters.scaling", b.name),
                    "right-shift scaling is 0–63 bits".into(),
                );
            }
        }
    }
    if !(config.gate.alpha > 0.0 && config.gate.alpha < 0.5) {
        return fail(
            Some("alpha:"),
            "gate.alpha".into(),
            format!(
                "{} is not a usable significance level; use a value between 0 and 0.5, such as 0.01",
                config.gate.alpha
            ),
        );
    }
    if config.benchmarks.is_empty() {
        return fail(
            Some("benchmarks:"),
            "benchmarks".into(),
            "no benchmarks are declared; add at least one entry with `name` and `command`".into(),
        );
    }
    if let Some(r) = config.defaults.repetitions {
        check_repetitions(r)
            .or_else(|m| fail(Some("repetitions:"), "defaults.repetitions".into(), m))?;
    }
    // Each wrapping capture runs the benchmark under its tool: two would nest one tool in the
    // other. A benchmark that inherits its captures inherits the defaults' list.
    let wraps_twice = |c: &[CaptureKind]| c.iter().filter(|k| k.wraps()).count() > 1;
    if config.defaults.captures.as_deref().is_some_and(wraps_twice) {
        return fail(
            Some("captures:"),
            "defaults.captures".into(),
            ONE_WRAPPING_CAPTURE.into(),
        );
    }
    let mut seen = std::collections::HashSet::new();
    for (i, b) in config.benchmarks.iter().enumerate() {
        let needle = format!("name: {}", b.name);
        let key = |k: &str| format!("benchmarks[{i}].{k}");
        if b.name.trim().is_empty() || b.name.chars().any(char::is_control) {
            return fail(
                Some(&needle),
                key("name"),
                "a benchmark name must be non-empty printable text".into(),
            );
        }
        if !seen.insert(b.name.as_str()) {
            return fail(
                Some(&needle),
                key("name"),
                format!(
                    "duplicate benchmark name `{}`; names identify benchmarks across runs and must be unique",
                    b.name
                ),
            );
        }
        if let Some(r) = b.repetitions {
            check_repetitions(r).or_else(|m| fail(Some(&needle), key("repetitions"), m))?;
        }
        if b.captures.as_deref().is_some_and(wraps_twice) {
            return fail(Some(&needle), key("captures"), ONE_WRAPPING_CAPTURE.into());
        }
        let captures = b.captures.as_ref().or(config.defaults.captures.as_ref());
        if b.valgrind
            .as_ref()
            .is_some_and(|v| v.toggle_collect.is_some())
            && !captures.is_some_and(|c| c.contains(&CaptureKind::Callgrind))
        {
            return fail(
                Some(&needle),
                key("valgrind.toggle_collect"),
                "`toggle_collect` restricts callgrind's counting to a function, and this benchmark has no `callgrind` capture (cachegrind counts the whole program); add `callgrind` to `captures` or remove the key".into(),
            );
        }
        for (name, d) in &b.derived {
            if let Err(e) = crate::config::derived::check(name, &d.expr) {
                return fail(
                    Some(&d.expr),
                    key(&format!("derived.{name}.expr")),
                    e.to_string(),
                );
            }
        }
        if let Some(c) = &b.captures
            && c.is_empty()
        {
            return fail(
                Some(&needle),
                key("captures"),
                "the capture list is empty; use `[timer]` or `[protocol]`".into(),
            );
        }
    }
    Ok(())
}

fn check_repetitions(r: Repetitions) -> Result<(), String> {
    if r.min == 0 {
        return Err("at least 1 repetition is needed".into());
    }
    if r.max < r.min {
        return Err(format!(
            "max ({}) is smaller than min ({}); max is the most repetitions to run",
            r.max, r.min
        ));
    }
    Ok(())
}

fn find_line(text: &str, needle: &str) -> Option<u64> {
    text.lines()
        .position(|l| l.contains(needle))
        .map(|i| i as u64 + 1)
}

/// The starter configuration written by `kgate init`.
pub const STARTER: &str = r#"# kgate.yaml: the kernel benchmarks this repository gates on.
# Reference: see the configuration section of kgate's README.
version: 1

# Run once per revision before any benchmark (optional).
# build: cargo build --release

defaults:
  warmup: 1            # discarded runs before measuring
  repetitions: 10      # or {min: 10, max: 40}: more only while undecided (check --against)
  timeout: 60s         # the whole process group is killed at the limit
  captures: [timer]    # timer: process wall time; protocol: numbers the benchmark reports

gate:
  alpha: 0.01                 # false-alarm level of the whole gate (all metrics, all looks)
  threshold: 5%               # smallest change that counts as a regression
  fail_on_inconclusive: false # exit 3 instead of 0 when the evidence is inconclusive
  # correction: bh            # across gated metrics: bh (default) or holm
  # equivalence_margin: 1%    # "unchanged" needs the interval inside this (default: threshold)
  # time_budget: 10m          # no adaptive look starts after this

benchmarks:
  - name: example
    # A shell string (run with sh -c) or a list of arguments.
    command: ["sh", "-c", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done"]
    # A benchmark that times its own kernel writes JSON lines to $KGATE_PROTOCOL_FILE:
    #   {"metric": "kernel_time", "value": 88.0, "unit": "us"}
    # and lists `protocol` in its captures.
    metrics:
      wall_time:
        direction: lower
        threshold: 10%
        gate: true
"#;

#[cfg(test)]
mod tests {
    use super::*;

    fn err(yaml: &str) -> String {
        match parse(yaml, "kgate.yaml") {
            Ok(c) => panic!("expected an error, parsed {c:?}"),
            Err(e) => e.to_string(),
        }
    }

    const OK: &str = "benchmarks:\n  - name: a\n    command: ./a\n";

    #[test]
    fn minimal_config_gets_defaults() {
        let c = parse(OK, "kgate.yaml").unwrap();
        assert_eq!(c.version, 1);
        assert_eq!(c.gate.alpha, 0.01);
        assert_eq!(c.gate.threshold, Percent(0.05));
        assert_eq!(c.benchmarks[0].command, CommandSpec::Shell("./a".into()));
    }

    #[test]
    fn full_config_parses() {
        let yaml = r#"
version: 1
build: [cargo, build, --release]
defaults: {warmup: 2, repetitions: {min: 10, max: 30}, timeout: 1m, captures: [timer, protocol]}
gate: {alpha: 0.05, threshold: 2.5%, fail_on_inconclusive: true, sources: [hardware, timer]}
benchmarks:
  - name: mm
    command: [./mm, --n, "256"]
    cwd: kernels
    env: {OMP_NUM_THREADS: "1"}
    repetitions: 5
    timeout: 500ms
    parameters: {n: "256"}
    metrics:
      kernel_time: {direction: lower, threshold: 50%, gate: true, source: timer}
      instructions: {tolerance: 1%}
      bytes: {tolerance: 0}
"#;
        let c = parse(yaml, "kgate.yaml").unwrap();
        assert_eq!(
            c.defaults.repetitions,
            Some(Repetitions { min: 10, max: 30 })
        );
        assert_eq!(c.gate.threshold, Percent(0.025));
        let b = &c.benchmarks[0];
        assert_eq!(b.repetitions, Some(Repetitions { min: 5, max: 5 }));
        assert_eq!(b.timeout, Some(DurationSpec(Duration::from_millis(500))));
        assert_eq!(b.metrics["kernel_time"].threshold, Some(Percent(0.5)));
        assert_eq!(
            b.metrics["instructions"].tolerance,
            Some(ToleranceSpec(Tolerance::Relative(0.01)))
        );
        assert_eq!(
            b.metrics["bytes"].tolerance,
            Some(ToleranceSpec(Tolerance::Absolute(0.0)))
        );
    }

    /// Every bad configuration and the exact first line of the message it gets.
    #[test]
    fn bad_configs_get_located_messages() {
        let cases: &[(&str, &str)] = &[
            (
                "benchmarks:\n  - name: a\n    command: ./a\n    wormup: 3\n",
                "kgate.yaml:4:5: key `benchmarks[0].wormup`: unknown field `wormup`, expected one of name, command, build, cwd, env, warmup, repetitions, timeout, captures, parameters, metrics, perf, valgrind, derived, paths, artifacts, ncu",
            ),
            (
                "benchmarks:\n  - name: a\n    command: ./a\n    warmup: lots\n",
                "kgate.yaml:4:13: key `benchmarks[0].warmup`: invalid u32",
            ),
            (
                "benchmarks:\n  - name: a\n    command: ./a\n    timeout: 30\n",
                "kgate.yaml:4:14: key `benchmarks[0].timeout`: `30` has no unit; write `30s` for seconds or `30ms` for milliseconds",
            ),
            (
                "benchmarks:\n  - name: a\n    command: ./a\n    timeout: 3 parsecs\n",
                "kgate.yaml:4:14: key `benchmarks[0].timeout`: `3 parsecs` is not a duration",
            ),
            (
                "gate:\n  threshold: 5\nbenchmarks:\n  - name: a\n    command: ./a\n",
                "kgate.yaml:2:14: key `gate.threshold`: `5` is ambiguous; write a percentage with a percent sign, such as `5%`",
            ),
            (
                "gate:\n  threshold: five%\nbenchmarks:\n  - name: a\n    command: ./a\n",
                "kgate.yaml:2:14: key `gate.threshold`: `five%` is not a percentage; write a number followed by `%`, such as `5%`",
            ),
            (
                "benchmarks:\n  - name: a\n    command: ./a\n    metrics:\n      t: {direction: up}\n",
                "kgate.yaml:5:22: key `benchmarks[0].metrics.t.direction`: unknown variant `up`, expected one of lower, higher",
            ),
            (
                "benchmarks:\n  - name: a\n    command: ./a\n    captures: [stopwatch]\n",
                "kgate.yaml:4:16: key `benchmarks[0].captures[0]`: unknown variant `stopwatch`, expected one of timer, protocol, perf, callgrind, cachegrind",
            ),
            (
                "benchmarks:\n  - name: a\n    command: []\n",
                "kgate.yaml:3:14: key `benchmarks[0].command`: the argument list is empty; its first item is the program to run",
            ),
            (
                "benchmarks:\n  - name: a\n",
                "kgate.yaml:2:5: key `benchmarks[0]`: missing field `command`",
            ),
            (
                "benchmarks:\n  - name: a\n    command: ./a\n  - name: a\n    command: ./b\n",
                "kgate.yaml:2: key `benchmarks[1].name`: duplicate benchmark name `a`; names identify benchmarks across runs and must be unique",
            ),
            (
                "benchmarks:\n  - name: a\n    command: ./a\n    repetitions: {min: 10, max: 3}\n",
                "kgate.yaml:2: key `benchmarks[0].repetitions`: max (3) is smaller than min (10); max is the most repetitions to run",
            ),
            (
                "benchmarks:\n  - name: a\n    command: ./a\n    captures: [cachegrind]\n    valgrind: {toggle_collect: 'k::*'}\n",
                "kgate.yaml:2: key `benchmarks[0].valgrind.toggle_collect`: `toggle_collect` restricts callgrind's counting to a function, and this benchmark has no `callgrind` capture",
            ),
            (
                "benchmarks: []\n",
                "kgate.yaml:1: key `benchmarks`: no benchmarks are declared; add at least one entry with `name` and `command`",
            ),
            (
                "version: 2\nbenchmarks:\n  - name: a\n    command: ./a\n",
                "kgate.yaml:1: key `version`: unsupported version 2; this kgate reads version 1",
            ),
            (
                "benchmarks:\n  - name: a\n    command: ./a\n    captures: [perf, cachegrind]\n",
                "kgate.yaml:2: key `benchmarks[0].captures`: `perf`, `callgrind`, `cachegrind` and `ncu` each run the benchmark under a tool; list at most one of them per benchmark",
            ),
            (
                "benchmarks:\n  - name: a\n    command: ./a\n    captures: [timer, ncu, callgrind]\n",
                "kgate.yaml:2: key `benchmarks[0].captures`: `perf`, `callgrind`, `cachegrind` and `ncu` each run the benchmark under a tool; list at most one of them per benchmark",
            ),
            (
                "defaults: {captures: [perf, cachegrind]}\nbenchmarks:\n  - name: a\n    command: ./a\n",
                "kgate.yaml:1: key `defaults.captures`: `perf`, `callgrind`, `cachegrind` and `ncu` each run the benchmark under a tool; list at most one of them per benchmark",
            ),
            (
                "benchmarks:\n  - name: a\n    command: ./a\n    derived:\n      r: {expr: \"Ir / / Dr\"}\n",
                "kgate.yaml:5: key `benchmarks[0].derived.r.expr`: derived metric `r`: `Ir / / Dr` is not a valid expression",
            ),
            (
                "gate: {alpha: 0.7}\nbenchmarks:\n  - name: a\n    command: ./a\n",
                "kgate.yaml:1: key `gate.alpha`: 0.7 is not a usable significance level; use a value between 0 and 0.5, such as 0.01",
            ),
        ];
        for (yaml, expected) in cases {
            let message = err(yaml);
            let first = message.lines().next().unwrap();
            assert!(
                first.starts_with(expected),
                "config:\n{yaml}\nexpected first line to start with:\n  {expected}\ngot:\n  {message}"
            );
        }
    }

    #[test]
    fn messages_carry_a_hint_and_the_offending_line() {
        let message = err("benchmarks:\n  - name: a\n    command: ./a\n    warmup: lots\n");
        assert!(
            message.contains("hint: `warmup` is a whole number"),
            "{message}"
        );
        assert!(message.contains("   4 |     warmup: lots"), "{message}");
    }

    #[test]
    fn starter_config_is_valid() {
        let c = parse(STARTER, "kgate.yaml").unwrap();
        assert_eq!(c.benchmarks.len(), 1);
    }
}
