//! The walk over a trace document: the top-level object or a bare array of events, read in
//! chunks into one buffer and scanned (`json_scan`) value by value. Each event goes to the
//! aggregate; a walk that started at a cut, or reaches one, says so, for the parallel reader.

use std::borrow::Cow;
use std::fmt;
use std::io::Read;

use super::aggregate::Aggregator;
use super::event::{Event, invalid};
use crate::import::trace::json_scan::{RawStr, Scanner, Stop};

/// Where a walk over the input begins.
#[derive(Debug, Clone, Copy)]
pub(super) enum Start {
    /// At the first byte of the file.
    Document,
    /// At an event inside `traceEvents` (of the top-level object, or of a bare array).
    InsideEvents { object: bool },
}

/// Where a walk over the input ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Walked {
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

/// The input, read in chunks into one buffer that only ever holds the value being scanned
/// (a chunk, or more when one value is larger).
pub(super) struct Input<R> {
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

/// The most bytes one value (an event, a skipped top-level value) may take in the buffer: far
/// above any real one, and a bound for a decompressed stream that never lets a value end (a
/// small gzip of a gigabyte of whitespace or digits).
pub(super) const MAX_VALUE_BYTES: usize = 256 << 20;

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
    pub(super) fn new(reader: R, start: u64, cuts: Vec<u64>) -> Input<R> {
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
            if self.buf.len() >= MAX_VALUE_BYTES {
                return Err(Failure::Read(format!(
                    "the value at byte {} goes on past {} MiB without ending, more than kgate holds of one trace value; this is not a trace kgate can read (damaged, or not a trace)",
                    self.dropped,
                    MAX_VALUE_BYTES >> 20
                )));
            }
            self.buf
                .resize((self.buf.len() * 2).min(MAX_VALUE_BYTES), 0);
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
        loop {
            let mut scanner = Scanner::new(&self.buf[..self.end], self.pos);
            let found = scanner.peek();
            // The whitespace passed is consumed even when the buffer ends first, so that a run
            // of it (however long) streams through instead of filling the buffer.
            self.pos = scanner.pos;
            match found {
                Ok(byte) => return Ok(Some(byte)),
                Err(Stop::Incomplete) => {
                    if !self.fill().map_err(|f| f.describe("invalid trace"))? {
                        return Ok(None);
                    }
                }
                Err(Stop::Invalid { expected, at }) => {
                    let offset = self.dropped + at as u64;
                    return Err(Failure::Invalid { expected, offset }.describe("invalid trace"));
                }
            }
        }
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
    pub(super) fn walk(
        &mut self,
        agg: &mut Aggregator<'_>,
        start: Start,
    ) -> Result<Walked, String> {
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

/// The decoded text of the string (or key) that `read` scans.
fn owned_text<'a>(
    s: &mut Scanner<'a>,
    read: impl FnOnce(&mut Scanner<'a>) -> Result<RawStr<'a>, Stop>,
) -> Result<String, Stop> {
    let at = s.pos;
    let raw = read(s)?;
    raw.text().map(Cow::into_owned).map_err(|e| invalid(e, at))
}
