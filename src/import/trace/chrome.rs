//! `kgate import chrome-trace`: kernel durations and counter tracks from Chrome Trace Event
//! Format JSON (PyTorch/Kineto, XProf trace viewer, Perfetto JSON, chrome://tracing).
//!
//! Traces run to gigabytes, so the file is never held in memory: it is read in chunks, and a
//! scanner (`json_scan`) walks each event once, noting where its fields stand.
//! Only what the event's phase and category call for is then decoded (most events are CPU
//! ops that need no number parsed) and folded into per-kernel aggregates. Memory is
//! proportional to the distinct kernel names and threads, plus the samples kept, not to the
//! events read. Large uncompressed files are read by one thread per core from guessed event
//! boundaries, merged in file order so that the result is the one a single reader gets
//! (`read_parallel` says how a wrong guess is caught).

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use std::sync::mpsc::{self, Receiver, Sender};

use rustc_hash::FxHashMap;

use super::json_scan::{Kind, RawStr, Scanner, Stop, Value};
use super::{TraceSamples, TraceSelection, import_files};
use crate::import::device::{Device, cuda_version};
use crate::import::{ImportContext, ImportError, Importer, SelectionScope};
use crate::results::RunResults;

/// What the default selection takes, in words.
const DEFAULT_SELECTION: &str =
    "complete and begin/end events of category `kernel`, or with an `hlo_op` argument (XLA ops)";

/// `kgate import chrome-trace`.
pub struct ChromeTrace;

impl Importer for ChromeTrace {
    fn name(&self) -> &'static str {
        "chrome-trace"
    }

    fn help(&self) -> &'static str {
        "Chrome Trace Event Format JSON (`.json`, `.json.gz`): Kineto, XProf, Perfetto JSON"
    }

    fn kernel_selection(&self) -> Option<SelectionScope> {
        Some(SelectionScope {
            pid: "only this process (pid or process name)",
            tid: "only this thread (tid or thread name)",
        })
    }

    /// Imports Chrome trace files (`.json` or gzip-compressed `.json.gz`), each one repetition.
    fn import(&self, files: &[PathBuf], ctx: &ImportContext) -> Result<RunResults, ImportError> {
        import_files(
            self.name(),
            files,
            &ctx.policies,
            |path| read_file(path, &ctx.selection),
            || {
                format!(
                    "no kernel events or counter tracks matched {}; choose kernels with \
                     --kernel REGEX, --kernel-glob GLOB, --pid and --tid",
                    ctx.selection.describe(DEFAULT_SELECTION)
                )
            },
        )
    }
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
        return read_trace(ReadAhead::spawn(gz), selection).map_err(content_err);
    }
    let size = file.metadata().map_err(read_err)?.len();
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    if workers > 1 && size >= PARALLEL_MIN_BYTES {
        read_parallel(path, size, workers, selection).map_err(content_err)
    } else {
        read_trace(head.chain(file), selection).map_err(content_err)
    }
}

/// Reads from a slow source (a gzip stream) on a thread of its own, a few chunks ahead, so
/// that decompressing and scanning overlap. Chunk buffers go back and forth between the two
/// threads; the reading thread stops when this side is dropped.
struct ReadAhead {
    full: Receiver<std::io::Result<Vec<u8>>>,
    empty: Sender<Vec<u8>>,
    current: Vec<u8>,
    pos: usize,
    done: bool,
}

impl ReadAhead {
    const CHUNK: usize = 1 << 20;
    const CHUNKS: usize = 3;

    fn spawn<R: Read + Send + 'static>(mut source: R) -> ReadAhead {
        let (full_tx, full) = mpsc::sync_channel(Self::CHUNKS);
        let (empty, empty_rx) = mpsc::channel::<Vec<u8>>();
        for _ in 0..Self::CHUNKS {
            empty
                .send(vec![0; Self::CHUNK])
                .expect("the receiver is alive");
        }
        std::thread::spawn(move || {
            while let Ok(mut chunk) = empty_rx.recv() {
                chunk.resize(Self::CHUNK, 0);
                let read = read_up_to(&mut source, &mut chunk).map(|n| {
                    chunk.truncate(n);
                    chunk
                });
                let last = matches!(&read, Ok(c) if c.is_empty()) || read.is_err();
                if full_tx.send(read).is_err() || last {
                    return;
                }
            }
        });
        ReadAhead {
            full,
            empty,
            current: Vec::new(),
            pos: 0,
            done: false,
        }
    }
}

