//! `kgate import ncu`: Nsight Compute CSV files read by the one ncu parser
//! ([`crate::capture::ncu`]), each launch one sample of the kernel it ran, launches aggregated
//! per kernel name, the device and its clocks kept as the environment's.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use super::builder::Benchmarks;
use super::{ImportError, Importer, Policies, content, read_error};
use crate::capture::device::Device;
use crate::capture::ncu::*;
use crate::model::results::{RepetitionRun, RunResults};

pub static NCU: Importer = Importer {
    name: "ncu",
    help: "Nsight Compute `--csv` output, details or raw page (plus optional `ncu --version` text)",
    selection: None,
    import: |files, ctx| import(files, &ctx.policies),
};

/// Imports ncu CSV files. A file holding `ncu --version` output is not a result: its version is
/// recorded in the provenance of every benchmark and as the environment's `tools.ncu`. The
/// device each file names goes to the environment ([`device`]). Launches continue their
/// numbering across files, so each launch stays one sample.
fn import(files: &[PathBuf], policies: &Policies) -> Result<RunResults, ImportError> {
    let mut benchmarks = Benchmarks::new(policies, "ncu");
    let mut version = None;
    let mut offsets: BTreeMap<String, u32> = BTreeMap::new();
    for path in files {
        if let Some(v) = version_file(path) {
            version = Some((v, path));
            continue;
        }
        let to_import_error = |e: NcuError| match e {
            NcuError::Io(source) => read_error(path)(source),
            NcuError::Content(message) => content(path, message),
        };
        let (file, _gzip) =
            crate::store::fsutil::open_maybe_gzip(path).map_err(|e| to_import_error(e.into()))?;
        let mut ordinal: BTreeMap<String, u32> = BTreeMap::new();
        let mut kernels: BTreeMap<String, Stored> = BTreeMap::new();
        let mut pending = 0usize;
        let report = parse_alongside(
            BufReader::with_capacity(1 << 20, file),
            |metrics, launch| {
                let base = *offsets.get(&launch.kernel).unwrap_or(&0);
                let n = match ordinal.get_mut(&launch.kernel) {
                    Some(n) => n,
                    None => ordinal.entry(launch.kernel.clone()).or_insert(0),
                };
                let repetition = base + *n;
                *n += 1;
                let collector = benchmarks.get(&launch.kernel);
                let stored = match kernels.get_mut(&launch.kernel) {
                    Some(s) => s,
                    None => kernels.entry(launch.kernel.clone()).or_default(),
                };
                stored
                    .take_slots(metrics, &launch.values, collector)
                    .map_err(|e| format!("kernel `{}`: {e}", launch.kernel))?;
                pending += launch.values.len();
                stored.tile.push((repetition, launch.values));
                if stored.tile.len() >= TILE_LAUNCHES {
                    pending -= stored.store(collector);
                }
                if pending > MAX_PENDING_VALUES {
                    for (kernel, stored) in kernels.iter_mut() {
                        stored.store(benchmarks.get(kernel));
                    }
                    pending = 0;
                }
                Ok(())
            },
        )
        .map_err(to_import_error)?;
        for (kernel, stored) in kernels.iter_mut() {
            stored.store(benchmarks.get(kernel));
        }
        for (kernel, n) in ordinal {
            let total = offsets.entry(kernel.clone()).or_insert(0);
            *total += n;
            benchmarks.imported(&kernel, path, *total);
            annotate(&report, &mut benchmarks, &kernel);
        }
        benchmarks.device(path, device(&report))?;
    }
    if benchmarks.names().is_empty()
        && let (Some(_), Some(path)) = (&version, files.first())
    {
        return Err(content(
            path,
            "holds only `ncu --version` output; pass it together with the ncu CSV it belongs to"
                .into(),
        ));
    }
    if let Some((v, path)) = version {
        for name in benchmarks.names().to_vec() {
            benchmarks.detail(&name, "ncu.version", &v);
        }
        let mut tool = Device::default();
        tool.tool("ncu", &v);
        benchmarks.device(path, tool)?;
    }
    benchmarks.finish(files)
}

