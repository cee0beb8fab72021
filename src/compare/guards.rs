//! Guards: what keeps a comparison from claiming more than its inputs allow.
//!
//! Counters collected under different configurations are not compared; noisy metrics (timers,
//! hardware counters) do not gate across different environments or, with `gate.noisy_metrics:
//! same-job`, against another job's baseline; and a metric that would have regressed but may
//! not gate is named in a warning instead of passing in silence.

use super::{Context, ENVIRONMENTS_DIFFER};
use crate::compare::ComparePolicy;
use crate::derive::utilization::{CONFIG_DETAIL, METRICS_DETAIL};
use crate::model::metric::{NoisyMetrics, Source};
use crate::model::report::{BenchmarkComparison, Design, Method, MetricComparison};
use crate::model::results::{BenchmarkResult, RunResults};
use crate::model::units::format_change;
use crate::model::verdict::Verdict;

/// Counter-derived metrics collected under different configurations (another profile, sample
/// mode, scaling or pass plan): they are not compared.
pub(super) struct MixedCounters {
    /// The derived metrics either side names.
    metrics: Vec<String>,
    /// Each side's configuration ("none" where it has none).
    base: String,
    head: String,
}

impl MixedCounters {
    /// What refuses the two sides' counter-derived metrics, or None when their configurations
    /// agree.
    pub(super) fn of(base: &BenchmarkResult, head: &BenchmarkResult) -> Option<MixedCounters> {
        let config = |r: &BenchmarkResult| r.provenance.details.get(CONFIG_DETAIL).cloned();
        let (b, h) = (config(base), config(head));
        if b == h {
            return None;
        }
        let metrics = [base, head]
            .iter()
            .filter_map(|r| r.provenance.details.get(METRICS_DETAIL))
            .flat_map(|s| s.split(','))
            .map(str::to_string)
            .collect();
        let show = |c: Option<String>| c.unwrap_or_else(|| "none".into());
        Some(MixedCounters {
            metrics,
            base: show(b),
            head: show(h),
        })
    }

    /// Makes the derived metrics of a decided benchmark informational and inconclusive, with
    /// the reason.
    pub(super) fn refuse(&self, cmp: &mut BenchmarkComparison) {
        for m in cmp.metrics.iter_mut() {
            if self.metrics.contains(&m.name) {
                m.gates = false;
                m.verdict = Verdict::Inconclusive;
                m.reason = format!(
                    "counters collected under different configurations (baseline: {}; this run: {}); not compared",
                    self.base, self.head
                );
            }
        }
    }
}

/// One line on the environments when they differ: which fields, and which metrics could not
/// gate because of it (the key fields decide; the kernel release and the like are named too).
pub(super) fn environment_warnings(
    base: &RunResults,
    head: &RunResults,
    key: &[String],
    held_back: usize,
    policy: &ComparePolicy,
) -> Vec<String> {
    if key.is_empty() {
        return base
            .environment
            .differences(&head.environment)
            .into_iter()
            .map(|d| format!("baseline and candidate ran on different environments: {d}"))
            .collect();
    }
    let consequence = if policy.noisy_metrics == NoisyMetrics::Always {
        "every metric gates anyway (`gate.noisy_metrics: always`); the numbers may reflect the machines, not the change".to_string()
    } else {
        let (metrics, verbs) = if held_back == 1 {
            ("metric is", "does")
        } else {
            ("metrics are", "do")
        };
        format!(
            "a timing or hardware counter from another machine says nothing about the change, so {held_back} such {metrics} reported but {verbs} not gate; deterministic counts (valgrind) still gate. To gate them, measure both revisions in one job: `kgate check --against REF`"
        )
    };
    vec![format!(
        "{ENVIRONMENTS_DIFFER} ({}): {consequence}",
        key.join("; ")
    )]
}

/// "kernel_time +19.8 % would regress, but …": a metric that regressed without gating, and why
/// it may not gate (its `not_gating`, or that it is informational).
pub(super) fn would_regress(m: &MetricComparison) -> String {
    let why = m
        .not_gating
        .as_deref()
        .unwrap_or("it is informational (`gate: false`)");
    format!(
        "{} {} would regress, but {why}",
        m.name,
        m.change.map(format_change).unwrap_or_default()
    )
}

/// A warning for each metric that would have regressed but may not gate.
pub(super) fn not_gating_warnings(b: &BenchmarkComparison) -> impl Iterator<Item = String> + '_ {
    b.metrics
        .iter()
        .filter(|m| m.verdict == Verdict::Regressed && !m.gates && m.not_gating.is_some())
        .map(|m| format!("{}: {}", b.name, would_regress(m)))
}

/// How many of a benchmark's metrics may not gate because the environments differ.
pub(super) fn held_back_by_environments(b: &BenchmarkComparison) -> usize {
    let environments = |w: &String| w.contains("environments");
    let held_back = |m: &&MetricComparison| m.not_gating.as_ref().is_some_and(environments);
    b.metrics.iter().filter(held_back).count()
}

/// Why a noisy metric may not gate in this comparison, or None when it may. Deterministic
/// counts (`simulated`) mean the same on every machine and always may.
pub(super) fn noisy_block(source: Source, method: Method, ctx: &Context<'_>) -> Option<String> {
    if source == Source::Simulated || ctx.policy.noisy_metrics == NoisyMetrics::Always {
        return None;
    }
    if !ctx.environment_differences.is_empty() {
        return Some(format!(
            "baseline and candidate ran on different environments, and a `{}` metric from another machine says nothing about the change (`kgate check --against REF` measures both revisions in one job)",
            source.as_str()
        ));
    }
    let same_job = ctx.design == Design::Interleaved || method == Method::PredictionInterval;
    (ctx.policy.noisy_metrics == NoisyMetrics::SameJob && !same_job).then(|| {
        format!(
            "the baseline was measured by another job and `gate.noisy_metrics: same-job` lets a `{}` metric gate only when both sides ran in this job (`kgate check --against REF`) or against a recorded history",
            source.as_str()
        )
    })
}

/// Marks a metric that may not gate here, saying why.
pub(super) fn hold_back(out: &mut MetricComparison, source: Source, ctx: &Context<'_>) {
    if out.gates
        && let Some(why) = noisy_block(source, out.method, ctx)
    {
        out.gates = false;
        out.not_gating = Some(why);
    }
}
