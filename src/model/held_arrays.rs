//! Writing a results document whose largest arrays are held elsewhere (a trace import's
//! columns, most of them in a temporary file) without gathering them into memory first.
//!
//! The document is still the serialization of [`RunResults`] (field names, order and layout
//! come from its types, so there is nothing to keep in step); only the numbers of the arrays
//! a [`HeldArrays`] holds are streamed into it as the serializer reaches them. A
//! `serde_json` formatter follows the path of each array (`benchmarks[i].metrics[j].values`)
//! and, at one that is held, writes the held numbers in place of the document's own.
//!
//! In the compact layout (the default) the held numbers are formatted ahead of the writer,
//! piece by piece, by a thread per core (up to four) taking the pieces in turn: formatting
//! millions of numbers is most of the writing, which would otherwise run on one core after
//! the import's parallel read. The pieces are bounded, so the memory is too.

use std::cell::Cell;
use std::io::{self, Write};
use std::ops::Range;
use std::path::Path;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use serde::Serialize;
use serde_json::ser::{CharEscape, CompactFormatter, Formatter, PrettyFormatter};

use super::fsutil::Overwrite;
use super::results::{JsonLayout, ResultsError, RunResults, whole_number};

/// The arrays of a benchmark's entries that can be held elsewhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Field {
    /// `metrics[j].values`
    MetricValues,
    /// `metrics[j].repetition`
    MetricRepetition,
    /// `kernel_windows[j].start_ns`
    WindowStarts,
    /// `kernel_windows[j].end_ns`
    WindowEnds,
    /// `counters[j].t_ns`
    SeriesTimes,
    /// `counters[j].value`
    SeriesValues,
}

impl Field {
    /// Where the field's arrays come in a benchmark as it is written: its collection's place
    /// among the benchmark's keys, then the field's among its entry's keys.
    fn written_order(self) -> (u8, u8) {
        match self {
            Field::MetricValues => (0, 0),
            Field::MetricRepetition => (0, 1),
            Field::SeriesTimes => (1, 0),
            Field::SeriesValues => (1, 1),
            Field::WindowStarts => (2, 0),
            Field::WindowEnds => (2, 1),
        }
    }

    /// The field of `key` in the entries of `collection`.
    fn of(collection: &str, key: &str) -> Option<Field> {
        Some(match (collection, key) {
            ("metrics", "values") => Field::MetricValues,
            ("metrics", "repetition") => Field::MetricRepetition,
            ("kernel_windows", "start_ns") => Field::WindowStarts,
            ("kernel_windows", "end_ns") => Field::WindowEnds,
            ("counters", "t_ns") => Field::SeriesTimes,
            ("counters", "value") => Field::SeriesValues,
            _ => return None,
        })
    }
}

/// Where an array is: benchmark `benchmark`'s entry `entry` of the field's collection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ArrayAt {
    pub benchmark: usize,
    pub entry: usize,
    pub field: Field,
}

/// One number of a held array.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Number {
    /// A measurement, time or reading (written as the results file writes them: whole
    /// numbers without a fraction).
    Value(f64),
    /// A repetition number.
    Repetition(u32),
}

impl ArrayAt {
    /// Orders arrays as the document reaches them.
    fn written_order(&self) -> (usize, u8, usize, u8) {
        let (collection, field) = self.field.written_order();
        (self.benchmark, collection, self.entry, field)
    }
}

