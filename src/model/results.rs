//! Run results: the versioned JSON that `kgate run` and `kgate import` write.
//!
//! These structs are the file format (the JSON Schema in `schemas/` is generated from them), in
//! the manner of hyperfine's `BenchmarkResult`: one doc comment per field, nothing hidden.
//! Each metric carries its unit, source, direction and gate rule, so a comparison needs nothing
//! but two result files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::machine::fingerprint::Fingerprint;
use crate::model::fsutil::{self, Overwrite};
use crate::model::metric::{Direction, GateRule, Source};
use crate::model::protocol::{CounterLine, KernelLine};
pub use crate::model::repetition_numbers::{RepetitionNumbers, RepetitionRun};

/// Version of the results format; bumped on incompatible changes. Version 2 stores counter
/// readings as series (a counter's name once, then its times and values); version 1 files,
/// one object per reading, are still read (see [`RunResults::load`]).
pub const RESULTS_SCHEMA_VERSION: u32 = 2;

/// The most bytes of a results file or report read from a pipe or a device (a regular file is
/// read a piece at a time, without a bound): far above any real one, and a bound for a stream
/// without end.
pub const STREAM_MAX_BYTES: u64 = 1 << 32;

/// Everything one run measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunResults {
    /// Results format version.
    pub schema_version: u32,
    /// Version of kgate that wrote the file.
    pub kgate_version: String,
    /// When the run started (RFC 3339, UTC).
    pub created: String,
    /// The machine, software and revision the numbers were measured on.
    pub environment: Fingerprint,
    /// One entry per benchmark, in configuration order.
    pub benchmarks: Vec<BenchmarkResult>,
}

/// One benchmark's measurements.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BenchmarkResult {
    /// Benchmark name.
    pub name: String,
    /// Parameters declared in the configuration (shape, dtype).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub parameters: BTreeMap<String, String>,
    /// Whether every repetition completed.
    pub status: Status,
    /// Why the benchmark failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<Failure>,
    /// The outcome of the benchmark's correctness check, when it reported one (a protocol
    /// `{"correct": …}` line, a CUTLASS `Disposition`): a candidate that failed it gets the
    /// verdict `incorrect` whatever its speed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correctness: Option<Correctness>,
    /// Warm-up runs performed and discarded.
    pub warmup: u32,
    /// Measured repetitions completed.
    pub repetitions: u32,
    /// Metrics, each with one value per sample.
    pub metrics: Vec<MetricSamples>,
    /// Raw counter readings: one series per counter and repetition, in order of each series'
    /// first reading.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub counters: Vec<CounterSeries>,
    /// Kernel windows (reported through the protocol, or a trace's launches): one entry per
    /// kernel and repetition.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kernel_windows: Vec<KernelWindows>,
    /// How the numbers were captured.
    pub provenance: Provenance,
    /// Text files the benchmark wrote (lowered IR, PTX, MLIR), by the name the configuration
    /// gives them; each is capped at [`ARTIFACT_MAX_BYTES`].
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub artifacts: BTreeMap<String, Artifact>,
    /// The interim analyses of an adaptive interleaved run, in order: after how many
    /// repetitions per side each look was taken and what it found. Empty when the repetitions
    /// were fixed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub looks: Vec<Look>,
    /// The digest of what the benchmark's performance depends on (`identity:`), taken in this
    /// side's tree after its build (hex SHA-256). A benchmark with a digest and no metrics was
    /// not measured: the other side's digest was the same (`kgate check --against`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<String>,
    /// The wall time this side spent on the benchmark's runs, where the interleaved runner
    /// timed them: what the report's `cost` adds up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<Seconds>,
}

/// Wall time spent on a benchmark's runs on one side, in seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Seconds {
    /// On warm-up runs.
    pub warmup: f64,
    /// On measured repetitions.
    pub repetitions: f64,
}

/// One interim analysis of an adaptive run (see `inference::LookPlan`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Look {
    /// Repetitions per side at this look.
    pub n: u32,
    /// Number of looks planned.
    pub of: u32,
    /// The nominal one-sided level every look of the plan is tested at, for the gate's alpha
    /// and a family of one: the plan's boundary (alpha / looks for a plan recorded without a
    /// `schedule`).
    pub alpha: f64,
    /// The benchmark's verdict at this look (`inconclusive` means more repetitions followed,
    /// unless this was the last look or the time budget ran out).
    pub verdict: crate::model::verdict::Verdict,
    /// When the looks were planned: after `min`, `min + step`, … `max` repetitions per side,
    /// all against one boundary that holds alpha over the whole plan (docs/statistics.md).
    /// Absent in results written before looks had a schedule: those split alpha equally.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<crate::stats::inference::Schedule>,
}

/// The most bytes of one artifact kept in the results; the rest is cut at a line boundary.
pub const ARTIFACT_MAX_BYTES: usize = 256 * 1024;

/// How many counters a refusal of readings without a measurement names.
const COUNTERS_SHOWN: usize = 5;

/// A text file a benchmark wrote, kept so that a comparison can show how it changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Artifact {
    /// The path as declared, relative to the benchmark's working directory.
    pub path: String,
    /// The text (lossily decoded as UTF-8), at most [`ARTIFACT_MAX_BYTES`].
    pub text: String,
    /// Whether the file was longer and `text` holds only its start.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

impl Artifact {
    /// Reads an artifact file, capping it at [`ARTIFACT_MAX_BYTES`] on a line boundary.
    pub fn read(path: &Path, declared: &str) -> std::io::Result<Artifact> {
        let bytes = std::fs::read(path)?;
        let mut text = String::from_utf8_lossy(&bytes).into_owned();
        let truncated = text.len() > ARTIFACT_MAX_BYTES;
        if truncated {
            let mut cut = ARTIFACT_MAX_BYTES;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            let cut = text[..cut].rfind('\n').map(|i| i + 1).unwrap_or(cut);
            text.truncate(cut);
        }
        Ok(Artifact {
            path: declared.to_string(),
            text,
            truncated,
        })
    }
}

impl BenchmarkResult {
    /// Counts the `repetition` numbers the file left out (each value its own repetition) and
    /// hands back the room the reader left at the end of each array (see
    /// [`RunResults::settle`]).
    pub(crate) fn settle(&mut self) {
        self.metrics.shrink_to_fit();
        self.counters.shrink_to_fit();
        self.kernel_windows.shrink_to_fit();
        for m in &mut self.metrics {
            if m.repetition.is_empty() {
                m.repetition = RepetitionNumbers::one_per_value(m.values.len());
            }
            m.values.shrink_to_fit();
            m.repetition.shrink_to_fit();
        }
        for c in &mut self.counters {
            c.t_ns.shrink_to_fit();
            c.value.shrink_to_fit();
        }
        for w in &mut self.kernel_windows {
            w.start_ns.shrink_to_fit();
            w.end_ns.shrink_to_fit();
        }
    }