impl Read for ReadAhead {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.pos == self.current.len() {
            if self.done {
                return Ok(0);
            }
            let next = self.full.recv().unwrap_or_else(|_| {
                Err(std::io::Error::other("the decompressing thread stopped"))
            })?;
            self.done = next.is_empty();
            let spent = std::mem::replace(&mut self.current, next);
            self.pos = 0;
            // The reader may have finished already; then the buffer is simply dropped.
            let _ = self.empty.send(spent);
        }
        let n = out.len().min(self.current.len() - self.pos);
        out[..n].copy_from_slice(&self.current[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

fn read_up_to(file: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
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
    let mut aggregator = Aggregator::new(selection, false);
    Input::new(reader, 0, Vec::new()).walk(&mut aggregator, Start::Document)?;
    aggregator.finish()
}

/// Where a walk over the input begins.
#[derive(Debug, Clone, Copy)]
enum Start {
    /// At the first byte of the file.
    Document,
    /// At an event inside `traceEvents` (of the top-level object, or of a bare array).
    InsideEvents { object: bool },
}

/// Where a walk over the input ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Walked {
    /// At the end of the document (or of the input).
    End,
    /// At the event starting at this cut, where another worker began.
    Cut(u64),
}

/// How a run of events ended.
enum EventsEnd {
    /// At the array's `]`.
    Closed,
    InputEnded,
    AtCut(u64),
}

/// Files at least this large are read by several threads.
const PARALLEL_MIN_BYTES: u64 = 32 << 20;

/// Reads an uncompressed trace with `workers` threads. The file is cut at guessed event
/// boundaries, each worker walks from its cut, and the first worker walks from the start.
/// A guess is only trusted once the worker before it lands exactly on it (an event ends
/// right there): then the two aggregates are merged in order. A worker that does not land
/// on the next cut (it was inside a string, say) reads on past it, and a later worker
/// whose piece cannot stand alone (an end event whose begin came before its cut) is
/// redone in order; either way the result is the one a single reader gets.
fn read_parallel(
    path: &Path,
    size: u64,
    workers: usize,
    selection: &TraceSelection,
) -> Result<TraceSamples, String> {
    let open = || File::open(path).map_err(|e| format!("cannot open: {e}"));
    let mut file = open()?;
    let object = match first_byte(&mut file)? {
        Some(b'{') => true,
        Some(b'[') => false,
        // Not a trace: let the plain reader say why.
        _ => return read_trace(open()?, selection),
    };
    let cuts = guess_cuts(&mut file, size, workers)?;
    if cuts.is_empty() {
        return read_trace(open()?, selection);
    }
    let walk_from = |index: usize| -> Result<(Aggregator<'_>, Walked), String> {
        let start = if index == 0 { 0 } else { cuts[index - 1] };
        let mut file = open()?;
        file.seek(SeekFrom::Start(start))
            .map_err(|e| format!("cannot seek to byte {start}: {e}"))?;
        let later_cuts = cuts[index..].to_vec();
        let mut agg = Aggregator::new(selection, index > 0);
        let from = if index == 0 {
            Start::Document
        } else {
            Start::InsideEvents { object }
        };
        let walked = Input::new(file, start, later_cuts).walk(&mut agg, from)?;
        Ok((agg, walked))
    };
    let results: Vec<Result<(Aggregator<'_>, Walked), String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (1..=cuts.len())
            .map(|i| scope.spawn(move || walk_from(i)))
            .collect();
        let mut results = vec![walk_from(0)];
        for handle in handles {
            results.push(
                handle
                    .join()
                    .unwrap_or_else(|_| Err("a reader thread failed".into())),
            );
        }
        results
    });
    let mut results = results.into_iter().map(Some).collect::<Vec<_>>();
    let (mut total, mut walked) = results[0].take().expect("the first walk")?;
    while let Walked::Cut(cut) = walked {
        let index = cuts.iter().position(|&c| c == cut).expect("a known cut") + 1;
        match results[index].take().expect("each walk is taken once") {
            Ok((piece, next)) if !piece.orphan_end => {
                total.absorb(piece);
                walked = next;
            }
            // The piece failed or needs what came before it: read it again in order.
            _ => {
                let mut file = open()?;
                file.seek(SeekFrom::Start(cut))
                    .map_err(|e| format!("cannot seek to byte {cut}: {e}"))?;
                let mut input = Input::new(file, cut, cuts[index..].to_vec());
                walked = input.walk(&mut total, Start::InsideEvents { object })?;
            }
        }
    }
    total.finish()
}

/// The first byte that is not whitespace.
fn first_byte(file: &mut File) -> Result<Option<u8>, String> {
    let mut head = [0u8; 4096];
    let n = read_up_to(file, &mut head).map_err(|e| format!("read failed: {e}"))?;
    Ok(head[..n]
        .iter()
        .copied()
        .find(|b| !matches!(b, b' ' | b'\n' | b'\r' | b'\t')))
}

/// For each worker after the first, the start of an event near its share of the file: the
/// `{` of the first `}` `,` `{` (whitespace allowed) after the share's first byte. Only a
/// guess: the pattern may sit inside a string or a nested array, which the walk detects.
fn guess_cuts(file: &mut File, size: u64, workers: usize) -> Result<Vec<u64>, String> {
    const WINDOW: usize = 1 << 16;
    let mut window = vec![0u8; WINDOW];
    let mut cuts: Vec<u64> = Vec::new();
    for i in 1..workers as u64 {
        let from = size * i / workers as u64;
        file.seek(SeekFrom::Start(from))
            .map_err(|e| format!("cannot seek to byte {from}: {e}"))?;
        let n = read_up_to(file, &mut window).map_err(|e| format!("read failed: {e}"))?;
        let Some(at) = event_boundary(&window[..n]) else {
            continue;
        };
        let cut = from + at as u64;
        if cuts.last().is_none_or(|&last| cut > last) {
            cuts.push(cut);
        }
    }
    Ok(cuts)
}

/// The offset of the `{` in the first `}`, `,`, `{` sequence (whitespace between allowed).
fn event_boundary(bytes: &[u8]) -> Option<usize> {
    let is_space = |b: &u8| matches!(b, b' ' | b'\n' | b'\r' | b'\t');
    let mut from = 0;
    while let Some(k) = memchr::memchr(b'}', &bytes[from..]) {
        let close = from + k;
        let mut i = close + 1;
        while bytes.get(i).is_some_and(is_space) {
            i += 1;
        }
        if bytes.get(i) == Some(&b',') {
            i += 1;
            while bytes.get(i).is_some_and(is_space) {
                i += 1;
            }
            if bytes.get(i) == Some(&b'{') {
                return Some(i);
            }
        }
        from = close + 1;
    }
    None
}

/// The input, read in chunks into one buffer that only ever holds the value being scanned
/// (a chunk, or more when one value is larger).
struct Input<R> {
    reader: R,
    buf: Vec<u8>,
    /// Next unread byte in `buf`.
    pos: usize,
    /// End of the valid bytes in `buf`.
    end: usize,
    /// Input offset of `buf[0]`: where reading began plus the bytes dropped since.
    dropped: u64,
    eof: bool,
    /// Offsets where other workers began, ascending, and the next one not yet passed.
    cuts: Vec<u64>,
    next_cut: usize,
}

const CHUNK: usize = 1 << 20;

/// Why a value could not be scanned.
enum Failure {
    /// Not JSON at this byte of the input: what was expected there.
    Invalid {
        expected: &'static str,
        offset: u64,
    },
    Read(String),
}

impl Failure {
    /// The failure as a message, after `context` ("invalid trace event at byte 5").
    fn describe(self, context: impl fmt::Display) -> String {
        match self {
            Failure::Invalid { expected, offset } => {
                format!("{context}: expected {expected} at byte {offset}")
            }
            Failure::Read(message) => message,
        }
    }
}

impl<R: Read> Input<R> {
    /// Input read from `reader`, whose first byte is at offset `start` of the file.
    fn new(reader: R, start: u64, cuts: Vec<u64>) -> Input<R> {
        Input {
            reader,
            buf: vec![0; CHUNK],
            pos: 0,
            end: 0,
            dropped: start,
            eof: false,
            cuts,
            next_cut: 0,
        }
    }