/// Arrays of a results document kept outside it. The document must hold an entry at each
/// held array's place, with the key present: its own numbers there are replaced. Shared
/// with the threads that format the numbers ahead of the writer.
pub trait HeldArrays: Sync {
    /// Whether the array at `at` is held here.
    fn holds(&self, at: &ArrayAt) -> bool;
    /// Every array held here, in any order.
    fn places(&self) -> Vec<ArrayAt>;
    /// How many stored values the array at `at` is read from: its numbers, or more where
    /// some are left out as they are read (launches outside the readings' span).
    fn stored(&self, at: &ArrayAt) -> usize;
    /// Hands each number read from the stored values `range` of the array at `at` to
    /// `emit`, in order: consecutive ranges hand over consecutive numbers.
    fn emit_part(
        &self,
        at: &ArrayAt,
        range: Range<usize>,
        emit: &mut dyn FnMut(Number) -> io::Result<()>,
    ) -> io::Result<()>;
    /// Hands each number of the array at `at` to `emit`, in order.
    fn emit(&self, at: &ArrayAt, emit: &mut dyn FnMut(Number) -> io::Result<()>) -> io::Result<()> {
        self.emit_part(at, 0..self.stored(at), emit)
    }
    /// A reader of the values of the array at `at`, in order, when it is held here and holds
    /// values (not repetition numbers): for a stage that walks several arrays side by side.
    fn values(&self, at: &ArrayAt) -> Option<Box<dyn ValueReader + '_>>;
}

/// Values of a held array read one at a time, in order.
pub trait ValueReader {
    /// The next value; `None` after the last.
    fn next(&mut self) -> io::Result<Option<f64>>;
}

/// [`RunResults::save_as`] for results whose largest arrays `held` keeps elsewhere: they are
/// streamed into the file, never gathered in memory. A held number that is not finite fails
/// the write, and nothing is replaced.
pub fn save(
    results: &RunResults,
    path: &Path,
    overwrite: Overwrite,
    layout: JsonLayout,
    held: &dyn HeldArrays,
) -> Result<(), ResultsError> {
    results.save_through(path, overwrite, |out| match layout {
        JsonLayout::Compact => serialize_compact(out, results, held).map(drop),
        JsonLayout::Pretty => serialize_with(out, PrettyFormatter::new(), results, held),
    })
}

/// How many held arrays were written from pieces formatted ahead, and how many formatted as
/// the serializer reached them (an array the order of pieces did not foresee: none, unless
/// [`Field::written_order`] and the document drift apart).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Formatted {
    pub ahead: usize,
    pub in_place: usize,
}

/// Stored values per piece formatted ahead: a few hundred kilobytes of text.
const PIECE_VALUES: usize = 16_384;
/// Pieces a formatting thread may have waiting for the writer.
const PIECES_WAITING: usize = 2;

/// [`serialize_with`] in the compact layout, the held numbers formatted ahead on other
/// threads where there are cores for them. The bytes are the same either way.
pub fn serialize_compact<W: Write>(
    out: W,
    results: &RunResults,
    held: &dyn HeldArrays,
) -> io::Result<Formatted> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
    serialize_in_pieces(out, results, held, threads, PIECE_VALUES)
}

/// [`serialize_compact`] with `threads` threads formatting pieces of `piece_values` stored
/// values (fewer than two threads: none, the serializer formats as it goes).
pub fn serialize_in_pieces<W: Write>(
    out: W,
    results: &RunResults,
    held: &dyn HeldArrays,
    threads: usize,
    piece_values: usize,
) -> io::Result<Formatted> {
    let piece_values = piece_values.max(1);
    let mut places = held.places();
    if threads < 2 || places.is_empty() {
        return serialize_streaming(out, CompactFormatter, results, held, None);
    }
    places.sort_unstable_by_key(ArrayAt::written_order);
    let pieces: Vec<(ArrayAt, Range<usize>)> = places
        .into_iter()
        .flat_map(|at| {
            let stored = held.stored(&at);
            (0..stored.div_ceil(piece_values).max(1)).map(move |k| {
                let from = k * piece_values;
                (at, from..(from + piece_values).min(stored))
            })
        })
        .collect();
    std::thread::scope(|scope| {
        let lanes = (0..threads)
            .map(|lane| {
                let (send, receive) = sync_channel(PIECES_WAITING);
                let pieces = &pieces;
                scope.spawn(move || format_lane(held, pieces, lane, threads, send));
                receive
            })
            .collect();
        let ahead = Ahead {
            pieces: &pieces,
            next: 0,
            lanes,
        };
        // The serializer, and with it the receiving ends, is dropped before the threads are
        // joined: a thread formatting for a writer that failed stops at its next piece.
        serialize_streaming(out, CompactFormatter, results, held, Some(ahead))
    })
}

