//! What the trace imports (`chrome-trace`, `xplane`) share: which events count as kernels, and
//! how kernel durations and counter tracks become benchmarks.
//!
//! A profiler trace holds every launch of every kernel, so it maps to results the same way for
//! both formats: one benchmark per kernel name with a `kernel_time` metric (one sample per
//! launch, source `timer`, each file one repetition), and the counter tracks as raw counter
//! readings on a benchmark named [`COUNTERS_BENCHMARK`] (`counters#2` where a kernel has that
//! name).
//!
//! Each format reads its files into [`TraceSamples`] in its own submodule: [`chrome`] (over
//! the byte scanner `json_scan`) and [`xplane`] (over the protobuf messages of `xplane_proto`).

use std::path::{Path, PathBuf};

use globset::{Glob, GlobSet, GlobSetBuilder};
use regex::RegexSet;

use super::builder::Benchmarks;
use super::{ImportContext, ImportError, Policies, content};
use crate::capture::Collector;
use crate::capture::device::Device;
use crate::model::metric::{Direction, Source};
use crate::model::results::{Artifact, BenchmarkResult, RunResults};
use crate::model::series::{CounterSeries, CountersOf, KernelWindows, Sampling};
use crate::model::text::count;
use crate::model::units;
use std::collections::BTreeMap;

pub mod chrome;
pub mod hlo_proto;
mod json_scan;
pub mod tracks;
pub mod xplane;
pub mod xplane_proto;

/// Metric that holds one kernel launch's device time per sample.
pub const KERNEL_TIME: &str = super::builder::KERNEL_TIME.0;
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
        let invalid = |option| {
            move |e: &dyn std::fmt::Display| SelectionError {
                option,
                message: e.to_string(),
            }
        };
        let regexes = if regexes.is_empty() {
            None
        } else {
            Some(RegexSet::new(regexes).map_err(|e| invalid("--kernel")(&e))?)
        };
        let globs = if globs.is_empty() {
            None
        } else {
            let mut builder = GlobSetBuilder::new();
            for g in globs {
                builder.add(Glob::new(g).map_err(|e| invalid("--kernel-glob")(&e))?);
            }
            Some(builder.build().map_err(|e| invalid("--kernel-glob")(&e))?)
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

    /// Durations of one kernel.
    pub fn kernel(&self, name: &str) -> Option<Vec<f64>> {
        let (_, durations) = self.kernels.iter().find(|(n, _)| n == name)?;
        Some(durations.clone())
    }
}

/// Reads each file with `read` (each file one repetition) and builds the results. A file in
/// which nothing matched the selection is refused, saying what was looked for (the selection,
/// or `default_selection`, and the format's word for `counters`) and how to choose otherwise
/// (`pid_tid`: the format's selection options).
pub fn import_files(
    capture: &'static str,
    files: &[PathBuf],
    ctx: &ImportContext,
    read: fn(&Path, &TraceSelection) -> Result<TraceSamples, ImportError>,
    default_selection: &str,
    (counters, pid_tid): (&str, &str),
) -> Result<RunResults, ImportError> {
    let selection = ctx.selection.describe(default_selection);
    let mut per_file = Vec::with_capacity(files.len());
    for path in files {
        let samples = read(path, &ctx.selection)?;
        if samples.is_empty() {
            return Err(content!(
                path,
                "no kernel events or {counters} matched {selection}; choose kernels with \
                     --kernel REGEX, --kernel-glob GLOB, {pid_tid}"
            ));
        }
        per_file.push((path.clone(), samples));
    }
    build_results(capture, per_file, &ctx.policies, &selection)
}

/// The least finite value, if any.
pub(crate) fn least(values: &[f64]) -> Option<f64> {
    let finite = values.iter().copied().filter(|v| v.is_finite());
    finite.reduce(f64::min)
}