/// Launches of one kernel stored together: a raw page of thousands of metrics stored launch
/// by launch touches every metric's samples once per value, so launches are gathered into
/// tiles and stored metric by metric. Each metric's samples are found once per tile, and
/// the tile's launches are read from memory: 16,000 x 1,000 with tiles of 16, 32 and 64
/// launches took 0.37, 0.33 and 0.31 s (with the channel of [`CHANNEL_BATCHES`]).
const TILE_LAUNCHES: usize = 64;

/// How many metrics of a tile are stored together (see [`Stored::store`]).
const STORE_BLOCK: usize = 64;

/// The most values waiting in tiles (of all kernels) before all are stored.
const MAX_PENDING_VALUES: usize = 1 << 21;

/// One kernel of an import: report metric position → (collector slot, unit factor), and the
/// launches (repetition, values) not yet stored.
#[derive(Default)]
struct Stored {
    slots: Vec<Option<(usize, f64)>>,
    /// How many leading positions all have a slot.
    leading_slots: usize,
    tile: Vec<(u32, LaunchValues)>,
}

impl Stored {
    /// Gives every metric of `values` a slot in `collector` where it has none: on arrival, so
    /// that a unit clash stops the import where it is met, while the values wait for a tile.
    fn take_slots(
        &mut self,
        metrics: &[MetricInfo],
        values: &LaunchValues,
        collector: &mut crate::capture::Collector<'_>,
    ) -> Result<(), String> {
        self.slots.resize(metrics.len(), None);
        let mut take = |position: usize| -> Result<(), String> {
            if self.slots[position].is_none() {
                let m = &metrics[position];
                self.slots[position] =
                    Some(collector.slot(&m.name, &m.unit, m.source, m.direction)?);
            }
            Ok(())
        };
        match values {
            LaunchValues::Leading(v) => {
                (self.leading_slots..v.len()).try_for_each(&mut take)?;
                self.leading_slots = self.leading_slots.max(v.len());
            }
            LaunchValues::Listed(v) => v.iter().try_for_each(|&(p, _)| take(p))?,
        }
        Ok(())
    }

    /// Stores the tile's launches into `collector`, each metric's samples in launch order;
    /// returns how many values that was. A run of launches with the same metrics in the same
    /// order (every row of a raw page, as a rule) is stored metric by metric.
    fn store(&mut self, collector: &mut crate::capture::Collector<'_>) -> usize {
        let same_metrics = |a: &LaunchValues, b: &LaunchValues| match (a, b) {
            (LaunchValues::Leading(a), LaunchValues::Leading(b)) => a.len() == b.len(),
            (LaunchValues::Listed(a), LaunchValues::Listed(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(a, b)| a.0 == b.0)
            }
            _ => false,
        };
        let mut stored = 0;
        let mut start = 0;
        while start < self.tile.len() {
            let first = &self.tile[start].1;
            let end = start
                + 1
                + self.tile[start + 1..]
                    .iter()
                    .take_while(|(_, values)| same_metrics(values, first))
                    .count();
            let run = &self.tile[start..end];
            let repetitions: Vec<u32> = run.iter().map(|(repetition, _)| *repetition).collect();
            let repetitions = RepetitionRun::new(&repetitions);
            // Metrics a block at a time, and each metric of the block down the run: a launch
            // of a wide page holds thousands of values, so reading one metric down the whole
            // tile would touch a page per value, while a block of every launch stays in cache.
            for block in (0..first.len()).step_by(STORE_BLOCK) {
                for k in block..(block + STORE_BLOCK).min(first.len()) {
                    let position = match first {
                        LaunchValues::Leading(_) => k,
                        LaunchValues::Listed(first) => first[k].0,
                    };
                    // Every position was given a slot when its launch arrived.
                    if let Some((slot, factor)) = self.slots[position] {
                        let values = run.iter().map(|(_, values)| values.nth(k) * factor);
                        collector.extend_at(slot, &repetitions, values);
                    }
                }
            }
            stored += first.len() * run.len();
            start = end;
        }
        self.tile.clear();
        stored
    }
}