    /// Refuses arrays that should pair up but differ in length, and kernel windows read
    /// against a benchmark that `holds` says the file does not hold; the message names the
    /// benchmark and the series.
    pub(crate) fn check_series(&self, holds: impl Fn(&str) -> bool) -> Result<(), String> {
        let b = self;
        // A series of one repetition, named for a message: "benchmark `b`, counter `c`
        // (repetition 0)".
        let series = |what: &'static str, name: &str, repetition: u32| {
            format!(
                "benchmark `{}`, {what} `{name}` (repetition {repetition})",
                b.name
            )
        };
        for m in &b.metrics {
            paired(
                || format!("benchmark `{}`, metric `{}`", b.name, m.name),
                (m.values.len(), "value", "values"),
                (
                    m.repetition.len(),
                    "repetition number",
                    "repetition numbers",
                ),
            )?;
        }
        for c in &b.counters {
            paired(
                || series("counter", &c.counter, c.repetition),
                (c.t_ns.len(), "time", "times"),
                (c.value.len(), "value", "values"),
            )?;
        }
        for k in &b.kernel_windows {
            let what = || series("kernel windows of", &k.kernel, k.repetition);
            paired(
                what,
                (k.start_ns.len(), "start", "starts"),
                (k.end_ns.len(), "end", "ends"),
            )?;
            if let Some(of) = &k.counters_of
                && !holds(of.benchmark.as_str())
            {
                return Err(format!(
                    "{} are read against the counters of benchmark `{}`, which the file does not hold; the file was cut or edited: import the trace again",
                    what(),
                    of.benchmark
                ));
            }
        }
        Ok(())
    }

    /// An empty result to be filled by a capture.
    pub fn new(name: &str, provenance: Provenance) -> BenchmarkResult {
        BenchmarkResult {
            name: name.to_string(),
            parameters: BTreeMap::new(),
            status: Status::Ok,
            failure: None,
            correctness: None,
            warmup: 0,
            repetitions: 0,
            metrics: Vec::new(),
            counters: Vec::new(),
            kernel_windows: Vec::new(),
            provenance,
            looks: Vec::new(),
            artifacts: BTreeMap::new(),
            identity: None,
            seconds: None,
        }
    }

    /// Why the benchmark failed (its failure's message, `failed` where none was kept); None
    /// when it did not.
    pub fn failed_because(&self) -> Option<&str> {
        (self.status == Status::Failed).then(|| {
            self.failure
                .as_ref()
                .map(|f| f.message.as_str())
                .unwrap_or("failed")
        })
    }

    /// The metric of that name, if measured.
    pub fn metric(&self, name: &str) -> Option<&MetricSamples> {
        self.metrics.iter().find(|m| m.name == name)
    }

    /// Every counter reading, series by series.
    pub fn counter_readings(&self) -> impl Iterator<Item = CounterReading<'_>> {
        self.counters.iter().flat_map(CounterSeries::readings)
    }
}

/// Where a result's counter series and kernel windows are, by name, so that a reading finds
/// its series without a search through all of them: a protocol file that reads a thousand
/// counters at every timestamp would otherwise compare each reading with a thousand series.
/// One index serves one result, and only readings added through it.
#[derive(Debug, Default)]
pub struct SeriesIndex {
    counters: std::collections::HashMap<String, Vec<usize>>,
    kernels: std::collections::HashMap<String, Vec<usize>>,
}

impl SeriesIndex {
    /// Adds a counter reading (a protocol counter line, read in `repetition`) to its series in
    /// `result`: the latest of that counter, repetition, unit, width, core and sampling, or a
    /// new one.
    pub fn push_counter(
        &mut self,
        result: &mut BenchmarkResult,
        repetition: u32,
        line: &CounterLine,
        sampling: Option<Sampling>,
    ) {
        let series = &mut result.counters;
        let found = self.counters.get(&line.counter).and_then(|candidates| {
            candidates
                .iter()
                .rev()
                .copied()
                .find(|&i| series[i].holds(repetition, line, sampling))
        });
        let i = match found {
            Some(i) => i,
            None => {
                series.push(CounterSeries {
                    unit: line.unit.clone(),
                    bits: line.bits,
                    core: line.core,
                    sampling,
                    ..CounterSeries::new(&line.counter, repetition)
                });
                let i = series.len() - 1;
                self.counters
                    .entry(line.counter.clone())
                    .or_default()
                    .push(i);
                i
            }
        };
        series[i].t_ns.push(line.t_ns);
        series[i].value.push(line.value);
    }

    /// Adds a kernel line, read in `repetition`, to that kernel's windows in the repetition.
    pub fn push_window(&mut self, result: &mut BenchmarkResult, repetition: u32, line: KernelLine) {
        let windows = &mut result.kernel_windows;
        let found = self.kernels.get(&line.kernel).and_then(|candidates| {
            candidates
                .iter()
                .rev()
                .copied()
                .find(|&i| windows[i].repetition == repetition)
        });
        let i = match found {
            Some(i) => i,
            None => {
                windows.push(KernelWindows::new(&line.kernel, repetition));
                let i = windows.len() - 1;
                self.kernels.entry(line.kernel).or_default().push(i);
                i
            }
        };
        windows[i].start_ns.push(line.start_ns);
        windows[i].end_ns.push(line.end_ns);
    }
}

/// Whether a benchmark completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Failed,
}

/// The most characters of a correctness check's detail kept (it is shown in every report).
pub const CORRECTNESS_DETAIL_CHARS: usize = 500;

/// The outcome of a benchmark's correctness check over all its repetitions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Correctness {
    /// Whether every check reported passed; one failed check fails the benchmark.
    pub passed: bool,
    /// What the first failed check said (such as `max abs error 0.5 > 1e-3`), or what a
    /// passed one said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl Correctness {
    /// Adds one check's outcome: any failed check fails the benchmark, and the first failure's
    /// detail is kept.
    pub fn record(slot: &mut Option<Correctness>, passed: bool, detail: Option<String>) {
        let detail = detail.map(|d| match d.char_indices().nth(CORRECTNESS_DETAIL_CHARS) {
            Some((at, _)) => format!("{}…", &d[..at]),
            None => d,
        });
        match slot {
            Some(c) if !c.passed => {}
            Some(c) if passed => {
                if c.detail.is_none() {
                    c.detail = detail;
                }
            }
            _ => *slot = Some(Correctness { passed, detail }),
        }
    }

    /// Whether a check was reported and failed.
    pub fn failed(slot: &Option<Correctness>) -> bool {
        slot.as_ref().is_some_and(|c| !c.passed)
    }
}

/// Why a benchmark failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Failure {
    /// What went wrong.
    pub kind: FailureKind,
    /// A one-line description.
    pub message: String,
    /// The last lines the benchmark wrote to stderr.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stderr_tail: String,
}

/// Kinds of benchmark failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum FailureKind {
    /// The build step failed.
    Build,
    /// The program could not be started.
    Spawn,
    /// It exited with a non-zero status.
    ExitStatus,
    /// It was killed by a signal (a crash).
    Crashed,
    /// It ran past its timeout and its process group was killed.
    Timeout,
    /// Its protocol output was invalid or missing.
    Protocol,
    /// The profiler wrapping it (ncu) failed or wrote no usable output.
    Profiler,
}

/// The samples of one metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MetricSamples {
    /// Metric name.
    pub name: String,
    /// Canonical unit (`ns` for every time).
    pub unit: String,
    /// Where the values come from, on the trust ladder.
    pub source: Source,
    /// Which way is better.
    pub direction: Direction,
    /// How the metric is gated.
    pub gate: GateRule,
    /// One value per sample.
    #[serde(serialize_with = "whole_numbers::values")]
    pub values: Vec<f64>,
    /// The repetition (0-based) each value was measured in; a benchmark may report several
    /// samples per repetition. Left out of the file when each value is its own repetition in
    /// order (value i measured in repetition i, as most captures and every ncu launch are),
    /// and read back as such.
    #[serde(default, skip_serializing_if = "RepetitionNumbers::is_one_per_value")]
    #[schemars(with = "Vec<u32>")]
    pub repetition: RepetitionNumbers,
}

/// Refuses two arrays that pair up element by element (a series' times and values) but
/// differ in length: `what` names them, each side is (length, singular, plural).
fn paired(
    what: impl FnOnce() -> String,
    (a, a_one, a_many): (usize, &str, &str),
    (b, b_one, b_many): (usize, &str, &str),
) -> Result<(), String> {
    use crate::model::text::count;
    if a == b {
        return Ok(());
    }
    Err(format!(
        "{}: {} but {}",
        what(),
        count(a, a_one, a_many),
        count(b, b_one, b_many)
    ))
}