/// A counter track's readings whose time and value are both finite (the ones kept), in time
/// order (a stable sort: readings at one time keep their arrival order), and how many were
/// left out.
fn kept_readings(track: tracks::CounterTrack) -> (Vec<f64>, Vec<f64>, usize) {
    let (mut times, mut values) = (track.t_ns, track.values);
    let len = times.len();
    let finite = |t: &f64, v: &f64| t.is_finite() && v.is_finite();
    if !times.iter().zip(&values).all(|(t, v)| finite(t, v)) {
        let kept = times.iter().zip(&values).filter(|(t, v)| finite(t, v));
        (times, values) = kept.unzip();
    }
    if !times.is_sorted_by(|a, b| a.total_cmp(b).is_le()) {
        let mut pairs: Vec<(f64, f64)> = times.into_iter().zip(values).collect();
        pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
        (times, values) = pairs.into_iter().unzip();
    }
    let left_out = len - times.len();
    (times, values, left_out)
}

/// Turns per-file samples into results: one benchmark per kernel name, each file one
/// repetition, plus the counter benchmark when a file had counter tracks. A file with counter
/// tracks and no kernel selected (`selection`, in words) has its tracks' figures taken over
/// the profile's span ([`PROFILE_SPAN`]), which a note on the counters benchmark says.
fn build_results(
    capture: &'static str,
    files: Vec<(PathBuf, TraceSamples)>,
    policies: &Policies,
    selection: &str,
) -> Result<RunResults, ImportError> {
    let mut benchmarks = Benchmarks::new(policies, capture);
    let counters_name = counters_benchmark_name(&files);
    // Benchmarks in order of first appearance across the files.
    for (_, samples) in &files {
        for (kernel, _) in &samples.kernels {
            benchmarks.get(kernel);
        }
        if !samples.counters.is_empty() {
            benchmarks.get(&counters_name);
        }
    }
    for (path, mut samples) in files {
        benchmarks.device(&path, samples.device)?;
        // A NaN or an infinity (Python's json writes them) is no reading; the rest of the
        // counter stands, and the counters benchmark's notes count what was left out.
        let mut tracks = Vec::new();
        let mut not_finite = Vec::new();
        for track in std::mem::take(&mut samples.counters).into_tracks() {
            let name = track.name.clone();
            let (times, values, left_out) = kept_readings(track);
            if left_out > 0 {
                not_finite.push((name.clone(), left_out));
            }
            if !times.is_empty() {
                tracks.push((name, times, values));
            }
        }
        let mut starts = std::mem::take(&mut samples.starts);
        let sampling = std::mem::take(&mut samples.sampling);
        let estimates = std::mem::take(&mut samples.estimates);
        let artifacts = std::mem::take(&mut samples.artifacts);
        // The span this file's tracks cover, and the repetition its readings become on the
        // counters benchmark.
        let span = tracks
            .iter()
            .map(|(_, t, _)| (t[0], t[t.len() - 1]))
            .reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)));
        let counters_rep = if tracks.is_empty() {
            0
        } else {
            benchmarks.get(&counters_name).result_mut().repetitions
        };
        // Counter tracks with no kernel beside them: read over the profile's span, said.
        let profile_span = match span {
            Some((first, last)) if samples.kernels.is_empty() => Some(format!(
                "{}: no kernel event was selected by {selection}: its {} read over the profile's span, from the first counter reading to the last ({} ns), as one window, `{PROFILE_SPAN}`, over which a device profile (`device:` in the configuration) derives utilization; --kernel REGEX, --kernel-glob GLOB, --pid or --tid select kernels to read the tracks against instead",
                path.display(),
                count(tracks.len(), "counter track is", "counter tracks are"),
                last - first
            )),
            _ => None,
        };
        for (index, (kernel, durations)) in samples.kernels.into_iter().enumerate() {
            let collector = benchmarks.get(&kernel);
            let rep = collector.result_mut().repetitions;
            let launch_starts = starts.get_mut(index).map(std::mem::take);
            let launch_starts = launch_starts.unwrap_or_default();
            tie_counters(
                collector.result_mut(),
                Launches {
                    kernel: &kernel,
                    repetition: rep,
                    starts: &launch_starts,
                    durations: &durations,
                },
                span,
                CountersOf {
                    benchmark: counters_name.clone(),
                    repetition: counters_rep,
                },
            );
            drop(launch_starts);
            let kernel_artifacts = artifacts.iter().filter(|(k, ..)| *k == kernel);
            for (_, name, artifact) in kernel_artifacts {
                let result = collector.result_mut();
                if let Some(old) = result.artifacts.get(name)
                    && old.text != artifact.text
                {
                    let shown = path.display();
                    result.provenance.notes.push(format!(
                        "artifact `{name}` differs between the files of this import; the one of {shown} is kept"
                    ));
                }
                result.artifacts.insert(name.clone(), artifact.clone());
            }
            for (_, metric, value, unit) in estimates.iter().filter(|(k, ..)| *k == kernel) {
                let (slot, factor) = collector
                    .slot(metric, unit, Source::Estimate, Direction::Lower)
                    .map_err(|message| content(&path, message))?;
                let value = value * factor;
                if !(value.is_finite() && value >= 0.0) {
                    return Err(content!(
                        &path,
                        "kernel `{kernel}`: estimate `{metric}` of {value} {unit} is not a finite count; the custom call's backend_config `cost_estimate` is damaged"
                    ));
                }
                collector.push_at(slot, rep, value);
            }
            let notes = &mut collector.result_mut().provenance.notes;
            notes.extend(samples.notes.iter().cloned());
            // One lookup per kernel, not per launch: a trace holds millions of launches.
            let (slot, factor) = collector
                .slot(KERNEL_TIME, "ns", Source::Timer, Direction::default())
                .map_err(|message| content(&path, message))?;
            // A duration that overflowed on its way to nanoseconds, or a negative one, would
            // make a results file no later command reads (or a meaningless time).
            let clean = durations.iter().all(|d| d.is_finite() && *d >= 0.0);
            if !(clean && factor == 1.0) {
                for value in &durations {
                    units::to_canonical(value * factor, "ns")
                        .map_err(|e| content!(&path, "kernel `{kernel}`: {e}"))?;
                }
            }
            let launches = durations.len();
            let mut durations = durations;
            durations.shrink_to_fit();
            let metric = &mut collector.result_mut().metrics[slot];
            if factor != 1.0 {
                metric.values.extend(durations.iter().map(|v| v * factor));
            } else if metric.values.is_empty() {
                metric.values = durations;
            } else {
                metric.values.extend_from_slice(&durations);
            }
            metric.repetition.extend(std::iter::repeat_n(rep, launches));
            finish_repetition(collector, &path);
        }
        if !(tracks.is_empty() && not_finite.is_empty()) {
            let collector = benchmarks.get(&counters_name);
            let result = collector.result_mut();
            let rep = result.repetitions;
            let notes = samples.notes.iter().cloned();
            result.provenance.notes.extend(notes);
            if let Some(note) = profile_span {
                result.provenance.notes.push(note);
                let details = &mut result.provenance.details;
                details.insert(COUNTER_WINDOWS_DETAIL.into(), PROFILE_SPAN_DETAIL.into());
            }
            if counters_name != COUNTERS_BENCHMARK && rep == 0 {
                result.provenance.notes.push(format!(
                    "the trace's counter readings are on benchmark `{counters_name}`, not `{COUNTERS_BENCHMARK}`: a kernel of the import has that name"
                ));
            }
            for (name, times, values) in tracks {
                result.counters.push(CounterSeries {
                    sampling: sampling.get(&name).copied(),
                    t_ns: times,
                    value: values,
                    ..CounterSeries::new(&name, rep)
                });
            }
            for (counter, n) in not_finite {
                let (shown, readings) = (path.display(), count(n, "reading", "readings"));
                result.provenance.notes.push(format!(
                    "{shown}: counter `{counter}`: {readings} not a finite number (NaN or an infinity) left out"
                ));
            }
            finish_repetition(collector, &path);
        }
    }
    Ok(benchmarks.into_results())
}

