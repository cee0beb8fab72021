//! Evidence: the numbers behind a report's verdicts, carried inside the report for charts,
//! counter tables and artifact diffs.
//!
//! A verdict row says *what* changed; people believe it once they see the samples of both
//! sides, the counter timeline and the diff of the lowered code. Those live in the two result
//! files, which a stored report (`kgate report FILE`) no longer has at hand, so the report
//! carries a compact copy: per benchmark, each metric's samples in repetition order, each
//! counter's readings, and the artifacts of both sides.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::model::results::{BenchmarkResult, RunResults, SharedSeries};
use crate::model::series::CounterSeries;

/// The evidence of a whole comparison, one entry per benchmark present on either side.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Evidence {
    pub benchmarks: Vec<BenchmarkEvidence>,
    /// What was left out to keep the report bounded (see [`Evidence::bound`]); absent when
    /// the evidence is whole (`--full-evidence`, or nothing to leave out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub omitted: Option<Omitted>,
}

/// The parts of the evidence a bounded report leaves out, counted.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Omitted {
    /// Benchmarks none of whose metrics is charted (their verdict did not change, or the cap
    /// on charted metrics was reached): their samples and counter readings are left out, and
    /// their artifacts unless an artifact changed. Their medians, intervals and verdicts are
    /// in the report's rows.
    pub benchmarks: usize,
    /// Metrics whose samples were left out, in those benchmarks and in the charted ones.
    pub metrics: usize,
    /// Series longer than [`MAX_SERIES_POINTS`], thinned to that many points (see
    /// `SamplePair::thinned_from` and `CounterSide::thinned_from`).
    pub thinned_series: usize,
}

/// The most metrics whose samples a bounded report keeps, the most important first.
pub const MAX_CHARTED_METRICS: usize = 200;

/// The most points a series keeps in a bounded report: more than a chart's pixel columns,
/// since a chart draws at most one point per column (or its minimum and maximum).
pub const MAX_SERIES_POINTS: usize = 1000;

/// One benchmark's samples, counters and artifacts, baseline and candidate side by side.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BenchmarkEvidence {
    pub name: String,
    /// Samples per metric, in the order they were measured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<SamplePair>,
    /// Counter readings per counter.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub counters: Vec<CounterPair>,
    /// Artifacts per declared name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<ArtifactPair>,
}

/// A metric's samples on both sides.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SamplePair {
    pub name: String,
    pub unit: String,
    #[serde(default)]
    pub base: Vec<f64>,
    #[serde(default)]
    pub head: Vec<f64>,
    /// Medians of the jobs recorded in the history store for this environment, oldest first
    /// (`kgate check --record`), for a trend chart.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<f64>,
    /// The sample counts `[base, head]` before a bounded report thinned a side to
    /// [`MAX_SERIES_POINTS`] evenly spaced order statistics (the smallest and largest kept),
    /// which keeps the distribution a strip plot shows but not the order of measurement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinned_from: Option<[usize; 2]>,
}

/// A counter's readings on both sides: `[t_ns, value]` pairs of the first repetition that
/// reported it (a timeline), and the per-repetition means (for a table).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CounterPair {
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub unit: String,
    #[serde(default)]
    pub base: CounterSide,
    #[serde(default)]
    pub head: CounterSide,
}

/// One side of a counter.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CounterSide {
    /// `[t_ns, value]` readings of the first repetition that reported the counter.
    #[serde(default)]
    pub timeline: Vec<[f64; 2]>,
    /// The mean reading of each repetition.
    #[serde(default)]
    pub repetition_means: Vec<f64>,
    /// The number of readings in the timeline before a bounded report thinned it to the
    /// smallest and largest reading of each of [`MAX_SERIES_POINTS`]` / 2` stretches of time
    /// order (the envelope a timeline chart draws).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinned_from: Option<usize>,
}

/// An artifact's text on both sides; `None` where that side did not write it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ArtifactPair {
    pub name: String,
    pub path: String,
    pub base: Option<String>,
    pub head: Option<String>,
    /// Whether either side was cut at the size cap.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

