//! Writing a results document whose largest arrays are held elsewhere (a trace import's
//! columns, most of them in a temporary file) without gathering them into memory first.
//!
//! The document is still the serialization of [`RunResults`] (field names, order and layout
//! come from its types, so there is nothing to keep in step); only the numbers of the arrays
//! a [`HeldArrays`] holds are streamed into it as the serializer reaches them. A
//! `serde_json` formatter follows the path of each array (`benchmarks[i].metrics[j].values`)
//! and, at one that is held, writes the held numbers in place of the document's own.

use std::io::{self, Write};
use std::path::Path;

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

/// Arrays of a results document kept outside it. The document must hold an entry at each
/// held array's place, with the key present: its own numbers there are replaced.
pub trait HeldArrays {
    /// Whether the array at `at` is held here.
    fn holds(&self, at: &ArrayAt) -> bool;
    /// Hands each number of the array at `at` to `emit`, in order.
    fn emit(&self, at: &ArrayAt, emit: &mut dyn FnMut(Number) -> io::Result<()>) -> io::Result<()>;
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
        JsonLayout::Compact => serialize_with(out, CompactFormatter, results, held),
        JsonLayout::Pretty => serialize_with(out, PrettyFormatter::new(), results, held),
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
    let formatter = Streaming {
        inner: formatter,
        held,
        path: Vec::new(),
        key: None,
        replacing: None,
    };
    let mut serializer = serde_json::Serializer::with_formatter(out, formatter);
    results.serialize(&mut serializer).map_err(io::Error::from)
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
        let inner = &mut self.inner;
        let mut first = true;
        self.held.emit(at, &mut |number| {
            inner.begin_array_value(writer, first)?;
            first = false;
            match number {
                Number::Repetition(r) => inner.write_u32(writer, r)?,
                Number::Value(v) if !v.is_finite() => {
                    return Err(io::Error::other(format!(
                        "a held number is not finite ({v})"
                    )));
                }
                Number::Value(v) => match whole_number(v) {
                    Some(i) => inner.write_i64(writer, i)?,
                    None => inner.write_f64(writer, v)?,
                },
            }
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
