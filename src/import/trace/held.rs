//! The arrays of a trace import that stay in their columns until the results are written:
//! each kernel's durations and launch windows, each counter track's readings.
//!
//! A trace's benchmarks are built without these numbers (their places in the results are
//! left empty); [`TraceArrays`] says what goes in each place and streams it from the columns
//! when the file is written ([`crate::model::held_arrays`]), or fills the places when a
//! later stage needs the numbers in memory (deriving utilization).

use std::collections::HashMap;
use std::io;
use std::ops::Range;
use std::sync::Arc;

use super::column::{Column, Cursor, Spill};
use crate::model::held_arrays::{ArrayAt, Field, HeldArrays, Number, ValueReader};
use crate::model::results::{RepetitionNumbers, RunResults};

/// Names an array of a benchmark before the results' order is final: the benchmark, the
/// entry's name (metric, kernel or counter) and repetition (windows and series), the field.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct Place {
    pub benchmark: String,
    pub entry: String,
    pub repetition: u32,
    pub field: Field,
}

/// What goes in one array, piece after piece (a kernel's durations from each file).
#[derive(Debug, Clone)]
enum Held {
    Values(Vec<Part>),
    /// Repetition numbers, as runs of (repetition, count).
    Repetitions(Vec<(u32, usize)>),
}

/// One piece of an array of values. Its columns are shared, not copied: a kernel's launch
/// columns serve its durations and both ends of its windows, and a trace of 20,000 kernels
/// holds 60,000 pieces.
#[derive(Debug, Clone)]
pub(super) enum Part {
    /// Each value of `column` times `factor`.
    Scaled { column: Arc<Column>, factor: f64 },
    /// Each launch inside `span` (`first`, `last`): its start, or its start plus its
    /// duration (`end`).
    Windows {
        starts: Arc<Column>,
        durations: Arc<Column>,
        span: (f64, f64),
        end: bool,
    },
    /// The readings whose time and value are both finite: their times, or their values.
    Finite {
        times: Arc<Column>,
        values: Arc<Column>,
        take_values: bool,
    },
    /// Numbers already in memory (a track put in time order).
    Memory(Arc<Vec<f64>>),
}

impl Part {
    /// How many numbers it hands over at most.
    fn most(&self) -> usize {
        match self {
            Part::Scaled { column, .. } => column.len(),
            Part::Windows { starts, .. } => starts.len(),
            Part::Finite { times, .. } => times.len(),
            Part::Memory(values) => values.len(),
        }
    }

    /// Hands each number read from the stored values `range` to `emit`, in order.
    fn emit(
        &self,
        range: Range<usize>,
        emit: &mut dyn FnMut(f64) -> io::Result<()>,
    ) -> io::Result<()> {
        let mut reader = PartReader::new(self, range)?;
        while let Some(v) = reader.next()? {
            emit(v)?;
        }
        Ok(())
    }
}

/// Reads one part's numbers in order, one at a time: pulled by deriving utilization, which
/// walks a kernel's launches and the readings around them side by side, and pushed by
/// [`Part::emit`]. It reads a range of the stored values (all of them, or a piece that a
/// thread formats for the results file), and hands over the numbers they give.
struct PartReader<'a> {
    of: Reading<'a>,
    /// Stored values still to read.
    left: usize,
}

enum Reading<'a> {
    Scaled(Cursor<'a>, f64),
    Windows {
        starts: Cursor<'a>,
        durations: Cursor<'a>,
        span: (f64, f64),
        end: bool,
    },
    Finite {
        times: Cursor<'a>,
        values: Cursor<'a>,
        take_values: bool,
    },
    Memory(&'a [f64]),
}

impl<'a> PartReader<'a> {
    /// A reader of the stored values `range` (clipped to the part's).
    fn new(part: &'a Part, range: Range<usize>) -> io::Result<PartReader<'a>> {
        let from = range.start;
        let of = match part {
            Part::Scaled { column, factor } => Reading::Scaled(column.cursor_at(from)?, *factor),
            Part::Windows {
                starts,
                durations,
                span,
                end,
            } => Reading::Windows {
                starts: starts.cursor_at(from)?,
                durations: durations.cursor_at(from)?,
                span: *span,
                end: *end,
            },
            Part::Finite {
                times,
                values,
                take_values,
            } => Reading::Finite {
                times: times.cursor_at(from)?,
                values: values.cursor_at(from)?,
                take_values: *take_values,
            },
            Part::Memory(values) => Reading::Memory(values.get(from..).unwrap_or(&[])),
        };
        Ok(PartReader {
            of,
            left: range.end.min(part.most()).saturating_sub(from),
        })
    }

    /// The next number; `None` after the last.
    fn next(&mut self) -> io::Result<Option<f64>> {
        let left = &mut self.left;
        // One stored value (or pair) more, while the range lasts.
        let mut take = || {
            let more = *left > 0;
            *left = left.saturating_sub(1);
            more
        };
        match &mut self.of {
            Reading::Scaled(cursor, factor) => {
                if !take() {
                    return Ok(None);
                }
                Ok(cursor.read()?.map(|v| v * *factor))
            }
            Reading::Windows {
                starts,
                durations,
                span: (first, last),
                end,
            } => {
                while take()
                    && let (Some(start), Some(duration)) = (starts.read()?, durations.read()?)
                {
                    if !(start + duration < *first || start > *last) {
                        return Ok(Some(if *end { start + duration } else { start }));
                    }
                }
                Ok(None)
            }
            Reading::Finite {
                times,
                values,
                take_values,
            } => {
                while take()
                    && let (Some(time), Some(value)) = (times.read()?, values.read()?)
                {
                    if time.is_finite() && value.is_finite() {
                        return Ok(Some(if *take_values { value } else { time }));
                    }
                }
                Ok(None)
            }
            Reading::Memory(values) => {
                if !take() {
                    return Ok(None);
                }
                Ok(values.split_first().map(|(&v, rest)| {
                    *values = rest;
                    v
                }))
            }
        }
    }
}

/// A held array of values read in order, part after part.
struct HeldReader<'a> {
    parts: std::slice::Iter<'a, Part>,
    current: Option<PartReader<'a>>,
}

impl ValueReader for HeldReader<'_> {
    fn next(&mut self) -> io::Result<Option<f64>> {
        loop {
            if let Some(reader) = &mut self.current
                && let Some(v) = reader.next()?
            {
                return Ok(Some(v));
            }
            match self.parts.next() {
                Some(part) => self.current = Some(PartReader::new(part, 0..part.most())?),
                None => return Ok(None),
            }
        }
    }
}

