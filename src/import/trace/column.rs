//! Append-only columns of numbers that keep at most a block of each in memory: the rest is
//! written to a temporary file as it fills, and read back in order when the results are
//! written.
//!
//! A trace import keeps every launch's start and duration and every counter reading. Held
//! in memory, a gigabyte of trace costs tens of megabytes and twice that at two gigabytes; in
//! columns the import's memory stays the same whatever the size: a block per column, and the
//! list of where the blocks went. The columns are only ever appended to, moved by a constant
//! (a piece of the file counted from its own origin), concatenated, and read from the start,
//! which is all a trace import does with them.
//!
//! Nothing is lost when the temporary file cannot be written (a full disk): the block stays in
//! memory, and [`Spill::failure`] says why, for a note.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::{Arc, Mutex};

/// Values a column keeps in memory before it writes them out: 64 KiB.
const BLOCK_VALUES: usize = 8192;

/// The temporary file that the columns of one import write their full blocks to.
#[derive(Debug)]
pub struct Spill {
    /// Values per block.
    block: usize,
    file: Mutex<SpillFile>,
}

#[derive(Debug, Default)]
struct SpillFile {
    /// Created with the first full block: most imports never fill one.
    file: Option<Arc<File>>,
    /// Bytes written so far: where the next block goes.
    end: u64,
    /// Why the file could not be created or written, once it could not.
    failed: Option<String>,
    /// The bytes of the block being written (kept to save an allocation per block).
    bytes: Vec<u8>,
}

impl Spill {
    /// A spill of 64 KiB blocks, in the system's temporary folder (`TMPDIR`).
    pub fn new() -> Arc<Spill> {
        Spill::with_block(BLOCK_VALUES)
    }

    /// A spill whose columns write out every `block` values (tests use a handful).
    pub fn with_block(block: usize) -> Arc<Spill> {
        Arc::new(Spill {
            block: block.max(1),
            file: Mutex::new(SpillFile::default()),
        })
    }

    /// A spill that never writes: its columns stay in memory (small inputs, tests).
    pub fn in_memory() -> Arc<Spill> {
        Spill::with_block(usize::MAX)
    }

