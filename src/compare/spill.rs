//! The samples of a run's tested metrics, parked in a temporary file while the run-wide
//! correction waits for every p-value.
//!
//! A metric's interval is shown at the level its family's decisions were taken at, which is
//! known only once every metric of the run has its p-values (`rules::decide_all`). A
//! comparison that reads its two files a benchmark at a time does not keep the samples until
//! then: each tested metric's two samples are written here as they are gathered, little-endian
//! `f64`s, and read back one metric at a time when it is decided, in the order they were
//! written.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};

/// Where one metric's two samples lie in the spill.
#[derive(Debug, Clone, Copy)]
pub(super) struct Parked {
    offset: u64,
    base_len: u32,
    head_len: u32,
}

impl Parked {
    /// The sample sizes (base, head).
    pub(super) fn sizes(&self) -> (usize, usize) {
        (self.base_len as usize, self.head_len as usize)
    }
}

/// A temporary file (removed by the system when closed) written while metrics are gathered
/// and read while they are decided.
pub(super) struct SampleSpill {
    writer: BufWriter<File>,
    written: u64,
    reader: Option<(BufReader<File>, u64)>,
}

impl SampleSpill {
    pub(super) fn new() -> std::io::Result<SampleSpill> {
        Ok(SampleSpill {
            writer: BufWriter::with_capacity(1 << 16, tempfile::tempfile()?),
            written: 0,
            reader: None,
        })
    }

    /// Writes a metric's two samples.
    pub(super) fn park(&mut self, base: &[f64], head: &[f64]) -> std::io::Result<Parked> {
        debug_assert!(self.reader.is_none(), "parked after the reading began");
        let too_many = |n: usize| u32::try_from(n).map_err(std::io::Error::other);
        let parked = Parked {
            offset: self.written,
            base_len: too_many(base.len())?,
            head_len: too_many(head.len())?,
        };
        for v in base.iter().chain(head) {
            self.writer.write_all(&v.to_le_bytes())?;
        }
        self.written += 8 * (base.len() + head.len()) as u64;
        Ok(parked)
    }

    /// Reads a metric's two samples back (base, head).
    pub(super) fn read(&mut self, at: &Parked) -> std::io::Result<(Vec<f64>, Vec<f64>)> {
        if self.reader.is_none() {
            self.writer.flush()?;
            let file = self.writer.get_ref().try_clone()?;
            self.reader = Some((BufReader::with_capacity(1 << 16, file), u64::MAX));
        }
        let Some((reader, position)) = self.reader.as_mut() else {
            unreachable!("the reader was just set");
        };
        // Metrics are read in the order written, family by family: mostly a step forward,
        // which the buffer serves without a seek.
        match at.offset.checked_sub(*position) {
            Some(ahead) if ahead < 1 << 16 => reader.seek_relative(ahead as i64)?,
            _ => {
                reader.seek(SeekFrom::Start(at.offset))?;
            }
        }
        let mut side = |n: u32| -> std::io::Result<Vec<f64>> {
            let mut bytes = vec![0u8; 8 * n as usize];
            reader.read_exact(&mut bytes)?;
            Ok(bytes
                .chunks_exact(8)
                .map(|c| f64::from_le_bytes(c.try_into().expect("chunks of eight")))
                .collect())
        };
        let base = side(at.base_len)?;
        let head = side(at.head_len)?;
        *position = at.offset + 8 * (u64::from(at.base_len) + u64::from(at.head_len));
        Ok((base, head))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_come_back_as_parked_in_any_order() {
        let mut spill = SampleSpill::new().unwrap();
        let pairs: Vec<(Vec<f64>, Vec<f64>)> = (0..3000)
            .map(|i| {
                let n = i % 37;
                let base = (0..n).map(|k| (i * 100 + k) as f64 * 0.5).collect();
                let head = (0..(i % 5)).map(|k| -((i + k) as f64)).collect();
                (base, head)
            })
            .collect();
        let parked: Vec<Parked> = pairs
            .iter()
            .map(|(b, h)| spill.park(b, h).unwrap())
            .collect();
        // Forward, with gaps, then backward: a family read after another.
        let order = (0..3000)
            .step_by(2)
            .chain((1..3000).step_by(2))
            .chain((0..3000).rev());
        for i in order {
            assert_eq!(spill.read(&parked[i]).unwrap(), pairs[i], "metric {i}");
            assert_eq!(parked[i].sizes(), (pairs[i].0.len(), pairs[i].1.len()));
        }
    }
}
