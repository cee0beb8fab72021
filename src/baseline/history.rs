//! Run history kept as plain files in git: one small file per run, never rewritten.
//!
//! Peers keep history on a storage branch that matrix jobs push to at once, and they race. Here
//! every run writes its own new file, `.kgate/history/<baseline key>/<time>-<commit>-<hash>.json`,
//! holding per benchmark and metric only the summary (n, median, mean, spread), so concurrent
//! jobs add different files and a merge never conflicts. Histories are kept per runner class
//! ([`crate::machine::envkey::class_key`]) because numbers from different machines do not form
//! one series; the key holds the machine alone, never which benchmarks or tools a run used, so
//! every selection of one suite on one machine finds the same history. Earlier versions hashed
//! the tool versions into the key: their folders are found by the environment their records
//! hold ([`folders_of`]).
//! [`job_summaries`] is what the statistics models read; `kgate history` runs change-point
//! detection ([`crate::stats::changepoint`]) over the same series.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::machine::envkey;
use crate::machine::fingerprint::Fingerprint;
use crate::model::metric::Direction;
use crate::model::report::Report;
use crate::model::results::{RunResults, Status};
use crate::model::verdict::Verdict;
use crate::stats::{self, Summary};
use crate::store::fsutil::{self, Overwrite};

/// Folder of histories, relative to the configuration's folder.
pub const HISTORY_DIR: &str = ".kgate/history";
/// Version of the history record format.
pub const HISTORY_SCHEMA_VERSION: u32 = 1;

/// One run, summarized.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryRecord {
    pub schema_version: u32,
    /// When the run started (RFC 3339).
    pub created: String,
    /// Commit measured, where known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Whether the work tree had uncommitted changes.
    #[serde(default)]
    pub dirty: bool,
    /// The runner class's key, the name of the record's folder (records written by earlier
    /// versions hold the key they were filed under, tool versions included).
    pub baseline_key: String,
    pub environment: Fingerprint,
    pub benchmarks: Vec<HistoryBenchmark>,
}

/// One benchmark of a run, summarized.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryBenchmark {
    pub name: String,
    /// Total measured wall time of its repetitions (ns), used to balance shards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ns: Option<f64>,
    pub metrics: Vec<HistoryMetric>,
}

/// One metric of a run, summarized.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryMetric {
    pub name: String,
    pub unit: String,
    pub direction: Direction,
    pub summary: Summary,
    /// The gate's verdict on this metric in the job that recorded it (`kgate check --record`);
    /// absent for runs recorded without a comparison.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    /// That comparison's minimum detectable effect (relative; 0.05 is 5 %), where it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mde: Option<f64>,
}

/// A past job's summary of one benchmark's metric, oldest first in [`job_summaries`].
#[derive(Debug, Clone, PartialEq)]
pub struct JobSummary {
    pub created: String,
    pub commit: Option<String>,
    pub unit: String,
    pub summary: Summary,
    /// The gate's verdict and MDE in that job, where it was checked (see [`HistoryMetric`]).
    pub verdict: Option<Verdict>,
    pub mde: Option<f64>,
}

/// History errors.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error("cannot read history `{path}`: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "`{path}` is not a kgate history record: {}; remove it or restore it from git",
        crate::model::text::plain_serde(field.as_deref(), &error.to_string())
    )]
    Parse {
        path: PathBuf,
        /// Where in the record, when known.
        field: Option<String>,
        /// serde's own words, rewritten in the file's by the message (not a source: the
        /// raw text would follow the plain one in the CLI's error chain).
        error: serde_json::Error,
    },
    #[error(
        "this run is already in the history as `{path}`: a results file is recorded once; record a new run instead"
    )]
    AlreadyRecorded { path: PathBuf },
    #[error(transparent)]
    Write(#[from] fsutil::WriteError),
}

/// Total wall time of a benchmark's measured repetitions, in ns.
pub fn duration_ns(b: &crate::model::results::BenchmarkResult) -> Option<f64> {
    b.metric("wall_time")
        .filter(|m| m.unit == "ns" && !m.values.is_empty())
        .map(|m| m.values.iter().sum())
}