    /// Byte offset of `pos` in the input.
    fn offset(&self) -> u64 {
        self.dropped + self.pos as u64
    }

    /// Moves the unread bytes to the front and reads until the buffer is full (doubling it
    /// when the unread bytes already fill it) or the input ends; false at end of input.
    /// Filling the whole buffer keeps rescans of a value that straddles reads rare.
    fn fill(&mut self) -> Result<bool, Failure> {
        if self.eof {
            return Ok(false);
        }
        let keep = self.pos;
        if keep > 0 {
            self.buf.copy_within(keep..self.end, 0);
            self.dropped += keep as u64;
            self.end -= keep;
            self.pos = 0;
        }
        if self.end == self.buf.len() {
            self.buf.resize(self.buf.len() * 2, 0);
        }
        let before = self.end;
        while self.end < self.buf.len() {
            match self.reader.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    break;
                }
                Ok(n) => self.end += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let at = self.dropped + self.end as u64;
                    return Err(Failure::Read(format!("read failed at byte {at}: {e}")));
                }
            }
        }
        Ok(self.end > before)
    }

    /// Runs `step` over the unread input and consumes what it scanned. When the input ends
    /// inside, reads more and runs it again from the same place; `None` when the input ends
    /// for good first.
    fn scan<T>(
        &mut self,
        mut step: impl FnMut(&mut Scanner<'_>) -> Result<T, Stop>,
    ) -> Result<Option<T>, Failure> {
        loop {
            let mut scanner = Scanner::new(&self.buf[..self.end], self.pos);
            match step(&mut scanner) {
                Ok(value) => {
                    self.pos = scanner.pos;
                    return Ok(Some(value));
                }
                Err(Stop::Invalid { expected, at }) => {
                    return Err(Failure::Invalid {
                        expected,
                        offset: self.dropped + at as u64,
                    });
                }
                Err(Stop::Incomplete) => {
                    if !self.fill()? {
                        return Ok(None);
                    }
                }
            }
        }
    }

    /// The next byte that is not whitespace, left unconsumed; `None` at end of input.
    fn peek(&mut self) -> Result<Option<u8>, String> {
        self.scan(|s| s.peek())
            .map_err(|f| f.describe("invalid trace"))
    }

    /// The body of `{ ... }` after its `{`: `traceEvents` is streamed, `displayTimeUnit` and
    /// what names the device (`deviceProperties`, `*_version`) kept, other keys skipped.
    fn document(&mut self, agg: &mut Aggregator<'_>, after_events: bool) -> Result<Walked, String> {
        let mut saw_events = after_events;
        loop {
            match self.peek()? {
                Some(b'}') => {
                    self.pos += 1;
                    return self.expect_end().map(|()| Walked::End);
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
                None if saw_events => return Ok(Walked::End),
                None => return Err("the file ends inside the trace object".into()),
            }
            let at = self.offset();
            let key = self
                .scan(|s| owned_text(s, |s| s.key()))
                .map_err(|f| f.describe(format_args!("invalid key at byte {at}")))?
                .ok_or_else(|| format!("the file ends inside a key at byte {at}"))?;
            let next = self.peek()?;
            if key == "traceEvents" && next == Some(b'[') {
                self.pos += 1;
                saw_events = true;
                match self.events(agg)? {
                    EventsEnd::Closed => continue,
                    // Cut off between two events: the events read count.
                    EventsEnd::InputEnded => return Ok(Walked::End),
                    EventsEnd::AtCut(cut) => return Ok(Walked::Cut(cut)),
                }
            }
            if next.is_none() {
                return Err(format!("the file ends before the value of `{key}`"));
            }
            let at = self.offset();
            let ends_inside = || format!("the file ends inside the value of `{key}` (byte {at})");
            if key == "displayTimeUnit" {
                let unit = self
                    .scan(|s| owned_text(s, |s| s.string()))
                    .map_err(|f| f.describe(format_args!("`displayTimeUnit` at byte {at}")))?
                    .ok_or_else(ends_inside)?;
                agg.display_time_unit = Some(unit);
            } else if names_device(&key) {
                let raw = self
                    .scan(|s| {
                        let start = s.pos;
                        s.skip_value()?;
                        Ok(s.buf[start..s.pos].to_vec())
                    })
                    .map_err(|f| f.describe(format_args!("invalid value of `{key}` at byte {at}")))?
                    .ok_or_else(ends_inside)?;
                if let Ok(value) = serde_json::from_slice(&raw) {
                    agg.metadata.push((key, value));
                }
            } else if key == "traceEvents" {
                return Err(format!("`traceEvents` at byte {at} is not an array"));
            } else {
                self.scan(|s| s.skip_value())
                    .map_err(|f| f.describe(format_args!("invalid value of `{key}` at byte {at}")))?
                    .ok_or_else(ends_inside)?;
            }
        }
    }

    /// The events of an array after its `[`, up to its `]`, the end of the input (the array
    /// form may omit its `]`), or a cut where another worker took over.
    fn events(&mut self, agg: &mut Aggregator<'_>) -> Result<EventsEnd, String> {
        loop {
            match self.peek()? {
                Some(b']') => {
                    self.pos += 1;
                    return Ok(EventsEnd::Closed);
                }
                Some(b',') => {
                    self.pos += 1;
                    continue;
                }
                Some(_) => {}
                None => return Ok(EventsEnd::InputEnded),
            }
            let at = self.offset();
            if let Some(cut) = self.reached_cut(at) {
                return Ok(EventsEnd::AtCut(cut));
            }
            let parsed = self
                .scan(|s| Event::scan(s, |event| agg.take_event(event)))
                .map_err(|f| {
                    f.describe(format_args!(
                        "invalid trace event at byte {at} (after {} events)",
                        agg.events
                    ))
                })?;
            if parsed.is_none() {
                return Err(format!(
                    "the file ends inside a trace event (byte {at}, after {} events)",
                    agg.events
                ));
            }
        }
    }

    /// Whether an event starting at `at` starts at a cut (passed cuts are dropped: the
    /// worker that began there guessed wrong, and this one reads on).
    #[inline]
    fn reached_cut(&mut self, at: u64) -> Option<u64> {
        while let Some(&cut) = self.cuts.get(self.next_cut) {
            if cut > at {
                return None;
            }
            self.next_cut += 1;
            if cut == at {
                return Some(cut);
            }
        }
        None
    }

    /// Walks the input from `start` to the end of the document or to a cut.
    fn walk(&mut self, agg: &mut Aggregator<'_>, start: Start) -> Result<Walked, String> {
        match start {
            Start::Document => match self.peek()? {
                Some(b'[') => {
                    self.pos += 1;
                    self.array_rest(agg)
                }
                Some(b'{') => {
                    self.pos += 1;
                    self.document(agg, false)
                }
                Some(other) => Err(format!(
                    "not a Chrome trace: expected a JSON array of trace events or an object \
                     with `traceEvents`, found `{}` at byte {}",
                    char::from(other).escape_default(),
                    self.offset()
                )),
                None => Err("the file is empty; expected a Chrome trace".into()),
            },
            Start::InsideEvents { object: false } => self.array_rest(agg),
            Start::InsideEvents { object: true } => match self.events(agg)? {
                EventsEnd::Closed => self.document(agg, true),
                EventsEnd::InputEnded => Ok(Walked::End),
                EventsEnd::AtCut(cut) => Ok(Walked::Cut(cut)),
            },
        }
    }

    /// The rest of a bare array of events.
    fn array_rest(&mut self, agg: &mut Aggregator<'_>) -> Result<Walked, String> {
        match self.events(agg)? {
            EventsEnd::Closed => self.expect_end().map(|()| Walked::End),
            EventsEnd::InputEnded => Ok(Walked::End),
            EventsEnd::AtCut(cut) => Ok(Walked::Cut(cut)),
        }
    }

    /// Only whitespace may follow the document.
    fn expect_end(&mut self) -> Result<(), String> {
        match self.peek()? {
            None => Ok(()),
            Some(other) => Err(format!(
                "unexpected `{}` at byte {} after the end of the trace",
                char::from(other).escape_default(),
                self.offset()
            )),
        }
    }
}

/// Whether a top-level key says what the trace was measured on: Kineto's `deviceProperties`
/// (`computeProperties` in 2021 traces) and versions (`cuda_driver_version`,
/// `cuda_runtime_version`, `cupti_version`).
fn names_device(key: &str) -> bool {
    key == "deviceProperties" || key == "computeProperties" || key.ends_with("_version")
}

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

/// Finds `"hlo_op"` in an event's `args`.
static HLO_OP: LazyLock<memchr::memmem::Finder<'static>> =
    LazyLock::new(|| memchr::memmem::Finder::new(b"\"hlo_op\""));

/// The decoded text of the string (or key) that `read` scans.
fn owned_text<'a>(
    s: &mut Scanner<'a>,
    read: impl FnOnce(&mut Scanner<'a>) -> Result<RawStr<'a>, Stop>,
) -> Result<String, Stop> {
    let at = s.pos;
    let raw = read(s)?;
    raw.text().map(Cow::into_owned).map_err(|e| invalid(e, at))
}

fn invalid(expected: &'static str, at: usize) -> Stop {
    Stop::Invalid { expected, at }
}

/// One event's fields as they stand in the buffer. Nothing is decoded or parsed until the
/// event's phase shows it is needed, so the events that are not kept cost one scan.
#[derive(Default)]
struct Event<'a> {
    /// The buffer the event was scanned from (for error offsets and `args`).
    base: &'a [u8],
    name: Value<'a>,
    ph: u8,
    cat: Value<'a>,
    id: Value<'a>,
    event_stats: Value<'a>,
    ts: Value<'a>,
    dur: Value<'a>,
    pid: Value<'a>,
    tid: Value<'a>,
    args: Value<'a>,
    entries: Value<'a>,
}

