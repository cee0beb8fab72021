//! What the trace imports (`chrome-trace`, `xplane`) share: which events count as kernels, and
//! how kernel durations and counter tracks become benchmarks.
//!
//! A profiler trace holds every launch of every kernel, so it maps to results the same way for
//! both formats: one benchmark per kernel name with a `kernel_time` metric (one sample per
//! launch, source `timer`, each file one repetition), and the counter tracks as raw counter
//! readings on a benchmark named [`COUNTERS_BENCHMARK`].
//!
//! Each format reads its files into [`TraceSamples`] in its own submodule: [`chrome`] (over
//! the byte scanner `json_scan`) and [`xplane`] (over the protobuf messages of `xplane_proto`).

use std::path::{Path, PathBuf};

use globset::{Glob, GlobSet, GlobSetBuilder};
use regex::RegexSet;

use super::builder::Benchmarks;
use super::device::Device;
use super::{ImportError, Policies};
use crate::capture::Collector;
use crate::model::metric::{Direction, Source};
use crate::model::results::{
    Artifact, BenchmarkResult, CounterSeries, CountersOf, KernelWindows, RunResults, Sampling,
};
use crate::model::units;
use std::collections::BTreeMap;

pub mod chrome;
pub mod hlo_proto;
mod json_scan;
pub mod tracks;
pub mod xplane;
pub mod xplane_proto;

/// Metric that holds one kernel launch's device time per sample.
pub const KERNEL_TIME: &str = "kernel_time";
/// Benchmark that receives a trace's counter tracks.
pub const COUNTERS_BENCHMARK: &str = "counters";

/// Which events of a trace are kernels: a name pattern and a process/thread (Chrome trace) or
/// plane/line (XPlane). Unset parts select everything; with nothing set, each format uses its
/// own default (Chrome trace: events of category `kernel`; XPlane: device stream and XLA-op
/// lines).
#[derive(Debug, Clone, Default)]
pub struct TraceSelection {
    regexes: Option<RegexSet>,
    globs: Option<GlobSet>,
    /// Process id or name (Chrome trace), plane id or name (XPlane).
    pub pid: Option<String>,
    /// Thread id or name (Chrome trace), line id or name (XPlane).
    pub tid: Option<String>,
}

/// A selection option that does not compile.
#[derive(Debug, thiserror::Error)]
#[error("invalid {option} pattern: {message}")]
pub struct SelectionError {
    pub option: &'static str,
    pub message: String,
}

impl TraceSelection {
    /// Builds a selection from `--kernel` regexes, `--kernel-glob` globs, `--pid` and `--tid`.
    pub fn new(
        regexes: &[String],
        globs: &[String],
        pid: Option<String>,
        tid: Option<String>,
    ) -> Result<TraceSelection, SelectionError> {
        let regexes = if regexes.is_empty() {
            None
        } else {
            Some(RegexSet::new(regexes).map_err(|e| SelectionError {
                option: "--kernel",
                message: e.to_string(),
            })?)
        };
        let globs = if globs.is_empty() {
            None
        } else {
            let mut builder = GlobSetBuilder::new();
            for g in globs {
                builder.add(Glob::new(g).map_err(|e| SelectionError {
                    option: "--kernel-glob",
                    message: e.to_string(),
                })?);
            }
            Some(builder.build().map_err(|e| SelectionError {
                option: "--kernel-glob",
                message: e.to_string(),
            })?)
        };
        Ok(TraceSelection {
            regexes,
            globs,
            pid,
            tid,
        })
    }

    /// Whether any part was set (the format's default applies otherwise).
    pub fn is_explicit(&self) -> bool {
        self.has_name_pattern() || self.pid.is_some() || self.tid.is_some()
    }

    pub fn has_name_pattern(&self) -> bool {
        self.regexes.is_some() || self.globs.is_some()
    }

    /// Whether a kernel name passes the name patterns (a regex search or a whole-name glob).
    pub fn name_matches(&self, name: &str) -> bool {
        if !self.has_name_pattern() {
            return true;
        }
        self.regexes.as_ref().is_some_and(|r| r.is_match(name))
            || self.globs.as_ref().is_some_and(|g| g.is_match(name))
    }

