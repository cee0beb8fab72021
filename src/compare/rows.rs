//! A comparison's rows, parked in a temporary file instead of held.
//!
//! At 10,000 benchmarks × 20 metrics the rows of a report are 200,000 `MetricComparison`s:
//! about 650 bytes each with their reasons, 130 MB held. A comparison that reads its two files
//! a benchmark at a time, for any report but Markdown, holds rows up to a budget ([`Rows`])
//! and past it writes each row here as it is gathered, reads the rows back one benchmark at a
//! time to decide them, and writes the decided rows to a second file, from which the report
//! is streamed ([`DecidedRows`] serializes as the report's `benchmarks` array; the table, HTML
//! and JUnit read it through [`ReportRows`]). What stays in memory is the budget's rows at
//! most.
//!
//! The rows are MessagePack, with field names: a self-describing format (the report's
//! optional fields are left out when empty, which a positional format cannot read back) that
//! keeps every `f64` as it was, infinities included, where JSON would write `null`.

use std::fs::File;
use std::io::{BufReader, BufWriter, Seek, SeekFrom, Write};
use std::marker::PhantomData;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::model::report::{BenchmarkComparison, ReportRows};

/// Rows written one after another to a temporary file (removed by the system when closed).
struct RowSpill {
    writer: BufWriter<File>,
    len: usize,
}

impl RowSpill {
    fn new() -> std::io::Result<RowSpill> {
        Ok(RowSpill {
            writer: BufWriter::with_capacity(1 << 16, tempfile::tempfile()?),
            len: 0,
        })
    }

    /// How many rows were written.
    fn len(&self) -> usize {
        self.len
    }

    /// Appends a row.
    fn push<T: Serialize>(&mut self, row: &T) -> std::io::Result<()> {
        rmp_serde::encode::write_named(&mut self.writer, row).map_err(std::io::Error::other)?;
        self.len += 1;
        Ok(())
    }

    /// The rows written, in order; the file can be read again ([`RowSpill::read`] after
    /// [`RowSpill::finish`]).
    fn finish(mut self) -> std::io::Result<WrittenRows> {
        self.writer.flush()?;
        let file = self.writer.into_inner().map_err(|e| e.into_error())?;
        Ok(WrittenRows {
            file,
            len: self.len,
        })
    }
}

/// A finished [`RowSpill`].
pub struct WrittenRows {
    file: File,
    len: usize,
}

impl WrittenRows {
    /// Reads the rows from the start. One reading at a time: each shares the file's position.
    fn read<T: DeserializeOwned>(&self) -> std::io::Result<RowReader<T>> {
        let mut file = self.file.try_clone()?;
        file.seek(SeekFrom::Start(0))?;
        Ok(RowReader {
            reader: BufReader::with_capacity(1 << 16, file),
            left: self.len,
            row: PhantomData,
        })
    }
}

/// The rows of a [`WrittenRows`], read one at a time.
struct RowReader<T> {
    reader: BufReader<File>,
    left: usize,
    row: PhantomData<T>,
}

impl<T: DeserializeOwned> Iterator for RowReader<T> {
    type Item = std::io::Result<T>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let row = rmp_serde::decode::from_read(&mut self.reader).map_err(std::io::Error::other);
        if row.is_err() {
            self.left = 0;
        }
        Some(row)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.left))
    }
}

/// Rows held until they pass a budget of metric rows, then parked in a [`RowSpill`]: a
/// comparison of a hundred benchmarks costs no file, one of 10,000 holds no more than the
/// budget.
pub(super) struct Rows {
    held: Vec<BenchmarkComparison>,
    /// The metric rows held (a benchmark without metrics counts one).
    held_metrics: usize,
    /// How many metric rows may be held before they are parked.
    budget: usize,
    parked: Option<RowSpill>,
}

