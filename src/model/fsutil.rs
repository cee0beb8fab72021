//! Atomic file output.
//!
//! Results, reports and baselines are the gate's memory: a crash or Ctrl-C half-way through
//! writing one must never leave a truncated file behind. Everything is written to a temporary
//! file in the destination folder and renamed into place, which is atomic on POSIX filesystems.
//! Only regular files are replaced that way: `-`, devices and FIFOs are written through, and a
//! symbolic link is followed to the file it names.
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
    /// The destination names something that cannot hold an output file.
    #[error(
        "cannot write `{path}`: it is {what}; name a file, `-` for standard output, or a device such as /dev/null"
    )]
    NotAFile { path: PathBuf, what: &'static str },
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

/// Where a write to a named output path really goes.
#[derive(Debug, PartialEq, Eq)]
enum Destination {
    /// `-`: standard output.
    Stdout,
    /// A regular file (or a name not yet taken): replaced atomically.
    File(PathBuf),
    /// A character device, FIFO or socket (`/dev/null`, `/dev/stdout`, a named pipe): written
    /// through. Renaming a file over it would replace the device node itself.
    Stream(PathBuf),
}

/// How many symbolic links are followed before giving up (Linux's own limit is 40).
const MAX_SYMLINKS: usize = 40;

/// Follows `path` through any chain of symbolic links to the name that will really be written,
/// and says what kind of thing is there.
fn resolve(path: &Path) -> Result<Destination, WriteError> {
    if path.as_os_str() == "-" {
        return Ok(Destination::Stdout);
    }
    let io_err = |source| WriteError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut current = path.to_path_buf();
    for _ in 0..MAX_SYMLINKS {
        let meta = match std::fs::symlink_metadata(&current) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Destination::File(current));
            }
            Err(e) => return Err(io_err(e)),
        };
        let kind = meta.file_type();
        if kind.is_symlink() {
            let target = std::fs::read_link(&current).map_err(io_err)?;
            current = if target.is_absolute() {
                target
            } else {
                current
                    .parent()
                    .map(|dir| dir.join(&target))
                    .unwrap_or(target)
            };
            continue;
        }
        if kind.is_dir() {
            return Err(WriteError::NotAFile {
                path: path.to_path_buf(),
                what: "a directory",
            });
        }
        if kind.is_file() {
            return Ok(Destination::File(current));
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileTypeExt;
            if kind.is_block_device() {
                return Err(WriteError::NotAFile {
                    path: path.to_path_buf(),
                    what: "a block device",
                });
            }
        }
        return Ok(Destination::Stream(current));
    }
    Err(WriteError::NotAFile {
        path: path.to_path_buf(),
        what: "a chain of more than 40 symbolic links",
    })
}

/// Writes `bytes` to `path` so that a reader never sees half a file.
///
/// - A regular file (or a new name) is written to a temporary sibling file, flushed to disk and
///   renamed over the destination. With [`Overwrite::Refuse`] an existing file is left untouched
///   and [`WriteError::Exists`] is returned (checked atomically by a hard-link rename).
/// - A symbolic link is followed: its target is what gets replaced, the link stays a link.
/// - `-` is standard output, where a reader that stopped reading (a broken pipe) is not an
///   error; a character device, FIFO or socket is written through (there is no
///   file to replace, and renaming over `/dev/null` would replace the device itself).
/// - A directory or a block device is refused.
pub fn write_atomic(path: &Path, bytes: &[u8], overwrite: Overwrite) -> Result<(), WriteError> {
    write_atomic_with(path, overwrite, |out| out.write_all(bytes))
}