    /// Why blocks stayed in memory, when the temporary file could not be created or written.
    pub fn failure(&self) -> Option<String> {
        self.lock().failed.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, SpillFile> {
        // A panic elsewhere while the lock was held leaves the offsets consistent: a block
        // is recorded only after its write succeeded.
        self.file.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Writes `values` at the end of the file; where they went, or `None` when the file
    /// cannot be written (the caller keeps them).
    fn write(&self, values: &[f64]) -> Option<(Arc<File>, u64)> {
        let mut spill = self.lock();
        if spill.failed.is_some() {
            return None;
        }
        if spill.file.is_none() {
            match tempfile::tempfile() {
                Ok(file) => spill.file = Some(Arc::new(file)),
                Err(e) => {
                    spill.failed = Some(format!(
                        "cannot create a temporary file in {}: {e}",
                        std::env::temp_dir().display()
                    ));
                    return None;
                }
            }
        }
        let SpillFile {
            file, end, bytes, ..
        } = &mut *spill;
        let file = Arc::clone(file.as_ref().expect("created above"));
        bytes.clear();
        bytes.extend(values.iter().flat_map(|v| v.to_le_bytes()));
        let at = *end;
        if let Err(e) = file.write_all_at(bytes, at) {
            spill.failed = Some(format!("cannot write the temporary file: {e}"));
            return None;
        }
        *end += bytes.len() as u64;
        Some((file, at))
    }
}

/// Where a block's values are.
#[derive(Debug, Clone)]
enum Stored {
    File {
        file: Arc<File>,
        at: u64,
    },
    /// Kept because the file could not be written.
    Memory(Arc<[f64]>),
}

/// A run of values of a column, with the constants added to them since it was stored, in
/// order (added one by one, as they were to values in memory, for the same rounding).
#[derive(Debug, Clone)]
struct Block {
    stored: Stored,
    len: usize,
    shifts: Vec<f64>,
}

impl Block {
    /// Reads the block's values into `out` (cleared first), through `bytes`.
    fn read(&self, out: &mut Vec<f64>, bytes: &mut Vec<u8>) -> io::Result<()> {
        out.clear();
        match &self.stored {
            Stored::Memory(values) => out.extend_from_slice(values),
            Stored::File { file, at } => {
                bytes.resize(self.len * 8, 0);
                file.read_exact_at(bytes, *at)?;
                out.extend(
                    bytes
                        .chunks_exact(8)
                        .map(|b| f64::from_le_bytes(b.try_into().expect("8 bytes"))),
                );
            }
        }
        for &by in &self.shifts {
            for v in out.iter_mut() {
                *v += by;
            }
        }
        Ok(())
    }
}

/// An append-only sequence of `f64`s, all but its last block in the spill's file.
#[derive(Clone)]
pub struct Column {
    spill: Arc<Spill>,
    blocks: Vec<Block>,
    tail: Vec<f64>,
    len: usize,
    summary: Summary,
}

/// What a column's values are like, kept as they arrive so that the common questions (where
/// do times start, are they in order, is any not a number) need no pass over the file.
#[derive(Debug, Clone, Copy)]
struct Summary {
    /// The least finite value, `INFINITY` while there is none.
    least: f64,
    /// How many values are NaN or infinite.
    not_finite: usize,
    /// Whether each value is at least the one before (in `f64::total_cmp`'s order).
    ascending: bool,
    first: f64,
    last: f64,
}

impl Default for Summary {
    fn default() -> Summary {
        Summary {
            least: f64::INFINITY,
            not_finite: 0,
            ascending: true,
            first: f64::NAN,
            last: f64::NAN,
        }
    }
}

impl Summary {
    /// After `value` was appended to `len` values.
    #[inline]
    fn add(&mut self, len: usize, value: f64) {
        if value.is_finite() {
            if value < self.least {
                self.least = value;
            }
        } else {
            self.not_finite += 1;
        }
        if len == 0 {
            self.first = value;
        } else if self.last.total_cmp(&value).is_gt() {
            self.ascending = false;
        }
        self.last = value;
    }

    /// After `by` was added to each value. Adding a constant keeps the values' order
    /// (rounding is monotonic), so the least, first and last values move with them; the
    /// first and last get the same one rounding as the values themselves.
    fn shift(&mut self, by: f64) {
        self.first += by;
        self.last += by;
        if self.least.is_finite() {
            self.least += by;
            if !self.least.is_finite() {
                self.least = f64::INFINITY;
            }
        }
    }

    /// After `other`'s `other_len` values were appended to `len` values.
    fn then(&mut self, len: usize, other: Summary, other_len: usize) {
        if other_len == 0 {
            return;
        }
        self.least = self.least.min(other.least);
        self.not_finite += other.not_finite;
        if len == 0 {
            self.first = other.first;
            self.ascending = other.ascending;
        } else {
            self.ascending &= other.ascending && self.last.total_cmp(&other.first).is_le();
        }
        self.last = other.last;
    }
}

impl std::fmt::Debug for Column {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Column({} values", self.len)?;
        if !self.blocks.is_empty() {
            write!(f, ", {} blocks out", self.blocks.len())?;
        }
        write!(f, ")")
    }
}

impl Default for Column {
    fn default() -> Column {
        Column::new(&Spill::in_memory())
    }
}

impl PartialEq for Column {
    /// Equal values in the same order (a read error is unequal).
    fn eq(&self, other: &Column) -> bool {
        self.len == other.len && matches!((self.to_vec(), other.to_vec()), (Ok(a), Ok(b)) if a == b)
    }
}

impl PartialEq<Vec<f64>> for Column {
    fn eq(&self, other: &Vec<f64>) -> bool {
        self.to_vec().is_ok_and(|mine| mine == *other)
    }
}

impl<const N: usize> PartialEq<[f64; N]> for Column {
    fn eq(&self, other: &[f64; N]) -> bool {
        self.to_vec().is_ok_and(|mine| mine == *other)
    }
}

impl From<Vec<f64>> for Column {
    /// A column in memory holding `values`.
    fn from(values: Vec<f64>) -> Column {
        let mut column = Column::default();
        for v in values {
            column.push(v);
        }
        column
    }
}

impl Column {
    /// An empty column writing its full blocks to `spill`.
    pub fn new(spill: &Arc<Spill>) -> Column {
        Column {
            spill: Arc::clone(spill),
            blocks: Vec::new(),
            tail: Vec::new(),
            len: 0,
            summary: Summary::default(),
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// The spill the column writes to.
    pub fn spill(&self) -> &Arc<Spill> {
        &self.spill
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The least finite value, if any.
    pub fn least(&self) -> Option<f64> {
        let least = self.summary.least;
        least.is_finite().then_some(least)
    }

    /// How many values are NaN or infinite.
    pub fn not_finite(&self) -> usize {
        self.summary.not_finite
    }

    /// The first and last value, when every value is at least the one before it.
    pub fn ascending_from_to(&self) -> Option<(f64, f64)> {
        (self.summary.ascending && self.len > 0).then_some((self.summary.first, self.summary.last))
    }

    #[inline]
    pub fn push(&mut self, value: f64) {
        self.summary.add(self.len, value);
        self.tail.push(value);
        self.len += 1;
        if self.tail.len() >= self.spill.block {
            self.store_tail();
        }
    }

    /// Stores the values in memory as a block (in the file, or kept when it cannot be
    /// written).
    fn store_tail(&mut self) {
        let len = self.tail.len();
        if len == 0 {
            return;
        }
        let stored = match self.spill.write(&self.tail) {
            Some((file, at)) => {
                self.tail.clear();
                Stored::File { file, at }
            }
            None => Stored::Memory(std::mem::take(&mut self.tail).into()),
        };
        self.blocks.push(Block {
            stored,
            len,
            shifts: Vec::new(),
        });
    }

    /// Adds `by` to every value so far (a piece's times moved onto another origin).
    pub fn shift(&mut self, by: f64) {
        for block in &mut self.blocks {
            block.shifts.push(by);
        }
        for v in &mut self.tail {
            *v += by;
        }
        self.summary.shift(by);
    }

    /// Appends `other`'s values after this column's (its blocks are taken over, not read).
    pub fn append(&mut self, other: Column) {
        if other.blocks.is_empty() {
            for v in other.tail {
                self.push(v);
            }
            return;
        }
        // A block names the file it is in, so blocks of another spill read back as well.
        self.store_tail();
        self.summary.then(self.len, other.summary, other.len);
        self.len += other.len;
        self.blocks.extend(other.blocks);
        self.tail = other.tail;
    }

    /// A reader of the values from the first.
    pub fn cursor(&self) -> Cursor<'_> {
        Cursor {
            column: self,
            next_block: 0,
            buf: Vec::new(),
            bytes: Vec::new(),
            pos: 0,
            in_tail: false,
        }
    }

    /// A reader of the values from the one at `index` (past the last: a reader of none),
    /// reading only the block that holds it.
    pub fn cursor_at(&self, index: usize) -> io::Result<Cursor<'_>> {
        let mut cursor = self.cursor();
        let mut start = 0;
        for (b, block) in self.blocks.iter().enumerate() {
            if index < start + block.len {
                block.read(&mut cursor.buf, &mut cursor.bytes)?;
                cursor.next_block = b + 1;
                cursor.pos = index - start;
                return Ok(cursor);
            }
            start += block.len;
        }
        cursor.next_block = self.blocks.len();
        cursor.in_tail = true;
        cursor.pos = index - start;
        Ok(cursor)
    }

    /// Every value, in order, in memory.
    pub fn to_vec(&self) -> io::Result<Vec<f64>> {
        let mut out = Vec::with_capacity(self.len);
        let (mut buf, mut bytes) = (Vec::new(), Vec::new());
        for block in &self.blocks {
            block.read(&mut buf, &mut bytes)?;
            out.extend_from_slice(&buf);
        }
        out.extend_from_slice(&self.tail);
        Ok(out)
    }
}

/// Reads a column's values in order, a block at a time.
pub struct Cursor<'c> {
    column: &'c Column,
    next_block: usize,
    buf: Vec<f64>,
    bytes: Vec<u8>,
    pos: usize,
    in_tail: bool,
}

impl Cursor<'_> {
    /// The next value; `None` after the last.
    #[inline]
    pub fn read(&mut self) -> io::Result<Option<f64>> {
        loop {
            let values: &[f64] = if self.in_tail {
                &self.column.tail
            } else {
                &self.buf
            };
            if let Some(&v) = values.get(self.pos) {
                self.pos += 1;
                return Ok(Some(v));
            }
            if self.in_tail {
                return Ok(None);
            }
            self.pos = 0;
            match self.column.blocks.get(self.next_block) {
                Some(block) => {
                    block.read(&mut self.buf, &mut self.bytes)?;
                    self.next_block += 1;
                }
                None => self.in_tail = true,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(c: &Column) -> Vec<f64> {
        let mut out = Vec::new();
        let mut cursor = c.cursor();
        while let Some(v) = cursor.read().unwrap() {
            out.push(v);
        }
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&out), bits(&c.to_vec().unwrap()));
        assert_eq!(out.len(), c.len());
        // Read from any place: the rest, whether it starts in a block, at one's end or in
        // the tail, and nothing from past the end.
        for start in 0..=out.len() + 1 {
            let mut cursor = c.cursor_at(start).unwrap();
            let mut rest = Vec::new();
            while let Some(v) = cursor.read().unwrap() {
                rest.push(v);
            }
            assert_eq!(
                bits(&rest),
                bits(out.get(start..).unwrap_or(&[])),
                "from {start}"
            );
        }
        out
    }

    #[test]
    fn a_column_written_out_in_blocks_reads_back_what_was_pushed() {
        let spill = Spill::with_block(3);
        let mut a = Column::new(&spill);
        for i in 0..10 {
            a.push(i as f64);
        }
        assert_eq!(a.blocks.len(), 3);
        assert!(a.tail.len() <= 3, "at most a block in memory");
        assert_eq!(values(&a), (0..10).map(f64::from).collect::<Vec<_>>());
        assert_eq!(a.least(), Some(0.0));
        assert_eq!(a.ascending_from_to(), Some((0.0, 9.0)));
        // Order and ends are known across appends and shifts without reading the file.
        let mut b = Column::new(&spill);
        for i in 10..17 {
            b.push(i as f64);
        }
        b.shift(0.5);
        a.append(b);
        assert_eq!(a.ascending_from_to(), Some((0.0, 16.5)));
        a.shift(-1.0);
        assert_eq!(a.ascending_from_to(), Some((-1.0, 15.5)));
        a.push(3.0);
        assert_eq!(a.ascending_from_to(), None);
        assert!(spill.failure().is_none());
    }

    #[test]
    fn shifts_and_appends_give_what_the_same_work_in_memory_gives() {
        let spill = Spill::with_block(4);
        let mut rng = fastrand::Rng::with_seed(4);
        let mut expected = Vec::new();
        let mut column = Column::new(&spill);
        for _ in 0..50 {
            match rng.u8(..4) {
                0 => {
                    let by = rng.f64() * 1e6 - 5e5;
                    column.shift(by);
                    expected.iter_mut().for_each(|v| *v += by);
                }
                1 => {
                    let mut other = Column::new(&spill);
                    for _ in 0..rng.usize(..9) {
                        let v = rng.f64() * 1e9;
                        other.push(v);
                        expected.push(v);
                    }
                    column.append(other);
                }
                _ => {
                    for _ in 0..rng.usize(..7) {
                        let v = rng.f64() * 1e9;
                        column.push(v);
                        expected.push(v);
                    }
                }
            }
            let got = values(&column);
            assert_eq!(got.len(), expected.len());
            for (g, e) in got.iter().zip(&expected) {
                assert_eq!(g.to_bits(), e.to_bits());
            }
            let least = expected.iter().copied().reduce(f64::min);
            assert_eq!(column.least(), least);
            let ascending = expected.is_sorted_by(|a, b| a.total_cmp(b).is_le());
            let ends = (expected.first().copied(), expected.last().copied());
            match column.ascending_from_to() {
                Some((first, last)) => {
                    assert!(ascending);
                    assert_eq!((Some(first), Some(last)), ends);
                }
                None => assert!(!ascending || expected.is_empty()),
            }
        }
        // A column of another spill is appended too.
        let mut other = Column::new(&Spill::with_block(2));
        for v in [1.0, 2.0, 3.0] {
            other.push(v);
        }
        column.append(other);
        expected.extend([1.0, 2.0, 3.0]);
        assert_eq!(values(&column), expected);
    }

    #[test]
    fn a_spill_that_cannot_be_written_keeps_the_values_in_memory() {
        let spill = Spill::with_block(2);
        spill.lock().failed = Some("disk full".into());
        let mut c = Column::new(&spill);
        for v in [3.0, f64::NAN, 1.0, 2.0, 5.0] {
            c.push(v);
        }
        assert!(
            c.blocks
                .iter()
                .all(|b| matches!(b.stored, Stored::Memory(_)))
        );
        let got = values(&c);
        assert_eq!(got.len(), 5);
        assert!(got[1].is_nan());
        assert_eq!(c.least(), Some(1.0));
        assert_eq!(c.not_finite(), 1);
        assert_eq!(c.ascending_from_to(), None);
        assert_eq!(spill.failure().as_deref(), Some("disk full"));
    }
}
