//! Folding events into aggregates: durations per kernel name and thread, counter readings,
//! process and thread names, what names the device. Pieces of a parallel read are merged in
//! file order; the process and thread selection is applied at the end, when every name is
//! known.

use std::collections::HashMap;

use rustc_hash::FxHashMap;

use super::event::{Event, Id, invalid};
use crate::import::device::{Device, cuda_version};
use crate::import::trace::json_scan::{Kind, Scanner, Stop};
use crate::import::trace::{TraceSamples, TraceSelection};

/// The device that a trace's top-level keys name: each listed GPU's `name` (its compute
/// capability where it has none), the CUDA driver as the driver, and the other versions
/// (`cuda_runtime`, `cupti`, …) as tools. CUDA's encoded versions (`12090`) are written out
/// (`12.9`).
fn trace_device(metadata: &[(String, serde_json::Value)]) -> Device {
    use serde_json::Value as Json;
    let text = |v: &Json| match v {
        Json::String(s) => Some(s.clone()),
        Json::Number(n) => Some(n.to_string()),
        _ => None,
    };
    let mut device = Device::default();
    for (key, value) in metadata {
        match key.as_str() {
            "deviceProperties" | "computeProperties" => {
                for props in value.as_array().into_iter().flatten() {
                    let number =
                        |keys: [&str; 2]| keys.iter().find_map(|k| props.get(*k)?.as_i64());
                    match props.get("name").and_then(Json::as_str) {
                        Some(name) if !name.trim().is_empty() => device.accelerator(name),
                        _ => {
                            if let Some(major) = number(["computeMajor", "major"]) {
                                let minor = number(["computeMinor", "minor"]).unwrap_or(0);
                                device.accelerator(&format!("compute capability {major}.{minor}"));
                            }
                        }
                    }
                }
            }
            "cuda_driver_version" => match value.as_i64() {
                Some(v) => device.driver(&format!("CUDA {}", cuda_version(v))),
                None => device.driver(&text(value).unwrap_or_default()),
            },
            "cuda_runtime_version" => match value.as_i64() {
                Some(v) => device.tool("cuda_runtime", &cuda_version(v)),
                None => device.tool("cuda_runtime", &text(value).unwrap_or_default()),
            },
            other => {
                if let (Some(name), Some(v)) = (other.strip_suffix("_version"), text(value)) {
                    device.tool(name, &v);
                }
            }
        }
    }
    device
}

/// A begin event waiting for its end.
#[derive(Debug)]
struct Open {
    name: String,
    ts: f64,
    kernel_category: bool,
}

/// Per kernel name: whether the name passes the patterns, and its durations per thread.
#[derive(Debug)]
struct KernelEntry {
    first_seen: u64,
    name_matches: bool,
    threads: Vec<((Id, Id), Vec<f64>)>,
}

pub(super) struct Aggregator<'s> {
    selection: &'s TraceSelection,
    /// Whether this aggregate starts at a cut rather than at the start of the file.
    from_cut: bool,
    /// Whether, starting at a cut, an end event found no begin (it came before the cut).
    pub(super) orphan_end: bool,
    /// Whether the selection was given (then categories and `hlo_op` do not matter).
    explicit_selection: bool,
    kernels: FxHashMap<String, KernelEntry>,
    open: HashMap<(Id, Id), Vec<Open>>,
    counters: Vec<(Id, String, f64, f64)>,
    process_names: HashMap<Id, String>,
    thread_names: HashMap<(Id, Id), String>,
    pub(super) display_time_unit: Option<String>,
    /// Top-level values that name the device, by key (see `walk::names_device`).
    pub(super) metadata: Vec<(String, serde_json::Value)>,
    pub(super) events: u64,
}

