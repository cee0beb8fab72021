//! Reading and writing kgate's own files: results files (atomically, never a file that cannot
//! be read back; version 1 files upgraded as they are read), pipes read once and bounded, and
//! the atomic writes every command uses ([`fsutil`]). The contracts these files hold are plain
//! types in [`crate::model`]; everything here touches the file system.

pub mod fsutil;
pub mod protocol;
pub mod read;

use std::path::{Path, PathBuf};

use crate::model::results::{ARTIFACT_MAX_BYTES, Artifact, RESULTS_SCHEMA_VERSION, RunResults};
use fsutil::Overwrite;

/// The most bytes of a results file or report read from a pipe or a device (a regular file is
/// read a piece at a time, without a bound): far above any real one, and a bound for a stream
/// without end.
pub const STREAM_MAX_BYTES: u64 = 1 << 32;

/// Result files that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    #[error("cannot read results `{path}`: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("`{path}` is not a kgate results file: {}", crate::model::text::plain_serde(field.as_deref(), &error.to_string()))]
    Parse {
        path: PathBuf,
        /// Where in the document, when known (`benchmarks[0].metrics[0].values[2]`).
        field: Option<String>,
        /// serde's own words, rewritten in the file's by the message (not a source: the
        /// raw text would follow the plain one in the CLI's error chain).
        error: serde_json::Error,
    },
    #[error(
        "`{path}` has results format version {found}; this kgate reads version {RESULTS_SCHEMA_VERSION}"
    )]
    Version { path: PathBuf, found: u32 },
    #[error("`{path}` is damaged: {message}; write it again with `kgate run` or `kgate import`")]
    Damaged { path: PathBuf, message: String },
    #[error(
        "refusing to write `{path}`: {what} is not a finite number, and a results file holding it could not be read back"
    )]
    NotFinite { path: PathBuf, what: String },
    #[error(transparent)]
    Write(#[from] fsutil::WriteError),
}

/// How a results document is laid out: the same JSON either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonLayout {
    /// One line, no indentation: what programs read, a fraction of the size.
    Compact,
    /// Indented, for people and for diffs of committed files.
    Pretty,
}

impl Artifact {
    /// Reads an artifact file, capping it at [`ARTIFACT_MAX_BYTES`] on a line boundary.
    pub fn read(path: &Path, declared: &str) -> std::io::Result<Artifact> {
        let bytes = std::fs::read(path)?;
        let mut text = String::from_utf8_lossy(&bytes).into_owned();
        let truncated = text.len() > ARTIFACT_MAX_BYTES;
        if truncated {
            let mut cut = ARTIFACT_MAX_BYTES;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            let cut = text[..cut].rfind('\n').map(|i| i + 1).unwrap_or(cut);
            text.truncate(cut);
        }
        Ok(Artifact {
            path: declared.to_string(),
            text,
            truncated,
        })
    }
}

impl RunResults {
    /// Reads and checks a results file. A version 1 file (counter readings one object each)
    /// is read too, its readings gathered into series as version 2 stores them. A pipe is read
    /// once, up to [`STREAM_MAX_BYTES`].
    pub fn load(path: &Path) -> Result<RunResults, ResultsError> {
        let text = if read::rereadable(path) {
            std::fs::read_to_string(path)
        } else {
            read::read_once(path, STREAM_MAX_BYTES)
        }
        .map_err(|source| ResultsError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        RunResults::parse(&text, path)
    }

    /// Reads and checks the text of a results file; `path` names it in errors. See
    /// [`RunResults::load`].
    pub fn parse(text: &str, path: &Path) -> Result<RunResults, ResultsError> {
        let text = crate::store::read::without_bom(text);
        let parsed = serde_json::from_str::<RunResults>(text);
        // A file of another version is refused by its version, whether or not it also parses
        // as this one; the version alone is read (the rest skipped without building a tree)
        // only when the whole document did not parse.
        let version = match &parsed {
            Ok(results) => Some(results.schema_version),
            Err(_) => {
                crate::model::schema_version_of(text).map(|v| v.min(u64::from(u32::MAX)) as u32)
            }
        };
        let parse_error = |source| ResultsError::Parse {
            path: path.to_path_buf(),
            field: crate::model::text::failing_field::<RunResults>(text),
            error: source,
        };
        let results = match (version, parsed) {
            (Some(RESULTS_SCHEMA_VERSION) | None, parsed) => parsed.map_err(parse_error)?,
            // A version 1 file without counter readings or kernel windows reads as version 2
            // as it is (version 1 readings and windows do not parse as series).
            (Some(1), Ok(results)) => RunResults {
                schema_version: RESULTS_SCHEMA_VERSION,
                ..results
            },
            (Some(1), Err(_)) => version1::upgrade(text).map_err(parse_error)?,
            (Some(found), _) => {
                return Err(ResultsError::Version {
                    path: path.to_path_buf(),
                    found,
                });
            }
        };
        results.settled(path)
    }

    /// Parsed results made ready and checked ([`RunResults::settle`],
    /// [`RunResults::check_series`]); `path` names the file in errors.
    fn settled(mut self, path: &Path) -> Result<RunResults, ResultsError> {
        self.settle();
        self.check_series()
            .map_err(|message| ResultsError::Damaged {
                path: path.to_path_buf(),
                message,
            })?;
        Ok(self)
    }

    /// Writes the results atomically, indented ([`JsonLayout::Pretty`]: what baselines use,
    /// being committed and read in diffs); see [`RunResults::save_as`].
    pub fn save(&self, path: &Path, overwrite: Overwrite) -> Result<(), ResultsError> {
        self.save_as(path, overwrite, JsonLayout::Pretty)
    }

    /// Writes the results atomically in `layout`, with a trailing newline, streamed into the
    /// destination by serde (the document is never held whole as text); refuses results
    /// holding a number JSON cannot carry (see [`RunResults::non_finite`]), so that kgate
    /// never writes a file it cannot read, and nothing is replaced then.
    pub fn save_as(
        &self,
        path: &Path,
        overwrite: Overwrite,
        layout: JsonLayout,
    ) -> Result<(), ResultsError> {
        if let Some(what) = self.non_finite() {
            return Err(ResultsError::NotFinite {
                path: path.to_path_buf(),
                what,
            });
        }
        fsutil::write_atomic_with(path, overwrite, |out| {
            use std::io::Write as _;
            let mut out = fsutil::serializer_buffer(out);
            match layout {
                JsonLayout::Compact => serde_json::to_writer(&mut out, self),
                JsonLayout::Pretty => serde_json::to_writer_pretty(&mut out, self),
            }
            .map_err(std::io::Error::from)?;
            out.write_all(b"\n")?;
            out.flush()
        })?;
        Ok(())
    }
}

/// Version 1 of the format, read for the baselines and history files written before version 2:
/// the same document, but each counter reading an object of its own.
mod version1 {
    use crate::model::protocol::{CounterLine, KernelLine};
    use crate::model::results::{BenchmarkResult, RESULTS_SCHEMA_VERSION, RunResults, SeriesIndex};
    use serde::Deserialize;