impl HistoryRecord {
    /// Summarizes the benchmarks that completed.
    pub fn from_results(results: &RunResults) -> HistoryRecord {
        let benchmarks = results
            .benchmarks
            .iter()
            .filter(|b| b.status == Status::Ok)
            .map(|b| HistoryBenchmark {
                name: b.name.clone(),
                duration_ns: duration_ns(b),
                metrics: b
                    .metrics
                    .iter()
                    .filter_map(|m| {
                        Some(HistoryMetric {
                            name: m.name.clone(),
                            unit: m.unit.clone(),
                            direction: m.direction,
                            summary: stats::summarize(&m.values)?,
                            verdict: None,
                            mde: None,
                        })
                    })
                    .collect(),
            })
            .collect();
        HistoryRecord {
            schema_version: HISTORY_SCHEMA_VERSION,
            created: results.created.clone(),
            commit: results.environment.git.as_ref().map(|g| g.commit.clone()),
            dirty: results.environment.git.as_ref().is_some_and(|g| g.dirty),
            baseline_key: envkey::class_key(&results.environment),
            environment: results.environment.clone(),
            benchmarks,
        }
    }

    /// Adds the verdict and MDE of each metric that `report` compared.
    pub fn with_report(mut self, report: &Report) -> HistoryRecord {
        let compared = crate::model::by_name(&report.benchmarks, |c| c.name.as_str());
        for b in &mut self.benchmarks {
            let Some(cmp) = compared.get(b.name.as_str()) else {
                continue;
            };
            let rows = crate::model::by_name(&cmp.metrics, |c| c.name.as_str());
            for m in &mut b.metrics {
                if let Some(mc) = rows.get(m.name.as_str()) {
                    m.verdict = Some(mc.verdict);
                    m.mde = mc.mde.filter(|x| x.is_finite());
                }
            }
        }
        self
    }

    /// `<time>-<commit12>-<content hash>.json`: unique per run, sorting by time.
    pub fn file_name(&self) -> String {
        let time: String = self
            .created
            .chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .collect();
        let commit = self
            .commit
            .as_deref()
            .map(|c| &c[..12.min(c.len())])
            .unwrap_or("nocommit");
        // Over the run alone, not the verdicts it was given: the same results recorded by
        // `check --record` and again by `history record` are the same run.
        // A record without them (`history record`) is hashed as it is, not copied: a suite of
        // 10,000 benchmarks × 20 metrics has a record of some 40 MB.
        let checked = self
            .benchmarks
            .iter()
            .flat_map(|b| &b.metrics)
            .any(|m| m.verdict.is_some() || m.mde.is_some());
        let mut run = std::borrow::Cow::Borrowed(self);
        if checked {
            for m in run
                .to_mut()
                .benchmarks
                .iter_mut()
                .flat_map(|b| b.metrics.iter_mut())
            {
                m.verdict = None;
                m.mde = None;
            }
        }
        // Over the record indented, as records were once written, so that a run recorded by an
        // earlier version has the same name and is still found to be recorded already.
        let mut hash = Fnv1a(0x811c_9dc5);
        serde_json::to_writer_pretty(&mut hash, &*run).expect("history serializes");
        hash.write_all(b"\n").expect("hashing cannot fail");
        format!("{time}-{commit}-{:08x}.json", hash.0)
    }
}

/// The 32-bit FNV-1a hash of the bytes written into it.
struct Fnv1a(u32);