impl<'s> Aggregator<'s> {
    pub(super) fn new(selection: &'s TraceSelection, from_cut: bool) -> Aggregator<'s> {
        Aggregator {
            selection,
            from_cut,
            orphan_end: false,
            explicit_selection: selection.is_explicit(),
            kernels: FxHashMap::default(),
            open: HashMap::new(),
            counters: Vec::new(),
            process_names: HashMap::new(),
            thread_names: HashMap::new(),
            display_time_unit: None,
            metadata: Vec::new(),
            events: 0,
        }
    }

    /// Folds one event into the aggregates. Errors carry buffer offsets where known.
    pub(super) fn take_event(&mut self, ev: &Event<'_>) -> Result<(), Stop> {
        self.events += 1;
        match ev.ph {
            b'X' => {
                // Selection first: most complete events (CPU ops, runtime calls) are not
                // kernels, and need no numbers parsed.
                if !(self.explicit_selection || ev.is_kernel_category()?) {
                    return Ok(());
                }
                if let (Some(dur), Some(_)) = (ev.dur.number()?, ev.ts()?) {
                    let name = Event::text(&ev.name)?;
                    self.add_duration(&name, ev.thread()?, dur * 1000.0);
                }
            }
            b'B' => {
                if let Some(ts) = ev.ts()? {
                    let open = Open {
                        name: Event::text(&ev.name)?.into_owned(),
                        ts,
                        kernel_category: ev.is_kernel_category()?,
                    };
                    self.open.entry(ev.thread()?).or_default().push(open);
                }
            }
            b'E' => {
                let thread = ev.thread()?;
                // An end closes the innermost open begin on its thread, whatever its name.
                let begin = self.open.get_mut(&thread).and_then(Vec::pop);
                self.orphan_end |= self.from_cut && begin.is_none();
                if let (Some(begin), Some(ts)) = (begin, ev.ts()?) {
                    let kernel_category = begin.kernel_category || ev.is_kernel_category()?;
                    if kernel_category || self.explicit_selection {
                        self.add_duration(&begin.name, thread, (ts - begin.ts) * 1000.0);
                    }
                }
            }
            b'C' => self.take_counter(ev)?,
            b'M' => {
                if let Some(name) = ev.arg_name()? {
                    match Event::text(&ev.name)?.as_ref() {
                        "process_name" => {
                            self.process_names.insert(ev.pid()?, name);
                        }
                        "thread_name" => {
                            self.thread_names.insert(ev.thread()?, name);
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn add_duration(&mut self, name: &str, thread: (Id, Id), nanos: f64) {
        let events = self.events;
        let selection = self.selection;
        let entry = match self.kernels.get_mut(name) {
            Some(e) => e,
            None => self
                .kernels
                .entry(name.to_string())
                .or_insert_with(|| KernelEntry {
                    first_seen: events,
                    name_matches: selection.name_matches(name),
                    threads: Vec::new(),
                }),
        };
        if !entry.name_matches {
            return;
        }
        match entry.threads.iter_mut().find(|(t, _)| *t == thread) {
            Some((_, durations)) => durations.push(nanos),
            None => entry.threads.push((thread, vec![nanos])),
        }
    }

    fn take_counter(&mut self, ev: &Event<'_>) -> Result<(), Stop> {
        let pid = ev.pid()?;
        let mut base = Event::text(&ev.name)?.into_owned();
        if ev.id.is_present() {
            let id = &ev.id;
            base = format!("{base}[{}]", Event::text(id)?);
        }
        if ev.entries.kind == Kind::Container {
            // XProf's grouped form: rows of [ts_us, v1, v2, ...].
            let stats = Event::text(&ev.event_stats)?;
            return walk_entries(Scanner::new(ev.base, ev.entries.at), |row| {
                let Some((&ts, values)) = row.split_first() else {
                    return;
                };
                for (i, &v) in values.iter().enumerate() {
                    let counter = match (i, stats.is_empty()) {
                        (0, true) => base.clone(),
                        (0, false) => format!("{base}.{stats}"),
                        (i, _) => format!("{base}.{i}"),
                    };
                    self.counters.push((pid.clone(), counter, ts * 1000.0, v));
                }
            });
        }
        let Some(ts) = ev.ts()? else { return Ok(()) };
        let args_at = ev.args.at;
        ev.walk_args(|key, value| {
            // Strings that are not numbers (notes, names) are not counter readings.
            if let Ok(Some(v)) = value.number() {
                let key = key.text().map_err(|e| invalid(e, args_at))?;
                self.counters
                    .push((pid.clone(), format!("{base}.{key}"), ts * 1000.0, v));
            }
            Ok(())
        })
    }

    /// Appends the aggregate of the piece that follows this one in the file.
    pub(super) fn absorb(&mut self, later: Aggregator<'_>) {
        let offset = self.events;
        for (name, entry) in later.kernels {
            match self.kernels.get_mut(&name) {
                Some(mine) => {
                    for (thread, durations) in entry.threads {
                        match mine.threads.iter_mut().find(|(t, _)| *t == thread) {
                            Some((_, existing)) => existing.extend(durations),
                            None => mine.threads.push((thread, durations)),
                        }
                    }
                }
                None => {
                    let entry = KernelEntry {
                        first_seen: entry.first_seen + offset,
                        ..entry
                    };
                    self.kernels.insert(name, entry);
                }
            }
        }
        for (thread, opens) in later.open {
            self.open.entry(thread).or_default().extend(opens);
        }
        self.counters.extend(later.counters);
        self.process_names.extend(later.process_names);
        self.thread_names.extend(later.thread_names);
        if later.display_time_unit.is_some() {
            self.display_time_unit = later.display_time_unit;
        }
        self.metadata.extend(later.metadata);
        self.events += later.events;
    }

    /// Applies the process/thread selection (names are only known at the end: metadata events
    /// may come anywhere) and orders kernels by first appearance.
    pub(super) fn finish(self) -> Result<TraceSamples, String> {
        if let Some(unit) = &self.display_time_unit
            && unit != "ms"
            && unit != "ns"
        {
            return Err(format!(
                "`displayTimeUnit` is `{unit}`; the Trace Event Format allows `ms` or `ns`"
            ));
        }
        let selection = self.selection;
        let pid_ok = |pid: &Id| {
            selection.pid_matches(&pid.text(), self.process_names.get(pid).map(String::as_str))
        };
        let mut kernels: Vec<(u64, String, Vec<f64>)> = Vec::new();
        for (name, entry) in self.kernels {
            let mut threads = entry.threads;
            threads.sort_by(|a, b| a.0.cmp(&b.0));
            let mut durations = Vec::new();
            for ((pid, tid), values) in threads {
                let thread_name = self.thread_names.get(&(pid.clone(), tid.clone()));
                if pid_ok(&pid)
                    && selection.tid_matches(&tid.text(), thread_name.map(String::as_str))
                {
                    durations.extend(values);
                }
            }
            if !durations.is_empty() {
                kernels.push((entry.first_seen, name, durations));
            }
        }
        kernels.sort_by_key(|k| k.0);
        let counters = self
            .counters
            .into_iter()
            .filter(|(pid, ..)| pid_ok(pid))
            .map(|(_, name, t, v)| (name, t, v))
            .collect();
        Ok(TraceSamples {
            kernels: kernels.into_iter().map(|(_, n, d)| (n, d)).collect(),
            counters,
            device: trace_device(&self.metadata),
        })
    }
}

/// XProf's `entries` at the scanner: an array of `[ts_us, v1, v2, ...]` rows, each handed to
/// `row`.
fn walk_entries(mut s: Scanner<'_>, mut row: impl FnMut(&[f64])) -> Result<(), Stop> {
    const ROW: &str = "a counter row `[ts, value, ...]`";
    s.expect(b'[', "an array of counter rows `[ts, value, ...]`")?;
    if s.peek()? == b']' {
        return Ok(());
    }
    let mut values = Vec::new();
    loop {
        s.expect(b'[', ROW)?;
        values.clear();
        if s.peek()? == b']' {
            s.pos += 1;
        } else {
            loop {
                values.push(s.value()?.number()?.unwrap_or(f64::NAN));
                if !s.more(b']', "`,` or `]` in a counter row")? {
                    break;
                }
            }
        }
        row(&values);
        if !s.more(b']', "`,` or `]` between counter rows")? {
            return Ok(());
        }
    }
}
