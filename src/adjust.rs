//! Adjustments made to a report after the comparison: counts and verdict recomputed once
//! waivers or diff-aware selection changed benchmark verdicts, and skipped benchmarks added.

use crate::compare::{
    self, BenchmarkComparison, Method, MetricComparison, Report, RunVerdict, Verdict,
};
use crate::results::RunResults;
use crate::stats;

/// Recomputes the summary counts and the run verdict from the benchmark verdicts.
pub fn recount(report: &mut Report) {
    let waived = report.summary.waived;
    report.summary = compare::count(&report.benchmarks);
    report.summary.waived = waived;
    if report.verdict == RunVerdict::NoBaseline {
        return;
    }
    report.verdict = if report.summary.regressed > 0 {
        RunVerdict::Regressed
    } else if report.summary.inconclusive > 0 {
        RunVerdict::Inconclusive
    } else {
        RunVerdict::Pass
    };
}

/// Replaces the entries of benchmarks that were not run (reported `missing` by the comparison)
/// with `skipped` ones carrying their baseline values, and recounts.
pub fn mark_skipped(report: &mut Report, skipped: &[String], base: Option<&RunResults>, why: &str) {
    report.benchmarks.retain(|b| !skipped.contains(&b.name));
    for name in skipped {
        let metrics = base
            .and_then(|r| r.benchmark(name))
            .map(|b| {
                b.metrics
                    .iter()
                    .map(|m| MetricComparison {
                        name: m.name.clone(),
                        unit: m.unit.clone(),
                        source: m.source,
                        direction: m.direction,
                        gates: false,
                        verdict: Verdict::Skipped,
                        reason: "not run; the baseline value stands".into(),
                        method: Method::None,
                        threshold: m.gate.threshold,
                        base: stats::summarize(&m.values),
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
                    })
                    .collect()
            })
            .unwrap_or_default();
        report.benchmarks.push(BenchmarkComparison {
            name: name.clone(),
            verdict: Verdict::Skipped,
            explanation: why.to_string(),
            metrics,
        });
    }
    recount(report);
}
