//! Counter-explained verdicts: why a gated metric regressed, read from how the counters and
//! derived metrics moved.
//!
//! A time regression alone says that something got slower; the counters say what. The metrics
//! of a regressed benchmark are ranked by standardized change, and a rule table kept as data
//! (`profiles/explanations.yaml`) maps the pattern to a cause: "kernel_time +42 %: sync_wait
//! +310 %, avg_mxu_busy −28 %: memory stall: the compute units wait on memory; check
//! buffering". Estimates (the bottom of the trust ladder) are named as such, side by side with
//! the measured value they estimate.

use globset::{Glob, GlobMatcher};
use serde::Deserialize;

use super::{BenchmarkComparison, MetricComparison};
use crate::model::metric::{ESTIMATE_SUFFIX, Source};
use crate::model::verdict::Verdict;

/// The rule table shipped with kgate.
pub const RULES: &str = include_str!("../../profiles/explanations.yaml");

/// A metric counts as moved when its standardized change is at least this many pooled
/// standard deviations (or its spread is zero) and its relative change at least [`MIN_CHANGE`].
pub const MIN_Z: f64 = 2.0;
/// Smallest relative change that counts as movement (5 %).
pub const MIN_CHANGE: f64 = 0.05;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    rules: Vec<RuleSpec>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleSpec {
    cause: String,
    when: Vec<Condition>,
    says: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Condition {
    metric: String,
    change: Move,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Move {
    Up,
    Down,
}

/// A rule of the table, compiled.
pub struct Rule {
    pub cause: String,
    pub says: String,
    when: Vec<(GlobMatcher, Move)>,
}

/// Parses a rule table (the format of `profiles/explanations.yaml`).
pub fn parse_rules(text: &str) -> Result<Vec<Rule>, String> {
    let table: Table = serde_saphyr::from_str(text).map_err(|e| e.to_string())?;
    table
        .rules
        .into_iter()
        .map(|r| {
            let when = r
                .when
                .into_iter()
                .map(|c| {
                    Glob::new(&c.metric)
                        .map(|g| (g.compile_matcher(), c.change))
                        .map_err(|e| format!("rule `{}`: {e}", r.cause))
                })
                .collect::<Result<_, _>>()?;
            Ok(Rule {
                cause: r.cause,
                says: r.says,
                when,
            })
        })
        .collect()
}

/// A metric's move, standardized.
#[derive(Debug, Clone, PartialEq)]
pub struct Moved {
    pub name: String,
    /// Relative change (0.05 is +5 %).
    pub change: f64,
    /// Change of the medians over the pooled standard deviation (infinite when both sides are
    /// constant).
    pub z: f64,
}

/// The metrics of `cmp` other than `except`, ranked by |standardized change|, keeping those
/// that moved (see [`MIN_Z`], [`MIN_CHANGE`]).
pub fn ranked(metrics: &[MetricComparison], except: &[&str]) -> Vec<Moved> {
    let mut out: Vec<Moved> = metrics
        .iter()
        .filter(|m| !except.contains(&m.name.as_str()))
        .filter_map(|m| {
            let (b, h) = (m.base.as_ref()?, m.head.as_ref()?);
            if b.median == 0.0 {
                return None;
            }
            let change = (h.median - b.median) / b.median.abs();
            let sd = ((b.std_dev.powi(2) + h.std_dev.powi(2)) / 2.0).sqrt();
            let diff = h.median - b.median;
            let z = if sd > 0.0 {
                diff / sd
            } else if diff == 0.0 {
                0.0
            } else {
                f64::INFINITY.copysign(diff)
            };
            (z.abs() >= MIN_Z && change.abs() >= MIN_CHANGE).then(|| Moved {
                name: m.name.clone(),
                change,
                z,
            })
        })
        .collect();
    out.sort_by(|a, b| b.z.abs().total_cmp(&a.z.abs()).then(a.name.cmp(&b.name)));
    out
}

/// The causes whose every condition matches a moved metric, with the metrics that matched.
pub fn causes<'a>(rules: &'a [Rule], moved: &[Moved]) -> Vec<(&'a Rule, Vec<Moved>)> {
    let mut out = Vec::new();
    for rule in rules {
        let mut matched: Vec<Moved> = Vec::new();
        let all = rule.when.iter().all(|(glob, dir)| {
            let hits: Vec<&Moved> = moved
                .iter()
                .filter(|m| {
                    glob.is_match(&m.name)
                        && match dir {
                            Move::Up => m.change > 0.0,
                            Move::Down => m.change < 0.0,
                        }
                })
                .collect();
            matched.extend(hits.iter().map(|m| (*m).clone()));
            !hits.is_empty()
        });
        if all {
            out.push((rule, matched));
        }
    }
    out
}

/// The marker after a metric's name in every report: ` (estimate)` for a figure from a cost
/// model (it never fails the build), ` (info)` for another metric that does not gate.
pub fn marker(m: &MetricComparison) -> &'static str {
    if m.source == Source::Estimate {
        " (estimate)"
    } else if m.gates {
        ""
    } else {
        " (info)"
    }
}

