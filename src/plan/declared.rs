//! What the configuration declared against what a run reported.
//!
//! A metric listed under a benchmark's `metrics` is a promise that the benchmark reports it;
//! a typo (`kernel_tme`) would otherwise leave the real metric with default settings and the
//! declared one silently absent. A metric that was declared and would gate but is not in the
//! run fails its benchmark; one declared with `gate: false` gets a warning. Units that look
//! like a misspelt time unit (`msec`, `mS`) are kept as they are, with a warning, because a
//! time kgate does not recognise is compared as an opaque number, not converted.

use crate::model::results::{FailureKind, RunResults, Status};
use crate::model::text::did_you_mean;
use crate::plan::Plan;

/// Checks a run against the plan: marks benchmarks failed whose declared gating metrics are
/// absent, and returns the warnings for the rest.
pub fn check_declared_metrics(plan: &Plan, results: &mut RunResults) -> Vec<String> {
    let mut warnings = Vec::new();
    for b in &mut results.benchmarks {
        let Some(bp) = plan.benchmarks.iter().find(|p| p.name == b.name) else {
            continue;
        };
        // A benchmark not measured (identical code on both sides) reports nothing, rightly.
        if b.status != Status::Ok || (b.identity.is_some() && b.metrics.is_empty()) {
            continue;
        }
        let reported: Vec<&str> = b.metrics.iter().map(|m| m.name.as_str()).collect();
        let unavailable = &b.provenance.unavailable;
        let unavailable: Vec<&str> = unavailable.iter().map(|u| u.counter.as_str()).collect();
        let mut missing_gating = Vec::new();
        for (name, cfg) in &bp.metrics.metrics {
            if reported.contains(&name.as_str()) || unavailable.contains(&name.as_str()) {
                continue;
            }
            let hint = did_you_mean(name, &reported)
                .map(|m| format!(" (did you mean `{m}`?)"))
                .unwrap_or_default();
            if cfg.gate == Some(false) {
                warnings.push(format!(
                    "{}: metric `{name}` is declared under `metrics` but was not reported{hint}",
                    b.name
                ));
            } else {
                missing_gating.push(format!("`{name}`{hint}"));
            }
        }
        if !missing_gating.is_empty() {
            let reported_list = if reported.is_empty() {
                "nothing".to_string()
            } else {
                reported
                    .iter()
                    .map(|m| format!("`{m}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            b.fail(FailureKind::Protocol, format!(
                "the configuration declares {} under `metrics`, which would gate, but the benchmark reported {reported_list}; fix the name, report the metric, or set `gate: false`",
                missing_gating.join(", ")
            ));
        }
    }
    warnings.extend(unit_lookalikes(results));
    warnings
}

/// Warnings for units that look like a time unit kgate does not know.
pub fn unit_lookalikes(results: &RunResults) -> Vec<String> {
    let mut out = Vec::new();
    for b in &results.benchmarks {
        for m in &b.metrics {
            if let Some(meant) = time_unit_lookalike(&m.unit) {
                out.push(format!(
                    "{}: metric `{}` has the unit `{}`, which kgate does not read as a time, so it is compared as written and not converted; did you mean `{meant}`?",
                    b.name, m.name, m.unit
                ));
            }
        }
    }
    out
}

/// The time unit a unit string probably meant, when it is not one kgate reads.
fn time_unit_lookalike(unit: &str) -> Option<&'static str> {
    let known = ["ns", "us", "µs", "ms", "s"];
    let u = unit.trim();
    if u == "ns" || crate::model::units::normalize(u).is_time() {
        return None;
    }
    let lower = u.to_lowercase();
    let meant = match lower.as_str() {
        "msec" | "msecs" | "millis" | "millisec" | "msec." | "mss" | "millisecond" => "ms",
        "usec" | "usecs" | "micros" | "microsec" | "microsecond" => "us",
        "nsec" | "nsecs" | "nanos" | "nanosec" | "nanosecond" => "ns",
        "secs" | "second" | "sec." => "s",
        // Case slips: `MS`, `Ns`, `US`.
        other => return known.iter().copied().find(|k| *k == other && u != *k),
    };
    Some(meant)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookalikes_and_suggestions() {
        assert_eq!(time_unit_lookalike("msec"), Some("ms"));
        assert_eq!(time_unit_lookalike("MS"), Some("ms"));
        assert_eq!(time_unit_lookalike("usec"), Some("us"));
        assert_eq!(time_unit_lookalike("ms"), None);
        assert_eq!(time_unit_lookalike("GB/s"), None);
        assert_eq!(time_unit_lookalike("cycles"), None);
        let known = ["kernel_time", "wall_time"];
        assert_eq!(did_you_mean("kernel_tme", &known), Some("kernel_time"));
        assert_eq!(did_you_mean("flops", &["kernel_time"]), None);
    }
}