impl Write for Fnv1a {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        for &byte in bytes {
            self.0 ^= u32::from(byte);
            self.0 = self.0.wrapping_mul(0x0100_0193);
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The folder of one baseline key's history.
pub fn key_dir(root: &Path, key: &str) -> PathBuf {
    root.join(HISTORY_DIR).join(key)
}

/// Appends a run to the history of its environment; returns the new file. Never replaces a file.
pub fn record(root: &Path, results: &RunResults) -> Result<PathBuf, HistoryError> {
    record_summary(root, HistoryRecord::from_results(results))
}

/// Appends a run's summary (with the verdicts and MDEs of the comparison it was checked by,
/// [`HistoryRecord::with_report`], where there is one) to the history; returns the new file.
pub fn record_summary(root: &Path, rec: HistoryRecord) -> Result<PathBuf, HistoryError> {
    let path = key_dir(root, &rec.baseline_key).join(rec.file_name());
    if let Some(path) = recorded_under_legacy_key(root, &rec) {
        return Err(HistoryError::AlreadyRecorded { path });
    }
    // One line of JSON, streamed into the file. Records were written indented until 2026-12;
    // the indentation was 44 % of a record's bytes, on a branch every CI job fetches. Both
    // read the same.
    let written = fsutil::write_atomic_with(&path, Overwrite::Refuse, |out| {
        let mut out = fsutil::serializer_buffer(out);
        serde_json::to_writer(&mut out, &rec)?;
        out.write_all(b"\n")?;
        out.flush()
    });
    match written {
        Ok(()) => Ok(path),
        // The file name holds a hash of the record: the same run, recorded before.
        Err(fsutil::WriteError::Exists { .. }) => Err(HistoryError::AlreadyRecorded { path }),
        Err(e) => Err(e.into()),
    }
}

/// The same run recorded by a version that filed it under its tool-holding key
/// ([`envkey::legacy_key`]): the file that version named it by, where it exists.
fn recorded_under_legacy_key(root: &Path, rec: &HistoryRecord) -> Option<PathBuf> {
    let legacy = envkey::legacy_key(&rec.environment);
    if legacy == rec.baseline_key || !key_dir(root, &legacy).is_dir() {
        return None;
    }
    let mut then = rec.clone();
    then.baseline_key = legacy;
    let path = key_dir(root, &then.baseline_key).join(then.file_name());
    path.exists().then_some(path)
}

/// A folder of the history and the runner class its records were measured on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyFolder {
    /// The folder's name under [`HISTORY_DIR`].
    pub name: String,
    /// The [`envkey::class_key`] of its records' environment: its name, except for folders
    /// named by earlier versions' keys (and folders with no readable record).
    pub class: String,
}

/// Every folder of the history with its runner class, by name.
pub fn folders(root: &Path) -> Result<Vec<KeyFolder>, HistoryError> {
    let dir = root.join(HISTORY_DIR);
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(HistoryError::Read { path: dir, source }),
    };
    let mut names: Vec<String> = entries
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    Ok(names
        .into_iter()
        .map(|name| KeyFolder {
            class: folder_class(root, &name).unwrap_or_else(|| name.clone()),
            name,
        })
        .collect())
}

/// The runner class of the first record of a folder that reads: every record of a folder was
/// filed there by the key of its environment, so one names the class of all.
fn folder_class(root: &Path, name: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct Environment {
        environment: Fingerprint,
    }
    record_files(&key_dir(root, name))
        .ok()?
        .iter()
        .find_map(|path| {
            let text = std::fs::read_to_string(path).ok()?;
            let env: Environment =
                serde_json::from_str(crate::store::read::without_bom(&text)).ok()?;
            Some(envkey::class_key(&env.environment))
        })
}

/// The folders that hold the history of `key`: the folder of that name, and those named by
/// earlier versions' keys whose records were measured on the runner class `key`.
pub fn folders_of(root: &Path, key: &str) -> Result<Vec<KeyFolder>, HistoryError> {
    Ok(folders(root)?
        .into_iter()
        .filter(|f| f.name == key || f.class == key)
        .collect())
}

/// The runner classes that have a history (each folder counted as the class of its records).
pub fn keys(root: &Path) -> Vec<String> {
    let mut out: Vec<String> = folders(root)
        .unwrap_or_default()
        .into_iter()
        .map(|f| f.class)
        .collect();
    out.sort();
    out.dedup();
    out
}

/// A folder's record files, by name. A missing folder has none.
fn record_files(dir: &Path) -> Result<Vec<PathBuf>, HistoryError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(HistoryError::Read {
                path: dir.to_path_buf(),
                source,
            });
        }
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    Ok(files)
}