/// One counter's readings in one repetition (see the protocol's counter lines): the name and
/// what describes every reading once, then the readings' times and values as two arrays of
/// one length, in arrival order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CounterSeries {
    /// The counter's name as the benchmark or the trace gave it.
    pub counter: String,
    /// The repetition (0-based) the readings were taken in.
    pub repetition: u32,
    /// The unit the readings were given in, when one was.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub unit: String,
    /// The register's width in bits, for counters that wrap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bits: Option<u8>,
    /// The core (die) the counter belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub core: Option<u32>,
    /// How the file that held the readings samples them, where the file says (an XSpace's
    /// end-of-profile readings are running totals, its `_counters_` samples increments); a
    /// benchmark's `counters.mode` in the configuration overrides it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<Sampling>,
    /// Each reading's time in nanoseconds.
    #[serde(serialize_with = "whole_numbers::values")]
    pub t_ns: Vec<f64>,
    /// Each reading's value, in the same order as `t_ns`.
    #[serde(serialize_with = "whole_numbers::values")]
    pub value: Vec<f64>,
}

impl CounterSeries {
    /// An empty series of a counter in a repetition.
    pub fn new(counter: &str, repetition: u32) -> CounterSeries {
        CounterSeries {
            counter: counter.to_string(),
            repetition,
            unit: String::new(),
            bits: None,
            core: None,
            sampling: None,
            t_ns: Vec::new(),
            value: Vec::new(),
        }
    }

    /// The number of readings.
    pub fn len(&self) -> usize {
        self.t_ns.len().min(self.value.len())
    }

    /// The readings around `windows`, as a series of the windows' repetition: of the readings
    /// in time order, those inside a window plus the one before and the one after each, so
    /// that a launch between two readings is still seen (and reported as unresolved).
    pub fn around(&self, windows: &KernelWindows) -> CounterSeries {
        match self.in_time_order() {
            Some((t_ns, value)) => self.around_sorted(&t_ns, &value, windows),
            None => {
                let n = self.len();
                self.around_sorted(&self.t_ns[..n], &self.value[..n], windows)
            }
        }
    }

    /// The times and values of a series out of time order (a file written elsewhere), put in
    /// order by a stable sort, which keeps readings at one time in their order; `None` for a
    /// series already in order.
    fn in_time_order(&self) -> Option<(Vec<f64>, Vec<f64>)> {
        let n = self.len();
        let (t_ns, value) = (&self.t_ns[..n], &self.value[..n]);
        if t_ns.is_sorted_by(|a, b| a.total_cmp(b).is_le()) {
            return None;
        }
        let mut readings: Vec<(f64, f64)> =
            t_ns.iter().copied().zip(value.iter().copied()).collect();
        readings.sort_by(|a, b| a.0.total_cmp(&b.0));
        Some(readings.into_iter().unzip())
    }

    /// [`CounterSeries::around`] over this series' readings in time order. Each window
    /// keeps a run of readings (found by bisection); the runs are merged, so the cost is that
    /// of the windows and the readings kept, not of the whole series: a trace's counters
    /// benchmark lends one long series to every kernel.
    fn around_sorted(&self, t_ns: &[f64], value: &[f64], windows: &KernelWindows) -> CounterSeries {
        let mut runs: Vec<(usize, usize)> = Vec::new();
        if !t_ns.is_empty() {
            runs = windows
                .windows()
                .map(|(start, end)| {
                    let lo = t_ns.partition_point(|&t| t < start).saturating_sub(1);
                    let hi = t_ns.partition_point(|&t| t <= end).min(t_ns.len() - 1);
                    (lo, hi.max(lo) + 1)
                })
                .collect();
        }
        runs.sort_unstable();
        let mut merged: Vec<(usize, usize)> = Vec::with_capacity(runs.len());
        for (lo, hi) in runs {
            match merged.last_mut() {
                Some(last) if lo <= last.1 => last.1 = last.1.max(hi),
                _ => merged.push((lo, hi)),
            }
        }
        let kept = merged.iter().map(|(lo, hi)| hi - lo).sum();
        let mut series = CounterSeries {
            unit: self.unit.clone(),
            bits: self.bits,
            core: self.core,
            sampling: self.sampling,
            t_ns: Vec::with_capacity(kept),
            value: Vec::with_capacity(kept),
            ..CounterSeries::new(&self.counter, windows.repetition)
        };
        for (lo, hi) in merged {
            series.t_ns.extend_from_slice(&t_ns[lo..hi]);
            series.value.extend_from_slice(&value[lo..hi]);
        }
        series
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The readings, in arrival order.
    pub fn readings(&self) -> impl Iterator<Item = CounterReading<'_>> {
        self.t_ns
            .iter()
            .zip(&self.value)
            .map(move |(&t_ns, &value)| CounterReading {
                counter: &self.counter,
                repetition: self.repetition,
                unit: &self.unit,
                bits: self.bits,
                core: self.core,
                sampling: self.sampling,
                t_ns,
                value,
            })
    }

    /// Whether a reading of this description belongs to this series.
    fn holds(&self, repetition: u32, line: &CounterLine, sampling: Option<Sampling>) -> bool {
        self.repetition == repetition
            && self.counter == line.counter
            && self.unit == line.unit
            && self.bits == line.bits
            && self.core == line.core
            && self.sampling == sampling
    }
}

/// One reading of a series, as a view: what the series says of it, when it was taken and
/// what it read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CounterReading<'a> {
    pub counter: &'a str,
    pub repetition: u32,
    pub unit: &'a str,
    pub bits: Option<u8>,
    pub core: Option<u32>,
    pub sampling: Option<Sampling>,
    pub t_ns: f64,
    pub value: f64,
}

/// How a counter reading was sampled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Sampling {
    /// The running total since the counter was cleared.
    Cumulative,
    /// The increase over the interval that ends at the reading's time.
    Interval,
}

/// One kernel's time windows in one repetition (see the protocol's kernel lines): the kernel's
/// name once, then each launch's start and end as two arrays of one length.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct KernelWindows {
    /// The kernel's name.
    pub kernel: String,
    /// The repetition (0-based) the kernel ran in.
    pub repetition: u32,
    /// Each launch's start in nanoseconds.
    #[serde(serialize_with = "whole_numbers::values")]
    pub start_ns: Vec<f64>,
    /// Each launch's end in nanoseconds, in the same order as `start_ns`.
    #[serde(serialize_with = "whole_numbers::values")]
    pub end_ns: Vec<f64>,
    /// The series these windows are read against when another benchmark holds them (a trace
    /// import's `counters` benchmark); absent, they are this benchmark's own series of
    /// `repetition`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters_of: Option<CountersOf>,
}

/// Where the counter readings of a kernel's windows are: a trace import keeps each reading
/// once, on its `counters` benchmark, instead of a copy on the benchmark of every kernel it
/// was read around. [`RunResults::lent_counters`] gives the readings around the windows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CountersOf {
    /// The benchmark that holds the series.
    pub benchmark: String,
    /// Its repetition the windows' readings are in (the same file of an import).
    pub repetition: u32,
}

impl KernelWindows {
    /// No window yet of a kernel in a repetition.
    pub fn new(kernel: &str, repetition: u32) -> KernelWindows {
        KernelWindows {
            kernel: kernel.to_string(),
            repetition,
            start_ns: Vec::new(),
            end_ns: Vec::new(),
            counters_of: None,
        }
    }

