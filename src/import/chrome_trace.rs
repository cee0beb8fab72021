//! `kgate import chrome-trace`: kernel durations and counter tracks from Chrome Trace Event
//! Format JSON (PyTorch/Kineto, XProf trace viewer, Perfetto JSON, chrome://tracing).
//!
//! Traces run to gigabytes, so the file is never held in memory: it is read in chunks, a
//! scanner cuts out one event at a time, and serde_json parses each event from its slice with
//! a hand-written visitor that fills one reused scratch event, folded into per-kernel
//! aggregates as it arrives. (serde_json's own streaming reader goes byte by byte and was
//! several times slower.) Memory is proportional to the distinct kernel names and threads,
//! plus the samples kept, not to the events read. Names and keys are copied into reused
//! buffers, so events that are not kept cost no allocation.

use std::collections::HashMap;
use std::fmt;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

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
        let gz =
            flate2::read::MultiGzDecoder::new(BufReader::with_capacity(1 << 16, head.chain(file)));
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
    let mut aggregator = Aggregator::new(selection);
    let mut splitter = Splitter::new(reader);
    match splitter.skip_whitespace()? {
        Some(b'[') => {
            splitter.pos += 1;
            if splitter.events(&mut aggregator)? {
                splitter.expect_end()?;
            }
        }
        Some(b'{') => {
            splitter.pos += 1;
            splitter.document(&mut aggregator)?;
        }
        Some(other) => {
            return Err(format!(
                "not a Chrome trace: expected a JSON array of trace events or an object with \
                 `traceEvents`, found `{}` at byte {}",
                char::from(other).escape_default(),
                splitter.offset()
            ));
        }
        None => return Err("the file is empty; expected a Chrome trace".into()),
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

/// Cuts the input into top-level pieces (keys, values, events) without parsing them, so that
/// each event is parsed by serde_json from a borrowed slice: several times faster than
/// serde_json's byte-at-a-time reader, and the buffer only ever holds one chunk (or one
/// event, when an event is larger).
struct Splitter<R> {
    reader: R,
    buf: Vec<u8>,
    /// Next unread byte in `buf`.
    pos: usize,
    /// End of the valid bytes in `buf`.
    end: usize,
    /// Bytes dropped from the front of `buf` so far.
    dropped: u64,
    eof: bool,
}

const CHUNK: usize = 1 << 20;

/// A value scanned but not yet taken: its start in `buf` and the scanner's state.
#[derive(Debug, Clone, Copy)]
enum Scan {
    Complete(usize),
    Incomplete,
}

impl<R: Read> Splitter<R> {
    fn new(reader: R) -> Splitter<R> {
        Splitter {
            reader,
            buf: vec![0; CHUNK],
            pos: 0,
            end: 0,
            dropped: 0,
            eof: false,
        }
    }

    /// Byte offset of `pos` in the input.
    fn offset(&self) -> u64 {
        self.dropped + self.pos as u64
    }

    /// Reads more input, keeping `buf[keep..end]`; false at end of input.
    fn fill(&mut self, keep: usize) -> Result<bool, String> {
        if self.eof {
            return Ok(false);
        }
        if keep > 0 {
            self.buf.copy_within(keep..self.end, 0);
            self.dropped += keep as u64;
            self.end -= keep;
            self.pos -= keep;
        }
        if self.end == self.buf.len() {
            self.buf.resize(self.buf.len() * 2, 0);
        }
        loop {
            match self.reader.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(true);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(format!("read failed at byte {}: {e}", self.offset())),
            }
        }
    }

    /// The next byte that is not whitespace, left unconsumed; `None` at end of input.
    fn skip_whitespace(&mut self) -> Result<Option<u8>, String> {
        loop {
            while self.pos < self.end {
                let b = self.buf[self.pos];
                if !matches!(b, b' ' | b'\n' | b'\r' | b'\t') {
                    return Ok(Some(b));
                }
                self.pos += 1;
            }
            if !self.fill(self.pos)? {
                return Ok(None);
            }
        }
    }

    /// Scans the JSON value starting at `pos`, reading more input as needed, and returns its
    /// range in `buf` (valid until the next call). `None` when the input ends inside it.
    fn take_value(&mut self) -> Result<Option<(usize, usize)>, String> {
        let mut depth = 0usize;
        let mut in_string = false;
        let mut escaped = false;
        let mut i = self.pos;
        let first = self.buf[i];
        let scalar = !matches!(first, b'{' | b'[' | b'"');
        loop {
            let found = scan(
                &self.buf[..self.end],
                &mut i,
                &mut depth,
                &mut in_string,
                &mut escaped,
                scalar,
            );
            if let Scan::Complete(stop) = found {
                let start = self.pos;
                self.pos = stop;
                return Ok(Some((start, stop)));
            }
            let keep = self.pos;
            if !self.fill(keep)? {
                if scalar && i > self.pos {
                    let start = self.pos;
                    self.pos = self.end;
                    return Ok(Some((start, self.end)));
                }
                return Ok(None);
            }
            i -= keep;
        }
    }

    /// The body of `{ ... }` after its `{`: `traceEvents` is streamed, `displayTimeUnit` kept,
    /// other keys skipped.
    fn document(&mut self, agg: &mut Aggregator<'_>) -> Result<(), String> {
        let mut saw_events = false;
        loop {
            match self.skip_whitespace()? {
                Some(b'}') => {
                    self.pos += 1;
                    return self.expect_end();
                }
                Some(b',') => {
                    self.pos += 1;
                    continue;
                }
                Some(b'"') => {}
                Some(other) => {
                    return Err(format!(
                        "expected a key of the trace object, found `{}` at byte {}",
                        char::from(other).escape_default(),
                        self.offset()
                    ));
                }
                // A trace cut off after its events keeps them.
                None if saw_events => return Ok(()),
                None => return Err("the file ends inside the trace object".into()),
            }
            let at = self.offset();
            let (a, b) = self
                .take_value()?
                .ok_or_else(|| format!("the file ends inside a key at byte {at}"))?;
            let key: String = serde_json::from_slice(&self.buf[a..b])
                .map_err(|e| format!("invalid key at byte {at}: {e}"))?;
            if self.skip_whitespace()? != Some(b':') {
                return Err(format!(
                    "expected `:` after key `{key}` at byte {}",
                    self.offset()
                ));
            }
            self.pos += 1;
            let next = self.skip_whitespace()?;
            if key == "traceEvents" && next == Some(b'[') {
                self.pos += 1;
                saw_events = true;
                if !self.events(agg)? {
                    return Ok(()); // cut off between two events
                }
                continue;
            }
            if next.is_none() {
                return Err(format!("the file ends before the value of `{key}`"));
            }
            let at = self.offset();
            let (a, b) = self
                .take_value()?
                .ok_or_else(|| format!("the file ends inside the value of `{key}` (byte {at})"))?;
            let value = &self.buf[a..b];
            if key == "displayTimeUnit" {
                let unit: String = serde_json::from_slice(value)
                    .map_err(|e| format!("`displayTimeUnit` at byte {at}: {e}"))?;
                agg.display_time_unit = Some(unit);
            } else if key == "traceEvents" {
                return Err(format!("`traceEvents` at byte {at} is not an array"));
            } else {
                serde_json::from_slice::<IgnoredAny>(value)
                    .map_err(|e| format!("invalid value of `{key}` at byte {at}: {e}"))?;
            }
        }
    }

    /// The events of an array after its `[`. Returns false when the input ends between two
    /// events (the array form may omit its `]`), true after the `]`.
    fn events(&mut self, agg: &mut Aggregator<'_>) -> Result<bool, String> {
        loop {
            match self.skip_whitespace()? {
                Some(b']') => {
                    self.pos += 1;
                    return Ok(true);
                }
                Some(b',') => {
                    self.pos += 1;
                    continue;
                }
                Some(_) => {}
                None => return Ok(false),
            }
            let at = self.offset();
            let Some((a, b)) = self.take_value()? else {
                return Err(format!(
                    "the file ends inside a trace event (byte {at}, after {} events)",
                    agg.events
                ));
            };
            agg.scratch.clear();
            let mut de = serde_json::Deserializer::from_slice(&self.buf[a..b]);
            EventSeed {
                scratch: &mut agg.scratch,
            }
            .deserialize(&mut de)
            .and_then(|()| de.end())
            .map_err(|e| {
                format!(
                    "invalid trace event at byte {at} (after {} events): {e}",
                    agg.events
                )
            })?;
            agg.take_event();
        }
    }

    /// Only whitespace may follow the document.
    fn expect_end(&mut self) -> Result<(), String> {
        match self.skip_whitespace()? {
            None => Ok(()),
            Some(other) => Err(format!(
                "unexpected `{}` at byte {} after the end of the trace",
                char::from(other).escape_default(),
                self.offset()
            )),
        }
    }
}

