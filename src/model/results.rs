//! Run results: the versioned JSON that `kgate run` and `kgate import` write.
//!
//! These structs are the file format (the JSON Schema in `schemas/` is generated from them), in
//! the manner of hyperfine's `BenchmarkResult`: one doc comment per field, nothing hidden.
//! Each metric carries its unit, source, direction and gate rule, so a comparison needs nothing
//! but two result files.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::machine::fingerprint::Fingerprint;
use crate::model::metric::{Direction, GateRule, Source};
use crate::model::protocol::{CounterLine, KernelLine};
pub use crate::model::repetition_numbers::{RepetitionNumbers, RepetitionRun};
use crate::model::series::{CounterReading, CounterSeries, KernelWindows, Sampling};

/// Version of the results format; bumped on incompatible changes. Version 2 stores counter
/// readings as series (a counter's name once, then its times and values); version 1 files,
/// one object per reading, are still read (see [`RunResults::load`]).
pub const RESULTS_SCHEMA_VERSION: u32 = 2;

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

impl BenchmarkResult {
    /// Marks the benchmark failed, of `kind`, saying `message` (no stderr: kgate ran nothing).
    pub fn fail(&mut self, kind: FailureKind, message: String) {
        self.status = Status::Failed;
        let stderr_tail = String::new();
        self.failure = Some(Failure {
            kind,
            message,
            stderr_tail,
        });
    }

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
            if m.spread.is_some() && m.values.len() != 1 {
                return Err(format!(
                    "benchmark `{}`, metric `{}`: `spread` describes one mean, but the metric has {} values",
                    b.name,
                    m.name,
                    m.values.len()
                ));
            }
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
        let fits = |s: &CounterSeries| s.holds(repetition, line, sampling);
        let new = || CounterSeries {
            unit: line.unit.clone(),
            bits: line.bits,
            core: line.core,
            sampling,
            ..CounterSeries::new(&line.counter, repetition)
        };
        let series = &mut result.counters;
        let i = latest_or_add(&mut self.counters, &line.counter, series, fits, new);
        series[i].t_ns.push(line.t_ns);
        series[i].value.push(line.value);
    }

    /// Adds a kernel line, read in `repetition`, to that kernel's windows in the repetition.
    pub fn push_window(&mut self, result: &mut BenchmarkResult, repetition: u32, line: KernelLine) {
        let fits = |w: &KernelWindows| w.repetition == repetition;
        let new = || KernelWindows::new(&line.kernel, repetition);
        let windows = &mut result.kernel_windows;
        let i = latest_or_add(&mut self.kernels, &line.kernel, windows, fits, new);
        windows[i].start_ns.push(line.start_ns);
        windows[i].end_ns.push(line.end_ns);
    }
}

/// The position of the latest of `items` filed under `name` that `fits`, or of `new()` added
/// to them and filed there.
fn latest_or_add<T>(
    index: &mut std::collections::HashMap<String, Vec<usize>>,
    name: &str,
    items: &mut Vec<T>,
    fits: impl Fn(&T) -> bool,
    new: impl FnOnce() -> T,
) -> usize {
    let filed = index.get(name).map_or(&[][..], Vec::as_slice);
    if let Some(&i) = filed.iter().rev().find(|&&i| fits(&items[i])) {
        return i;
    }
    items.push(new());
    index
        .entry(name.to_string())
        .or_default()
        .push(items.len() - 1);
    items.len() - 1
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
        let detail = detail.map(|d| crate::model::text::cut(&d, CORRECTNESS_DETAIL_CHARS));
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
    #[serde(serialize_with = "crate::model::series::whole_numbers::values")]
    pub values: Vec<f64>,
    /// The repetition (0-based) each value was measured in; a benchmark may report several
    /// samples per repetition. Left out of the file when each value is its own repetition in
    /// order (value i measured in repetition i, as most captures and every ncu launch are),
    /// and read back as such.
    #[serde(default, skip_serializing_if = "RepetitionNumbers::is_one_per_value")]
    #[schemars(with = "Vec<u32>")]
    pub repetition: RepetitionNumbers,
    /// Where the one value is a mean whose samples were not kept (nvbench stores summaries):
    /// their standard deviation and count, for Welch's test on summaries. Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread: Option<Spread>,
}

/// The samples behind a mean ([`MetricSamples::spread`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Spread {
    /// Standard deviation, in the metric's unit.
    pub sd: f64,
    /// How many samples the mean is of.
    pub n: u64,
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

/// The [`Provenance::details`] key of why a benchmark's measurements are not comparable with
/// another run's (nvbench's throttled SM clock): a comparison does not gate it on either side.
pub const NOT_COMPARABLE: &str = "not_comparable";

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

