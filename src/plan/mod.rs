//! The plan: a configuration resolved into exactly what will be executed.
//!
//! As in ripgrep's split of low-level flags from a high-level plan, the configuration and the
//! command-line overrides are merged once, here, into plain data: every default applied, every
//! path made concrete, every build step deduplicated. The runner then only executes.

pub mod declared;
pub mod selection;
pub mod shard;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::config::{
    BenchmarkConfig, CaptureKind, CommandSpec, Config, GatePolicy, MetricConfig, Repetitions,
};
use crate::model::metric::{Direction, GateRule, Source};

/// Default warm-up runs.
pub const DEFAULT_WARMUP: u32 = 1;
/// Default measured repetitions.
pub const DEFAULT_REPETITIONS: u32 = 10;
/// Default per-run timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// Time limit for a build step.
pub const BUILD_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// Everything a run will do.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Distinct build steps, run once per revision before the benchmarks.
    pub builds: Vec<BuildStep>,
    /// Benchmarks in configuration order.
    pub benchmarks: Vec<BenchmarkPlan>,
    /// The gate policy.
    pub policy: GatePolicy,
}

/// A build step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildStep {
    pub command: CommandSpec,
    /// Working directory relative to the revision's root.
    pub cwd: PathBuf,
}

/// One benchmark, fully resolved.
#[derive(Debug, Clone)]
pub struct BenchmarkPlan {
    pub name: String,
    pub command: CommandSpec,
    /// Working directory relative to the revision's root (the configuration's folder).
    pub cwd: PathBuf,
    pub env: BTreeMap<String, String>,
    /// Variables of kgate's environment passed through (see `pass_env` in the configuration).
    pub pass_env: Vec<String>,
    pub warmup: u32,
    pub repetitions: Repetitions,
    pub timeout: Duration,
    pub captures: Vec<CaptureKind>,
    pub parameters: BTreeMap<String, String>,
    /// Index into [`Plan::builds`] of the step this benchmark needs.
    pub build: Option<usize>,
    pub metrics: MetricPolicy,
    /// Events of the `perf` capture.
    pub perf_events: Vec<String>,
    /// callgrind's `--toggle-collect` pattern.
    pub toggle_collect: Option<String>,
    /// Derived metrics: the built-ins, then the configuration's.
    pub derived: Vec<crate::config::derived::Definition>,
    /// Artifact files to keep after the last repetition, relative to `cwd`.
    pub artifacts: BTreeMap<String, PathBuf>,
    /// Settings of the `ncu` capture.
    pub ncu: crate::config::NcuConfig,
    /// Device profile for counter normalization (`device:` in the configuration).
    pub device: Option<crate::config::device::DeviceProfile>,
    /// How the benchmark samples counters.
    pub counters: crate::config::CounterSampling,
    /// Counter passes planned from `counters.request` and the profile's counters per pass.
    pub counter_passes: Vec<Vec<String>>,
    /// Measured in the head revision only: the base revision's configuration does not declare
    /// it (`kgate check --against`), so there is nothing there to compare with.
    pub head_only: bool,
    /// What the benchmark's performance depends on (`identity:`), hashed on each side.
    pub identity: Option<crate::config::Identity>,
    /// The base revision's own declaration of this benchmark ([`BenchmarkPlan::description`]
    /// of its plan), set where `check --against` may skip identical code; None: always measured.
    pub base_description: Option<String>,
    /// XProf's TPU sampling options of each counter pass (empty off a TPU profile).
    pub sampling: crate::config::tpu_sampling::PassOptions,
}

impl BenchmarkPlan {
    /// Everything declared about the benchmark that can change what it measures, as text for
    /// its identity digest: its command, working directory, environment, repetitions, captures,
    /// metric rules, device and identity itself (not which side it runs on).
    pub fn description(&self) -> String {
        let mut plain = self.clone();
        plain.head_only = false;
        plain.base_description = None;
        format!("{plain:?}")
    }

