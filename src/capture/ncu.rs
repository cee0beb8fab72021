//! Nsight Compute's CSV (details page and raw page): the one parser of ncu's output, which the
//! `ncu` capture backend and `kgate import ncu` share.
//!
//! ncu's CSV is rarely clean: `==PROF==` lines and the profiled program's own output surround
//! it, Windows captures carry a byte-order mark and CRLF, en-US builds group thousands
//! (`"134,221,568"`), rows of the details page are ragged, and a failed run writes no CSV at
//! all. The reader (`ncu_csv`) therefore keeps only the CSV records (quoted lines from
//! the `"ID",…` header on), splits them itself, and remembers the profiler's own messages, so
//! a run without CSV is reported with ncu's words. Values are scaled to base units
//! (`usecond` → ns, `Gbyte` → byte, `Mhz` → hz); each launch becomes one sample of the kernel
//! it ran, and launches are aggregated per kernel name. On the details page a metric is
//! keyed by its section, its body item (`Body Item Label`: the rows of a roofline chart, or
//! of one table among several) and its name, so rows that differ only in the body item stay
//! apart; a row that repeats all three is not imported, and the provenance says so.
//!
//! Input is bounded: a line (or a quoted field spanning lines) of more than
//! [`MAX_LINE_BYTES`] and a file of more than [`MAX_INPUT_BYTES`] are refused, so that a
//! device or an endless stream ends in an error instead of exhausting memory.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read};

use super::ncu_csv::{RecordError, Records};
use std::path::Path;

use super::device::{MEM_MAX_MHZ, SM_MAX_MHZ};
use crate::model::metric::{Direction, Source, direction_of};

/// The columns that identify a launch in both pages; everything else is a metric.
#[rustfmt::skip]
const IDENTITY_COLUMNS: [&str; 11] = [
    "ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
    "Block Size", "Grid Size", "Device", "CC",
];

/// The longest line (or quoted field spanning lines) read: a raw-page row of thousands of
/// metrics is a few hundred kilobytes.
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// The most bytes read from one input: beyond any real export (a details page of every
/// section for tens of thousands of launches), and a bound for an endless stream.
pub const MAX_INPUT_BYTES: u64 = 8 << 30;

/// The replay-pass count ncu reports on the raw page; kept as provenance, not as a metric.
pub const REPLAY_PASSES: &str = "profiler__replayer_passes";

/// Columns (raw page) or metric names (details page, text values) that name the device.
const DEVICE_NAME: [&str; 2] = ["device__attribute_display_name", "Device Name"];

/// Device attributes (kHz) kept as the environment's clocks: column → clock key.
pub(crate) const DEVICE_CLOCKS: [(&str, &str); 2] = [
    ("device__attribute_clock_rate", SM_MAX_MHZ),
    ("device__attribute_memory_clock_rate", MEM_MAX_MHZ),
];

/// What ncu reported: the metrics seen, launches in file order (when collected) and facts
/// about the capture.
#[derive(Debug, Default)]
pub struct NcuReport {
    /// Every metric a launch refers to, by position.
    pub metrics: Vec<MetricInfo>,
    pub launches: Vec<Launch>,
    /// How many launches were read (also when they went to a callback).
    pub launch_count: usize,
    /// `details` or `raw`.
    pub page: &'static str,
    /// Values of the replay-pass columns (unit `pass`), by column name.
    pub passes: BTreeMap<String, BTreeSet<String>>,
    /// Device names (`device__attribute_display_name`).
    pub devices: BTreeSet<String>,
    /// Compute capabilities (the `CC` column, `10.0`).
    pub compute_capabilities: BTreeSet<String>,
    /// Clock attributes of the device (kHz), by column name.
    pub device_clocks: BTreeMap<String, BTreeSet<String>>,
    /// How many cells held `n/a`.
    pub not_available: usize,
    /// Cells with a number in a locale that had to be guessed (`1.234,5`), for the record.
    pub regrouped_numbers: usize,
    /// Details-page rows not imported because an earlier row of the same launch had the same
    /// section, body item and metric name, by kernel: how many, and the first one.
    pub repeated_rows: BTreeMap<String, (usize, String)>,
}

/// A metric: its name, base unit, trust and usual direction.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricInfo {
    pub name: String,
    pub unit: String,
    pub source: Source,
    pub direction: Direction,
}

impl MetricInfo {
    fn new(name: String, unit: String) -> MetricInfo {
        MetricInfo {
            source: source_of(&unit),
            direction: direction_of(&name, &unit),
            name,
            unit,
        }
    }
}

