//! CPU counter readings: what perf and Valgrind wrote, as named values recorded with their
//! derived metrics.
//!
//! Shared by the `perf`, `callgrind` and `cachegrind` backends (`run::backend`) and by
//! `kgate import`, so that a counter measured by kgate and one imported from another machine
//! get the same names, sources, gate rules and derived metrics.

use std::collections::BTreeMap;

use crate::capture::Collector;
use crate::capture::perf;
use crate::capture::valgrind::{self, Profile, Tool, TotalsFrom};
use crate::config::CaptureKind;
use crate::config::derived::{self, Definition};
use crate::model::metric::{Direction, Source};
use crate::model::results::UnavailableCounter;

/// Metrics that gate unless the configuration says otherwise; every other counter is reported
/// but informational until listed under `metrics`.
#[rustfmt::skip]
const HEADLINE: &[&str] = &[
    "instructions", "cycles", "ipc", "Ir", "D1_misses", "LL_misses", "estimated_cycles",
];

/// One value ready for the collector.
#[derive(Debug, Clone, PartialEq)]
pub struct CounterValue {
    pub name: String,
    pub value: f64,
    pub unit: String,
    pub source: Source,
}

/// What one tool file yielded.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reading {
    pub values: Vec<CounterValue>,
    pub unavailable: Vec<UnavailableCounter>,
    pub notes: Vec<String>,
}

/// The Valgrind tool of a capture.
pub fn valgrind_tool(kind: CaptureKind) -> Option<Tool> {
    match kind {
        CaptureKind::Callgrind => Some(Tool::Callgrind),
        CaptureKind::Cachegrind => Some(Tool::Cachegrind),
        _ => None,
    }
}

/// Values of one perf stat block; unavailable events are listed, never zero.
pub fn perf_reading(block: &perf::Block) -> Reading {
    let mut r = Reading::default();
    r.notes.extend(block.interval_note());
    r.notes.extend(block.notes.iter().cloned());
    for c in &block.counters {
        match (c.value, &c.unavailable) {
            (Some(value), _) => {
                if c.multiplexed() {
                    let (event, pct) = (&c.event, c.running_pct.unwrap_or(0.0));
                    r.notes.push(format!(
                        "perf counter `{event}` ran {pct:.2} % of the time (multiplexed); its value was scaled up by perf"
                    ));
                }
                r.notes.extend(block.spread_note(c));
                r.values.push(CounterValue {
                    name: c.event.clone(),
                    value,
                    unit: c.unit.clone(),
                    source: perf::source_of(&c.event),
                });
            }
            (None, why) => {
                let reason = why.clone().unwrap_or_else(|| "not counted".into());
                r.unavailable.push(UnavailableCounter {
                    counter: c.event.clone(),
                    hint: perf::unavailable_hint(&c.event, &reason),
                    reason,
                });
            }
        }
    }
    r
}

/// The events Valgrind's own tools write (callgrind and cachegrind, every option): counts of
/// its simulation, deterministic.
const VALGRIND_EVENTS: &[&str] = &[
    "Ir", "Dr", "Dw", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw", "I1dmr", "D1dmr", "D1dmw",
    "ILdmr", "DLdmr", "DLdmw", "Bc", "Bcm", "Bi", "Bim", "Ge", "sysCount", "AcCost1", "SpLoss1",
    "AcCost2", "SpLoss2",
];

/// Times callgrind measures with `--collect-systime`: the kernel's clock, not the simulation.
const VALGRIND_TIMES: &[&str] = &["sysTime", "sysCpuTime"];

