//! `kgate calibrate`: measure the machine's noise with A/A runs and size the gate from it.
//!
//! The threshold and the repetition count only mean something against the noise of the runner
//! the gate runs on, which nobody knows in advance. An A/A run (the same build interleaved
//! against itself) has no true change, so its spread is pure noise: from it the power formulas
//! of `inference` give the smallest change the configured repetitions can detect, a threshold
//! worth setting, and the repetitions a configured threshold needs.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::compare::{self, ComparePolicy};
use crate::model::results::{RunResults, Status};
use crate::stats;
use crate::stats::inference::{self, MDE_POWER};

/// Most repetitions per side a suggestion may ask for.
pub const MAX_SUGGESTED_REPETITIONS: usize = 1000;

/// The noise of one metric of one benchmark, and what it implies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NoiseRow {
    pub benchmark: String,
    pub metric: String,
    pub unit: String,
    /// Repetitions per side.
    pub n: usize,
    /// Coefficient of variation (standard deviation / mean), pooled over both sides.
    pub cv: f64,
    /// Noise used for the power figures: the larger of 1.4826 × MAD of the log values (pooled)
    /// and the noise implied by the width of the A/A Hodges–Lehmann interval.
    pub robust_cv: f64,
    /// Tukey outliers over both sides.
    pub outliers: usize,
    /// The A/A change the gate's estimator reports (should be near 0).
    pub aa_change: Option<f64>,
    /// The A/A two-sided p-value (should not be small).
    pub aa_p_value: Option<f64>,
    /// Minimum detectable effect with n per side at the level one regression faces.
    pub mde: Option<f64>,
    /// Threshold configured for this metric.
    pub threshold: f64,
    /// A threshold this noise supports with n per side: the MDE rounded up to 0.5 %.
    pub suggested_threshold: Option<f64>,
    /// Repetitions per side that detect a change of the configured threshold with 80 % power.
    pub suggested_repetitions: Option<usize>,
}

/// The result of `kgate calibrate`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Calibration {
    /// Family-wise level of the gate.
    pub alpha: f64,
    /// Gated noisy metrics in the run (the multiplicity family).
    pub gated_metrics: usize,
    /// One-sided level a single regression faces: alpha / gated metrics.
    pub level: f64,
    /// Power at which detectable effects are stated.
    pub power: f64,
    pub rows: Vec<NoiseRow>,
}

/// Analyses an A/A pair of runs (both sides the same build).
pub fn analyse(a: &RunResults, b: &RunResults, policy: &ComparePolicy) -> Calibration {
    let mut pairs = Vec::new();
    let b_index = b.by_name();
    for x in &a.benchmarks {
        let Some(y) = b_index.get(x.name.as_str()) else {
            continue;
        };
        if x.status == Status::Failed || y.status == Status::Failed {
            continue;
        }
        let y_metrics = crate::model::by_name(&y.metrics, |m| m.name.as_str());
        for mx in &x.metrics {
            if mx.gate.tolerance.is_some() {
                continue;
            }
            if let Some(&my) = y_metrics.get(mx.name.as_str()) {
                pairs.push((x.name.clone(), mx, my));
            }
        }
    }
    let gated = pairs
        .iter()
        .filter(|(_, m, _)| m.gate.gates && policy.gating_sources.contains(&m.source))
        .count()
        .max(1);
    let level = policy.alpha / gated as f64;
    let rows = pairs
        .into_iter()
        .map(|(benchmark, mx, my)| {
            let (sa, sb) = (stats::summarize(&mx.values), stats::summarize(&my.values));
            let cv = match (&sa, &sb) {
                (Some(p), Some(q)) => ((p.cv * p.cv + q.cv * q.cv) / 2.0).sqrt(),
                _ => f64::NAN,
            };
            let outliers =
                sa.as_ref().map_or(0, |s| s.outliers) + sb.as_ref().map_or(0, |s| s.outliers);
            let aa = compare::compare_metric(mx, my, policy);
            // The larger of the robust noise and the noise the A/A interval implies (spikes).
            let (nx, ny) = (mx.values.len(), my.values.len());
            let confidence = 1.0 - policy.alpha;
            let implied = aa
                .ci
                .and_then(|ci| inference::noise_from_interval(ci, confidence, nx, ny));
            let n = nx.min(ny);
            let sigma = inference::pooled_log_noise(&mx.values, &my.values)
                .map(|s| s.max(implied.unwrap_or(0.0)));
            let mde = sigma.and_then(|s| {
                (inference::mwu_floor(n, n) <= level)
                    .then(|| inference::min_detectable_shift(s, n, n, level, MDE_POWER, false))
                    .flatten()
                    .map(f64::exp_m1)
            });
            let suggested_threshold = mde.map(|m| ((m * 200.0).ceil() / 200.0).max(0.005));
            let threshold = my.gate.threshold;
            let suggested_repetitions = sigma.and_then(|s| repetitions_for(s, threshold, level));
            NoiseRow {
                benchmark,
                metric: mx.name.clone(),
                unit: mx.unit.clone(),
                n,
                cv,
                robust_cv: sigma.unwrap_or(f64::NAN),
                outliers,
                aa_change: aa.change,
                aa_p_value: aa.p_value,
                mde,
                threshold,
                suggested_threshold,
                suggested_repetitions,
            }
        })
        .collect();
    Calibration {
        alpha: policy.alpha,
        gated_metrics: gated,
        level,
        power: MDE_POWER,
        rows,
    }
}