    /// Whether a process (plane) passes `--pid`, by id or by name.
    pub fn pid_matches(&self, id: &str, name: Option<&str>) -> bool {
        matches_id(self.pid.as_deref(), id, name)
    }

    /// Whether a thread (line) passes `--tid`, by id or by name.
    pub fn tid_matches(&self, id: &str, name: Option<&str>) -> bool {
        matches_id(self.tid.as_deref(), id, name)
    }

    /// The selection in words, for "nothing selected" errors.
    pub fn describe(&self, default: &str) -> String {
        if !self.is_explicit() {
            return format!("the default selection ({default})");
        }
        let mut parts = Vec::new();
        if let Some(r) = &self.regexes {
            parts.push(format!("--kernel {}", r.patterns().join(" --kernel ")));
        }
        if self.globs.is_some() {
            parts.push("--kernel-glob".to_string());
        }
        if let Some(p) = &self.pid {
            parts.push(format!("--pid {p}"));
        }
        if let Some(t) = &self.tid {
            parts.push(format!("--tid {t}"));
        }
        parts.join(" ")
    }
}

fn matches_id(wanted: Option<&str>, id: &str, name: Option<&str>) -> bool {
    match wanted {
        None => true,
        Some(w) => w == id || name == Some(w),
    }
}

/// What one trace file yielded after selection. Times count in nanoseconds from the file's
/// earliest kept timestamp: epoch nanoseconds do not fit an `f64` exactly (at today's epoch
/// its step is 256 ns), differences from a nearby origin do.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct TraceSamples {
    /// Kernel name → launch durations in nanoseconds, in order of first appearance.
    pub kernels: Vec<(String, Vec<f64>)>,
    /// For each entry of `kernels`, the start of each launch (same order and length).
    pub starts: Vec<Vec<f64>>,
    /// Counter readings, by counter: times (ns) and values.
    pub counters: tracks::CounterTracks,
    /// The device (driver, clocks, tool versions) the file names, whatever was selected.
    pub device: Device,
    /// What the selection decided that a reader of the results should know (events it left
    /// out, what it took in the absence of a device), for every benchmark's provenance.
    pub notes: Vec<String>,
    /// How the file samples a counter, by counter name, where the format says (XProf's
    /// end-of-profile readings are running totals, its periodic samples increments).
    pub sampling: BTreeMap<String, Sampling>,
    /// Static cost estimates of a kernel the file holds (XLA's `backend_config` of a custom
    /// call): kernel, metric, value, unit.
    pub estimates: Vec<(String, String, f64, String)>,
    /// Text a kernel's benchmark keeps as an artifact (a custom call's lowered body): kernel,
    /// artifact name, artifact.
    pub artifacts: Vec<(String, String, Artifact)>,
}

impl TraceSamples {
    pub fn is_empty(&self) -> bool {
        self.kernels.is_empty() && self.counters.is_empty()
    }

    /// Durations of one kernel, for tests and tools.
    pub fn kernel(&self, name: &str) -> Option<&[f64]> {
        self.kernels
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_slice())
    }
}

/// Reads each file with `read` (each file one repetition) and builds the results. A file in
/// which nothing matched the selection is an error carrying `nothing_matched`, which says
/// what was looked for and how to choose otherwise.
pub fn import_files(
    capture: &'static str,
    files: &[PathBuf],
    policies: &Policies,
    read: impl Fn(&Path) -> Result<TraceSamples, ImportError>,
    nothing_matched: impl Fn() -> String,
) -> Result<RunResults, ImportError> {
    let mut per_file = Vec::with_capacity(files.len());
    for path in files {
        let samples = read(path)?;
        if samples.is_empty() {
            return Err(ImportError::Content {
                path: path.clone(),
                message: nothing_matched(),
            });
        }
        per_file.push((path.clone(), samples));
    }
    build_results(capture, per_file, policies)
}