    /// Environment of counter pass of `repetition` (empty without requested counters).
    pub fn counter_env(&self, repetition: u32) -> Vec<(String, String)> {
        if self.counter_passes.is_empty() {
            return Vec::new();
        }
        let k = repetition as usize % self.counter_passes.len();
        let mut env = vec![
            (crate::model::protocol::PASS_ENV.into(), k.to_string()),
            (
                crate::model::protocol::COUNTERS_ENV.into(),
                self.counter_passes[k].join(","),
            ),
        ];
        if let Some(Some(options)) = self.sampling.options.get(k) {
            env.push((
                crate::model::protocol::TPU_SAMPLING_ENV.into(),
                options.clone(),
            ));
        }
        env
    }
}

/// Overrides from the command line.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// Only these benchmarks (exact names); empty means all.
    pub only: Vec<String>,
    /// Replace every benchmark's repetitions.
    pub repetitions: Option<u32>,
    /// Replace every benchmark's warm-up count.
    pub warmup: Option<u32>,
    /// Skip build steps.
    pub no_build: bool,
}

/// A benchmark named on the command line does not exist.
#[derive(Debug, thiserror::Error)]
#[error("no benchmark named `{name}`; the configuration declares: {known}")]
pub struct UnknownBenchmark {
    pub name: String,
    pub known: String,
}