/// Smallest n per side whose minimum detectable change at `level` is at most `threshold` and
/// whose rank-test floor is below `level`; None above [`MAX_SUGGESTED_REPETITIONS`].
pub fn repetitions_for(sigma: f64, threshold: f64, level: f64) -> Option<usize> {
    if threshold.is_nan() || threshold <= 0.0 {
        return None;
    }
    let ok = |n: usize| {
        inference::mwu_floor(n, n) <= level
            && inference::min_detectable_shift(sigma, n, n, level, MDE_POWER, false)
                .is_some_and(|d| d.exp_m1() <= threshold)
    };
    if !ok(MAX_SUGGESTED_REPETITIONS) {
        return None;
    }
    let (mut lo, mut hi) = (2, MAX_SUGGESTED_REPETITIONS);
    if ok(lo) {
        return Some(lo);
    }
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if ok(mid) { hi = mid } else { lo = mid }
    }
    Some(hi)
}

/// A terminal table of the calibration.
pub fn render_table(c: &Calibration) -> String {
    use crate::model::units::format_change;
    let pct = |v: f64| format_change(v).trim_start_matches('+').to_string();
    let dash = |v: Option<String>| v.unwrap_or_else(|| "–".into());
    let opt = |v: Option<f64>| dash(v.map(pct));
    let mut table = comfy_table::Table::new();
    table
        .load_style(comfy_table::presets::UTF8_FULL_CONDENSED)
        .force_no_tty()
        .set_header(vec![
            "benchmark",
            "metric",
            "n/side",
            "CV",
            "noise σ",
            "outliers",
            "A/A change",
            "A/A p",
            "MDE",
            "threshold",
            "suggested threshold",
            "reps for threshold",
        ]);
    for r in &c.rows {
        table.add_row(vec![
            r.benchmark.clone(),
            r.metric.clone(),
            r.n.to_string(),
            pct(r.cv),
            pct(r.robust_cv),
            r.outliers.to_string(),
            dash(r.aa_change.map(format_change)),
            dash(r.aa_p_value.map(compare::format_p)),
            opt(r.mde),
            pct(r.threshold),
            opt(r.suggested_threshold),
            r.suggested_repetitions
                .map(|n| n.to_string())
                .unwrap_or_else(|| format!(">{MAX_SUGGESTED_REPETITIONS}")),
        ]);
    }
    format!(
        "A/A calibration of {} ({} in the multiplicity family), one-sided level per regression {} (alpha {}), power {} %\n{table}\nMDE: smallest change detected with 80 % power at this n. Set `gate.threshold` at or above the suggested threshold, or raise `repetitions` to the count shown for the configured threshold. A small A/A p-value means the two sides were not alike (drift, warm-up): raise `warmup`.\n",
        crate::model::text::count(c.rows.len(), "metric", "metrics"),
        crate::model::text::count(c.gated_metrics, "gates", "gate"),
        compare::format_p(c.level),
        c.alpha,
        c.power * 100.0
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repetitions_for_matches_the_power_table() {
        // docs/statistics.md: at one-sided 2e-4 and c = 1 %, n = 10 detects 2.40 % and n = 30
        // detects 1.20 %; so a 2.4 % threshold needs 10 (or fewer) and 1.2 % needs about 30.
        let sigma = (1.0f64 + 1e-4).ln().sqrt();
        let n = repetitions_for(sigma, 0.0241, 2e-4).unwrap();
        assert!((9..=10).contains(&n), "{n}");
        let n = repetitions_for(sigma, 0.0121, 2e-4).unwrap();
        assert!((29..=30).contains(&n), "{n}");
        assert_eq!(repetitions_for(0.5, 0.001, 1e-4), None);
    }
}
