//! Counter-explained verdicts: why a gated metric regressed, read from how the counters and
//! derived metrics moved.
//!
//! A time regression alone says that something got slower; the counters say what. The metrics
//! of a regressed benchmark are ranked by standardized change, and a rule table kept as data
//! (`profiles/explanations.yaml`) maps the pattern to a cause: "kernel_time +42 %: sync_wait
//! +310 %, avg_mxu_busy −28 %: memory stall: the compute units wait on memory; check
//! buffering". Rates are weighed before counts: a count (misses, stall cycles) grows with the
//! work, so it is evidence of a cause only when it moved per unit of work too (by its
//! utilization, else against the work counter, such as `Ir`); counts that grew only with the
//! work read "more work: Ir +10 %, miss rates unchanged". Estimates (the bottom of the trust
//! ladder) are named as such, side by side with the measured value they estimate.

use std::sync::LazyLock;

use globset::{Glob, GlobMatcher};
use serde::Deserialize;

use super::{BenchmarkComparison, MetricComparison};
use crate::model::metric::{ESTIMATE_SUFFIX, Source};
use crate::model::verdict::Verdict;

/// The rule table shipped with kgate.
pub const RULES: &str = include_str!("../../profiles/explanations.yaml");

/// The shipped rule table, compiled once.
static SHIPPED: LazyLock<Rules> =
    LazyLock::new(|| parse_rules(RULES).expect("the shipped rule table parses"));