/// One kernel launch: values in base units, by position in [`NcuReport::metrics`].
#[derive(Debug)]
pub struct Launch {
    pub id: String,
    pub kernel: String,
    pub values: LaunchValues,
}

/// A launch's values. A raw page's row holds, as a rule, a number for every metric in order,
/// which is kept as the numbers alone: half the memory, and no positions to compare when
/// launches are stored metric by metric.
#[derive(Debug, Clone, PartialEq)]
pub enum LaunchValues {
    /// The values of positions `0..len`, in order.
    Leading(Vec<f64>),
    /// (position, value) pairs, in the order they were read.
    Listed(Vec<(usize, f64)>),
}

impl LaunchValues {
    pub fn len(&self) -> usize {
        match self {
            LaunchValues::Leading(v) => v.len(),
            LaunchValues::Listed(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `k`-th value.
    #[inline]
    pub(crate) fn nth(&self, k: usize) -> f64 {
        match self {
            LaunchValues::Leading(v) => v[k],
            LaunchValues::Listed(v) => v[k].1,
        }
    }

    /// (position, value) of every value, in order.
    pub fn iter(&self) -> impl Iterator<Item = (usize, f64)> + '_ {
        let (leading, listed) = match self {
            LaunchValues::Leading(v) => (v.as_slice(), &[][..]),
            LaunchValues::Listed(v) => (&[][..], v.as_slice()),
        };
        leading
            .iter()
            .copied()
            .enumerate()
            .chain(listed.iter().copied())
    }
}

/// Why ncu output could not be read.
#[derive(Debug, thiserror::Error)]
pub enum NcuError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Content(String),
}

impl From<RecordError> for NcuError {
    fn from(e: RecordError) -> NcuError {
        match e {
            RecordError::Io(e) => NcuError::Io(e),
            RecordError::Content(message) => NcuError::Content(message),
        }
    }
}

/// Where a number is trusted from: a duration is a device timer, every other ncu value comes
/// from the hardware counters (or ncu's arithmetic on them).
pub fn source_of(unit: &str) -> Source {
    if unit == "ns" {
        Source::Timer
    } else {
        Source::Hardware
    }
}

/// Reads ncu CSV output from a file, keeping every launch.
pub fn parse_file(path: &Path) -> Result<NcuReport, NcuError> {
    let (file, _gzip) = crate::store::fsutil::open_maybe_gzip(path)?;
    parse(BufReader::with_capacity(1 << 20, file))
}

/// Reads ncu CSV output (details or raw page, with any log lines around it).
pub fn parse<R: BufRead>(input: R) -> Result<NcuReport, NcuError> {
    let mut launches = Vec::new();
    let mut report = parse_each(input, &mut |_, launch| {
        launches.push(launch);
        Ok(())
    })?;
    report.launches = launches;
    Ok(report)
}

/// What receives each launch as it is read; an error stops the parse.
pub type OnLaunch<'a> = dyn FnMut(&[MetricInfo], Launch) -> Result<(), String> + 'a;

/// Reads ncu CSV output and hands every launch to `on_launch` as soon as it is complete (each
/// row of the raw page; the details page at the end), so memory does not grow with the
/// number of launches. The returned report has no launches.
pub fn parse_each<R: BufRead>(
    input: R,
    on_launch: &mut OnLaunch<'_>,
) -> Result<NcuReport, NcuError> {
    parse_each_reading(input, on_launch, RowReading::OnePass)
}

/// How a raw page's rows are read: each in one pass where it is plain (the rule), or every
/// row split into fields first (the reference the one-pass reading is tested against).
#[derive(Clone, Copy, PartialEq)]
enum RowReading {
    OnePass,
    #[cfg(test)]
    SplitFirst,
}

fn parse_each_reading<R: BufRead>(
    input: R,
    on_launch: &mut OnLaunch<'_>,
    reading: RowReading,
) -> Result<NcuReport, NcuError> {
    let mut records = Records::new(input, MAX_LINE_BYTES, MAX_INPUT_BYTES);
    if !records.next_record()? {
        return Err(NcuError::Content(records.no_csv_message()));
    }
    let header: Vec<String> = records
        .iter()
        .map(|f| String::from_utf8_lossy(f).into_owned())
        .collect();
    let report = if header.iter().any(|h| h == "Metric Value") {
        read_details(&mut records, &header, on_launch)?
    } else if header.iter().any(|h| h == "Average" || h == "Invocations") {
        return Err(NcuError::Content(
            "is an ncu `--print-summary` table, which holds only per-kernel aggregates and no launch kgate could take as a sample; export per launch instead (`ncu --csv --page raw`, or the details page without --print-summary)".into(),
        ));
    } else {
        read_raw(&mut records, &header, on_launch, reading)?
    };
    if report.launch_count == 0 {
        return Err(NcuError::Content(format!(
            "holds the ncu CSV header but no kernel launch after it, so there is nothing to import; the profiled run may have stopped before its first kernel finished{}",
            records.last_messages()
        )));
    }
    Ok(report)
}

/// Refuses a record with a field that is not UTF-8 (the details page reads its cells as text).
fn check_utf8<R: Read>(records: &Records<R>) -> Result<(), NcuError> {
    for (i, field) in records.iter().enumerate() {
        if let Err(e) = std::str::from_utf8(field) {
            let (line, field, byte) = (records.line(), i + 1, e.valid_up_to() + 1);
            return Err(NcuError::Content(format!(
                "line {line}: field {field} is not UTF-8 text (its byte {byte} is not), so it is not ncu `--csv` output as ncu writes it; pass the file that `ncu --csv` or `--log-file` wrote"
            )));
        }
    }
    Ok(())
}

fn column(header: &[String], name: &str) -> Result<usize, NcuError> {
    header.iter().position(|h| h == name).ok_or_else(|| {
        NcuError::Content(format!(
            "its CSV header (`\"ID\",…`) has no `{name}` column, so it is not the details or raw page of ncu `--csv`, the two kgate reads; export with `ncu --csv` (details page) or `ncu --csv --page raw`"
        ))
    })
}

/// The long format: one row per (launch, metric).
fn read_details<R: Read>(
    records: &mut Records<R>,
    header: &[String],
    on_launch: &mut OnLaunch<'_>,
) -> Result<NcuReport, NcuError> {
    let id_col = column(header, "ID")?;
    let kernel_col = column(header, "Kernel Name")?;
    let section_col = column(header, "Section Name").ok();
    let body_col = column(header, "Body Item Label").ok();
    let cc_col = column(header, "CC").ok();
    let name_col = column(header, "Metric Name")?;
    let unit_col = column(header, "Metric Unit")?;
    let value_col = column(header, "Metric Value")?;
    let mut report = NcuReport {
        page: "details",
        ..NcuReport::default()
    };
    // Each launch (ID, kernel) in the order first met, and its values.
    let mut launches: Vec<(String, String)> = Vec::new();
    let mut values: Vec<Vec<(usize, f64)>> = Vec::new();
    let mut by_id: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut metric_index: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut seen: BTreeSet<(usize, String)> = BTreeSet::new();
    let mut keys: BTreeSet<(usize, String, String, String)> = BTreeSet::new();
    while records.next_record()? {
        check_utf8(records)?;
        // Ragged rows: fields missing at the end are empty.
        let cell = |i: usize| {
            let field = records.get(i).and_then(|f| std::str::from_utf8(f).ok());
            field.unwrap_or("")
        };
        let metric = cell(name_col);
        if metric.is_empty() {
            continue; // a rule row
        }
        if let Some(cc) = cc_col.map(cell).filter(|c| !c.trim().is_empty()) {
            report.compute_capabilities.insert(cc.trim().to_string());
        }
        if DEVICE_NAME.contains(&metric) {
            let name = cell(value_col).trim();
            if !name.is_empty() {
                report.devices.insert(name.to_string());
            }
            continue;
        }
        let key = (cell(id_col).to_string(), cell(kernel_col).to_string());
        let index = *by_id.entry(key.clone()).or_insert_with(|| {
            launches.push(key.clone());
            values.push(Vec::new());
            launches.len() - 1
        });
        let (unit, factor) = base_unit(cell(unit_col));
        let Some(number) = parse_in_base_unit(
            cell(value_col).as_bytes(),
            &mut report,
            factor,
            super::decimal::power_of_ten(factor),
        ) else {
            continue; // text such as `PolicySpread`, or n/a
        };
        let section = section_col.map(cell).unwrap_or("").trim();
        let body = body_col.map(cell).unwrap_or("").trim();
        let count_repeat = |report: &mut NcuReport, kernel: &str| {
            let entry = report
                .repeated_rows
                .entry(kernel.to_string())
                .or_insert_with(|| (0, row_label(section, body, metric)));
            entry.0 += 1;
        };
        // A row of a body item (a roofline chart's rows, one table among several) is named by
        // its section and body item; other labels can repeat across sections, and the second
        // one is qualified by its section. A row whose section, body item and metric all
        // repeat an earlier row of the launch is counted, not imported.
        if !keys.insert((
            index,
            section.to_string(),
            body.to_string(),
            metric.to_string(),
        )) {
            count_repeat(&mut report, &key.1);
            continue;
        }
        let mut name = if body.is_empty() {
            metric.to_string()
        } else {
            format!("{section}: {body}: {metric}")
        };
        if !seen.insert((index, name.clone())) {
            name = format!("{section}: {metric}");
            if !seen.insert((index, name.clone())) {
                // Distinct keys whose names still meet (a section named like a body item):
                // the full key names it.
                name = format!("{section}: {body}: {metric}");
                if !seen.insert((index, name.clone())) {
                    count_repeat(&mut report, &key.1);
                    continue;
                }
            }
        }
        let metrics = &mut report.metrics;
        let position = *metric_index
            .entry((name.clone(), unit.clone()))
            .or_insert_with(|| {
                metrics.push(MetricInfo::new(name, unit));
                metrics.len() - 1
            });
        values[index].push((position, number));
    }
    report.launch_count = launches.len();
    for ((id, kernel), values) in launches.into_iter().zip(values) {
        let launch = Launch {
            id,
            kernel,
            values: LaunchValues::Listed(values),
        };
        on_launch(&report.metrics, launch).map_err(NcuError::Content)?;
    }
    Ok(report)
}

/// A details-page row in words: `Section / body item / Metric`.
fn row_label(section: &str, body: &str, metric: &str) -> String {
    [section, body, metric]
        .iter()
        .filter(|p| !p.is_empty())
        .map(|p| format!("`{p}`"))
        .collect::<Vec<_>>()
        .join(" / ")
}

/// How a raw-page column is used.
enum RawColumn {
    Ignore,
    /// A metric's column: its position, and the factor into its base unit (with the power of
    /// ten it is, where it is one).
    Metric {
        position: usize,
        factor: f64,
        exp10: Option<i32>,
    },
    Passes(String),
    DeviceName,
    ComputeCapability,
    DeviceClock(String),
}

/// The wide format: one row per launch, a units row after the header.
fn read_raw<R: Read>(
    records: &mut Records<R>,
    header: &[String],
    on_launch: &mut OnLaunch<'_>,
    reading: RowReading,
) -> Result<NcuReport, NcuError> {
    let id_col = column(header, "ID")?;
    let kernel_col = column(header, "Kernel Name")?;
    let mut report = NcuReport {
        page: "raw",
        ..NcuReport::default()
    };
    let mut columns: Option<Vec<RawColumn>> = None;
    let mut other_cells = Vec::new();
    while records.next_unsplit()? {
        // One row's values, whichever way the row is read (a one-pass reading that gives up
        // leaves it empty).
        let mut values = RowValues::with_capacity(report.metrics.len());
        if let Some(columns) = columns.as_ref().filter(|_| reading == RowReading::OnePass)
            && let Some(launch) = read_plain_row(
                records.first_line(),
                columns,
                (id_col, kernel_col),
                &mut report,
                &mut values,
                &mut other_cells,
            )
        {
            report.launch_count += 1;
            on_launch(&report.metrics, launch).map_err(NcuError::Content)?;
            continue;
        }
        records.split_current()?;
        let record = &*records;
        let id = String::from_utf8_lossy(record.get(id_col).unwrap_or(b""));
        if columns.is_none() {
            let units_row = id.is_empty();
            let unit_of = |i: usize| {
                if units_row {
                    String::from_utf8_lossy(record.get(i).unwrap_or(b"")).into_owned()
                } else {
                    String::new()
                }
            };
            columns = Some(
                header
                    .iter()
                    .enumerate()
                    .map(|(i, name)| classify(name, &unit_of(i), &mut report.metrics))
                    .collect(),
            );
            if units_row {
                continue;
            }
        }
        let columns = columns.as_ref().expect("set above");
        for (field, col) in record.iter().zip(columns) {
            // Metric columns, nearly every cell of a raw page, are tested for first, before
            // the `match` of the other kinds (a jump table, an indirect branch per cell): with
            // the inlined conversion, 4 % less CPU time on a wide page, measured turn by turn.
            if let RawColumn::Metric {
                position,
                factor,
                exp10,
            } = col
            {
                if let Some(v) = parse_in_base_unit(field, &mut report, *factor, *exp10) {
                    values.push(*position, v);
                }
                continue;
            }
            note_cell(col, field, &mut report);
        }
        let launch = Launch {
            id: id.into_owned(),
            kernel: String::from_utf8_lossy(record.get(kernel_col).unwrap_or(b"")).into_owned(),
            values: values.finish(),
        };
        report.launch_count += 1;
        on_launch(&report.metrics, launch).map_err(NcuError::Content)?;
    }
    Ok(report)
}

/// A raw-page row read in one pass, without splitting it into fields first: every cell
/// quoted, no `""` inside one, a comma after each but the last, which ends the line (before a
/// `\r` of CRLF), and exactly one cell per column. That is every row ncu writes, and the cells
/// read here are the fields [`Records::split_current`] would give. `None`, with `report` as it
/// was, for any other row, which the caller then splits; `other_cells` is room for the
/// non-metric cells (column, start, end), kept until the row is known to be whole.
fn read_plain_row(
    line: &[u8],
    columns: &[RawColumn],
    (id_col, kernel_col): (usize, usize),
    report: &mut NcuReport,
    values: &mut RowValues,
    other_cells: &mut Vec<(usize, usize, usize)>,
) -> Option<Launch> {
    let counts = (report.not_available, report.regrouped_numbers);
    other_cells.clear();
    let line = match line.split_last() {
        Some((b'\r', rest)) => rest,
        _ => line,
    };
    let mut at = 0;
    let whole = columns.iter().enumerate().all(|(i, col)| {
        if line.get(at) != Some(&b'"') {
            return false;
        }
        let start = at + 1;
        // Most cells hold at most eight bytes: the word that holds their digits also holds
        // their closing quote, or the byte after it does.
        let word = super::bytes::word_at(line, start);
        let quote = word.map_or(0, |w| super::bytes::bytes_equal_to(w, b'"'));
        let (end, in_word) = if quote != 0 {
            (start + (quote.trailing_zeros() / 8) as usize, true)
        } else if word.is_some() && line.get(start + 8) == Some(&b'"') {
            (start + 8, true)
        } else {
            match super::bytes::find(b'"', &line[start..]) {
                Some(n) => (start + n, false),
                None => return false,
            }
        };
        let last = i + 1 == columns.len();
        match line.get(end + 1) {
            Some(b',') if !last => at = end + 2,
            None if last => {}
            _ => return false,
        }
        let cell = &line[start..end];
        if let RawColumn::Metric {
            position,
            factor,
            exp10,
        } = col
        {
            let in_word = match (word, exp10) {
                (Some(word), Some(k)) if in_word && !cell.is_empty() => {
                    super::decimal::parse_unsigned_in_word(word, cell.len(), *k)
                }
                _ => None,
            };
            if let Some(v) = in_word.or_else(|| parse_in_base_unit(cell, report, *factor, *exp10)) {
                values.push(*position, v);
            }
        } else {
            other_cells.push((i, start, end));
        }
        true
    });
    if !whole {
        (report.not_available, report.regrouped_numbers) = counts;
        values.clear();
        return None;
    }
    let text_of = |col: usize| {
        other_cells
            .iter()
            .find(|&&(i, _, _)| i == col)
            .map_or(String::new(), |&(_, s, e)| {
                String::from_utf8_lossy(&line[s..e]).into_owned()
            })
    };
    let launch = Launch {
        id: text_of(id_col),
        kernel: text_of(kernel_col),
        values: std::mem::take(values).finish(),
    };
    for &(i, s, e) in other_cells.iter() {
        note_cell(&columns[i], &line[s..e], report);
    }
    Some(launch)
}

/// A raw-page row's values as they are read: the numbers alone while every metric so far held
/// one (metric columns are numbered in their order), (position, value) pairs after a gap.
#[derive(Default)]
struct RowValues {
    leading: Vec<f64>,
    listed: Option<Vec<(usize, f64)>>,
}

impl RowValues {
    fn with_capacity(n: usize) -> RowValues {
        RowValues {
            leading: Vec::with_capacity(n),
            listed: None,
        }
    }

