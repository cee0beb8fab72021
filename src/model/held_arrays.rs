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
//!
//! Results held whole in memory are written the same way when they hold many numbers
//! ([`RunResults::save_as`]): their own arrays are served as held ones, beside a copy of the
//! document without them.

use std::cell::Cell;
use std::io::{self, Write};
use std::ops::Range;
use std::path::Path;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use serde::Serialize;
use serde_json::ser::{CharEscape, CompactFormatter, Formatter, PrettyFormatter};

use super::fsutil::Overwrite;
use super::results::{
    BenchmarkResult, CounterSeries, JsonLayout, KernelWindows, MetricSamples, ResultsError,
    RunResults, whole_number,
};

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

/// The fewest numbers in results held in memory for which [`RunResults::save_as`] formats them
/// ahead on other threads: below it, starting the threads costs more than it saves.
const FORMAT_AHEAD_FROM: usize = 1 << 16;

/// The fewest numbers per array, on average, for which [`RunResults::save_as`] formats them
/// ahead. Shorter arrays gain nothing: the copy of the document without them and the walk
/// that follows each array's place cost what the threads save. Measured turn by turn: an
/// Nsight Compute page of 500 values per metric 0.55 -> 0.45 s; a merge of 200,000 metrics
/// of 30 samples 0.84 -> 0.88 s and 108 -> 166 MB, so it is left to serde alone.
const FORMAT_AHEAD_PER_ARRAY: usize = 256;

impl RunResults {
    /// Writes the results atomically, streamed into the destination so that the document is
    /// never held whole in memory; refuses results holding a number JSON cannot carry (see
    /// [`RunResults::non_finite`]), so that kgate never writes a file it cannot read. In the
    /// compact layout, results of many numbers have them formatted ahead on other threads,
    /// the same bytes: writing an Nsight Compute page's 16 million samples on one thread took
    /// longer than reading the page.
    pub fn save_as(
        &self,
        path: &Path,
        overwrite: Overwrite,
        layout: JsonLayout,
    ) -> Result<(), ResultsError> {
        let own = OwnArrays(self);
        let many = || {
            let (numbers, arrays) = own.sizes();
            numbers >= FORMAT_AHEAD_FROM && numbers >= arrays * FORMAT_AHEAD_PER_ARRAY
        };
        if layout == JsonLayout::Compact && formatting_threads() > 1 && many() {
            // Searched before anything is written: standard output and other streams are
            // written through, and a failed write would leave half a document there.
            if let Some(what) = self.non_finite() {
                return Err(ResultsError::NotFinite {
                    path: path.to_path_buf(),
                    what,
                });
            }
            return save(&own.hollow(), path, overwrite, layout, &own);
        }
        self.save_through(path, overwrite, |out| {
            match layout {
                JsonLayout::Compact => serde_json::to_writer(out, self),
                JsonLayout::Pretty => serde_json::to_writer_pretty(out, self),
            }
            .map_err(io::Error::from)
        })
    }
}

/// The numbers of results held in memory, served as held arrays: metric values, series times
/// and values, window starts and ends (repetition numbers stay in the document, most often
/// left out of it as one per value).
struct OwnArrays<'r>(&'r RunResults);

