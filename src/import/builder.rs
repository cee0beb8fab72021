//! Shared assembly of imported benchmarks: profiler and harness files name benchmarks (kernels,
//! test names, commands) in their own way, but all end as named samples in a [`Collector`].
//! This keeps first-seen order, one collector per benchmark and the provenance bookkeeping in
//! one place so each format module only says what it read.
//!
//! [`Collector`]: crate::capture::Collector

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::device::Device;
use super::{ImportError, Policies, run_results};
use crate::capture::Collector;
use crate::model::metric::{Direction, Source};
use crate::model::results::{Provenance, RunResults};

/// Benchmarks under construction, in the order they were first seen.
pub struct Benchmarks<'p> {
    policies: &'p Policies,
    capture: &'static str,
    order: Vec<String>,
    collectors: BTreeMap<String, Collector<'p>>,
    /// The file being read, named in errors.
    file: PathBuf,
    /// What the files read so far say about the device they were measured on.
    device: Device,
}

impl<'p> Benchmarks<'p> {
    /// `capture` names the format in each benchmark's provenance (`ncu`, `gbench`).
    pub fn new(policies: &'p Policies, capture: &'static str) -> Benchmarks<'p> {
        Benchmarks {
            policies,
            capture,
            order: Vec::new(),
            collectors: BTreeMap::new(),
            file: PathBuf::new(),
            device: Device::default(),
        }
    }

    /// The collector of benchmark `name`, created on first use.
    pub fn get(&mut self, name: &str) -> &mut Collector<'p> {
        if !self.collectors.contains_key(name) {
            self.order.push(name.to_string());
            let provenance = Provenance {
                captures: vec![self.capture.to_string()],
                ..Provenance::default()
            };
            let policy = self.policies.for_benchmark(name);
            self.collectors
                .insert(name.to_string(), Collector::new(name, policy, provenance));
        }
        self.collectors.get_mut(name).expect("inserted above")
    }

    /// Sets the file that the following samples come from.
    pub fn file(&mut self, path: &Path) {
        self.file = path.to_path_buf();
    }

    /// Records one sample of benchmark `name`; a unit clash is reported against the current
    /// file.
    pub fn add(
        &mut self,
        name: &str,
        repetition: u32,
        metric: &str,
        unit: &str,
        source: Source,
        value: f64,
    ) -> Result<(), ImportError> {
        let direction = direction_of(metric, unit);
        self.get(name)
            .add_value(repetition, metric, unit, source, direction, value)
            .map_err(|message| ImportError::Content {
                path: self.file.clone(),
                message: format!("benchmark `{name}`: {message}"),
            })
    }

    /// Notes that benchmark `name` took numbers from `path` and now holds `repetitions`.
    pub fn imported(&mut self, name: &str, path: &Path, repetitions: u32) {
        let result = self.get(name).result_mut();
        let shown = path.display().to_string();
        if !result.provenance.imported_from.contains(&shown) {
            result.provenance.imported_from.push(shown);
        }
        result.repetitions = result.repetitions.max(repetitions);
    }

    /// Records a provenance detail on benchmark `name`.
    pub fn detail(&mut self, name: &str, key: &str, value: &str) {
        self.get(name)
            .result_mut()
            .provenance
            .details
            .insert(key.to_string(), value.to_string());
    }

    /// Records the device that `path` names (an empty [`Device`] names none); a device other
    /// than the one earlier files named is an error.
    pub fn device(&mut self, path: &Path, found: Device) -> Result<(), ImportError> {
        self.device
            .merge(found)
            .map_err(|message| ImportError::Content {
                path: path.to_path_buf(),
                message,
            })
    }

    /// Names seen so far.
    pub fn names(&self) -> &[String] {
        &self.order
    }

    /// The results file; fails when nothing was imported.
    pub fn finish(self, files: &[std::path::PathBuf]) -> Result<RunResults, ImportError> {
        if self.order.is_empty() {
            return Err(ImportError::Content {
                path: files.first().cloned().unwrap_or_default(),
                message: format!("no {} benchmark was found in the given files", self.capture),
            });
        }
        Ok(self.into_results())
    }

    /// The results file, in first-seen order, whatever was imported.
    pub fn into_results(mut self) -> RunResults {
        let benchmarks = self
            .order
            .iter()
            .filter_map(|n| self.collectors.remove(n))
            .map(Collector::finish)
            .collect();
        run_results(benchmarks, &self.device)
    }
}

/// The usual direction of a metric from its name and unit: rates per second, hit rates,
/// throughputs and other percentages (utilization, occupancy, % of peak) are better higher,
/// except percentages of stalls; everything else (times, counts, bytes moved) lower.
pub fn direction_of(metric: &str, unit: &str) -> Direction {
    let name = metric.to_ascii_lowercase();
    let higher = unit.ends_with("/second")
        || unit.ends_with("/s")
        || name.ends_with("_per_second")
        || name.contains("throughput")
        || name.contains("hit_rate")
        || (unit == "%" && !name.contains("stall"));
    if higher {
        Direction::Higher
    } else {
        Direction::Lower
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throughputs_and_percentages_are_better_higher() {
        assert_eq!(
            direction_of("gpu__time_duration.sum", "ns"),
            Direction::Lower
        );
        assert_eq!(
            direction_of("dram__bytes_read.sum", "byte"),
            Direction::Lower
        );
        assert_eq!(
            direction_of("lts__t_sector_hit_rate.pct", "%"),
            Direction::Higher
        );
        assert_eq!(direction_of("Memory Throughput", "%"), Direction::Higher);
        assert_eq!(
            direction_of("dram__bytes.sum.per_second", "byte/second"),
            Direction::Higher
        );
        assert_eq!(direction_of("bytes_per_second", ""), Direction::Higher);
        assert_eq!(
            direction_of("smsp__pcsamp_warps_issue_stalled_barrier.pct", "%"),
            Direction::Lower
        );
    }
}