    /// Each window's start and end, in order.
    pub fn windows(&self) -> impl Iterator<Item = (f64, f64)> + '_ {
        self.start_ns
            .iter()
            .copied()
            .zip(self.end_ns.iter().copied())
    }

    pub fn len(&self) -> usize {
        self.start_ns.len().min(self.end_ns.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// How a benchmark's numbers were captured.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct Provenance {
    /// The command that was run, as written in the configuration (empty for imports).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub command: String,
    /// Capture backends used, such as `timer` and `protocol`.
    pub captures: Vec<String>,
    /// Files the numbers were imported from, for `kgate import`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub imported_from: Vec<String>,
    /// Facts a profiler reported about the capture: tool version (`ncu.version`), replay
    /// passes (`ncu.replay_passes`), device, clock and cache control.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub details: BTreeMap<String, String>,
    /// Counters a capture asked for but could not measure (never recorded as zero).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unavailable: Vec<UnavailableCounter>,
    /// Remarks on how values were obtained (multiplexed perf counts, which Valgrind total).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// A counter that could not be measured, and what to do about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UnavailableCounter {
    /// The counter (event) name.
    pub counter: String,
    /// What the tool said, such as `not supported` or `not counted`.
    pub reason: String,
    /// A hint for the user.
    pub hint: String,
}

/// Result files that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    #[error("cannot read results `{path}`: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("`{path}` is not a kgate results file: {}", crate::model::text::plain_serde(field.as_deref(), &source.to_string()))]
    Parse {
        path: PathBuf,
        /// Where in the document, when known (`benchmarks[0].metrics[0].values[2]`).
        field: Option<String>,
        #[source]
        source: serde_json::Error,
    },
    #[error(
        "`{path}` has results format version {found}; this kgate reads version {RESULTS_SCHEMA_VERSION}"
    )]
    Version { path: PathBuf, found: u32 },
    #[error("`{path}` is damaged: {message}; write it again with `kgate run` or `kgate import`")]
    Damaged { path: PathBuf, message: String },
    #[error(
        "refusing to write `{path}`: {what} is not a finite number, and a results file holding it could not be read back"
    )]
    NotFinite { path: PathBuf, what: String },
    #[error(transparent)]
    Write(#[from] fsutil::WriteError),
}

/// What reading many benchmarks' kernel windows against the series other benchmarks lend
/// needs once, not once per benchmark ([`RunResults::lenders`]): where each benchmark is by
/// name, and, of a lender's series out of time order, its readings in order. A trace import
/// has a benchmark per kernel, all reading one counters benchmark. It stays right while the
/// benchmarks keep their names, order and counters.
pub struct Lenders {
    index: std::collections::HashMap<String, usize>,
    /// (benchmark, series) → the series' times and values in time order, for the series
    /// that are not (a file written elsewhere; kgate writes its own in order).
    in_order: std::collections::HashMap<(usize, usize), (Vec<f64>, Vec<f64>)>,
}

impl Lenders {
    /// [`RunResults::lent_counters`] of `b`: of each series its windows are read against,
    /// the readings around the windows.
    pub fn lent_counters(&self, results: &RunResults, b: &BenchmarkResult) -> Vec<CounterSeries> {
        let mut lent = Vec::new();
        for k in &b.kernel_windows {
            let Some(of) = &k.counters_of else { continue };
            let Some((i, lender)) = self
                .index
                .get(&of.benchmark)
                .and_then(|&i| Some((i, results.benchmarks.get(i)?)))
            else {
                continue;
            };
            for (j, series) in lender.counters.iter().enumerate() {
                if series.repetition != of.repetition {
                    continue;
                }
                let n = series.len();
                let (t_ns, value) = match self.in_order.get(&(i, j)) {
                    Some((t, v)) => (&t[..], &v[..]),
                    None => (&series.t_ns[..n], &series.value[..n]),
                };
                let around = series.around_sorted(t_ns, value, k);
                if !around.is_empty() {
                    lent.push(around);
                }
            }
        }
        lent
    }
}

#[cfg(test)]
impl RunResults {
    /// Results of `benchmarks` on a default environment, for tests.
    pub(crate) fn of(benchmarks: Vec<BenchmarkResult>) -> RunResults {
        RunResults {
            schema_version: RESULTS_SCHEMA_VERSION,
            kgate_version: "0".into(),
            created: "2026-01-01T00:00:00Z".into(),
            environment: crate::machine::fingerprint::Fingerprint::default(),
            benchmarks,
        }
    }
}

impl RunResults {
    /// Refuses results in which no benchmark holds a single measured value (an import of a
    /// file with no benchmark entries, or only errored ones): such a file gates nothing, and
    /// writing it would only produce rows with nothing in them. The error lists the failures.
    /// A value that is not finite is refused too, naming where it is (see
    /// [`RunResults::non_finite`]).
    pub fn require_measurements(&self, what: &str) -> Result<(), String> {
        self.require_measurements_or(what, false)
    }

    /// [`RunResults::require_measurements`] for results whose samples may be held outside
    /// them (`held_samples`: some are, and then any benchmark that did not fail measured).
    pub fn require_measurements_or(&self, what: &str, held_samples: bool) -> Result<(), String> {
        self.require_measurements_hinted(what, held_samples, None)
    }

    /// [`RunResults::require_measurements_or`], where results that hold counter readings but
    /// no measurement are refused naming the counters and, in `counters_hint`, what would
    /// have turned them into measurements (a device profile, a kernel selection): readings
    /// alone gate nothing, and "check that the harness ran" would send the reader the wrong
    /// way.
    pub fn require_measurements_hinted(
        &self,
        what: &str,
        held_samples: bool,
        counters_hint: Option<&str>,
    ) -> Result<(), String> {
        if let Some(value) = self.non_finite() {
            return Err(format!(
                "{what} holds a number that is not finite ({value}), which a results file cannot hold; the input is damaged or its units overflow"
            ));
        }
        let measured = self.benchmarks.iter().any(|b| {
            b.status == Status::Ok
                && (held_samples || b.metrics.iter().any(|m| !m.values.is_empty()))
        });
        if measured {
            return Ok(());
        }
        let failures: Vec<String> = self
            .benchmarks
            .iter()
            .filter_map(|b| {
                b.failure
                    .as_ref()
                    .map(|f| format!("`{}`: {}", b.name, f.message))
            })
            .collect();
        let counters = self.counter_names();
        Err(if failures.is_empty() && !counters.is_empty() {
            // Named by benchmark: `counters`: `a`, `b`; `counters#2`: `c`, … (the first few).
            let mut shown: Vec<(&str, Vec<String>)> = Vec::new();
            for (benchmark, counter) in counters.iter().take(COUNTERS_SHOWN) {
                let name = format!("`{counter}`");
                match shown.iter_mut().find(|(b, _)| b == benchmark) {
                    Some((_, names)) => names.push(name),
                    None => shown.push((benchmark, vec![name])),
                }
            }
            let shown: Vec<String> = shown
                .into_iter()
                .map(|(b, names)| format!("on benchmark `{b}`: {}", names.join(", ")))
                .collect();
            format!(
                "{what} holds {} ({}{}) but no measurement, and counter readings alone are nothing to gate: {}",
                crate::model::text::count(counters.len(), "counter track", "counter tracks"),
                shown.join("; "),
                if counters.len() > COUNTERS_SHOWN { ", …" } else { "" },
                counters_hint.unwrap_or(
                    "a device profile (`device:` in the configuration) derives utilization from them over their span"
                )
            )
        } else if failures.is_empty() {
            format!(
                "{what} holds no measurement in any of its {}; there is nothing to gate (check that the harness ran its benchmarks and wrote their results)",
                crate::model::text::count(self.benchmarks.len(), "benchmark", "benchmarks")
            )
        } else {
            format!(
                "{what} holds no measurement: every benchmark failed ({}); fix the benchmarks and import again",
                failures.join("; ")
            )
        })
    }

