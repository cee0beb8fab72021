//! Folding events into aggregates: durations per kernel name and thread, counter readings,
//! process and thread names, what names the device. Pieces of a parallel read are merged in
//! file order; the process and thread selection is applied at the end, when every name is
//! known.

use std::collections::HashMap;
use std::fmt::Write as _;

use memchr::arch::all::is_equal;
use rustc_hash::FxHashMap;

use super::event::{Event, Id, invalid};
use crate::capture::device::{Device, cuda_version};
use crate::import::trace::json_scan::{Kind, RawStr, Scanner, Stop, Value};
use crate::import::trace::tracks::CounterTracks;
use crate::import::trace::{TraceSamples, TraceSelection, least};
use crate::model::series::Sampling;

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
    /// Nanoseconds from the piece's origin.
    ts: f64,
    taken: Taken,
}

/// Why the default selection takes an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Taken {
    /// Its category is `kernel` (or the selection was given).
    Kernel,
    /// Only its `hlo_op` argument: an XLA op, on a device or, without one, on the host, or a
    /// host-side launch call (`cudaLaunchKernel`) that names the op it launches.
    HloOp,
    /// Neither: only an explicit selection takes it.
    Not,
}

/// Launches of one kernel on one thread: each one's start (nanoseconds from the piece's
/// origin) and duration (nanoseconds), in two vectors of one length.
#[derive(Debug, Default)]
struct Launches {
    starts: Vec<f64>,
    durations: Vec<f64>,
}

impl Launches {
    fn push(&mut self, start: f64, duration: f64) {
        self.starts.push(start);
        self.durations.push(duration);
    }

    fn append(&mut self, mut other: Launches) {
        if self.starts.is_empty() {
            *self = other;
            return;
        }
        self.starts.append(&mut other.starts);
        self.durations.append(&mut other.durations);
    }

    fn len(&self) -> usize {
        self.starts.len()
    }
}

/// Per kernel name: whether the name passes the patterns, and its launches per thread and
/// reason taken.
#[derive(Debug)]
struct KernelEntry {
    first_seen: u64,
    name_matches: bool,
    threads: Vec<((Id, Id), Taken, Launches)>,
}