/// Every record of a key ([`folders_of`]: its own folder and those earlier versions filed its
/// runs in), oldest first (by start time, then file name). No folder is an empty history.
pub fn load(root: &Path, key: &str) -> Result<Vec<HistoryRecord>, HistoryError> {
    let mut files = Vec::new();
    for folder in folders_of(root, key)? {
        files.extend(record_files(&key_dir(root, &folder.name))?);
    }
    let mut records = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).map_err(|source| HistoryError::Read {
            path: path.clone(),
            source,
        })?;
        let text = crate::store::read::without_bom(&text);
        let rec: HistoryRecord =
            serde_json::from_str(text).map_err(|source| HistoryError::Parse {
                path: path.clone(),
                field: crate::model::text::failing_field::<HistoryRecord>(text),
                error: source,
            })?;
        records.push((path, rec));
    }
    records.sort_by(|(pa, a), (pb, b)| a.created.cmp(&b.created).then(pa.cmp(pb)));
    Ok(records.into_iter().map(|(_, r)| r).collect())
}

/// One benchmark's metric across records, oldest first.
pub fn series(records: &[HistoryRecord], benchmark: &str, metric: &str) -> Vec<JobSummary> {
    records
        .iter()
        .filter_map(|r| {
            let b = r.benchmarks.iter().find(|b| b.name == benchmark)?;
            let m = b.metrics.iter().find(|m| m.name == metric)?;
            Some(JobSummary::of(r, m))
        })
        .collect()
}

/// Every (benchmark, metric) pair of the records with its [`series`], pairs in first-seen
/// order: one pass over the records, where a [`series`] per pair passes over every record's
/// benchmarks once per pair (a history of 100 jobs of 2,000 metrics spent seconds there).
pub fn all_series(records: &[HistoryRecord]) -> Vec<((String, String), Vec<JobSummary>)> {
    let mut out: Vec<((String, String), Vec<JobSummary>)> = Vec::new();
    // Pair → its place in `out` and the last record that added to it: a record naming a
    // benchmark or metric twice counts its first, as `series` does.
    let mut index: HashMap<(&str, &str), (usize, usize)> = HashMap::new();
    for (at, r) in records.iter().enumerate() {
        for b in &r.benchmarks {
            for m in &b.metrics {
                match index.entry((b.name.as_str(), m.name.as_str())) {
                    Entry::Occupied(mut e) => {
                        let (place, last) = e.get_mut();
                        if *last != at {
                            *last = at;
                            out[*place].1.push(JobSummary::of(r, m));
                        }
                    }
                    Entry::Vacant(e) => {
                        e.insert((out.len(), at));
                        out.push(((b.name.clone(), m.name.clone()), vec![JobSummary::of(r, m)]));
                    }
                }
            }
        }
    }
    out
}

impl JobSummary {
    fn of(record: &HistoryRecord, metric: &HistoryMetric) -> JobSummary {
        JobSummary {
            created: record.created.clone(),
            commit: record.commit.clone(),
            unit: metric.unit.clone(),
            summary: metric.summary.clone(),
            verdict: metric.verdict,
            mde: metric.mde,
        }
    }
}

/// Past job summaries of a benchmark's metric on one environment, oldest first: the input of
/// history-based models (prediction intervals, change points).
pub fn job_summaries(
    root: &Path,
    key: &str,
    benchmark: &str,
    metric: &str,
) -> Result<Vec<JobSummary>, HistoryError> {
    Ok(series(&load(root, key)?, benchmark, metric))
}

/// Log-scale job medians per (benchmark, metric) from the records of a key, oldest first: what
/// the prediction-interval model of the comparison reads when no result files are given.
///
/// A job in which the gate found the metric regressed or improved is left out: it was off its
/// baseline's level by the gate's own decision, so it cannot describe that level, and jobs
/// recorded after a regression landed would otherwise widen the interval until the regression
/// itself reads as noise. Returns the medians and how many jobs were left out this way.
pub fn job_medians(records: &[HistoryRecord]) -> (crate::stats::inference::JobMedians, usize) {
    let mut out = crate::stats::inference::JobMedians::new();
    let mut off_level = 0;
    for ((benchmark, metric), jobs) in all_series(records) {
        let mut medians = Vec::new();
        for job in jobs {
            if matches!(job.verdict, Some(Verdict::Regressed | Verdict::Improved)) {
                off_level += 1;
                continue;
            }
            let m = job.summary.median;
            if m.is_finite() && m > 0.0 {
                medians.push(m.ln());
            }
        }
        if !medians.is_empty() {
            out.insert((benchmark, metric), medians);
        }
    }
    (out, off_level)
}

