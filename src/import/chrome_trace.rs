//! `kgate import chrome-trace`: kernel durations and counter tracks from Chrome Trace Event
//! Format JSON (PyTorch/Kineto, XProf trace viewer, Perfetto JSON, chrome://tracing).
//!
//! Traces run to gigabytes, so the file is never held in memory: serde_json streams it and a
//! hand-written `Visitor::visit_seq` over `traceEvents` folds each event into per-kernel
//! aggregates as it arrives, reusing one scratch event. Memory is proportional to the distinct
//! kernel names and threads, plus the samples kept, not to the events read. Event names and
//! keys are copied into reused buffers, so events that are not kept cost no allocation.

use std::cell::Cell;
use std::collections::HashMap;
use std::fmt;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::trace::{TraceSamples, TraceSelection, build_results};
use super::{ImportError, Policies};
use crate::results::RunResults;

/// What the default selection takes, in words.
const DEFAULT_SELECTION: &str =
    "complete and begin/end events of category `kernel`, or with an `hlo_op` argument (XLA ops)";

/// Imports Chrome trace files (`.json` or gzip-compressed `.json.gz`), each one repetition.
pub fn import(
    files: &[PathBuf],
    policies: &Policies,
    selection: &TraceSelection,
) -> Result<RunResults, ImportError> {
    let mut per_file = Vec::with_capacity(files.len());
    for path in files {
        let samples = read_file(path, selection)?;
        if samples.is_empty() {
            return Err(ImportError::Content {
                path: path.clone(),
                message: format!(
                    "no kernel events or counter tracks matched {}; choose kernels with \
                     --kernel REGEX, --kernel-glob GLOB, --pid and --tid",
                    selection.describe(DEFAULT_SELECTION)
                ),
            });
        }
        per_file.push((path.clone(), samples));
    }
    build_results("chrome-trace", per_file, policies)
}

/// Reads one trace file (plain or gzip, told apart by the gzip magic bytes).
pub fn read_file(path: &Path, selection: &TraceSelection) -> Result<TraceSamples, ImportError> {
    let read_err = |source| ImportError::Read {
        path: path.to_path_buf(),
        source,
    };
    let mut file = File::open(path).map_err(read_err)?;
    let mut magic = [0u8; 2];
    let n = read_up_to(&mut file, &mut magic).map_err(read_err)?;
    let head = std::io::Cursor::new(magic[..n].to_vec());
    let content_err = |message| ImportError::Content {
        path: path.to_path_buf(),
        message,
    };
    if n == 2 && magic == [0x1f, 0x8b] {
        let gz = flate2::read::MultiGzDecoder::new(BufReader::with_capacity(
            1 << 16,
            head.chain(file),
        ));
        read_trace(gz, selection).map_err(content_err)
    } else {
        read_trace(head.chain(file), selection).map_err(content_err)
    }
}