impl ArtifactPair {
    /// Whether the two sides differ (an artifact on one side only counts as a change).
    pub fn changed(&self) -> bool {
        self.base != self.head
    }
}

impl Evidence {
    /// Collects the evidence of two runs; benchmarks in the candidate's order, then those only
    /// in the baseline.
    pub fn from_runs(base: Option<&RunResults>, head: &RunResults) -> Evidence {
        let (base_shared, head_shared) =
            (base.map(RunResults::shared_series), head.shared_series());
        Evidence {
            benchmarks: sides(base, head)
                .map(|(name, b, h)| {
                    let from_others = [
                        from_others(base.zip(base_shared.as_ref()), b),
                        from_others(Some((head, &head_shared)), h),
                    ];
                    BenchmarkEvidence::from_results(name, b, h, &from_others)
                })
                .collect(),
            omitted: None,
        }
    }

    /// [`Evidence::from_runs`] followed by [`Evidence::bound`], one benchmark at a time: no
    /// more than one benchmark's whole evidence is held at once.
    pub fn from_runs_bounded<'a>(
        base: Option<&RunResults>,
        head: &RunResults,
        shown: impl Fn(&str) -> Option<&'a [String]>,
    ) -> Evidence {
        let mut omitted = Omitted::default();
        let (base_shared, head_shared) =
            (base.map(RunResults::shared_series), head.shared_series());
        let benchmarks = sides(base, head)
            .map(|(name, b, h)| {
                let keep = shown(name);
                // Counters are charted only for a benchmark the report shows.
                let from_others = match keep {
                    Some(_) => [
                        from_others(base.zip(base_shared.as_ref()), b),
                        from_others(Some((head, &head_shared)), h),
                    ],
                    None => Default::default(),
                };
                let mut evidence = BenchmarkEvidence::from_results(name, b, h, &from_others);
                evidence.bound(keep, &mut omitted);
                evidence
            })
            .collect();
        Evidence {
            benchmarks,
            omitted: (omitted != Omitted::default()).then_some(omitted),
        }
    }

    /// Keeps the evidence to what a report's charts and diffs draw. A benchmark for which
    /// `shown` says `Some(metrics)` keeps its counters and artifacts and the samples of those
    /// metrics (series longer than [`MAX_SERIES_POINTS`] thinned); one for which it says
    /// `None` keeps only its trend medians and its changed artifacts. What was left out is
    /// counted in [`Evidence::omitted`].
    pub fn bound<'a>(&mut self, shown: impl Fn(&str) -> Option<&'a [String]>) {
        let mut omitted = Omitted::default();
        for b in &mut self.benchmarks {
            let keep = shown(&b.name);
            b.bound(keep, &mut omitted);
        }
        self.omitted = (omitted != Omitted::default()).then_some(omitted);
    }

    /// The evidence of a benchmark, by name.
    pub fn benchmark(&self, name: &str) -> Option<&BenchmarkEvidence> {
        self.benchmarks.iter().find(|b| b.name == name)
    }

    /// The evidence by benchmark name, for lookups in a loop (see [`crate::model::by_name`]).
    pub fn by_name(&self) -> std::collections::HashMap<&str, &BenchmarkEvidence> {
        super::by_name(&self.benchmarks, |b| b.name.as_str())
    }
}