/// The device a report names: the device name (or, on a details page that has none, the
/// compute capability of the `CC` column), and the clock attributes of the raw page.
pub fn device(report: &NcuReport) -> Device {
    let mut device = Device::default();
    if report.devices.is_empty() {
        for cc in &report.compute_capabilities {
            device.accelerator(&format!("compute capability {cc}"));
        }
    }
    for name in &report.devices {
        device.accelerator(name);
    }
    for (column, clock) in DEVICE_CLOCKS {
        for khz in report.device_clocks.get(column).into_iter().flatten() {
            if let Ok(khz) = khz.parse::<f64>() {
                device.clock_khz(clock, khz);
            }
        }
    }
    device
}

/// How many values the CSV reading thread gathers before it hands its launches over: one
/// launch of a wide raw page, hundreds of a tall one, so that the two threads meet a few
/// thousand times per gigabyte instead of once per launch.
const BATCH_VALUES: usize = 1 << 16;

/// How many batches may wait for the storing thread: enough for a tile of
/// [`TILE_LAUNCHES`] launches of each of two interleaved kernels of a wide page (about 40 MB
/// at most), so that the reading thread does not wait while a tile is stored. With 16, the
/// reader stalled behind each tile: 16,000 x 1,000 took 0.36 s against 0.31 s.
const CHANNEL_BATCHES: usize = 64;

/// [`parse_each`] on a thread of its own, handing the launches to `on_launch` on this one, in
/// order, in batches of about [`BATCH_VALUES`] values: splitting the CSV and parsing its
/// numbers overlap with storing the samples, which for a raw page of thousands of metrics take
/// about as long. An error of `on_launch` stops the parse and is the one returned; every
/// launch read before a parse error is handed over first, so an error in the samples before
/// it is still the one reported.
fn parse_alongside<R: BufRead + Send>(
    input: R,
    mut on_launch: impl FnMut(&[MetricInfo], Launch) -> Result<(), String>,
) -> Result<NcuReport, NcuError> {
    type Message = (Option<std::sync::Arc<Vec<MetricInfo>>>, Vec<Launch>);
    std::thread::scope(|scope| {
        let (sender, receiver) = std::sync::mpsc::sync_channel::<Message>(CHANNEL_BATCHES);
        let parser = scope.spawn(move || {
            // The metric list only grows, so the one current when a batch is sent covers
            // every launch in it; it is copied when it has grown, and sent again then.
            let mut current: std::sync::Arc<Vec<MetricInfo>> = Default::default();
            let mut sent = None;
            let mut send = |current: &std::sync::Arc<Vec<MetricInfo>>, batch: Vec<Launch>| {
                let fresh = (sent != Some(current.len())).then(|| {
                    sent = Some(current.len());
                    current.clone()
                });
                sender
                    .send((fresh, batch))
                    .map_err(|_| "stopped by an earlier error".to_string())
            };
            let mut batch: Vec<Launch> = Vec::new();
            let mut values = 0;
            let report = parse_each(input, &mut |metrics, launch| {
                if current.len() != metrics.len() {
                    current = std::sync::Arc::new(metrics.to_vec());
                }
                values += launch.values.len().max(1);
                batch.push(launch);
                if values < BATCH_VALUES {
                    return Ok(());
                }
                values = 0;
                send(&current, std::mem::take(&mut batch))
            });
            if !batch.is_empty() {
                // Ignored when the receiver has stopped: its error is the one reported.
                let _ = send(&current, batch);
            }
            report
        });
        let mut metrics = std::sync::Arc::new(Vec::new());
        let mut failure = None;
        'batches: for (fresh, batch) in receiver.iter() {
            if let Some(fresh) = fresh {
                metrics = fresh;
            }
            for launch in batch {
                if let Err(e) = on_launch(&metrics, launch) {
                    failure = Some(e);
                    break 'batches;
                }
            }
        }
        drop(receiver);
        let report = parser
            .join()
            .unwrap_or_else(|_| Err(NcuError::Content("the CSV reading thread failed".into())));
        match failure {
            Some(message) => Err(NcuError::Content(message)),
            None => report,
        }
    })
}