fn read_up_to(file: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

/// Parses a trace from any reader. Errors are messages that say where and what.
pub fn read_trace<R: Read>(reader: R, selection: &TraceSelection) -> Result<TraceSamples, String> {
    let tracked = TrackedReader::new(reader);
    let position = tracked.position.clone();
    let mut aggregator = Aggregator::new(selection, position.clone());
    let mut de = serde_json::Deserializer::from_reader(tracked);
    let outcome = TopSeed {
        agg: &mut aggregator,
    }
    .deserialize(&mut de)
    .and_then(|()| de.end());
    if let Err(err) = outcome {
        // A trace cut off after a complete event (the array form may legally lack its `]`,
        // and a profiler killed mid-write leaves the same) keeps the events read so far.
        let truncated_cleanly = err.is_eof()
            && aggregator.in_events
            && position.last_significant.get() <= aggregator.last_event_end;
        if !truncated_cleanly {
            return Err(describe_json_error(&err, aggregator.events));
        }
    }
    if let Some(unit) = &aggregator.display_time_unit
        && unit != "ms"
        && unit != "ns"
    {
        return Err(format!(
            "`displayTimeUnit` is `{unit}`; the Trace Event Format allows `ms` or `ns`"
        ));
    }
    Ok(aggregator.finish())
}

fn describe_json_error(err: &serde_json::Error, events: u64) -> String {
    if events == 0 {
        format!(
            "not a Chrome trace: expected a JSON array of trace events or an object with \
             `traceEvents` ({err})"
        )
    } else {
        format!("invalid JSON after {events} trace events: {err}")
    }
}

/// Byte positions shared between the reader and the aggregator.
#[derive(Debug, Default)]
struct Positions {
    /// Bytes consumed so far.
    consumed: Cell<u64>,
    /// Position just after the last byte that was neither whitespace nor a comma.
    last_significant: Cell<u64>,
}

/// Buffers the input and tracks positions, so that a trace cut off between two events can be
/// told from one cut off inside an event.
struct TrackedReader<R> {
    inner: R,
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    position: Rc<Positions>,
}

impl<R: Read> TrackedReader<R> {
    fn new(inner: R) -> TrackedReader<R> {
        TrackedReader {
            inner,
            buf: vec![0; 1 << 16].into_boxed_slice(),
            start: 0,
            end: 0,
            position: Rc::new(Positions::default()),
        }
    }
}

impl<R: Read> Read for TrackedReader<R> {
    #[inline]
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.start == self.end {
            self.start = 0;
            self.end = self.inner.read(&mut self.buf)?;
            if self.end == 0 {
                return Ok(0);
            }
        }
        let n = out.len().min(self.end - self.start);
        out[..n].copy_from_slice(&self.buf[self.start..self.start + n]);
        self.start += n;
        let consumed = self.position.consumed.get();
        if let Some(i) = out[..n]
            .iter()
            .rposition(|b| !matches!(b, b' ' | b'\n' | b'\r' | b'\t' | b','))
        {
            self.position.last_significant.set(consumed + i as u64 + 1);
        }
        self.position.consumed.set(consumed + n as u64);
        Ok(n)
    }
}

/// A process or thread id: a number or a string (Kineto writes `"stream 7"`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
enum Id {
    #[default]
    Absent,
    Num(i64),
    Text(String),
}

impl Id {
    fn text(&self) -> String {
        match self {
            Id::Absent => String::new(),
            Id::Num(n) => n.to_string(),
            Id::Text(s) => s.clone(),
        }
    }
}

/// The fields of one event, reused from event to event.
#[derive(Debug, Default)]
struct Scratch {
    name: String,
    ph: String,
    cat: String,
    id: String,
    has_id: bool,
    event_stats: String,
    ts: Option<f64>,
    dur: Option<f64>,
    pid: Id,
    tid: Id,
    /// Numeric args; `args[..args_len]` are this event's.
    args: Vec<(String, f64)>,
    args_len: usize,
    /// `args.name` when it is a string (metadata events).
    arg_name: Option<String>,
    /// Whether `args` has `hlo_op` (an XLA op, as JAX and XProf write them).
    has_hlo_op: bool,
    /// XProf's grouped counter rows, flattened; `entry_widths` gives each row's length.
    entries: Vec<f64>,
    entry_widths: Vec<usize>,
}

impl Scratch {
    fn clear(&mut self) {
        self.name.clear();
        self.ph.clear();
        self.cat.clear();
        self.id.clear();
        self.has_id = false;
        self.event_stats.clear();
        self.ts = None;
        self.dur = None;
        self.pid = Id::Absent;
        self.tid = Id::Absent;
        self.args_len = 0;
        self.arg_name = None;
        self.has_hlo_op = false;
        self.entries.clear();
        self.entry_widths.clear();
    }

    /// What the default selection takes: kernels by category, XLA ops by their `hlo_op`.
    fn is_kernel_category(&self) -> bool {
        self.has_hlo_op
            || self
                .cat
            .split(',')
            .any(|c| c.trim().eq_ignore_ascii_case("kernel"))
    }
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

struct Aggregator<'s> {
    selection: &'s TraceSelection,
    positions: Rc<Positions>,
    scratch: Scratch,
    kernels: HashMap<String, KernelEntry>,
    open: HashMap<(Id, Id), Vec<Open>>,
    counters: Vec<(Id, String, f64, f64)>,
    process_names: HashMap<Id, String>,
    thread_names: HashMap<(Id, Id), String>,
    display_time_unit: Option<String>,
    events: u64,
    in_events: bool,
    last_event_end: u64,
}

