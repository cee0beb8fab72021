//! Comparison: baseline against candidate, metric by metric, into verdicts.
//!
//! A gate that cries wolf gets switched off, so every verdict here is a bounded-error claim
//! (statistics.md §13.3, restated in `docs/statistics.md`). Noisy metrics get one-sided
//! Mann–Whitney p-values in the regression and improvement directions and a Hodges–Lehmann
//! shift on log values with its distribution-free interval. The regression p-values of all
//! gated metrics of a run are adjusted together (Benjamini–Hochberg or Holm) and tested at
//! alpha / looks, so neither many benchmarks nor adaptive repetitions inflate false alarms.
//! "Regressed" needs significance and a change of at least the threshold; "unchanged" is an
//! equivalence (TOST) claim: the 1 − 2·alpha interval lies inside ±margin; everything else is
//! "inconclusive", never a guess. Against a baseline stored by another job, with earlier jobs
//! as history, a prediction interval over the jobs' medians replaces the within-job test
//! (Bencher's model). Metrics declared deterministic (a `tolerance`) are compared against it
//! without statistics.
//!
//! The structs here are the JSON report contract of DESIGN.md.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::inference::{self, Correction, History};
use crate::metric::{Direction, Source, Tolerance};
use crate::results::{BenchmarkResult, MetricSamples, RunResults, Status};
use crate::stats::{self, Alternative, Summary};
use crate::units::format_change;

/// Version of the report format.
pub const REPORT_SCHEMA_VERSION: u32 = 1;

/// The outcome of a whole comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RunVerdict {
    Pass,
    Regressed,
    Inconclusive,
    NoBaseline,
}

/// The verdict of a benchmark or metric.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Regressed,
    Inconclusive,
    Improved,
    Unchanged,
    New,
    Missing,
    /// Not run because no changed file matches its `paths` (`kgate check --changed-since`).
    Skipped,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Regressed => "regressed",
            Verdict::Inconclusive => "inconclusive",
            Verdict::Improved => "improved",
            Verdict::Unchanged => "unchanged",
            Verdict::New => "new",
            Verdict::Missing => "missing",
            Verdict::Skipped => "skipped",
        }
    }
}

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
    /// Deterministic metric against its tolerance.
    Tolerance,
    /// No test possible (a side has no samples, or units differ).
    None,
}

/// The model that decided the noisy metrics of a report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Model {
    /// Two-sample rank test on the repetitions of both sides.
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
    /// Looks planned per benchmark; each look was tested at alpha / looks.
    #[serde(default = "one")]
    pub looks: u32,
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
    /// Things the reader should know (different machines, stored-baseline caveats).
    pub warnings: Vec<String>,
    /// One entry per benchmark.
    pub benchmarks: Vec<BenchmarkComparison>,
    /// The samples, counter readings and artifacts behind the verdicts, for charts and diffs
    /// (see docs/reports.md); absent when the report was built without them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<crate::evidence::Evidence>,
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
    pub inconclusive: usize,
    pub new: usize,
    pub missing: usize,
    /// Benchmarks not run by diff-aware selection.
    #[serde(default)]
    pub skipped: usize,
    /// Benchmarks whose only regressions are waived (their verdict leaves the waived metrics out).
    #[serde(default)]
    pub waived: usize,
    pub total: usize,
}

/// One benchmark's comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BenchmarkComparison {
    pub name: String,
    pub verdict: Verdict,
    /// Why, in one sentence.
    pub explanation: String,
    pub metrics: Vec<MetricComparison>,
}

/// One metric's comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MetricComparison {
    pub name: String,
    pub unit: String,
    pub source: Source,
    pub direction: Direction,
    /// Whether this metric can fail the gate (its rule gates and its source is allowed to).
    pub gates: bool,
    pub verdict: Verdict,
    /// Why this verdict.
    pub reason: String,
    pub method: Method,
    /// Threshold used (relative; 0.05 is 5 %): the smallest change that counts as a
    /// regression or an improvement.
    pub threshold: f64,
    pub base: Option<Summary>,
    pub head: Option<Summary>,
    /// Estimated relative change, head against base (0.05 is +5 %).
    pub change: Option<f64>,
    /// Confidence interval of the change on the same scale, at level 1 − alpha.
    pub ci: Option<[f64; 2]>,
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
    /// the report's `correction`; a regression needs it at most alpha / looks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p_adjusted: Option<f64>,
    /// Equivalence margin (relative): "unchanged" means the equivalence interval lies inside
    /// ±margin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equivalence_margin: Option<f64>,
    /// The interval behind the equivalence (TOST) claim, at level 1 − 2·alpha / looks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equivalence_ci: Option<[f64; 2]>,
    /// Minimum detectable effect: the smallest relative change this comparison would flag
    /// with 80 % power, from the observed noise and n, at the one-sided level a single
    /// regression faces after the correction (alpha / looks / gated metrics). Null when no
    /// change is detectable (too few repetitions for the level) or there is no test.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mde: Option<f64>,
}

/// What decides verdicts and which sources may fail the build.
#[derive(Debug, Clone, PartialEq)]
pub struct ComparePolicy {
    /// Family-wise level of the gate.
    pub alpha: f64,
    pub gating_sources: Vec<Source>,
    /// Adjustment across the gated metrics of a run.
    pub correction: Correction,
    /// Equivalence margin; `None` uses each metric's threshold.
    pub equivalence_margin: Option<f64>,
    /// Size the gated family is assumed to have at least (0: its actual size). The interim
    /// looks of an adaptive run analyse one benchmark at a time; this makes them as strict as
    /// the final comparison of the whole run, so that a benchmark does not stop at a look whose
    /// evidence the run-wide correction will not accept.
    pub family_hint: usize,
}

impl Default for ComparePolicy {
    fn default() -> Self {
        ComparePolicy {
            alpha: 0.01,
            gating_sources: Source::DEFAULT_GATING.to_vec(),
            correction: Correction::Bh,
            equivalence_margin: None,
            family_hint: 0,
        }
    }
}