impl Rows {
    /// Rows held up to `budget` metric rows (`usize::MAX`: always held).
    pub(super) fn new(budget: usize) -> Rows {
        Rows {
            held: Vec::new(),
            held_metrics: 0,
            budget,
            parked: None,
        }
    }

    /// How many benchmarks.
    pub(super) fn len(&self) -> usize {
        self.held.len() + self.parked.as_ref().map_or(0, RowSpill::len)
    }

    pub(super) fn push(&mut self, row: BenchmarkComparison) -> std::io::Result<()> {
        if let Some(spill) = &mut self.parked {
            return spill.push(&row);
        }
        self.held_metrics += row.metrics.len().max(1);
        self.held.push(row);
        if self.held_metrics > self.budget {
            let mut spill = RowSpill::new()?;
            for row in self.held.drain(..) {
                spill.push(&row)?;
            }
            self.held = Vec::new();
            self.parked = Some(spill);
        }
        Ok(())
    }

    pub(super) fn finish(self) -> std::io::Result<DecidedRows> {
        Ok(match self.parked {
            None => DecidedRows::Held(self.held),
            Some(spill) => DecidedRows::Parked(spill.finish()?),
        })
    }
}

/// A report's benchmarks, held or in a temporary file (`Rows`): serialized, they are the
/// report's `benchmarks` array, read back one benchmark at a time where they were parked.
pub enum DecidedRows {
    Held(Vec<BenchmarkComparison>),
    Parked(WrittenRows),
}