/// The counter a metric is computed from: `util.sync_wait.peak_window` → `sync_wait`.
fn family(name: &str) -> &str {
    let name = ["counter.", "util.", "bandwidth."]
        .iter()
        .find_map(|p| name.strip_prefix(p))
        .unwrap_or(name);
    name.strip_suffix(".peak_window").unwrap_or(name)
}

fn pct(change: f64) -> String {
    format!("{:+.0} %", change * 100.0).replace('-', "−")
}

/// Appends the counter explanation (for a regression) and the estimate notes to the
/// benchmark's explanation.
pub fn annotate(cmp: &mut BenchmarkComparison) {
    let mut parts: Vec<String> = Vec::new();
    if cmp.verdict == Verdict::Regressed
        && let Some(counters) = explain_regression(&cmp.metrics)
    {
        parts.push(counters);
    }
    parts.extend(side_by_side(&cmp.metrics));
    parts.extend(estimate_against_registers(&cmp.metrics));
    let estimates: Vec<&str> = cmp
        .metrics
        .iter()
        .filter(|m| m.source == Source::Estimate)
        .map(|m| m.name.as_str())
        .collect();
    if !estimates.is_empty() {
        parts.push(format!(
            "estimate-based (annotate only, never fail the build): {}",
            estimates.join(", ")
        ));
    }
    for p in parts {
        if cmp.explanation.is_empty() {
            cmp.explanation = p;
        } else {
            cmp.explanation = format!("{}. {p}", cmp.explanation.trim_end_matches('.'));
        }
    }
}

/// "kernel_time +43 %: sync_wait +310 %, avg_mxu_busy −28 %: memory stall: …", or `None`
/// when no counter moved or no rule matched.
pub fn explain_regression(metrics: &[MetricComparison]) -> Option<String> {
    let rules = parse_rules(RULES).expect("the shipped rule table parses");
    let regressed: Vec<&MetricComparison> = metrics
        .iter()
        .filter(|m| m.gates && m.verdict == Verdict::Regressed)
        .collect();
    let head = regressed.first()?;
    let except: Vec<&str> = regressed.iter().map(|m| m.name.as_str()).collect();
    let moved = ranked(metrics, &except);
    let found = causes(&rules, &moved);
    if found.is_empty() {
        return None;
    }
    let lead = match head.change {
        Some(c) => format!("{} {}", head.name, pct(c)),
        None => head.name.clone(),
    };
    let mut shown: Vec<&Moved> = Vec::new();
    for (_, matched) in &found {
        for m in matched {
            if !shown.iter().any(|s| s.name == m.name) {
                shown.push(m);
            }
        }
    }
    // Strongest first, as ranked.
    shown.sort_by(|a, b| b.z.abs().total_cmp(&a.z.abs()).then(a.name.cmp(&b.name)));
    // One entry per counter: `counter.X`, `util.X` and `util.X.peak_window` say the same thing.
    let mut families: Vec<&str> = Vec::new();
    shown.retain(|m| {
        let family = family(&m.name);
        let fresh = !families.contains(&family);
        families.push(family);
        fresh
    });
    let evidence = shown
        .iter()
        .take(4)
        .map(|m| format!("{} {}", m.name, pct(m.change)))
        .collect::<Vec<_>>()
        .join(", ");
    let why = found
        .iter()
        .map(|(r, _)| format!("{}: {}", r.cause, r.says))
        .collect::<Vec<_>>()
        .join("; ");
    Some(format!("{lead}: {evidence}: {why}"))
}