impl From<&crate::config::GatePolicy> for ComparePolicy {
    fn from(p: &crate::config::GatePolicy) -> Self {
        ComparePolicy {
            alpha: p.alpha,
            gating_sources: p.sources.clone(),
            correction: p.correction,
            equivalence_margin: p.equivalence_margin.map(|m| m.0),
            family_hint: 0,
        }
    }
}

/// Compares two runs.
pub fn compare(
    base: &RunResults,
    head: &RunResults,
    policy: &ComparePolicy,
    design: Design,
) -> Report {
    compare_with_history(base, head, &[], policy, design)
}

/// Looks planned for a run: the largest plan recorded with its benchmarks (1 without looks).
pub fn planned_looks(head: &RunResults) -> u32 {
    head.benchmarks
        .iter()
        .filter_map(|b| b.looks.first().map(|l| l.of))
        .max()
        .unwrap_or(1)
        .max(1)
}

/// Compares two runs. `history` holds result files of earlier jobs (oldest first or any
/// order) besides `base`: with a stored baseline (`Design::StoredBaseline`) and at least one
/// such job, noisy metrics are decided by a prediction interval over the jobs' medians, whose
/// spread includes the job-to-job variance that a within-job test cannot see.
pub fn compare_with_history(
    base: &RunResults,
    head: &RunResults,
    history: &[RunResults],
    policy: &ComparePolicy,
    design: Design,
) -> Report {
    let medians = if history.is_empty() {
        JobMedians::new()
    } else {
        job_medians(std::iter::once(base).chain(history))
    };
    compare_with_job_medians(base, head, &medians, policy, design)
}

/// Log-scale medians of earlier jobs per (benchmark, metric): the input of the
/// prediction-interval model, from result files or from the history store.
pub type JobMedians = std::collections::BTreeMap<(String, String), Vec<f64>>;

/// The job medians of result files.
pub fn job_medians<'r>(runs: impl IntoIterator<Item = &'r RunResults>) -> JobMedians {
    let mut out = JobMedians::new();
    for r in runs {
        for b in &r.benchmarks {
            for m in &b.metrics {
                if let Some(median) = job_summary(r, &b.name, &m.name) {
                    out.entry((b.name.clone(), m.name.clone()))
                        .or_default()
                        .push(median);
                }
            }
        }
    }
    out
}

/// [`compare_with_history`] with the earlier jobs given as log-scale medians (the stored
/// baseline's own median included by the caller where it counts as a job).
pub fn compare_with_job_medians(
    base: &RunResults,
    head: &RunResults,
    medians: &JobMedians,
    policy: &ComparePolicy,
    design: Design,
) -> Report {
    let looks = planned_looks(head);
    let ctx = Context {
        policy,
        alpha_look: policy.alpha / f64::from(looks),
        history: if design == Design::StoredBaseline {
            medians.clone()
        } else {
            JobMedians::new()
        },
    };
    let mut benchmarks = Vec::new();
    let mut pending: Vec<(usize, usize, Evidence)> = Vec::new();
    for h in &head.benchmarks {
        let cmp = match base.benchmark(&h.name) {
            Some(b) => {
                let (cmp, evidence) = gather_benchmark(b, h, &ctx);
                let index = benchmarks.len();
                pending.extend(evidence.into_iter().map(|(m, e)| (index, m, e)));
                cmp
            }
            None => BenchmarkComparison {
                name: h.name.clone(),
                verdict: Verdict::New,
                explanation:
                    "not in the baseline; this run's numbers become its reference once saved".into(),
                metrics: Vec::new(),
            },
        };
        benchmarks.push(cmp);
    }
    let used_history = pending
        .iter()
        .any(|(_, _, e)| e.method == Method::PredictionInterval);
    decide_all(&mut benchmarks, pending, &ctx);
    for cmp in &mut benchmarks {
        if let (Some(b), Some(h)) = (base.benchmark(&cmp.name), head.benchmark(&cmp.name)) {
            crate::utilization::refuse_mixed(b, h, cmp);
        }
    }
    for b in &mut benchmarks {
        if b.verdict != Verdict::New {
            aggregate(b);
            crate::explain::annotate(b);
        }
    }
    for b in &base.benchmarks {
        if head.benchmark(&b.name).is_none() {
            benchmarks.push(BenchmarkComparison {
                name: b.name.clone(),
                verdict: Verdict::Missing,
                explanation: "in the baseline but not in this run".into(),
                metrics: Vec::new(),
            });
        }
    }
    let mut warnings: Vec<String> = base
        .environment
        .differences(&head.environment)
        .into_iter()
        .map(|d| format!("baseline and candidate ran on different environments: {d}"))
        .collect();
    for b in &head.benchmarks {
        for u in &b.provenance.unavailable {
            warnings.push(format!(
                "{}: counter `{}` unavailable ({}); hint: {}",
                b.name, u.counter, u.reason, u.hint
            ));
        }
    }
    if design == Design::StoredBaseline && !used_history {
        warnings.push("the baseline was stored by another job; job-to-job offsets are not visible to a within-job test, so small changes may be machine noise (run `kgate check --against REF` to interleave both revisions, or keep a history with `kgate check --record` (or give earlier result files with `--history`) for a prediction interval)".into());
    }
    let summary = count(&benchmarks);
    let verdict = if summary.regressed > 0 {
        RunVerdict::Regressed
    } else if summary.inconclusive > 0 {
        RunVerdict::Inconclusive
    } else {
        RunVerdict::Pass
    };
    Report {
        schema_version: REPORT_SCHEMA_VERSION,
        verdict,
        summary,
        design,
        alpha: policy.alpha,
        correction: policy.correction,
        looks,
        model: if used_history {
            Model::PredictionInterval
        } else {
            Model::RankTest
        },
        base_commit: base.environment.git.as_ref().map(|g| g.commit.clone()),
        head_commit: head.environment.git.as_ref().map(|g| g.commit.clone()),
        warnings,
        benchmarks,
        evidence: None,
    }
}