#[cfg(test)]
impl MetricSamples {
    /// `values` of timer metric `name` in ns, lower better, gated by the default rule, each
    /// value its own repetition, for tests.
    pub(crate) fn timer(name: &str, values: &[f64]) -> MetricSamples {
        MetricSamples {
            name: name.into(),
            unit: "ns".into(),
            source: Source::Timer,
            direction: Direction::Lower,
            gate: GateRule::default(),
            values: values.to_vec(),
            repetition: (0..values.len() as u32).collect(),
            spread: None,
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
        self.require_measurements_hinted(what, None)
    }

    /// [`RunResults::require_measurements`], where results that hold counter readings but
    /// no measurement are refused naming the counters and, in `counters_hint`, what would
    /// have turned them into measurements (a device profile, a kernel selection): readings
    /// alone gate nothing, and "check that the harness ran" would send the reader the wrong
    /// way.
    pub fn require_measurements_hinted(
        &self,
        what: &str,
        counters_hint: Option<&str>,
    ) -> Result<(), String> {
        if let Some(value) = self.non_finite() {
            return Err(format!(
                "{what} holds a number that is not finite ({value}), which a results file cannot hold; the input is damaged or its units overflow"
            ));
        }
        let measured = self
            .benchmarks
            .iter()
            .any(|b| b.status == Status::Ok && b.metrics.iter().any(|m| !m.values.is_empty()));
        if measured {
            return Ok(());
        }
        let failure =
            |b: &BenchmarkResult| Some(format!("`{}`: {}", b.name, b.failure.as_ref()?.message));
        let failures: Vec<String> = self.benchmarks.iter().filter_map(failure).collect();
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
                    let (name, metric, at) = (&b.name, &m.name, i + 1);
                    return Some(format!(
                        "benchmark `{name}`, metric `{metric}`, value {at} ({v})"
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
                let finite = |(start, end): &(f64, f64)| start.is_finite() && end.is_finite();
                if let Some((start, end)) = k.windows().find(|w| !finite(w)) {
                    return Some(format!(
                        "benchmark `{}`, kernel window `{}` ({start} to {end} ns)",
                        b.name, k.kernel
                    ));
                }
            }
        }
        None
    }

    /// Counts the `repetition` numbers the file left out (each value its own repetition),
    /// and hands back the room the reader left at the end of each array: it grows an array
    /// by doubling, not knowing its length, so a benchmark of 20 metrics sat in room for 32
    /// (a compare of 10,000 such benchmarks held 6 % more for it).
    pub(crate) fn settle(&mut self) {
        self.benchmarks.shrink_to_fit();
        for b in &mut self.benchmarks {
            b.settle();
        }
    }

    /// The series a benchmark's kernel windows are read against that another benchmark holds
    /// (see [`KernelWindows::counters_of`]): of each, the readings around the windows
    /// ([`CounterSeries::around`]), as series of the windows' repetition. Empty for windows
    /// read against their own benchmark's series.
    pub fn series_from_others(&self, b: &BenchmarkResult) -> Vec<CounterSeries> {
        self.shared_series().series_from_others(self, b)
    }

    /// What [`SharedSeries::series_from_others`] reads against, gathered once for a loop over
    /// many benchmarks: the benchmarks whose series others read, by name (the first of a name,
    /// as [`RunResults::benchmark`] finds), and a sorted copy of each of their series out of
    /// time order.
    pub fn shared_series(&self) -> SharedSeries {
        // Only the benchmarks some kernel windows name share series: theirs alone are
        // checked for time order (a run's own counters are never read this way).
        let sharing: std::collections::HashSet<&str> = self
            .benchmarks
            .iter()
            .flat_map(|b| &b.kernel_windows)
            .filter_map(|k| Some(k.counters_of.as_ref()?.benchmark.as_str()))
            .collect();
        let mut index = std::collections::HashMap::with_capacity(sharing.len());
        let mut in_order = std::collections::HashMap::new();
        for (i, b) in self.benchmarks.iter().enumerate() {
            if !sharing.contains(b.name.as_str()) || index.contains_key(&b.name) {
                continue;
            }
            index.insert(b.name.clone(), i);
            for (j, series) in b.counters.iter().enumerate() {
                if let Some(sorted) = series.in_time_order() {
                    in_order.insert((i, j), sorted);
                }
            }
        }
        SharedSeries { index, in_order }
    }

    /// Refuses a counter series whose times and values differ in number (or kernel windows
    /// whose starts and ends do, or a metric whose values and repetition numbers do): no
    /// reading can be told from the next. Refuses kernel windows read against the series of
    /// a benchmark the file does not hold.
    pub(crate) fn check_series(&self) -> Result<(), String> {
        let names: std::collections::HashSet<&str> =
            self.benchmarks.iter().map(|b| b.name.as_str()).collect();
        for b in &self.benchmarks {
            b.check_series(|name| names.contains(name))?;
        }
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

/// The current time in RFC 3339.
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

/// What reading many benchmarks' kernel windows against the series other benchmarks hold
/// needs once, not once per benchmark ([`RunResults::shared_series`]): where each benchmark is by
/// name, and, of a sharer's series out of time order, its readings in order. A trace import
/// has a benchmark per kernel, all reading one counters benchmark. It stays right while the
/// benchmarks keep their names, order and counters.
pub struct SharedSeries {
    pub(crate) index: std::collections::HashMap<String, usize>,
    /// (benchmark, series) → the series' times and values in time order, for the series
    /// that are not (a file written elsewhere; kgate writes its own in order).
    pub(crate) in_order: std::collections::HashMap<(usize, usize), (Vec<f64>, Vec<f64>)>,
}

impl SharedSeries {
    /// [`RunResults::series_from_others`] of `b`: of each series its windows are read against,
    /// the readings around the windows.
    pub fn series_from_others(
        &self,
        results: &RunResults,
        b: &BenchmarkResult,
    ) -> Vec<CounterSeries> {
        let mut from_others = Vec::new();
        for k in &b.kernel_windows {
            let Some(of) = &k.counters_of else { continue };
            let Some((i, sharer)) = self
                .index
                .get(&of.benchmark)
                .and_then(|&i| Some((i, results.benchmarks.get(i)?)))
            else {
                continue;
            };
            for (j, series) in sharer.counters.iter().enumerate() {
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
                    from_others.push(around);
                }
            }
        }
        from_others
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::series::CountersOf;

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
        let detail = c.unwrap().detail;
        assert_eq!(detail.as_deref(), Some("max abs error 0.5 > 1e-3"));
        assert!(!Correctness::failed(&None));
        let mut long = None;
        Correctness::record(&mut long, false, Some("é".repeat(600)));
        let kept = long.unwrap().detail.unwrap();
        assert_eq!(kept.chars().count(), CORRECTNESS_DETAIL_CHARS + 1);
        assert!(kept.ends_with("é…"));
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
        let interval = Some(Sampling::Interval);
        index.push_counter(&mut r, 1, &line("a", 5.0, "cycles"), interval);
        index.push_counter(&mut r, 1, &line("a", 6.0, "cycles"), None);
        let got: Vec<(&str, u32, &str, usize)> = r
            .counters
            .iter()
            .map(|s| (s.counter.as_str(), s.repetition, s.unit.as_str(), s.len()))
            .collect();
        #[rustfmt::skip]
        let want = [("a", 0, "cycles", 3), ("b", 0, "cycles", 3), ("c", 0, "cycles", 3),
            ("a", 1, "cycles", 4), ("b", 1, "cycles", 3), ("c", 1, "cycles", 3),
            ("a", 1, "bytes", 1), ("a", 1, "cycles", 1)];
        assert_eq!(got, want);
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
        #[rustfmt::skip]
        let want = [("x", 0, vec![0.0, 2.0]), ("y", 0, vec![1.0]), ("x", 1, vec![3.0])];
        assert_eq!(got, want);
    }

    #[test]
    fn shared_series_give_what_a_lookup_per_benchmark_gives() {
        let mut sharer = BenchmarkResult::new("counters", Provenance::default());
        for (rep, reversed) in [(0, false), (1, true)] {
            let mut series = CounterSeries::new("busy", rep);
            series.t_ns = (0..50).map(f64::from).collect();
            series.value = series.t_ns.iter().map(|t| t * 3.0).collect();
            if reversed {
                // Out of time order, as a file written elsewhere may hold it.
                series.t_ns.reverse();
                series.value.reverse();
            }
            sharer.counters.push(series);
        }
        let mut results = RunResults::of(Vec::new());
        for k in 0..20 {
            let mut kernel = BenchmarkResult::new(&format!("k{k}"), Provenance::default());
            for repetition in 0..2 {
                let of = CountersOf {
                    benchmark: "counters".into(),
                    repetition,
                };
                kernel.kernel_windows.push(KernelWindows {
                    start_ns: vec![f64::from(k) * 2.0 + 0.5],
                    end_ns: vec![f64::from(k) * 2.0 + 3.5],
                    counters_of: Some(of),
                    ..KernelWindows::new(&format!("k{k}"), repetition)
                });
            }
            results.benchmarks.push(kernel);
        }
        results.benchmarks.push(sharer);
        let shared = results.shared_series();
        for b in &results.benchmarks {
            let from_others = shared.series_from_others(&results, b);
            assert_eq!(from_others, results.series_from_others(b));
        }
        let k3 = shared.series_from_others(&results, &results.benchmarks[3]);
        assert_eq!(k3.len(), 2);
        for series in &k3 {
            assert_eq!(series.t_ns, [6.0, 7.0, 8.0, 9.0, 10.0]);
            assert_eq!(series.value, [18.0, 21.0, 24.0, 27.0, 30.0]);
        }
    }
}