/// `count` evenly spaced order statistics of `values` (all of them when there are no more),
/// ascending, the smallest and the largest among them.
fn order_statistics(values: &[f64], count: usize) -> Vec<f64> {
    if values.len() <= count || count < 2 {
        return values.to_vec();
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let last = sorted.len() - 1;
    (0..count)
        .map(|i| sorted[(i * last + (count - 1) / 2) / (count - 1)])
        .collect()
}

/// The smallest and the largest reading (in time order) of each of `buckets` runs of
/// consecutive readings: the outline a line chart of the whole timeline draws.
fn envelope(timeline: &[[f64; 2]], buckets: usize) -> Vec<[f64; 2]> {
    if buckets == 0 || timeline.len() <= 2 * buckets {
        return timeline.to_vec();
    }
    let size = timeline.len().div_ceil(buckets);
    let mut out = Vec::with_capacity(2 * buckets);
    for chunk in timeline.chunks(size) {
        let by_value = |a: &&[f64; 2], b: &&[f64; 2]| a[1].total_cmp(&b[1]);
        let (Some(low), Some(high)) =
            (chunk.iter().min_by(by_value), chunk.iter().max_by(by_value))
        else {
            continue;
        };
        if low == high {
            out.push(*low);
        } else if low[0] <= high[0] {
            out.extend([*low, *high]);
        } else {
            out.extend([*high, *low]);
        }
    }
    out
}

/// Each benchmark of two runs with its two sides: the candidate's in order, then those only
/// in the baseline.
fn sides<'r>(
    base: Option<&'r RunResults>,
    head: &'r RunResults,
) -> impl Iterator<Item = Sides<'r>> {
    let base_index = base.map(RunResults::by_name).unwrap_or_default();
    let head_index = head.by_name();
    let in_head = head.benchmarks.iter().map(move |h| {
        let b = base_index.get(h.name.as_str()).copied();
        (h.name.as_str(), b, Some(h))
    });
    let only_in_base = base
        .into_iter()
        .flat_map(|base| &base.benchmarks)
        .filter(move |b| !head_index.contains_key(b.name.as_str()))
        .map(|b| (b.name.as_str(), Some(b), None));
    in_head.chain(only_in_base)
}

/// A benchmark's name with its baseline and candidate results.
type Sides<'r> = (
    &'r str,
    Option<&'r BenchmarkResult>,
    Option<&'r BenchmarkResult>,
);

/// The readings a benchmark's kernel windows are read against on another benchmark of its
/// run (a trace import's `counters` benchmark), for its counter charts.
fn from_others(
    run: Option<(&RunResults, &SharedSeries)>,
    b: Option<&BenchmarkResult>,
) -> Vec<CounterSeries> {
    match (run, b) {
        (Some((run, shared)), Some(b)) => shared.series_from_others(run, b),
        _ => Vec::new(),
    }
}

/// The metric names a benchmark's evidence holds, in its order: the baseline's, then those
/// only the candidate measured.
pub fn metric_names<'r>(
    base: Option<&'r BenchmarkResult>,
    head: Option<&'r BenchmarkResult>,
) -> Vec<&'r str> {
    let mut names: Vec<&str> = Vec::new();
    for m in [base, head].into_iter().flatten().flat_map(|r| &r.metrics) {
        if !names.contains(&m.name.as_str()) {
            names.push(&m.name);
        }
    }
    names
}

impl BenchmarkEvidence {
    /// [`Evidence::bound`] for one benchmark: `keep` names the metrics whose samples are
    /// charted, None when none is.
    fn bound(&mut self, keep: Option<&[String]>, omitted: &mut Omitted) {
        let mut dropped = 0;
        for m in &mut self.metrics {
            let kept = keep.is_some_and(|names| names.contains(&m.name));
            if !kept && (!m.base.is_empty() || !m.head.is_empty()) {
                m.base = Vec::new();
                m.head = Vec::new();
                dropped += 1;
            }
        }
        self.metrics
            .retain(|m| !m.base.is_empty() || !m.head.is_empty() || !m.history.is_empty());
        // The room of what was dropped goes too: a report of thousands of benchmarks keeps
        // this one's entry to its end.
        self.metrics.shrink_to_fit();
        omitted.metrics += dropped;
        if keep.is_none() {
            let had = dropped > 0
                || !self.counters.is_empty()
                || self.artifacts.iter().any(|a| !a.changed());
            self.counters = Vec::new();
            self.artifacts.retain(ArtifactPair::changed);
            self.artifacts.shrink_to_fit();
            omitted.benchmarks += usize::from(had);
            return;
        }
        for m in &mut self.metrics {
            let counts = [m.base.len(), m.head.len()];
            if counts.iter().any(|n| *n > MAX_SERIES_POINTS) {
                m.base = order_statistics(&m.base, MAX_SERIES_POINTS);
                m.head = order_statistics(&m.head, MAX_SERIES_POINTS);
                m.thinned_from = Some(counts);
                omitted.thinned_series += 1;
            }
        }
        for c in &mut self.counters {
            for side in [&mut c.base, &mut c.head] {
                if side.timeline.len() > MAX_SERIES_POINTS {
                    side.thinned_from = Some(side.timeline.len());
                    side.timeline = envelope(&side.timeline, MAX_SERIES_POINTS / 2);
                    omitted.thinned_series += 1;
                }
            }
        }
    }