    /// Each benchmark's counter series, by name, once each and in order: (benchmark,
    /// counter). An end-of-profile sample holds tens of thousands of counters.
    fn counter_names(&self) -> Vec<(&str, &str)> {
        let mut seen = std::collections::HashSet::new();
        self.benchmarks
            .iter()
            .flat_map(|b| {
                b.counters
                    .iter()
                    .map(|c| (b.name.as_str(), c.counter.as_str()))
            })
            .filter(|pair| seen.insert(*pair))
            .collect()
    }

    /// The first number that JSON cannot carry (serde writes a non-finite value as `null`,
    /// which no results reader accepts), described for a message: `benchmark `mm`, metric
    /// `kernel_time`, value 3 (inf)`.
    pub fn non_finite(&self) -> Option<String> {
        for b in &self.benchmarks {
            for m in &b.metrics {
                if let Some((i, v)) = m.values.iter().enumerate().find(|(_, v)| !v.is_finite()) {
                    return Some(format!(
                        "benchmark `{}`, metric `{}`, value {} ({v})",
                        b.name,
                        m.name,
                        i + 1
                    ));
                }
            }
            for c in b.counter_readings() {
                if !(c.t_ns.is_finite() && c.value.is_finite()) {
                    return Some(format!(
                        "benchmark `{}`, counter `{}` ({} at {} ns)",
                        b.name, c.counter, c.value, c.t_ns
                    ));
                }
            }
            for k in &b.kernel_windows {
                if let Some((start, end)) = k
                    .windows()
                    .find(|(start, end)| !(start.is_finite() && end.is_finite()))
                {
                    return Some(format!(
                        "benchmark `{}`, kernel window `{}` ({start} to {end} ns)",
                        b.name, k.kernel
                    ));
                }
            }
        }
        None
    }

    /// Reads and checks a results file. A version 1 file (counter readings one object each)
    /// is read too, its readings gathered into series as version 2 stores them.
    ///
    /// The file is read a piece at a time, one benchmark's text held while it is parsed (a
    /// suite of 10,000 benchmarks writes a file of 170 MB, whose text was held beside what it
    /// parses to). Anything that reading leaves to serde_json (a syntax error, a key written
    /// twice, another version) is read again whole, for serde_json's messages; a pipe, which
    /// cannot be read twice, is read whole at once.
    pub fn load(path: &Path) -> Result<RunResults, ResultsError> {
        let read_error = |source| ResultsError::Read {
            path: path.to_path_buf(),
            source,
        };
        use crate::model::json_array;
        let text = if json_array::rereadable(path) {
            let file = std::fs::File::open(path)
                .map(|f| std::io::BufReader::with_capacity(1 << 16, f))
                .and_then(json_array::skip_bom)
                .map_err(read_error)?;
            if let Some(results) = RunResults::read_split(file) {
                return results.settled(path);
            }
            std::fs::read_to_string(path)
        } else {
            json_array::read_once(path, STREAM_MAX_BYTES)
        }
        .map_err(read_error)?;
        RunResults::parse(&text, path)
    }

    /// A results file of this version read element by element ([`json_array::split`]), or
    /// `None` for whatever it leaves to a reading of the whole text (the read error included).
    fn read_split(source: impl std::io::Read) -> Option<RunResults> {
        use crate::model::json_array::{self, Split};
        let mut benchmarks = Vec::new();
        let split = json_array::split(
            source,
            "benchmarks",
            json_array::as_written,
            |_, b: BenchmarkResult| {
                benchmarks.push(b);
                Ok::<(), std::convert::Infallible>(())
            },
        );
        let Split::Done(document) = split else {
            return None;
        };
        Some(RunResults {
            benchmarks,
            ..RunResults::header(document)?
        })
    }

    /// The keys of a results file of this version besides its benchmarks, from what
    /// [`json_array::split`](crate::model::json_array::split) read (the benchmarks left empty),
    /// or `None` for a document the whole reading should judge.
    pub(crate) fn header(document: crate::model::json_array::Document) -> Option<RunResults> {
        if document.array != crate::model::json_array::Found::Array {
            return None;
        }
        // The rest of the document with an empty array: the results' own reading of its keys.
        let mut rest = document.others;
        rest.insert("benchmarks".into(), serde_json::Value::Array(Vec::new()));
        let results: RunResults = serde_json::from_value(serde_json::Value::Object(rest)).ok()?;
        (results.schema_version == RESULTS_SCHEMA_VERSION).then_some(results)
    }

    /// Reads and checks the text of a results file; `path` names it in errors. See
    /// [`RunResults::load`].
    pub fn parse(text: &str, path: &Path) -> Result<RunResults, ResultsError> {
        let text = crate::model::json_array::without_bom(text);
        let parsed = serde_json::from_str::<RunResults>(text);
        // A file of another version is refused by its version, whether or not it also parses
        // as this one; the version alone is read (the rest skipped without building a tree)
        // only when the whole document did not parse.
        let version = match &parsed {
            Ok(results) => Some(results.schema_version),
            Err(_) => super::schema_version_of(text).map(|v| v.min(u64::from(u32::MAX)) as u32),
        };
        let parse_error = |source| ResultsError::Parse {
            path: path.to_path_buf(),
            field: crate::model::text::failing_field::<RunResults>(text),
            source,
        };
        let results = match (version, parsed) {
            (Some(RESULTS_SCHEMA_VERSION) | None, parsed) => parsed.map_err(parse_error)?,
            // A version 1 file without counter readings or kernel windows reads as version 2
            // as it is (version 1 readings and windows do not parse as series).
            (Some(1), Ok(results)) => RunResults {
                schema_version: RESULTS_SCHEMA_VERSION,
                ..results
            },
            (Some(1), Err(_)) => version1::upgrade(text).map_err(parse_error)?,
            (Some(found), _) => {
                return Err(ResultsError::Version {
                    path: path.to_path_buf(),
                    found,
                });
            }
        };
        results.settled(path)
    }

    /// Parsed results made ready and checked ([`RunResults::settle`],
    /// [`RunResults::check_series`]); `path` names the file in errors.
    fn settled(mut self, path: &Path) -> Result<RunResults, ResultsError> {
        self.settle();
        self.check_series()
            .map_err(|message| ResultsError::Damaged {
                path: path.to_path_buf(),
                message,
            })?;
        Ok(self)
    }

    /// Counts the `repetition` numbers the file left out (each value its own repetition),
    /// and hands back the room the reader left at the end of each array: it grows an array
    /// by doubling, not knowing its length, so a benchmark of 20 metrics sat in room for 32
    /// (a compare of 10,000 such benchmarks held 6 % more for it).
    fn settle(&mut self) {
        self.benchmarks.shrink_to_fit();
        for b in &mut self.benchmarks {
            b.settle();
        }
    }

    /// The series a benchmark's kernel windows are read against that another benchmark holds
    /// (see [`KernelWindows::counters_of`]): of each, the readings around the windows
    /// ([`CounterSeries::around`]), as series of the windows' repetition. Empty for windows
    /// read against their own benchmark's series.
    pub fn lent_counters(&self, b: &BenchmarkResult) -> Vec<CounterSeries> {
        self.lenders().lent_counters(self, b)
    }

    /// What [`Lenders::lent_counters`] reads against, gathered once for a loop over many
    /// benchmarks: the lenders by name (the first of a name, as [`RunResults::benchmark`]
    /// finds), and a sorted copy of each of their series out of time order.
    pub fn lenders(&self) -> Lenders {
        // Only the benchmarks some kernel windows name are lenders: their series alone are
        // checked for time order (a run's own counters are never read this way).
        let lending: std::collections::HashSet<&str> = self
            .benchmarks
            .iter()
            .flat_map(|b| &b.kernel_windows)
            .filter_map(|k| Some(k.counters_of.as_ref()?.benchmark.as_str()))
            .collect();
        let mut index = std::collections::HashMap::with_capacity(lending.len());
        let mut in_order = std::collections::HashMap::new();
        for (i, b) in self.benchmarks.iter().enumerate() {
            if !lending.contains(b.name.as_str()) || index.contains_key(&b.name) {
                continue;
            }
            index.insert(b.name.clone(), i);
            for (j, series) in b.counters.iter().enumerate() {
                if let Some(sorted) = series.in_time_order() {
                    in_order.insert((i, j), sorted);
                }
            }
        }
        Lenders { index, in_order }
    }

