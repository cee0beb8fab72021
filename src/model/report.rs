//! The comparison report: the JSON contract of DESIGN.md (`kgate compare --format json`,
//! `schemas/report.schema.json`), and the input of every renderer and of GitHub posting.
//!
//! The structs double as the format, as hyperfine's results do: what is serialized here is
//! what users and tests read, so fields are added with defaults and never renamed. The
//! comparison fills them in; nothing here decides anything.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::model::evidence::{Evidence, MAX_CHARTED_METRICS, metric_names};
use crate::model::metric::{Direction, Source};
use crate::model::results::RunResults;
use crate::model::verdict::{RunVerdict, Verdict};
use crate::stats::Summary;
use crate::stats::inference::Correction;

/// Version of the report format.
pub const REPORT_SCHEMA_VERSION: u32 = 1;

/// How baseline and candidate were obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Design {
    /// Both revisions ran interleaved in the same job (`kgate check --against`).
    Interleaved,
    /// The candidate ran now; the baseline was stored by an earlier job.
    StoredBaseline,
    /// Two result files given on the command line.
    Files,
}

/// The method behind a metric's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// Mann–Whitney U with a Hodges–Lehmann interval (both sides measured in this job, or two
    /// files without history).
    RankTest,
    /// The candidate job's median against a prediction interval over the stored jobs'
    /// medians, whose spread includes job-to-job variance (Bencher's model).
    PredictionInterval,
    /// Welch's t-test on the summaries (mean, standard deviation, count) of one mean per side
    /// whose samples were not kept (nvbench).
    WelchSummaries,
    /// Deterministic metric against its tolerance.
    Tolerance,
    /// No test possible (a side has no samples, or units differ).
    None,
}

/// The model that decided the noisy metrics of a report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Model {
    /// A within-job test on the repetitions of both sides: the rank test, or Welch's test on
    /// summaries where a side stored only a mean (each metric's `method` says which).
    #[default]
    RankTest,
    /// Prediction interval over the history of stored jobs (at least one metric used it).
    PredictionInterval,
}

/// A comparison report (the JSON contract).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Report {
    /// Report format version.
    pub schema_version: u32,
    /// `pass`, `regressed`, `inconclusive` or `no-baseline`.
    pub verdict: RunVerdict,
    /// Benchmark counts by verdict.
    pub summary: Counts,
    /// How the two sides were obtained.
    pub design: Design,
    /// Significance level of the whole gate (family-wise, over metrics and looks).
    pub alpha: f64,
    /// Multiple-testing adjustment across the gated metrics of the run (`bh` or `holm`).
    #[serde(default)]
    pub correction: Correction,
    /// The most looks a benchmark planned (1: fixed repetitions). The looks of a plan are
    /// tested against one boundary that holds alpha over the plan (docs/statistics.md).
    #[serde(default = "one")]
    pub looks: u32,
    /// What the measured benchmarks cost against running every one of them to its plan's
    /// `max`: present where the runner timed them and a benchmark planned looks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Cost>,
    /// The model that decided noisy metrics (`rank-test` or `prediction-interval`); each
    /// metric's `method` says which decided it.
    #[serde(default)]
    pub model: Model,
    /// Revision of the baseline, where known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_commit: Option<String>,
    /// Revision of the candidate, where known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_commit: Option<String>,
    /// Whether the candidate was the work tree with uncommitted changes on top of
    /// `head_commit` (so the two sides can show the same commit and still differ).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub head_dirty: bool,
    /// Things the reader should know (different machines, stored-baseline caveats).
    pub warnings: Vec<String>,
    /// One entry per benchmark.
    pub benchmarks: Vec<BenchmarkComparison>,
    /// The samples, counter readings and artifacts behind the verdicts, for charts and diffs
    /// (see docs/reports.md); absent when the report was built without them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<Evidence>,
}

