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

use crate::model::metric::{NoisyMetrics, Source};
use crate::model::report::{
    BenchmarkComparison, Cost, Counts, Design, Method, MetricComparison, Model,
    REPORT_SCHEMA_VERSION, Report,
};
use crate::model::results::{BenchmarkResult, MetricSamples, RunResults, Status};
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
                    self.pending.push(Pending {
                        benchmark: index,
                        metric: m,
                        gates: row.gates,
                        p: [
                            row.p_regression.unwrap_or(1.0),
                            row.p_improvement.unwrap_or(1.0),
                        ],
                        power,
                    });
                }
                if let Some(mixed) = MixedCounters::of(b, head) {
                    self.mixed.push((index, mixed));
                }
                cmp
            }
            None => new_benchmark(
                head,
                match ctx.design {
                    Design::Interleaved => {
                        "not declared by the base revision's configuration: measured on this side only, so not gated; it gates once the base declares it"
                    }
                    _ => {
                        "not in the baseline, so not gated; this run's numbers become its reference once saved"
                    }
                },
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
            cost,
        } = self;
        let policy = ctx.policy;
        let used_history = pending
            .iter()
            .any(|p| matches!(p.power, Power::Prediction { .. }));
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
        for name in missing {
            counts.add(Verdict::Missing);
            rows.push(BenchmarkComparison::bare(
                &name,
                Verdict::Missing,
                "in the baseline but not in this run".into(),
            ));
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
        (
            Verdict::Failed,
            format!("failed in the candidate: {why}; it has no baseline either"),
        )
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
            environment_differences: crate::machine::envkey::key_differences(
                &base.environment,
                &head.environment,
            ),
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
        cmp.explanation = format!(
            "identical code (digest {}…): not measured",
            &x[..12.min(x.len())]
        );
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
    (cmp, tested)
}