    /// One benchmark's evidence; `from_others` holds, for the base and the head, the series its
    /// kernel windows are read against on another benchmark.
    fn from_results(
        name: &str,
        base: Option<&BenchmarkResult>,
        head: Option<&BenchmarkResult>,
        from_others: &[Vec<CounterSeries>; 2],
    ) -> BenchmarkEvidence {
        let mut metrics: Vec<SamplePair> = Vec::new();
        // Pairs found by name through an index: an ncu raw page gives a benchmark thousands.
        let mut position: std::collections::HashMap<&str, usize> = Default::default();
        for (is_head, side) in [(false, base), (true, head)] {
            for m in side.iter().flat_map(|r| &r.metrics) {
                let idx = *position.entry(m.name.as_str()).or_insert_with(|| {
                    metrics.push(SamplePair {
                        name: m.name.clone(),
                        unit: m.unit.clone(),
                        ..SamplePair::default()
                    });
                    metrics.len() - 1
                });
                let values = m.values.clone();
                if is_head {
                    metrics[idx].head = values;
                } else {
                    metrics[idx].base = values;
                }
            }
        }
        let mut counters: BTreeMap<String, CounterPair> = BTreeMap::new();
        for (is_head, side) in [(false, base), (true, head)] {
            let Some(r) = side else { continue };
            let mut by_counter: BTreeMap<&str, BTreeMap<u32, Vec<&CounterSeries>>> =
                BTreeMap::new();
            let from_others = &from_others[usize::from(is_head)];
            let series = r.counters.iter().chain(from_others);
            for c in series.filter(|c| !c.is_empty()) {
                by_counter
                    .entry(c.counter.as_str())
                    .or_default()
                    .entry(c.repetition)
                    .or_default()
                    .push(c);
            }
            for (counter, reps) in by_counter {
                let pair = counters
                    .entry(counter.to_string())
                    .or_insert_with(|| CounterPair {
                        name: counter.to_string(),
                        ..CounterPair::default()
                    });
                let first = reps.values().next().cloned().unwrap_or_default();
                if pair.unit.is_empty() {
                    pair.unit = first.first().map(|c| c.unit.clone()).unwrap_or_default();
                }
                let mut timeline: Vec<[f64; 2]> = first
                    .iter()
                    .flat_map(|c| c.readings().map(|r| [r.t_ns, r.value]))
                    .collect();
                timeline.sort_by(|a, b| a[0].total_cmp(&b[0]));
                let side = CounterSide {
                    timeline,
                    repetition_means: reps
                        .values()
                        .map(|series| {
                            let values = series.iter().flat_map(|c| &c.value);
                            let n = series.iter().map(|c| c.value.len()).sum::<usize>();
                            values.sum::<f64>() / n as f64
                        })
                        .collect(),
                    thinned_from: None,
                };
                if is_head {
                    pair.head = side;
                } else {
                    pair.base = side;
                }
            }
        }
        let mut artifacts: BTreeMap<String, ArtifactPair> = BTreeMap::new();
        for (is_head, side) in [(false, base), (true, head)] {
            for (name, a) in side.iter().flat_map(|r| &r.artifacts) {
                let pair = artifacts
                    .entry(name.clone())
                    .or_insert_with(|| ArtifactPair {
                        name: name.clone(),
                        path: a.path.clone(),
                        ..ArtifactPair::default()
                    });
                pair.truncated |= a.truncated;
                if is_head {
                    pair.head = Some(a.text.clone());
                } else {
                    pair.base = Some(a.text.clone());
                }
            }
        }
        BenchmarkEvidence {
            name: name.to_string(),
            metrics,
            counters: counters.into_values().collect(),
            artifacts: artifacts.into_values().collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::protocol::CounterLine;
    use crate::model::results::{Artifact, MetricSamples, Provenance};

    fn result(name: &str, times: &[f64], util: &[(u32, f64, f64)], ir: &str) -> BenchmarkResult {
        let mut r = BenchmarkResult::new(name, Provenance::default());
        r.metrics.push(MetricSamples::timer("kernel_time", times));
        let mut index = crate::model::results::SeriesIndex::default();
        for &(repetition, t_ns, value) in util {
            let line = CounterLine {
                counter: "sm_util".into(),
                t_ns,
                value,
                unit: "%".into(),
                ..CounterLine::default()
            };
            index.push_counter(&mut r, repetition, &line, None);
        }
        let ptx = Artifact {
            path: "out.ptx".into(),
            text: ir.into(),
            truncated: false,
        };
        r.artifacts.insert("ptx".into(), ptx);
        r
    }

    /// The evidence of benchmark `mm` from both sides, under the default bounds.
    fn paired(base: &BenchmarkResult, head: &BenchmarkResult) -> BenchmarkEvidence {
        BenchmarkEvidence::from_results("mm", Some(base), Some(head), &Default::default())
    }

    #[test]
    fn order_statistics_keep_the_extremes_and_the_spread() {
        let values: Vec<f64> = (0..10_001).rev().map(f64::from).collect();
        let kept = order_statistics(&values, 5);
        assert_eq!(kept, vec![0.0, 2500.0, 5000.0, 7500.0, 10_000.0]);
        assert_eq!(order_statistics(&[3.0, 1.0], 5), vec![3.0, 1.0]);
    }

    #[test]
    fn the_envelope_keeps_each_stretch_s_lowest_and_highest_reading_in_time_order() {
        let timeline: Vec<[f64; 2]> = (0..12)
            .map(|i| [f64::from(i), if i == 4 { 99.0 } else { f64::from(i % 3) }])
            .collect();
        let outline = envelope(&timeline, 3);
        let want = [
            [0.0, 0.0],
            [2.0, 2.0],
            [4.0, 99.0],
            [6.0, 0.0],
            [9.0, 0.0],
            [11.0, 2.0],
        ];
        assert_eq!(outline, want);
        assert_eq!(envelope(&timeline, 6), timeline);
    }

    #[test]
    fn a_bounded_report_keeps_what_changed_thins_long_series_and_counts_the_rest() {
        let long: Vec<f64> = (0..5_000).map(f64::from).collect();
        let util: Vec<(u32, f64, f64)> = (0..3_000)
            .map(|i| (0, f64::from(i), f64::from(i % 7)))
            .collect();
        let changed = result("changed", &long, &util, "a\n");
        let same = result("same", &[1.0, 2.0], &[(0, 1.0, 5.0)], "a\n");
        let mut other_ir = result("same_ir_changed", &[1.0], &[], "a\n");
        let base_other = result("same_ir_changed", &[1.0], &[], "b\n");
        other_ir.metrics[0].values = vec![1.0];
        let run = RunResults::of;
        let base = run(vec![changed.clone(), same.clone(), base_other]);
        let head = run(vec![changed, same, other_ir]);
        let mut e = Evidence::from_runs(Some(&base), &head);
        let whole = e.clone();
        let charted = vec!["kernel_time".to_string()];
        e.bound(|name| (name == "changed").then_some(charted.as_slice()));
        let kept = e.benchmark("changed").unwrap();
        assert_eq!(kept.metrics[0].base.len(), MAX_SERIES_POINTS);
        assert_eq!(kept.metrics[0].thinned_from, Some([5_000, 5_000]));
        assert_eq!(kept.metrics[0].base[0], 0.0);
        assert_eq!(kept.metrics[0].base[MAX_SERIES_POINTS - 1], 4_999.0);
        assert_eq!(kept.counters[0].base.timeline.len(), MAX_SERIES_POINTS);
        assert_eq!(kept.counters[0].base.thinned_from, Some(3_000));
        let means = &whole.benchmarks[0].counters[0].base.repetition_means;
        assert_eq!(&kept.counters[0].base.repetition_means, means);
        let same = e.benchmark("same").unwrap();
        assert!(same.metrics.is_empty() && same.counters.is_empty() && same.artifacts.is_empty());
        // An unchanged benchmark whose lowered code changed keeps the diff.
        let ir = e.benchmark("same_ir_changed").unwrap();
        assert!(ir.metrics.is_empty());
        assert_eq!(ir.artifacts.len(), 1);
        let omitted = Omitted {
            benchmarks: 2,
            metrics: 2,
            thinned_series: 3,
        };
        assert_eq!(e.omitted, Some(omitted));
        // Nothing to leave out: nothing said.
        let mut small = Evidence::from_runs(None, &head);
        small.benchmarks.retain(|b| b.name != "changed");
        small.bound(|_| Some(charted.as_slice()));
        assert_eq!(small.omitted, None);
    }

    #[test]
    fn a_benchmark_left_out_keeps_no_room_for_what_it_dropped() {
        // A compare of 10,000 benchmarks x 20 metrics held 45 MB of emptied metric and
        // counter lists for the benchmarks its report does not chart.
        let mut base = result("mm", &[3.0, 1.0], &[(0, 10.0, 40.0)], "a\n");
        let mut head = result("mm", &[2.0, 4.0], &[(0, 10.0, 90.0)], "a\n");
        for (i, side) in [&mut base, &mut head].into_iter().enumerate() {
            for k in 0..19 {
                let mut m = side.metrics[0].clone();
                m.name = format!("metric_{k}");
                m.values = vec![f64::from(k) + i as f64];
                side.metrics.push(m);
            }
        }
        let mut left_out = paired(&base, &head);
        let mut omitted = Omitted::default();
        left_out.bound(None, &mut omitted);
        assert_eq!(omitted.metrics, 20);
        assert!(left_out.metrics.is_empty() && left_out.counters.is_empty());
        let room = (left_out.metrics.capacity(), left_out.counters.capacity());
        assert_eq!(room, (0, 0), "room kept for dropped metrics or counters");
        let shown = vec!["metric_3".to_string()];
        let mut charted = paired(&base, &head);
        charted.bound(Some(&shown), &mut omitted);
        assert_eq!(charted.metrics.len(), 1);
        let room = charted.metrics.capacity();
        assert_eq!(room, 1, "room kept for dropped metrics");
    }

    #[test]
    fn pairs_samples_counters_and_artifacts_by_name() {
        let util = [(0, 20.0, 50.0), (0, 10.0, 40.0), (1, 5.0, 70.0)];
        let base = result("mm", &[3.0, 1.0], &util, "a\n");
        let head = result("mm", &[2.0], &[(0, 10.0, 90.0)], "b\n");
        let pair = paired(&base, &head);
        assert_eq!(pair.metrics[0].base, vec![3.0, 1.0]);
        assert_eq!(pair.metrics[0].head, vec![2.0]);
        let util = &pair.counters[0];
        assert_eq!(util.unit, "%");
        assert_eq!(util.base.timeline, vec![[10.0, 40.0], [20.0, 50.0]]);
        assert_eq!(util.base.repetition_means, vec![45.0, 70.0]);
        assert_eq!(util.head.repetition_means, vec![90.0]);
        assert!(pair.artifacts[0].changed());
        assert_eq!(pair.artifacts[0].base.as_deref(), Some("a\n"));
    }
}
