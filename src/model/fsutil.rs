//! Atomic file output.
//!
//! Results, reports and baselines are the gate's memory: a crash or Ctrl-C half-way through
//! writing one must never leave a truncated file behind. Everything is written to a temporary
//! file in the destination folder and renamed into place, which is atomic on POSIX filesystems.
//!
//! Permissions: results, reports and baselines are meant to be shared (with CI artifacts, a
//! team's server, the web server that serves an HTML report), so a new file gets the mode any
//! other tool would give it, `0666 & !umask` (0644 under the usual umask 022), not the
//! temporary file's private 0600. Replacing an existing file keeps that file's permission
//! bits, as `sed -i` and editors do, so a mode someone chose (`chmod 600 report.json`) survives
//! a rewrite; a file that earlier kgate versions wrote with 0600 keeps 0600 until it is
//! `chmod`ed or removed.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Errors from writing output files.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The destination exists and the caller did not ask to replace it.
    #[error("`{path}` already exists; pass --force to replace it")]
    Exists { path: PathBuf },
    /// Any I/O failure, with the path it concerned.
    #[error("cannot write `{path}`: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Whether an existing destination file may be replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overwrite {
    Allow,
    Refuse,
}

/// Writes `bytes` to `path` atomically: a temporary sibling file is written, flushed to disk and
/// renamed over the destination. With [`Overwrite::Refuse`] an existing file is left untouched
/// and [`WriteError::Exists`] is returned (checked atomically by a hard-link rename).
pub fn write_atomic(path: &Path, bytes: &[u8], overwrite: Overwrite) -> Result<(), WriteError> {
    let io_err = |source| WriteError::Io {
        path: path.to_path_buf(),
        source,
    };
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir).map_err(io_err)?;
    let mut builder = tempfile::Builder::new();
    builder.prefix(".kgate-tmp-");
    // Created as 0666 and so masked by the umask, like any new file (the default is 0600).
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    let mut tmp = builder.tempfile_in(&dir).map_err(io_err)?;
    if overwrite == Overwrite::Allow
        && let Ok(existing) = std::fs::metadata(path)
        && existing.is_file()
    {
        tmp.as_file()
            .set_permissions(existing.permissions())
            .map_err(io_err)?;
    }
    tmp.write_all(bytes).map_err(io_err)?;
    tmp.as_file().sync_all().map_err(io_err)?;
    match overwrite {
        Overwrite::Allow => tmp.persist(path).map_err(|e| io_err(e.error))?,
        Overwrite::Refuse => tmp.persist_noclobber(path).map_err(|e| {
            if e.error.kind() == std::io::ErrorKind::AlreadyExists {
                WriteError::Exists {
                    path: path.to_path_buf(),
                }
            } else {
                io_err(e.error)
            }
        })?,
    };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_to_replace_without_permission_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.json");
        write_atomic(&path, b"first", Overwrite::Refuse).unwrap();
        let err = write_atomic(&path, b"second", Overwrite::Refuse).unwrap_err();
        assert!(matches!(err, WriteError::Exists { .. }), "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), b"first");
        write_atomic(&path, b"third", Overwrite::Allow).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"third");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, vec!["out.json".to_string()]);
    }
}