/// Advances `i` over `buf` through one JSON value; `Complete(end)` once it ends. The state
/// (`depth`, `in_string`, `escaped`) carries over when more input must be read first.
#[inline]
fn scan(
    buf: &[u8],
    i: &mut usize,
    depth: &mut usize,
    in_string: &mut bool,
    escaped: &mut bool,
    scalar: bool,
) -> Scan {
    if scalar {
        while *i < buf.len() {
            if matches!(buf[*i], b',' | b']' | b'}' | b' ' | b'\n' | b'\r' | b'\t') {
                return Scan::Complete(*i);
            }
            *i += 1;
        }
        return Scan::Incomplete;
    }
    while *i < buf.len() {
        if *in_string {
            if *escaped {
                *escaped = false;
                *i += 1;
                continue;
            }
            // Jump to the next quote or backslash.
            match memchr::memchr2(b'"', b'\\', &buf[*i..]) {
                None => {
                    *i = buf.len();
                    return Scan::Incomplete;
                }
                Some(k) => {
                    *i += k + 1;
                    if buf[*i - 1] == b'\\' {
                        *escaped = true;
                    } else {
                        *in_string = false;
                        if *depth == 0 {
                            return Scan::Complete(*i);
                        }
                    }
                }
            }
            continue;
        }
        let b = buf[*i];
        *i += 1;
        match b {
            b'"' => *in_string = true,
            b'{' | b'[' => *depth += 1,
            b'}' | b']' => {
                *depth = depth.saturating_sub(1);
                if *depth == 0 {
                    return Scan::Complete(*i);
                }
            }
            _ => {}
        }
    }
    Scan::Incomplete
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
    /// Whether the selection was given (then categories and `hlo_op` do not matter); set once.
    explicit_selection: bool,
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

    /// Whether `args` can be skipped: a duration event whose selection does not hang on
    /// `hlo_op` (its category already says kernel, or the selection is explicit).
    fn args_not_needed(&self) -> bool {
        matches!(self.ph.as_bytes().first(), Some(b'X' | b'B' | b'E'))
            && (self.explicit_selection || self.is_kernel_category())
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
    scratch: Scratch,
    kernels: HashMap<String, KernelEntry>,
    open: HashMap<(Id, Id), Vec<Open>>,
    counters: Vec<(Id, String, f64, f64)>,
    process_names: HashMap<Id, String>,
    thread_names: HashMap<(Id, Id), String>,
    display_time_unit: Option<String>,
    events: u64,
}

impl<'s> Aggregator<'s> {
    fn new(selection: &'s TraceSelection) -> Aggregator<'s> {
        Aggregator {
            selection,
            scratch: Scratch {
                explicit_selection: selection.is_explicit(),
                ..Scratch::default()
            },
            kernels: HashMap::new(),
            open: HashMap::new(),
            counters: Vec::new(),
            process_names: HashMap::new(),
            thread_names: HashMap::new(),
            display_time_unit: None,
            events: 0,
        }
    }

    /// Folds the event in `scratch` into the aggregates.
    fn take_event(&mut self) {
        self.events += 1;
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
                    let kernel_category =
                        begin.kernel_category || self.scratch.is_kernel_category();
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
        TraceSamples {
            kernels: kernels.into_iter().map(|(_, n, d)| (n, d)).collect(),
            counters,
        }
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
                // Durations need no args once the event is known to be selected by its
                // category (or the selection ignores categories): skip them unparsed.
                Field::Args if s.args_not_needed() => {
                    map.next_value::<IgnoredAny>()?;
                }
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
        while seq
            .next_element_seed(RowSeed {
                scratch: self.scratch,
            })?
            .is_some()
        {}
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
        assert!(
            err.contains("ends inside a trace event") && err.contains("after 1 events"),
            "{err}"
        );
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
        assert_eq!(
            parse(text, &by_process).unwrap().kernel("k").unwrap(),
            [1000.0, 2000.0]
        );
        let by_thread =
            TraceSelection::new(&[], &[], Some("1".into()), Some("stream 2".into())).unwrap();
        assert_eq!(
            parse(text, &by_thread).unwrap().kernel("k").unwrap(),
            [2000.0]
        );
    }

    /// Hands out one byte per read, so every value straddles buffer refills.
    struct Trickle<'a>(&'a [u8]);

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            match self.0.split_first() {
                Some((b, rest)) if !out.is_empty() => {
                    out[0] = *b;
                    self.0 = rest;
                    Ok(1)
                }
                _ => Ok(0),
            }
        }
    }

    #[test]
    fn events_split_across_reads_with_tricky_strings() {
        let text = r#"{"otherData": {"a": [1, {"b": "}]"}]}, "traceEvents": [
            {"ph": "X", "name": "k \"q\" {[", "ts": 1, "dur": 1.5, "args": {"s": "\\"}},
            {"ph": "X", "name": "k \"q\" {[", "ts": 2, "dur": 2}
        ], "displayTimeUnit": "ns", "tail": 12}"#;
        let all = kernels_named(".");
        let whole = parse(text, &all).unwrap();
        let trickled = read_trace(Trickle(text.as_bytes()), &all).unwrap();
        assert_eq!(whole, trickled);
        assert_eq!(whole.kernel("k \"q\" {[").unwrap(), [1500.0, 2000.0]);
    }

    #[test]
    fn bad_documents_get_clear_errors() {
        let err = parse(",{\"ph\":\"M\"}", &TraceSelection::default()).unwrap_err();
        assert!(err.starts_with("not a Chrome trace"), "{err}");
        let err = parse(
            "{\"displayTimeUnit\": \"s\", \"traceEvents\": []}",
            &TraceSelection::default(),
        )
        .unwrap_err();
        assert!(err.contains("`displayTimeUnit` is `s`"), "{err}");
        let err = parse("[{\"ph\": \"X\" \"name\": 1}]", &TraceSelection::default()).unwrap_err();
        assert!(
            err.starts_with("invalid trace event at byte 1 (after 0 events)"),
            "{err}"
        );
        let err = parse("{\"traceEvents\": 5}", &TraceSelection::default()).unwrap_err();
        assert!(
            err.contains("`traceEvents` at byte 16 is not an array"),
            "{err}"
        );
        let err = parse("[] x", &TraceSelection::default()).unwrap_err();
        assert!(err.contains("unexpected `x` at byte 3"), "{err}");
    }
}