impl Plan {
    /// Resolves a configuration and the command-line overrides.
    pub fn new(config: &Config, overrides: &Overrides) -> Result<Plan, UnknownBenchmark> {
        for name in &overrides.only {
            if !config.benchmarks.iter().any(|b| &b.name == name) {
                return Err(UnknownBenchmark {
                    name: name.clone(),
                    known: config
                        .benchmarks
                        .iter()
                        .map(|b| b.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            }
        }
        let mut builds: Vec<BuildStep> = Vec::new();
        let mut build_index = |step: BuildStep| -> usize {
            match builds.iter().position(|b| *b == step) {
                Some(i) => i,
                None => {
                    builds.push(step);
                    builds.len() - 1
                }
            }
        };
        let global_build = match (&config.build, overrides.no_build) {
            (Some(cmd), false) => Some(build_index(BuildStep {
                command: cmd.clone(),
                cwd: PathBuf::from("."),
            })),
            _ => None,
        };
        let mut benchmarks = Vec::new();
        for b in &config.benchmarks {
            if !overrides.only.is_empty() && !overrides.only.contains(&b.name) {
                continue;
            }
            let cwd = b.cwd.clone().unwrap_or_else(|| PathBuf::from("."));
            let build = match (&b.build, overrides.no_build) {
                (Some(cmd), false) => Some(build_index(BuildStep {
                    command: cmd.clone(),
                    cwd: cwd.clone(),
                })),
                _ => global_build,
            };
            benchmarks.push(resolve_benchmark(config, b, cwd, build, overrides));
        }
        Ok(Plan {
            builds,
            benchmarks,
            policy: config.gate.clone(),
        })
    }
}

fn resolve_benchmark(
    config: &Config,
    b: &BenchmarkConfig,
    cwd: PathBuf,
    build: Option<usize>,
    overrides: &Overrides,
) -> BenchmarkPlan {
    let d = &config.defaults;
    let mut repetitions = b
        .repetitions
        .or(d.repetitions)
        .unwrap_or(Repetitions::number(DEFAULT_REPETITIONS));
    if let Some(n) = overrides.repetitions {
        repetitions = Repetitions {
            written: crate::config::RepetitionsForm::Flag,
            ..Repetitions::number(n)
        };
    }
    let captures = b
        .captures
        .clone()
        .or_else(|| d.captures.clone())
        .unwrap_or_else(|| vec![CaptureKind::Timer]);
    // Simulated counts are identical on every run: one repetition per side, whatever the
    // repetitions asked for (by the benchmark, the defaults or `--repetitions`), and no warm-up
    // unless the benchmark asks for one. More would only multiply the capture's cost.
    let deterministic_only = captures.iter().all(|c| c.deterministic());
    if deterministic_only {
        repetitions = Repetitions::number(1);
    }
    let default_warmup = if deterministic_only {
        b.warmup.unwrap_or(0)
    } else {
        b.warmup.or(d.warmup).unwrap_or(DEFAULT_WARMUP)
    };
    let mut derived = crate::config::derived::builtins();
    derived.extend(
        b.derived
            .iter()
            .map(|(name, c)| crate::config::derived::Definition {
                name: name.clone(),
                expr: c.expr.clone(),
                unit: c.unit.clone(),
                direction: c.direction.unwrap_or_default(),
            }),
    );
    // Checked when the configuration was loaded.
    let device = config
        .device
        .as_ref()
        .and_then(|d| crate::config::device::resolve(d, &config.profiles).ok());
    let counters = b.counters.clone().unwrap_or_default();
    let per_pass = device.as_ref().and_then(|d| d.counters_per_pass.as_ref());
    let per_pass = per_pass.map(|c| c.value as u32);
    let counter_passes = crate::config::device::plan_passes(&counters.request, per_pass);
    let sampling = device
        .as_ref()
        .map(|d| crate::config::tpu_sampling::options(d, &counters, &counter_passes))
        .unwrap_or_default();
    BenchmarkPlan {
        head_only: false,
        identity: b.identity.clone(),
        base_description: None,
        ncu: b.ncu.clone().or_else(|| d.ncu.clone()).unwrap_or_default(),
        name: b.name.clone(),
        command: b.command.clone(),
        cwd,
        env: b.env.clone(),
        pass_env: b.pass_env.clone(),
        warmup: overrides.warmup.unwrap_or(default_warmup),
        repetitions,
        timeout: b
            .timeout
            .or(d.timeout)
            .map(|t| t.0)
            .unwrap_or(DEFAULT_TIMEOUT),
        metrics: MetricPolicy {
            protocol_captured: captures.contains(&CaptureKind::Protocol),
            metrics: b.metrics.clone(),
            threshold: config.gate.threshold.0,
        },
        captures,
        parameters: b.parameters.clone(),
        build,
        perf_events: b
            .perf
            .as_ref()
            .map(|p| p.events.clone())
            .filter(|e| !e.is_empty())
            .unwrap_or_else(|| {
                crate::config::DEFAULT_PERF_EVENTS
                    .iter()
                    .map(|s| s.to_string())
                    .collect()
            }),
        toggle_collect: b.valgrind.as_ref().and_then(|v| v.toggle_collect.clone()),
        derived,
        artifacts: b.artifacts.clone(),
        counter_passes,
        sampling,
        device,
        counters,
    }
}

/// Decides direction, source and gate rule of each metric a benchmark produces.
#[derive(Debug, Clone)]
pub struct MetricPolicy {
    /// Settings from the configuration, by metric name.
    pub metrics: BTreeMap<String, MetricConfig>,
    /// Default threshold from the gate policy.
    pub threshold: f64,
    /// Whether the benchmark reports through the protocol: its own numbers are then the
    /// primary metrics, and process wall time is informational unless listed.
    pub protocol_captured: bool,
}

/// A metric's settings after defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedMetric {
    pub direction: Direction,
    pub rule: GateRule,
    /// The source to record when the measurement itself does not name one.
    pub source: Option<Source>,
}

impl MetricPolicy {
    /// Policy for imports without a configuration: every metric gates, lower is better.
    pub fn permissive(threshold: f64) -> MetricPolicy {
        MetricPolicy {
            metrics: BTreeMap::new(),
            threshold,
            protocol_captured: true,
        }
    }

    /// Settings of metric `name`. A metric listed in the configuration gates unless it says
    /// `gate: false`. An unlisted metric gates when it is the benchmark's own report (protocol)
    /// or, without the protocol, when it is the process wall time.
    pub fn resolve(&self, name: &str, from_protocol: bool) -> ResolvedMetric {
        let listed = self.metrics.get(name);
        let default_gates = listed.is_some() || from_protocol || !self.protocol_captured;
        let cfg = listed.cloned().unwrap_or_default();
        ResolvedMetric {
            direction: cfg.direction.unwrap_or_default(),
            rule: GateRule {
                gates: cfg.gate.unwrap_or(default_gates),
                threshold: cfg.threshold.map(|p| p.0).unwrap_or(self.threshold),
                tolerance: cfg.tolerance.map(|t| t.0),
            },
            source: cfg.source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> Config {
        crate::config::parse(yaml, "k.yaml").unwrap()
    }

    #[test]
    fn defaults_overrides_and_shared_builds() {
        let c = parse(
            "build: make\ndefaults: {repetitions: 7, warmup: 3}\nbenchmarks:\n  - {name: a, command: ./a}\n  - {name: b, command: ./b, build: make, cwd: sub, timeout: 2s}\n  - {name: c, command: ./c, build: make}\n",
        );
        let p = Plan::new(&c, &Overrides::default()).unwrap();
        let differ = "`make` at the root and `make` in sub differ";
        assert_eq!(p.builds.len(), 2, "{differ}");
        assert_eq!(p.benchmarks[0].build, Some(0));
        assert_eq!(p.benchmarks[1].build, Some(1));
        assert_eq!(p.benchmarks[2].build, Some(0));
        assert_eq!(p.benchmarks[0].repetitions, Repetitions::number(7));
        assert_eq!(p.benchmarks[0].warmup, 3);
        assert_eq!(p.benchmarks[1].timeout, Duration::from_secs(2));
        assert_eq!(p.benchmarks[0].timeout, DEFAULT_TIMEOUT);

        let o = Overrides {
            only: vec!["b".into()],
            repetitions: Some(2),
            no_build: true,
            ..Overrides::default()
        };
        let p = Plan::new(&c, &o).unwrap();
        assert_eq!(p.benchmarks.len(), 1);
        assert!(p.builds.is_empty());
        assert_eq!(p.benchmarks[0].repetitions.min, 2);

        let only = Overrides {
            only: vec!["zz".into()],
            ..Overrides::default()
        };
        let err = Plan::new(&c, &only).unwrap_err();
        let unknown = "no benchmark named `zz`; the configuration declares: a, b, c";
        assert_eq!(err.to_string(), unknown);
    }

    /// Deterministic counts are the same on every run: one repetition per side, whatever the
    /// benchmark, the defaults or `--repetitions` ask for (before: `--repetitions 40` ran
    /// callgrind 40 times).
    #[test]
    fn deterministic_captures_run_once_whatever_the_repetitions() {
        let c = parse(
            "defaults: {repetitions: 10}\nbenchmarks:\n  - name: c\n    command: ./c\n    captures: [callgrind]\n  - name: g\n    command: ./g\n    captures: [cachegrind]\n    repetitions: 5\n  - name: t\n    command: ./t\n",
        );
        let forty = Overrides {
            repetitions: Some(40),
            ..Overrides::default()
        };
        for overrides in [Overrides::default(), forty] {
            let p = Plan::new(&c, &overrides).unwrap();
            let once = Repetitions::number(1);
            assert_eq!(p.benchmarks[0].repetitions, once);
            assert_eq!(p.benchmarks[1].repetitions, once);
            let timed = overrides.repetitions.unwrap_or(10);
            assert_eq!(p.benchmarks[2].repetitions.min, timed);
        }
    }

    #[test]
    fn wall_time_is_informational_when_the_benchmark_reports_itself() {
        let c = parse(
            "benchmarks:\n  - name: a\n    command: ./a\n    captures: [timer, protocol]\n    metrics:\n      kernel_time: {threshold: 50%, source: timer}\n      flops: {direction: higher, gate: false}\n",
        );
        let p = Plan::new(&c, &Overrides::default()).unwrap();
        let m = &p.benchmarks[0].metrics;
        assert!(!m.resolve("wall_time", false).rule.gates);
        let k = m.resolve("kernel_time", true);
        assert!(k.rule.gates);
        assert_eq!(k.rule.threshold, 0.5);
        assert_eq!(k.source, Some(Source::Timer));
        let f = m.resolve("flops", true);
        assert!(!f.rule.gates);
        assert_eq!(f.direction, Direction::Higher);
        assert!(m.resolve("other", true).rule.gates);

        let c = parse("benchmarks:\n  - {name: a, command: ./a}\n");
        let p = Plan::new(&c, &Overrides::default()).unwrap();
        let wall_time = p.benchmarks[0].metrics.resolve("wall_time", false);
        assert!(wall_time.rule.gates);
    }
}
