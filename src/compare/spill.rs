//! The samples of a run's tested metrics, parked in a temporary file while the run-wide
//! correction waits for every p-value.
//!
//! A metric's interval is shown at the level its family's decisions were taken at, which is
//! known only once every metric of the run has its p-values (`rules::decide_all`). A
//! comparison that reads its two files a benchmark at a time does not keep the samples until
//! then: each tested metric's noise, scale and two samples are written here as they are
//! gathered, little-endian `f64`s, and read back one metric at a time when it is decided, in
//! the order they were written.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};

/// Where one metric's noise, scale and two samples lie in the spill.
#[derive(Debug, Clone, Copy)]
pub(super) struct Parked {
    offset: u64,
    base_len: u32,
    head_len: u32,
}

/// A parked metric read back.
#[derive(Debug, PartialEq)]
pub(super) struct ParkedSamples {
    /// The pooled robust log-scale noise of the samples.
    pub(super) noise: Option<f64>,
    /// The samples' common scale, when they are compared on one.
    pub(super) scale: Option<f64>,
    pub(super) base: Vec<f64>,
    pub(super) head: Vec<f64>,
}

/// An absent `Option<f64>` as parked: a NaN no noise or scale computation gives (its payload
/// tells it from an ordinary NaN).
const ABSENT: u64 = 0x7ff8_dead_0000_0001;

fn park_option(v: Option<f64>) -> u64 {
    v.map_or(ABSENT, f64::to_bits)
}

fn unpark_option(bits: u64) -> Option<f64> {
    (bits != ABSENT).then(|| f64::from_bits(bits))
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

    /// Writes a metric's noise, scale and two samples.
    pub(super) fn park(
        &mut self,
        noise: Option<f64>,
        scale: Option<f64>,
        base: &[f64],
        head: &[f64],
    ) -> std::io::Result<Parked> {
        debug_assert!(self.reader.is_none(), "parked after the reading began");
        let too_many = |n: usize| u32::try_from(n).map_err(std::io::Error::other);
        let parked = Parked {
            offset: self.written,
            base_len: too_many(base.len())?,
            head_len: too_many(head.len())?,
        };
        for bits in [park_option(noise), park_option(scale)] {
            self.writer.write_all(&bits.to_le_bytes())?;
        }
        for v in base.iter().chain(head) {
            self.writer.write_all(&v.to_le_bytes())?;
        }
        self.written += 8 * (2 + base.len() + head.len()) as u64;
        Ok(parked)
    }

    /// Reads a metric back.
    pub(super) fn read(&mut self, at: &Parked) -> std::io::Result<ParkedSamples> {
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
        let mut words = |n: u32| -> std::io::Result<Vec<u64>> {
            let mut bytes = vec![0u8; 8 * n as usize];
            reader.read_exact(&mut bytes)?;
            Ok(bytes
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().expect("chunks of eight")))
                .collect())
        };
        let options = words(2)?;
        let mut side =
            |n: u32| Ok::<_, std::io::Error>(words(n)?.into_iter().map(f64::from_bits).collect());
        let base = side(at.base_len)?;
        let head = side(at.head_len)?;
        *position = at.offset + 8 * (2 + u64::from(at.base_len) + u64::from(at.head_len));
        Ok(ParkedSamples {
            noise: unpark_option(options[0]),
            scale: unpark_option(options[1]),
            base,
            head,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_come_back_as_parked_in_any_order() {
        let mut spill = SampleSpill::new().unwrap();
        let pairs: Vec<(Vec<f64>, Vec<f64>)> = (0..3000)
            .map(|i| {
                let n = i % 37;
                let base = (0..n).map(|k| (i * 100 + k) as f64 * 0.5).collect();
                let head = (0..(i % 5)).map(|k| -((i + k) as f64)).collect();
                (base, head)
            })
            .collect();
        let options = |i: usize| match i % 4 {
            0 => (None, None),
            1 => (Some(0.25), None),
            2 => (None, Some(f64::NAN)),
            _ => (Some(-0.0), Some(1e-300)),
        };
        let parked: Vec<Parked> = pairs
            .iter()
            .enumerate()
            .map(|(i, (b, h))| spill.park(options(i).0, options(i).1, b, h).unwrap())
            .collect();
        // Forward, with gaps, then backward: a family read after another.
        let order = (0..3000)
            .step_by(2)
            .chain((1..3000).step_by(2))
            .chain((0..3000).rev());
        for i in order {
            let read = spill.read(&parked[i]).unwrap();
            assert_eq!(
                (&read.base, &read.head),
                (&pairs[i].0, &pairs[i].1),
                "metric {i}"
            );
            let bits = |v: Option<f64>| v.map(f64::to_bits);
            let (noise, scale) = options(i);
            assert_eq!(bits(read.noise), bits(noise), "metric {i}");
            assert_eq!(bits(read.scale), bits(scale), "metric {i}");
        }
    }
}