/// The benchmark time of an adaptive run against a fixed plan at `repetitions.max`, over the
/// benchmarks measured on both sides.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Cost {
    /// Repetitions run, both sides together.
    pub repetitions: u64,
    /// Repetitions a fixed plan at each benchmark's `max` would have run, both sides together.
    pub fixed_repetitions: u64,
    /// Seconds spent on the benchmarks' runs (warm-ups and repetitions, both sides).
    pub seconds: f64,
    /// Seconds a fixed plan at `max` would have spent: the warm-ups as spent, and each side's
    /// repetitions at their mean time, `max` times.
    pub fixed_seconds: f64,
}

impl Cost {
    /// Adds one side of a benchmark: `n` repetitions run of a plan whose `max` is `max`,
    /// taking `seconds`.
    pub fn add(&mut self, n: u32, max: u32, seconds: crate::model::results::Seconds) {
        let max = max.max(n);
        self.repetitions += u64::from(n);
        self.fixed_repetitions += u64::from(max);
        self.seconds += seconds.warmup + seconds.repetitions;
        let per = if n > 0 {
            seconds.repetitions / f64::from(n)
        } else {
            0.0
        };
        self.fixed_seconds += seconds.warmup + per * f64::from(max);
    }
}

impl Report {
    /// Bounds the evidence to what the report draws: the samples of the gating metrics that
    /// changed or could not be decided, at most [`MAX_CHARTED_METRICS`] of them (regressions
    /// first, then improvements, undecided, within threshold), with the counters and artifacts
    /// of their benchmarks, and every metric of a new or missing benchmark (one side only);
    /// summaries only for the rest. See
    /// [`Evidence::bound`].
    pub fn bound_evidence(&mut self) {
        let Some(mut evidence) = self.evidence.take() else {
            return;
        };
        let charted = {
            let by_name = evidence.by_name();
            self.charted_metrics(|name| {
                by_name
                    .get(name)
                    .into_iter()
                    .flat_map(|e| &e.metrics)
                    .map(|m| m.name.as_str())
                    .collect()
            })
        };
        evidence.bound(|name| charted.get(name).map(Vec::as_slice));
        self.evidence = Some(evidence);
    }

    /// Sets the evidence of the two runs, bounded as [`Report::bound_evidence`] bounds it but
    /// built one benchmark at a time, so that the samples of the metrics it leaves out are
    /// never copied (see [`Evidence::from_runs_bounded`]).
    pub fn attach_bounded_evidence(&mut self, base: Option<&RunResults>, head: &RunResults) {
        let charted = {
            let base_index = base.map(|b| b.by_name()).unwrap_or_default();
            let head_index = head.by_name();
            self.charted_metrics(|name| {
                metric_names(base_index.get(name).copied(), head_index.get(name).copied())
            })
        };
        self.evidence = Some(Evidence::from_runs_bounded(base, head, |name| {
            charted.get(name).map(Vec::as_slice)
        }));
    }

    /// The metrics whose samples a bounded report charts, per benchmark (see
    /// [`Report::bound_evidence`]); `evidence_metrics` names the metrics a benchmark's
    /// evidence holds, which are all charted for a new or missing benchmark.
    fn charted_metrics<'n>(
        &self,
        evidence_metrics: impl Fn(&str) -> Vec<&'n str>,
    ) -> std::collections::HashMap<String, Vec<String>> {
        let mut picker = ChartedPicker::default();
        for b in &self.benchmarks {
            picker.offer(b, &evidence_metrics);
        }
        picker.finish()
    }
}

/// Picks the metrics whose samples a bounded report charts, from the rows offered in order:
/// the first [`MAX_CHARTED_METRICS`] in the order of (rank, benchmark, metric), where
/// regressions and new or missing benchmarks rank first, then improvements, undecided and
/// within threshold. It keeps at most that many of each rank, so a suite of 200,000 rows is
/// never listed whole.
#[derive(Default)]
pub struct ChartedPicker {
    ranks: [Vec<(String, String)>; 4],
}