/// The most recent recorded duration of each benchmark (ns).
pub fn latest_durations(records: &[HistoryRecord]) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for r in records {
        for b in &r.benchmarks {
            if let Some(d) = b.duration_ns {
                out.insert(b.name.clone(), d);
            }
        }
    }
    out
}

/// Adds the medians of recorded jobs (oldest first) to every metric of a report's evidence
/// that has any, for the trend charts.
pub fn add_to_evidence(evidence: &mut crate::model::evidence::Evidence, records: &[HistoryRecord]) {
    let medians: HashMap<(String, String), Vec<f64>> = all_series(records)
        .into_iter()
        .map(|(pair, jobs)| (pair, jobs.iter().map(|j| j.summary.median).collect()))
        .collect();
    for b in &mut evidence.benchmarks {
        for m in &mut b.metrics {
            m.history = medians
                .get(&(b.name.clone(), m.name.clone()))
                .cloned()
                .unwrap_or_default();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(median: f64, verdict: Option<Verdict>) -> HistoryRecord {
        HistoryRecord {
            schema_version: HISTORY_SCHEMA_VERSION,
            created: "2026-01-01T00:00:00Z".into(),
            commit: None,
            dirty: false,
            baseline_key: "k".into(),
            environment: Fingerprint::default(),
            benchmarks: vec![HistoryBenchmark {
                name: "mm".into(),
                duration_ns: None,
                metrics: vec![HistoryMetric {
                    name: "kernel_time".into(),
                    unit: "ns".into(),
                    direction: Direction::Lower,
                    summary: stats::summarize(&[median]).unwrap(),
                    verdict,
                    mde: None,
                }],
            }],
        }
    }

    #[test]
    fn records_are_written_on_one_line_and_keep_the_names_indented_records_had() {
        let dir = tempfile::tempdir().unwrap();
        let mut rec = job(100.0, Some(Verdict::Regressed));
        rec.commit = Some("0123456789abcdef".into());
        // The name the indented record of this run had before records were one line: a hash
        // of the run without the verdicts it was given.
        let mut run = rec.clone();
        run.benchmarks[0].metrics[0].verdict = None;
        let indented = serde_json::to_string_pretty(&run).unwrap() + "\n";
        let fnv = |h: u32, b: u8| (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
        let hash = indented.bytes().fold(0x811c_9dc5_u32, fnv);
        let name = format!("20260101T000000Z-0123456789ab-{hash:08x}.json");
        assert_eq!(rec.file_name(), name);
        // Without verdicts (hashed as it is, not copied), the same name.
        assert_eq!(run.file_name(), rec.file_name());
        let path = record_summary(dir.path(), rec.clone()).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(text.len() < indented.len(), "{text}");
        assert_eq!(load(dir.path(), "k").unwrap(), vec![rec.clone()]);
        // A run recorded already, indented by an earlier version, is found by its name.
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, &indented).unwrap();
        let again = record_summary(dir.path(), rec);
        assert!(matches!(again, Err(HistoryError::AlreadyRecorded { .. })));
    }

    #[test]
    fn jobs_the_gate_found_off_their_baseline_do_not_describe_it() {
        use Verdict::*;
        #[rustfmt::skip]
        let records = vec![job(100.0, None), job(101.0, Some(Unchanged)), job(130.0, Some(Regressed)),
            job(131.0, Some(Regressed)), job(80.0, Some(Improved)), job(99.0, Some(Inconclusive))];
        let (medians, off_level) = job_medians(&records);
        let kept = &medians[&("mm".to_string(), "kernel_time".to_string())];
        assert_eq!(kept, &vec![100f64.ln(), 101f64.ln(), 99f64.ln()]);
        assert_eq!(off_level, 3);
    }
}