/// Serializes `results` into `out` through `formatter`, with the arrays `held` holds streamed
/// in. Fails with the first write or read error, or at a held number that is not finite.
pub fn serialize_with<W: Write, F: Formatter>(
    out: W,
    formatter: F,
    results: &RunResults,
    held: &dyn HeldArrays,
) -> io::Result<()> {
    serialize_streaming(out, formatter, results, held, None).map(drop)
}

fn serialize_streaming<W: Write, F: Formatter>(
    out: W,
    formatter: F,
    results: &RunResults,
    held: &dyn HeldArrays,
    ahead: Option<Ahead<'_>>,
) -> io::Result<Formatted> {
    let formatted = Cell::new(Formatted::default());
    let formatter = Streaming {
        inner: formatter,
        held,
        path: Vec::new(),
        key: None,
        replacing: None,
        ahead,
        formatted: &formatted,
    };
    let mut serializer = serde_json::Serializer::with_formatter(out, formatter);
    results
        .serialize(&mut serializer)
        .map_err(io::Error::from)?;
    Ok(formatted.get())
}

/// Formats the pieces that fall to `lane` (every `lanes`th), in order, for the writer: each
/// number with a `,` before it. Stops when the writer is gone, or after handing over a
/// failure in its piece's place.
fn format_lane(
    held: &dyn HeldArrays,
    pieces: &[(ArrayAt, Range<usize>)],
    lane: usize,
    lanes: usize,
    send: SyncSender<io::Result<Vec<u8>>>,
) {
    for (at, range) in pieces.iter().skip(lane).step_by(lanes) {
        let mut bytes = Vec::new();
        let formatted = held.emit_part(at, range.clone(), &mut |number| {
            bytes.push(b',');
            write_number(&mut CompactFormatter, &mut bytes, number)
        });
        let failed = formatted.is_err();
        if send.send(formatted.map(|()| bytes)).is_err() || failed {
            return;
        }
    }
}

/// The pieces being formatted ahead, in the order the writer takes them, the next it
/// expects, and a receiving end per thread (piece `k` comes from lane `k % lanes`).
struct Ahead<'p> {
    pieces: &'p [(ArrayAt, Range<usize>)],
    next: usize,
    lanes: Vec<Receiver<io::Result<Vec<u8>>>>,
}

impl Ahead<'_> {
    /// Writes the numbers of the array at `at` from its pieces; `None` when its pieces are
    /// not the next ones (the writer formats it in place).
    fn write<W: ?Sized + Write>(&mut self, writer: &mut W, at: &ArrayAt) -> Option<io::Result<()>> {
        if self
            .pieces
            .get(self.next)
            .is_none_or(|(next, _)| next != at)
        {
            return None;
        }
        let mut first = true;
        while self
            .pieces
            .get(self.next)
            .is_some_and(|(next, _)| next == at)
        {
            let lane = &self.lanes[self.next % self.lanes.len()];
            self.next += 1;
            let bytes = match lane.recv() {
                Ok(Ok(bytes)) => bytes,
                Ok(Err(e)) => return Some(Err(e)),
                Err(_) => {
                    return Some(Err(io::Error::other(
                        "a thread formatting the numbers stopped",
                    )));
                }
            };
            // The array's first number has no `,` before it.
            let text = match bytes.split_first() {
                Some((_, rest)) if first => rest,
                _ => &bytes[..],
            };
            first &= bytes.is_empty();
            if let Err(e) = writer.write_all(text) {
                return Some(Err(e));
            }
        }
        Some(Ok(()))
    }
}