impl OwnArrays<'_> {
    fn array(&self, at: &ArrayAt) -> Option<&[f64]> {
        let b = self.0.benchmarks.get(at.benchmark)?;
        let (metric, series, windows) = (
            || b.metrics.get(at.entry),
            || b.counters.get(at.entry),
            || b.kernel_windows.get(at.entry),
        );
        Some(match at.field {
            Field::MetricValues => &metric()?.values,
            Field::MetricRepetition => return None,
            Field::SeriesTimes => &series()?.t_ns,
            Field::SeriesValues => &series()?.value,
            Field::WindowStarts => &windows()?.start_ns,
            Field::WindowEnds => &windows()?.end_ns,
        })
    }

    /// How many numbers the arrays served here hold, and how many arrays there are.
    fn sizes(&self) -> (usize, usize) {
        let mut sizes = (0, 0);
        for b in &self.0.benchmarks {
            let lengths = b.metrics.iter().map(|m| m.values.len()).chain(
                b.counters
                    .iter()
                    .flat_map(|c| [c.t_ns.len(), c.value.len()]),
            );
            let lengths = lengths.chain(
                b.kernel_windows
                    .iter()
                    .flat_map(|k| [k.start_ns.len(), k.end_ns.len()]),
            );
            for n in lengths {
                sizes = (sizes.0 + n, sizes.1 + 1);
            }
        }
        sizes
    }

    /// The document without the arrays served here (each left empty in its place). Every
    /// field is named, so that a field added to the results is a compile error here rather
    /// than a field the file loses.
    fn hollow(&self) -> RunResults {
        let RunResults {
            schema_version,
            kgate_version,
            created,
            environment,
            benchmarks,
        } = self.0;
        RunResults {
            schema_version: *schema_version,
            kgate_version: kgate_version.clone(),
            created: created.clone(),
            environment: environment.clone(),
            benchmarks: benchmarks.iter().map(hollow_benchmark).collect(),
        }
    }
}

fn hollow_benchmark(b: &BenchmarkResult) -> BenchmarkResult {
    let BenchmarkResult {
        name,
        parameters,
        status,
        failure,
        correctness,
        warmup,
        repetitions,
        metrics,
        counters,
        kernel_windows,
        provenance,
        artifacts,
        looks,
        identity,
        seconds,
    } = b;
    BenchmarkResult {
        name: name.clone(),
        parameters: parameters.clone(),
        status: *status,
        failure: failure.clone(),
        correctness: correctness.clone(),
        warmup: *warmup,
        repetitions: *repetitions,
        metrics: metrics.iter().map(hollow_metric).collect(),
        counters: counters.iter().map(hollow_series).collect(),
        kernel_windows: kernel_windows.iter().map(hollow_windows).collect(),
        provenance: provenance.clone(),
        artifacts: artifacts.clone(),
        looks: looks.clone(),
        identity: identity.clone(),
        seconds: *seconds,
    }
}

fn hollow_metric(m: &MetricSamples) -> MetricSamples {
    let MetricSamples {
        name,
        unit,
        source,
        direction,
        gate,
        values: _,
        repetition,
    } = m;
    MetricSamples {
        name: name.clone(),
        unit: unit.clone(),
        source: *source,
        direction: *direction,
        gate: gate.clone(),
        values: Vec::new(),
        repetition: repetition.clone(),
    }
}

fn hollow_series(c: &CounterSeries) -> CounterSeries {
    let CounterSeries {
        counter,
        repetition,
        unit,
        bits,
        core,
        sampling,
        t_ns: _,
        value: _,
    } = c;
    CounterSeries {
        counter: counter.clone(),
        repetition: *repetition,
        unit: unit.clone(),
        bits: *bits,
        core: *core,
        sampling: *sampling,
        t_ns: Vec::new(),
        value: Vec::new(),
    }
}

fn hollow_windows(k: &KernelWindows) -> KernelWindows {
    let KernelWindows {
        kernel,
        repetition,
        start_ns: _,
        end_ns: _,
        counters_of,
    } = k;
    KernelWindows {
        kernel: kernel.clone(),
        repetition: *repetition,
        start_ns: Vec::new(),
        end_ns: Vec::new(),
        counters_of: counters_of.clone(),
    }
}