/// Provenance details of a report on one benchmark.
fn annotate(report: &NcuReport, benchmarks: &mut Benchmarks<'_>, name: &str) {
    let provenance = &mut benchmarks.get(name).result_mut().provenance;
    annotate_details(report, &mut provenance.details);
    if let Some(note) = repeated_rows_note(report, name) {
        provenance.notes.push(note);
    }
}

/// The warning for details-page rows of `kernel` that were not imported, if any.
pub fn repeated_rows_note(report: &NcuReport, kernel: &str) -> Option<String> {
    let (count, first) = report.repeated_rows.get(kernel)?;
    let rows = if *count == 1 { "row" } else { "rows" };
    Some(format!(
        "{count} details-page {rows} not imported: each repeats the section, body item and metric of an earlier row of the same launch (the first: {first}), so ncu wrote that metric twice"
    ))
}

/// The version, when `path` holds `ncu --version` output (small and without CSV). At most
/// 4 KiB are read, so that a device or a stream is left to the CSV reader's bounds; only a
/// regular file is looked at, as a pipe's first bytes would be gone for the CSV reader.
fn version_file(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > 4096 {
        return None;
    }
    let mut bytes = Vec::new();
    let file = File::open(path).ok()?;
    file.take(4097).read_to_end(&mut bytes).ok()?;
    if bytes.len() > 4096 {
        return None;
    }
    let text = String::from_utf8(bytes).ok()?;
    if text.contains("\"ID\",") {
        return None;
    }
    parse_version(&text)
}

#[cfg(test)]
mod storing_tests {
    use super::*;
    use crate::import::{ImportContext, Policies};

    /// Rows with a number for every metric (kept as the numbers alone) and rows with gaps
    /// (kept as pairs), interleaved over two kernels and more launches than a tile holds:
    /// each metric of each kernel gets exactly its own numbers, in launch order.
    #[test]
    fn rows_with_and_without_gaps_store_the_same_samples() {
        let metrics = 70; // more than one block of a tile
        let launches = 2 * TILE_LAUNCHES + 7;
        let names: String = (0..metrics).map(|m| format!(",\"m{m}\"")).collect();
        let mut csv = format!(
            "\"ID\",\"Kernel Name\"{names}\n\"\",\"\"{}\n",
            ",\"ns\"".repeat(metrics)
        );
        let value = |l: usize, m: usize| (l * 1000 + m) as f64;
        let gap = |l: usize, m: usize| l % 5 == 3 && m % 7 == 2;
        for l in 0..launches {
            csv.push_str(&format!("\"{l}\",\"k{}\"", l % 2));
            for m in 0..metrics {
                match gap(l, m) {
                    true => csv.push_str(",\"\""),
                    false => csv.push_str(&format!(",\"{}\"", value(l, m))),
                }
            }
            csv.push('\n');
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("raw.csv");
        std::fs::write(&path, csv).unwrap();
        let ctx = ImportContext::new(Policies::permissive());
        let results = NCU.import(&[path], &ctx).unwrap();
        assert_eq!(results.benchmarks.len(), 2);
        for (k, benchmark) in results.benchmarks.iter().enumerate() {
            assert_eq!(benchmark.name, format!("k{k}"));
            assert_eq!(benchmark.metrics.len(), metrics);
            for (m, samples) in benchmark.metrics.iter().enumerate() {
                assert_eq!(samples.name, format!("m{m}"));
                let (mut values, mut repetitions) = (Vec::new(), Vec::new());
                for (n, l) in (k..launches).step_by(2).enumerate() {
                    if !gap(l, m) {
                        values.push(value(l, m));
                        repetitions.push(n as u32);
                    }
                }
                let at = format!("kernel k{k}, metric m{m}");
                assert_eq!(samples.values, values, "{at}");
                assert_eq!(samples.repetition, repetitions, "{at}");
                // A metric in every launch holds its repetition numbers as a count, not a list.
                let in_every_launch = (k..launches).step_by(2).all(|l| !gap(l, m));
                let one_per_value = samples.repetition.is_one_per_value();
                assert_eq!(one_per_value, in_every_launch, "{at}");
            }
        }
    }
}