/// What a Valgrind-format event measures, by its name: a simulated count of Valgrind's own
/// (and the sums of those), a time (`ns`, `ms`, written by tools that time functions in the
/// callgrind format), or a number of another tool that kgate cannot place (`Ticks`, `Hits`).
fn valgrind_event_source(name: &str) -> Source {
    let sums = ["D1_misses", "L1_misses", "LL_misses", "branch_mispredicts"];
    if VALGRIND_EVENTS.contains(&name) || sums.contains(&name) {
        Source::Simulated
    } else if VALGRIND_TIMES.contains(&name) || crate::model::units::normalize(name).is_time() {
        Source::Timer
    } else {
        Source::Reported
    }
}

/// Values of a Valgrind-format profile: Valgrind's events `simulated`; events that other
/// tools writing the format name (`events: ns`, `events: Hits`) are a `timer` reading when
/// they are a time unit and `reported` otherwise, with a note.
pub fn valgrind_reading(profile: &Profile) -> Reading {
    let mut r = Reading::default();
    let mut timed = Vec::new();
    let mut foreign = Vec::new();
    for (name, value) in valgrind::metrics(profile) {
        let source = valgrind_event_source(&name);
        let time = crate::model::units::normalize(&name);
        let (value, unit) = if time.is_time() {
            (value * time.factor, time.unit)
        } else {
            (value, String::new())
        };
        match source {
            Source::Timer => timed.push(format!("`{name}`")),
            Source::Reported => foreign.push(format!("`{name}`")),
            _ => {}
        }
        r.values.push(CounterValue {
            name,
            value,
            unit,
            source,
        });
    }
    let by = match &profile.creator {
        Some(c) => format!(" (written by `{c}`)"),
        None => String::new(),
    };
    if !timed.is_empty() {
        r.notes.push(format!(
            "event {} of this callgrind-format file{by} is a time, not a count of Valgrind's simulation: recorded as a `timer` reading (noisy, tested like any time, no deterministic tolerance)",
            timed.join(", ")
        ));
    }
    if !foreign.is_empty() {
        r.notes.push(format!(
            "event {} of this callgrind-format file{by} is not one of Valgrind's events: recorded as `reported` (informational unless the configuration lists it), not `simulated`",
            foreign.join(", ")
        ));
    }
    if let Some(summary) = &profile.summary
        && profile.totals_from == TotalsFrom::Totals
        && *summary != profile.totals
    {
        let (summary, totals) = (join(summary), join(&profile.totals));
        r.notes.push(format!(
            "the `summary:` line ({summary}) differs from `totals:` ({totals}); totals (the sum of all cost lines) were used"
        ));
    }
    r
}

fn join(v: &[i64]) -> String {
    v.iter().map(i64::to_string).collect::<Vec<_>>().join(" ")
}

/// Records a reading and its derived metrics as one repetition.
pub fn record(
    collector: &mut Collector<'_>,
    repetition: u32,
    reading: Reading,
    definitions: &[Definition],
) -> Result<(), String> {
    let mut inputs: BTreeMap<String, (f64, Source)> = BTreeMap::new();
    for v in &reading.values {
        inputs.insert(v.name.clone(), (v.value, v.source));
        let gates = HEADLINE.contains(&v.name.as_str());
        collector.add_counter(
            repetition,
            &v.name,
            &v.unit,
            v.source,
            Direction::Lower,
            gates,
            v.value,
        )?;
    }
    for d in derived::evaluate(definitions, &inputs).map_err(|e| e.to_string())? {
        let builtin = derived::builtins().iter().any(|b| b.name == d.name);
        let gates = !builtin || HEADLINE.contains(&d.name.as_str());
        collector.add_counter(
            repetition,
            &d.name,
            &d.unit,
            d.source,
            d.direction,
            gates,
            d.value,
        )?;
    }
    let provenance = &mut collector.result_mut().provenance;
    for u in reading.unavailable {
        let listed = &provenance.unavailable;
        if !listed.iter().any(|x| x.counter == u.counter) {
            provenance.unavailable.push(u);
        }
    }
    for n in reading.notes {
        if !provenance.notes.contains(&n) {
            provenance.notes.push(n);
        }
    }
    Ok(())
}