impl HeldArrays for OwnArrays<'_> {
    fn holds(&self, at: &ArrayAt) -> bool {
        self.array(at).is_some()
    }

    fn places(&self) -> Vec<ArrayAt> {
        let mut places = Vec::new();
        for (i, b) in self.0.benchmarks.iter().enumerate() {
            let at = |entry, field| ArrayAt {
                benchmark: i,
                entry,
                field,
            };
            for j in 0..b.metrics.len() {
                places.push(at(j, Field::MetricValues));
            }
            for j in 0..b.counters.len() {
                places.extend([at(j, Field::SeriesTimes), at(j, Field::SeriesValues)]);
            }
            for j in 0..b.kernel_windows.len() {
                places.extend([at(j, Field::WindowStarts), at(j, Field::WindowEnds)]);
            }
        }
        places
    }

    fn stored(&self, at: &ArrayAt) -> usize {
        self.array(at).map_or(0, <[f64]>::len)
    }

    fn emit_part(
        &self,
        at: &ArrayAt,
        range: Range<usize>,
        emit: &mut dyn FnMut(Number) -> io::Result<()>,
    ) -> io::Result<()> {
        let values = self.array(at).unwrap_or_default();
        values
            .get(range)
            .unwrap_or_default()
            .iter()
            .try_for_each(|&v| emit(Number::Value(v)))
    }

    fn values(&self, at: &ArrayAt) -> Option<Box<dyn ValueReader + '_>> {
        Some(Box::new(SliceReader(self.array(at)?)))
    }
}

/// The values of an array in memory, read one at a time.
pub(crate) struct SliceReader<'a>(pub(crate) &'a [f64]);

impl ValueReader for SliceReader<'_> {
    fn next(&mut self) -> io::Result<Option<f64>> {
        Ok(self.0.split_first().map(|(&v, rest)| {
            self.0 = rest;
            v
        }))
    }
}

/// How many held arrays were written from pieces formatted ahead, and how many formatted as
/// the serializer reached them (an array the order of pieces did not foresee: none, unless
/// [`Field::written_order`] and the document drift apart).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Formatted {
    pub ahead: usize,
    pub in_place: usize,
}

/// Stored values per piece formatted ahead: a few hundred kilobytes of text. A longer array
/// is cut into several pieces, shorter ones share a piece.
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
    serialize_in_pieces(out, results, held, formatting_threads(), PIECE_VALUES)
}

/// Threads that format numbers ahead of the writer: one per core, up to four.
fn formatting_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(4))
}

/// The arrays' numbers cut into pieces of about `piece_values` stored values, in the order
/// the document reaches them: `parts` holds each array's ranges (at least one per array, so
/// that an empty one is found too), and piece `k` is `parts[starts[k]..starts[k + 1]]`.
struct Pieces {
    parts: Vec<(ArrayAt, Range<usize>)>,
    starts: Vec<usize>,
}

impl Pieces {
    fn new(held: &dyn HeldArrays, piece_values: usize) -> Pieces {
        let mut places = held.places();
        places.sort_unstable_by_key(ArrayAt::written_order);
        let mut pieces = Pieces {
            parts: Vec::with_capacity(places.len()),
            starts: vec![0],
        };
        let mut filled = 0;
        for at in places {
            let stored = held.stored(&at);
            let mut from = 0;
            loop {
                let to = stored.min(from + piece_values - filled);
                pieces.parts.push((at, from..to));
                // Every part counts one value at least, so that a piece of many empty
                // arrays is bounded too.
                filled += (to - from).max(1);
                if filled >= piece_values {
                    pieces.starts.push(pieces.parts.len());
                    filled = 0;
                }
                from = to;
                if from >= stored {
                    break;
                }
            }
        }
        if filled > 0 {
            pieces.starts.push(pieces.parts.len());
        }
        pieces
    }

    fn count(&self) -> usize {
        self.starts.len() - 1
    }

