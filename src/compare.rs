//! Comparison: baseline against candidate, metric by metric, into verdicts.
//!
//! The decision rule is deliberately simple but honest. Noisy metrics use a two-sided
//! Mann–Whitney rank test together with a Hodges–Lehmann shift on log values and its
//! distribution-free confidence interval: a regression needs both significance and a change
//! at least as large as the threshold; "unchanged" needs the whole interval inside the
//! threshold; everything else is "inconclusive", never a guess. Metrics declared deterministic
//! (a `tolerance`) are compared against it without statistics.
//!
//! The structs here are the JSON report contract of DESIGN.md.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
    /// Mann–Whitney U with a Hodges–Lehmann interval.
    RankTest,
    /// Deterministic metric against its tolerance.
    Tolerance,
    /// No test possible (a side has no samples, or units differ).
    None,
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
    /// Significance level used.
    pub alpha: f64,
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

/// Benchmark counts by verdict.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Counts {
    pub regressed: usize,
    pub improved: usize,
    pub unchanged: usize,
    pub inconclusive: usize,
    pub new: usize,
    pub missing: usize,
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
    /// Threshold used (relative; 0.05 is 5 %).
    pub threshold: f64,
    pub base: Option<Summary>,
    pub head: Option<Summary>,
    /// Estimated relative change, head against base (0.05 is +5 %).
    pub change: Option<f64>,
    /// Confidence interval of the change on the same scale, at level 1 − alpha.
    pub ci: Option<[f64; 2]>,
    /// Two-sided p-value of the rank test.
    pub p_value: Option<f64>,
    /// minimum detectable relative effect
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mde: Option<f64>,
}

/// What decides verdicts and which sources may fail the build.
#[derive(Debug, Clone, PartialEq)]
pub struct ComparePolicy {
    pub alpha: f64,
    pub gating_sources: Vec<Source>,
}

impl Default for ComparePolicy {
    fn default() -> Self {
        ComparePolicy {
            alpha: 0.01,
            gating_sources: Source::DEFAULT_GATING.to_vec(),
        }
    }
}