/// "flops: hardware 6.87e10 vs estimate 7.00e10 (+1.9 %)" for every metric that has an
/// `_estimate` twin measured by a more trusted source.
pub fn side_by_side(metrics: &[MetricComparison]) -> Vec<String> {
    metrics
        .iter()
        .filter(|e| e.source == Source::Estimate)
        .filter_map(|e| {
            let name = e.name.strip_suffix(ESTIMATE_SUFFIX)?;
            let m = metrics
                .iter()
                .find(|m| m.name == name && m.source < Source::Estimate)?;
            let measured = m.head.as_ref()?.median;
            let estimate = e.head.as_ref()?.median;
            let off = if measured != 0.0 {
                let off = (estimate - measured) / measured.abs() * 100.0;
                format!(" (estimate {off:+.1} %)").replace('-', "−")
            } else {
                String::new()
            };
            Some(format!(
                "{name}: {} {measured:.4e} vs estimate {estimate:.4e}{off}",
                m.source.as_str()
            ))
        })
        .collect()
}

/// What the registers measured, beside what the cost model believed: "estimate:
/// roofline.intensity 1365.3 FLOP/B; measured: avg_mxu_busy 35.0 %, util.sync_wait 31.0 %",
/// when the roofline came from estimates and the candidate has measured unit figures.
pub fn estimate_against_registers(metrics: &[MetricComparison]) -> Option<String> {
    let intensity = metrics
        .iter()
        .find(|m| m.name == "roofline.intensity" && m.source == Source::Estimate)?;
    let believed = intensity.head.as_ref()?.median;
    let measured: Vec<String> = MEASURED_UNITS
        .iter()
        .filter_map(|name| {
            let m = metrics
                .iter()
                .find(|m| m.name == *name && m.source < Source::Estimate)?;
            Some(format!("{name} {:.1} %", m.head.as_ref()?.median))
        })
        .collect();
    if measured.is_empty() {
        return None;
    }
    Some(format!(
        "estimate: roofline.intensity {believed:.1} FLOP/B (cost model); measured: {}",
        measured.join(", ")
    ))
}

/// The register-derived figures set against a cost estimate, in this order.
const MEASURED_UNITS: [&str; 4] = [
    "avg_mxu_busy",
    "util.sync_wait",
    "vector_alu",
    "util.memory",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_rules_parse_and_cover_the_five_causes() {
        let rules = parse_rules(RULES).unwrap();
        for cause in [
            "memory stall",
            "compute-bound drop",
            "occupancy",
            "cache misses",
            "clock throttling",
        ] {
            assert!(rules.iter().any(|r| r.cause == cause), "{cause}");
        }
    }

    #[test]
    fn sync_wait_up_and_mxu_down_is_a_memory_stall() {
        let rules = parse_rules(RULES).unwrap();
        let moved = vec![
            Moved {
                name: "counter.sync_wait".into(),
                change: 3.1,
                z: 40.0,
            },
            Moved {
                name: "avg_mxu_busy".into(),
                change: -0.28,
                z: -20.0,
            },
        ];
        let found = causes(&rules, &moved);
        let names: Vec<&str> = found.iter().map(|(r, _)| r.cause.as_str()).collect();
        assert_eq!(names, ["memory stall", "compute-bound drop"]);
    }
}