/// A metric counts as moved when its standardized change is at least this many pooled
/// standard deviations (or its spread is zero) and its relative change at least [`MIN_CHANGE`].
pub const MIN_Z: f64 = 2.0;
/// Smallest relative change that counts as movement (5 %); a count also has to move this much
/// per unit of work to be evidence of a cause.
pub const MIN_CHANGE: f64 = 0.05;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    #[serde(default)]
    work: Vec<String>,
    rules: Vec<RuleSpec>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleSpec {
    cause: String,
    when: Vec<Condition>,
    #[serde(default)]
    rates: Option<String>,
    says: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Condition {
    #[serde(default)]
    metric: Option<String>,
    #[serde(default)]
    counts: Option<String>,
    #[serde(default)]
    except: Option<String>,
    change: Move,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Move {
    Up,
    Down,
}

impl Move {
    /// Whether a relative change goes this way.
    fn holds(self, change: f64) -> bool {
        match self {
            Move::Up => change > 0.0,
            Move::Down => change < 0.0,
        }
    }

    /// Whether a relative change goes this way by at least [`MIN_CHANGE`].
    fn moved(self, change: f64) -> bool {
        self.holds(change) && change.abs() >= MIN_CHANGE
    }
}

/// A condition of a rule, compiled: rates (evidence as they moved) and counts (evidence only
/// when they moved per unit of work).
struct When {
    rates: Option<GlobMatcher>,
    counts: Option<GlobMatcher>,
    except: Option<GlobMatcher>,
    change: Move,
}

/// How a condition reads a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Rate,
    Count,
}

impl When {
    fn kind(&self, name: &str) -> Option<Kind> {
        if self.except.as_ref().is_some_and(|g| g.is_match(name)) {
            None
        } else if self.rates.as_ref().is_some_and(|g| g.is_match(name)) {
            Some(Kind::Rate)
        } else if self.counts.as_ref().is_some_and(|g| g.is_match(name)) {
            Some(Kind::Count)
        } else {
            None
        }
    }
}

/// A rule of the table, compiled.
pub struct Rule {
    pub cause: String,
    pub says: String,
    /// What the rule's counts are once weighed ("miss rates"), for "more work: …, miss rates
    /// unchanged".
    pub rates: Option<String>,
    when: Vec<When>,
}

/// The rule table, compiled: the work counters, most preferred first, and the rules.
pub struct Rules {
    work: Vec<GlobMatcher>,
    pub rules: Vec<Rule>,
}

fn glob(pattern: &str, cause: &str) -> Result<GlobMatcher, String> {
    Glob::new(pattern)
        .map(|g| g.compile_matcher())
        .map_err(|e| format!("rule `{cause}`: {e}"))
}

/// Parses a rule table (the format of `profiles/explanations.yaml`).
pub fn parse_rules(text: &str) -> Result<Rules, String> {
    let table: Table = serde_saphyr::from_str(text)
        .map_err(|e| crate::model::text::plain_serde(None, &e.to_string()))?;
    let work = table
        .work
        .iter()
        .map(|w| glob(w, "work"))
        .collect::<Result<_, _>>()?;
    let rules = table
        .rules
        .into_iter()
        .map(|r| {
            let when = r
                .when
                .into_iter()
                .map(|c| {
                    if c.metric.is_none() && c.counts.is_none() {
                        return Err(format!(
                            "rule `{}`: a condition names no `metric` (rates) and no `counts`",
                            r.cause
                        ));
                    }
                    let compile = |p: &Option<String>| p.as_deref().map(|p| glob(p, &r.cause));
                    Ok(When {
                        rates: compile(&c.metric).transpose()?,
                        counts: compile(&c.counts).transpose()?,
                        except: compile(&c.except).transpose()?,
                        change: c.change,
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            if r.rates.is_none() && when.iter().any(|w| w.counts.is_some()) {
                return Err(format!(
                    "rule `{}` has `counts` but no `rates` (what they are once weighed, such as `miss rates`)",
                    r.cause
                ));
            }
            Ok(Rule {
                cause: r.cause,
                says: r.says,
                rates: r.rates,
                when,
            })
        })
        .collect::<Result<_, String>>()?;
    Ok(Rules { work, rules })
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

impl Moved {
    /// Whether this counts as movement (see [`MIN_Z`], [`MIN_CHANGE`]).
    fn significant(&self) -> bool {
        self.z.abs() >= MIN_Z && self.change.abs() >= MIN_CHANGE
    }
}

/// A metric's change between the medians, standardized, when both sides have one and the
/// base's is not zero.
fn movement(m: &MetricComparison) -> Option<Moved> {
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
    let name = m.name.clone();
    Some(Moved { name, change, z })
}

/// The metrics of `cmp` other than `except`, ranked by |standardized change|, keeping those
/// that moved (see [`MIN_Z`], [`MIN_CHANGE`]).
pub fn ranked(metrics: &[MetricComparison], except: &[&str]) -> Vec<Moved> {
    let mut out: Vec<Moved> = metrics
        .iter()
        .filter(|m| !except.contains(&m.name.as_str()))
        .filter_map(movement)
        .filter(Moved::significant)
        .collect();
    out.sort_by(|a, b| b.z.abs().total_cmp(&a.z.abs()).then(a.name.cmp(&b.name)));
    out
}

/// The work a run did: the first of the table's work counters measured on both sides, and
/// its relative change.
#[derive(Debug, Clone, PartialEq)]
pub struct Work {
    pub name: String,
    pub change: f64,
}

/// The work counter of `metrics` (see `work` in `profiles/explanations.yaml`).
pub fn work(rules: &Rules, metrics: &[MetricComparison]) -> Option<Work> {
    rules.work.iter().find_map(|glob| {
        metrics
            .iter()
            .filter(|m| glob.is_match(&m.name))
            .find_map(movement)
            .filter(|m| m.change.is_finite())
            .map(|m| Work {
                name: m.name,
                change: m.change,
            })
    })
}

/// What weighing a count against the work said.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Weighed {
    /// It moved per unit of work: evidence.
    PerUnit,
    /// It moved with the work: its change per unit of work (relative) was this.
    WithWork(f64),
    /// Nothing to weigh it by: no evidence either way.
    Unweighable,
}

/// Weighs a count that moved `change`: by its utilization (`counter.X` → `util.X`, its share
/// of the cycles) where the benchmark has one, else by the work counter.
fn weigh(
    count: &Moved,
    change: Move,
    metrics: &[MetricComparison],
    work: Option<&Work>,
) -> Weighed {
    if let Some(rest) = count.name.strip_prefix("counter.") {
        let share = format!("util.{rest}");
        let mut shares = metrics.iter().filter(|m| m.name == share);
        if let Some(share) = shares.find_map(movement) {
            return if share.significant() && change.holds(share.change) {
                Weighed::PerUnit
            } else {
                Weighed::WithWork(share.change)
            };
        }
    }
    let Some(work) = work.filter(|w| w.change > -1.0) else {
        return Weighed::Unweighable;
    };
    if count.name == work.name {
        return Weighed::WithWork(0.0);
    }
    let per_unit = (1.0 + count.change) / (1.0 + work.change) - 1.0;
    if change.moved(per_unit) {
        Weighed::PerUnit
    } else {
        Weighed::WithWork(per_unit)
    }
}

/// What the rule table made of a benchmark's moves.
#[derive(Default)]
pub struct Findings<'a> {
    /// The causes whose every condition matched a moved metric (a rate, or a count that moved
    /// per unit of work), with the metrics that matched.
    pub causes: Vec<(&'a Rule, Vec<Moved>)>,
    /// The rules that would have fired on counts alone, had they not moved only with the work,
    /// with the counts' changes per unit of work.
    pub with_work: Vec<(&'a Rule, Vec<f64>)>,
}

/// Matches the moved metrics against the rules, weighing counts against `metrics`' work
/// counter (see [`Findings`]).
pub fn causes<'a>(rules: &'a Rules, moved: &[Moved], metrics: &[MetricComparison]) -> Findings<'a> {
    let work = work(rules, metrics);
    let mut found = Findings::default();
    for rule in &rules.rules {
        let mut matched: Vec<Moved> = Vec::new();
        let mut set_aside: Vec<f64> = Vec::new();
        // Whether every condition matched; whether each that did not had counts set aside.
        let (mut all, mut only_work) = (true, true);
        for when in &rule.when {
            let mut hits = 0;
            let mut aside = Vec::new();
            for m in moved.iter().filter(|m| when.change.holds(m.change)) {
                let evidence = match when.kind(&m.name) {
                    None => false,
                    Some(Kind::Rate) => true,
                    Some(Kind::Count) => match weigh(m, when.change, metrics, work.as_ref()) {
                        Weighed::PerUnit => true,
                        Weighed::WithWork(per_unit) => {
                            aside.push(per_unit);
                            false
                        }
                        Weighed::Unweighable => false,
                    },
                };
                if evidence {
                    hits += 1;
                    matched.push(m.clone());
                }
            }
            if hits == 0 {
                all = false;
                only_work &= !aside.is_empty();
                set_aside.extend(aside);
            }
        }
        if all {
            found.causes.push((rule, matched));
        } else if only_work {
            found.with_work.push((rule, set_aside));
        }
    }
    found
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

/// "kernel_time +43 %: sync_wait +310 %, avg_mxu_busy −28 %: memory stall: …"; "Ir +10 %:
/// more work: Ir +10 %, miss rates unchanged" when the counts a rule names grew only with the
/// work; `None` when no counter moved or no rule matched.
pub fn explain_regression(metrics: &[MetricComparison]) -> Option<String> {
    explain_with(&SHIPPED, metrics)
}

/// [`explain_regression`] with a rule table of the caller's.
pub fn explain_with(rules: &Rules, metrics: &[MetricComparison]) -> Option<String> {
    let regressed: Vec<&MetricComparison> = metrics
        .iter()
        .filter(|m| m.gates && m.verdict == Verdict::Regressed)
        .collect();
    let head = regressed.first()?;
    let except: Vec<&str> = regressed.iter().map(|m| m.name.as_str()).collect();
    let moved = ranked(metrics, &except);
    let found = causes(rules, &moved, metrics);
    let lead = match head.change {
        Some(c) => format!("{} {}", head.name, pct(c)),
        None => head.name.clone(),
    };
    if found.causes.is_empty() {
        let more = more_work(rules, metrics, &found)?;
        return Some(match work(rules, metrics) {
            Some(w) if w.name == head.name => more,
            _ => format!("{lead}: {more}"),
        });
    }
    let mut shown: Vec<&Moved> = Vec::new();
    for (_, matched) in &found.causes {
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
        .causes
        .iter()
        .map(|(r, _)| format!("{}: {}", r.cause, r.says))
        .collect::<Vec<_>>()
        .join("; ");
    Some(format!("{lead}: {evidence}: {why}"))
}

/// "more work: Ir +10 %, miss rates unchanged": the counts a rule names grew, but only with
/// the work, and the work grew at least [`MIN_CHANGE`]; `None` otherwise.
fn more_work(rules: &Rules, metrics: &[MetricComparison], found: &Findings<'_>) -> Option<String> {
    let work = work(rules, metrics)?;
    if found.with_work.is_empty() || !Move::Up.moved(work.change) {
        return None;
    }
    let mut said = vec![format!("{} {}", work.name, pct(work.change))];
    for (rule, per_unit) in &found.with_work {
        let Some(rates) = &rule.rates else { continue };
        // The change per unit of work farthest from none.
        let extreme = per_unit
            .iter()
            .copied()
            .max_by(|a, b| a.abs().total_cmp(&b.abs()))
            .unwrap_or(0.0);
        let state = if extreme.abs() < MIN_CHANGE {
            "unchanged"
        } else if extreme < 0.0 {
            "down"
        } else {
            "up"
        };
        let phrase = format!("{rates} {state}");
        if !said.contains(&phrase) {
            said.push(phrase);
        }
    }
    Some(format!("more work: {}", said.join(", ")))
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
    use crate::compare::{ComparePolicy, blank};
    use crate::model::results::MetricSamples;

    /// A deterministic count or rate, one repetition a side, as an import compares it.
    fn row(name: &str, base: f64, head: f64, gates: bool) -> MetricComparison {
        let change = (head - base) / base;
        let samples = MetricSamples {
            name: name.into(),
            unit: String::new(),
            source: Source::Simulated,
            ..MetricSamples::timer("", &[])
        };
        MetricComparison {
            gates,
            not_gating: None,
            verdict: if change > 0.01 {
                Verdict::Regressed
            } else {
                Verdict::Unchanged
            },
            threshold: 0.01,
            base: crate::stats::summarize(&[base]),
            head: crate::stats::summarize(&[head]),
            change: Some(change),
            ..blank(&samples, &ComparePolicy::default())
        }
    }

    /// The cachegrind totals of `reps.c` (each repetition writes an 8 MB array, then strides
    /// through it a cache line at a time) at 10 and 11 repetitions, as imported: the whole
    /// work grows by a tenth, the D1 miss rate stays at 98.5 %.
    fn ten_then_eleven_repetitions() -> Vec<MetricComparison> {
        vec![
            row("Ir", 13_235_923.0, 14_546_651.0, true),
            row("Dr", 1_340_169.0, 1_471_241.0, false),
            row("D1mr", 1_311_969.0, 1_443_041.0, false),
            row("Dw", 1_321_571.0, 1_452_643.0, false),
            row("D1mw", 1_311_126.0, 1_442_198.0, false),
            row("D1_misses", 2_623_095.0, 2_885_239.0, true),
            row("L1_misses", 2_624_341.0, 2_886_485.0, false),
            row("LL_misses", 133_668.0, 133_668.0, true),
            row("D1_miss_rate", 0.985_488, 0.986_790, false),
            row("LL_miss_rate", 0.008_385, 0.007_630, false),
            row("estimated_cycles", 52_846_133.0, 56_778_301.0, true),
        ]
    }

    #[test]
    fn the_shipped_rules_parse_and_cover_the_five_causes() {
        let rules = parse_rules(RULES).unwrap();
        #[rustfmt::skip]
        let causes = ["memory stall", "compute-bound drop", "occupancy", "cache misses",
            "clock throttling"];
        for cause in causes {
            assert!(rules.rules.iter().any(|r| r.cause == cause), "{cause}");
        }
    }

    #[test]
    fn a_rule_with_counts_must_say_what_they_are_once_weighed() {
        let error = |yaml: &str| parse_rules(yaml).err().unwrap();
        let counts =
            "rules:\n  - cause: x\n    when: [{counts: \"*miss*\", change: up}]\n    says: y\n";
        assert_contains!(error(counts), "has `counts` but no `rates`");
        let no_metric = "rules:\n  - cause: x\n    when: [{change: up}]\n    says: y\n";
        assert_contains!(error(no_metric), "names no `metric`");
    }

    #[test]
    fn sync_wait_up_and_mxu_down_is_a_memory_stall() {
        let rules = parse_rules(RULES).unwrap();
        // Triple against single buffering: the same work, the share of cycles waiting up.
        let metrics = vec![
            row("counter.sync_wait", 3_000.0, 12_300.0, false),
            row("util.sync_wait", 2.0, 31.0, false),
            row("avg_mxu_busy", 75.0, 54.0, false),
        ];
        let moved = ranked(&metrics, &[]);
        let found = causes(&rules, &moved, &metrics);
        let names: Vec<&str> = found.causes.iter().map(|(r, _)| r.cause.as_str()).collect();
        assert_eq!(names, ["memory stall", "compute-bound drop"]);
        let (_, evidence) = &found.causes[0];
        let evidence: Vec<&str> = evidence.iter().map(|m| m.name.as_str()).collect();
        assert!(evidence.contains(&"counter.sync_wait"), "{evidence:?}");
        assert!(evidence.contains(&"util.sync_wait"), "{evidence:?}");
    }

    /// The defect: misses that grew with the work (10 → 11 repetitions of the same loop) were
    /// read as "cache misses". The miss rate did not move: the cause is more work.
    #[test]
    fn misses_that_grew_with_the_work_are_more_work_not_cache_misses() {
        let metrics = ten_then_eleven_repetitions();
        let text = explain_regression(&metrics).unwrap();
        assert_eq!(text, "more work: Ir +10 %, miss rates unchanged");
        assert!(!text.contains("cache misses"), "{text}");
    }

    /// The lead is the regressed metric; it is only left out when it is the work itself.
    #[test]
    fn more_work_is_led_by_the_regressed_metric_when_that_is_not_the_work() {
        let mut metrics = ten_then_eleven_repetitions();
        metrics.insert(0, row("time", 100.0, 110.0, true));
        metrics[1].gates = false; // Ir informational: `time` leads
        let said = explain_regression(&metrics).unwrap();
        let want = "time +10 %: more work: Ir +10 %, miss rates unchanged";
        assert_eq!(said, want);
    }

    /// Misses that grew faster than the work (a strided loop made 2× as miss-prone) are still
    /// cache misses, and so is a miss rate that moved on its own.
    #[test]
    fn misses_that_grew_per_instruction_are_cache_misses() {
        let metrics = vec![
            row("Ir", 1_000_000.0, 1_100_000.0, true),
            row("D1mr", 10_000.0, 22_000.0, false),
            row("L1_misses", 10_500.0, 22_500.0, false),
        ];
        let text = explain_regression(&metrics).unwrap();
        assert!(text.starts_with("Ir +10 %: D1mr +120 %, L1_misses +114 %: cache misses:"));

        let metrics = vec![
            row("Ir", 1_000_000.0, 1_100_000.0, true),
            row("D1_miss_rate", 0.10, 0.20, false),
        ];
        let text = explain_regression(&metrics).unwrap();
        assert!(text.starts_with("Ir +10 %: D1_miss_rate +100 %: cache misses:"));
    }

    /// Per instruction, with no rate measured: perf's counts.
    #[test]
    fn perf_cache_misses_are_weighed_per_instruction() {
        let with_work = vec![
            row("task-clock", 100.0, 130.0, true),
            row("instructions", 1e9, 1.3e9, false),
            row("cache-misses", 1e6, 1.3e6, false),
        ];
        let said = explain_regression(&with_work).unwrap();
        let want = "task-clock +30 %: more work: instructions +30 %, miss rates unchanged";
        assert_eq!(said, want);
        let per_instruction = vec![
            row("task-clock", 100.0, 130.0, true),
            row("instructions", 1e9, 1e9, false),
            row("cache-misses", 1e6, 1.3e6, false),
        ];
        let said = explain_regression(&per_instruction).unwrap();
        assert_contains!(said, "cache misses");
    }

    /// A count with nothing to weigh it by names no cause: the old reading named one.
    #[test]
    fn a_count_that_cannot_be_weighed_names_no_cause() {
        let metrics = vec![
            row("time", 100.0, 130.0, true),
            row("cache-misses", 1e6, 1.3e6, false),
        ];
        assert_eq!(explain_regression(&metrics), None);
    }

    /// Branch misses are not cache misses, as counts or as rates.
    #[test]
    fn branch_misses_are_not_cache_misses() {
        let metrics = vec![
            row("Ir", 1_000_000.0, 1_000_000.0, false),
            row("time", 100.0, 130.0, true),
            row("branch-misses", 1e4, 3e4, false),
            row("branch_miss_rate", 0.01, 0.03, false),
        ];
        assert_eq!(explain_regression(&metrics), None);
    }

    /// Every rule with counts: counts that grew with the work name no cause; counts that
    /// grew per unit of work (or whose utilization grew) do.
    #[test]
    fn every_rule_weighs_its_counts_against_the_work() {
        let rules = parse_rules(RULES).unwrap();
        #[rustfmt::skip]
        let cases = [
            ("counter.sync_wait", 0.10, "memory stall"),
            ("smsp__pcsamp_warps_issue_stalled_memory", 0.10, "memory stall"),
            ("tensor_pipe_cycles", -0.10, "compute-bound drop"),
            ("D1mr", 0.10, "cache misses"),
            ("counter.clocks_skipped", 0.10, "clock throttling"),
            ("ext_throttle_events", 0.10, "clock throttling"),
        ];
        for (count, change, cause) in cases {
            let counts = |r: &Rule| r.when.iter().any(|w| w.kind(count) == Some(Kind::Count));
            let listed = rules.rules.iter().any(|r| r.cause == cause && counts(r));
            assert!(listed, "{count} is a count of {cause}");
            // The work moved as much as the count.
            let metrics = vec![
                row("Ir", 1e6, 1e6 * (1.0 + change), false),
                row(count, 1e4, 1e4 * (1.0 + change), false),
            ];
            let found = causes(&rules, &ranked(&metrics, &[]), &metrics);
            assert!(found.causes.is_empty(), "{count}: with the work");
            let set_aside = found.with_work.iter().any(|(r, _)| r.cause == cause);
            assert!(set_aside, "{count}: set aside as work");
            // The count moved three times as much as the work.
            let metrics = vec![
                row("Ir", 1e6, 1e6 * (1.0 + change), false),
                row(count, 1e4, 1e4 * (1.0 + 3.0 * change), false),
            ];
            let found = causes(&rules, &ranked(&metrics, &[]), &metrics);
            let names: Vec<&str> = found.causes.iter().map(|(r, _)| r.cause.as_str()).collect();
            let found = names.contains(&cause);
            assert!(found, "{count}: per unit of work: {names:?}");
        }
    }

    /// A `counter.X` is weighed by its `util.X` (its share of the cycles) first: busy cycles
    /// that grew while their share held are the run's length, not a stall.
    #[test]
    fn a_counter_is_weighed_by_its_utilization_first() {
        let rules = parse_rules(RULES).unwrap();
        let metrics = vec![
            row("counter.sync_wait", 3_000.0, 3_600.0, false),
            row("util.sync_wait", 2.0, 2.0, false),
        ];
        let found = causes(&rules, &ranked(&metrics, &[]), &metrics);
        assert!(found.causes.is_empty());
        assert_eq!(found.with_work.len(), 1);
        // No work counter measured: nothing to say "more work" with.
        let mut metrics = metrics;
        metrics.insert(0, row("kernel_time", 88.0, 105.0, true));
        assert_eq!(explain_regression(&metrics), None);
    }

    #[test]
    fn the_work_counter_is_the_first_of_the_table_measured() {
        let rules = parse_rules(RULES).unwrap();
        let metrics = vec![
            row("cpu_core/instructions/", 100.0, 110.0, false),
            row("Ir", 100.0, 120.0, false),
        ];
        assert_eq!(work(&rules, &metrics).unwrap().name, "Ir");
        let first = &work(&rules, &metrics[..1]).unwrap().name;
        assert_eq!(first, "cpu_core/instructions/");
    }
}