/// Every array of a trace import kept in columns, by where it goes.
#[derive(Debug, Default)]
pub struct TraceArrays {
    /// By place until [`TraceArrays::resolve`], then by position.
    pending: HashMap<Place, Held>,
    placed: HashMap<ArrayAt, Held>,
    /// The spills of the files' columns, for what they could not write.
    spills: Vec<Arc<Spill>>,
}

impl TraceArrays {
    /// Appends `part` to the values at `place`.
    pub(super) fn add(&mut self, place: Place, part: Part) {
        match self
            .pending
            .entry(place)
            .or_insert_with(|| Held::Values(Vec::with_capacity(1)))
        {
            Held::Values(parts) => parts.push(part),
            Held::Repetitions(_) => unreachable!("a repetition place holds no values"),
        }
    }

    /// Appends `count` repetition numbers `repetition` at `place`.
    pub(super) fn add_repetitions(&mut self, place: Place, repetition: u32, count: usize) {
        if count == 0 {
            return;
        }
        match self
            .pending
            .entry(place)
            .or_insert_with(|| Held::Repetitions(Vec::new()))
        {
            Held::Repetitions(runs) => match runs.last_mut() {
                Some((r, n)) if *r == repetition => *n += count,
                _ => runs.push((repetition, count)),
            },
            Held::Values(_) => unreachable!("a value place holds no repetitions"),
        }
    }

    /// The repetition runs held at `place`.
    pub(super) fn repetitions(&self, place: &Place) -> &[(u32, usize)] {
        match self.pending.get(place) {
            Some(Held::Repetitions(runs)) => runs,
            _ => &[],
        }
    }

    /// Lets go of the repetitions at `place` (they are kept in the results instead).
    pub(super) fn forget(&mut self, place: &Place) {
        self.pending.remove(place);
    }

    pub(super) fn keep_spill(&mut self, spill: &Arc<Spill>) {
        if !self.spills.iter().any(|s| Arc::ptr_eq(s, spill)) {
            self.spills.push(Arc::clone(spill));
        }
    }

    /// Why some columns stayed in memory, if their temporary file could not be written.
    pub fn spill_failure(&self) -> Option<String> {
        self.spills.iter().find_map(|s| s.failure())
    }

    /// Whether any held array has a number.
    pub fn holds_samples(&self) -> bool {
        self.pending
            .iter()
            .map(|(p, h)| (p.field, h))
            .chain(self.placed.iter().map(|(a, h)| (a.field, h)))
            .any(|(field, held)| {
                field == Field::MetricValues
                    && matches!(held, Held::Values(parts) if !parts.is_empty())
            })
    }

