//! Shared assembly of imported benchmarks: profiler and harness files name benchmarks (kernels,
//! test names, commands) in their own way, but all end as named samples in a [`Collector`].
//! This keeps first-seen order, one collector per benchmark and the provenance bookkeeping in
//! one place so each format module only says what it read.
//!
//! [`Collector`]: crate::capture::Collector

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::{ImportError, Policies, content, run_results};
use crate::capture::Collector;
use crate::capture::device::Device;
use crate::machine::fingerprint::Fingerprint;
use crate::model::metric::{Source, direction_of};
use crate::model::results::{Provenance, RunResults};
use crate::model::units;

/// Where a metric of one benchmark keeps its samples, and the factor into its canonical unit:
/// unknown until [`Benchmarks::add_at`] first adds to it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Slot(Option<(usize, f64)>);

/// The device time of a kernel launch, as [`Benchmarks::add_at`] takes a metric.
pub const KERNEL_TIME: (&str, &str, Source) = ("kernel_time", "ns", Source::Timer);

/// Benchmarks under construction, in the order they were first seen.
pub struct Benchmarks<'p> {
    policies: &'p Policies,
    capture: &'static str,
    order: Vec<String>,
    /// In first-seen order, as `order` names them.
    collectors: Vec<Collector<'p>>,
    /// Position of each name in `order`: imports look a benchmark up per sample.
    index: HashMap<String, usize>,
    /// The file being read, named in errors.
    file: PathBuf,
    /// What the files read so far say about the device they were measured on.
    device: Device,
    /// This machine's fingerprint, taken while the files are read.
    host: HostCapture,
}

/// This machine's fingerprint without its accelerator, the base of imported results, taken on
/// a thread of its own from the start of an import: its `git status` walks the whole work
/// tree, which in a large repository takes as long as reading a large file, and nothing it
/// reads depends on the files imported.
struct HostCapture(Option<std::thread::JoinHandle<Fingerprint>>);

impl HostCapture {
    fn start() -> HostCapture {
        HostCapture::start_with(|| Fingerprint::capture_host(Path::new(".")))
    }

    fn start_with(capture: impl FnOnce() -> Fingerprint + Send + 'static) -> HostCapture {
        HostCapture(
            std::thread::Builder::new()
                .name("kgate-host".into())
                .spawn(capture)
                .ok(),
        )
    }

    /// The fingerprint; taken here when no thread could be started for it.
    fn finish(mut self) -> Fingerprint {
        self.0
            .take()
            .and_then(|thread| thread.join().ok())
            .unwrap_or_else(|| Fingerprint::capture_host(Path::new(".")))
    }
}

impl Drop for HostCapture {
    /// An import that fails waits for the thread too, so that none is left running (with its
    /// `git` child) past the import that started it: a library caller, a test or a fuzzer
    /// that imports again and again would otherwise gather them.
    fn drop(&mut self) {
        if let Some(thread) = self.0.take() {
            let _ = thread.join();
        }
    }
}

