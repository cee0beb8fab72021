//! `kgate.yaml`: the benchmark declarations and the gate policy, and their loading.
//!
//! The configuration is the user's main interface, so a mistake in it must be answered with the
//! file, line, column and key at fault and with what was expected there. Parsing goes through
//! serde-saphyr (pure Rust, maintained; serde_yaml is deprecated) with `serde_path_to_error` to
//! recover the key path; checks that types cannot express (duplicate names, `min <= max`) run
//! afterwards and are located with spans.

pub mod derived;
pub mod device;
mod load;
mod starter;
pub mod tpu_sampling;
mod values;

use std::collections::BTreeMap;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use load::{ConfigError, LoadedConfig, load, parse, root_of};
pub use starter::STARTER;
use values::scalar_text_map;
pub use values::{CommandSpec, DurationSpec, Percent, Repetitions, RepetitionsForm, ToleranceSpec};

use crate::model::metric::{Direction, Source};

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
    /// Measured repetitions: a number, or `{min, max}` (default 10). Benchmarks whose captures
    /// are all deterministic (callgrind, cachegrind) run once per side whatever this says.
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
    /// What follows a regression verdict: `report` (default: the verdict only) or `profile`
    /// (each regressed benchmark runs once more per side under a deeper capture, and what
    /// changed per function or counter is attached to the report).
    #[serde(default)]
    pub on_regression: OnRegression,
    /// Wall-clock budget of the profiling runs of `on_regression: profile`, such as `5m`
    /// (default `5m`); a benchmark left when it is spent is skipped with a note.
    #[serde(default)]
    pub profile_budget: Option<DurationSpec>,
}

/// What `kgate check` does after a regression verdict (`gate.on_regression`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum OnRegression {
    /// Report the verdict only.
    #[default]
    Report,
    /// Profile each regressed benchmark once per side and attach what changed.
    Profile,
}

/// Default of `gate.profile_budget`.
pub const DEFAULT_PROFILE_BUDGET: std::time::Duration = std::time::Duration::from_secs(300);

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
            on_regression: OnRegression::Report,
            profile_budget: None,
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
    /// Variables of kgate's own environment to pass to the benchmark under `callgrind` and
    /// `cachegrind` (which start the command from an empty environment so that counts
    /// reproduce): what the command needs, such as `HOME`, `LD_LIBRARY_PATH` or `VIRTUAL_ENV`.
    /// The runner's credentials (`GITHUB_TOKEN`, `CI_JOB_TOKEN`, `KGATE_GITLAB_TOKEN`, …) are
    /// never passed, named here or not: the configuration comes with the change under test.
    #[serde(default)]
    pub pass_env: Vec<String>,
    /// Warm-up runs discarded before measuring.
    pub warmup: Option<u32>,
    /// Measured repetitions: a number, or `{min, max}`. A benchmark whose captures are all
    /// deterministic (callgrind, cachegrind) runs once per side whatever this says.
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
    /// What the benchmark's performance depends on (built kernels, their disassembly, sources).
    /// With `kgate check --against`, a benchmark whose digest is the same on both sides is
    /// `identical` and not measured; see docs/configuration.md.
    pub identity: Option<Identity>,
}

