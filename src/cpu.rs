//! CPU counter captures: running a benchmark under perf or Valgrind and recording what the
//! tool wrote.
//!
//! The runner only asks two things of a counter capture: the argument list that wraps the
//! benchmark, and how to turn the tool's file into samples afterwards. Both live here, shared
//! by live runs and `kgate import`, so that a counter measured by kgate and one imported from
//! another machine get the same names, sources, gate rules and derived metrics.

use std::collections::BTreeMap;
use std::path::Path;

use crate::capture::Collector;
use crate::config::CaptureKind;
use crate::config::derived::{self, Definition};
use crate::model::metric::{Direction, Source};
use crate::model::results::UnavailableCounter;
use crate::perf;
use crate::valgrind::{self, Profile, Tool, TotalsFrom};

/// Metrics that gate unless the configuration says otherwise; every other counter is reported
/// but informational until listed under `metrics`.
const HEADLINE: &[&str] = &[
    "instructions",
    "cycles",
    "ipc",
    "Ir",
    "D1_misses",
    "LL_misses",
    "estimated_cycles",
];

/// Cache geometry given to Valgrind, so that simulated misses do not depend on the machine
/// that ran the simulation (Valgrind otherwise copies the host's caches): 32 KiB 8-way L1s
/// and an 8 MiB 16-way last level, all with 64-byte lines.
pub const VALGRIND_CACHES: [&str; 3] = ["--I1=32768,8,64", "--D1=32768,8,64", "--LL=8388608,16,64"];

/// Where the pinned geometry is recorded: a benchmark's `provenance.details` and the
/// environment's `tools` (so that it is part of the baseline key: counts simulated with
/// another geometry are not comparable).
pub const VALGRIND_CACHES_KEY: &str = "valgrind.caches";

/// The pinned geometry as recorded: `--I1=… --D1=… --LL=…`.
pub fn valgrind_caches() -> String {
    VALGRIND_CACHES.join(" ")
}

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

/// The argument list running `argv` under the capture `kind`, writing the tool's output to
/// `out`.
pub fn wrap(
    kind: CaptureKind,
    out: &Path,
    perf_events: &[String],
    toggle_collect: Option<&str>,
    argv: &[String],
) -> Vec<String> {
    match valgrind_tool(kind) {
        Some(tool) => {
            let mut v = valgrind::wrap(tool, out, toggle_collect, argv);
            let at = 4; // after `valgrind --tool=… --cache-sim=yes --branch-sim=yes`
            for (i, c) in VALGRIND_CACHES.iter().enumerate() {
                v.insert(at + i, c.to_string());
            }
            v
        }
        None => perf::wrap(perf_events, out, argv),
    }
}

/// Values of one perf stat block; unavailable events are listed, never zero.
pub fn perf_reading(block: &perf::Block) -> Reading {
    let mut r = Reading::default();
    for c in &block.counters {
        match (c.value, &c.unavailable) {
            (Some(value), _) => {
                if c.multiplexed() {
                    r.notes.push(format!(
                        "perf counter `{}` ran {:.2} % of the time (multiplexed); its value was scaled up by perf",
                        c.event,
                        c.running_pct.unwrap_or(0.0)
                    ));
                }
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

/// Values of a Valgrind profile (all `simulated`).
pub fn valgrind_reading(profile: &Profile) -> Reading {
    let mut r = Reading::default();
    for (name, value) in valgrind::metrics(profile) {
        r.values.push(CounterValue {
            name,
            value,
            unit: String::new(),
            source: Source::Simulated,
        });
    }
    if let Some(summary) = &profile.summary
        && profile.totals_from == TotalsFrom::Totals
        && *summary != profile.totals
    {
        r.notes.push(format!(
            "the `summary:` line ({}) differs from `totals:` ({}); totals (the sum of all cost lines) were used",
            join(summary),
            join(&profile.totals)
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
        if !provenance
            .unavailable
            .iter()
            .any(|x| x.counter == u.counter)
        {
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

/// Reads the file a wrapped capture wrote and records it as one repetition.
pub fn record_file(
    collector: &mut Collector<'_>,
    repetition: u32,
    kind: CaptureKind,
    path: &Path,
    definitions: &[Definition],
) -> Result<(), String> {
    let reading = match valgrind_tool(kind) {
        Some(tool) => {
            // The simulated cache geometry is part of what the counts mean.
            collector
                .result_mut()
                .provenance
                .details
                .insert(VALGRIND_CACHES_KEY.into(), valgrind_caches());
            valgrind_reading(&valgrind::read(path, tool)?)
        }
        None => {
            let blocks = perf::read(path)?;
            let mut r = Reading::default();
            for b in &blocks {
                let x = perf_reading(b);
                r.values.extend(x.values);
                r.unavailable.extend(x.unavailable);
                r.notes.extend(x.notes);
            }
            r
        }
    };
    record(collector, repetition, reading, definitions)
}
