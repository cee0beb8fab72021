//! `kgate import`: results from files written where kgate did not run the benchmark.
//!
//! Offline import lets the gate work where a profiler or harness ran elsewhere (a GPU box, a
//! cluster job). One submodule per format; each ends in the same [`Collector`] as a live run,
//! so units, sources and gate rules are resolved identically.
//!
//! [`Collector`]: crate::capture::Collector

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::config::CaptureKind;
use crate::plan::MetricPolicy;
use crate::protocol::ProtocolError;
use crate::results::{BenchmarkResult, RESULTS_SCHEMA_VERSION, RunResults};

pub mod builder;
pub mod chrome_trace;
pub mod counters;
pub mod criterion;
mod decimal;
pub mod device;
pub mod gbench;
pub mod hyperfine;
mod json_scan;
pub mod ncu;
pub mod protocol;
pub mod proton;
pub mod pytest_benchmark;
pub mod rocprof;
pub mod trace;
pub mod xplane;
mod xplane_proto;

/// Import formats (the names of DESIGN.md's contract).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ImportFormat {
    /// kgate protocol JSON lines.
    Protocol,
    /// Linux `perf stat` output (`-x,` CSV, `-j` JSON, or the human-readable default).
    PerfStat,
    /// Valgrind callgrind output files.
    Callgrind,
    /// Valgrind cachegrind output files.
    Cachegrind,
    /// Nsight Compute `--csv` output, details or raw page (plus optional `ncu --version` text).
    Ncu,
    /// rocprof v1 results and counter CSV, rocprofv2 (Omniperf) and rocprofv3 counter CSV.
    Rocprof,
    /// Triton Proton hatchet JSON.
    Proton,
    /// google/benchmark JSON.
    Gbench,
    /// pytest-benchmark JSON.
    PytestBenchmark,
    /// hyperfine `--export-json` output.
    Hyperfine,
    /// Criterion.rs `estimates.json` (with `sample.json` beside it when present).
    Criterion,
    /// Chrome Trace Event Format JSON (`.json`, `.json.gz`): Kineto, XProf, Perfetto JSON.
    ChromeTrace,
    /// XProf / TensorFlow profiler XSpace protobuf (`*.xplane.pb`).
    Xplane,
}

impl ImportFormat {
    /// Whether the format takes a kernel selection (`--kernel`, `--pid`, `--tid`).
    pub fn is_trace(self) -> bool {
        matches!(self, ImportFormat::ChromeTrace | ImportFormat::Xplane)
    }
}

/// Import errors.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error(transparent)]
    Protocol(#[from] ProtocolError),
    #[error("cannot read `{path}`: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file was read but its content is wrong; `message` says where and how to fix it.
    #[error("`{path}`: {message}")]
    Content { path: PathBuf, message: String },
}

/// Metric settings for imported benchmarks: from the configuration by benchmark name, else a
/// fallback in which every metric gates.
#[derive(Debug, Clone)]
pub struct Policies {
    by_benchmark: BTreeMap<String, MetricPolicy>,
    fallback: MetricPolicy,
}

impl Policies {
    pub fn new(by_benchmark: BTreeMap<String, MetricPolicy>, fallback: MetricPolicy) -> Policies {
        Policies {
            by_benchmark,
            fallback,
        }
    }

    /// The policy for a benchmark name.
    pub fn for_benchmark(&self, name: &str) -> &MetricPolicy {
        self.by_benchmark.get(name).unwrap_or(&self.fallback)
    }
}

/// Imports files of one format.
pub fn import(
    format: ImportFormat,
    files: &[PathBuf],
    policies: &Policies,
) -> Result<RunResults, ImportError> {
    match format {
        ImportFormat::Protocol => protocol::import(files, policies),
        ImportFormat::PerfStat => counters::import(CaptureKind::Perf, files, policies),
        ImportFormat::Callgrind => counters::import(CaptureKind::Callgrind, files, policies),
        ImportFormat::Cachegrind => counters::import(CaptureKind::Cachegrind, files, policies),
        ImportFormat::Ncu => ncu::import(files, policies),
        ImportFormat::Rocprof => rocprof::import(files, policies),
        ImportFormat::Proton => proton::import(files, policies),
        ImportFormat::Gbench => gbench::import(files, policies),
        ImportFormat::PytestBenchmark => pytest_benchmark::import(files, policies),
        ImportFormat::Hyperfine => hyperfine::import(files, policies),
        ImportFormat::Criterion => criterion::import(files, policies),
        ImportFormat::ChromeTrace | ImportFormat::Xplane => {
            import_trace(format, files, policies, &trace::TraceSelection::default())
        }
    }
}

/// Imports profiler traces with a kernel selection (formats for which `is_trace` holds).
pub fn import_trace(
    format: ImportFormat,
    files: &[PathBuf],
    policies: &Policies,
    selection: &trace::TraceSelection,
) -> Result<RunResults, ImportError> {
    match format {
        ImportFormat::ChromeTrace => chrome_trace::import(files, policies, selection),
        ImportFormat::Xplane => xplane::import(files, policies, selection),
        other => import(other, files, policies),
    }
}

/// Wraps imported benchmarks in a results file whose environment is the device the files
/// name ([`device::Device::environment`]), never this machine's accelerator.
pub fn run_results(benchmarks: Vec<BenchmarkResult>, device: &device::Device) -> RunResults {
    RunResults {
        schema_version: RESULTS_SCHEMA_VERSION,
        kgate_version: env!("CARGO_PKG_VERSION").to_string(),
        created: crate::results::now_rfc3339(),
        environment: device.environment(Path::new(".")),
        benchmarks,
    }
}