/// Whether a process name is a device's in XProf's naming (`/device:GPU:0`, `/device:TPU:0`).
fn is_device_process(name: Option<&String>) -> bool {
    name.is_some_and(|n| n.starts_with("/device:"))
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
    /// Counter readings by process, in order of each process' first reading.
    counters: Vec<(Id, CounterTracks)>,
    /// Where a counter's name is put together (`{name}.{key}`) before its track is found.
    counter_name: String,
    /// The track of the last counter reading, by how its event and key were written.
    last_track: Option<LastTrack>,
    /// Counters written in XProf's grouped form (`entries` rows): XProf writes its periodic
    /// `_counters_` samples so, which are increments per interval.
    grouped: std::collections::BTreeSet<String>,
    /// The first timestamp kept, in picoseconds as written (epoch microseconds, often): the
    /// times above count from it, exactly, in nanoseconds.
    origin_ps: Option<i128>,
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
            counter_name: String::new(),
            last_track: None,
            grouped: Default::default(),
            origin_ps: None,
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
                let taken = self.taken(ev)?;
                if taken == Taken::Not {
                    return Ok(());
                }
                if let Some(nanos) = duration_ns(&ev.dur)?
                    && let Some(start) = self.time_ns(ev)?
                {
                    let name = Event::text(&ev.name)?;
                    self.add_duration(&name, ev.thread()?, taken, start, nanos);
                }
            }
            b'B' => {
                if let Some(ts) = self.time_ns(ev)? {
                    let open = Open {
                        name: Event::text(&ev.name)?.into_owned(),
                        ts,
                        taken: self.taken(ev)?,
                    };
                    self.open.entry(ev.thread()?).or_default().push(open);
                }
            }
            b'E' => {
                let thread = ev.thread()?;
                // An end closes the innermost open begin on its thread, whatever its name.
                let begin = self.open.get_mut(&thread).and_then(Vec::pop);
                self.orphan_end |= self.from_cut && begin.is_none();
                if let Some(begin) = begin
                    && let Some(ts) = self.time_ns(ev)?
                {
                    let taken = begin.taken.min(self.taken(ev)?);
                    if taken != Taken::Not {
                        self.add_duration(&begin.name, thread, taken, begin.ts, ts - begin.ts);
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

    /// Why the default selection takes an event, if it does (an explicit selection takes
    /// every event, and chooses at the end).
    fn taken(&self, ev: &Event<'_>) -> Result<Taken, Stop> {
        Ok(if self.explicit_selection || ev.is_kernel_category()? {
            Taken::Kernel
        } else if ev.has_hlo_op()? {
            Taken::HloOp
        } else {
            Taken::Not
        })
    }

    /// An event's `ts` in nanoseconds from this piece's origin (its first timestamp kept),
    /// computed from the decimal text in integer picoseconds, so that epoch-scale
    /// microseconds keep their fraction.
    fn time_ns(&mut self, ev: &Event<'_>) -> Result<Option<f64>, Stop> {
        Ok(ev
            .ts
            .fixed(6)?
            .map(|ps| relative_ns(&mut self.origin_ps, ps)))
    }

    fn add_duration(&mut self, name: &str, thread: (Id, Id), taken: Taken, start: f64, nanos: f64) {
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
        match entry
            .threads
            .iter_mut()
            .find(|(t, k, _)| *t == thread && *k == taken)
        {
            Some((.., launches)) => launches.push(start, nanos),
            None => {
                let mut launches = Launches::default();
                launches.push(start, nanos);
                entry.threads.push((thread, taken, launches));
            }
        }
    }

    fn take_counter(&mut self, ev: &Event<'_>) -> Result<(), Stop> {
        if ev.entries.kind != Kind::Container
            && let Some(last) = &self.last_track
            && last.of_event(ev)
            && let Some(readings) = last.readings(ev)?
        {
            let origin = &mut self.origin_ps;
            let Some(ts) = ev.ts.fixed(6)?.map(|ps| relative_ns(origin, ps)) else {
                return Ok(());
            };
            let tracks = &mut self.counters[last.set].1;
            for v in readings {
                tracks.push_at(last.track, ts, v);
            }
            return Ok(());
        }
        let pid = ev.pid()?;
        let mut base = Event::text(&ev.name)?;
        if ev.id.is_present() {
            let id = &ev.id;
            base = format!("{base}[{}]", Event::text(id)?).into();
        }
        let set = match self.counters.iter().rposition(|(p, _)| *p == pid) {
            Some(i) => i,
            None => {
                self.counters.push((pid, CounterTracks::default()));
                self.counters.len() - 1
            }
        };
        let tracks = &mut self.counters[set].1;
        let name = &mut self.counter_name;
        if ev.entries.kind == Kind::Container {
            // XProf's grouped form: rows of [ts_us, v1, v2, ...].
            let stats = Event::text(&ev.event_stats)?;
            let (origin, grouped) = (&mut self.origin_ps, &mut self.grouped);
            return walk_entries(Scanner::new(ev.base, ev.entries.at), |ts_ps, values| {
                let Some(ts_ps) = ts_ps else {
                    return;
                };
                let ts = relative_ns(origin, ts_ps);
                for (i, &v) in values.iter().enumerate() {
                    name.clear();
                    name.push_str(&base);
                    match (i, stats.is_empty()) {
                        (0, true) => {}
                        (0, false) => {
                            name.push('.');
                            name.push_str(&stats);
                        }
                        (i, _) => {
                            let _ = write!(name, ".{i}");
                        }
                    }
                    if !grouped.contains(name.as_str()) {
                        grouped.insert(name.clone());
                    }
                    tracks.push(name, ts, v);
                }
            });
        }
        let origin = &mut self.origin_ps;
        let Some(ts) = ev.ts.fixed(6)?.map(|ps| relative_ns(origin, ps)) else {
            return Ok(());
        };
        let args_at = ev.args.at;
        let mut last = None;
        ev.walk_args(|raw_key, value| {
            // Strings that are not numbers (notes, names) are not counter readings.
            if let Ok(Some(v)) = value.number() {
                let key = raw_key.text().map_err(|e| invalid(e, args_at))?;
                name.clear();
                name.push_str(&base);
                name.push('.');
                name.push_str(&key);
                last = Some((raw_key, tracks.push(name, ts, v)));
            }
            Ok(())
        })?;
        self.last_track = last.map(|(key, track)| LastTrack::new(ev, key, set, track));
        Ok(())
    }

    /// Appends the aggregate of the piece that follows this one in the file.
    pub(super) fn absorb(&mut self, mut later: Aggregator<'_>) {
        let offset = self.events;
        // The later piece's times count from its own origin: move them onto this one's.
        let shift = match (self.origin_ps, later.origin_ps) {
            (Some(mine), Some(theirs)) => (theirs - mine) as f64 / 1000.0,
            (None, theirs) => {
                self.origin_ps = theirs;
                0.0
            }
            (Some(_), None) => 0.0,
        };
        if shift != 0.0 {
            for entry in later.kernels.values_mut() {
                for (.., launches) in &mut entry.threads {
                    for start in &mut launches.starts {
                        *start += shift;
                    }
                }
            }
            for open in later.open.values_mut().flatten() {
                open.ts += shift;
            }
            for (_, tracks) in &mut later.counters {
                tracks.shift(shift);
            }
        }
        for (name, entry) in later.kernels {
            match self.kernels.get_mut(&name) {
                Some(mine) => {
                    for (thread, taken, launches) in entry.threads {
                        match mine
                            .threads
                            .iter_mut()
                            .find(|(t, k, _)| *t == thread && *k == taken)
                        {
                            Some((.., existing)) => existing.append(launches),
                            None => mine.threads.push((thread, taken, launches)),
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
        for (pid, tracks) in later.counters {
            match self.counters.iter_mut().find(|(p, _)| *p == pid) {
                Some((_, mine)) => mine.append(tracks),
                None => self.counters.push((pid, tracks)),
            }
        }
        self.grouped.extend(later.grouped);
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
        // In XProf's naming, kernels come from `/device:…` processes: where the trace has one,
        // an event taken only for its `hlo_op` elsewhere is a host-side launch call.
        let has_device = self
            .process_names
            .values()
            .any(|n| is_device_process(Some(n)));
        let (mut host_launches, mut host_ops) = (0usize, 0usize);
        let mut kernels: Vec<(u64, String, Launches)> = Vec::new();
        for (name, entry) in self.kernels {
            let mut threads = entry.threads;
            threads.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
            let mut launches = Launches::default();
            for ((pid, tid), taken, values) in threads {
                let thread_name = self.thread_names.get(&(pid.clone(), tid.clone()));
                if !(pid_ok(&pid)
                    && selection.tid_matches(&tid.text(), thread_name.map(String::as_str)))
                {
                    continue;
                }
                if taken == Taken::HloOp && !is_device_process(self.process_names.get(&pid)) {
                    if has_device {
                        host_launches += values.len();
                        continue;
                    }
                    host_ops += values.len();
                }
                launches.append(values);
            }
            if !launches.starts.is_empty() {
                kernels.push((entry.first_seen, name, launches));
            }
        }
        kernels.sort_by_key(|k| k.0);
        let mut counters = CounterTracks::default();
        for (pid, tracks) in self.counters {
            if pid_ok(&pid) {
                counters.append(tracks);
            }
        }
        // Times count from the earliest one kept.
        let earliest = kernels
            .iter()
            .filter_map(|k| least(&k.2.starts))
            .chain(counters.earliest())
            .reduce(f64::min)
            .unwrap_or(0.0);
        if earliest != 0.0 {
            for (.., launches) in &mut kernels {
                for start in &mut launches.starts {
                    *start -= earliest;
                }
            }
            counters.shift(-earliest);
        }
        let mut notes = Vec::new();
        if host_launches > 0 {
            notes.push(format!(
                "left out {host_launches} host-side events that carry an `hlo_op` argument (launch calls such as `cudaLaunchKernel` or `hipModuleLaunchKernel`): kernels come from the trace's `/device:` processes; select host events with --pid and --tid"
            ));
        }
        if host_ops > 0 {
            notes.push(format!(
                "the trace has no `/device:` process (JAX on the CPU?): the default selection took the {host_ops} host events that carry an `hlo_op` argument (XLA ops run on the host) as kernels"
            ));
        }
        let mut sampling = std::collections::BTreeMap::new();
        for track in counters.tracks() {
            if self.grouped.contains(&track.name) {
                sampling.insert(track.name.clone(), Sampling::Interval);
            }
        }
        if !sampling.is_empty() {
            notes.push(format!(
                "{} counter tracks are in XProf's grouped form (`entries` rows), which XProf writes for its periodic `_counters_` samples: each value is read as the increase over the interval that ends at its time (set `counters: {{mode: cumulative}}` on the benchmark to read them as running totals)",
                sampling.len()
            ));
        }
        let (mut names, mut durations, mut starts) = (Vec::new(), Vec::new(), Vec::new());
        for (_, name, launches) in kernels {
            names.push(name);
            starts.push(launches.starts);
            durations.push(launches.durations);
        }
        Ok(TraceSamples {
            kernels: names.into_iter().zip(durations).collect(),
            starts,
            counters,
            device: trace_device(&self.metadata),
            notes,
            sampling,
            ..TraceSamples::default()
        })
    }
}

/// Where the last counter reading went, by how its event's name, id and pid and its key were
/// written. Counter events repeat a handful of names: a reading written like the last one
/// goes to the same track without its name decoded, put together and looked up (about 7 % of
/// the instructions of a trace half counter events). Text written the same way decodes the
/// same way, so the track is the one the lookup would find.
struct LastTrack {
    name: (Kind, Vec<u8>),
    id: (Kind, Vec<u8>),
    pid: (Kind, Vec<u8>),
    /// The key as written, between its quotes (escapes and all).
    key: Vec<u8>,
    /// The place in `counters` of the process's tracks, and of the track in them.
    set: usize,
    track: usize,
}

/// The most readings one counter event hands over by the last track's way.
const SAME_KEY_READINGS: usize = 4;

impl LastTrack {
    fn new(ev: &Event<'_>, key: RawStr<'_>, set: usize, track: usize) -> LastTrack {
        let written = |v: &Value<'_>| (v.kind, v.bytes.to_vec());
        LastTrack {
            name: written(&ev.name),
            id: written(&ev.id),
            pid: written(&ev.pid),
            key: key.bytes.to_vec(),
            set,
            track,
        }
    }

    /// Whether `ev` names its counter and process as the last reading's event did.
    fn of_event(&self, ev: &Event<'_>) -> bool {
        // Names of a few bytes: compared inline, where slice equality calls `memcmp` (which
        // took 14 % of a trace half counter events, for these three and the key below).
        let same =
            |held: &(Kind, Vec<u8>), v: &Value<'_>| held.0 == v.kind && is_equal(&held.1, v.bytes);
        same(&self.name, &ev.name) && same(&self.id, &ev.id) && same(&self.pid, &ev.pid)
    }

    /// The readings of `ev` when every one of them has the last reading's key (as written),
    /// and there are only a few; otherwise `None`, and the event takes the full way.
    fn readings(&self, ev: &Event<'_>) -> Result<Option<impl Iterator<Item = f64>>, Stop> {
        let mut values = [0.0; SAME_KEY_READINGS];
        let (mut n, mut same) = (0, true);
        ev.walk_args(|key, value| {
            if let Ok(Some(v)) = value.number() {
                same &= n < SAME_KEY_READINGS && is_equal(key.bytes, &self.key);
                if same {
                    values[n] = v;
                    n += 1;
                }
            }
            Ok(())
        })?;
        Ok((same && n > 0).then(|| values.into_iter().take(n)))
    }
}

/// A complete event's `dur` (microseconds) in nanoseconds, computed from the decimal text in
/// integer picoseconds like its `ts`: `2.026` µs is 2026 ns, where `2.026 * 1000.0` in floating
/// point is 2025.9999999999998. A duration too large for that (beyond 10^35 ps) is scaled as a
/// floating-point number.
fn duration_ns(dur: &Value<'_>) -> Result<Option<f64>, Stop> {
    match dur.fixed(6) {
        Ok(Some(ps)) => Ok(Some(ps as f64 / 1000.0)),
        Ok(None) | Err(_) => Ok(dur.number()?.map(|us| us * 1000.0)),
    }
}

/// Nanoseconds from `origin` (set to `ps` when unset) to `ps`, both in picoseconds: exact
/// for whole nanoseconds within 104 days of the origin.
fn relative_ns(origin: &mut Option<i128>, ps: i128) -> f64 {
    let origin = *origin.get_or_insert(ps);
    (ps - origin) as f64 / 1000.0
}

/// XProf's `entries` at the scanner: an array of `[ts_us, v1, v2, ...]` rows, each handed to
/// `row` with its time in picoseconds (exact, from the decimal text) and its values.
fn walk_entries(mut s: Scanner<'_>, mut row: impl FnMut(Option<i128>, &[f64])) -> Result<(), Stop> {
    const ROW: &str = "a counter row `[ts, value, ...]`";
    s.expect(b'[', "an array of counter rows `[ts, value, ...]`")?;
    if s.peek()? == b']' {
        return Ok(());
    }
    let mut values = Vec::new();
    loop {
        s.expect(b'[', ROW)?;
        values.clear();
        let mut ts = None;
        if s.peek()? == b']' {
            s.pos += 1;
        } else {
            ts = s.value()?.fixed(6)?;
            while s.more(b']', "`,` or `]` in a counter row")? {
                values.push(s.value()?.number()?.unwrap_or(f64::NAN));
            }
        }
        row(ts, &values);
        if !s.more(b']', "`,` or `]` between counter rows")? {
            return Ok(());
        }
    }
}