/// What a benchmark's performance depends on. Its digest also covers the benchmark's own
/// declaration (command, settings, captures, metrics) and the runner class, so a change to any
/// of those is measured.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Identity {
    /// Files whose bytes are hashed: paths or globs relative to the benchmark's working
    /// directory (`build/libk.so`, `src/kernels/*.cu`, `~/.triton/cache/**/*.cubin` is not
    /// allowed: paths stay inside the revision). A glob that matches nothing is an error.
    #[serde(default)]
    pub files: Vec<String>,
    /// Commands whose standard output is hashed, run with `sh -c` in the benchmark's working
    /// directory after the revision's build: `cuobjdump -sass build/libk.so`,
    /// `objdump -d --disassemble=matmul ./bench`. A command that fails is an error.
    #[serde(default)]
    pub commands: Vec<String>,
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
    /// Right-shift bits the device applied to every sample (0–63, default 0); on a TPU
    /// profile also XProf's `scaling` sampling option.
    #[serde(default)]
    pub scaling: u8,
    /// TPU only: XProf's `interval_us`, the periodic sampling period in microseconds (at
    /// least 1; default 1, the period of XProf's kernel profiling). Passed to the benchmark in
    /// `KGATE_TPU_COUNTER_SAMPLING_OPTIONS`.
    #[serde(default)]
    pub interval_us: Option<u32>,
    /// TPU only: sample at XProf's external trigger (custom-call boundaries) instead of every
    /// interval (XProf's `is_external_trigger`); excludes `interval_us`.
    #[serde(default)]
    pub external_trigger: bool,
    /// TPU only: XProf's `counter_size_bits`, a width code 0–3 for 8, 16, 32 or 64-bit
    /// counters (2^(code+3) bits; default 3).
    #[serde(default)]
    pub counter_size_bits: Option<u8>,
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
        !matches!(self, CaptureKind::Timer | CaptureKind::Protocol)
    }

    /// Whether the capture's numbers are deterministic (Valgrind's simulation).
    pub fn deterministic(self) -> bool {
        matches!(self, CaptureKind::Callgrind | CaptureKind::Cachegrind)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::model::metric::Tolerance;

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
            Some(Repetitions {
                min: 10,
                max: 30,
                step: None,
                written: RepetitionsForm::Range
            })
        );
        assert_eq!(c.gate.threshold, Percent(0.025));
        let b = &c.benchmarks[0];
        assert_eq!(b.repetitions, Some(Repetitions::number(5)));
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
        #[rustfmt::skip]
        let cases: &[(&str, &str)] = &[
            ("benchmarks:\n  - name: a\n    command: ./a\n    wormup: 3\n",
             "kgate.yaml:4:5: key `benchmarks[0].wormup`: unknown field `wormup` (did you mean `warmup`?); the fields here are name, command, build, cwd, env, pass_env, warmup, repetitions, timeout, captures, parameters, metrics, perf, valgrind, derived, paths, artifacts, ncu, counters"),
            ("benchmarks:\n  - name: a\n    command: ./a\n    env: {\"A\\0B\": x}\n",
             "kgate.yaml:4: key `benchmarks[0].env`: `A\\0B` cannot name an environment variable: names hold neither `=` nor a NUL character"),
            ("benchmarks:\n  - name: a\n    command: ./a\n    env: {A: \"x\\0y\"}\n",
             "kgate.yaml:4: key `benchmarks[0].env.A`: the value holds a NUL character, which no environment variable can carry"),
            ("benchmarks:\n  - name: a\n    command: ./a\n  - name: ab\n    command: ./b\n  - name: a\n    command: ./c\n",
             "kgate.yaml:6: key `benchmarks[2].name`: duplicate benchmark name `a`; names identify benchmarks across runs and must be unique"),
            ("benchmarks:\n  - name: a\n    command: ./a\n    name: b\n",
             "kgate.yaml:4:5: key `benchmarks[0]`: the key `name` appears twice in the same mapping; keep one of them"),
            ("benchmarks:\n  - name: a\n    command: ./a\n---\nbenchmarks: []\n",
             "kgate.yaml:5:1: the file holds more than one YAML document (a `---` line between them); kgate reads one: merge them or remove the second"),
            (&format!("benchmarks:\n  - name: a\n    command: ./a\n    parameters: {{p: &a x}}\n  - name: b\n    command: [{}]\n",
                      vec!["*a"; 60_000].join(",")),
             "kgate.yaml:6:150015: key `benchmarks[1].command`: the file expands to more than a configuration can hold (too many alias references (`*name`)); write the values out, or use fewer YAML aliases"),
            ("benchmarks:\n  - name: a\n    command: ./a\n    pass_env: [\"HOME=x\"]\n",
             "kgate.yaml:4: key `benchmarks[0].pass_env`: `HOME=x` cannot name an environment variable: names hold neither `=` nor a NUL character"),
            ("benchmarks:\n  - name: a\n    command: ./a\n    warmup: lots\n",
             "kgate.yaml:4:13: key `benchmarks[0].warmup`: must be a whole number, 0 or more"),
            ("benchmarks:\n  - name: a\n    command: ./a\n    timeout: 30\n",
             "kgate.yaml:4:14: key `benchmarks[0].timeout`: `30` has no unit; write `30s` for seconds or `30ms` for milliseconds"),
            ("benchmarks:\n  - name: a\n    command: ./a\n    timeout: 3 parsecs\n",
             "kgate.yaml:4:14: key `benchmarks[0].timeout`: `3 parsecs` is not a duration"),
            ("gate:\n  threshold: 5\nbenchmarks:\n  - name: a\n    command: ./a\n",
             "kgate.yaml:2:14: key `gate.threshold`: `5` is ambiguous; write a percentage with a percent sign, such as `5%`"),
            ("gate:\n  threshold: 0.05\nbenchmarks:\n  - name: a\n    command: ./a\n",
             "kgate.yaml:2:14: key `gate.threshold`: `0.05` is ambiguous; write a percentage with a percent sign: `5%` if you meant the fraction 0.05, or `0.05%`"),
            ("gate:\n  threshold: five%\nbenchmarks:\n  - name: a\n    command: ./a\n",
             "kgate.yaml:2:14: key `gate.threshold`: `five%` is not a percentage; write a number followed by `%`, such as `5%`"),
            ("benchmarks:\n  - name: a\n    command: ./a\n    metrics:\n      t: {direction: up}\n",
             "kgate.yaml:5:22: key `benchmarks[0].metrics.t.direction`: `up` is not one of lower, higher"),
            ("benchmarks:\n  - name: a\n    command: ./a\n    captures: [stopwatch]\n",
             "kgate.yaml:4:16: key `benchmarks[0].captures[0]`: `stopwatch` is not one of timer, protocol, perf, callgrind, cachegrind"),
            ("benchmarks:\n  - name: a\n    command: []\n",
             "kgate.yaml:3:14: key `benchmarks[0].command`: the argument list is empty; its first item is the program to run"),
            ("benchmarks:\n  - name: a\n",
             "kgate.yaml:2:5: key `benchmarks[0]`: missing field `command`"),
            ("benchmarks:\n  - name: a\n    command: ./a\n  - name: a\n    command: ./b\n",
             "kgate.yaml:4: key `benchmarks[1].name`: duplicate benchmark name `a`; names identify benchmarks across runs and must be unique"),
            ("benchmarks:\n  - name: a\n    command: ./a\n    repetitions: {min: 10, max: 3}\n",
             "kgate.yaml:2: key `benchmarks[0].repetitions`: max (3) is smaller than min (10); max is the most repetitions to run"),
            ("benchmarks:\n  - name: a\n    command: ./a\n    captures: [cachegrind]\n    valgrind: {toggle_collect: 'k::*'}\n",
             "kgate.yaml:2: key `benchmarks[0].valgrind.toggle_collect`: `toggle_collect` restricts callgrind's counting to a function, and this benchmark has no `callgrind` capture"),
            ("benchmarks: []\n",
             "kgate.yaml:1: key `benchmarks`: no benchmarks are declared; add at least one entry with `name` and `command`"),
            ("version: 2\nbenchmarks:\n  - name: a\n    command: ./a\n",
             "kgate.yaml:1: key `version`: unsupported version 2; this kgate reads version 1"),
            ("benchmarks:\n  - name: a\n    command: ./a\n    captures: [perf, cachegrind]\n",
             "kgate.yaml:2: key `benchmarks[0].captures`: `perf`, `callgrind`, `cachegrind` and `ncu` each run the benchmark under a tool; list at most one of them per benchmark"),
            ("benchmarks:\n  - name: a\n    command: ./a\n    captures: [timer, ncu, callgrind]\n",
             "kgate.yaml:2: key `benchmarks[0].captures`: `perf`, `callgrind`, `cachegrind` and `ncu` each run the benchmark under a tool; list at most one of them per benchmark"),
            ("defaults: {captures: [perf, cachegrind]}\nbenchmarks:\n  - name: a\n    command: ./a\n",
             "kgate.yaml:1: key `defaults.captures`: `perf`, `callgrind`, `cachegrind` and `ncu` each run the benchmark under a tool; list at most one of them per benchmark"),
            ("benchmarks:\n  - name: a\n    command: ./a\n    derived:\n      r: {expr: \"Ir / / Dr\"}\n",
             "kgate.yaml:5: key `benchmarks[0].derived.r.expr`: derived metric `r`: `Ir / / Dr` is not a valid expression"),
            ("gate: {alpha: 0.7}\nbenchmarks:\n  - name: a\n    command: ./a\n",
             "kgate.yaml:1: key `gate.alpha`: 0.7 is not a usable significance level; use a value between 0 and 0.5, such as 0.01"),
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
        assert_contains!(message, "hint: `warmup` is a whole number");
        assert_contains!(message, "   4 |     warmup: lots");
    }

    #[test]
    fn starter_config_is_valid() {
        let c = parse(STARTER, "kgate.yaml").unwrap();
        assert_eq!(c.benchmarks.len(), 1);
    }
}