/// The report when there is nothing to compare against.
pub fn no_baseline(head: &RunResults, policy: &ComparePolicy, reason: String) -> Report {
    let benchmarks: Vec<_> = head
        .benchmarks
        .iter()
        .map(|h| BenchmarkComparison {
            name: h.name.clone(),
            verdict: Verdict::New,
            explanation: "no baseline to compare against".into(),
            metrics: Vec::new(),
        })
        .collect();
    Report {
        schema_version: REPORT_SCHEMA_VERSION,
        verdict: RunVerdict::NoBaseline,
        summary: count(&benchmarks),
        design: Design::StoredBaseline,
        alpha: policy.alpha,
        correction: policy.correction,
        looks: planned_looks(head),
        model: Model::RankTest,
        base_commit: None,
        head_commit: head.environment.git.as_ref().map(|g| g.commit.clone()),
        warnings: vec![reason],
        benchmarks,
        evidence: None,
    }
}

pub fn count(benchmarks: &[BenchmarkComparison]) -> Counts {
    let mut c = Counts {
        total: benchmarks.len(),
        ..Counts::default()
    };
    for b in benchmarks {
        match b.verdict {
            Verdict::Regressed => c.regressed += 1,
            Verdict::Improved => c.improved += 1,
            Verdict::Unchanged => c.unchanged += 1,
            Verdict::Inconclusive => c.inconclusive += 1,
            Verdict::New => c.new += 1,
            Verdict::Missing => c.missing += 1,
            Verdict::Skipped => c.skipped += 1,
        }
    }
    c
}

/// What the comparison of a run knows besides the two samples.
struct Context<'a> {
    policy: &'a ComparePolicy,
    /// Level of one look: alpha / planned looks.
    alpha_look: f64,
    /// Job medians for the prediction-interval model (the stored baseline's included); empty
    /// otherwise.
    history: JobMedians,
}

/// Test results of a noisy metric waiting for the run-wide multiplicity adjustment.
struct Evidence {
    method: Method,
    change: f64,
    ci: [f64; 2],
    ci_level: f64,
    equivalence_ci: Option<[f64; 2]>,
    p_two: f64,
    p_reg: f64,
    p_imp: f64,
    /// Log-scale noise and sizes for the minimum detectable effect, or the prediction
    /// history.
    power: Power,
    /// What the test compared, for the reason ("10 vs 10 repetitions", "3 stored jobs").
    basis: String,
}

enum Power {
    /// Two-sample rank test: base and head values.
    Samples {
        base: Vec<f64>,
        head: Vec<f64>,
    },
    Prediction(History),
}

/// Compares one benchmark's metrics; noisy metrics come back undecided with their evidence,
/// indexed by metric position.
fn gather_benchmark(
    base: &BenchmarkResult,
    head: &BenchmarkResult,
    ctx: &Context<'_>,
) -> (BenchmarkComparison, Vec<(usize, Evidence)>) {
    let mut cmp = BenchmarkComparison {
        name: head.name.clone(),
        verdict: Verdict::Inconclusive,
        explanation: String::new(),
        metrics: Vec::new(),
    };
    for (side, r) in [("candidate", head), ("baseline", base)] {
        if r.status == Status::Failed {
            let why = r
                .failure
                .as_ref()
                .map(|f| f.message.as_str())
                .unwrap_or("failed");
            cmp.verdict = Verdict::Missing;
            cmp.explanation = format!("failed in the {side}: {why}");
            return (cmp, Vec::new());
        }
    }
    let mut evidence = Vec::new();
    for h in &head.metrics {
        let m = match base.metric(&h.name) {
            Some(b) => {
                let (m, e) = gather_metric(&head.name, b, h, ctx);
                if let Some(e) = e {
                    evidence.push((cmp.metrics.len(), e));
                }
                m
            }
            None => MetricComparison {
                verdict: Verdict::New,
                reason: "not measured in the baseline".into(),
                method: Method::None,
                base: None,
                head: stats::summarize(&h.values),
                ..blank(h, ctx.policy)
            },
        };
        cmp.metrics.push(m);
    }
    for b in &base.metrics {
        if head.metric(&b.name).is_none() {
            cmp.metrics.push(MetricComparison {
                verdict: Verdict::Missing,
                reason: "measured in the baseline but not in this run".into(),
                method: Method::None,
                base: stats::summarize(&b.values),
                head: None,
                ..blank(b, ctx.policy)
            });
        }
    }
    (cmp, evidence)
}

/// A benchmark's verdict: the worst of its gating metrics.
fn aggregate(cmp: &mut BenchmarkComparison) {
    if cmp.verdict == Verdict::Missing && cmp.metrics.is_empty() {
        return;
    }
    let gating: Vec<&MetricComparison> = cmp
        .metrics
        .iter()
        .filter(|m| m.gates && !matches!(m.verdict, Verdict::New | Verdict::Missing))
        .collect();
    let pick = |v: Verdict| gating.iter().filter(move |m| m.verdict == v);
    let (verdict, explanation) = if gating.is_empty() {
        (
            Verdict::Unchanged,
            "no metric of this benchmark gates; see the metric rows".to_string(),
        )
    } else {
        let order = [
            Verdict::Regressed,
            Verdict::Inconclusive,
            Verdict::Improved,
            Verdict::Unchanged,
        ];
        let verdict = order
            .into_iter()
            .find(|v| pick(*v).next().is_some())
            .unwrap_or(Verdict::Unchanged);
        let explanation = pick(verdict)
            .map(|m| format!("{}: {}", m.name, m.reason))
            .collect::<Vec<_>>()
            .join("; ");
        (verdict, explanation)
    };
    cmp.verdict = verdict;
    cmp.explanation = explanation;
}