    /// A version 1 counter reading.
    #[derive(Deserialize)]
    struct Reading {
        repetition: u32,
        counter: String,
        t_ns: f64,
        value: f64,
        #[serde(default)]
        unit: String,
        #[serde(default)]
        bits: Option<u8>,
        #[serde(default)]
        core: Option<u32>,
        #[serde(default)]
        sampling: Option<crate::model::series::Sampling>,
    }

    /// A version 1 kernel window.
    #[derive(Deserialize)]
    struct Window {
        repetition: u32,
        kernel: String,
        start_ns: f64,
        end_ns: f64,
    }

    /// Reads a version 1 document: its readings and kernel windows are taken out of the tree
    /// and gathered into series in arrival order, then the rest reads as version 2.
    pub(super) fn upgrade(text: &str) -> Result<RunResults, serde_json::Error> {
        let mut doc: serde_json::Value = serde_json::from_str(text)?;
        if !doc.is_object() {
            return Err(serde::de::Error::custom(
                "a results file is a JSON object, and this is not one",
            ));
        }
        let mut taken: Vec<(Vec<Reading>, Vec<Window>)> = Vec::new();
        if let Some(benchmarks) = doc
            .get_mut("benchmarks")
            .and_then(serde_json::Value::as_array_mut)
        {
            for b in benchmarks {
                let mut take = |key: &str| {
                    b.as_object_mut()
                        .and_then(|b| b.remove(key))
                        .unwrap_or_else(|| serde_json::Value::Array(Vec::new()))
                };
                let readings = serde_json::from_value(take("counters"))?;
                let windows = serde_json::from_value(take("kernel_windows"))?;
                taken.push((readings, windows));
            }
        }
        doc["schema_version"] = RESULTS_SCHEMA_VERSION.into();
        let mut results: RunResults = serde_json::from_value(doc)?;
        for (b, (readings, windows)) in results.benchmarks.iter_mut().zip(taken) {
            let mut index = SeriesIndex::default();
            gather(b, &mut index, readings);
            for w in windows {
                index.push_window(
                    b,
                    w.repetition,
                    KernelLine {
                        kernel: w.kernel,
                        start_ns: w.start_ns,
                        end_ns: w.end_ns,
                        benchmark: None,
                        exact: None,
                    },
                );
            }
        }
        Ok(results)
    }

    fn gather(b: &mut BenchmarkResult, index: &mut SeriesIndex, readings: Vec<Reading>) {
        for r in readings {
            let sampling = r.sampling;
            let line = CounterLine {
                counter: r.counter,
                t_ns: r.t_ns,
                value: r.value,
                unit: r.unit,
                bits: r.bits,
                core: r.core,
                benchmark: None,
                t_exact: None,
            };
            index.push_counter(b, r.repetition, &line, sampling);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::model::results::{BenchmarkResult, MetricSamples, RunResults};
    use crate::model::series::CounterSeries;

    #[test]
    fn a_file_loads_past_a_byte_order_mark_and_not_when_it_is_not_utf8() {
        let mut b = BenchmarkResult::new("b \"1\" ]}", Default::default());
        let metric = |values: &[f64]| MetricSamples::timer("time", values);
        b.metrics.push(metric(&[1.5, 2.0, 1e-300]));
        let mut series = CounterSeries::new("busy", 0);
        series.t_ns = vec![0.0, 10.0];
        series.value = vec![3.0, 4.0];
        b.counters.push(series);
        let mut run = RunResults::of(vec![
            b.clone(),
            BenchmarkResult::new("c", Default::default()),
        ]);
        run.benchmarks[1].metrics.push(metric(&[7.0]));
        let compact = serde_json::to_string(&run).unwrap();
        let dir = tempfile::tempdir().unwrap();
        // A byte-order mark (Windows editors and PowerShell write one) is read past.
        let path = dir.path().join("results.json");
        std::fs::write(&path, format!("\u{feff}{compact}")).unwrap();
        assert_eq!(RunResults::load(&path).unwrap(), run);
        // Not valid UTF-8: a read error.
        let mut bytes = compact.into_bytes();
        let at = bytes.windows(4).position(|w| w == b"time").unwrap();
        bytes[at] = 0xff;
        std::fs::write(&path, &bytes).unwrap();
        let loaded = RunResults::load(&path).unwrap_err().to_string();
        assert_contains!(loaded, "valid UTF-8");
    }
}