impl ChartedPicker {
    /// Offers a decided benchmark; `evidence_metrics` names the metrics its evidence holds,
    /// which are all charted for a new or missing benchmark (one side only: its evidence is
    /// the run itself).
    pub fn offer<'n>(
        &mut self,
        b: &BenchmarkComparison,
        evidence_metrics: impl Fn(&str) -> Vec<&'n str>,
    ) {
        let rank = |v: Verdict| match v {
            Verdict::Regressed
            | Verdict::Incorrect
            | Verdict::New
            | Verdict::Missing
            | Verdict::Failed => Some(0),
            Verdict::Improved => Some(1),
            Verdict::Inconclusive => Some(2),
            Verdict::WithinThreshold => Some(3),
            Verdict::Unchanged | Verdict::NotGated | Verdict::Skipped | Verdict::Identical => None,
        };
        let mut keep = |rank: usize, metric: &str| {
            let kept = &mut self.ranks[rank];
            let room = kept.len() < MAX_CHARTED_METRICS;
            if room {
                kept.push((b.name.clone(), metric.to_string()));
            }
            room
        };
        if matches!(b.verdict, Verdict::New | Verdict::Missing | Verdict::Failed) {
            for m in evidence_metrics(&b.name) {
                if !keep(0, m) {
                    break;
                }
            }
            return;
        }
        for m in b.metrics.iter().filter(|m| m.gates) {
            if let Some(r) = rank(m.verdict) {
                keep(r, &m.name);
            }
        }
    }

    /// The charted metrics, per benchmark.
    pub fn finish(self) -> std::collections::HashMap<String, Vec<String>> {
        let mut charted: std::collections::HashMap<String, Vec<String>> = Default::default();
        for (bench, metric) in self.ranks.into_iter().flatten().take(MAX_CHARTED_METRICS) {
            charted.entry(bench).or_default().push(metric);
        }
        charted
    }
}

fn one() -> u32 {
    1
}

/// Benchmark counts by verdict.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Counts {
    pub regressed: usize,
    pub improved: usize,
    pub unchanged: usize,
    /// Benchmarks whose worst gating change is smaller than its threshold but not "unchanged".
    #[serde(default)]
    pub within_threshold: usize,
    pub inconclusive: usize,
    /// Benchmarks none of whose metrics may fail the build.
    #[serde(default)]
    pub not_gated: usize,
    pub new: usize,
    pub missing: usize,
    /// Benchmarks not run: diff-aware selection (`--changed-since`) or `--bench` left them out.
    #[serde(default)]
    pub skipped: usize,
    /// Benchmarks that failed on a side (run, build or timeout): nothing was measured to
    /// compare, so the run is an error.
    #[serde(default)]
    pub failed: usize,
    /// Benchmarks not measured because their identity digest was the same on both sides.
    #[serde(default)]
    pub identical: usize,
    /// Benchmarks whose candidate failed its correctness check: they fail the gate whatever
    /// their speed (the run regresses unless an error wins).
    #[serde(default)]
    pub incorrect: usize,
    /// Benchmarks whose only regressions are waived (their verdict leaves the waived metrics out).
    #[serde(default)]
    pub waived: usize,
    pub total: usize,
}

impl Counts {
    /// Counts one more benchmark of this verdict.
    pub fn add(&mut self, verdict: Verdict) {
        self.total += 1;
        let count = match verdict {
            Verdict::Regressed => &mut self.regressed,
            Verdict::Improved => &mut self.improved,
            Verdict::Unchanged => &mut self.unchanged,
            Verdict::WithinThreshold => &mut self.within_threshold,
            Verdict::NotGated => &mut self.not_gated,
            Verdict::Inconclusive => &mut self.inconclusive,
            Verdict::New => &mut self.new,
            Verdict::Missing => &mut self.missing,
            Verdict::Skipped => &mut self.skipped,
            Verdict::Failed => &mut self.failed,
            Verdict::Identical => &mut self.identical,
            Verdict::Incorrect => &mut self.incorrect,
        };
        *count += 1;
    }

    /// The verdict of a run with these counts (a run with a baseline).
    pub fn run_verdict(&self) -> RunVerdict {
        if self.failed > 0 {
            RunVerdict::Error
        } else if self.incorrect > 0 || self.regressed > 0 {
            RunVerdict::Regressed
        } else if self.inconclusive > 0 {
            RunVerdict::Inconclusive
        } else {
            RunVerdict::Pass
        }
    }
}