/// The parts of a metric comparison that do not depend on the test.
pub(crate) fn blank(m: &MetricSamples, policy: &ComparePolicy) -> MetricComparison {
    MetricComparison {
        name: m.name.clone(),
        unit: m.unit.clone(),
        source: m.source,
        direction: m.direction,
        gates: m.gate.gates && policy.gating_sources.contains(&m.source),
        verdict: Verdict::Inconclusive,
        reason: String::new(),
        method: Method::None,
        threshold: m.gate.threshold,
        base: None,
        head: None,
        change: None,
        ci: None,
        p_value: None,
        waived: false,
        waiver: None,
        p_regression: None,
        p_improvement: None,
        p_adjusted: None,
        equivalence_margin: None,
        equivalence_ci: None,
        mde: None,
    }
}

/// Compares one metric on its own (a family of one, one look); the candidate's gate rule and
/// direction apply.
pub fn compare_metric(
    base: &MetricSamples,
    head: &MetricSamples,
    policy: &ComparePolicy,
) -> MetricComparison {
    let ctx = Context {
        policy,
        alpha_look: policy.alpha,
        history: JobMedians::new(),
    };
    let (mut out, evidence) = gather_metric("", base, head, &ctx);
    if let Some(e) = evidence {
        let (p_reg, p_imp) = (e.p_reg, e.p_imp);
        decide(&mut out, e, p_reg, p_imp, 1, &ctx);
    }
    out
}

/// Summaries, and either a final decision (tolerance, no test possible) or the evidence of a
/// test that still needs the run-wide adjustment.
fn gather_metric(
    benchmark: &str,
    base: &MetricSamples,
    head: &MetricSamples,
    ctx: &Context<'_>,
) -> (MetricComparison, Option<Evidence>) {
    let mut out = MetricComparison {
        base: stats::summarize(&base.values),
        head: stats::summarize(&head.values),
        ..blank(head, ctx.policy)
    };
    if head.gate.gates && !out.gates {
        out.reason = format!(
            "source `{}` may not fail the build (gate.sources); ",
            head.source.as_str()
        );
    }
    let fail = |out: &mut MetricComparison, reason: String, method: Method| {
        out.verdict = Verdict::Inconclusive;
        out.reason.push_str(&reason);
        out.method = method;
    };
    if base.unit != head.unit {
        fail(
            &mut out,
            format!(
                "units differ (`{}` in the baseline, `{}` now); cannot compare",
                base.unit, head.unit
            ),
            Method::None,
        );
        return (out, None);
    }
    let (Some(b), Some(h)) = (&out.base, &out.head) else {
        fail(
            &mut out,
            "a side has no valid samples".to_string(),
            Method::None,
        );
        return (out, None);
    };
    if let Some(tol) = head.gate.tolerance {
        let d = by_tolerance(b.median, h.median, tol, head.direction);
        out.verdict = d.verdict;
        out.reason.push_str(&d.reason);
        out.method = Method::Tolerance;
        out.change = Some(d.change);
        return (out, None);
    }
    let margin = ctx.policy.equivalence_margin.unwrap_or(head.gate.threshold);
    out.equivalence_margin = Some(margin);
    let evidence = prediction_evidence(benchmark, &head.name, &head.values, head.direction, ctx)
        .map(Ok)
        .unwrap_or_else(|| rank_evidence(&base.values, &head.values, head.direction, ctx));
    match evidence {
        Ok(e) => {
            out.method = e.method;
            out.change = Some(e.change);
            out.ci = Some(e.ci);
            out.equivalence_ci = e.equivalence_ci;
            out.p_value = Some(e.p_two);
            out.p_regression = Some(e.p_reg);
            out.p_improvement = Some(e.p_imp);
            (out, Some(e))
        }
        Err((reason, p_two)) => {
            fail(&mut out, reason, Method::RankTest);
            out.p_value = p_two;
            (out, None)
        }
    }
}

/// p-values in the regression and improvement directions for `head` against `base`.
fn directional(head: &[f64], base: &[f64], direction: Direction) -> Option<(f64, f64, f64)> {
    let up = stats::mann_whitney(head, base, Alternative::Greater)?.p_value;
    let down = stats::mann_whitney(head, base, Alternative::Less)?.p_value;
    let two = stats::mann_whitney(head, base, Alternative::TwoSided)?.p_value;
    Some(match direction {
        Direction::Lower => (up, down, two),
        Direction::Higher => (down, up, two),
    })
}

/// Hodges–Lehmann change of head against base as a relative change with its interval: on logs
/// for positive data (a ratio), otherwise relative to the baseline median.
fn relative_shift(base: &[f64], head: &[f64], confidence: f64) -> Option<(f64, [f64; 2])> {
    let positive = base.iter().chain(head).all(|v| *v > 0.0);
    if positive {
        let lb: Vec<f64> = base.iter().map(|v| v.ln()).collect();
        let lh: Vec<f64> = head.iter().map(|v| v.ln()).collect();
        stats::hodges_lehmann(&lh, &lb, confidence)
            .map(|s| (s.shift.exp_m1(), [s.low.exp_m1(), s.high.exp_m1()]))
    } else {
        let scale = stats::median(base).map(f64::abs).filter(|m| *m > 0.0)?;
        stats::hodges_lehmann(head, base, confidence)
            .map(|s| (s.shift / scale, [s.low / scale, s.high / scale]))
    }
}

fn percent_level(confidence: f64) -> String {
    format!("{}", (confidence * 100.0 * 1000.0).round() / 1000.0)
}

