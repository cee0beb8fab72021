//! Comparison: baseline against candidate, metric by metric, into verdicts.
//!
//! A gate that cries wolf gets switched off, so every verdict here is a bounded-error claim
//! (`docs/statistics.md`, "The decision rule"). Noisy metrics get one-sided
//! Mann–Whitney p-values in the regression and improvement directions and a Hodges–Lehmann
//! shift on log values with its distribution-free interval. The regression p-values of all
//! gated metrics of a run, made sequential where an adaptive run looked more than once
//! (`inference::LookPlan`), are adjusted together (Benjamini–Hochberg or Holm) and tested at
//! alpha, so neither many benchmarks nor adaptive repetitions inflate false alarms.
//! "Regressed" needs significance and a change of at least the threshold; "unchanged" is an
//! equivalence (TOST) claim: the 1 − 2·alpha interval lies inside ±margin; "within-threshold"
//! a non-inferiority claim (its bad-side bound below the threshold); everything else is
//! "inconclusive", never a guess. Against a baseline stored by another job, with earlier jobs
//! as history, a prediction interval over the jobs' medians replaces the within-job test
//! (Bencher's model). Metrics declared deterministic (a `tolerance`) are compared against it
//! without statistics.
//! The report it fills in is the JSON contract in [`crate::model::report`].

pub mod adjust;
pub mod calibrate;
pub mod explain;
mod guards;
mod rules;
pub mod waivers;

use guards::{MixedCounters, environment_warnings, hold_back, not_gating_warnings};
use rules::{
    Levels, Pending, Power, by_tolerance, decide, decide_rows, point_change, prediction_evidence,
    rank_evidence, repetitions_needed,
};

use crate::machine::envkey::key_differences;
use crate::model::metric::{NoisyMetrics, Source};
use crate::model::report::{
    BenchmarkComparison, Cost, Counts, Design, Method, MetricComparison, Model, PARAMETERS_DIFFER,
    REPORT_SCHEMA_VERSION, Report,
};
use crate::model::results::{BenchmarkResult, MetricSamples, NOT_COMPARABLE, RunResults, Status};
use crate::model::units::format_change;
use crate::model::verdict::{RunVerdict, Verdict};
use crate::stats;
use crate::stats::inference::{self, Correction, JobMedians, RunLooks};

/// How the report's line on differing environments begins.
pub const ENVIRONMENTS_DIFFER: &str = "baseline and candidate ran on different environments";

/// The widest interval a reader calls "no change": "unchanged" needs the equivalence interval
/// inside ±1 % (or ±the threshold, when that is smaller) unless `gate.equivalence_margin` says
/// otherwise. A change inside a wider threshold is `within-threshold`, not `unchanged`.
pub const DEFAULT_EQUIVALENCE_MARGIN: f64 = 0.01;

/// What decides verdicts and which sources may fail the build.
#[derive(Debug, Clone, PartialEq)]
pub struct ComparePolicy {
    /// Family-wise level of the gate.
    pub alpha: f64,
    pub gating_sources: Vec<Source>,
    /// Adjustment across the gated metrics of a run.
    pub correction: Correction,
    /// Equivalence margin behind "unchanged"; `None` uses the smaller of
    /// [`DEFAULT_EQUIVALENCE_MARGIN`] and each metric's threshold.
    pub equivalence_margin: Option<f64>,
    /// When noisy (non-deterministic) metrics may fail the build.
    pub noisy_metrics: NoisyMetrics,
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
            noisy_metrics: NoisyMetrics::default(),
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
            noisy_metrics: p.noisy_metrics,
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
    run_looks(head).count()
}