/// Why a candidate that failed its correctness check is `incorrect`; `None` when it passed or
/// reported no check.
fn incorrect_explanation(head: &BenchmarkResult) -> Option<String> {
    let c = head.correctness.as_ref().filter(|c| !c.passed)?;
    Some(match c.detail.as_deref().filter(|d| !d.trim().is_empty()) {
        Some(detail) => {
            format!("failed its correctness check in the candidate: {detail}; wrong answers fail the gate whatever their speed")
        }
        None => "failed its correctness check in the candidate; wrong answers fail the gate whatever their speed".into(),
    })
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
        (
            Verdict::NotGated,
            "no measurement on either side: nothing to gate".to_string(),
        )
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
        metrics
            .iter()
            .filter(|m| m.verdict == Verdict::Regressed)
            .collect()
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
    let (b_median, h_median) = (b.median, h.median);
    // The point change is always shown, whether or not a test is possible.
    out.change = Some(point_change(b_median, h_median));
    if let Some(tol) = head.gate.tolerance {
        let margin = ctx
            .policy
            .equivalence_margin
            .unwrap_or(DEFAULT_EQUIVALENCE_MARGIN);
        let d = by_tolerance(b_median, h_median, tol, head.direction, margin);
        out.verdict = d.verdict;
        out.reason.push_str(&d.reason);
        out.method = Method::Tolerance;
        out.change = Some(d.change);
        hold_back(&mut out, head.source, ctx);
        return (out, None);
    }
    let margin = ctx
        .policy
        .equivalence_margin
        .unwrap_or(DEFAULT_EQUIVALENCE_MARGIN.min(head.gate.threshold));
    out.equivalence_margin = Some(margin);
    let (prediction, note) = prediction_evidence(
        benchmark,
        &head.name,
        b_median,
        &head.values,
        head.direction,
        ctx,
    );
    if let Some(note) = note {
        out.reason.push_str(&note);
    }
    let evidence = match prediction {
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
mod tests {
    use super::*;
    use crate::machine::fingerprint::Fingerprint;
    use crate::model::metric::{Direction, GateRule, Tolerance};
    use crate::model::results::Provenance;
    use crate::stats::inference::History;
    use rules::percent_level;

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
        // Hodges–Lehmann on logs (test vector TV-HL-4): ratio 1.01694.
        assert!((m.change.unwrap() - 0.016_940_711_694_322_8).abs() < 1e-9);
        // The interval is the one the one-sided test at alpha 0.01 was decided at: 98 %
        // two-sided, whose lower bound is the one-sided 99 % bound.
        assert_eq!(m.ci_level, Some(0.98));
        let logs = |v: &[f64]| v.iter().map(|x| x.ln()).collect::<Vec<_>>();
        let want = stats::hodges_lehmann(&logs(&NEW), &logs(&BASE), 0.98).unwrap();
        let ci = m.ci.unwrap();
        assert!(
            (ci[0] - want.low.exp_m1()).abs() < 1e-12 && (ci[1] - want.high.exp_m1()).abs() < 1e-12,
            "{ci:?}"
        );
        assert!(ci[0] > 0.0);
        assert!(
            m.reason.contains("beyond the 1.00 % threshold"),
            "{}",
            m.reason
        );
    }

    #[test]
    fn a_significant_shift_below_a_wide_threshold_is_within_it_not_unchanged() {
        // +1.7 % with a 5 % threshold: real, but smaller than what counts. "Unchanged" would
        // tell a reader there was no change.
        let m = verdict(&BASE, &NEW, 0.05);
        assert_eq!(m.verdict, Verdict::WithinThreshold, "{}", m.reason);
        assert!(
            m.reason
                .contains("a real change, within the 5.00 % threshold"),
            "{}",
            m.reason
        );
        assert!(
            m.reason.contains("±1.00 %"),
            "the margin is stated: {}",
            m.reason
        );
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
                .contains("too few samples (3 baseline, 3 candidate) to test"),
            "{}",
            m.reason
        );
        assert!(
            m.reason.contains("at least 5 per side at alpha 0.01"),
            "{}",
            m.reason
        );
        // The point change is shown; no interval or p-value is claimed.
        assert!((m.change.unwrap() - 9.0).abs() < 1e-12);
        assert_eq!((m.ci, m.ci_level, m.p_value), (None, None, None));
    }

    #[test]
    fn one_sample_per_side_shows_the_change_and_claims_nothing() {
        // Two equal values are not "unchanged with a 99 % interval".
        let m = verdict(&[5.0], &[5.0], 0.05);
        assert_eq!(m.verdict, Verdict::Inconclusive, "{}", m.reason);
        assert_eq!(m.change, Some(0.0));
        assert_eq!((m.ci, m.p_value, m.equivalence_ci), (None, None, None));
        assert!(
            m.reason.contains("one sample per side cannot be tested"),
            "{}",
            m.reason
        );
        // A 100x slowdown is shown as +9900 %, not hidden behind "too few samples".
        let m = verdict(&[5.0], &[500.0], 0.05);
        assert_eq!(m.verdict, Verdict::Inconclusive);
        assert!((m.change.unwrap() - 99.0).abs() < 1e-12);
        assert!(
            m.reason.starts_with("+9900 % (5.000 ns → 500.0 ns)"),
            "{}",
            m.reason
        );
        // One sample against many cannot reach the level either.
        let m = verdict(&[5.0], &BASE, 0.05);
        assert_eq!(m.verdict, Verdict::Inconclusive);
        assert!(m.change.is_some() && m.ci.is_none());
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
        // -10 % inside an absolute tolerance of 150 is within it, but not "unchanged".
        h.gate.tolerance = Some(Tolerance::Absolute(150.0));
        assert_eq!(
            compare_metric(&b, &h, &ComparePolicy::default()).verdict,
            Verdict::WithinThreshold
        );
    }

    fn run(benchmarks: Vec<BenchmarkResult>) -> RunResults {
        RunResults::of(benchmarks)
    }

    fn bench(name: &str, m: MetricSamples) -> BenchmarkResult {
        let mut b = BenchmarkResult::new(name, Provenance::default());
        b.repetitions = m.values.len() as u32;
        b.metrics.push(m);
        b
    }

    #[test]
    fn evidence_bounded_while_it_is_built_is_the_evidence_bounded_afterwards() {
        use crate::model::evidence::{Evidence, MAX_CHARTED_METRICS};
        // More regressed and undecided metrics than a bounded report charts, metrics that
        // held, benchmarks with nothing charted, a long series to thin, and a benchmark on
        // one side only each way.
        let named = |name: &str, values: &[f64]| MetricSamples {
            name: name.into(),
            ..samples(values, 0.01)
        };
        let long: Vec<f64> = (0..1500).map(|i| 100.0 + f64::from(i % 7)).collect();
        let longer: Vec<f64> = long.iter().map(|v| v * 1.1).collect();
        let mut base = Vec::new();
        let mut head = Vec::new();
        for i in 0..150 {
            let mut b = bench(&format!("b{i}"), named("slow", &BASE));
            b.metrics.push(named("held", &SAME));
            b.metrics.push(named("noisy", &NOISY));
            let slow: &[f64] = if i % 2 == 0 { &NEW } else { &BASE };
            let mut h = bench(&format!("b{i}"), named("slow", slow));
            h.metrics.push(named("held", &SAME));
            h.metrics.push(named("noisy", &SAME));
            if i == 0 {
                b.metrics.push(named("long", &long));
                h.metrics.push(named("long", &longer));
            }
            base.push(b);
            head.push(h);
        }
        base.push(bench("gone", named("slow", &BASE)));
        head.insert(3, bench("fresh", named("slow", &NEW)));
        let (base, head) = (run(base), run(head));
        let mut built = compare(&base, &head, &ComparePolicy::default(), Design::Files);
        let mut afterwards = built.clone();
        afterwards.evidence = Some(Evidence::from_runs(Some(&base), &head));
        afterwards.bound_evidence();
        built.attach_bounded_evidence(Some(&base), &head);
        assert_eq!(built.evidence, afterwards.evidence);
        let evidence = built.evidence.unwrap();
        let omitted = evidence.omitted.clone().expect("something was left out");
        assert!(omitted.benchmarks > 0 && omitted.metrics > 0 && omitted.thinned_series > 0);
        let charted: usize = evidence
            .benchmarks
            .iter()
            .flat_map(|b| &b.metrics)
            .filter(|m| !m.base.is_empty() || !m.head.is_empty())
            .count();
        assert_eq!(charted, MAX_CHARTED_METRICS);
        for one_side in ["fresh", "gone"] {
            assert!(!evidence.benchmark(one_side).unwrap().metrics.is_empty());
        }
    }

    #[test]
    fn a_wrong_candidate_is_incorrect_whatever_its_speed_with_or_without_a_baseline() {
        use crate::model::results::Correctness;
        let wrong = |name: &str, values: &[f64], detail: Option<&str>| {
            let mut b = bench(name, samples(values, 0.01));
            Correctness::record(&mut b.correctness, true, None);
            Correctness::record(&mut b.correctness, false, detail.map(str::to_string));
            Correctness::record(&mut b.correctness, false, Some("a later detail".into()));
            b
        };
        let base = run(vec![
            bench("faster", samples(&NEW, 0.01)),
            bench("same", samples(&BASE, 0.01)),
        ]);
        let head = run(vec![
            wrong("faster", &BASE, Some("max abs error 0.5 > 1e-3")),
            wrong("same", &SAME, None),
            wrong("fresh", &SAME, Some("NaN")),
        ]);
        let r = compare(&base, &head, &ComparePolicy::default(), Design::Files);
        assert_eq!(r.verdict, RunVerdict::Regressed);
        assert_eq!((r.summary.incorrect, r.summary.improved), (3, 0));
        let faster = &r.benchmarks[0];
        assert_eq!(faster.verdict, Verdict::Incorrect);
        assert_eq!(faster.metrics[0].verdict, Verdict::Improved);
        assert!(
            faster.explanation.starts_with(
                "failed its correctness check in the candidate: max abs error 0.5 > 1e-3; wrong answers fail the gate whatever their speed (its metrics alone say improved: "
            ),
            "{}",
            faster.explanation
        );
        assert!(
            r.benchmarks[1]
                .explanation
                .starts_with("failed its correctness check in the candidate; wrong answers"),
            "{}",
            r.benchmarks[1].explanation
        );
        assert_eq!(r.benchmarks[2].verdict, Verdict::Incorrect);
        assert!(
            r.benchmarks[2]
                .explanation
                .ends_with("; it has no baseline")
        );
        // Without a baseline a wrong answer still fails the run.
        let r = no_baseline(&head, &ComparePolicy::default(), "none".into());
        assert_eq!(r.verdict, RunVerdict::Regressed);
        assert_eq!(r.summary.incorrect, 3);
        // A wrong baseline gates nothing; a correct candidate is compared as ever.
        let r = compare(&head, &base, &ComparePolicy::default(), Design::Files);
        assert_eq!(r.summary.incorrect, 0);
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
            m.reason.starts_with(
                "may not fail the build: its source `reported` is not allowed to gate"
            ),
            "{}",
            m.reason
        );
        // A benchmark none of whose metrics may gate is never "unchanged": it has its own
        // verdict and count, and the regression it would have had is a warning.
        assert_eq!(r.benchmarks[0].verdict, Verdict::NotGated);
        assert_eq!((r.summary.not_gated, r.summary.unchanged), (1, 1));
        assert!(
            r.benchmarks[0]
                .explanation
                .starts_with("kernel_time +1.69 % would regress, but its source `reported`"),
            "{}",
            r.benchmarks[0].explanation
        );
        // Said once, in the benchmark's own explanation, not again as a warning.
        assert!(
            !r.warnings.iter().any(|w| w.contains("would regress")),
            "{:?}",
            r.warnings
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
            &run(base.clone()),
            &run(head.clone()),
            &ComparePolicy::default(),
            Design::Files,
        );
        let m = &r.benchmarks[0].metrics[0];
        assert_eq!(m.verdict, Verdict::Inconclusive, "{}", m.reason);
        assert!((m.p_adjusted.unwrap() - 20.0 / 924.0).abs() < 1e-12);
        // 6 per side cannot reach 0.01 / 20 = 5e-4, the level a lone regression faces, so
        // there is no detectable effect to report for one. But BH rejects at up to alpha·k/m,
        // and the floor 1/924 is below alpha: had more of the family regressed, this one could
        // have been, so it is not "too few repetitions to detect anything".
        assert!(!m.reason.contains("too few repetitions"), "{}", m.reason);
        assert_eq!(m.mde, None);
        assert_eq!(r.correction, Correction::Bh);
        assert_eq!(r.model, Model::RankTest);
        // Holm's step-down must first reject at alpha / m: 5e-4 is out of reach, whatever the
        // others do, and the reason says so, naming the correction.
        let holm = ComparePolicy {
            correction: Correction::Holm,
            ..ComparePolicy::default()
        };
        let r = compare(&run(base), &run(head), &holm, Design::Files);
        let m = &r.benchmarks[0].metrics[0];
        assert_eq!(m.verdict, Verdict::Inconclusive, "{}", m.reason);
        assert!(
            m.reason
                .contains("too few repetitions to detect anything: the smallest attainable p is 0.001, above the largest level the holm correction over 20 tested metrics can reach (5.0e-4)"),
            "{}",
            m.reason
        );
    }

    #[test]
    fn equivalence_margin_and_mde_are_reported() {
        let m = verdict(&BASE, &SAME, 0.05);
        assert_eq!(m.verdict, Verdict::Unchanged);
        // The default margin is what a reader calls no change: 1 %, not the 5 % threshold.
        assert_eq!(m.equivalence_margin, Some(0.01));
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
        assert_eq!(m.verdict, Verdict::WithinThreshold, "{}", m.reason);
        assert!(
            m.reason
                .contains("no significant change, within the 5.00 % threshold"),
            "{}",
            m.reason
        );
        assert!(m.reason.contains("±0.10 %"), "{}", m.reason);
    }

    #[test]
    fn looks_split_alpha() {
        // NEW vs BASE: one-sided p = 5.4e-6; at alpha 0.01 over 3 looks still regressed, and
        // the report says how many looks were planned.
        let look = crate::model::results::Look {
            n: 10,
            of: 3,
            alpha: 0.01 / 3.0,
            verdict: Verdict::Inconclusive,
            schedule: None,
        };
        let compared = |look: &crate::model::results::Look| {
            let mut b = bench("a", samples(&BASE, 0.01));
            let mut h = bench("a", samples(&NEW, 0.01));
            b.looks = vec![look.clone()];
            h.looks = vec![look.clone()];
            compare(
                &run(vec![b]),
                &run(vec![h]),
                &ComparePolicy::default(),
                Design::Interleaved,
            )
        };
        // Recorded without a schedule: Bonferroni over 3 looks, the adjusted p three times
        // the raw one.
        let r = compared(&look);
        assert_eq!(r.looks, 3);
        assert_eq!(r.benchmarks[0].verdict, Verdict::Regressed);
        let m = &r.benchmarks[0].metrics[0];
        let raw = m.p_regression.unwrap();
        assert!((m.p_adjusted.unwrap() - 3.0 * raw).abs() < 1e-12 * raw.max(1e-300));
        // With a schedule (16 looks every 2 from 10 to 40): the plan's sequential p, below
        // Bonferroni's 16 · p, and the interval at the nominal level of a look.
        let plan = inference::LookPlan::new(10, 40, 2);
        let look = crate::model::results::Look {
            of: plan.count(),
            alpha: plan.alpha_per_look(0.01),
            schedule: plan.schedule(),
            ..look
        };
        let r = compared(&look);
        assert_eq!(r.looks, 16);
        assert_eq!(r.benchmarks[0].verdict, Verdict::Regressed);
        let m = &r.benchmarks[0].metrics[0];
        let adjusted = m.p_adjusted.unwrap();
        assert_eq!(adjusted, plan.sequential_p(raw));
        assert!(adjusted > raw && adjusted < 16.0 * raw, "{raw} {adjusted}");
        let level = m.ci_level.unwrap();
        assert!(
            (level - (1.0 - 2.0 * plan.alpha_per_look(0.01))).abs() < 1e-12,
            "{level}"
        );
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

    /// `n` draws of 100 · exp(N(0, sd)) scaled by `scale`.
    fn lognormal(rng: &mut inference::Xorshift, n: usize, sd: f64, scale: f64) -> Vec<f64> {
        (0..n)
            .map(|_| 100.0 * scale * (sd * rng.normal()).exp())
            .collect()
    }

    #[test]
    fn a_regression_interval_never_includes_no_change() {
        // Shifts near the edge of significance, alone and among other gated benchmarks: every
        // regression's interval (at its stated level) must lie above zero, and the old 99 %
        // two-sided interval would have included zero for some of them.
        let mut rng = inference::Xorshift::new(7);
        let (mut regressions, mut old_interval_contradicted) = (0, 0);
        for trial in 0..300 {
            let shift = 1.0 + 0.01 * f64::from(trial % 5 + 1);
            let others = trial % 3 * 4;
            let mut base = vec![bench(
                "a",
                samples(&lognormal(&mut rng, 10, 0.02, 1.0), 0.005),
            )];
            let mut head = vec![bench(
                "a",
                samples(&lognormal(&mut rng, 10, 0.02, shift), 0.005),
            )];
            for i in 0..others {
                base.push(bench(
                    &format!("o{i}"),
                    samples(&lognormal(&mut rng, 10, 0.02, 1.0), 0.005),
                ));
                head.push(bench(
                    &format!("o{i}"),
                    samples(&lognormal(&mut rng, 10, 0.02, 1.0), 0.005),
                ));
            }
            let (base, head) = (run(base), run(head));
            let r = compare(&base, &head, &ComparePolicy::default(), Design::Files);
            for (b, m) in r
                .benchmarks
                .iter()
                .flat_map(|b| b.metrics.iter().map(move |m| (b, m)))
            {
                if m.verdict != Verdict::Regressed {
                    continue;
                }
                regressions += 1;
                let ci = m.ci.expect("a regression has an interval");
                assert!(
                    ci[0] > 0.0,
                    "trial {trial}: {} {ci:?}: {}",
                    b.name,
                    m.reason
                );
                let level = format!("{} % CI", percent_level(m.ci_level.unwrap()));
                assert!(m.reason.contains(&level), "{}", m.reason);
                let logs = |v: &[f64]| v.iter().map(|x| x.ln()).collect::<Vec<_>>();
                let (bv, hv) = (
                    &base.benchmark(&b.name).unwrap().metrics[0].values,
                    &head.benchmark(&b.name).unwrap().metrics[0].values,
                );
                let old = stats::hodges_lehmann(&logs(hv), &logs(bv), 0.99).unwrap();
                if old.low <= 0.0 {
                    old_interval_contradicted += 1;
                }
            }
        }
        assert!(regressions > 50, "{regressions}");
        assert!(
            old_interval_contradicted > 0,
            "the case this guards against occurred"
        );
    }

    #[test]
    fn a_small_real_change_inside_a_wide_threshold_is_within_threshold() {
        // The bundled suite's case: +5 % against a 50 % threshold is a real change, reported
        // as such, and the benchmark is not counted as unchanged.
        let head: Vec<f64> = BASE.iter().map(|v| v * 1.05).collect();
        let r = compare(
            &run(vec![bench("reduce", samples(&BASE, 0.5))]),
            &run(vec![bench("reduce", samples(&head, 0.5))]),
            &ComparePolicy::default(),
            Design::Files,
        );
        let b = &r.benchmarks[0];
        assert_eq!(b.verdict, Verdict::WithinThreshold, "{}", b.explanation);
        assert!(
            b.explanation
                .contains("a real change, within the 50.0 % threshold"),
            "{}",
            b.explanation
        );
        assert_eq!((r.summary.within_threshold, r.summary.unchanged), (1, 0));
        assert_eq!(r.verdict, RunVerdict::Pass);
    }

    /// A job of benchmark `a` at `scale` times the base timings, recorded on day `at` + 1.
    fn dated_job(scale: f64, at: usize) -> RunResults {
        let mut r = run(vec![bench("a", samples(&BASE.map(|v| v * scale), 0.02))]);
        r.created = format!("2026-01-{:02}T00:00:00Z", at + 1);
        r
    }

    /// Six jobs at one level, with a small job-to-job wiggle, from day `from` + 1 on.
    fn level_jobs(level: f64, from: usize) -> Vec<RunResults> {
        [1.0, 1.004, 0.997, 1.002, 0.999, 1.003]
            .iter()
            .enumerate()
            .map(|(i, w)| dated_job(level * w, from + i))
            .collect()
    }

    #[test]
    fn the_prediction_interval_uses_only_the_jobs_since_the_last_change_point() {
        // Six jobs at 1.00, then six at 1.10 (a change `kgate history` finds); a candidate at
        // 1.11 is in line with the current regime. Pooling all twelve jobs would make it look
        // far off their mean.
        let mut jobs = level_jobs(1.0, 0);
        jobs.extend(level_jobs(1.10, 6));
        let base = jobs.pop().unwrap();
        let head = dated_job(1.11, 20);
        let r = compare_with_history(
            &base,
            &head,
            &jobs,
            &ComparePolicy::default(),
            Design::StoredBaseline,
        );
        let m = &r.benchmarks[0].metrics[0];
        assert_eq!(m.method, Method::PredictionInterval);
        assert!(
            m.reason
                .contains("against 6 stored jobs since the change point at job 7 of 12"),
            "{}",
            m.reason
        );
        assert!(m.change.unwrap().abs() < 0.02, "{:?}", m.change);
        assert_ne!(m.verdict, Verdict::Regressed, "{}", m.reason);
    }

    #[test]
    fn a_history_that_moved_on_after_a_regression_does_not_hide_it_from_the_old_baseline() {
        // Six jobs at 1.00, the stored baseline among them, then six jobs 30 % slower recorded
        // after the regression landed. A candidate still 30 % slower than the baseline is a
        // regression against it: the yardstick is the jobs at the baseline's level, not the
        // regressed ones.
        let mut jobs = level_jobs(1.0, 0);
        let base = jobs.remove(5);
        jobs.extend(level_jobs(1.30, 6));
        let head = dated_job(1.30, 20);
        let r = compare_with_history(
            &base,
            &head,
            &jobs,
            &ComparePolicy::default(),
            Design::StoredBaseline,
        );
        let m = &r.benchmarks[0].metrics[0];
        assert_eq!(m.method, Method::PredictionInterval, "{}", m.reason);
        assert!(
            m.reason
                .contains("against 6 stored jobs at the baseline's level (jobs 1–6 of 12"),
            "{}",
            m.reason
        );
        assert_eq!(m.verdict, Verdict::Regressed, "{}", m.reason);
    }

    fn machine(cpu: &str) -> Fingerprint {
        Fingerprint {
            cpu_model: cpu.into(),
            cores: 2,
            arch: "x86_64".into(),
            ..Fingerprint::default()
        }
    }

    #[test]
    fn across_environments_only_deterministic_counts_gate() {
        let mut counts = samples(&[1000.0], 0.05);
        counts.name = "Ir".into();
        counts.source = Source::Simulated;
        counts.gate.tolerance = Some(Tolerance::Relative(0.01));
        let mut more = counts.clone();
        more.values = vec![1100.0];
        let slow: Vec<f64> = BASE.iter().map(|v| v * 3.0).collect();
        let side = |cpu: &str, timer: &[f64], ir: &MetricSamples| {
            let mut t = bench("mm", samples(timer, 0.05));
            t.metrics.push(ir.clone());
            let mut r = run(vec![t]);
            r.environment = machine(cpu);
            r
        };
        // A 3x slower timer on another CPU model does not gate; the deterministic count does.
        let base = side("Xeon", &BASE, &counts);
        let r = compare(
            &base,
            &side("EPYC", &slow, &counts),
            &ComparePolicy::default(),
            Design::StoredBaseline,
        );
        let timer = &r.benchmarks[0].metrics[0];
        assert_eq!(timer.verdict, Verdict::Regressed);
        assert!(!timer.gates);
        assert!(
            timer
                .not_gating
                .as_deref()
                .unwrap()
                .contains("different environments"),
            "{:?}",
            timer.not_gating
        );
        assert_eq!(
            r.benchmarks[0].verdict,
            Verdict::Unchanged,
            "{}",
            r.benchmarks[0].explanation
        );
        assert_eq!(r.verdict, RunVerdict::Pass);
        let env: Vec<&String> = r
            .warnings
            .iter()
            .filter(|w| w.starts_with(ENVIRONMENTS_DIFFER))
            .collect();
        assert_eq!(
            env.len(),
            1,
            "one line on the environments: {:?}",
            r.warnings
        );
        assert!(
            env[0].contains("cpu_model: `Xeon` vs `EPYC`") && env[0].contains("1 such metric is"),
            "{}",
            env[0]
        );
        // The deterministic count still fails the build.
        let r = compare(
            &base,
            &side("EPYC", &BASE, &more),
            &ComparePolicy::default(),
            Design::StoredBaseline,
        );
        assert_eq!(r.verdict, RunVerdict::Regressed);
        // `gate.noisy_metrics: always` opts back in.
        let always = ComparePolicy {
            noisy_metrics: NoisyMetrics::Always,
            ..ComparePolicy::default()
        };
        let r = compare(
            &base,
            &side("EPYC", &slow, &counts),
            &always,
            Design::StoredBaseline,
        );
        assert_eq!(r.verdict, RunVerdict::Regressed);
        // `same-job`: on the same machine a stored baseline does not gate timers either, but
        // an interleaved run does.
        let same_job = ComparePolicy {
            noisy_metrics: NoisyMetrics::SameJob,
            ..ComparePolicy::default()
        };
        let head = side("Xeon", &slow, &counts);
        let r = compare(&base, &head, &same_job, Design::StoredBaseline);
        assert_eq!(r.verdict, RunVerdict::Pass);
        assert!(
            r.benchmarks[0].metrics[0]
                .not_gating
                .as_deref()
                .unwrap()
                .contains("same-job")
        );
        let r = compare(&base, &head, &same_job, Design::Interleaved);
        assert_eq!(r.verdict, RunVerdict::Regressed);
    }
}