    /// Turns places into positions in `results`, whose order is now final. A place without
    /// its entry in the results is a bug in the import that built them.
    pub(super) fn resolve(&mut self, results: &RunResults) {
        let index: HashMap<&str, usize> = results
            .benchmarks
            .iter()
            .enumerate()
            .map(|(i, b)| (b.name.as_str(), i))
            .collect();
        // Each entry by (benchmark, kind, name, repetition), the first of each as a search
        // would find it: a trace of thousands of launches holds thousands of windows and
        // series per benchmark, and a search per place would be quadratic in them.
        let mut entries: HashMap<(usize, u8, &str, u32), usize> = HashMap::new();
        for (i, b) in results.benchmarks.iter().enumerate() {
            for (k, m) in b.metrics.iter().enumerate() {
                entries.entry((i, 0, m.name.as_str(), 0)).or_insert(k);
            }
            for (k, w) in b.kernel_windows.iter().enumerate() {
                entries
                    .entry((i, 1, w.kernel.as_str(), w.repetition))
                    .or_insert(k);
            }
            for (k, c) in b.counters.iter().enumerate() {
                entries
                    .entry((i, 2, c.counter.as_str(), c.repetition))
                    .or_insert(k);
            }
        }
        for (place, held) in std::mem::take(&mut self.pending) {
            let i = index[place.benchmark.as_str()];
            let key = match place.field {
                Field::MetricValues | Field::MetricRepetition => (0, 0),
                Field::WindowStarts | Field::WindowEnds => (1, place.repetition),
                Field::SeriesTimes | Field::SeriesValues => (2, place.repetition),
            };
            let entry = entries
                .get(&(i, key.0, place.entry.as_str(), key.1))
                .copied();
            let at = ArrayAt {
                benchmark: i,
                entry: entry.expect("each held array has its entry in the results"),
                field: place.field,
            };
            self.placed.insert(at, held);
        }
    }

    /// Puts every held array into `results` (read from the columns): the results as a
    /// whole, for a stage that needs the numbers.
    pub fn fill(self, results: &mut RunResults) -> io::Result<()> {
        for (at, held) in self.placed {
            let b = &mut results.benchmarks[at.benchmark];
            // Room for every number at once: a trace's arrays hold millions, and a vector
            // that doubles as it grows holds up to twice that.
            let (mut values, mut repetitions) = match &held {
                Held::Values(parts) => (
                    Vec::with_capacity(parts.iter().map(Part::most).sum()),
                    Vec::new(),
                ),
                Held::Repetitions(runs) => (
                    Vec::new(),
                    Vec::with_capacity(runs.iter().map(|&(_, n)| n).sum()),
                ),
            };
            emit_held(&held, 0..held.stored(), &mut |n| {
                match n {
                    Number::Value(v) => values.push(v),
                    Number::Repetition(r) => repetitions.push(r),
                }
                Ok(())
            })?;
            values.shrink_to_fit();
            match at.field {
                Field::MetricValues => b.metrics[at.entry].values = values,
                Field::MetricRepetition => {
                    b.metrics[at.entry].repetition = RepetitionNumbers::from(repetitions)
                }
                Field::WindowStarts => b.kernel_windows[at.entry].start_ns = values,
                Field::WindowEnds => b.kernel_windows[at.entry].end_ns = values,
                Field::SeriesTimes => b.counters[at.entry].t_ns = values,
                Field::SeriesValues => b.counters[at.entry].value = values,
            }
        }
        Ok(())
    }
}

impl Held {
    /// How many stored values (or repetition numbers) the array is read from.
    fn stored(&self) -> usize {
        match self {
            Held::Values(parts) => parts.iter().map(Part::most).sum(),
            Held::Repetitions(runs) => runs.iter().map(|&(_, n)| n).sum(),
        }
    }
}

/// Hands each number read from the stored values `range` of `held` to `emit`, in order.
fn emit_held(
    held: &Held,
    range: Range<usize>,
    emit: &mut dyn FnMut(Number) -> io::Result<()>,
) -> io::Result<()> {
    // Each piece, with where it starts among the array's stored values.
    let mut start = 0;
    let mut within = |len: usize| {
        let piece = range.start.max(start).min(start + len)..range.end.min(start + len);
        let local = piece.start - start..piece.end.max(piece.start) - start;
        start += len;
        local
    };
    match held {
        Held::Values(parts) => {
            for part in parts {
                let local = within(part.most());
                if !local.is_empty() {
                    part.emit(local, &mut |v| emit(Number::Value(v)))?;
                }
            }
        }
        Held::Repetitions(runs) => {
            for &(r, n) in runs {
                for _ in within(n) {
                    emit(Number::Repetition(r))?;
                }
            }
        }
    }
    Ok(())
}

impl HeldArrays for TraceArrays {
    fn holds(&self, at: &ArrayAt) -> bool {
        self.placed.contains_key(at)
    }

    fn places(&self) -> Vec<ArrayAt> {
        self.placed.keys().copied().collect()
    }

    fn stored(&self, at: &ArrayAt) -> usize {
        self.placed.get(at).map_or(0, Held::stored)
    }

    fn emit_part(
        &self,
        at: &ArrayAt,
        range: Range<usize>,
        emit: &mut dyn FnMut(Number) -> io::Result<()>,
    ) -> io::Result<()> {
        match self.placed.get(at) {
            Some(held) => emit_held(held, range, emit),
            None => Ok(()),
        }
    }

    fn values(&self, at: &ArrayAt) -> Option<Box<dyn ValueReader + '_>> {
        match self.placed.get(at)? {
            Held::Values(parts) => Some(Box::new(HeldReader {
                parts: parts.iter(),
                current: None,
            })),
            Held::Repetitions(_) => None,
        }
    }
}