/// The look plans recorded with a run's benchmarks, whose boundary the comparison tests at.
pub fn run_looks(head: &RunResults) -> RunLooks {
    let mut looks = RunLooks::default();
    for b in &head.benchmarks {
        if let Some(l) = b.looks.first() {
            looks.add(l.schedule, l.of);
        }
    }
    looks
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

/// The job medians of result files, oldest first (by their `created` time).
pub fn job_medians<'r>(runs: impl IntoIterator<Item = &'r RunResults>) -> JobMedians {
    let mut out = JobMedians::new();
    let mut runs: Vec<&RunResults> = runs.into_iter().collect();
    runs.sort_by(|a, b| a.created.cmp(&b.created));
    for r in runs {
        for b in &r.benchmarks {
            for m in &b.metrics {
                if let Some(median) = job_summary(b, m) {
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
    let ctx = Context::new(policy, run_looks(head), medians, design, base, head);
    let base_index = base.by_name();
    let mut gathered = Gathered::default();
    for h in &head.benchmarks {
        gathered.add(base_index.get(h.name.as_str()).copied(), h, &ctx);
    }
    let head_index = head.by_name();
    gathered.missing = base
        .benchmarks
        .iter()
        .filter(|b| !head_index.contains_key(b.name.as_str()))
        .map(|b| b.name.clone())
        .collect();
    gathered.conclude((base, head), &ctx)
}

/// What the benchmarks of a comparison gave before the run-wide correction decides their
/// tested metrics.
#[derive(Default)]
struct Gathered<'a> {
    /// The benchmarks' rows, their tested metrics undecided, in the candidate's order.
    rows: Vec<BenchmarkComparison>,
    /// The tested metrics in the order of the rows, each with what its decision needs.
    pending: Vec<Pending<'a>>,
    /// Benchmarks whose counters were collected under different configurations, refused once
    /// decided, by position.
    mixed: Vec<(usize, MixedCounters)>,
    /// Counters the candidate could not collect, as warnings.
    unavailable: Vec<String>,
    /// Benchmarks only in the baseline, in its order.
    missing: Vec<String>,
    /// Benchmarks whose parameters (launch attributes, launch counts) differ between the
    /// sides, by position, with the note said beside their time once decided.
    changed: Vec<(usize, String)>,
    /// The time the measured benchmarks took against a fixed plan at `max`.
    cost: CostTally,
}

/// The report's [`Cost`], added up as the benchmarks are gathered.
#[derive(Default)]
struct CostTally {
    total: Cost,
    /// Whether a benchmark with a timed run planned looks (only then is there a cost to show).
    adaptive: bool,
}

impl CostTally {
    fn add(&mut self, base: &BenchmarkResult, head: &BenchmarkResult) {
        for side in [base, head] {
            let Some(seconds) = side.seconds else {
                continue;
            };
            let planned = side.looks.first();
            self.adaptive |= planned.is_some_and(|l| l.of > 1);
            let max = planned
                .and_then(|l| l.schedule)
                .map_or(side.repetitions, |s| s.normalized().max);
            self.total.add(side.repetitions, max, seconds);
        }
    }
}

impl<'a> Gathered<'a> {
    /// Gathers one benchmark of the candidate against the baseline's of that name (`None`:
    /// new).
    fn add(
        &mut self,
        base: Option<&'a BenchmarkResult>,
        head: &'a BenchmarkResult,
        ctx: &Context<'_>,
    ) {
        for u in &head.provenance.unavailable {
            self.unavailable.push(format!(
                "{}: counter `{}` unavailable ({}); hint: {}",
                head.name, u.counter, u.reason, u.hint
            ));
        }
        let index = self.rows.len();
        let cmp = match base {
            Some(b) => {
                self.cost.add(b, head);
                let (cmp, tested) = gather_benchmark(b, head, ctx);
                for (m, power) in tested {
                    let row = &cmp.metrics[m];
                    let p = [row.p_regression, row.p_improvement].map(|p| p.unwrap_or(1.0));
                    self.pending.push(Pending {
                        benchmark: index,
                        metric: m,
                        gates: row.gates,
                        p,
                        power,
                    });
                }
                if let Some(mixed) = MixedCounters::of(b, head) {
                    self.mixed.push((index, mixed));
                }
                if let Some(note) = changed_parameters(b, head) {
                    self.changed.push((index, note));
                }
                cmp
            }
            None if ctx.design == Design::Interleaved => new_benchmark(
                head,
                "not declared by the base revision's configuration: measured on this side only, so not gated; it gates once the base declares it",
            ),
            None => new_benchmark(
                head,
                "not in the baseline, so not gated; this run's numbers become its reference once saved",
            ),
        };
        self.rows.push(cmp);
    }

    /// Decides the tested metrics, then each benchmark, and writes the report; `base` and
    /// `head` give the runs' keys.
    fn conclude(self, (base, head): (&RunResults, &RunResults), ctx: &Context<'_>) -> Report {
        let Gathered {
            mut rows,
            pending,
            mixed,
            unavailable,
            missing,
            changed,
            cost,
        } = self;
        let policy = ctx.policy;
        let prediction = |p: &Pending<'_>| matches!(p.power, Power::Prediction { .. });
        let used_history = pending.iter().any(prediction);
        decide_rows(&mut rows, pending, ctx);
        for (index, refused) in mixed {
            refused.refuse(&mut rows[index]);
        }
        let mut counts = Counts::default();
        let mut held_back = 0;
        let mut not_gating = Vec::new();
        for b in &mut rows {
            if b.verdict != Verdict::New {
                aggregate(b);
                explain::annotate(b);
            }
            counts.add(b.verdict);
            held_back += guards::held_back_by_environments(b);
            // A benchmark that is not gated names these in its own explanation: said once.
            if b.verdict != Verdict::NotGated {
                not_gating.extend(not_gating_warnings(b));
            }
        }
        for (index, note) in changed {
            let b = &mut rows[index];
            b.explanation = match b.explanation.trim_end_matches('.') {
                "" => note,
                said => format!("{said}. {note}"),
            };
        }
        for name in missing {
            counts.add(Verdict::Missing);
            let why = "in the baseline but not in this run".into();
            rows.push(BenchmarkComparison::bare(&name, Verdict::Missing, why));
        }
        let mut warnings =
            environment_warnings(base, head, &ctx.environment_differences, held_back, policy);
        warnings.extend(not_gating);
        warnings.extend(unavailable);
        // A baseline saved from this very commit on an identical environment (a `baseline save`
        // moments ago on this machine) is not "another job" in the sense the warning means.
        let same_commit_and_environment = ctx.environment_differences.is_empty()
            && matches!(
                (&base.environment.git, &head.environment.git),
                (Some(b), Some(h)) if b.commit == h.commit && !h.dirty
            );
        if ctx.design == Design::StoredBaseline
            && !used_history
            && policy.noisy_metrics != NoisyMetrics::SameJob
            && !same_commit_and_environment
        {
            warnings.push("the baseline was stored by another job; job-to-job offsets are not visible to a within-job test, so small changes may be machine noise (run `kgate check --against REF` to interleave both revisions, or keep a history with `kgate check --record` (or give earlier result files with `--history`) for a prediction interval)".into());
        }
        Report {
            schema_version: REPORT_SCHEMA_VERSION,
            verdict: counts.run_verdict(),
            summary: counts,
            design: ctx.design,
            alpha: policy.alpha,
            correction: policy.correction,
            looks: ctx.looks.count(),
            cost: cost.adaptive.then_some(cost.total),
            model: if used_history {
                Model::PredictionInterval
            } else {
                Model::RankTest
            },
            base_commit: base.environment.git.as_ref().map(|g| g.commit.clone()),
            head_commit: head.environment.git.as_ref().map(|g| g.commit.clone()),
            head_dirty: head.environment.git.as_ref().is_some_and(|g| g.dirty),
            warnings,
            benchmarks: rows,
            evidence: None,
        }
    }
}

/// A benchmark with nothing to compare against: `new`, unless it failed in this run, when it
/// is `failed` (a failed run has no numbers to become anyone's reference, and the run is an
/// error).
fn new_benchmark(h: &BenchmarkResult, why_new: &str) -> BenchmarkComparison {
    let (verdict, explanation) = if let Some(why) = h.failed_because() {
        let why = format!("failed in the candidate: {why}; it has no baseline either");
        (Verdict::Failed, why)
    } else if let Some(why) = incorrect_explanation(h) {
        (Verdict::Incorrect, format!("{why}; it has no baseline"))
    } else {
        (Verdict::New, why_new.to_string())
    };
    BenchmarkComparison::bare(&h.name, verdict, explanation)
}

/// The report when there is nothing to compare against.
pub fn no_baseline(head: &RunResults, policy: &ComparePolicy, reason: String) -> Report {
    let benchmarks: Vec<_> = head
        .benchmarks
        .iter()
        .map(|h| new_benchmark(h, "no baseline to compare against"))
        .collect();
    let summary = count(&benchmarks);
    Report {
        schema_version: REPORT_SCHEMA_VERSION,
        // A benchmark that failed is an error whether or not there was a baseline.
        // So is a wrong answer a regression.
        verdict: match summary.run_verdict() {
            v @ (RunVerdict::Error | RunVerdict::Regressed) => v,
            _ => RunVerdict::NoBaseline,
        },
        summary,
        design: Design::StoredBaseline,
        alpha: policy.alpha,
        correction: policy.correction,
        looks: planned_looks(head),
        cost: None,
        model: Model::RankTest,
        base_commit: None,
        head_commit: head.environment.git.as_ref().map(|g| g.commit.clone()),
        head_dirty: head.environment.git.as_ref().is_some_and(|g| g.dirty),
        warnings: vec![reason],
        benchmarks,
        evidence: None,
    }
}

pub fn count(benchmarks: &[BenchmarkComparison]) -> Counts {
    let mut c = Counts::default();
    for b in benchmarks {
        c.add(b.verdict);
    }
    c
}

/// What the comparison of a run knows besides the two samples.
struct Context<'a> {
    policy: &'a ComparePolicy,
    /// The looks planned for the run ([`run_looks`]): their boundary maps a look's p-value to
    /// the plan's sequential p-value and a plan-wide level to each look's nominal one.
    looks: RunLooks,
    /// The nominal level of one look at the gate's alpha (alpha itself without looks).
    alpha_look: f64,
    /// Job medians for the prediction-interval model (the stored baseline's included); empty
    /// otherwise.
    history: JobMedians,
    design: Design,
    /// The baseline-key fields in which the two sides' environments differ (empty: comparable).
    environment_differences: Vec<String>,
}

impl Context<'_> {
    /// The context of comparing two runs (their keys read, not their benchmarks).
    fn new<'p>(
        policy: &'p ComparePolicy,
        looks: RunLooks,
        medians: &JobMedians,
        design: Design,
        base: &RunResults,
        head: &RunResults,
    ) -> Context<'p> {
        Context {
            policy,
            alpha_look: looks.nominal_level(policy.alpha),
            looks,
            history: if design == Design::StoredBaseline {
                medians.clone()
            } else {
                JobMedians::new()
            },
            design,
            environment_differences: key_differences(&base.environment, &head.environment),
        }
    }
}