/// Turns per-file samples into results: one benchmark per kernel name, each file one
/// repetition, plus the counter benchmark when a file had counter tracks.
fn build_results(
    capture: &'static str,
    files: Vec<(PathBuf, TraceSamples)>,
    policies: &Policies,
) -> Result<RunResults, ImportError> {
    let mut benchmarks = Benchmarks::new(policies, capture);
    // Benchmarks in order of first appearance across the files.
    for (_, samples) in &files {
        for (kernel, _) in &samples.kernels {
            benchmarks.get(kernel);
        }
        if !samples.counters.is_empty() {
            benchmarks.get(COUNTERS_BENCHMARK);
        }
    }
    for (path, mut samples) in files {
        benchmarks.device(&path, samples.device)?;
        // A NaN or an infinity (Python's json writes them) is no reading; the rest of the
        // counter stands, and the counters benchmark's notes count what was left out.
        let mut counters = std::mem::take(&mut samples.counters);
        let not_finite = counters.retain_finite();
        counters.sort();
        counters.shrink_to_fit();
        let mut starts = std::mem::take(&mut samples.starts);
        let sampling = std::mem::take(&mut samples.sampling);
        let estimates = std::mem::take(&mut samples.estimates);
        let artifacts = std::mem::take(&mut samples.artifacts);
        // The span this file's tracks cover, and the repetition its readings become on the
        // counters benchmark.
        let span = track_span(counters.tracks());
        let counters_rep = if counters.is_empty() {
            0
        } else {
            benchmarks.get(COUNTERS_BENCHMARK).result_mut().repetitions
        };
        for (index, (kernel, durations)) in samples.kernels.into_iter().enumerate() {
            let collector = benchmarks.get(&kernel);
            let rep = collector.result_mut().repetitions;
            // Taken, not borrowed: each kernel's starts are freed once its windows are made.
            let launches = starts
                .get_mut(index)
                .map(std::mem::take)
                .unwrap_or_default();
            tie_counters(
                collector.result_mut(),
                rep,
                &kernel,
                &launches,
                &durations,
                span,
                counters_rep,
            );
            drop(launches);
            for (name, artifact) in artifacts
                .iter()
                .filter(|(k, ..)| *k == kernel)
                .map(|(_, n, a)| (n, a))
            {
                let result = collector.result_mut();
                if let Some(old) = result.artifacts.get(name)
                    && old.text != artifact.text
                {
                    result.provenance.notes.push(format!(
                        "artifact `{name}` differs between the files of this import; the one of {} is kept",
                        path.display()
                    ));
                }
                result.artifacts.insert(name.clone(), artifact.clone());
            }
            for (_, metric, value, unit) in estimates.iter().filter(|(k, ..)| *k == kernel) {
                let (slot, factor) = collector
                    .slot(metric, unit, Source::Estimate, Direction::Lower)
                    .map_err(|message| ImportError::Content {
                        path: path.clone(),
                        message,
                    })?;
                let value = value * factor;
                if !(value.is_finite() && value >= 0.0) {
                    return Err(ImportError::Content {
                        path: path.clone(),
                        message: format!(
                            "kernel `{kernel}`: estimate `{metric}` of {value} {unit} is not a finite count; the custom call's backend_config `cost_estimate` is damaged"
                        ),
                    });
                }
                collector.push_at(slot, rep, value);
            }
            collector
                .result_mut()
                .provenance
                .notes
                .extend(samples.notes.iter().cloned());
            // One lookup per kernel, not per launch: a trace holds millions of launches.
            let (slot, factor) = collector
                .slot(KERNEL_TIME, "ns", Source::Timer, Direction::default())
                .map_err(|message| ImportError::Content {
                    path: path.clone(),
                    message,
                })?;
            collector.reserve(slot, durations.len());
            for value in durations {
                // A duration that overflowed on its way to nanoseconds, or a negative one,
                // would make a results file no later command reads (or a meaningless time).
                let value = units::to_canonical(value * factor, "ns").map_err(|e| {
                    ImportError::Content {
                        path: path.clone(),
                        message: format!("kernel `{kernel}`: {e}"),
                    }
                })?;
                collector.push_at(slot, rep, value.1);
            }
            finish_repetition(collector, &path);
        }
        if !(counters.is_empty() && not_finite.is_empty()) {
            let collector = benchmarks.get(COUNTERS_BENCHMARK);
            let result = collector.result_mut();
            let rep = result.repetitions;
            result
                .provenance
                .notes
                .extend(samples.notes.iter().cloned());
            // The tracks move into the results as they are: no reading is copied.
            for track in counters.into_tracks() {
                if track.is_empty() {
                    continue;
                }
                result.counters.push(CounterSeries {
                    sampling: sampling.get(&track.name).copied(),
                    t_ns: track.t_ns,
                    value: track.values,
                    ..CounterSeries::new(&track.name, rep)
                });
            }
            for (counter, n) in not_finite {
                result.provenance.notes.push(format!(
                    "{}: counter `{counter}`: {} not a finite number (NaN or an infinity) left out",
                    path.display(),
                    crate::model::text::count(n, "reading", "readings")
                ));
            }
            finish_repetition(collector, &path);
        }
    }
    Ok(benchmarks.into_results())
}