    /// Refuses a counter series whose times and values differ in number (or kernel windows
    /// whose starts and ends do, or a metric whose values and repetition numbers do): no
    /// reading can be told from the next. Refuses kernel windows read against the series of
    /// a benchmark the file does not hold.
    fn check_series(&self) -> Result<(), String> {
        let names: std::collections::HashSet<&str> =
            self.benchmarks.iter().map(|b| b.name.as_str()).collect();
        for b in &self.benchmarks {
            b.check_series(|name| names.contains(name))?;
        }
        Ok(())
    }

    /// Writes the results atomically, indented ([`JsonLayout::Pretty`]: what baselines use,
    /// being committed and read in diffs); see [`RunResults::save_as`] (in `held_arrays`,
    /// beside the writer that formats a large document's numbers on several threads).
    pub fn save(&self, path: &Path, overwrite: Overwrite) -> Result<(), ResultsError> {
        self.save_as(path, overwrite, JsonLayout::Pretty)
    }

    /// Writes the document `serialize` produces atomically, with a trailing newline, after
    /// refusing results holding a number JSON cannot carry: what every way of saving shares
    /// (a results file with held arrays is saved through it too). `serialize` writes into the
    /// serializer's own buffer ([`fsutil::serializer_buffer`]).
    pub(crate) fn save_through(
        &self,
        path: &Path,
        overwrite: Overwrite,
        serialize: impl FnOnce(&mut std::io::BufWriter<&mut dyn std::io::Write>) -> std::io::Result<()>,
    ) -> Result<(), ResultsError> {
        if let Some(what) = self.non_finite() {
            return Err(ResultsError::NotFinite {
                path: path.to_path_buf(),
                what,
            });
        }
        fsutil::write_atomic_with(path, overwrite, |out| {
            use std::io::Write as _;
            let mut out = fsutil::serializer_buffer(out);
            serialize(&mut out)?;
            out.write_all(b"\n")?;
            out.flush()
        })?;
        Ok(())
    }

    /// Pretty JSON with a trailing newline.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("results serialize to JSON");
        s.push('\n');
        s
    }

    /// The benchmark of that name.
    pub fn benchmark(&self, name: &str) -> Option<&BenchmarkResult> {
        self.benchmarks.iter().find(|b| b.name == name)
    }

    /// The benchmarks by name, for lookups in a loop (see [`crate::model::by_name`]).
    pub fn by_name(&self) -> std::collections::HashMap<&str, &BenchmarkResult> {
        super::by_name(&self.benchmarks, |b| b.name.as_str())
    }

    /// Whether any benchmark failed.
    pub fn has_failures(&self) -> bool {
        self.benchmarks.iter().any(|b| b.status == Status::Failed)
    }
}

/// How a results document is laid out: the same JSON either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonLayout {
    /// One line, no indentation: what programs read, a fraction of the size.
    Compact,
    /// Indented, for people and for diffs of committed files.
    Pretty,
}

/// The current time in RFC 3339.
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

/// Version 1 of the format, read for the baselines and history files written before version 2:
/// the same document, but each counter reading an object of its own.
mod version1 {
    use super::{BenchmarkResult, RESULTS_SCHEMA_VERSION, RunResults, SeriesIndex};
    use crate::model::protocol::{CounterLine, KernelLine};
    use serde::Deserialize;

    /// A version 1 counter reading.
    #[derive(Deserialize)]
    struct Reading {
        repetition: u32,
        counter: String,
        t_ns: f64,
        value: f64,
        #[serde(default)]
        unit: String,
        #[serde(default)]
        bits: Option<u8>,
        #[serde(default)]
        core: Option<u32>,
        #[serde(default)]
        sampling: Option<super::Sampling>,
    }

    /// A version 1 kernel window.
    #[derive(Deserialize)]
    struct Window {
        repetition: u32,
        kernel: String,
        start_ns: f64,
        end_ns: f64,
    }

    /// Reads a version 1 document: its readings and kernel windows are taken out of the tree
    /// and gathered into series in arrival order, then the rest reads as version 2.
    pub(super) fn upgrade(text: &str) -> Result<RunResults, serde_json::Error> {
        let mut doc: serde_json::Value = serde_json::from_str(text)?;
        if !doc.is_object() {
            return Err(serde::de::Error::custom(
                "a results file is a JSON object, and this is not one",
            ));
        }
        let mut taken: Vec<(Vec<Reading>, Vec<Window>)> = Vec::new();
        if let Some(benchmarks) = doc
            .get_mut("benchmarks")
            .and_then(serde_json::Value::as_array_mut)
        {
            for b in benchmarks {
                let mut take = |key: &str| {
                    b.as_object_mut()
                        .and_then(|b| b.remove(key))
                        .unwrap_or_else(|| serde_json::Value::Array(Vec::new()))
                };
                let readings = serde_json::from_value(take("counters"))?;
                let windows = serde_json::from_value(take("kernel_windows"))?;
                taken.push((readings, windows));
            }
        }
        doc["schema_version"] = RESULTS_SCHEMA_VERSION.into();
        let mut results: RunResults = serde_json::from_value(doc)?;
        for (b, (readings, windows)) in results.benchmarks.iter_mut().zip(taken) {
            let mut index = SeriesIndex::default();
            gather(b, &mut index, readings);
            for w in windows {
                index.push_window(
                    b,
                    w.repetition,
                    KernelLine {
                        kernel: w.kernel,
                        start_ns: w.start_ns,
                        end_ns: w.end_ns,
                        benchmark: None,
                        exact: None,
                    },
                );
            }
        }
        Ok(results)
    }

    fn gather(b: &mut BenchmarkResult, index: &mut SeriesIndex, readings: Vec<Reading>) {
        for r in readings {
            let sampling = r.sampling;
            let line = CounterLine {
                counter: r.counter,
                t_ns: r.t_ns,
                value: r.value,
                unit: r.unit,
                bits: r.bits,
                core: r.core,
                benchmark: None,
                t_exact: None,
            };
            index.push_counter(b, r.repetition, &line, sampling);
        }
    }
}

/// Measurements written without a fraction where they have none: a count of 1234567 or a time
/// of 88000 ns is `1234567`, not `1234567.0`. Counters, launch times and integral durations
/// are most of a large results file, and JSON readers (kgate's included) read either form as
/// the same number. Values beyond 2^53, fractions and negative zero keep the float form, so
/// every value reads back to the same bits.
/// `v` as the integer the results file writes it as, when it is a whole number an `f64` holds
/// exactly (not -0, whose sign an integer would lose).
pub(crate) fn whole_number(v: f64) -> Option<i64> {
    /// Largest magnitude below which every integer is an exact f64.
    const EXACT_INTEGERS: f64 = 9_007_199_254_740_992.0;
    // The conversion truncates, so it gives `v` back exactly when `v` is whole; it is one
    // instruction, where `fract` calls the C library's `trunc` (millions of times for a
    // results file).
    let truncated = v as i64;
    (v.abs() < EXACT_INTEGERS && truncated as f64 == v && !(v == 0.0 && v.is_sign_negative()))
        .then_some(truncated)
}

mod whole_numbers {
    use serde::Serializer;

