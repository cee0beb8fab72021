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
        report.benchmarks.push(BenchmarkComparison::bare(
            name,
            Verdict::Missing,
            "declared by the base revision's configuration but not by this one (removed or renamed): not measured, so not gated".into(),
        ));
    }
    recount(report);
}

/// Replaces the entries of benchmarks that were not run (reported `missing` by the comparison)
/// with `skipped` ones carrying their baseline values, and recounts.
pub fn mark_skipped(report: &mut Report, skipped: &[String], base: Option<&RunResults>, why: &str) {
    let skipped_names: std::collections::HashSet<&str> =
        skipped.iter().map(String::as_str).collect();
    let benchmarks = &mut report.benchmarks;
    benchmarks.retain(|b| !skipped_names.contains(b.name.as_str()));
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

/// What [`reconcile`] made of a stored report.
#[derive(Debug, Default, PartialEq)]
pub struct Reconciled {
    /// What the report claimed that its rows do not support, one sentence each; also put first
    /// among the report's warnings.
    pub warnings: Vec<String>,
    /// Gating metric rows that say `regressed` and are marked waived by the report itself: a
    /// waiver is a claim of whoever wrote the report, which a job that only reads it cannot
    /// check.
    pub waived_regressions: usize,
}

/// How much a benchmark verdict weighs on the gate: failed, then incorrect, then regressed,
/// then inconclusive;
/// the rest pass.
fn severity(v: Verdict) -> u8 {
    match v {
        Verdict::Failed => 4,
        Verdict::Incorrect => 3,
        Verdict::Regressed => 2,
        Verdict::Inconclusive => 1,
        _ => 0,
    }
}

/// The verdict a benchmark's gating metric rows add up to, as the comparison decides it (the
/// worst of the gating rows that are not waived, `unchanged` when every regression is waived);
/// `None` when it has no gating row, so its rows decide nothing (a failed, new, missing or
/// skipped benchmark, or one that is not gated).
fn rows_verdict(b: &BenchmarkComparison) -> Option<Verdict> {
    let gating: Vec<&MetricComparison> = b
        .metrics
        .iter()
        .filter(|m| m.gates && !matches!(m.verdict, Verdict::New | Verdict::Missing))
        .collect();
    if gating.is_empty() {
        return None;
    }
    let counted = gating.iter().filter(|m| !m.waived).map(|m| m.verdict);
    if counted.clone().any(|v| v == Verdict::Failed) {
        return Some(Verdict::Failed);
    }
    Some(compare::worst_verdict(counted).unwrap_or(Verdict::Unchanged))
}

/// Makes a stored report (one read back from a file, such as a fork's report artifact
/// downloaded by a `workflow_run` job) say only what its rows support: nothing in it is
/// trusted, its `verdict` and `summary` least of all.
///
/// Each benchmark's verdict is recomputed from its gating metric rows where it has any (a
/// verdict worse than the rows', such as `failed`, is kept); the counts are recounted from the
/// benchmark verdicts, and the run verdict follows from the counts (`no-baseline` only where
/// nothing failed, regressed or was inconclusive). Every claim the rows do not support is
/// named in a warning.
pub fn reconcile(report: &mut Report) -> Reconciled {
    let mut found = Reconciled::default();
    let mut changed = Vec::new();
    let mut waived_benchmarks = 0;
    for b in &mut report.benchmarks {
        let waived = |m: &&MetricComparison| m.gates && m.waived && m.verdict == Verdict::Regressed;
        let waived = b.metrics.iter().filter(waived).count();
        found.waived_regressions += waived;
        waived_benchmarks += usize::from(waived > 0);
        // A wrong answer is not in the rows (they say how fast it was): the verdict can only
        // make the run worse than they do, so it is kept without a word.
        if b.verdict == Verdict::Incorrect {
            continue;
        }
        let Some(rows) = rows_verdict(b) else {
            continue;
        };
        if rows == b.verdict {
            continue;
        }
        let (name, was, says) = (&b.name, b.verdict.as_str(), rows.as_str());
        if severity(b.verdict) > severity(rows) {
            changed.push(format!(
                "`{name}` is marked {was} though its gating metrics say {says}; kept as {was}"
            ));
        } else {
            changed.push(format!(
                "`{name}` is marked {was} but its gating metrics say {says}"
            ));
            b.verdict = rows;
        }
    }
    const NAMED: usize = 5;
    if !changed.is_empty() {
        let more = changed.len().saturating_sub(NAMED);
        let mut text = format!(
            "the report's benchmark verdicts disagree with its metric rows, which decide here: {}",
            changed[..changed.len().min(NAMED)].join("; ")
        );
        if more > 0 {
            text.push_str(&format!("; and {more} more"));
        }
        found.warnings.push(text);
    }
    let claimed_summary = report.summary.clone();
    let claimed_verdict = report.verdict;
    let mut summary = compare::count(&report.benchmarks);
    summary.waived = waived_benchmarks;
    if summary != claimed_summary && changed.is_empty() {
        found.warnings.push(
            "the report's counts do not match its benchmarks; they are recounted from the benchmarks".into(),
        );
    }
    report.summary = summary;
    report.verdict = match report.summary.run_verdict() {
        RunVerdict::Pass if claimed_verdict == RunVerdict::NoBaseline => RunVerdict::NoBaseline,
        verdict => verdict,
    };
    if report.verdict != claimed_verdict {
        let word = |v: RunVerdict| {
            serde_json::to_value(v)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default()
        };
        found.warnings.push(format!(
            "the report says `{}`, but its benchmarks say `{}`: shown as `{}`",
            word(claimed_verdict),
            word(report.verdict),
            word(report.verdict)
        ));
    }
    report.warnings.splice(0..0, found.warnings.iter().cloned());
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::report::Counts;
    use crate::model::results::MetricSamples;
    use Verdict::*;

    fn row(verdict: Verdict, gates: bool) -> MetricComparison {
        let samples = MetricSamples::timer("kernel_time", &[]);
        MetricComparison {
            verdict,
            gates,
            ..compare::blank(&samples, &ComparePolicy::default())
        }
    }

    fn bench(name: &str, verdict: Verdict, metrics: Vec<MetricComparison>) -> BenchmarkComparison {
        BenchmarkComparison {
            name: name.into(),
            verdict,
            explanation: String::new(),
            metrics,
            profile: None,
        }
    }

    /// A benchmark marked `verdict` whose rows have the (verdict, gates) of `rows`.
    fn marked(name: &str, verdict: Verdict, rows: &[(Verdict, bool)]) -> BenchmarkComparison {
        bench(
            name,
            verdict,
            rows.iter().map(|&(v, g)| row(v, g)).collect(),
        )
    }

    /// A report that claims `verdict` and the counts of `benchmarks` as they are marked.
    fn report(verdict: RunVerdict, benchmarks: Vec<BenchmarkComparison>) -> Report {
        let policy = ComparePolicy::default();
        let mut r = compare::no_baseline(&RunResults::of(Vec::new()), &policy, String::new());
        r.warnings.clear();
        r.summary = compare::count(&benchmarks);
        r.benchmarks = benchmarks;
        r.verdict = verdict;
        r
    }

    #[test]
    fn a_regressed_gating_row_under_an_unchanged_benchmark_regresses_the_run() {
        let mm = marked("mm", Unchanged, &[(Regressed, true)]);
        let ok = marked("ok", Unchanged, &[(Unchanged, true)]);
        let mut r = report(RunVerdict::Pass, vec![mm, ok]);
        let found = reconcile(&mut r);
        assert_eq!(r.verdict, RunVerdict::Regressed);
        assert_eq!(r.benchmarks[0].verdict, Verdict::Regressed);
        assert_eq!((r.summary.regressed, r.summary.unchanged), (1, 1));
        assert_eq!(found.warnings.len(), 2, "{:?}", found.warnings);
        let said = "`mm` is marked unchanged but its gating metrics say regressed";
        assert_contains!(found.warnings[0], said);
        let said = "the report says `pass`, but its benchmarks say `regressed`";
        assert_contains!(found.warnings[1], said);
        assert_eq!(r.warnings, found.warnings);
    }

    #[test]
    fn counts_and_no_baseline_are_never_taken_from_the_report() {
        // Rows and benchmark verdicts agree; the counts and the run verdict lie.
        let benchmarks = vec![
            marked("broken", Failed, &[]),
            marked("mm", Regressed, &[(Regressed, true)]),
        ];
        let mut r = report(RunVerdict::NoBaseline, benchmarks);
        r.summary = Counts {
            unchanged: 2,
            total: 2,
            ..Counts::default()
        };
        let found = reconcile(&mut r);
        assert_eq!(r.verdict, RunVerdict::Error);
        assert_eq!((r.summary.failed, r.summary.regressed), (1, 1));
        assert_contains!(found.warnings[0], "counts do not match");
        // A report with nothing to compare stays `no-baseline`.
        let mut r = report(RunVerdict::NoBaseline, vec![marked("fresh", New, &[])]);
        assert!(reconcile(&mut r).warnings.is_empty());
        assert_eq!(r.verdict, RunVerdict::NoBaseline);
    }

    #[test]
    fn a_worse_mark_than_the_rows_stands_and_informational_rows_decide_nothing() {
        let benchmarks = vec![
            // Failed with rows that say unchanged: kept failed.
            marked("broken", Failed, &[(Unchanged, true)]),
            // Only informational rows: its own verdict stands.
            marked("info", NotGated, &[(Regressed, false)]),
            marked("skipped", Skipped, &[(Skipped, false)]),
        ];
        let mut r = report(RunVerdict::Error, benchmarks);
        let found = reconcile(&mut r);
        assert_eq!(r.benchmarks[0].verdict, Verdict::Failed);
        assert_eq!(r.benchmarks[1].verdict, Verdict::NotGated);
        assert_eq!(r.verdict, RunVerdict::Error);
        assert_eq!(found.warnings.len(), 1, "{:?}", found.warnings);
        assert_contains!(found.warnings[0], "kept as failed");
    }

    #[test]
    fn waived_regressions_are_counted_for_the_poster() {
        let mut waived = row(Verdict::Regressed, true);
        waived.waived = true;
        let mut r = report(RunVerdict::Pass, vec![bench("mm", Unchanged, vec![waived])]);
        r.summary.waived = 1;
        let found = reconcile(&mut r);
        assert!(found.warnings.is_empty(), "{:?}", found.warnings);
        assert_eq!(found.waived_regressions, 1);
        assert_eq!(r.verdict, RunVerdict::Pass);
    }
}