/// [`write_atomic`] for a document produced piece by piece: `write` streams it into the
/// destination (through a buffer), so a large document is never held whole in memory. The
/// same guarantees hold: the destination changes only once `write` has succeeded.
pub fn write_atomic_with(
    path: &Path,
    overwrite: Overwrite,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(), WriteError> {
    let io_err = |source| WriteError::Io {
        path: path.to_path_buf(),
        source,
    };
    let target = match resolve(path)? {
        Destination::Stdout => {
            let mut out = std::io::BufWriter::with_capacity(BUFFER, std::io::stdout().lock());
            return match write(&mut out).and_then(|()| out.flush()) {
                // A reader that went away (`| head`) has what it wanted.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
                other => other.map_err(io_err),
            };
        }
        Destination::Stream(device) => {
            let file = std::fs::OpenOptions::new()
                .write(true)
                .open(&device)
                .map_err(io_err)?;
            let mut out = std::io::BufWriter::with_capacity(BUFFER, file);
            return write(&mut out).and_then(|()| out.flush()).map_err(io_err);
        }
        Destination::File(target) => target,
    };
    let dir = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir).map_err(io_err)?;
    let mut builder = tempfile::Builder::new();
    builder.prefix(".kgate-tmp-");
    // Created as 0666 and so masked by the umask, like any new file (the default is 0600).
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    let tmp = builder.tempfile_in(&dir).map_err(io_err)?;
    if overwrite == Overwrite::Allow
        && let Ok(existing) = std::fs::metadata(&target)
        && existing.is_file()
    {
        tmp.as_file()
            .set_permissions(existing.permissions())
            .map_err(io_err)?;
    }
    let mut out = std::io::BufWriter::with_capacity(BUFFER, EarlyWriteback::new(tmp));
    write(&mut out).and_then(|()| out.flush()).map_err(io_err)?;
    // The buffer is empty after a successful flush, so this cannot fail.
    let tmp = out.into_inner().map_err(|e| io_err(e.into_error()))?.file;
    tmp.as_file().sync_all().map_err(io_err)?;
    match overwrite {
        Overwrite::Allow => tmp.persist(&target).map_err(|e| io_err(e.error))?,
        Overwrite::Refuse => tmp.persist_noclobber(&target).map_err(|e| {
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

/// The write buffer of a streamed document.
const BUFFER: usize = 256 * 1024;

/// Bytes written between two requests to start writing them to disk.
const WRITEBACK_STEP: u64 = 4 << 20;

/// The temporary file of an atomic write, whose bytes are sent on to the disk as they are
/// written (`sync_file_range`, which starts the writes and does not wait), so that the
/// `fsync` before the rename waits for less: a 67 MB results file's `fsync` took 60 ms
/// instead of 94. Elsewhere than Linux, and when the request fails, the `fsync` does it all,
/// as before.
struct EarlyWriteback {
    file: tempfile::NamedTempFile,
    /// Bytes written so far, and the end of what was sent on.
    written: u64,
    sent: u64,
}

impl EarlyWriteback {
    fn new(file: tempfile::NamedTempFile) -> EarlyWriteback {
        EarlyWriteback {
            file,
            written: 0,
            sent: 0,
        }
    }

    #[cfg(target_os = "linux")]
    fn send_on(&mut self) {
        use std::os::fd::AsRawFd;
        let (from, len) = (self.sent, self.written - self.sent);
        // SAFETY: a plain system call on a descriptor this struct owns; it reads no memory.
        // Its result is ignored on purpose: it is a hint, and the fsync still does it all.
        unsafe {
            libc::sync_file_range(
                self.file.as_file().as_raw_fd(),
                // The offset type is `off64_t` on glibc and `off_t` on musl: 64 bits either way.
                from as _,
                len as _,
                libc::SYNC_FILE_RANGE_WRITE,
            );
        }
        self.sent = self.written;
    }

    #[cfg(not(target_os = "linux"))]
    fn send_on(&mut self) {}
}

impl Write for EarlyWriteback {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.file.write(buf)?;
        self.written += n as u64;
        if self.written - self.sent >= WRITEBACK_STEP {
            self.send_on();
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

/// A buffer of the serializer's own in front of `out`. A serializer writes a few bytes at a
/// time (a comma, a number), and each write through a `dyn Write` is a call the compiler
/// cannot inline: a results file of millions of numbers spent more in those calls than in
/// formatting. Through this buffer the small writes are copies, and `out` gets them
/// [`BUFFER`] bytes at a time, which a `BufWriter` of that size (every writer
/// [`write_atomic_with`] hands out) passes straight on. Flush it before `out` is used again.
pub fn serializer_buffer(out: &mut dyn Write) -> std::io::BufWriter<&mut dyn Write> {
    std::io::BufWriter::with_capacity(BUFFER, out)
}

/// The bytes of the file at `path`, decompressed when it is gzip (told apart by the gzip
/// magic bytes, whatever its name): profilers and CI steps compress their JSON and CSV
/// exports (`results.json.gz`), and every text importer reads them as the tool wrote them.
/// Returns whether the file was gzip.
pub fn open_maybe_gzip(path: &Path) -> std::io::Result<(Box<dyn std::io::Read + Send>, bool)> {
    use std::io::Read;
    let mut file = std::fs::File::open(path)?;
    let mut magic = [0u8; 2];
    let mut n = 0;
    while n < magic.len() {
        match file.read(&mut magic[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    let head = std::io::Cursor::new(magic[..n].to_vec());
    if n == 2 && magic == [0x1f, 0x8b] {
        let gz = flate2::read::MultiGzDecoder::new(std::io::BufReader::with_capacity(
            1 << 16,
            head.chain(file),
        ));
        return Ok((Box::new(gz), true));
    }
    Ok((Box::new(head.chain(file)), false))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_document_is_sent_on_to_disk_as_it_is_written_and_reads_back_whole() {
        let piece: Vec<u8> = (0..100_003u32).map(|i| (i % 251) as u8).collect();
        let pieces = 95;
        let mut early = EarlyWriteback::new(tempfile::NamedTempFile::new().unwrap());
        for _ in 0..pieces {
            early.write_all(&piece).unwrap();
        }
        let total = (piece.len() * pieces) as u64;
        assert_eq!(early.written, total);
        // Sent on each time another 4 MiB was written: twice in 9.5 MB (on Linux).
        if cfg!(target_os = "linux") {
            assert_eq!(early.sent / WRITEBACK_STEP, 2);
            assert!(early.sent >= 2 * WRITEBACK_STEP && early.sent < total);
        }

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("large.json");
        write_atomic_with(&path, Overwrite::Refuse, |out| {
            (0..pieces).try_for_each(|_| out.write_all(&piece))
        })
        .unwrap();
        let back = std::fs::read(&path).unwrap();
        assert_eq!(back.len() as u64, total);
        assert!(back.chunks(piece.len()).all(|c| c == piece.as_slice()));
    }

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

    /// A private character device like /dev/null (major 1, minor 3) where this process may make
    /// one, else a FIFO; either way a node that a rename would destroy.
    #[cfg(unix)]
    fn special_node(dir: &Path) -> (PathBuf, &'static str) {
        use std::ffi::CString;
        use std::os::unix::ffi::OsStrExt;
        let path = dir.join("null");
        let c = CString::new(path.as_os_str().as_bytes()).unwrap();
        // SAFETY: `c` is a valid NUL-terminated path; mknod only creates a node there.
        let made = unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) };
        if made == 0 {
            return (path, "character device");
        }
        let fifo = dir.join("fifo");
        let c = CString::new(fifo.as_os_str().as_bytes()).unwrap();
        // SAFETY: as above.
        assert_eq!(
            unsafe { libc::mkfifo(c.as_ptr(), 0o666) },
            0,
            "mkfifo failed"
        );
        (fifo, "FIFO")
    }

    #[cfg(unix)]
    #[test]
    fn writes_through_a_device_or_fifo_instead_of_replacing_it() {
        use std::os::unix::fs::FileTypeExt;
        let dir = tempfile::tempdir().unwrap();
        let (node, kind) = special_node(dir.path());
        // A FIFO needs a reader; a thread drains it while the write goes through.
        let reader = {
            let node = node.clone();
            std::thread::spawn(move || {
                if kind == "FIFO" {
                    std::fs::read(&node).unwrap()
                } else {
                    Vec::new()
                }
            })
        };
        write_atomic(&node, b"payload", Overwrite::Allow).unwrap();
        let drained = reader.join().unwrap();
        if kind == "FIFO" {
            assert_eq!(drained, b"payload");
        }
        let meta = std::fs::symlink_metadata(&node).unwrap();
        let still = meta.file_type().is_char_device() || meta.file_type().is_fifo();
        assert!(still, "the {kind} was replaced by a {:?}", meta.file_type());
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names.len(), 1, "a temporary file was left: {names:?}");
    }

    #[cfg(unix)]
    #[test]
    fn follows_a_symlink_and_replaces_its_target_not_the_link() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("real.json");
        std::fs::write(&target, b"old").unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink("real.json", &link).unwrap();
        write_atomic(&link, b"new", Overwrite::Allow).unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        // A dangling link creates its target.
        let dangling = dir.path().join("dangling.json");
        std::os::unix::fs::symlink("made.json", &dangling).unwrap();
        write_atomic(&dangling, b"made", Overwrite::Refuse).unwrap();
        assert_eq!(
            std::fs::read(dir.path().join("made.json")).unwrap(),
            b"made"
        );
        // Refusing to overwrite looks through the link too.
        let err = write_atomic(&link, b"again", Overwrite::Refuse).unwrap_err();
        assert!(matches!(err, WriteError::Exists { .. }), "{err}");
        // A loop is an error, not a hang.
        let a = dir.path().join("a");
        std::os::unix::fs::symlink("b", &a).unwrap();
        std::os::unix::fs::symlink("a", dir.path().join("b")).unwrap();
        let err = write_atomic(&a, b"x", Overwrite::Allow).unwrap_err();
        assert!(err.to_string().contains("symbolic links"), "{err}");
    }

    #[test]
    fn refuses_a_directory_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let err = write_atomic(dir.path(), b"x", Overwrite::Allow).unwrap_err();
        assert!(err.to_string().contains("it is a directory"), "{err}");
    }
}