impl From<&crate::config::GatePolicy> for ComparePolicy {
    fn from(p: &crate::config::GatePolicy) -> Self {
        ComparePolicy {
            alpha: p.alpha,
            gating_sources: p.sources.clone(),
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
    let mut benchmarks = Vec::new();
    for h in &head.benchmarks {
        let cmp = match base.benchmark(&h.name) {
            Some(b) => compare_benchmark(b, h, policy),
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
    if design == Design::StoredBaseline {
        warnings.push("the baseline was stored by another job; job-to-job offsets are not visible to a within-job test, so small changes may be machine noise (run `kgate check --against REF` to interleave both revisions)".into());
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
        base_commit: None,
        head_commit: head.environment.git.as_ref().map(|g| g.commit.clone()),
        warnings: vec![reason],
        benchmarks,
        evidence: None,
    }
}

fn count(benchmarks: &[BenchmarkComparison]) -> Counts {
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
        }
    }
    c
}

fn compare_benchmark(
    base: &BenchmarkResult,
    head: &BenchmarkResult,
    policy: &ComparePolicy,
) -> BenchmarkComparison {
    for (side, r) in [("candidate", head), ("baseline", base)] {
        if r.status == Status::Failed {
            let why = r
                .failure
                .as_ref()
                .map(|f| f.message.as_str())
                .unwrap_or("failed");
            return BenchmarkComparison {
                name: head.name.clone(),
                verdict: Verdict::Missing,
                explanation: format!("failed in the {side}: {why}"),
                metrics: Vec::new(),
            };
        }
    }
    let mut metrics: Vec<MetricComparison> = head
        .metrics
        .iter()
        .map(|h| match base.metric(&h.name) {
            Some(b) => compare_metric(b, h, policy),
            None => MetricComparison {
                verdict: Verdict::New,
                reason: "not measured in the baseline".into(),
                method: Method::None,
                base: None,
                head: stats::summarize(&h.values),
                ..blank(h, policy)
            },
        })
        .collect();
    for b in &base.metrics {
        if head.metric(&b.name).is_none() {
            metrics.push(MetricComparison {
                verdict: Verdict::Missing,
                reason: "measured in the baseline but not in this run".into(),
                method: Method::None,
                base: stats::summarize(&b.values),
                head: None,
                ..blank(b, policy)
            });
        }
    }
    let gating: Vec<&MetricComparison> = metrics
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
    BenchmarkComparison {
        name: head.name.clone(),
        verdict,
        explanation,
        metrics,
    }
}

/// The parts of a metric comparison that do not depend on the test.
fn blank(m: &MetricSamples, policy: &ComparePolicy) -> MetricComparison {
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
        mde: None,
    }
}

/// Compares one metric; the candidate's gate rule and direction apply.
pub fn compare_metric(
    base: &MetricSamples,
    head: &MetricSamples,
    policy: &ComparePolicy,
) -> MetricComparison {
    let mut out = MetricComparison {
        base: stats::summarize(&base.values),
        head: stats::summarize(&head.values),
        ..blank(head, policy)
    };
    if head.gate.gates && !out.gates {
        out.reason = format!(
            "source `{}` may not fail the build (gate.sources); ",
            head.source.as_str()
        );
    }
    let decision = if base.unit != head.unit {
        Decision::none(format!(
            "units differ (`{}` in the baseline, `{}` now); cannot compare",
            base.unit, head.unit
        ))
    } else {
        match (&out.base, &out.head, head.gate.tolerance) {
            (None, _, _) | (_, None, _) => {
                Decision::none("a side has no valid samples".to_string())
            }
            (Some(b), Some(h), Some(tol)) => by_tolerance(b.median, h.median, tol, head.direction),
            (Some(_), Some(_), None) => by_rank_test(
                &base.values,
                &head.values,
                head.gate.threshold,
                head.direction,
                policy.alpha,
            ),
        }
    };
    out.verdict = decision.verdict;
    out.reason.push_str(&decision.reason);
    out.method = decision.method;
    out.change = decision.change;
    out.ci = decision.ci;
    out.p_value = decision.p_value;
    out
}

struct Decision {
    verdict: Verdict,
    reason: String,
    method: Method,
    change: Option<f64>,
    ci: Option<[f64; 2]>,
    p_value: Option<f64>,
}

impl Decision {
    fn none(reason: String) -> Decision {
        Decision {
            verdict: Verdict::Inconclusive,
            reason,
            method: Method::None,
            change: None,
            ci: None,
            p_value: None,
        }
    }
}

/// Whether a relative change is in the bad direction.
fn worse(change: f64, direction: Direction) -> bool {
    match direction {
        Direction::Lower => change > 0.0,
        Direction::Higher => change < 0.0,
    }
}

fn by_tolerance(base: f64, head: f64, tolerance: Tolerance, direction: Direction) -> Decision {
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
    Decision {
        verdict,
        reason: format!(
            "deterministic: {} ({base} → {head}), {what} the tolerance {limit}",
            format_change(change)
        ),
        method: Method::Tolerance,
        change: Some(change),
        ci: None,
        p_value: None,
    }
}

fn by_rank_test(
    base: &[f64],
    head: &[f64],
    threshold: f64,
    direction: Direction,
    alpha: f64,
) -> Decision {
    let p_value = stats::mann_whitney(head, base, Alternative::TwoSided).map(|m| m.p_value);
    let confidence = 1.0 - alpha;
    let positive = base.iter().chain(head).all(|v| *v > 0.0);
    // Shift head − base, as a relative change: on logs for positive data (a ratio), otherwise
    // relative to the baseline median.
    let shift = if positive {
        let lb: Vec<f64> = base.iter().map(|v| v.ln()).collect();
        let lh: Vec<f64> = head.iter().map(|v| v.ln()).collect();
        stats::hodges_lehmann(&lh, &lb, confidence)
            .map(|s| (s.shift.exp_m1(), [s.low.exp_m1(), s.high.exp_m1()]))
    } else {
        let scale = stats::median(base).map(f64::abs).filter(|m| *m > 0.0);
        scale.and_then(|scale| {
            stats::hodges_lehmann(head, base, confidence)
                .map(|s| (s.shift / scale, [s.low / scale, s.high / scale]))
        })
    };
    let level = format!("{}", (confidence * 100.0 * 1000.0).round() / 1000.0);
    let Some((change, ci)) = shift else {
        let n = base.len().min(head.len());
        return Decision {
            verdict: Verdict::Inconclusive,
            reason: format!(
                "too few samples ({} baseline, {} candidate) for a {level} % interval; raise `repetitions` (at least 5 per side at alpha 0.01)",
                base.len(),
                head.len()
            ) + if n == 0 { " (a side is empty)" } else { "" },
            method: Method::RankTest,
            change: None,
            ci: None,
            p_value,
        };
    };
    let p = p_value.unwrap_or(1.0);
    let interval = format!(
        "{level} % CI {} … {}",
        format_change(ci[0]),
        format_change(ci[1])
    );
    let described = format!(
        "{} ({interval}, p = {})",
        format_change(change),
        format_p(p)
    );
    let thr = format_change(threshold).trim_start_matches('+').to_string();
    let significant = p < alpha;
    let (verdict, reason) = if significant && change.abs() >= threshold {
        if worse(change, direction) {
            (
                Verdict::Regressed,
                format!("{described}: beyond the {thr} threshold"),
            )
        } else {
            (
                Verdict::Improved,
                format!("{described}: beyond the {thr} threshold"),
            )
        }
    } else if ci[0] > -threshold && ci[1] < threshold {
        (
            Verdict::Unchanged,
            format!("{described}: the interval lies within ±{thr}"),
        )
    } else if significant {
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
                "{described}: not enough evidence either way; the interval is wider than ±{thr}"
            ),
        )
    };
    Decision {
        verdict,
        reason,
        method: Method::RankTest,
        change: Some(change),
        ci: Some(ci),
        p_value,
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
}