impl<'s> Aggregator<'s> {
    fn new(selection: &'s TraceSelection, positions: Rc<Positions>) -> Aggregator<'s> {
        Aggregator {
            selection,
            positions,
            scratch: Scratch::default(),
            kernels: HashMap::new(),
            open: HashMap::new(),
            counters: Vec::new(),
            process_names: HashMap::new(),
            thread_names: HashMap::new(),
            display_time_unit: None,
            events: 0,
            in_events: false,
            last_event_end: 0,
        }
    }

    /// Folds the event in `scratch` into the aggregates.
    fn take_event(&mut self) {
        self.events += 1;
        self.last_event_end = self.positions.consumed.get();
        let ph = self.scratch.ph.as_bytes().first().copied().unwrap_or(0);
        match ph {
            b'X' => {
                if let (Some(_), Some(dur)) = (self.scratch.ts, self.scratch.dur) {
                    let kernel_category = self.scratch.is_kernel_category();
                    let name = std::mem::take(&mut self.scratch.name);
                    self.add_duration(&name, kernel_category, dur * 1000.0);
                    self.scratch.name = name;
                }
            }
            b'B' => {
                if let Some(ts) = self.scratch.ts {
                    let key = (self.scratch.pid.clone(), self.scratch.tid.clone());
                    let open = Open {
                        name: self.scratch.name.clone(),
                        ts,
                        kernel_category: self.scratch.is_kernel_category(),
                    };
                    self.open.entry(key).or_default().push(open);
                }
            }
            b'E' => {
                let key = (self.scratch.pid.clone(), self.scratch.tid.clone());
                // An end closes the innermost open begin on its thread, whatever its name.
                let begin = self.open.get_mut(&key).and_then(Vec::pop);
                if let (Some(begin), Some(ts)) = (begin, self.scratch.ts) {
                    let kernel_category = begin.kernel_category || self.scratch.is_kernel_category();
                    self.add_duration(&begin.name, kernel_category, (ts - begin.ts) * 1000.0);
                }
            }
            b'C' => self.take_counter(),
            b'M' => {
                if let Some(name) = self.scratch.arg_name.take() {
                    match self.scratch.name.as_str() {
                        "process_name" => {
                            self.process_names.insert(self.scratch.pid.clone(), name);
                        }
                        "thread_name" => {
                            let key = (self.scratch.pid.clone(), self.scratch.tid.clone());
                            self.thread_names.insert(key, name);
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }

    fn add_duration(&mut self, name: &str, kernel_category: bool, nanos: f64) {
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
        if !entry.name_matches || !(kernel_category || selection.is_explicit()) {
            return;
        }
        let (pid, tid) = (&self.scratch.pid, &self.scratch.tid);
        match entry
            .threads
            .iter_mut()
            .find(|((p, t), _)| p == pid && t == tid)
        {
            Some((_, durations)) => durations.push(nanos),
            None => entry
                .threads
                .push(((pid.clone(), tid.clone()), vec![nanos])),
        }
    }

    fn take_counter(&mut self) {
        let s = &self.scratch;
        let mut base = s.name.clone();
        if s.has_id {
            base = format!("{base}[{}]", s.id);
        }
        if !s.entry_widths.is_empty() {
            // XProf's grouped form: rows of [ts_us, v1, v2, ...].
            let mut offset = 0;
            for &width in &s.entry_widths {
                let row = &s.entries[offset..offset + width];
                offset += width;
                let Some((&ts, values)) = row.split_first() else {
                    continue;
                };
                for (i, &v) in values.iter().enumerate() {
                    let counter = match (i, s.event_stats.is_empty()) {
                        (0, true) => base.clone(),
                        (0, false) => format!("{base}.{}", s.event_stats),
                        (i, _) => format!("{base}.{i}"),
                    };
                    self.counters.push((s.pid.clone(), counter, ts * 1000.0, v));
                }
            }
            return;
        }
        let Some(ts) = s.ts else { return };
        for (key, value) in &s.args[..s.args_len] {
            self.counters
                .push((s.pid.clone(), format!("{base}.{key}"), ts * 1000.0, *value));
        }
    }

    /// Applies the process/thread selection (names are only known at the end: metadata events
    /// may come anywhere) and orders kernels by first appearance.
    fn finish(self) -> TraceSamples {
        let selection = self.selection;
        let pid_ok = |pid: &Id| selection.pid_matches(&pid.text(), self.process_names.get(pid).map(String::as_str));
        let mut kernels: Vec<(u64, String, Vec<f64>)> = Vec::new();
        for (name, entry) in self.kernels {
            let mut threads = entry.threads;
            threads.sort_by(|a, b| a.0.cmp(&b.0));
            let mut durations = Vec::new();
            for ((pid, tid), values) in threads {
                let thread_name = self.thread_names.get(&(pid.clone(), tid.clone()));
                if pid_ok(&pid) && selection.tid_matches(&tid.text(), thread_name.map(String::as_str)) {
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
        TraceSamples {
            kernels: kernels.into_iter().map(|(_, n, d)| (n, d)).collect(),
            counters,
        }
    }
}

/// The whole document: a bare array of events or an object holding `traceEvents`.
struct TopSeed<'a, 's> {
    agg: &'a mut Aggregator<'s>,
}

impl<'de> DeserializeSeed<'de> for TopSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for TopSeed<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of trace events or an object with `traceEvents`")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        EventsSeed { agg: self.agg }.visit_seq(seq)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut key = String::new();
        while map.next_key_seed(TextInto(&mut key))?.is_some() {
            match key.as_str() {
                "traceEvents" => map.next_value_seed(EventsSeed {
                    agg: &mut *self.agg,
                })?,
                "displayTimeUnit" => {
                    let mut unit = String::new();
                    map.next_value_seed(TextInto(&mut unit))?;
                    self.agg.display_time_unit = Some(unit);
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// The `traceEvents` array, folded event by event.
struct EventsSeed<'a, 's> {
    agg: &'a mut Aggregator<'s>,
}

impl<'de> DeserializeSeed<'de> for EventsSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for EventsSeed<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of trace events")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.agg.in_events = true;
        loop {
            self.agg.scratch.clear();
            let more = seq.next_element_seed(EventSeed {
                scratch: &mut self.agg.scratch,
            })?;
            if more.is_none() {
                break;
            }
            self.agg.take_event();
        }
        self.agg.in_events = false;
        Ok(())
    }
}

#[derive(Deserialize)]
#[serde(field_identifier)]
enum Field {
    #[serde(rename = "name")]
    Name,
    #[serde(rename = "ph")]
    Ph,
    #[serde(rename = "cat")]
    Cat,
    #[serde(rename = "ts")]
    Ts,
    #[serde(rename = "dur")]
    Dur,
    #[serde(rename = "pid")]
    Pid,
    #[serde(rename = "tid")]
    Tid,
    #[serde(rename = "id")]
    Id,
    #[serde(rename = "args")]
    Args,
    #[serde(rename = "entries")]
    Entries,
    #[serde(rename = "event_stats")]
    EventStats,
    #[serde(other)]
    Other,
}

/// One event, read into the scratch.
struct EventSeed<'a> {
    scratch: &'a mut Scratch,
}

impl<'de> DeserializeSeed<'de> for EventSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for EventSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a trace event object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let s = self.scratch;
        while let Some(field) = map.next_key::<Field>()? {
            match field {
                Field::Name => map.next_value_seed(TextInto(&mut s.name))?,
                Field::Ph => map.next_value_seed(TextInto(&mut s.ph))?,
                Field::Cat => map.next_value_seed(TextInto(&mut s.cat))?,
                Field::Id => {
                    map.next_value_seed(TextInto(&mut s.id))?;
                    s.has_id = true;
                }
                Field::EventStats => map.next_value_seed(TextInto(&mut s.event_stats))?,
                Field::Ts => s.ts = map.next_value_seed(Number)?,
                Field::Dur => s.dur = map.next_value_seed(Number)?,
                Field::Pid => s.pid = map.next_value_seed(IdSeed)?,
                Field::Tid => s.tid = map.next_value_seed(IdSeed)?,
                Field::Args => map.next_value_seed(ArgsSeed { scratch: s })?,
                Field::Entries => map.next_value_seed(EntriesSeed { scratch: s })?,
                Field::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// A string (or a number, written out) copied into a reused buffer.
struct TextInto<'a>(&'a mut String);

impl<'de> DeserializeSeed<'de> for TextInto<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for TextInto<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        self.0.clear();
        self.0.push_str(v);
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        self.0.clear();
        self.0.push_str(&v.to_string());
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        self.0.clear();
        self.0.push_str(&v.to_string());
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        self.0.clear();
        self.0.push_str(&v.to_string());
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.0.clear();
        Ok(())
    }
}

/// A number, also when written as a string (XProf writes big integers and NaN that way).
/// Anything else reads as absent.
struct Number;

impl<'de> DeserializeSeed<'de> for Number {
    type Value = Option<f64>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<f64>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Number {
    type Value = Option<f64>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a number")
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Option<f64>, E> {
        Ok(Some(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Option<f64>, E> {
        Ok(Some(v as f64))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Option<f64>, E> {
        Ok(Some(v as f64))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Option<f64>, E> {
        Ok(v.trim().parse().ok())
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Option<f64>, E> {
        Ok(None)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Option<f64>, E> {
        Ok(None)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<f64>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<f64>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }
}

struct IdSeed;

impl<'de> DeserializeSeed<'de> for IdSeed {
    type Value = Id;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Id, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for IdSeed {
    type Value = Id;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a process or thread id")
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Id, E> {
        Ok(i64::try_from(v).map_or_else(|_| Id::Text(v.to_string()), Id::Num))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Id, E> {
        Ok(Id::Num(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Id, E> {
        Ok(Id::Text(v.to_string()))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Id, E> {
        Ok(Id::Text(v.to_string()))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Id, E> {
        Ok(Id::Absent)
    }
}

/// `args`: numeric values kept (counter series), `name` kept when a string (metadata).
struct ArgsSeed<'a> {
    scratch: &'a mut Scratch,
}

impl<'de> DeserializeSeed<'de> for ArgsSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ArgsSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an args object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let s = self.scratch;
        s.args_len = 0;
        loop {
            if s.args_len == s.args.len() {
                s.args.push((String::new(), 0.0));
            }
            let slot = &mut s.args[s.args_len];
            if map.next_key_seed(TextInto(&mut slot.0))?.is_none() {
                break;
            }
            match map.next_value_seed(ArgValue)? {
                Arg::Number(v) => {
                    slot.1 = v;
                    s.args_len += 1;
                }
                Arg::Text(text) if slot.0 == "name" => s.arg_name = Some(text),
                Arg::Text(_) if slot.0 == "hlo_op" => s.has_hlo_op = true,
                // XProf writes big integers and NaN as strings.
                Arg::Text(text) => {
                    if let Ok(v) = text.trim().parse::<f64>() {
                        slot.1 = v;
                        s.args_len += 1;
                    }
                }
                Arg::Other => {}
            }
        }
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(())
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
}

enum Arg {
    Number(f64),
    Text(String),
    Other,
}

struct ArgValue;

impl<'de> DeserializeSeed<'de> for ArgValue {
    type Value = Arg;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Arg, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ArgValue {
    type Value = Arg;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an argument value")
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Arg, E> {
        Ok(Arg::Number(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Arg, E> {
        Ok(Arg::Number(v as f64))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Arg, E> {
        Ok(Arg::Number(v as f64))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Arg, E> {
        Ok(Arg::Text(v.to_string()))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Arg, E> {
        Ok(Arg::Other)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Arg, E> {
        Ok(Arg::Other)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Arg, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Arg::Other)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Arg, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Arg::Other)
    }
}

/// XProf's `entries`: an array of `[ts_us, v1, v2, ...]` rows.
struct EntriesSeed<'a> {
    scratch: &'a mut Scratch,
}

impl<'de> DeserializeSeed<'de> for EntriesSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for EntriesSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of counter rows `[ts, value, ...]`")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(RowSeed { scratch: self.scratch })?.is_some() {}
        Ok(())
    }
}

struct RowSeed<'a> {
    scratch: &'a mut Scratch,
}

impl<'de> DeserializeSeed<'de> for RowSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for RowSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a counter row `[ts, value, ...]`")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut width = 0;
        while let Some(v) = seq.next_element_seed(Number)? {
            self.scratch.entries.push(v.unwrap_or(f64::NAN));
            width += 1;
        }
        self.scratch.entry_widths.push(width);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str, selection: &TraceSelection) -> Result<TraceSamples, String> {
        read_trace(text.as_bytes(), selection)
    }

    fn kernels_named(regex: &str) -> TraceSelection {
        TraceSelection::new(&[regex.to_string()], &[], None, None).unwrap()
    }

    #[test]
    fn complete_and_begin_end_events_of_kernel_category() {
        let text = r#"{"displayTimeUnit": "ns", "traceEvents": [
            {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": "stream 7", "ts": 10.5, "dur": 2.25, "args": {"grid": [1, 2, 3]}},
            {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 0, "tid": 1, "ts": 10, "dur": 5},
            {"ph": "B", "cat": "Kernel", "name": "relu", "pid": 0, "tid": 2, "ts": 20},
            {"ph": "E", "pid": 0, "tid": 2, "ts": 20.125},
            {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": "stream 7", "ts": 30, "dur": "3"}
        ]}"#;
        let s = parse(text, &TraceSelection::default()).unwrap();
        assert_eq!(s.kernels.len(), 2);
        assert_eq!(s.kernel("gemm").unwrap(), [2250.0, 3000.0]);
        assert_eq!(s.kernel("relu").unwrap(), [125.0]);
        assert!(s.kernel("aten::mm").is_none());
    }

    #[test]
    fn bare_array_may_lack_its_closing_bracket() {
        let text = "[{\"ph\": \"X\", \"name\": \"a\", \"ts\": 1, \"dur\": 1},\n{\"ph\": \"X\", \"name\": \"a\", \"ts\": 2, \"dur\": 2},\n";
        let s = parse(text, &kernels_named("a")).unwrap();
        assert_eq!(s.kernel("a").unwrap(), [1000.0, 2000.0]);
        let cut = "[{\"ph\": \"X\", \"name\": \"a\", \"ts\": 1, \"dur\": 1},\n{\"ph\": \"X\", \"na";
        let err = parse(cut, &kernels_named("a")).unwrap_err();
        assert!(err.contains("after 1 trace events"), "{err}");
    }

    #[test]
    fn counters_plain_with_id_and_grouped() {
        let text = r#"[
            {"ph": "C", "name": "mem", "pid": 1, "ts": 5, "args": {"used": 10, "free": "20", "note": "x"}},
            {"ph": "C", "name": "ctr", "id": "0x1", "pid": 1, "ts": 6, "args": {"value": 3}},
            {"pid": 2, "name": "HBM", "ph": "C", "event_stats": "bandwidth", "entries": [[1.5, 7, 8], [2.5, "9", "NaN"]]}
        ]"#;
        let s = parse(text, &TraceSelection::default()).unwrap();
        let c: Vec<(&str, f64, f64)> = s
            .counters
            .iter()
            .map(|(n, t, v)| (n.as_str(), *t, *v))
            .collect();
        assert_eq!(c[0], ("mem.used", 5000.0, 10.0));
        assert_eq!(c[1], ("mem.free", 5000.0, 20.0));
        assert_eq!(c[2], ("ctr[0x1].value", 6000.0, 3.0));
        assert_eq!(c[3], ("HBM.bandwidth", 1500.0, 7.0));
        assert_eq!(c[4], ("HBM.1", 1500.0, 8.0));
        assert_eq!(c[5], ("HBM.bandwidth", 2500.0, 9.0));
        assert!(c[6].2.is_nan());
        assert_eq!(c.len(), 7);
    }

    #[test]
    fn process_and_thread_names_select_even_when_metadata_comes_last() {
        let text = r#"[
            {"ph": "X", "name": "k", "pid": 1, "tid": 1, "ts": 0, "dur": 1},
            {"ph": "X", "name": "k", "pid": 1, "tid": 2, "ts": 0, "dur": 2},
            {"ph": "X", "name": "k", "pid": 2, "tid": 1, "ts": 0, "dur": 4},
            {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "gpu"}},
            {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "stream 2"}}
        ]"#;
        let by_process = TraceSelection::new(&[], &[], Some("gpu".into()), None).unwrap();
        assert_eq!(parse(text, &by_process).unwrap().kernel("k").unwrap(), [1000.0, 2000.0]);
        let by_thread =
            TraceSelection::new(&[], &[], Some("1".into()), Some("stream 2".into())).unwrap();
        assert_eq!(parse(text, &by_thread).unwrap().kernel("k").unwrap(), [2000.0]);
    }

    #[test]
    fn bad_documents_get_clear_errors() {
        let err = parse(",{\"ph\":\"M\"}", &TraceSelection::default()).unwrap_err();
        assert!(err.starts_with("not a Chrome trace"), "{err}");
        let err = parse("{\"displayTimeUnit\": \"s\", \"traceEvents\": []}", &TraceSelection::default())
            .unwrap_err();
        assert!(err.contains("`displayTimeUnit` is `s`"), "{err}");
    }
}
