//! Adjustments made to a report after the comparison: counts and verdict recomputed once
//! waivers or diff-aware selection changed benchmark verdicts, and skipped benchmarks added.

use crate::compare::{self, ComparePolicy};
use crate::model::report::{BenchmarkComparison, MetricComparison, Report};
use crate::model::results::RunResults;
use crate::model::verdict::{RunVerdict, Verdict};
use crate::stats;

/// Recomputes the summary counts and the run verdict from the benchmark verdicts.
pub fn recount(report: &mut Report) {
    let waived = report.summary.waived;
    report.summary = compare::count(&report.benchmarks);
    report.summary.waived = waived;
    if report.verdict == RunVerdict::NoBaseline {
        return;
    }
    report.verdict = report.summary.run_verdict();
}

/// Adds a `missing` entry for each benchmark the base revision declares and this one does not
/// (removed or renamed: a renamed benchmark is `missing` under its old name and `new` under
/// its new one, and neither gates), and recounts.
pub fn mark_removed(report: &mut Report, removed: &[String]) {
    for name in removed {
        report.benchmarks.push(BenchmarkComparison {
            name: name.clone(),
            verdict: Verdict::Missing,
            explanation: "declared by the base revision's configuration but not by this one (removed or renamed): not measured, so not gated".into(),
            metrics: Vec::new(),
            profile: None,
        });
    }
    recount(report);
}

/// Replaces the entries of benchmarks that were not run (reported `missing` by the comparison)
/// with `skipped` ones carrying their baseline values, and recounts.
pub fn mark_skipped(report: &mut Report, skipped: &[String], base: Option<&RunResults>, why: &str) {
    let skipped_names: std::collections::HashSet<&str> =
        skipped.iter().map(String::as_str).collect();
    report
        .benchmarks
        .retain(|b| !skipped_names.contains(b.name.as_str()));
    let base_index = base.map(RunResults::by_name).unwrap_or_default();
    for name in skipped {
        let metrics = base_index
            .get(name.as_str())
            .map(|b| {
                b.metrics
                    .iter()
                    .map(|m| MetricComparison {
                        gates: false,
                        verdict: Verdict::Skipped,
                        reason: "not run; the baseline value stands".into(),
                        base: stats::summarize(&m.values),
                        ..compare::blank(m, &ComparePolicy::default())
                    })
                    .collect()
            })
            .unwrap_or_default();
        report.benchmarks.push(BenchmarkComparison {
            name: name.clone(),
            verdict: Verdict::Skipped,
            explanation: why.to_string(),
            metrics,
            profile: None,
        });
    }
    recount(report);
}