/// The two-sample rank test: Mann–Whitney p-values and Hodges–Lehmann intervals. Err carries
/// the reason no decision is possible and the two-sided p-value when there is one.
fn rank_evidence(
    base: &[f64],
    head: &[f64],
    direction: Direction,
    ctx: &Context<'_>,
) -> Result<Evidence, (String, Option<f64>)> {
    let ps = directional(head, base, direction);
    let confidence = 1.0 - ctx.policy.alpha;
    let shift = relative_shift(base, head, confidence);
    let (Some((p_reg, p_imp, p_two)), Some((change, ci))) = (ps, shift) else {
        let n = base.len().min(head.len());
        let reason = format!(
            "too few samples ({} baseline, {} candidate) for a {} % interval; raise `repetitions` (at least 5 per side at alpha 0.01)",
            base.len(),
            head.len(),
            percent_level(confidence)
        ) + if n == 0 { " (a side is empty)" } else { "" };
        return Err((reason, ps.map(|p| p.2)));
    };
    let equivalence_ci = relative_shift(base, head, 1.0 - 2.0 * ctx.alpha_look).map(|s| s.1);
    Ok(Evidence {
        method: Method::RankTest,
        change,
        ci,
        ci_level: confidence,
        equivalence_ci,
        p_two,
        p_reg,
        p_imp,
        power: Power::Samples {
            base: base.to_vec(),
            head: head.to_vec(),
        },
        basis: format!("{} vs {} repetitions", base.len(), head.len()),
    })
}

/// The median of the logs of a job's values for one metric, when all are positive.
fn job_summary(results: &RunResults, benchmark: &str, metric: &str) -> Option<f64> {
    let b = results.benchmark(benchmark)?;
    if b.status == Status::Failed {
        return None;
    }
    let values = &b.metric(metric)?.values;
    if values.is_empty() || values.iter().any(|v| !(v.is_finite() && *v > 0.0)) {
        return None;
    }
    let logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
    stats::median(&logs)
}

/// Bencher's model: the candidate job's median (log scale) against a Student prediction
/// interval over the stored jobs' medians. None when fewer than two jobs hold the metric.
fn prediction_evidence(
    benchmark: &str,
    metric: &str,
    head: &[f64],
    direction: Direction,
    ctx: &Context<'_>,
) -> Option<Evidence> {
    if ctx.history.is_empty() || head.iter().any(|v| !(v.is_finite() && *v > 0.0)) {
        return None;
    }
    let jobs: Vec<f64> = ctx
        .history
        .get(&(benchmark.to_string(), metric.to_string()))
        .cloned()
        .unwrap_or_default();
    let history = History::new(&jobs)?;
    if history.scale().is_nan() || history.scale() <= 0.0 {
        // Jobs that agree exactly give a zero-width interval; the rank test decides instead.
        return None;
    }
    let logs: Vec<f64> = head.iter().map(|v| v.ln()).collect();
    let y = stats::median(&logs)?;
    let d = y - history.mean;
    let above = history.p_above(y);
    let (p_reg, p_imp) = match direction {
        Direction::Lower => (above, 1.0 - above),
        Direction::Higher => (1.0 - above, above),
    };
    let interval = |confidence: f64| {
        let w = history.half_width(confidence);
        [(d - w).exp_m1(), (d + w).exp_m1()]
    };
    let confidence = 1.0 - ctx.policy.alpha;
    Some(Evidence {
        method: Method::PredictionInterval,
        change: d.exp_m1(),
        ci: interval(confidence),
        ci_level: confidence,
        equivalence_ci: Some(interval(1.0 - 2.0 * ctx.alpha_look)),
        p_two: (2.0 * above.min(1.0 - above)).min(1.0),
        p_reg,
        p_imp,
        power: Power::Prediction(history),
        basis: format!("this job's median against {} stored jobs", jobs.len()),
    })
}

/// Adjusts the regression- and improvement-direction p-values within each family (gating
/// metrics; informational metrics) and decides every pending metric.
fn decide_all(
    benchmarks: &mut [BenchmarkComparison],
    pending: Vec<(usize, usize, Evidence)>,
    ctx: &Context<'_>,
) {
    let mut families: [Vec<(usize, usize, Evidence)>; 2] = [Vec::new(), Vec::new()];
    for item in pending {
        let gating = benchmarks[item.0].metrics[item.1].gates;
        families[usize::from(!gating)].push(item);
    }
    for (index, family) in families.into_iter().enumerate() {
        // Untested members of an assumed larger family count as p = 1, which is what BH and
        // Holm do with a family of that size.
        let size = if index == 0 {
            family.len().max(ctx.policy.family_hint)
        } else {
            family.len()
        };
        let padded = |p: Vec<f64>| {
            let mut p = p;
            p.resize(size, 1.0);
            inference::adjust(&p, ctx.policy.correction)
        };
        let reg = padded(family.iter().map(|(_, _, e)| e.p_reg).collect());
        let imp = padded(family.iter().map(|(_, _, e)| e.p_imp).collect());
        for (((b, m, e), r), i) in family.into_iter().zip(reg).zip(imp) {
            decide(&mut benchmarks[b].metrics[m], e, r, i, size, ctx);
        }
    }
}