    fn piece(&self, k: usize) -> &[(ArrayAt, Range<usize>)] {
        &self.parts[self.starts[k]..self.starts[k + 1]]
    }
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
    if threads < 2 || held.places().is_empty() {
        return serialize_streaming(out, CompactFormatter, results, held, None);
    }
    let pieces = Pieces::new(held, piece_values.max(1));
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
            next_part: 0,
            next_piece: 0,
            text: Vec::new(),
            ends: Vec::new(),
            taken: 0,
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

/// A piece formatted ahead: the text of its parts, each number with a `,` before it, and
/// where each part's text ends.
type FormattedPiece = io::Result<(Vec<u8>, Vec<usize>)>;

/// Formats the pieces that fall to `lane` (every `lanes`th), in order, for the writer. Stops
/// when the writer is gone, or after handing over a failure in its piece's place.
fn format_lane(
    held: &dyn HeldArrays,
    pieces: &Pieces,
    lane: usize,
    lanes: usize,
    send: SyncSender<FormattedPiece>,
) {
    for k in (lane..pieces.count()).step_by(lanes) {
        let piece = pieces.piece(k);
        let mut bytes = Vec::new();
        let mut ends = Vec::new();
        let formatted = piece.iter().try_for_each(|(at, range)| {
            held.emit_part(at, range.clone(), &mut |number| {
                bytes.push(b',');
                write_number(&mut CompactFormatter, &mut bytes, number)
            })?;
            ends.push(bytes.len());
            Ok(())
        });
        let failed = formatted.is_err();
        if send.send(formatted.map(|()| (bytes, ends))).is_err() || failed {
            return;
        }
    }
}

/// The pieces being formatted ahead, the next part the writer expects, the text of the piece
/// it is in and how much of it is taken, and a receiving end per thread (piece `k` comes from
/// lane `k % lanes`).
struct Ahead<'p> {
    pieces: &'p Pieces,
    next_part: usize,
    next_piece: usize,
    text: Vec<u8>,
    ends: Vec<usize>,
    taken: usize,
    lanes: Vec<Receiver<FormattedPiece>>,
}