/// Writes one held number as the serializer would have.
fn write_number<W: ?Sized + Write, F: Formatter>(
    formatter: &mut F,
    writer: &mut W,
    number: Number,
) -> io::Result<()> {
    match number {
        Number::Repetition(r) => formatter.write_u32(writer, r),
        Number::Value(v) if !v.is_finite() => Err(io::Error::other(format!(
            "a held number is not finite ({v})"
        ))),
        Number::Value(v) => match whole_number(v) {
            Some(i) => formatter.write_i64(writer, i),
            None => formatter.write_f64(writer, v),
        },
    }
}

/// Where the serializer is: the objects and arrays it is inside.
enum Frame {
    /// An object, and the key of the member being written.
    Object(String),
    /// An array, and the index of the element being written.
    Array(usize),
}

struct Streaming<'h, F> {
    inner: F,
    held: &'h dyn HeldArrays,
    path: Vec<Frame>,
    /// The key being written, while one is.
    key: Option<String>,
    /// The held array whose place the serializer is inside: its own numbers are dropped.
    replacing: Option<ArrayAt>,
    /// The pieces formatted on other threads, in the compact layout.
    ahead: Option<Ahead<'h>>,
    /// Counts where the held arrays were formatted.
    formatted: &'h Cell<Formatted>,
}

impl<F: Formatter> Streaming<'_, F> {
    /// The held array that starts here, if the array being begun is one.
    fn held_here(&self) -> Option<ArrayAt> {
        let [
            Frame::Object(root),
            Frame::Array(benchmark),
            Frame::Object(collection),
            Frame::Array(entry),
            Frame::Object(key),
        ] = self.path.as_slice()
        else {
            return None;
        };
        if root != "benchmarks" {
            return None;
        }
        let at = ArrayAt {
            benchmark: *benchmark,
            entry: *entry,
            field: Field::of(collection, key)?,
        };
        self.held.holds(&at).then_some(at)
    }

    /// Writes the held array's numbers, as the serializer would have.
    fn write_held<W: ?Sized + Write>(&mut self, writer: &mut W, at: &ArrayAt) -> io::Result<()> {
        let ahead = self.ahead.as_mut().and_then(|a| a.write(writer, at));
        let mut formatted = self.formatted.get();
        if ahead.is_some() {
            formatted.ahead += 1;
        } else {
            formatted.in_place += 1;
        }
        self.formatted.set(formatted);
        if let Some(written) = ahead {
            return written;
        }
        let inner = &mut self.inner;
        let mut first = true;
        self.held.emit(at, &mut |number| {
            inner.begin_array_value(writer, first)?;
            first = false;
            write_number(inner, writer, number)?;
            inner.end_array_value(writer)
        })
    }
}

/// Forwards a formatter call to the inner formatter, unless inside a held array's place.
macro_rules! forward {
    ($self:ident . $method:ident ( $writer:ident $(, $arg:expr)* )) => {
        if $self.replacing.is_some() {
            Ok(())
        } else {
            $self.inner.$method($writer $(, $arg)*)
        }
    };
}