/// One kernel's launches in one file, for [`tie_counters`].
struct Launches<'a> {
    kernel: &'a str,
    repetition: u32,
    starts: &'a [f64],
    durations: &'a [f64],
}

/// Gives a kernel's benchmark its launches as kernel windows, read against the counter
/// tracks of the file on the benchmark and repetition `counters_of` (the
/// [`COUNTERS_BENCHMARK`], unless a kernel has that name): each reading is kept once, there,
/// and the readings around a kernel's launches (those inside one plus the one before and the
/// one after it) are found when its utilization is derived or its counters charted
/// ([`series_from_others`]), so a launch between two readings is reported as unresolved, not
/// skipped. Only launches within `span`, the times the tracks cover, get a window; nothing is
/// added when the file has no counter readings (windows only serve counters, and a trace
/// holds millions of launches).
///
/// [`series_from_others`]: crate::model::results::RunResults::series_from_others
fn tie_counters(
    result: &mut BenchmarkResult,
    launches: Launches<'_>,
    span: Option<(f64, f64)>,
    counters_of: CountersOf,
) {
    if launches.starts.len() != launches.durations.len() {
        return;
    }
    // A launch outside the tracks' span ran while no counter was recorded.
    let Some((first, last)) = span else {
        return;
    };
    let (mut start_ns, mut end_ns) = (Vec::new(), Vec::new());
    for (&start, &duration) in launches.starts.iter().zip(launches.durations) {
        if !(start + duration < first || start > last) {
            start_ns.push(start);
            end_ns.push(start + duration);
        }
    }
    if start_ns.is_empty() {
        return;
    }
    let detail = format!(
        "the trace's own kernel events: each launch a window, read against the counter readings of benchmark `{}` around it",
        counters_of.benchmark
    );
    start_ns.shrink_to_fit();
    end_ns.shrink_to_fit();
    crate::model::push_snug(
        &mut result.kernel_windows,
        KernelWindows {
            counters_of: Some(counters_of),
            start_ns,
            end_ns,
            ..KernelWindows::new(launches.kernel, launches.repetition)
        },
    );
    let details = &mut result.provenance.details;
    details.insert(COUNTER_WINDOWS_DETAIL.into(), detail);
}