/// The decision rule of statistics.md §13.3 for one noisy metric, given its adjusted p-values
/// and the size of its family.
fn decide(
    out: &mut MetricComparison,
    e: Evidence,
    p_reg_adj: f64,
    p_imp_adj: f64,
    family: usize,
    ctx: &Context<'_>,
) {
    let alpha = ctx.alpha_look;
    let threshold = out.threshold;
    let margin = out.equivalence_margin.unwrap_or(threshold);
    out.p_adjusted = Some(p_reg_adj);
    // The level a single regression faces: BH and Holm both reduce to alpha / m for it.
    let single = alpha / family.max(1) as f64;
    let floor_blocks = match &e.power {
        Power::Samples { base, head } => {
            let floor = inference::mwu_floor(base.len(), head.len());
            (floor > single).then_some(floor)
        }
        _ => None,
    };
    out.mde = match (&e.power, floor_blocks) {
        (_, Some(_)) => None,
        (Power::Samples { base, head }, None) => {
            inference::min_detectable_change(base, head, single, Some((e.ci, e.ci_level)))
        }
        (Power::Prediction(h), None) => Some(h.min_detectable_shift(single).exp_m1()),
    };
    let described = format!(
        "{} ({} % CI {} … {}, p = {}, {})",
        format_change(e.change),
        percent_level(e.ci_level),
        format_change(e.ci[0]),
        format_change(e.ci[1]),
        format_p(e.p_two),
        e.basis
    );
    let thr = format_change(threshold).trim_start_matches('+').to_string();
    let mar = format_change(margin).trim_start_matches('+').to_string();
    let bad = worse(e.change, out.direction);
    let material = e.change.abs() >= threshold;
    let significant_reg = p_reg_adj <= alpha;
    let significant_imp = p_imp_adj <= alpha;
    let equivalent = e
        .equivalence_ci
        .is_some_and(|[lo, hi]| lo > -margin && hi < margin);
    let (verdict, reason) = if significant_reg && bad && material {
        (
            Verdict::Regressed,
            format!(
                "{described}: beyond the {thr} threshold (adjusted one-sided p = {})",
                format_p(p_reg_adj)
            ),
        )
    } else if equivalent {
        (
            Verdict::Unchanged,
            format!("{described}: the equivalence interval lies within ±{mar}"),
        )
    } else if significant_imp && !bad && material {
        (
            Verdict::Improved,
            format!(
                "{described}: beyond the {thr} threshold (adjusted one-sided p = {})",
                format_p(p_imp_adj)
            ),
        )
    } else if let Some(floor) = floor_blocks {
        (
            Verdict::Inconclusive,
            format!(
                "{described}: too few repetitions to detect anything: the smallest attainable p is {}, above the level {}; raise `repetitions`",
                format_p(floor),
                format_p(single)
            ),
        )
    } else if significant_reg || significant_imp {
        (
            Verdict::Inconclusive,
            format!(
                "{described}: a change is likely, but the interval reaches the {thr} threshold; more repetitions would decide"
            ),
        )
    } else {
        (
            Verdict::Inconclusive,
            format!(
                "{described}: not enough evidence either way; the equivalence interval is wider than ±{mar}"
            ),
        )
    };
    out.verdict = verdict;
    out.reason.push_str(&reason);
}

/// Whether a relative change is in the bad direction.
fn worse(change: f64, direction: Direction) -> bool {
    match direction {
        Direction::Lower => change > 0.0,
        Direction::Higher => change < 0.0,
    }
}

struct ToleranceDecision {
    verdict: Verdict,
    reason: String,
    change: f64,
}

fn by_tolerance(
    base: f64,
    head: f64,
    tolerance: Tolerance,
    direction: Direction,
) -> ToleranceDecision {
    let change = if base != 0.0 {
        (head - base) / base.abs()
    } else if head == 0.0 {
        0.0
    } else {
        f64::INFINITY.copysign(head)
    };
    let (exceeds, limit) = match tolerance {
        Tolerance::Relative(t) => (
            change.abs() > t,
            format!("±{}", format_change(t).trim_start_matches('+')),
        ),
        Tolerance::Absolute(t) => ((head - base).abs() > t, format!("±{t}")),
    };
    let verdict = match (exceeds, worse(change, direction)) {
        (false, _) => Verdict::Unchanged,
        (true, true) => Verdict::Regressed,
        (true, false) => Verdict::Improved,
    };
    let what = if exceeds { "beyond" } else { "within" };
    ToleranceDecision {
        verdict,
        reason: format!(
            "deterministic: {} ({base} → {head}), {what} the tolerance {limit}",
            format_change(change)
        ),
        change,
    }
}