impl<'p> Benchmarks<'p> {
    /// `capture` names the format in each benchmark's provenance (`ncu`, `gbench`).
    pub fn new(policies: &'p Policies, capture: &'static str) -> Benchmarks<'p> {
        Benchmarks {
            policies,
            capture,
            order: Vec::new(),
            collectors: Vec::new(),
            index: HashMap::new(),
            file: PathBuf::new(),
            device: Device::default(),
            host: HostCapture::start(),
        }
    }

    /// The collector of benchmark `name`, created on first use.
    pub fn get(&mut self, name: &str) -> &mut Collector<'p> {
        if let Some(&i) = self.index.get(name) {
            return &mut self.collectors[i];
        }
        self.index.insert(name.to_string(), self.order.len());
        self.order.push(name.to_string());
        let provenance = Provenance {
            captures: vec![self.capture.to_string()],
            ..Provenance::default()
        };
        let policy = self.policies.for_benchmark(name);
        self.collectors
            .push(Collector::new(name, policy, provenance));
        self.collectors.last_mut().expect("pushed above")
    }

    /// Puts the benchmarks in the order of `key` (a stable sort: equal keys keep the order
    /// they were first seen in).
    pub fn sort_by_key<K: Ord>(&mut self, mut key: impl FnMut(&str) -> K) {
        let order = std::mem::take(&mut self.order);
        let mut pairs: Vec<_> = order.into_iter().zip(self.collectors.drain(..)).collect();
        pairs.sort_by_cached_key(|(name, _)| key(name));
        (self.order, self.collectors) = pairs.into_iter().unzip();
        let places = self.order.iter().enumerate();
        self.index = places.map(|(i, name)| (name.clone(), i)).collect();
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
            .map_err(|message| content!(&self.file, "benchmark `{name}`: {message}"))
    }

    /// [`Benchmarks::add`] for a metric added again and again (a column of every row of a
    /// file): the metric and its unit are looked up once, and `slot` keeps where it is. A
    /// value `add` would refuse (not finite, a negative time) goes through `add`, which says
    /// why.
    pub fn add_at(
        &mut self,
        slot: &mut Slot,
        name: &str,
        repetition: u32,
        (metric, unit, source): (&str, &str, Source),
        value: f64,
    ) -> Result<(), ImportError> {
        let (at, factor) = match slot.0 {
            Some(found) => found,
            None => {
                let found = self
                    .get(name)
                    .slot(metric, unit, source, direction_of(metric, unit))
                    .map_err(|message| content!(&self.file, "benchmark `{name}`: {message}"))?;
                slot.0 = Some(found);
                found
            }
        };
        let converted = value * factor;
        if !converted.is_finite() || (converted < 0.0 && units::normalize(unit).is_time()) {
            return self.add(name, repetition, metric, unit, source, value);
        }
        self.get(name).push_at(at, repetition, converted);
        Ok(())
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

    /// Adds `note` to benchmark `name`'s provenance, once.
    pub fn note(&mut self, name: &str, note: String) {
        let notes = &mut self.get(name).result_mut().provenance.notes;
        if !notes.contains(&note) {
            notes.push(note);
        }
    }

    /// Records a provenance detail on benchmark `name`.
    pub fn detail(&mut self, name: &str, key: &str, value: &str) {
        let details = &mut self.get(name).result_mut().provenance.details;
        details.insert(key.to_string(), value.to_string());
    }

    /// Records the device that `path` names (an empty [`Device`] names none); a device other
    /// than the one earlier files named is an error.
    pub fn device(&mut self, path: &Path, found: Device) -> Result<(), ImportError> {
        let merged = self.device.merge(found);
        merged.map_err(|message| content(path, message))
    }

    /// Names seen so far.
    pub fn names(&self) -> &[String] {
        &self.order
    }

    /// The results file; fails when nothing was imported.
    pub fn finish(self, files: &[std::path::PathBuf]) -> Result<RunResults, ImportError> {
        if self.order.is_empty() {
            let message = format!("no {} benchmark was found in the given files", self.capture);
            return Err(content(files.first().map_or(Path::new(""), |f| f), message));
        }
        Ok(self.into_results())
    }

    /// The results file, in first-seen order, whatever was imported.
    pub fn into_results(self) -> RunResults {
        let benchmarks = self.collectors.into_iter().map(Collector::finish).collect();
        run_results(benchmarks, &self.device, self.host.finish())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A capture that is dropped unfinished, as a failed import drops it, has ended when the
    /// drop returns: no thread outlives the import.
    #[test]
    fn a_host_capture_dropped_unfinished_is_waited_for() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, Ordering};
        let ended = Arc::new(AtomicBool::new(false));
        let capture = HostCapture::start_with({
            let ended = ended.clone();
            move || {
                std::thread::sleep(std::time::Duration::from_millis(50));
                ended.store(true, Ordering::SeqCst);
                Fingerprint::default()
            }
        });
        drop(capture);
        let ended = ended.load(Ordering::SeqCst);
        assert!(ended, "the capture's thread was left running");
    }
}