/// One benchmark's comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BenchmarkComparison {
    pub name: String,
    pub verdict: Verdict,
    /// Why, in one sentence.
    pub explanation: String,
    pub metrics: Vec<MetricComparison>,
    /// What a deeper capture of a regressed benchmark found (`gate.on_regression: profile`
    /// or `kgate check --profile-regressions`); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<crate::model::function_diff::BenchmarkProfile>,
}

/// How the note on parameters that differ between the sides (launch attributes, launch
/// counts, shapes) begins in a benchmark's explanation, which every format then shows beside
/// the time whatever the verdict.
pub const PARAMETERS_DIFFER: &str = "parameters that differ from the baseline:";

impl BenchmarkComparison {
    /// The note of its explanation on parameters that differ between the sides, to the end.
    pub fn changed_parameters(&self) -> Option<&str> {
        let at = self.explanation.find(PARAMETERS_DIFFER)?;
        Some(&self.explanation[at..])
    }

    /// A benchmark's row without metric rows: one that was not compared (failed, new,
    /// missing, skipped, identical), its verdict and why.
    pub fn bare(name: &str, verdict: Verdict, explanation: String) -> BenchmarkComparison {
        BenchmarkComparison {
            name: name.to_string(),
            verdict,
            explanation,
            metrics: Vec::new(),
            profile: None,
        }
    }
}