/// p-values with two significant digits.
pub fn format_p(p: f64) -> String {
    if p >= 0.001 {
        format!("{p:.3}")
    } else {
        format!("{p:.1e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fingerprint::Fingerprint;
    use crate::metric::GateRule;
    use crate::results::{Provenance, RESULTS_SCHEMA_VERSION};

    const BASE: [f64; 10] = [
        100.2, 101.1, 99.8, 100.5, 100.9, 100.1, 100.4, 99.9, 100.7, 100.3,
    ];
    const NEW: [f64; 10] = [
        101.9, 102.3, 101.5, 102.8, 101.7, 102.1, 102.5, 101.6, 102.0, 102.4,
    ];
    const SAME: [f64; 10] = [
        100.4, 101.0, 100.1, 100.6, 100.8, 100.3, 100.5, 100.0, 100.9, 100.2,
    ];
    const NOISY: [f64; 10] = [
        99.0, 102.5, 100.1, 98.7, 101.9, 100.3, 102.2, 99.1, 101.5, 100.0,
    ];

    fn samples(values: &[f64], threshold: f64) -> MetricSamples {
        MetricSamples {
            name: "kernel_time".into(),
            unit: "ns".into(),
            source: Source::Timer,
            direction: Direction::Lower,
            gate: GateRule {
                gates: true,
                threshold,
                tolerance: None,
            },
            values: values.to_vec(),
            repetition: (0..values.len() as u32).collect(),
        }
    }

    fn verdict(base: &[f64], head: &[f64], threshold: f64) -> MetricComparison {
        compare_metric(
            &samples(base, threshold),
            &samples(head, threshold),
            &ComparePolicy::default(),
        )
    }

    #[test]
    fn a_clear_shift_beyond_the_threshold_regresses() {
        let m = verdict(&BASE, &NEW, 0.01);
        assert_eq!(m.verdict, Verdict::Regressed, "{}", m.reason);
        assert!((m.p_value.unwrap() - 1.082508822446903e-05).abs() < 1e-12);
        // Hodges–Lehmann on logs (statistics.md TV-HL-4): ratio 1.01694, 99 % CI 1.01096 … 1.02289.
        assert!((m.change.unwrap() - 0.016_940_711_694_322_8).abs() < 1e-9);
        let ci = m.ci.unwrap();
        assert!(
            (ci[0] - 0.010_956_175_298_804).abs() < 1e-9
                && (ci[1] - 0.022_885_572_139_303_8).abs() < 1e-9
        );
        assert!(
            m.reason.contains("beyond the 1.00 % threshold"),
            "{}",
            m.reason
        );
    }

    #[test]
    fn a_significant_shift_below_a_wide_threshold_is_unchanged() {
        let m = verdict(&BASE, &NEW, 0.05);
        assert_eq!(m.verdict, Verdict::Unchanged, "{}", m.reason);
    }

    #[test]
    fn the_same_direction_reversed_is_an_improvement() {
        let m = verdict(&NEW, &BASE, 0.01);
        assert_eq!(m.verdict, Verdict::Improved, "{}", m.reason);
        assert!(m.change.unwrap() < 0.0);
        let mut higher = samples(&BASE, 0.01);
        higher.direction = Direction::Higher;
        let mut higher_new = samples(&NEW, 0.01);
        higher_new.direction = Direction::Higher;
        let m = compare_metric(&higher, &higher_new, &ComparePolicy::default());
        assert_eq!(
            m.verdict,
            Verdict::Improved,
            "higher is better: a rise improves"
        );
    }

    #[test]
    fn noise_without_a_shift_is_unchanged_or_inconclusive_never_a_regression() {
        assert_eq!(verdict(&BASE, &SAME, 0.05).verdict, Verdict::Unchanged);
        let m = verdict(&BASE, &NOISY, 0.005);
        assert_eq!(m.verdict, Verdict::Inconclusive, "{}", m.reason);
        assert!(m.reason.contains("not enough evidence"), "{}", m.reason);
    }

    #[test]
    fn a_likely_change_whose_interval_reaches_the_threshold_is_inconclusive() {
        let m = verdict(&BASE, &NEW, 0.02);
        assert_eq!(m.verdict, Verdict::Inconclusive, "{}", m.reason);
        assert!(
            m.reason.contains("more repetitions would decide"),
            "{}",
            m.reason
        );
    }

    #[test]
    fn too_few_samples_are_inconclusive_not_guessed() {
        let m = verdict(&[1.0, 2.0, 3.0], &[10.0, 20.0, 30.0], 0.05);
        assert_eq!(m.verdict, Verdict::Inconclusive);
        assert!(
            m.reason
                .starts_with("too few samples (3 baseline, 3 candidate)"),
            "{}",
            m.reason
        );
    }

    #[test]
    fn deterministic_metrics_use_their_tolerance() {
        let mut b = samples(&[1000.0], 0.05);
        b.gate.tolerance = Some(Tolerance::Relative(0.01));
        let mut h = b.clone();
        h.values = vec![1005.0];
        let m = compare_metric(&b, &h, &ComparePolicy::default());
        assert_eq!(m.verdict, Verdict::Unchanged);
        assert_eq!(m.method, Method::Tolerance);
        h.values = vec![1020.0];
        let m = compare_metric(&b, &h, &ComparePolicy::default());
        assert_eq!(m.verdict, Verdict::Regressed);
        assert!((m.change.unwrap() - 0.02).abs() < 1e-12);
        h.values = vec![900.0];
        assert_eq!(
            compare_metric(&b, &h, &ComparePolicy::default()).verdict,
            Verdict::Improved
        );
        h.gate.tolerance = Some(Tolerance::Absolute(150.0));
        assert_eq!(
            compare_metric(&b, &h, &ComparePolicy::default()).verdict,
            Verdict::Unchanged
        );
    }

    fn run(benchmarks: Vec<BenchmarkResult>) -> RunResults {
        RunResults {
            schema_version: RESULTS_SCHEMA_VERSION,
            kgate_version: "0".into(),
            created: "2026-01-01T00:00:00Z".into(),
            environment: Fingerprint::default(),
            benchmarks,
        }
    }

    fn bench(name: &str, m: MetricSamples) -> BenchmarkResult {
        let mut b = BenchmarkResult::new(name, Provenance::default());
        b.repetitions = m.values.len() as u32;
        b.metrics.push(m);
        b
    }

    #[test]
    fn run_verdicts_new_missing_and_untrusted_sources() {
        let base = run(vec![
            bench("a", samples(&BASE, 0.01)),
            bench("gone", samples(&BASE, 0.01)),
        ]);
        let mut reported = samples(&NEW, 0.01);
        reported.source = Source::Reported;
        let head = run(vec![
            bench("a", samples(&NEW, 0.01)),
            bench("fresh", samples(&NEW, 0.01)),
        ]);
        let r = compare(&base, &head, &ComparePolicy::default(), Design::Files);
        assert_eq!(r.verdict, RunVerdict::Regressed);
        assert_eq!(r.summary.regressed, 1);
        assert_eq!(r.summary.new, 1);
        assert_eq!(r.summary.missing, 1);
        assert_eq!(r.benchmarks[0].verdict, Verdict::Regressed);
        assert!(
            r.benchmarks[0]
                .explanation
                .starts_with("kernel_time: +1.69 %"),
            "{}",
            r.benchmarks[0].explanation
        );

        // The same regression from a source that may not gate passes, and says why.
        let head = run(vec![
            bench("a", reported),
            bench("gone", samples(&BASE, 0.01)),
        ]);
        let r = compare(&base, &head, &ComparePolicy::default(), Design::Files);
        assert_eq!(r.verdict, RunVerdict::Pass);
        let m = &r.benchmarks[0].metrics[0];
        assert_eq!(m.verdict, Verdict::Regressed);
        assert!(!m.gates);
        assert!(
            m.reason
                .starts_with("source `reported` may not fail the build"),
            "{}",
            m.reason
        );
    }

    #[test]
    fn the_correction_spans_every_gated_metric_of_the_run() {
        // 6 vs 6 complete separation: one-sided p = 1/924 = 0.00108. Alone it regresses at
        // alpha 0.01; among 20 gated benchmarks (19 unchanged, p near 1) BH needs p ≤ 0.0005.
        let low: Vec<f64> = (0..6).map(|i| 100.0 + f64::from(i) * 0.1).collect();
        let high: Vec<f64> = low.iter().map(|v| v * 1.05).collect();
        let alone = compare(
            &run(vec![bench("a", samples(&low, 0.01))]),
            &run(vec![bench("a", samples(&high, 0.01))]),
            &ComparePolicy::default(),
            Design::Files,
        );
        let m = &alone.benchmarks[0].metrics[0];
        assert_eq!(m.verdict, Verdict::Regressed, "{}", m.reason);
        assert!((m.p_regression.unwrap() - 1.0 / 924.0).abs() < 1e-12);
        assert_eq!(m.p_adjusted, m.p_regression);
        let mut base = vec![bench("a", samples(&low, 0.01))];
        let mut head = vec![bench("a", samples(&high, 0.01))];
        for i in 0..19 {
            base.push(bench(&format!("b{i}"), samples(&BASE, 0.01)));
            head.push(bench(&format!("b{i}"), samples(&BASE, 0.01)));
        }
        let r = compare(
            &run(base),
            &run(head),
            &ComparePolicy::default(),
            Design::Files,
        );
        let m = &r.benchmarks[0].metrics[0];
        assert_eq!(m.verdict, Verdict::Inconclusive, "{}", m.reason);
        assert!((m.p_adjusted.unwrap() - 20.0 / 924.0).abs() < 1e-12);
        // 6 per side cannot reach the level 0.01 / 20 = 5e-4 at all: the reason says so and
        // there is no detectable effect to report.
        assert!(
            m.reason.contains("too few repetitions to detect anything"),
            "{}",
            m.reason
        );
        assert_eq!(m.mde, None);
        assert_eq!(r.correction, Correction::Bh);
        assert_eq!(r.model, Model::RankTest);
    }

    #[test]
    fn equivalence_margin_and_mde_are_reported() {
        let m = verdict(&BASE, &SAME, 0.05);
        assert_eq!(m.verdict, Verdict::Unchanged);
        assert_eq!(m.equivalence_margin, Some(0.05));
        let eq = m.equivalence_ci.unwrap();
        // 98 % (1 − 2·alpha) Hodges–Lehmann interval of ln(SAME) − ln(BASE).
        assert!(eq[0] > -0.01 && eq[1] < 0.01, "{eq:?}");
        let mde = m.mde.unwrap();
        assert!(mde > 0.0 && mde < 0.02, "{mde}");
        // A 0.1 % margin is narrower than the interval: no claim of "unchanged".
        let policy = ComparePolicy {
            equivalence_margin: Some(0.001),
            ..ComparePolicy::default()
        };
        let m = compare_metric(&samples(&BASE, 0.05), &samples(&SAME, 0.05), &policy);
        assert_eq!(m.verdict, Verdict::Inconclusive, "{}", m.reason);
        assert!(m.reason.contains("wider than ±0.10 %"), "{}", m.reason);
    }

    #[test]
    fn looks_split_alpha() {
        // NEW vs BASE: one-sided p = 5.4e-6; at alpha 0.01 over 3 looks still regressed, and
        // the report says how many looks were planned.
        let look = crate::results::Look {
            n: 10,
            of: 3,
            alpha: 0.01 / 3.0,
            verdict: Verdict::Inconclusive,
        };
        let mut b = bench("a", samples(&BASE, 0.01));
        let mut h = bench("a", samples(&NEW, 0.01));
        b.looks = vec![look.clone()];
        h.looks = vec![look];
        let r = compare(
            &run(vec![b]),
            &run(vec![h]),
            &ComparePolicy::default(),
            Design::Interleaved,
        );
        assert_eq!(r.looks, 3);
        assert_eq!(r.benchmarks[0].verdict, Verdict::Regressed);
    }

    #[test]
    fn stored_baseline_with_history_uses_a_prediction_interval() {
        // Four earlier jobs whose medians scatter by about 1 %; the candidate's median is 3 %
        // above their mean.
        let job = |scale: f64| run(vec![bench("a", samples(&BASE.map(|v| v * scale), 0.02))]);
        let base = job(1.0);
        let history = [job(1.01), job(0.99), job(1.005), job(0.995)];
        let head = job(1.03);
        let r = compare_with_history(
            &base,
            &head,
            &history,
            &ComparePolicy::default(),
            Design::StoredBaseline,
        );
        assert_eq!(r.model, Model::PredictionInterval);
        let m = &r.benchmarks[0].metrics[0];
        assert_eq!(m.method, Method::PredictionInterval);
        // Job medians are ln(100.4·s): relative to ln(100.4) they are ln(s).
        let logs = [1.0f64, 1.01, 0.99, 1.005, 0.995].map(f64::ln);
        let h = History::new(&logs).unwrap();
        let want = (1.03f64.ln() - h.mean).exp_m1();
        assert!((m.change.unwrap() - want).abs() < 1e-9, "{:?}", m.change);
        let p = h.p_above(1.03f64.ln());
        assert!((m.p_regression.unwrap() - p).abs() < 1e-12);
        assert!(m.reason.contains("against 5 stored jobs"), "{}", m.reason);
        // Within-job noise is tiny, so the rank test would call this a regression; the job
        // spread makes it a finding only if it clears the prediction interval at alpha.
        let expected = if p <= 0.01 {
            Verdict::Regressed
        } else {
            Verdict::Inconclusive
        };
        assert_eq!(m.verdict, expected, "{}", m.reason);
        assert!(r.warnings.iter().all(|w| !w.contains("job-to-job offsets")));
        // Without history the same comparison falls back to the rank test, with the warning.
        let r = compare(
            &base,
            &head,
            &ComparePolicy::default(),
            Design::StoredBaseline,
        );
        assert_eq!(r.model, Model::RankTest);
        assert!(r.warnings.iter().any(|w| w.contains("job-to-job offsets")));
    }
}