impl<'a> Event<'a> {
    /// Scans one event object, noting where the fields kgate reads stand, and hands it to
    /// `take` (by reference: the event stays in this frame, not copied out).
    fn scan(
        s: &mut Scanner<'a>,
        take: impl FnOnce(&Event<'a>) -> Result<(), Stop>,
    ) -> Result<(), Stop> {
        let mut ev = Event {
            base: s.buf,
            ..Event::default()
        };
        s.expect(b'{', "a trace event object `{`")?;
        if !s.first_member()? {
            return take(&ev);
        }
        loop {
            let key = s.key()?;
            let value = s.value()?;
            match key.bytes {
                b"name" => ev.name = value,
                b"ph" if value.is_str() => ev.ph = value.bytes.first().copied().unwrap_or(0),
                b"cat" => ev.cat = value,
                b"id" => ev.id = value,
                b"event_stats" => ev.event_stats = value,
                b"ts" => ev.ts = value,
                b"dur" => ev.dur = value,
                b"pid" => ev.pid = value,
                b"tid" => ev.tid = value,
                b"args" => ev.args = value,
                b"entries" => ev.entries = value,
                _ => {}
            }
            if !s.more(b'}', "`,` or `}` after a member of the event")? {
                return take(&ev);
            }
        }
    }

    fn ts(&self) -> Result<Option<f64>, Stop> {
        self.ts.number()
    }

    /// A field's text: a string, or a number as written; absent and `null` read as empty.
    fn text(value: &Value<'a>) -> Result<Cow<'a, str>, Stop> {
        value.text().ok_or_else(|| invalid("a string", value.at))
    }

    /// The id a `pid` or `tid` field names.
    fn id(value: &Value<'a>) -> Result<Id, Stop> {
        Ok(match value.kind {
            Kind::Absent | Kind::Null => Id::Absent,
            Kind::Num => {
                let text = Self::text(value)?;
                text.parse()
                    .map_or_else(|_| Id::Text(text.into_owned()), Id::Num)
            }
            Kind::Str | Kind::EscapedStr => Id::Text(Self::text(value)?.into_owned()),
            _ => return Err(invalid("a process or thread id", value.at)),
        })
    }

    fn pid(&self) -> Result<Id, Stop> {
        Self::id(&self.pid)
    }

    fn thread(&self) -> Result<(Id, Id), Stop> {
        Ok((self.pid()?, Self::id(&self.tid)?))
    }

    /// Calls `visit` with each member of `args` (anything but an object has none).
    fn walk_args(
        &self,
        mut visit: impl FnMut(RawStr<'a>, Value<'a>) -> Result<(), Stop>,
    ) -> Result<(), Stop> {
        if self.args.kind != Kind::Container {
            return Ok(());
        }
        let mut s = Scanner::new(self.base, self.args.at);
        if s.peek()? != b'{' {
            return Ok(());
        }
        s.pos += 1;
        if !s.first_member()? {
            return Ok(());
        }
        loop {
            let key = s.key()?;
            let value = s.value()?;
            visit(key, value)?;
            if !s.more(b'}', "`,` or `}` after a member of `args`")? {
                return Ok(());
            }
        }
    }

    /// What the default selection takes: kernels by category, XLA ops by an `hlo_op`
    /// argument.
    fn is_kernel_category(&self) -> Result<bool, Stop> {
        let is_kernel = |c: &[u8]| c.trim_ascii().eq_ignore_ascii_case(b"kernel");
        let kernel_category = match self.cat.kind {
            // Compared as bytes: `kernel` is ASCII, so no UTF-8 check is needed.
            Kind::Str => self.cat.bytes.split(|&b| b == b',').any(is_kernel),
            Kind::Absent => false,
            _ => Self::text(&self.cat)?
                .split(',')
                .any(|c| is_kernel(c.as_bytes())),
        };
        if kernel_category {
            return Ok(true);
        }
        // Most events have no `hlo_op`: a substring search rules them out cheaply.
        if self.args.kind != Kind::Container || HLO_OP.find(self.args.bytes).is_none() {
            return Ok(false);
        }
        let mut found = false;
        self.walk_args(|key, value| {
            found |= key.bytes == b"hlo_op" && value.is_str();
            Ok(())
        })?;
        Ok(found)
    }

    /// `args.name` when it is a string (the name a metadata event gives).
    fn arg_name(&self) -> Result<Option<String>, Stop> {
        let mut name = None;
        self.walk_args(|key, value| {
            if key.bytes == b"name" && value.is_str() {
                name = Some(Self::text(&value)?.into_owned());
            }
            Ok(())
        })?;
        Ok(name)
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
    /// Whether this aggregate starts at a cut rather than at the start of the file.
    from_cut: bool,
    /// Whether, starting at a cut, an end event found no begin (it came before the cut).
    orphan_end: bool,
    /// Whether the selection was given (then categories and `hlo_op` do not matter).
    explicit_selection: bool,
    kernels: FxHashMap<String, KernelEntry>,
    open: HashMap<(Id, Id), Vec<Open>>,
    counters: Vec<(Id, String, f64, f64)>,
    process_names: HashMap<Id, String>,
    thread_names: HashMap<(Id, Id), String>,
    display_time_unit: Option<String>,
    /// Top-level values that name the device, by key (see [`names_device`]).
    metadata: Vec<(String, serde_json::Value)>,
    events: u64,
}

impl<'s> Aggregator<'s> {
    fn new(selection: &'s TraceSelection, from_cut: bool) -> Aggregator<'s> {
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
    fn take_event(&mut self, ev: &Event<'_>) -> Result<(), Stop> {
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
    fn absorb(&mut self, later: Aggregator<'_>) {
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
    fn finish(self) -> Result<TraceSamples, String> {
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

    /// Fails after handing out `ok` bytes.
    struct FailsAfter {
        ok: usize,
    }

    impl Read for FailsAfter {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            if self.ok == 0 {
                return Err(std::io::Error::other("disk on fire"));
            }
            let n = out.len().min(self.ok);
            out[..n].fill(b' ');
            self.ok -= n;
            Ok(n)
        }
    }

    #[test]
    fn read_ahead_hands_over_every_byte_and_the_source_error() {
        let mut rng = fastrand::Rng::with_seed(9);
        let bytes: Vec<u8> = (0..3 * ReadAhead::CHUNK + 12345)
            .map(|_| rng.u8(..))
            .collect();
        let mut copy = Vec::new();
        ReadAhead::spawn(std::io::Cursor::new(bytes.clone()))
            .read_to_end(&mut copy)
            .unwrap();
        assert_eq!(copy, bytes);
        let mut sink = Vec::new();
        let err = ReadAhead::spawn(FailsAfter {
            ok: 2 * ReadAhead::CHUNK + 7,
        })
        .read_to_end(&mut sink)
        .unwrap_err();
        assert_eq!(err.to_string(), "disk on fire");
        assert_eq!(sink.len(), 2 * ReadAhead::CHUNK);
        // A trace read through it fails with the position of the failed read.
        let err = read_trace(
            ReadAhead::spawn(FailsAfter { ok: 100 }),
            &TraceSelection::default(),
        )
        .unwrap_err();
        assert_eq!(err, "read failed at byte 0: disk on fire");
    }

    /// A trace with what makes a cut hard: strings and nested arrays holding `},{`, begin
    /// and end events far apart, counters, metadata at the end, keys after the events.
    fn awkward_trace(events: usize, object: bool, seed: u64) -> String {
        let mut rng = fastrand::Rng::with_seed(seed);
        let mut parts = Vec::new();
        let mut open_begins = 0;
        for i in 0..events {
            let ts = i as f64 * 1.5;
            let event = match rng.u8(..10) {
                0 => format!(
                    r#"{{"ph": "X", "cat": "kernel", "name": "k}},{{{}", "pid": 1, "tid": 2, "ts": {ts}, "dur": {}}}"#,
                    i % 3,
                    rng.u32(1..50)
                ),
                1 => format!(
                    r#"{{"ph": "X", "cat": "cpu_op", "name": "op", "ts": {ts}, "dur": 2, "args": {{"list": [{{"a": 1}},{{"b": "}}, {{"}}]}}}}"#
                ),
                2 => {
                    open_begins += 1;
                    format!(
                        r#"{{"ph": "B", "cat": "kernel", "name": "span{}", "pid": 1, "tid": 3, "ts": {ts}}}"#,
                        i % 4
                    )
                }
                3 if open_begins > 0 => {
                    open_begins -= 1;
                    format!(r#"{{"ph": "E", "pid": 1, "tid": 3, "ts": {ts}}}"#)
                }
                4 => format!(
                    r#"{{"ph": "C", "name": "util", "pid": 1, "ts": {ts}, "args": {{"busy": {}, "note": "x"}}}}"#,
                    rng.u32(0..100)
                ),
                5 => format!(
                    r#"{{"ph": "X", "name": "xla", "pid": 2, "tid": 1, "ts": {ts}, "dur": 3, "args": {{"hlo_op": "fusion.{}"}}}}"#,
                    i % 5
                ),
                _ => format!(
                    r#"{{"ph":"X","cat":"kernel","name":"gemm","pid":1,"tid":{},"ts":{ts},"dur":{}.25}}"#,
                    rng.u8(1..3),
                    rng.u32(1..900)
                ),
            };
            parts.push(event);
        }
        parts.push(
            r#"{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "gpu"}}"#.into(),
        );
        let events = parts.join(",\n");
        if object {
            format!(
                r#"{{"schemaVersion": 1, "traceEvents": [{events}], "displayTimeUnit": "ns", "otherData": {{"list": [{{"a": 1}},{{"b": 2}}]}}}}"#
            )
        } else {
            format!("[{events}]")
        }
    }

    #[test]
    fn parallel_reading_gives_what_a_single_reader_gives() {
        let dir = tempfile::tempdir().unwrap();
        let selections = [
            TraceSelection::default(),
            kernels_named("."),
            TraceSelection::new(&[], &[], Some("gpu".into()), None).unwrap(),
        ];
        for (seed, object) in [(1, true), (2, false), (3, true)] {
            let text = awkward_trace(3000, object, seed);
            let path = dir.path().join(format!("trace{seed}.json"));
            std::fs::write(&path, &text).unwrap();
            for selection in &selections {
                let single = read_trace(text.as_bytes(), selection).unwrap();
                assert!(!single.is_empty());
                for workers in 2..=16 {
                    let parallel =
                        read_parallel(&path, text.len() as u64, workers, selection).unwrap();
                    assert_eq!(parallel, single, "seed {seed}, {workers} workers");
                }
            }
        }
    }

    #[test]
    fn parallel_reading_survives_cuts_inside_strings_and_reports_errors_in_order() {
        let dir = tempfile::tempdir().unwrap();
        // The middle of the file is one long name full of `},{`: every guess there is wrong.
        let trap = "}, {".repeat(5000);
        let text = format!(
            r#"[{{"ph": "X", "cat": "kernel", "name": "a", "ts": 1, "dur": 1}}, {{"ph": "X", "cat": "kernel", "name": "{trap}", "ts": 2, "dur": 2}}, {{"ph": "X", "cat": "kernel", "name": "a", "ts": 3, "dur": 3}}]"#
        );
        let path = dir.path().join("trap.json");
        std::fs::write(&path, &text).unwrap();
        let selection = TraceSelection::default();
        let single = read_trace(text.as_bytes(), &selection).unwrap();
        assert_eq!(single.kernel("a").unwrap(), [1000.0, 3000.0]);
        for workers in 2..=6 {
            assert_eq!(
                read_parallel(&path, text.len() as u64, workers, &selection).unwrap(),
                single
            );
        }
        // An error in a later piece is found by the in-order reread, with its event count.
        let mut broken = awkward_trace(2000, true, 4);
        let at = broken.len() * 3 / 4;
        let at = at + broken[at..].find("\"ts\"").unwrap();
        broken.replace_range(at..at + 4, "\"ts\" 5");
        let path = dir.path().join("broken.json");
        std::fs::write(&path, &broken).unwrap();
        let single = read_trace(broken.as_bytes(), &selection).unwrap_err();
        assert!(single.contains("expected `:` after the key"), "{single}");
        for workers in 2..=6 {
            let parallel =
                read_parallel(&path, broken.len() as u64, workers, &selection).unwrap_err();
            assert_eq!(parallel, single);
        }
    }

    /// A random JSON value of the kinds traces hold, with strings that hold brackets, quotes,
    /// escapes and non-ASCII text.
    fn random_value(rng: &mut fastrand::Rng, depth: u32) -> serde_json::Value {
        use serde_json::{Value as J, json};
        let strings = [
            "k",
            "}, {",
            "a\"b",
            "back\\slash",
            "tab\t",
            "\u{e9}t\u{e9}",
            "[x]",
            "",
        ];
        match rng.u8(..if depth > 2 { 5 } else { 7 }) {
            0 => J::Null,
            1 => J::Bool(rng.bool()),
            2 => json!(rng.i64(-1_000_000..1_000_000)),
            3 => json!(rng.f64() * 10f64.powi(rng.i32(-8..14))),
            4 => J::String(strings[rng.usize(..strings.len())].to_string()),
            5 => J::Array(
                (0..rng.usize(..4))
                    .map(|_| random_value(rng, depth + 1))
                    .collect(),
            ),
            _ => J::Object(
                (0..rng.usize(..4))
                    .map(|i| {
                        (
                            format!("{}{i}", strings[rng.usize(..strings.len())]),
                            random_value(rng, depth + 1),
                        )
                    })
                    .collect(),
            ),
        }
    }

    /// Whitespace JSON allows, of random length, between every token.
    fn loosen(text: &str, rng: &mut fastrand::Rng) -> String {
        let mut out = String::new();
        let mut in_string = false;
        let mut escaped = false;
        for c in text.chars() {
            out.push(c);
            if in_string {
                match (escaped, c) {
                    (true, _) => escaped = false,
                    (false, '\\') => escaped = true,
                    (false, '"') => in_string = false,
                    _ => {}
                }
            } else if c == '"' {
                in_string = true;
            } else if matches!(c, ',' | ':' | '{' | '[') {
                for _ in 0..rng.usize(..3) {
                    out.push([' ', '\n', '\t', '\r'][rng.usize(..4)]);
                }
            }
        }
        out
    }

    /// The scanner sees in each event what serde_json sees, and a cut-off event is always
    /// "incomplete", never "invalid".
    #[test]
    fn event_scanner_agrees_with_serde_json() {
        let mut rng = fastrand::Rng::with_seed(3);
        for _ in 0..3000 {
            let mut object = serde_json::Map::new();
            for key in [
                "name", "ph", "cat", "ts", "dur", "pid", "tid", "args", "extra",
            ] {
                if rng.u8(..4) > 0 {
                    object.insert(key.to_string(), random_value(&mut rng, 0));
                }
            }
            let expected = serde_json::Value::Object(object);
            let text = loosen(&expected.to_string(), &mut rng);
            let mut s = Scanner::new(text.as_bytes(), 0);
            let mut seen = Vec::new();
            Event::scan(&mut s, |ev| {
                for (key, value) in [
                    ("name", &ev.name),
                    ("cat", &ev.cat),
                    ("ts", &ev.ts),
                    ("dur", &ev.dur),
                    ("pid", &ev.pid),
                    ("tid", &ev.tid),
                    ("args", &ev.args),
                ] {
                    seen.push((key, *value));
                }
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{e:?}: {text}"));
            assert_eq!(s.pos, text.len(), "{text}");
            for (key, value) in seen {
                let want = &expected[key];
                match want {
                    serde_json::Value::Null if !expected.as_object().unwrap().contains_key(key) => {
                        assert_eq!(value.kind, Kind::Absent, "{key} in {text}");
                    }
                    serde_json::Value::String(w) => {
                        assert_eq!(value.text().as_deref(), Some(w.as_str()), "{key} in {text}");
                    }
                    serde_json::Value::Number(n) => {
                        assert_eq!(value.number(), Ok(n.as_f64()), "{key} in {text}");
                    }
                    serde_json::Value::Array(_) | serde_json::Value::Object(_) => {
                        assert_eq!(value.kind, Kind::Container);
                        let inner: serde_json::Value = serde_json::from_slice(value.bytes).unwrap();
                        assert_eq!(&inner, want, "{key} in {text}");
                    }
                    serde_json::Value::Bool(b) => {
                        assert_eq!(value.kind, if *b { Kind::True } else { Kind::False });
                    }
                    serde_json::Value::Null => assert_eq!(value.kind, Kind::Null),
                }
            }
            let cut = rng.usize(..text.len());
            let mut s = Scanner::new(&text.as_bytes()[..cut], 0);
            assert_eq!(
                Event::scan(&mut s, |_| Ok(())),
                Err(Stop::Incomplete),
                "cut at {cut}: {text}"
            );
        }
    }
}