/// The benchmark an import's counter readings go on: [`COUNTERS_BENCHMARK`], or where a kernel
/// of the import has that name, the first of `counters#2`, `counters#3`, … that none has, so
/// that a kernel's launches and the readings never share one benchmark (and its
/// repetitions).
fn counters_benchmark_name(files: &[(PathBuf, TraceSamples)]) -> String {
    let taken = |name: &str| {
        files
            .iter()
            .any(|(_, samples)| samples.kernels.iter().any(|(kernel, _)| kernel == name))
    };
    std::iter::once(COUNTERS_BENCHMARK.to_string())
        .chain((2..).map(|n| format!("{COUNTERS_BENCHMARK}#{n}")))
        .find(|name| !taken(name))
        .expect("an unbounded list of names")
}

/// Provenance detail saying where a trace benchmark's kernel windows came from.
pub const COUNTER_WINDOWS_DETAIL: &str = "counters.windows";

/// The window a trace's counter tracks are read over when no kernel was selected beside
/// them: the profile's span, from the first counter reading to the last (the whole of each
/// track, as utilization reads a benchmark without kernel windows).
pub const PROFILE_SPAN: &str = "profile-span";

/// [`COUNTER_WINDOWS_DETAIL`] of the counters benchmark of a file read over [`PROFILE_SPAN`].
const PROFILE_SPAN_DETAIL: &str = "`profile-span`: the profile's span, from the first counter reading to the last (no kernel event was selected beside the tracks)";