    pub fn value<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        match super::whole_number(*v) {
            Some(i) => s.serialize_i64(i),
            None => s.serialize_f64(*v),
        }
    }

    pub fn values<S: Serializer>(values: &[f64], s: S) -> Result<S::Ok, S::Error> {
        struct One(f64);
        impl serde::Serialize for One {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                value(&self.0, s)
            }
        }
        s.collect_seq(values.iter().map(|v| One(*v)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_failed_check_fails_the_benchmark_and_keeps_its_first_detail() {
        let mut c = None;
        Correctness::record(&mut c, true, Some("max abs error 1e-6".into()));
        assert_eq!(
            c,
            Some(Correctness {
                passed: true,
                detail: Some("max abs error 1e-6".into())
            })
        );
        Correctness::record(&mut c, false, Some("max abs error 0.5 > 1e-3".into()));
        Correctness::record(&mut c, false, Some("NaN".into()));
        Correctness::record(&mut c, true, None);
        assert!(Correctness::failed(&c));
        assert_eq!(
            c.unwrap().detail.as_deref(),
            Some("max abs error 0.5 > 1e-3")
        );
        assert!(!Correctness::failed(&None));
        let mut long = None;
        Correctness::record(&mut long, false, Some("é".repeat(600)));
        let kept = long.unwrap().detail.unwrap();
        assert_eq!(kept.chars().count(), CORRECTNESS_DETAIL_CHARS + 1);
        assert!(kept.ends_with("é…"));
    }

    /// What loading `text` from a file gives, as text to compare: the results as JSON, or the
    /// error's message (with the file's name taken out).
    fn outcome(result: Result<RunResults, ResultsError>, path: &Path) -> String {
        match result {
            Ok(r) => serde_json::to_string(&r).unwrap(),
            Err(e) => e.to_string().replace(&path.display().to_string(), "FILE"),
        }
    }

    #[test]
    fn a_file_read_a_benchmark_at_a_time_loads_as_its_whole_text_parses() {
        let mut b = BenchmarkResult::new("b \"1\" ]}", Default::default());
        let metric = |values: Vec<f64>| MetricSamples {
            name: "time".into(),
            unit: "ns".into(),
            source: Source::Timer,
            direction: Direction::Lower,
            gate: GateRule::default(),
            repetition: (0..values.len() as u32).collect(),
            values,
        };
        b.metrics.push(metric(vec![1.5, 2.0, 1e-300]));
        let mut series = CounterSeries::new("busy", 0);
        series.t_ns = vec![0.0, 10.0];
        series.value = vec![3.0, 4.0];
        b.counters.push(series);
        let mut run = RunResults::of(vec![
            b.clone(),
            BenchmarkResult::new("c", Default::default()),
        ]);
        run.benchmarks[1].metrics.push(metric(vec![7.0]));
        let good = run.to_json();
        let compact = serde_json::to_string(&run).unwrap();
        let v1 = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/results_v1/protocol_epoch_ns.json"
        ))
        .unwrap();
        // The document with `pair` written before its first key.
        let first = |pair: &str| compact.replacen('{', &format!("{{{pair},"), 1);
        let cases: Vec<(&str, String, bool)> = vec![
            ("indented", good.clone(), true),
            ("compact", compact.clone(), true),
            (
                "no benchmarks",
                compact.replace(
                    &compact[compact.find("[{").unwrap()..compact.rfind("}]").unwrap() + 2],
                    "[]",
                ),
                true,
            ),
            ("unknown key", first("\"extra\":[1,{\"a\":2}]"), true),
            ("key twice", first("\"created\":\"x\""), false),
            ("benchmarks twice", first("\"benchmarks\":[]"), false),
            ("version 1", v1, false),
            (
                "version 9",
                compact.replacen("\"schema_version\":2", "\"schema_version\":9", 1),
                false,
            ),
            (
                "no environment",
                compact.replacen("\"environment\"", "\"environ\"", 1),
                false,
            ),
            (
                "benchmarks not an array",
                compact
                    .replacen("\"benchmarks\":[", "\"benchmarks\":{\"a\":[", 1)
                    .replacen("]}", "]}}", 1),
                false,
            ),
            ("cut", good[..good.len() / 2].to_string(), false),
            ("trailing text", format!("{compact} x"), false),
            // Loaded and parsed as without one (Windows editors and PowerShell write one):
            // `load` skips it before the split reading, which sees the raw file here.
            ("byte-order mark", format!("\u{feff}{compact}"), false),
            (
                "bad element",
                compact.replacen("\"status\":\"ok\"", "\"status\":\"fine\"", 1),
                false,
            ),
            ("not an object", "[1, 2]".into(), false),
            ("empty", String::new(), false),
        ];
        let dir = tempfile::tempdir().unwrap();
        for (what, text, split) in cases {
            let path = dir.path().join("results.json");
            std::fs::write(&path, &text).unwrap();
            let loaded = outcome(RunResults::load(&path), &path);
            let parsed = outcome(RunResults::parse(&text, &path), &path);
            assert_eq!(loaded, parsed, "{what}");
            let read = RunResults::read_split(std::fs::File::open(&path).unwrap());
            assert_eq!(read.is_some(), split, "{what}: {loaded}");
        }
        // Not valid UTF-8: the same read error.
        let path = dir.path().join("results.json");
        let mut bytes = compact.into_bytes();
        let at = bytes.windows(4).position(|w| w == b"time").unwrap();
        bytes[at] = 0xff;
        std::fs::write(&path, &bytes).unwrap();
        let loaded = RunResults::load(&path).unwrap_err().to_string();
        assert!(loaded.contains("valid UTF-8"), "{loaded}");
    }

    #[test]
    fn the_readings_around_windows_are_those_inside_and_one_either_side() {
        let mut series = CounterSeries::new("busy", 3);
        series.unit = "cycles".into();
        series.t_ns = vec![0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0];
        series.value = vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let windows = KernelWindows {
            start_ns: vec![12.0, 41.0, -5.0, 70.0],
            end_ns: vec![25.0, 44.0, -1.0, 80.0],
            ..KernelWindows::new("k", 0)
        };
        let around = series.around(&windows);
        // [12, 25]: 10 before, 20 inside, 30 after; [41, 44]: 40 and 50 on either side; a
        // window before the first reading takes the first, one after the last the last.
        assert_eq!(around.t_ns, [0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0]);
        let narrow = KernelWindows {
            start_ns: vec![12.0],
            end_ns: vec![25.0],
            ..KernelWindows::new("k", 0)
        };
        let around = series.around(&narrow);
        assert_eq!(around.t_ns, [10.0, 20.0, 30.0]);
        assert_eq!(around.value, [1.0, 2.0, 3.0]);
        assert_eq!((around.repetition, around.unit.as_str()), (0, "cycles"));
        // Out of time order, the same readings.
        let mut shuffled = series.clone();
        shuffled.t_ns.reverse();
        shuffled.value.reverse();
        assert_eq!(shuffled.around(&narrow), around);
    }

    /// The readings around windows by the definition, one mark per reading: those from the
    /// one before each window's start to the one after its end.
    fn around_by_marks(t_ns: &[f64], windows: &KernelWindows) -> Vec<f64> {
        let mut keep = vec![false; t_ns.len()];
        for (start, end) in windows.windows() {
            let lo = t_ns.partition_point(|&t| t < start).saturating_sub(1);
            let hi = t_ns.partition_point(|&t| t <= end).min(t_ns.len() - 1);
            keep[lo..=hi.max(lo)].iter_mut().for_each(|k| *k = true);
        }
        t_ns.iter()
            .zip(keep)
            .filter(|(_, k)| *k)
            .map(|(t, _)| *t)
            .collect()
    }

    #[test]
    fn overlapping_and_unordered_windows_keep_each_reading_once_in_time_order() {
        let mut rng = fastrand::Rng::with_seed(11);
        for _ in 0..2_000 {
            let mut series = CounterSeries::new("busy", 0);
            let mut t = 0.0;
            for _ in 0..rng.usize(1..60) {
                // Repeated times as well as gaps.
                t += f64::from(rng.u8(0..3)) * 5.0;
                series.t_ns.push(t);
                series.value.push(t * 2.0);
            }
            let mut windows = KernelWindows::new("k", 0);
            for _ in 0..rng.usize(0..12) {
                let start = rng.f64() * (t + 20.0) - 10.0;
                windows.start_ns.push(start);
                windows.end_ns.push(start + rng.f64() * 30.0);
            }
            let around = series.around(&windows);
            assert_eq!(around.t_ns, around_by_marks(&series.t_ns, &windows));
            assert_eq!(
                around.value,
                around.t_ns.iter().map(|t| t * 2.0).collect::<Vec<_>>()
            );
        }
    }

    #[test]
    fn lenders_lend_what_a_lookup_per_benchmark_lends() {
        let mut lender = BenchmarkResult::new("counters", Provenance::default());
        for (rep, reversed) in [(0, false), (1, true)] {
            let mut series = CounterSeries::new("busy", rep);
            series.t_ns = (0..50).map(f64::from).collect();
            series.value = series.t_ns.iter().map(|t| t * 3.0).collect();
            if reversed {
                // Out of time order, as a file written elsewhere may hold it.
                series.t_ns.reverse();
                series.value.reverse();
            }
            lender.counters.push(series);
        }
        let mut results = RunResults {
            schema_version: RESULTS_SCHEMA_VERSION,
            kgate_version: "0".into(),
            created: "2026-01-01T00:00:00Z".into(),
            environment: crate::machine::fingerprint::Fingerprint::default(),
            benchmarks: Vec::new(),
        };
        for k in 0..20 {
            let mut kernel = BenchmarkResult::new(&format!("k{k}"), Provenance::default());
            for rep in 0..2 {
                kernel.kernel_windows.push(KernelWindows {
                    start_ns: vec![f64::from(k) * 2.0 + 0.5],
                    end_ns: vec![f64::from(k) * 2.0 + 3.5],
                    counters_of: Some(CountersOf {
                        benchmark: "counters".into(),
                        repetition: rep,
                    }),
                    ..KernelWindows::new(&format!("k{k}"), rep)
                });
            }
            results.benchmarks.push(kernel);
        }
        results.benchmarks.push(lender);
        let lenders = results.lenders();
        for b in &results.benchmarks {
            let lent = lenders.lent_counters(&results, b);
            assert_eq!(lent, results.lent_counters(b));
        }
        let k3 = lenders.lent_counters(&results, &results.benchmarks[3]);
        assert_eq!(k3.len(), 2);
        for series in &k3 {
            assert_eq!(series.t_ns, [6.0, 7.0, 8.0, 9.0, 10.0]);
            assert_eq!(series.value, [18.0, 21.0, 24.0, 27.0, 30.0]);
        }
    }

    #[test]
    fn readings_gather_into_one_series_per_counter_repetition_and_description() {
        let mut r = BenchmarkResult::new("b", Provenance::default());
        let mut index = SeriesIndex::default();
        let line = |counter: &str, t_ns: f64, unit: &str| CounterLine {
            counter: counter.into(),
            t_ns,
            value: t_ns * 2.0,
            unit: unit.into(),
            ..CounterLine::default()
        };
        // Interleaved, as a benchmark reads all its counters at each time.
        for rep in 0..2 {
            for t in [1.0, 2.0, 3.0] {
                for c in ["a", "b", "c"] {
                    index.push_counter(&mut r, rep, &line(c, t, "cycles"), None);
                }
            }
        }
        // The same name in another unit, or sampled otherwise, is another series.
        index.push_counter(&mut r, 1, &line("a", 4.0, "bytes"), None);
        index.push_counter(
            &mut r,
            1,
            &line("a", 5.0, "cycles"),
            Some(Sampling::Interval),
        );
        index.push_counter(&mut r, 1, &line("a", 6.0, "cycles"), None);
        let got: Vec<(&str, u32, &str, usize)> = r
            .counters
            .iter()
            .map(|s| (s.counter.as_str(), s.repetition, s.unit.as_str(), s.len()))
            .collect();
        assert_eq!(
            got,
            [
                ("a", 0, "cycles", 3),
                ("b", 0, "cycles", 3),
                ("c", 0, "cycles", 3),
                ("a", 1, "cycles", 4),
                ("b", 1, "cycles", 3),
                ("c", 1, "cycles", 3),
                ("a", 1, "bytes", 1),
                ("a", 1, "cycles", 1),
            ]
        );
        assert_eq!(r.counters[3].t_ns, [1.0, 2.0, 3.0, 6.0]);
        assert_eq!(r.counters[7].sampling, Some(Sampling::Interval));
        assert_eq!(r.counter_readings().count(), 21);

        let window = |kernel: &str, start_ns: f64| KernelLine {
            kernel: kernel.into(),
            start_ns,
            end_ns: start_ns + 1.0,
            benchmark: None,
            exact: None,
        };
        for (rep, k, t) in [(0, "x", 0.0), (0, "y", 1.0), (0, "x", 2.0), (1, "x", 3.0)] {
            index.push_window(&mut r, rep, window(k, t));
        }
        let got: Vec<(&str, u32, Vec<f64>)> = r
            .kernel_windows
            .iter()
            .map(|k| (k.kernel.as_str(), k.repetition, k.start_ns.clone()))
            .collect();
        assert_eq!(
            got,
            [
                ("x", 0, vec![0.0, 2.0]),
                ("y", 0, vec![1.0]),
                ("x", 1, vec![3.0])
            ]
        );
    }

    #[derive(serde::Serialize, serde::Deserialize)]
    struct Values {
        #[serde(serialize_with = "super::whole_numbers::values")]
        values: Vec<f64>,
    }

    #[test]
    fn whole_numbers_are_those_without_a_fraction_below_two_to_the_53() {
        let by_definition = |v: f64| {
            (v.fract() == 0.0
                && v.abs() < 9_007_199_254_740_992.0
                && !(v == 0.0 && v.is_sign_negative()))
            .then_some(v as i64)
        };
        let mut rng = fastrand::Rng::with_seed(11);
        let specials = [
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.0,
            -1.0,
            2.5e-300,
            4_503_599_627_370_495.5,
            9_007_199_254_740_991.0,
            -9_007_199_254_740_991.0,
            9_007_199_254_740_992.0,
            9.3e18,
            -9.3e18,
            1e300,
            f64::MAX,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ];
        let random = (0..200_000).map(|i| match i % 3 {
            0 => f64::from_bits(rng.u64(..)),
            1 => (rng.f64() - 0.5) * 10f64.powi(rng.i32(0..20)),
            _ => rng.i64(-(1 << 54)..(1 << 54)) as f64,
        });
        for v in specials.into_iter().chain(random) {
            assert_eq!(
                whole_number(v),
                by_definition(v),
                "{v:e} ({:#x})",
                v.to_bits()
            );
        }
    }

    #[test]
    fn whole_numbers_lose_their_fraction_and_every_value_reads_back_to_its_bits() {
        let values = vec![
            0.0,
            -0.0,
            1.0,
            -3.0,
            1_234_567.0,
            0.5,
            88_000.25,
            9_007_199_254_740_991.0,
            9_007_199_254_740_992.0,
            1e300,
            f64::MIN_POSITIVE,
        ];
        let text = serde_json::to_string(&Values {
            values: values.clone(),
        })
        .unwrap();
        assert_eq!(
            text,
            r#"{"values":[0,-0.0,1,-3,1234567,0.5,88000.25,9007199254740991,9007199254740992.0,1e+300,2.2250738585072014e-308]}"#
        );
        let back: Values = serde_json::from_str(&text).unwrap();
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&back.values), bits(&values));
    }
}