impl Ahead<'_> {
    /// Writes the numbers of the array at `at` from its pieces; `None` when its parts are
    /// not the next ones (the writer formats it in place).
    fn write<W: ?Sized + Write>(&mut self, writer: &mut W, at: &ArrayAt) -> Option<io::Result<()>> {
        let is_next = |ahead: &Self| {
            ahead
                .pieces
                .parts
                .get(ahead.next_part)
                .is_some_and(|(next, _)| next == at)
        };
        if !is_next(self) {
            return None;
        }
        let mut first = true;
        while is_next(self) {
            if self.next_part == self.pieces.starts[self.next_piece] {
                // The part begins a piece: receive it.
                let lane = &self.lanes[self.next_piece % self.lanes.len()];
                self.next_piece += 1;
                (self.text, self.ends) = match lane.recv() {
                    Ok(Ok(piece)) => piece,
                    Ok(Err(e)) => return Some(Err(e)),
                    Err(_) => {
                        return Some(Err(io::Error::other(
                            "a thread formatting the numbers stopped",
                        )));
                    }
                };
                self.taken = 0;
            }
            let in_piece = self.next_part - self.pieces.starts[self.next_piece - 1];
            let end = self.ends[in_piece];
            let part = &self.text[self.taken..end];
            self.taken = end;
            self.next_part += 1;
            // The array's first number has no `,` before it.
            let text = match part.split_first() {
                Some((_, rest)) if first => rest,
                _ => part,
            };
            first &= part.is_empty();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::metric::{Direction, GateRule, Source};

    /// Results of every shape the own arrays serve: metrics of no, one and thousands of values
    /// (whole numbers, fractions, -0, extremes), listed repetition numbers, counter series
    /// and kernel windows, a benchmark of none of them.
    fn results(rng: &mut fastrand::Rng, benchmarks: usize) -> RunResults {
        let mut lengths = fastrand::Rng::with_seed(rng.u64(..));
        let mut number = || match rng.u8(0..6) {
            0 => f64::from(rng.u32(..)),
            1 => rng.f64() * 1e6,
            2 => -0.0,
            3 => [1e300, 5e-324, f64::MAX, -2.5][rng.usize(0..4)],
            _ => f64::from(rng.u16(..)) / 8.0,
        };
        let runs = (0..benchmarks)
            .map(|i| {
                let mut b = BenchmarkResult::new(&format!("b{i}"), Default::default());
                for j in 0..lengths.usize(0..4) {
                    let n = [0, 1, 3, 40, 2_000][lengths.usize(0..5)];
                    let values: Vec<f64> = (0..n).map(|_| number()).collect();
                    let repetition = if j % 2 == 1 {
                        (0..n as u32).map(|r| r / 2).collect()
                    } else {
                        (0..n as u32).collect()
                    };
                    b.metrics.push(MetricSamples {
                        name: format!("m{j}"),
                        unit: "ns".into(),
                        source: Source::Timer,
                        direction: Direction::Lower,
                        gate: GateRule::default(),
                        values,
                        repetition,
                    });
                }
                for j in 0..lengths.usize(0..3) {
                    let mut series = CounterSeries::new(&format!("c{j}"), j as u32);
                    let n = lengths.usize(0..300);
                    series.t_ns = (0..n).map(|_| number()).collect();
                    series.value = (0..n).map(|_| number()).collect();
                    b.counters.push(series);
                }
                for j in 0..lengths.usize(0..3) {
                    let mut windows = KernelWindows::new(&format!("k{j}"), 0);
                    let n = lengths.usize(0..300);
                    windows.start_ns = (0..n).map(|_| number()).collect();
                    windows.end_ns = (0..n).map(|_| number()).collect();
                    b.kernel_windows.push(windows);
                }
                b
            })
            .collect();
        RunResults::of(runs)
    }

    #[test]
    fn results_in_memory_formatted_ahead_are_the_bytes_serde_writes() {
        let mut rng = fastrand::Rng::with_seed(29);
        for benchmarks in [0, 1, 2, 17] {
            let results = results(&mut rng, benchmarks);
            let expected = serde_json::to_string(&results).unwrap();
            let own = OwnArrays(&results);
            let hollow = own.hollow();
            let places = own.places().len();
            // A stage that walks the arrays side by side reads them as they are.
            for at in own.places() {
                let mut reader = own.values(&at).unwrap();
                let mut read = Vec::new();
                while let Some(v) = reader.next().unwrap() {
                    read.push(v);
                }
                let array = own.array(&at).unwrap();
                assert!(
                    read.iter()
                        .zip(array)
                        .all(|(a, b)| a.to_bits() == b.to_bits())
                );
                assert_eq!(read.len(), array.len());
            }
            for threads in 1..=3 {
                for piece in [1, 2, 7, 100, 16_384] {
                    let mut bytes = Vec::new();
                    let formatted =
                        serialize_in_pieces(&mut bytes, &hollow, &own, threads, piece).unwrap();
                    assert_eq!(
                        String::from_utf8(bytes).unwrap(),
                        expected,
                        "{benchmarks} benchmarks, {threads} threads, pieces of {piece}"
                    );
                    let every = if threads > 1 {
                        (places, 0)
                    } else {
                        (0, places)
                    };
                    assert_eq!((formatted.ahead, formatted.in_place), every);
                }
            }
        }
    }

    /// Held arrays that leave out each array's first `skip` stored values as they are read,
    /// as a trace import leaves out launches outside its readings' span: pieces whose text is
    /// empty, before an array's first number and inside it.
    struct Skipping<'r> {
        own: OwnArrays<'r>,
        skip: usize,
    }

    impl HeldArrays for Skipping<'_> {
        fn holds(&self, at: &ArrayAt) -> bool {
            self.own.holds(at)
        }
        fn places(&self) -> Vec<ArrayAt> {
            self.own.places()
        }
        fn stored(&self, at: &ArrayAt) -> usize {
            self.own.stored(at)
        }
        fn emit_part(
            &self,
            at: &ArrayAt,
            range: Range<usize>,
            emit: &mut dyn FnMut(Number) -> io::Result<()>,
        ) -> io::Result<()> {
            let kept = range.start.max(self.skip)..range.end.max(self.skip);
            self.own.emit_part(at, kept, emit)
        }
        fn values(&self, _: &ArrayAt) -> Option<Box<dyn ValueReader + '_>> {
            None
        }
    }

    #[test]
    fn pieces_with_nothing_in_them_leave_the_arrays_as_they_are() {
        let mut rng = fastrand::Rng::with_seed(41);
        let results = results(&mut rng, 9);
        let skip = 3;
        let mut fewer = results.clone();
        for b in &mut fewer.benchmarks {
            let cut = |v: &mut Vec<f64>| drop(v.drain(..skip.min(v.len())));
            b.metrics.iter_mut().for_each(|m| cut(&mut m.values));
            for c in &mut b.counters {
                cut(&mut c.t_ns);
                cut(&mut c.value);
            }
            for k in &mut b.kernel_windows {
                cut(&mut k.start_ns);
                cut(&mut k.end_ns);
            }
        }
        // The repetition numbers are left as they are on both sides.
        let expected = serde_json::to_string(&fewer).unwrap();
        let held = Skipping {
            own: OwnArrays(&results),
            skip,
        };
        let hollow = held.own.hollow();
        for threads in 1..=3 {
            for piece in [1, 2, 5, 16_384] {
                let mut bytes = Vec::new();
                serialize_in_pieces(&mut bytes, &hollow, &held, threads, piece).unwrap();
                assert_eq!(
                    String::from_utf8(bytes).unwrap(),
                    expected,
                    "{threads} x {piece}"
                );
            }
        }
    }

    #[test]
    fn saving_many_numbers_writes_the_same_file_and_refuses_a_non_finite_one() {
        let dir = tempfile::tempdir().unwrap();
        let mut rng = fastrand::Rng::with_seed(3);
        let mut results = results(&mut rng, 60);
        // Enough numbers to be formatted ahead wherever there are two cores.
        results.benchmarks[0].metrics.push(MetricSamples {
            name: "many".into(),
            unit: "ns".into(),
            source: Source::Timer,
            direction: Direction::Lower,
            gate: GateRule::default(),
            values: (0..4 * FORMAT_AHEAD_FROM).map(|v| v as f64 / 4.0).collect(),
            repetition: (0..4 * FORMAT_AHEAD_FROM as u32).collect(),
        });
        let (numbers, arrays) = OwnArrays(&results).sizes();
        assert!(numbers >= FORMAT_AHEAD_FROM && numbers >= arrays * FORMAT_AHEAD_PER_ARRAY);
        let path = dir.path().join("r.json");
        for layout in [JsonLayout::Compact, JsonLayout::Pretty] {
            results.save_as(&path, Overwrite::Allow, layout).unwrap();
            let expected = match layout {
                JsonLayout::Compact => serde_json::to_string(&results),
                JsonLayout::Pretty => serde_json::to_string_pretty(&results),
            }
            .unwrap();
            assert_eq!(std::fs::read_to_string(&path).unwrap(), expected + "\n");
        }
        let last = results.benchmarks.len() - 1;
        let series = CounterSeries {
            t_ns: vec![1.0, f64::NAN],
            value: vec![2.0, 3.0],
            ..CounterSeries::new("late", 0)
        };
        results.benchmarks[last].counters.push(series);
        let fresh = dir.path().join("nan.json");
        let err = results
            .save_as(&fresh, Overwrite::Allow, JsonLayout::Compact)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&format!(
                "benchmark `b{last}`, counter `late` (3 at NaN ns)"
            )),
            "{err}"
        );
        assert!(!fresh.exists());
    }
}