/// One metric's comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MetricComparison {
    pub name: String,
    pub unit: String,
    pub source: Source,
    pub direction: Direction,
    /// Whether this metric can fail the gate (its rule gates, its source is allowed to, and the
    /// environments allow a metric of its kind to).
    pub gates: bool,
    /// Why a metric whose rule gates may not fail the build in this comparison (its source is
    /// not in `gate.sources`, or baseline and candidate ran on different environments).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_gating: Option<String>,
    pub verdict: Verdict,
    /// Why this verdict.
    pub reason: String,
    pub method: Method,
    /// Threshold used (relative; 0.05 is 5 %): the smallest change that counts as a
    /// regression or an improvement.
    pub threshold: f64,
    pub base: Option<Summary>,
    pub head: Option<Summary>,
    /// Estimated relative change, head against base (0.05 is +5 %): the Hodges–Lehmann shift
    /// where a test ran, else the change between the medians (always shown when both sides
    /// have values).
    pub change: Option<f64>,
    /// Confidence interval of the change on the same scale, at level `ci_level`: the level the
    /// verdict was decided at (after the multiplicity adjustment and the looks), so that a
    /// regression's interval always excludes no change. Absent when no test was possible.
    pub ci: Option<[f64; 2]>,
    /// Two-sided confidence level of `ci` (0.98 is 98 %).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci_level: Option<f64>,
    /// Two-sided p-value of the test (rank test or prediction interval).
    pub p_value: Option<f64>,
    /// A regression accepted by a waiver in `.kgate/waivers.yaml`; it does not fail the gate.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub waived: bool,
    /// The matching waiver's reason (prefixed `expired …:` when it no longer applies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiver: Option<String>,
    /// One-sided p-value in the regression direction (worse than the baseline).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p_regression: Option<f64>,
    /// One-sided p-value in the improvement direction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p_improvement: Option<f64>,
    /// `p_regression` adjusted across the metrics of its family (gated or informational) with
    /// the report's `correction`, after an adaptive run's plan made it sequential (the chance
    /// that some look reaches a p that small); a regression needs it at most alpha.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p_adjusted: Option<f64>,
    /// Equivalence margin (relative): "unchanged" means the equivalence interval lies inside
    /// ±margin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equivalence_margin: Option<f64>,
    /// The interval behind the equivalence (TOST) and non-inferiority claims, at level
    /// 1 − 2·c, c the nominal level of one look at alpha (alpha without looks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equivalence_ci: Option<[f64; 2]>,
    /// Minimum detectable effect: the smallest relative change this comparison would flag
    /// with 80 % power, from the observed noise and n, at the one-sided level a single
    /// regression faces after the correction (alpha / gated metrics, at one look's nominal
    /// level). Null when no
    /// change is detectable (too few repetitions for the level) or there is no test.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mde: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::results::MetricSamples;
    use crate::stats::inference::Xorshift;

    /// The charted metrics as they were first chosen: every candidate listed, sorted by rank
    /// and benchmark (stable, so a benchmark's metrics keep their order), the first taken.
    fn charted_by_sorting(
        report: &Report,
        evidence_metrics: impl Fn(&str) -> Vec<String>,
    ) -> Vec<(String, String)> {
        let rank = |v: Verdict| match v {
            Verdict::Regressed | Verdict::New | Verdict::Missing => Some(0),
            Verdict::Improved => Some(1),
            Verdict::Inconclusive => Some(2),
            Verdict::WithinThreshold => Some(3),
            _ => None,
        };
        let mut candidates = Vec::new();
        for (order, b) in report.benchmarks.iter().enumerate() {
            if matches!(b.verdict, Verdict::New | Verdict::Missing) {
                for m in evidence_metrics(&b.name) {
                    candidates.push((0, order, b.name.clone(), m));
                }
                continue;
            }
            for m in b.metrics.iter().filter(|m| m.gates) {
                if let Some(r) = rank(m.verdict) {
                    candidates.push((r, order, b.name.clone(), m.name.clone()));
                }
            }
        }
        candidates.sort_by_key(|c| (c.0, c.1));
        candidates
            .into_iter()
            .take(MAX_CHARTED_METRICS)
            .map(|(_, _, b, m)| (b, m))
            .collect()
    }

    #[test]
    fn the_charted_metrics_are_the_first_by_rank_and_order_of_every_candidate() {
        use crate::compare::{ComparePolicy, blank};
        use Verdict::*;
        #[rustfmt::skip]
        let verdicts = [Regressed, Inconclusive, Improved, WithinThreshold, Unchanged, NotGated, New,
            Missing, Skipped];
        let mut rng = Xorshift::new(7);
        let mut pick = |n: usize| (rng.next_u64() % n as u64) as usize;
        let mut cut_short = 0;
        for trial in 0..60 {
            // Few rows (nothing cut) to many more than are charted, with every verdict.
            let benchmarks = [3, 20, 90, 400][trial % 4];
            let policy = ComparePolicy::default();
            let mut report =
                crate::compare::no_baseline(&RunResults::of(Vec::new()), &policy, String::new());
            for b in 0..benchmarks {
                let verdict = verdicts[pick(verdicts.len())];
                let mut metrics = Vec::new();
                for m in 0..pick(5) {
                    let mut row = blank(&MetricSamples::timer(&format!("m{m}"), &[]), &policy);
                    row.verdict = verdicts[pick(verdicts.len())];
                    row.gates = pick(4) != 0;
                    metrics.push(row);
                }
                report.benchmarks.push(BenchmarkComparison {
                    name: format!("b{b}"),
                    verdict,
                    explanation: String::new(),
                    metrics,
                    profile: None,
                });
            }
            let evidence_metrics = |name: &str| {
                (0..name.len() % 4)
                    .map(|m| format!("{name}_side_{m}"))
                    .collect::<Vec<String>>()
            };
            let expected = charted_by_sorting(&report, evidence_metrics);
            cut_short += usize::from(expected.len() == MAX_CHARTED_METRICS);
            let names: Vec<Vec<String>> = report
                .benchmarks
                .iter()
                .map(|b| evidence_metrics(&b.name))
                .collect();
            let charted = report.charted_metrics(|name| {
                let at = report.benchmarks.iter().position(|b| b.name == name);
                at.map(|at| names[at].iter().map(String::as_str).collect())
                    .unwrap_or_default()
            });
            let mut grouped: std::collections::HashMap<String, Vec<String>> = Default::default();
            for (b, m) in expected {
                grouped.entry(b).or_default().push(m);
            }
            assert_eq!(charted, grouped, "trial {trial}");
        }
        let cut = cut_short > 0;
        assert!(cut, "no trial had more candidates than are charted");
    }
}