    #[inline(always)]
    fn push(&mut self, position: usize, value: f64) {
        if self.listed.is_none() && position == self.leading.len() {
            self.leading.push(value);
        } else {
            self.push_listed(position, value);
        }
    }

    #[cold]
    #[inline(never)]
    fn push_listed(&mut self, position: usize, value: f64) {
        let listed = self.listed.get_or_insert_with(|| {
            let mut listed = Vec::with_capacity(self.leading.capacity());
            listed.extend(self.leading.drain(..).enumerate());
            listed
        });
        listed.push((position, value));
    }

    fn clear(&mut self) {
        self.leading.clear();
        self.listed = None;
    }

    fn finish(self) -> LaunchValues {
        match self.listed {
            Some(listed) => LaunchValues::Listed(listed),
            None => LaunchValues::Leading(self.leading),
        }
    }
}

/// Keeps what a raw page's non-metric cell says of the capture: replay passes, the device's
/// name, compute capability and clocks.
fn note_cell(col: &RawColumn, field: &[u8], report: &mut NcuReport) {
    if matches!(col, RawColumn::Ignore | RawColumn::Metric { .. }) {
        return;
    }
    let text = String::from_utf8_lossy(field).trim().to_string();
    if text.is_empty() {
        return;
    }
    let noted = match col {
        RawColumn::Passes(name) => report.passes.entry(name.clone()).or_default(),
        RawColumn::DeviceName => &mut report.devices,
        RawColumn::ComputeCapability => &mut report.compute_capabilities,
        RawColumn::DeviceClock(name) => report.device_clocks.entry(name.clone()).or_default(),
        RawColumn::Ignore | RawColumn::Metric { .. } => return,
    };
    noted.insert(text);
}

fn classify(name: &str, unit: &str, metrics: &mut Vec<MetricInfo>) -> RawColumn {
    if name == "CC" {
        RawColumn::ComputeCapability
    } else if IDENTITY_COLUMNS.contains(&name) {
        RawColumn::Ignore
    } else if DEVICE_NAME.contains(&name) {
        RawColumn::DeviceName
    } else if DEVICE_CLOCKS.iter().any(|(column, _)| *column == name) {
        RawColumn::DeviceClock(name.to_string())
    } else if unit == "pass" || name.starts_with(REPLAY_PASSES) {
        RawColumn::Passes(name.to_string())
    } else if name.starts_with("device__attribute_") {
        // Constants of the device, not of the kernel: hundreds of them, none a measurement.
        RawColumn::Ignore
    } else {
        let (unit, factor) = base_unit(unit);
        metrics.push(MetricInfo::new(name.to_string(), unit));
        RawColumn::Metric {
            position: metrics.len() - 1,
            factor,
            exp10: super::decimal::power_of_ten(factor),
        }
    }
}

/// Parses one ncu number into its metric's base unit (`factor`, 10^`exp10` where it is a power
/// of ten). A prefix moves the decimal point of the text before the one rounding, so that
/// `1.10` usecond is 1100 ns, not the 1100.0000000000002 of `1.1 * 1000.0`; numbers off the
/// plain decimal path are parsed and multiplied.
#[inline]
fn parse_in_base_unit(
    raw: &[u8],
    report: &mut NcuReport,
    factor: f64,
    exp10: Option<i32>,
) -> Option<f64> {
    if let Some(k) = exp10
        && let Some(v) = super::decimal::parse_plain_scaled(raw.trim_ascii(), k)
    {
        return Some(v);
    }
    parse_number(raw, report).map(|v| v * factor)
}

/// Parses one ncu number. `None` for empty cells, `n/a` and text. Accepts grouping in the
/// en-US style (`1,234,567.5`) and, when a value shows it unambiguously, the European one
/// (`27.595.520`, `1.234,5`); a single separator followed by exactly three digits is read
/// as grouping when it is a comma and as a decimal point when it is a dot (C locale).
/// Most cells are plain decimals, read without a UTF-8 check or the general float parser.
fn parse_number(raw: &[u8], report: &mut NcuReport) -> Option<f64> {
    if let Some(v) = super::decimal::parse_plain(raw.trim_ascii()) {
        return Some(v);
    }
    let s = std::str::from_utf8(raw).ok()?.trim();
    if s.is_empty() {
        return None;
    }
    if let Ok(v) = s.parse::<f64>() {
        return Some(v);
    }
    if s.eq_ignore_ascii_case("n/a") {
        report.not_available += 1;
        return None;
    }
    let first = s.as_bytes()[0];
    if !(first.is_ascii_digit() || first == b'-' || first == b'+' || first == b'.') {
        return None;
    }
    let commas = s.matches(',').count();
    let dots = s.matches('.').count();
    let cleaned = if dots >= 2 || (commas == 1 && dots >= 1 && s.rfind(',') > s.rfind('.')) {
        // European: dots group, a comma is the decimal mark.
        report.regrouped_numbers += 1;
        s.replace('.', "").replace(',', ".")
    } else if commas == 1 && dots == 0 && s.len() - s.rfind(',')? - 1 != 3 {
        report.regrouped_numbers += 1;
        s.replace(',', ".")
    } else {
        s.replace(',', "")
    };
    cleaned.parse::<f64>().ok()
}

/// Maps an ncu unit onto kgate's base unit and the factor into it: times to `ns` (kgate's
/// time unit), frequencies to `hz`, byte multiples to `byte` (ncu's prefixes are decimal),
/// SI prefixes on counts (`Kinst`, `Mcycle`) removed, and rates per time unit to `/second`.
pub fn base_unit(unit: &str) -> (String, f64) {
    let unit = unit.trim();
    if let Some((num, den)) = unit.split_once('/') {
        let (num_unit, num_factor) = base_unit(num);
        if let Some(seconds) = seconds_of(den) {
            return (format!("{num_unit}/second"), num_factor / seconds);
        }
        return (format!("{num_unit}/{den}"), num_factor);
    }
    if let Some(seconds) = seconds_of(unit) {
        return ("ns".into(), seconds * 1e9);
    }
    let hertz = [("hz", 1.0), ("khz", 1e3), ("mhz", 1e6), ("ghz", 1e9)];
    if let Some(&(_, factor)) = hertz.iter().find(|(h, _)| unit.eq_ignore_ascii_case(h)) {
        return ("hz".into(), factor);
    }
    #[rustfmt::skip]
    const BASES: [&str; 12] = [
        "byte", "inst", "cycle", "sector", "request", "warp", "thread", "block", "wavefront",
        "transaction", "instruction", "cluster",
    ];
    for (prefix, factor) in [("K", 1e3), ("M", 1e6), ("G", 1e9), ("T", 1e12)] {
        if let Some(rest) = unit.strip_prefix(prefix)
            && BASES.contains(&rest)
        {
            return (rest.to_string(), factor);
        }
    }
    (unit.to_string(), 1.0)
}

/// Seconds in one of a time unit, for the spellings ncu uses across versions.
fn seconds_of(unit: &str) -> Option<f64> {
    Some(match unit {
        "ns" | "nsecond" | "nsec" => 1e-9,
        "us" | "usecond" | "usec" | "µs" => 1e-6,
        "ms" | "msecond" | "msec" => 1e-3,
        "s" | "second" | "sec" => 1.0,
        _ => return None,
    })
}

/// Finds the version in `ncu --version` output (`Version 2026.2.1.0 (build 38283040) …`).
pub fn parse_version(text: &str) -> Option<String> {
    if !text.contains("Nsight Compute") {
        return None;
    }
    text.lines()
        .map(|l| l.trim_start_matches('\u{feff}').trim())
        .find_map(|l| l.strip_prefix("Version "))
        .map(|v| v.trim().to_string())
}

/// Records what a report says about its capture: page, replay passes, device, `n/a` cells.
pub fn annotate_details(report: &NcuReport, details: &mut BTreeMap<String, String>) {
    let joined = |values: &BTreeSet<String>| values.iter().cloned().collect::<Vec<_>>().join(",");
    details.insert("ncu.page".into(), report.page.into());
    for (column, values) in &report.passes {
        let key = if column == REPLAY_PASSES {
            "ncu.replay_passes".to_string()
        } else {
            format!("ncu.{column}")
        };
        details.insert(key, joined(values));
    }
    if !report.devices.is_empty() {
        let names: Vec<&str> = report.devices.iter().map(String::as_str).collect();
        details.insert("ncu.device".into(), names.join(", "));
    }
    if report.not_available > 0 {
        let cells = report.not_available.to_string();
        details.insert("ncu.not_available_cells".into(), cells);
    }
    if report.regrouped_numbers > 0 {
        let n = report.regrouped_numbers;
        let format = format!("{n} values read with dots as grouping or a comma as decimal mark");
        details.insert("ncu.number_format".into(), format);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Everything a parse hands out and reports, as text to compare.
    fn parse_all(text: &[u8], reading: RowReading) -> String {
        let mut out = String::new();
        let result = parse_each_reading(
            text,
            &mut |metrics, launch| {
                let values = launch.values.iter();
                let values: Vec<_> = values
                    .map(|(p, v)| (&metrics[p].name, &metrics[p].unit, v.to_bits()))
                    .collect();
                out.push_str(&format!("{} {:?} {values:?}\n", launch.id, launch.kernel));
                Ok(())
            },
            reading,
        );
        match result {
            Ok(r) => out.push_str(&format!(
                "{} {:?} {:?} {:?} {:?} {} {} {}",
                r.launch_count,
                r.passes,
                r.devices,
                r.compute_capabilities,
                r.device_clocks,
                r.not_available,
                r.regrouped_numbers,
                r.metrics.len()
            )),
            Err(e) => out.push_str(&format!("error: {e}")),
        }
        out
    }

    /// A cell of a random raw page: mostly what ncu writes, sometimes what it might not.
    fn random_cell(rng: &mut fastrand::Rng) -> String {
        fn plain(rng: &mut fastrand::Rng) -> String {
            match rng.u8(..4) {
                0 => rng.u32(..10_000_000).to_string(),
                1 => format!("{}.{:02}", rng.u32(..100_000), rng.u8(..100)),
                2 => format!("-{}.{}", rng.u16(..1000), rng.u64(..)),
                _ => rng.u8(..10).to_string(),
            }
        }
        match rng.u8(..40) {
            0 => "\"\"".into(),
            1 => "\"n/a\"".into(),
            2 => "\"1,234,567\"".into(),
            3 => "\"27.595.520\"".into(),
            4 => plain(rng),
            5 => "\"a \"\"quoted\"\" word\"".into(),
            6 => format!("\"{}\"x", plain(rng)),
            7 => "\"two\nlines\"".into(),
            8 => "\"1e3\"".into(),
            9 => "\" 42 \"".into(),
            10 => "\"(256, 1, 1)\"".into(),
            11 => "\"\u{e9}t\u{e9}\"".into(),
            12 => "\"\r\"".into(),
            _ => format!("\"{}\"", plain(rng)),
        }
    }

    #[test]
    fn one_pass_rows_read_as_split_rows_do() {
        let mut rng = fastrand::Rng::with_seed(7);
        #[rustfmt::skip]
        let header = [
            "ID", "Kernel Name", "device__attribute_display_name", "device__attribute_clock_rate",
            "CC", "profiler__replayer_passes", "gpu__time_duration.sum", "dram__bytes.sum",
            "sm__throughput.avg.pct_of_peak_sustained_elapsed", "smsp__inst_executed.sum",
            "launch__grid_size",
        ];
        let units = [
            "", "", "", "khz", "", "", "usecond", "Kbyte", "%", "Minst", "",
        ];
        let mut fast_rows = 0;
        for case in 0..400 {
            let mut text = String::new();
            if case % 7 == 0 {
                text.push_str("==PROF== Connected to process 1\n");
            }
            for row in [&header, &units] {
                let cells: Vec<String> = row.iter().map(|c| format!("\"{c}\"")).collect();
                text.push_str(&cells.join(","));
                text.push('\n');
            }
            let crlf = case % 5 == 0;
            for row in 0..rng.usize(1..12) {
                let mut cells = vec![
                    format!("\"{row}\""),
                    ["\"k\"", "\"void f<1, 2>(int, float)\"", "\"g\"\"\""][rng.usize(..3)].into(),
                    "\"NVIDIA H200\"".into(),
                    "\"1980000\"".into(),
                    "\"9.0\"".into(),
                    format!("\"{}\"", rng.u8(1..4)),
                ];
                let width = match rng.u8(..10) {
                    0 => rng.usize(0..header.len() - cells.len()),
                    1 => header.len() - cells.len() + 1,
                    _ => header.len() - cells.len(),
                };
                cells.extend((0..width).map(|_| random_cell(&mut rng)));
                let plain = |c: &String| {
                    c.len() >= 2
                        && c.starts_with('"')
                        && c.ends_with('"')
                        && !c[1..c.len() - 1].contains(['"', '\n'])
                };
                if cells.len() == header.len() && cells.iter().all(plain) {
                    fast_rows += 1;
                }
                text.push_str(&cells.join(","));
                text.push_str(if crlf { "\r\n" } else { "\n" });
            }
            if case % 3 == 0 {
                text.pop();
            }
            let one_pass = parse_all(text.as_bytes(), RowReading::OnePass);
            let split = parse_all(text.as_bytes(), RowReading::SplitFirst);
            assert_eq!(one_pass, split, "case {case}:\n{text}");
        }
        // Most rows took the one-pass path, and many did not.
        assert!(fast_rows > 200, "{fast_rows}");
    }
}
