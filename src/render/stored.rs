//! Reading a stored report back, so `kgate report FILE` can render it again in any format
//! without re-running or re-comparing anything.

use std::path::{Path, PathBuf};

use crate::model::report::{REPORT_SCHEMA_VERSION, Report};

/// A report file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum StoredReportError {
    #[error("cannot read report `{path}`: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "`{path}` is not a kgate JSON report ({}); write one with `kgate compare BASE HEAD --format json -o FILE` or `kgate check --format json -o FILE`",
        crate::model::text::plain_serde(field.as_deref(), &error.to_string())
    )]
    Parse {
        path: PathBuf,
        /// Where in the document, when known (`benchmarks[0].verdict`).
        field: Option<String>,
        /// serde's own words, rewritten in the file's by the message (not a source: the
        /// raw text would follow the plain one in the CLI's error chain).
        error: serde_json::Error,
    },
    #[error(
        "`{path}` has report format version {found}; this kgate reads version {REPORT_SCHEMA_VERSION}"
    )]
    Version { path: PathBuf, found: u64 },
}

/// Reads a JSON report written by `--format json`. A report of another version is refused by
/// its version, whether or not it also reads as this one; the version alone is read (the rest
/// skipped without building a tree of the whole document) only when the report did not read.
pub fn load_report(path: &Path) -> Result<Report, StoredReportError> {
    let read_error = |source| StoredReportError::Read {
        path: path.to_path_buf(),
        source,
    };
    // Read from the file as it parses, not from a copy of its text: a report of a suite of
    // 10,000 benchmarks is over 200 MB.
    // A leading byte-order mark (Windows editors, PowerShell) is not JSON: skipped.
    let open = || {
        std::fs::File::open(path)
            .map(|f| std::io::BufReader::with_capacity(1 << 16, f))
            .and_then(crate::store::read::skip_bom)
            .map_err(read_error)
    };
    // A pipe cannot be read a second time for the version: its text is read first.
    let piped = match crate::store::read::rereadable(path) {
        true => None,
        false => Some(
            crate::store::read::read_once(path, crate::store::STREAM_MAX_BYTES)
                .map_err(read_error)?,
        ),
    };
    let parsed = match &piped {
        Some(text) => serde_json::from_str::<Report>(crate::store::read::without_bom(text)),
        None => serde_json::from_reader::<_, Report>(open()?),
    };
    // The text is read only for a report that did not read: to tell its version, and where
    // it went wrong.
    let failed_text = match &parsed {
        Err(e) if !e.is_io() => Some(match piped {
            Some(text) => text,
            None => std::fs::read_to_string(path).map_err(read_error)?,
        }),
        _ => None,
    };
    let version = match (&parsed, &failed_text) {
        (Ok(report), _) => Some(u64::from(report.schema_version)),
        (Err(_), Some(text)) => crate::model::schema_version_of(text),
        (Err(_), None) => None,
    };
    if let Some(found) = version
        && found != u64::from(REPORT_SCHEMA_VERSION)
    {
        return Err(StoredReportError::Version {
            path: path.to_path_buf(),
            found,
        });
    }
    parsed.map_err(|source| match source.is_io() {
        true => read_error(source.into()),
        false => StoredReportError::Parse {
            path: path.to_path_buf(),
            field: failed_text.as_deref().and_then(|text| {
                crate::model::text::failing_field::<Report>(crate::store::read::without_bom(text))
            }),
            error: source,
        },
    })
}