/// Compares one benchmark's metrics; tested metrics come back undecided with their power,
/// indexed by metric position.
fn gather_benchmark<'a>(
    base: &'a BenchmarkResult,
    head: &'a BenchmarkResult,
    ctx: &Context<'_>,
) -> (BenchmarkComparison, Vec<(usize, Power<'a>)>) {
    let mut cmp = BenchmarkComparison {
        name: head.name.clone(),
        verdict: Verdict::Inconclusive,
        explanation: String::new(),
        metrics: Vec::with_capacity(head.metrics.len()),
        profile: None,
    };
    for (side, r) in [("candidate", head), ("baseline", base)] {
        if let Some(why) = r.failed_because() {
            cmp.verdict = Verdict::Failed;
            cmp.explanation = format!("failed in the {side}: {why}");
            return (cmp, Vec::new());
        }
    }
    // Not measured because the code it runs did not change: the same digest on both sides.
    if let (Some(x), Some(y)) = (&base.identity, &head.identity)
        && x == y
        && base.metrics.is_empty()
        && head.metrics.is_empty()
    {
        cmp.verdict = Verdict::Identical;
        let digest = &x[..12.min(x.len())];
        cmp.explanation = format!("identical code (digest {digest}…): not measured");
        return (cmp, Vec::new());
    }
    // Measured and compared as any other, so the report shows its numbers; its verdict stays
    // `incorrect` whatever they say ([`aggregate`]).
    if let Some(why) = incorrect_explanation(head) {
        cmp.verdict = Verdict::Incorrect;
        cmp.explanation = why;
    }
    let mut tested = Vec::new();
    // By name, not by a search per metric: an ncu raw page gives a benchmark thousands.
    let base_metrics = crate::model::by_name(&base.metrics, |m| m.name.as_str());
    let head_metrics = crate::model::by_name(&head.metrics, |m| m.name.as_str());
    for h in &head.metrics {
        let m = match base_metrics.get(h.name.as_str()) {
            Some(b) => {
                let (m, power) = gather_metric(&head.name, b, h, ctx);
                if let Some(power) = power {
                    tested.push((cmp.metrics.len(), power));
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
        if !head_metrics.contains_key(b.name.as_str()) {
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
    // Shown and not gated where a side's measurements are not comparable with the other's.
    let not_comparable: Vec<String> = [("baseline", base), ("candidate", head)]
        .iter()
        .filter_map(|(side, r)| {
            let why = r.provenance.details.get(NOT_COMPARABLE)?;
            Some(format!("not comparable in the {side}: {why}"))
        })
        .collect();
    if !not_comparable.is_empty() {
        for m in &mut cmp.metrics {
            m.gates = false;
            m.not_gating = Some(not_comparable.join("; "));
        }
    }
    (cmp, tested)
}

/// "parameters that differ from the baseline: grid 64x1x1 → 128x1x1, launches 68 → 60": the
/// parameters (declared shapes, imported launch attributes and counts) whose values differ
/// between the sides; None when none does.
fn changed_parameters(base: &BenchmarkResult, head: &BenchmarkResult) -> Option<String> {
    let (b, h) = (&base.parameters, &head.parameters);
    let keys: std::collections::BTreeSet<&String> = b.keys().chain(h.keys()).collect();
    let shown = |v: Option<&String>| v.map_or("(none)", String::as_str).to_string();
    let changed: Vec<String> = keys
        .into_iter()
        .filter(|k| b.get(*k) != h.get(*k))
        .map(|k| format!("{k} {} → {}", shown(b.get(k)), shown(h.get(k))))
        .collect();
    (!changed.is_empty()).then(|| format!("{PARAMETERS_DIFFER} {}", changed.join(", ")))
}

/// Why a candidate that failed its correctness check is `incorrect`; `None` when it passed or
/// reported no check.
fn incorrect_explanation(head: &BenchmarkResult) -> Option<String> {
    let c = head.correctness.as_ref().filter(|c| !c.passed)?;
    let detail = c.detail.as_deref().filter(|d| !d.trim().is_empty());
    let detail = detail.map(|d| format!(": {d}")).unwrap_or_default();
    Some(format!(
        "failed its correctness check in the candidate{detail}; wrong answers fail the gate whatever their speed"
    ))
}

/// A benchmark's verdict: the worst of its gating metrics; `incorrect` stays so, with what
/// its metrics alone would say added to its explanation.
fn aggregate(cmp: &mut BenchmarkComparison) {
    if matches!(
        cmp.verdict,
        Verdict::Missing | Verdict::Failed | Verdict::Identical | Verdict::Incorrect
    ) && cmp.metrics.is_empty()
    {
        return;
    }
    if cmp.verdict == Verdict::Incorrect {
        let why = std::mem::take(&mut cmp.explanation);
        cmp.verdict = Verdict::Inconclusive;
        aggregate(cmp);
        cmp.explanation = format!(
            "{why} (its metrics alone say {}: {})",
            cmp.verdict.as_str(),
            cmp.explanation
        );
        cmp.verdict = Verdict::Incorrect;
        return;
    }
    let gating: Vec<&MetricComparison> = cmp
        .metrics
        .iter()
        .filter(|m| m.gates && !matches!(m.verdict, Verdict::New | Verdict::Missing))
        .collect();
    let pick = |v: Verdict| gating.iter().filter(move |m| m.verdict == v);
    let (verdict, explanation) = if cmp.metrics.is_empty() {
        let nothing = "no measurement on either side: nothing to gate";
        (Verdict::NotGated, nothing.to_string())
    } else if gating.is_empty() {
        (Verdict::NotGated, not_gated_explanation(&cmp.metrics))
    } else {
        let verdict = worst_verdict(gating.iter().map(|m| m.verdict)).unwrap_or(Verdict::Unchanged);
        let behind: Vec<&MetricComparison> = pick(verdict).copied().collect();
        (verdict, worst_explanation(&behind, verdict))
    };
    cmp.verdict = verdict;
    cmp.explanation = explanation;
}

/// How many of the metrics behind a benchmark's verdict its explanation gives with their reasons;
/// the rest are named. A suite with twenty metrics a benchmark would otherwise repeat every
/// metric's sentence in the explanation, which the metric rows already carry.
pub const EXPLAINED_METRICS: usize = 3;

/// The explanation of a benchmark's verdict from the metrics that have it: the first
/// [`EXPLAINED_METRICS`] with their reasons, then the others by name and change.
fn worst_explanation(metrics: &[&MetricComparison], verdict: Verdict) -> String {
    let mut parts: Vec<String> = metrics
        .iter()
        .take(EXPLAINED_METRICS)
        .map(|m| format!("{}: {}", m.name, m.reason))
        .collect();
    let rest = &metrics[metrics.len().min(EXPLAINED_METRICS)..];
    if !rest.is_empty() {
        let named: Vec<String> = rest
            .iter()
            .map(|m| match m.change {
                Some(c) => format!("{} {}", m.name, crate::model::units::format_change(c)),
                None => m.name.clone(),
            })
            .collect();
        parts.push(format!(
            "{} more {} {}: {}",
            rest.len(),
            verdict.as_str(),
            if rest.len() == 1 { "metric" } else { "metrics" },
            named.join(", ")
        ));
    }
    parts.join("; ")
}

/// The benchmark verdict a set of gating metric verdicts adds up to: the worst of regressed,
/// inconclusive, improved, within-threshold and unchanged (None when none of these occurs).
pub fn worst_verdict(verdicts: impl IntoIterator<Item = Verdict>) -> Option<Verdict> {
    const ORDER: [Verdict; 5] = [
        Verdict::Regressed,
        Verdict::Inconclusive,
        Verdict::Improved,
        Verdict::WithinThreshold,
        Verdict::Unchanged,
    ];
    let seen: Vec<Verdict> = verdicts.into_iter().collect();
    ORDER.into_iter().find(|v| seen.contains(v))
}

/// Why a benchmark is not gated, naming any metric that would have regressed.
fn not_gated_explanation(metrics: &[MetricComparison]) -> String {
    // Metrics meant to gate come first; informational ones are named only when none of those
    // would have regressed.
    let meant: Vec<&MetricComparison> = metrics
        .iter()
        .filter(|m| m.verdict == Verdict::Regressed && m.not_gating.is_some())
        .collect();
    let regressed: Vec<&MetricComparison> = if meant.is_empty() {
        let regressed = |m: &&MetricComparison| m.verdict == Verdict::Regressed;
        metrics.iter().filter(regressed).collect()
    } else {
        meant
    };
    let would: Vec<String> = regressed.into_iter().map(guards::would_regress).collect();
    if !would.is_empty() {
        return would.join("; ");
    }
    // Nothing would have regressed: say why nothing may gate, once per distinct reason.
    let mut reasons: Vec<(String, Vec<&str>)> = Vec::new();
    for m in metrics {
        let why = m
            .not_gating
            .clone()
            .unwrap_or_else(|| "informational (`gate: false`)".to_string());
        match reasons.iter_mut().find(|(w, _)| *w == why) {
            Some((_, names)) => names.push(&m.name),
            None => reasons.push((why, vec![&m.name])),
        }
    }
    reasons
        .into_iter()
        .map(|(why, names)| format!("{}: {why}", names.join(", ")))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The parts of a metric comparison that do not depend on the test.
pub(crate) fn blank(m: &MetricSamples, policy: &ComparePolicy) -> MetricComparison {
    MetricComparison {
        name: m.name.clone(),
        unit: m.unit.clone(),
        source: m.source,
        direction: m.direction,
        gates: m.gate.gates && policy.gating_sources.contains(&m.source),
        not_gating: (m.gate.gates && !policy.gating_sources.contains(&m.source)).then(|| {
            format!(
                "its source `{}` is not allowed to gate; set `source: timer` (or the source it really is) on the metric, or add `{}` to `gate.sources`",
                m.source.as_str(),
                m.source.as_str()
            )
        }),
        verdict: Verdict::Inconclusive,
        reason: String::new(),
        method: Method::None,
        threshold: m.gate.threshold,
        base: None,
        head: None,
        change: None,
        ci: None,
        ci_level: None,
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
        looks: RunLooks::default(),
        alpha_look: policy.alpha,
        history: JobMedians::new(),
        design: Design::Files,
        environment_differences: Vec::new(),
    };
    let (mut out, power) = gather_metric("", base, head, &ctx);
    if let (Some(power), Some(p_reg), Some(p_imp)) = (power, out.p_regression, out.p_improvement) {
        let levels = Levels {
            regression: ctx.alpha_look,
            improvement: ctx.alpha_look,
        };
        decide(&mut out, &power, p_reg, p_imp, 1, levels, &ctx);
    }
    out
}

/// Summaries, and either a final decision (tolerance, no test possible) or a test's figures
/// with the [`Power`] its decision after the run-wide adjustment needs.
fn gather_metric<'a>(
    benchmark: &str,
    base: &'a MetricSamples,
    head: &'a MetricSamples,
    ctx: &Context<'_>,
) -> (MetricComparison, Option<Power<'a>>) {
    let (base_sorted, head_sorted) = (stats::sorted(&base.values), stats::sorted(&head.values));
    let mut out = MetricComparison {
        base: stats::summarize_sorted(&base.values, &base_sorted),
        head: stats::summarize_sorted(&head.values, &head_sorted),
        ..blank(head, ctx.policy)
    };
    if let Some(why) = &out.not_gating {
        out.reason = format!("may not fail the build: {why}; ");
    }
    let fail = |out: &mut MetricComparison, reason: String, method: Method| {
        out.verdict = Verdict::Inconclusive;
        out.reason.push_str(&reason);
        out.method = method;
    };
    if base.unit != head.unit {
        let (b, h) = (&base.unit, &head.unit);
        let why = format!("units differ (`{b}` in the baseline, `{h}` now); cannot compare");
        fail(&mut out, why, Method::None);
        return (out, None);
    }
    let (Some(b), Some(h)) = (&out.base, &out.head) else {
        fail(&mut out, "a side has no valid samples".into(), Method::None);
        return (out, None);
    };
    let (b_median, h_median) = (b.median, h.median);
    // The point change is always shown, whether or not a test is possible.
    out.change = Some(point_change(b_median, h_median));
    if let Some(tol) = head.gate.tolerance {
        let margin = ctx.policy.equivalence_margin;
        let margin = margin.unwrap_or(DEFAULT_EQUIVALENCE_MARGIN);
        let d = by_tolerance(b_median, h_median, tol, head.direction, margin);
        out.verdict = d.verdict;
        out.reason.push_str(&d.reason);
        out.method = Method::Tolerance;
        out.change = Some(d.change);
        hold_back(&mut out, head.source, ctx);
        return (out, None);
    }
    let margin = ctx.policy.equivalence_margin;
    let margin = margin.unwrap_or(DEFAULT_EQUIVALENCE_MARGIN.min(head.gate.threshold));
    out.equivalence_margin = Some(margin);
    let (name, values) = (&head.name, &head.values);
    let (prediction, note) =
        prediction_evidence(benchmark, name, b_median, values, head.direction, ctx);
    if let Some(note) = note {
        out.reason.push_str(&note);
    }
    // One mean per side with the spread behind it: Welch's test on the summaries.
    let welch = match (&base.values[..], &head.values[..], base.spread, head.spread) {
        ([b], [h], Some(sb), Some(sh)) if prediction.is_none() => {
            match rules::welch_evidence((*b, sb), (*h, sh), head.direction, ctx) {
                Ok(e) => Some(e),
                Err(reason) => {
                    fail(&mut out, reason, Method::WelchSummaries);
                    hold_back(&mut out, head.source, ctx);
                    return (out, None);
                }
            }
        }
        _ => None,
    };
    let evidence = match prediction.or(welch) {
        Some(e) => Ok(e),
        None => {
            let (nb, nh) = (base.values.len(), head.values.len());
            let floor = inference::mwu_floor(nb, nh);
            if floor > ctx.alpha_look {
                // No outcome of the rank test could reach the level: report the point change
                // and claim nothing else (no interval, no p-value).
                let medians = format!(
                    "{} ({} → {})",
                    format_change(out.change.unwrap_or(0.0)),
                    crate::model::units::format_value(b_median, &head.unit),
                    crate::model::units::format_value(h_median, &head.unit)
                );
                let advice = format!(
                    "raise `repetitions` (at least {} per side at alpha {}), or give the metric a `tolerance` if it is deterministic",
                    repetitions_needed(ctx.alpha_look),
                    ctx.alpha_look
                );
                let reason = if nb == 1 && nh == 1 {
                    format!("{medians}: one sample per side cannot be tested; {advice}")
                } else {
                    format!(
                        "{medians}: too few samples ({nb} baseline, {nh} candidate) to test: the smallest attainable p is {}, above the level {}; {advice}",
                        format_p(floor),
                        format_p(ctx.alpha_look)
                    )
                };
                fail(&mut out, reason, Method::None);
                hold_back(&mut out, head.source, ctx);
                return (out, None);
            }
            let sides = rules::Sides {
                base: &base.values,
                head: &head.values,
                base_sorted: &base_sorted,
                head_sorted: &head_sorted,
            };
            rank_evidence(&sides, head.direction, ctx)
        }
    };
    match evidence {
        Ok(e) => {
            out.method = e.method;
            out.change = Some(e.change);
            out.equivalence_ci = e.equivalence_ci;
            out.p_value = Some(e.p_two);
            out.p_regression = Some(e.p_reg);
            out.p_improvement = Some(e.p_imp);
            hold_back(&mut out, head.source, ctx);
            (out, Some(e.power))
        }
        Err((reason, p_two)) => {
            fail(&mut out, reason, Method::RankTest);
            out.p_value = p_two;
            hold_back(&mut out, head.source, ctx);
            (out, None)
        }
    }
}

/// The median of the logs of a job's values for one metric, when all are positive.
fn job_summary(b: &BenchmarkResult, m: &MetricSamples) -> Option<f64> {
    if b.status == Status::Failed {
        return None;
    }
    let values = &m.values;
    if values.is_empty() || values.iter().any(|v| !(v.is_finite() && *v > 0.0)) {
        return None;
    }
    let logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
    stats::median(&logs)
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
mod tests;