/// Gives a kernel's benchmark its launches as kernel windows, read against the counter
/// tracks of the file on the [`COUNTERS_BENCHMARK`] benchmark (its repetition
/// `counters_rep`): each reading is kept once, there, and the readings around a kernel's
/// launches (those inside one plus the one before and the one after it) are found when its
/// utilization is derived or its counters charted ([`RunResults::lent_counters`]), so a
/// launch between two readings is reported as unresolved, not skipped. Only launches within
/// `span`, the times the tracks cover, get a window; nothing is added when the file has no counter
/// readings (windows only serve counters, and a trace holds millions of launches).
fn tie_counters(
    result: &mut BenchmarkResult,
    rep: u32,
    kernel: &str,
    starts: &[f64],
    durations: &[f64],
    span: Option<(f64, f64)>,
    counters_rep: u32,
) {
    if starts.len() != durations.len() {
        return;
    }
    // A launch outside the tracks' span ran while no counter was recorded.
    let Some((first, last)) = span else {
        return;
    };
    let in_span = |(&start, &duration): (&f64, &f64)| !(start + duration < first || start > last);
    let mut windows = KernelWindows {
        counters_of: Some(CountersOf {
            benchmark: COUNTERS_BENCHMARK.to_string(),
            repetition: counters_rep,
        }),
        ..KernelWindows::new(kernel, rep)
    };
    // Sized before they fill: a trace holds millions of launches, and a vector left to grow
    // by doubling holds up to twice what it keeps.
    let launches = starts.iter().zip(durations).filter(|l| in_span(*l)).count();
    windows.start_ns.reserve_exact(launches);
    windows.end_ns.reserve_exact(launches);
    for (&start, &duration) in starts.iter().zip(durations).filter(|l| in_span(*l)) {
        windows.start_ns.push(start);
        windows.end_ns.push(start + duration);
    }
    if windows.is_empty() {
        return;
    }
    result.kernel_windows.push(windows);
    result.provenance.details.insert(
        COUNTER_WINDOWS_DETAIL.into(),
        format!(
            "the trace's own kernel events: each launch a window, read against the counter readings of benchmark `{COUNTERS_BENCHMARK}` around it"
        ),
    );
}

/// The first and last time any of the (time-ordered) tracks has a reading: none without a
/// reading.
fn track_span(tracks: &[tracks::CounterTrack]) -> Option<(f64, f64)> {
    let first = tracks.iter().filter_map(|t| t.t_ns.first().copied());
    let last = tracks.iter().filter_map(|t| t.t_ns.last().copied());
    Some((first.reduce(f64::min)?, last.reduce(f64::max)?))
}

/// Provenance detail saying where a trace benchmark's kernel windows came from.
pub const COUNTER_WINDOWS_DETAIL: &str = "counters.windows";