impl<F: Formatter> Formatter for Streaming<'_, F> {
    fn write_null<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        forward!(self.write_null(w))
    }
    fn write_bool<W: ?Sized + Write>(&mut self, w: &mut W, v: bool) -> io::Result<()> {
        forward!(self.write_bool(w, v))
    }
    fn write_i8<W: ?Sized + Write>(&mut self, w: &mut W, v: i8) -> io::Result<()> {
        forward!(self.write_i8(w, v))
    }
    fn write_i16<W: ?Sized + Write>(&mut self, w: &mut W, v: i16) -> io::Result<()> {
        forward!(self.write_i16(w, v))
    }
    fn write_i32<W: ?Sized + Write>(&mut self, w: &mut W, v: i32) -> io::Result<()> {
        forward!(self.write_i32(w, v))
    }
    fn write_i64<W: ?Sized + Write>(&mut self, w: &mut W, v: i64) -> io::Result<()> {
        forward!(self.write_i64(w, v))
    }
    fn write_i128<W: ?Sized + Write>(&mut self, w: &mut W, v: i128) -> io::Result<()> {
        forward!(self.write_i128(w, v))
    }
    fn write_u8<W: ?Sized + Write>(&mut self, w: &mut W, v: u8) -> io::Result<()> {
        forward!(self.write_u8(w, v))
    }
    fn write_u16<W: ?Sized + Write>(&mut self, w: &mut W, v: u16) -> io::Result<()> {
        forward!(self.write_u16(w, v))
    }
    fn write_u32<W: ?Sized + Write>(&mut self, w: &mut W, v: u32) -> io::Result<()> {
        forward!(self.write_u32(w, v))
    }
    fn write_u64<W: ?Sized + Write>(&mut self, w: &mut W, v: u64) -> io::Result<()> {
        forward!(self.write_u64(w, v))
    }
    fn write_u128<W: ?Sized + Write>(&mut self, w: &mut W, v: u128) -> io::Result<()> {
        forward!(self.write_u128(w, v))
    }
    fn write_f32<W: ?Sized + Write>(&mut self, w: &mut W, v: f32) -> io::Result<()> {
        forward!(self.write_f32(w, v))
    }
    fn write_f64<W: ?Sized + Write>(&mut self, w: &mut W, v: f64) -> io::Result<()> {
        forward!(self.write_f64(w, v))
    }
    fn write_number_str<W: ?Sized + Write>(&mut self, w: &mut W, v: &str) -> io::Result<()> {
        forward!(self.write_number_str(w, v))
    }
    fn begin_string<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        forward!(self.begin_string(w))
    }
    fn end_string<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        forward!(self.end_string(w))
    }
    fn write_string_fragment<W: ?Sized + Write>(&mut self, w: &mut W, s: &str) -> io::Result<()> {
        if let Some(key) = &mut self.key {
            key.push_str(s);
        }
        forward!(self.write_string_fragment(w, s))
    }
    fn write_char_escape<W: ?Sized + Write>(&mut self, w: &mut W, e: CharEscape) -> io::Result<()> {
        if let Some(key) = &mut self.key {
            // No key kgate writes has an escape: mark it so that it matches nothing.
            key.push('\\');
        }
        forward!(self.write_char_escape(w, e))
    }
    fn write_byte_array<W: ?Sized + Write>(&mut self, w: &mut W, v: &[u8]) -> io::Result<()> {
        forward!(self.write_byte_array(w, v))
    }
    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        if self.replacing.is_none()
            && let Some(at) = self.held_here()
        {
            self.inner.begin_array(w)?;
            self.replacing = Some(at);
            return Ok(());
        }
        self.path.push(Frame::Array(0));
        forward!(self.begin_array(w))
    }
    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        // Held arrays hold numbers only: the first `]` inside one is its own.
        if let Some(at) = self.replacing.take() {
            self.write_held(w, &at)?;
            return self.inner.end_array(w);
        }
        self.path.pop();
        self.inner.end_array(w)
    }
    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if self.replacing.is_none()
            && let Some(Frame::Array(index)) = self.path.last_mut()
            && !first
        {
            *index += 1;
        }
        forward!(self.begin_array_value(w, first))
    }
    fn end_array_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        forward!(self.end_array_value(w))
    }
    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.path.push(Frame::Object(String::new()));
        forward!(self.begin_object(w))
    }
    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.path.pop();
        forward!(self.end_object(w))
    }
    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.key = Some(String::new());
        forward!(self.begin_object_key(w, first))
    }
    fn end_object_key<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        if let (Some(key), Some(Frame::Object(current))) = (self.key.take(), self.path.last_mut()) {
            *current = key;
        }
        forward!(self.end_object_key(w))
    }
    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        forward!(self.begin_object_value(w))
    }
    fn end_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        forward!(self.end_object_value(w))
    }
    fn write_raw_fragment<W: ?Sized + Write>(&mut self, w: &mut W, s: &str) -> io::Result<()> {
        forward!(self.write_raw_fragment(w, s))
    }
}