impl DecidedRows {
    /// How many benchmarks.
    pub fn len(&self) -> usize {
        match self {
            DecidedRows::Held(rows) => rows.len(),
            DecidedRows::Parked(rows) => rows.len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The benchmarks in order, one at a time.
    pub fn into_rows(
        self,
    ) -> std::io::Result<Box<dyn Iterator<Item = std::io::Result<BenchmarkComparison>>>> {
        Ok(match self {
            DecidedRows::Held(rows) => Box::new(rows.into_iter().map(Ok)),
            DecidedRows::Parked(rows) => Box::new(rows.read()?),
        })
    }

    /// Every benchmark, held.
    pub fn into_held(self) -> std::io::Result<Vec<BenchmarkComparison>> {
        match self {
            DecidedRows::Held(rows) => Ok(rows),
            DecidedRows::Parked(rows) => rows.read()?.collect(),
        }
    }
}

impl ReportRows for DecidedRows {
    /// The benchmarks in order, read from the start where they were parked.
    fn each_row(
        &self,
        each: &mut dyn FnMut(&BenchmarkComparison) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        match self {
            DecidedRows::Held(rows) => rows.each_row(each),
            DecidedRows::Parked(rows) => {
                for row in rows.read()? {
                    each(&row?)?;
                }
                Ok(())
            }
        }
    }

    fn held(&self) -> Option<&[BenchmarkComparison]> {
        match self {
            DecidedRows::Held(rows) => Some(rows),
            DecidedRows::Parked(_) => None,
        }
    }
}

impl Serialize for DecidedRows {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeSeq};
        let rows = match self {
            DecidedRows::Held(rows) => return rows.serialize(serializer),
            DecidedRows::Parked(rows) => rows,
        };
        let mut seq = serializer.serialize_seq(Some(rows.len))?;
        for row in rows
            .read::<BenchmarkComparison>()
            .map_err(S::Error::custom)?
        {
            seq.serialize_element(&row.map_err(S::Error::custom)?)?;
        }
        seq.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::metric::{Direction, GateRule, Source};
    use crate::model::report::{Method, MetricComparison};
    use crate::model::results::MetricSamples;
    use crate::model::verdict::Verdict;
    use crate::stats::inference::Xorshift;

    fn row(rng: &mut Xorshift, i: usize) -> BenchmarkComparison {
        let mut pick = |n: u64| rng.next_u64() % n;
        let odd = [
            f64::INFINITY,
            f64::NEG_INFINITY,
            -0.0,
            f64::MIN_POSITIVE,
            0.1 + 0.2,
            1e300,
        ];
        let metrics = (0..pick(4))
            .map(|m| {
                let samples = MetricSamples {
                    name: format!("m{m} \"quoted\" ✓"),
                    unit: "ns".into(),
                    source: Source::Timer,
                    direction: Direction::Lower,
                    gate: GateRule::default(),
                    values: vec![1.0, 2.0],
                    repetition: Default::default(),
                };
                MetricComparison {
                    verdict: Verdict::Regressed,
                    reason: format!("reason {i}"),
                    method: Method::RankTest,
                    change: Some(odd[pick(odd.len() as u64) as usize]),
                    ci: (pick(2) == 0).then_some([odd[0], odd[4]]),
                    p_regression: (pick(2) == 0).then_some(0.001),
                    waived: pick(2) == 0,
                    base: crate::stats::summarize(&[1.0, 2.0, 3.5]),
                    ..crate::compare::blank(&samples, &crate::compare::ComparePolicy::default())
                }
            })
            .collect();
        BenchmarkComparison {
            name: format!("bench/{i}"),
            verdict: Verdict::Inconclusive,
            explanation: String::new(),
            metrics,
            profile: None,
        }
    }

    #[test]
    fn rows_come_back_as_written_infinities_included_and_read_again() {
        let mut rng = Xorshift::new(3);
        let rows: Vec<BenchmarkComparison> = (0..500).map(|i| row(&mut rng, i)).collect();
        let mut spill = RowSpill::new().unwrap();
        for r in &rows {
            spill.push(r).unwrap();
        }
        let decided = DecidedRows::Parked(spill.finish().unwrap());
        assert_eq!(decided.len(), 500);
        for _ in 0..2 {
            let mut back = Vec::new();
            let mut keep = |r: &BenchmarkComparison| {
                back.push(r.clone());
                Ok(())
            };
            decided.each_row(&mut keep).unwrap();
            assert_eq!(back, rows);
        }
        assert!(
            rows.iter()
                .flat_map(|r| &r.metrics)
                .any(|m| m.change == Some(f64::INFINITY))
        );
        // Serialized, they are the rows' own JSON array.
        assert_eq!(
            serde_json::to_string(&decided).unwrap(),
            serde_json::to_string(&rows).unwrap()
        );
        assert_eq!(decided.into_held().unwrap(), rows);
    }

    #[test]
    fn rows_are_held_to_their_budget_then_parked_in_order() {
        let mut rng = Xorshift::new(5);
        let rows: Vec<BenchmarkComparison> = (0..300).map(|i| row(&mut rng, i)).collect();
        let metric_rows: usize = rows.iter().map(|r| r.metrics.len().max(1)).sum();
        for budget in [0, 1, 7, metric_rows - 1, metric_rows, usize::MAX] {
            let mut kept = Rows::new(budget);
            for r in &rows {
                kept.push(r.clone()).unwrap();
                assert!(kept.held_metrics <= budget.max(1) || kept.parked.is_some());
            }
            assert_eq!(kept.len(), rows.len(), "budget {budget}");
            let decided = kept.finish().unwrap();
            let parked = matches!(decided, DecidedRows::Parked(_));
            assert_eq!(parked, budget < metric_rows, "budget {budget}");
            let back: Vec<_> = decided.into_rows().unwrap().map(Result::unwrap).collect();
            assert_eq!(back, rows, "budget {budget}");
        }
    }

    #[test]
    fn a_damaged_spill_is_an_error_not_a_short_list() {
        let mut spill = RowSpill::new().unwrap();
        spill.push(&"not a benchmark").unwrap();
        let decided = DecidedRows::Parked(spill.finish().unwrap());
        assert!(decided.each_row(&mut |_| Ok(())).is_err());
        assert!(serde_json::to_string(&decided).is_err());
        assert!(decided.into_held().is_err());
    }
}