/// Counts the file just read as one more repetition of the benchmark, imported from `path`.
fn finish_repetition(collector: &mut Collector<'_>, path: &Path) {
    let result = collector.result_mut();
    result.repetitions += 1;
    result
        .provenance
        .imported_from
        .push(path.display().to_string());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::MetricPolicy;

    #[test]
    fn regexes_search_and_globs_match_whole_names() {
        let s = TraceSelection::new(&["gemm".into()], &["relu_*".into()], None, None).unwrap();
        assert!(s.name_matches("volta_sgemm_128x64_nn"));
        assert!(s.name_matches("relu_kernel"));
        assert!(!s.name_matches("my_relu_kernel"));
        let err = TraceSelection::new(&["(".into()], &[], None, None).unwrap_err();
        assert!(
            err.to_string().starts_with("invalid --kernel pattern"),
            "{err}"
        );
    }

    #[test]
    fn pid_and_tid_match_by_id_or_name() {
        let s = TraceSelection::new(&[], &[], Some("python".into()), Some("7".into())).unwrap();
        assert!(s.pid_matches("12", Some("python")));
        assert!(!s.pid_matches("12", Some("java")));
        assert!(s.tid_matches("7", None));
        assert!(!TraceSelection::default().is_explicit());
    }

    #[test]
    fn a_large_trace_is_kept_at_the_size_of_what_it_holds() {
        // A vector grown by doubling holds up to twice its samples; on a trace of millions of
        // launches and readings that is most of the import's memory.
        let mut counters = tracks::CounterTracks::default();
        let mut piece = tracks::CounterTracks::default();
        for i in 0..3_000 {
            counters.push("util.value", i as f64 * 10.0, 0.5);
        }
        for i in 0..500 {
            piece.push("util.value", 30_000.0 + i as f64 * 10.0, 0.5);
        }
        counters.append(piece);
        let launches = 2_500;
        let a = TraceSamples {
            kernels: vec![("k".into(), vec![5.0; launches])],
            starts: vec![(0..launches).map(|i| i as f64 * 20.0).collect()],
            counters,
            ..TraceSamples::default()
        };
        let policies = Policies::new(Default::default(), MetricPolicy::permissive(0.05));
        let r = build_results("chrome-trace", vec![("a.json".into(), a)], &policies).unwrap();
        let k = r.benchmark("k").unwrap();
        let m = k.metric(KERNEL_TIME).unwrap();
        assert_eq!(m.values.len(), launches);
        assert_eq!(m.values.capacity(), m.values.len());
        assert_eq!(m.repetition.capacity(), m.repetition.len());
        // Launches after the last reading get no window.
        let w = &k.kernel_windows[0];
        assert_eq!(w.start_ns.len(), 1_750);
        assert_eq!((w.start_ns.capacity(), w.end_ns.capacity()), (1_750, 1_750));
        // Each reading is kept once, on the counters benchmark; the windows say where.
        assert!(k.counters.is_empty());
        assert_eq!(
            w.counters_of,
            Some(CountersOf {
                benchmark: COUNTERS_BENCHMARK.into(),
                repetition: 0
            })
        );
        let around = &r.lent_counters(k)[0];
        assert!(around.len() > 1_000, "{}", around.len());
        assert_eq!(around.t_ns.capacity(), around.len());
        assert_eq!(around.value.capacity(), around.len());
        let track = &r.benchmark(COUNTERS_BENCHMARK).unwrap().counters[0];
        assert_eq!(track.len(), 3_500);
        assert_eq!(track.t_ns.capacity(), 3_500);
        assert_eq!(track.value.capacity(), 3_500);
    }

    #[test]
    fn each_file_is_a_repetition_of_its_kernels() {
        let mut counters = tracks::CounterTracks::default();
        counters.push("util.value", 5.0, 0.5);
        let a = TraceSamples {
            kernels: vec![("k".into(), vec![1.0, 2.0])],
            counters,
            ..TraceSamples::default()
        };
        let b = TraceSamples {
            kernels: vec![("k".into(), vec![3.0]), ("j".into(), vec![4.0])],
            ..TraceSamples::default()
        };
        let policies = Policies::new(Default::default(), MetricPolicy::permissive(0.05));
        let r = build_results(
            "chrome-trace",
            vec![("a.json".into(), a), ("b.json".into(), b)],
            &policies,
        )
        .unwrap();
        let names: Vec<&str> = r.benchmarks.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(names, ["k", "counters", "j"]);
        let k = r.benchmark("k").unwrap();
        let m = k.metric(KERNEL_TIME).unwrap();
        assert_eq!(m.values, [1.0, 2.0, 3.0]);
        assert_eq!(m.repetition, [0, 0, 1]);
        assert_eq!(m.source, Source::Timer);
        assert_eq!(k.repetitions, 2);
        assert_eq!(
            r.benchmark("j")
                .unwrap()
                .metric(KERNEL_TIME)
                .unwrap()
                .repetition,
            [0]
        );
        let c = r.benchmark(COUNTERS_BENCHMARK).unwrap();
        assert_eq!(c.counters[0].counter, "util.value");
        assert_eq!(c.counters[0].t_ns, [5.0]);
    }
}
