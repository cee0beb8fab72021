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
        "`{path}` is not a kgate JSON report ({source}); write one with `kgate compare BASE HEAD --format json -o FILE` or `kgate check --format json -o FILE`"
    )]
    Parse {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error(
        "`{path}` has report format version {found}; this kgate reads version {REPORT_SCHEMA_VERSION}"
    )]
    Version { path: PathBuf, found: u64 },
}

/// Reads a JSON report written by `--format json`.
pub fn load_report(path: &Path) -> Result<Report, StoredReportError> {
    let text = std::fs::read_to_string(path).map_err(|source| StoredReportError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let version = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| v.get("schema_version")?.as_u64());
    if let Some(found) = version
        && found != u64::from(REPORT_SCHEMA_VERSION)
    {
        return Err(StoredReportError::Version {
            path: path.to_path_buf(),
            found,
        });
    }
    serde_json::from_str(&text).map_err(|source| StoredReportError::Parse {
        path: path.to_path_buf(),
        source,
    })
}