/// Counts the file just read as one more repetition of the benchmark, imported from `path`.
fn finish_repetition(collector: &mut Collector<'_>, path: &Path) {
    let result = collector.result_mut();
    result.repetitions += 1;
    let shown = path.display().to_string();
    result.provenance.imported_from.push(shown);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The results of files read as `samples`, under `selection` in words.
    fn build(files: Vec<(&str, TraceSamples)>, selection: &str) -> RunResults {
        let policies = Policies::permissive();
        let files = files.into_iter().map(|(p, s)| (p.into(), s)).collect();
        build_results("chrome-trace", files, &policies, selection).unwrap()
    }

    /// Counter tracks of the given (track, time, value) readings.
    fn tracks_of(readings: &[(&str, f64, f64)]) -> tracks::CounterTracks {
        let mut tracks = tracks::CounterTracks::default();
        for &(name, t, v) in readings {
            tracks.push(name, t, v);
        }
        tracks
    }

    #[test]
    fn regexes_search_and_globs_match_whole_names() {
        let s = TraceSelection::new(&["gemm".into()], &["relu_*".into()], None, None).unwrap();
        assert!(s.name_matches("volta_sgemm_128x64_nn"));
        assert!(s.name_matches("relu_kernel"));
        assert!(!s.name_matches("my_relu_kernel"));
        let err = TraceSelection::new(&["(".into()], &[], None, None).unwrap_err();
        let invalid = err.to_string();
        assert!(invalid.starts_with("invalid --kernel pattern"), "{err}");
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
    fn a_traces_samples_go_into_the_results_in_order_and_read_back() {
        use crate::store::JsonLayout;
        let mut counters = tracks::CounterTracks::default();
        let mut piece = tracks::CounterTracks::default();
        for i in 0..300 {
            counters.push("util.value", i as f64 * 10.0, 0.5 + i as f64);
        }
        counters.push("util.value", 5.0, f64::NAN);
        for i in 0..50 {
            piece.push("util.value", 3_000.0 + i as f64 * 10.0, 0.25);
            // A track out of time order is put in order.
            piece.push("late", 900.0 - i as f64, i as f64);
        }
        counters.append(piece);
        let launches = 250;
        let durations: Vec<f64> = (0..launches)
            .map(|i| 5.0 + (i % 7) as f64 * 0.125)
            .collect();
        let starts: Vec<f64> = (0..launches).map(|i| i as f64 * 20.0).collect();
        let a = TraceSamples {
            kernels: vec![("k".into(), durations.clone())],
            starts: vec![starts.clone()],
            counters,
            ..TraceSamples::default()
        };
        let b = TraceSamples {
            kernels: vec![("k".into(), durations), ("j".into(), vec![4.5])],
            starts: vec![starts, vec![1.0]],
            ..TraceSamples::default()
        };
        let results = build(vec![("a.json", a), ("b.json", b)], "the default selection");
        assert!(results.require_measurements("the import").is_ok());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        let allow = crate::store::fsutil::Overwrite::Allow;
        results.save_as(&path, allow, JsonLayout::Compact).unwrap();
        let compact = std::fs::read_to_string(&path).unwrap();
        let r = crate::model::results::RunResults::parse(&compact, Path::new("r.json")).unwrap();
        assert_eq!(r, results);

        let k = r.benchmark("k").unwrap();
        let m = k.metric(KERNEL_TIME).unwrap();
        assert_eq!(m.values.len(), 2 * launches);
        assert_eq!(m.values[7], 5.0);
        assert_eq!(m.values[launches + 3], 5.375);
        let around: Vec<_> = m.repetition.iter().skip(launches - 1).take(2).collect();
        assert_eq!(around, [0, 1]);
        // Launches after the last reading (3,490 ns) get no window.
        let w = &k.kernel_windows[0];
        assert_eq!(w.start_ns.len(), 175);
        assert_eq!(w.end_ns[1], 25.125);
        // Each reading is kept once, on the counters benchmark; the windows say where.
        assert!(k.counters.is_empty());
        let counters_of = CountersOf {
            benchmark: COUNTERS_BENCHMARK.into(),
            repetition: 0,
        };
        assert_eq!(w.counters_of, Some(counters_of));
        let c = r.benchmark(COUNTERS_BENCHMARK).unwrap();
        assert_eq!(c.counters[0].len(), 350);
        assert_eq!(c.counters[0].value[299], 299.5);
        assert_eq!(c.counters[1].counter, "late");
        assert!(c.counters[1].t_ns.is_sorted());
        assert_eq!(c.counters[1].value[0], 49.0);
        let notes = c.provenance.notes.join("\n");
        assert_contains!(notes, "1 reading not a finite number");
        // One launch in its one file: its repetition numbers are left out of the file.
        let numbered = r#""values":[4.5],"repetition""#;
        assert!(!compact.contains(numbered), "{compact}");
        let j = r.benchmark("j").unwrap().metric(KERNEL_TIME).unwrap();
        assert_eq!(j.repetition, [0]);
    }

    #[test]
    fn a_file_of_counter_tracks_without_kernels_is_read_over_the_profile_span() {
        let readings = [("util.value", 5.0, 0.5), ("util.value", 1_005.0, 0.75)];
        let a = TraceSamples {
            counters: tracks_of(&readings),
            ..TraceSamples::default()
        };
        let b = TraceSamples {
            kernels: vec![("k".into(), vec![1.0])],
            starts: vec![vec![0.0]],
            counters: tracks_of(&[("util.value", 0.0, 0.25)]),
            ..TraceSamples::default()
        };
        let imported = build(vec![("a.json", a), ("b.json", b)], "--kernel ^k$");
        let c = imported.benchmark(COUNTERS_BENCHMARK).unwrap();
        // Only the file without a kernel is read over its span, and a note says so.
        let notes = &c.provenance.notes;
        let spans: Vec<&String> = notes.iter().filter(|n| n.contains(PROFILE_SPAN)).collect();
        assert_eq!(spans.len(), 1, "{:?}", c.provenance.notes);
        assert!(spans[0].starts_with("a.json: no kernel event was selected by --kernel ^k$: its 1 counter track is read over the profile's span, from the first counter reading to the last (1000 ns), as one window, `profile-span`"), "{}", spans[0]);
        let windows = &c.provenance.details[COUNTER_WINDOWS_DETAIL];
        assert_eq!(windows, PROFILE_SPAN_DETAIL);
        // No measurement of its own: the readings alone are refused, named.
        let counters = tracks_of(&[("util.value", 5.0, 0.5)]);
        let only_a = TraceSamples {
            counters,
            ..TraceSamples::default()
        };
        let only_a = build(vec![("a.json", only_a)], "the default selection");
        let refused = only_a.require_measurements_hinted("the import", Some("HINT"));
        let err = refused.unwrap_err();
        assert_eq!(
            err,
            "the import holds 1 counter track (on benchmark `counters`: `util.value`) but no measurement, and counter readings alone are nothing to gate: HINT"
        );
    }

    #[test]
    fn each_file_is_a_repetition_of_its_kernels() {
        let a = TraceSamples {
            kernels: vec![("k".into(), vec![1.0, 2.0])],
            counters: tracks_of(&[("util.value", 5.0, 0.5)]),
            ..TraceSamples::default()
        };
        let b = TraceSamples {
            kernels: vec![("k".into(), vec![3.0]), ("j".into(), vec![4.0])],
            ..TraceSamples::default()
        };
        let r = build(vec![("a.json", a), ("b.json", b)], "the default selection");
        let names: Vec<&str> = r.benchmarks.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(names, ["k", "counters", "j"]);
        let k = r.benchmark("k").unwrap();
        let m = k.metric(KERNEL_TIME).unwrap();
        assert_eq!(m.values, [1.0, 2.0, 3.0]);
        assert_eq!(m.repetition, [0, 0, 1]);
        assert_eq!(m.source, Source::Timer);
        assert_eq!(k.repetitions, 2);
        let j = r.benchmark("j").unwrap().metric(KERNEL_TIME).unwrap();
        assert_eq!(j.repetition, [0]);
        let c = r.benchmark(COUNTERS_BENCHMARK).unwrap();
        assert_eq!(c.counters[0].counter, "util.value");
        assert_eq!(c.counters[0].t_ns, [5.0]);
    }
}
