//! Atomic file output.
//!
//! Results, reports and baselines are the gate's memory: a crash or Ctrl-C half-way through
//! writing one must never leave a truncated file behind. Everything is written to a temporary
//! file in the destination folder and renamed into place, which is atomic on POSIX filesystems.
//! Only regular files are replaced that way: `-`, devices and FIFOs are written through, and a
//! process's descriptor (`/dev/stdout`, `/dev/fd/N`, `/proc/self/fd/N`) is written through
//! whatever it is. A symbolic link is followed to the file it names, except out of a
//! repository: a link inside a git work tree (a file or any folder on the way, committed by
//! anyone who can open a pull request) whose target lies outside that work tree is refused,
//! naming the link and its target, so that `baseline save --force` or `-o LINK` cannot
//! overwrite a file elsewhere on the machine. A link outside any repository (one the user made,
//! `-o ~/reports/latest.json`) is followed as before.
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
    /// A symbolic link inside a repository, on the way to the destination, leads out of it.
    #[error(
        "cannot write `{path}`: `{link}` is a symbolic link to `{target}`, outside the repository `{root}`; kgate does not write through a link out of the repository: replace the link with a file or folder, or name a destination outside the repository directly"
    )]
    LeavesRepository {
        path: PathBuf,
        link: PathBuf,
        target: PathBuf,
        root: PathBuf,
    },
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
    /// One of this process's own descriptors (`/dev/fd/3`, `/proc/self/fd/3`), whatever it
    /// holds: written through a copy of it, so that its offset and append mode are kept.
    Descriptor(i32),
}

/// How many symbolic links are followed before giving up (Linux's own limit is 40).
const MAX_SYMLINKS: usize = 40;

/// Where a write to a named path goes, found as the system finds it: a component at a time,
/// each symbolic link resolved where it is met, and each one inside a repository checked.
struct Walk<'p> {
    /// The path as the user or the configuration named it, for messages.
    named: &'p Path,
    /// Symbolic links followed so far.
    links: usize,
    /// The descriptor link the path led to, when it led to one: its folder
    /// (`/proc/<pid>/fd`) and its name.
    descriptor: Option<(PathBuf, std::ffi::OsString)>,
}

impl Walk<'_> {
    fn io_err(&self, source: std::io::Error) -> WriteError {
        WriteError::Io {
            path: self.named.to_path_buf(),
            source,
        }
    }

    /// `path` taken from `base` (an absolute path without symbolic links) with every link in
    /// it resolved; `None` where it leads through a process's descriptor link
    /// (`/proc/<pid>/fd/N`), whose target is no path to replace.
    fn real(&mut self, base: PathBuf, path: &Path) -> Result<Option<PathBuf>, WriteError> {
        use std::path::Component;
        let mut real = base;
        for component in path.components() {
            let name = match component {
                Component::Normal(name) => name,
                Component::ParentDir => {
                    real.pop();
                    continue;
                }
                Component::RootDir | Component::Prefix(_) => {
                    real.push(component.as_os_str());
                    continue;
                }
                Component::CurDir => continue,
            };
            let here = real.join(name);
            let meta = match std::fs::symlink_metadata(&here) {
                Ok(meta) => meta,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    real = here;
                    continue;
                }
                Err(e) => return Err(self.io_err(e)),
            };
            if !meta.file_type().is_symlink() {
                real = here;
                continue;
            }
            if is_descriptor_folder(&real) {
                self.descriptor = Some((real, name.to_os_string()));
                return Ok(None);
            }
            self.links += 1;
            if self.links > MAX_SYMLINKS {
                return Err(WriteError::NotAFile {
                    path: self.named.to_path_buf(),
                    what: "a chain of more than 40 symbolic links",
                });
            }
            let target = std::fs::read_link(&here).map_err(|e| self.io_err(e))?;
            let resolved = self.real(real.clone(), &target)?;
            if let Some(root) = repository_of(&real)
                && !resolved.as_ref().is_some_and(|r| r.starts_with(&root))
            {
                return Err(WriteError::LeavesRepository {
                    path: self.named.to_path_buf(),
                    link: here,
                    target: resolved.unwrap_or_else(|| real.join(&target)),
                    root,
                });
            }
            match resolved {
                Some(resolved) => real = resolved,
                None => return Ok(None),
            }
        }
        Ok(Some(real))
    }
}

/// Whether `dir` (without symbolic links) is a process's folder of descriptors,
/// `/proc/<pid>/fd` (where `/dev/fd` and `/proc/self/fd` lead).
fn is_descriptor_folder(dir: &Path) -> bool {
    dir.starts_with("/proc") && dir.file_name().is_some_and(|n| n == "fd")
}

/// The work tree of the git repository that holds `dir` (a path without symbolic links): the
/// nearest folder at or above it with a `.git` (a folder, or the file of a worktree or a
/// submodule).
fn repository_of(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .find(|d| std::fs::symlink_metadata(d.join(".git")).is_ok())
        .map(Path::to_path_buf)
}

/// Follows `path` through its symbolic links to the name that will really be written, and
/// says what kind of thing is there; refuses a link out of a repository.
fn resolve(path: &Path) -> Result<Destination, WriteError> {
    if path.as_os_str() == "-" {
        return Ok(Destination::Stdout);
    }
    let mut walk = Walk {
        named: path,
        links: 0,
        descriptor: None,
    };
    let base = match path.is_absolute() {
        true => PathBuf::new(),
        false => std::env::current_dir()
            .and_then(std::fs::canonicalize)
            .map_err(|e| walk.io_err(e))?,
    };
    let Some(current) = walk.real(base, path)? else {
        // `/dev/stdout` into a pipe: what the descriptor holds is written, never replaced.
        let own = PathBuf::from(format!("/proc/{}/fd", std::process::id()));
        let fd = match &walk.descriptor {
            Some((folder, name)) if *folder == own => name.to_str().and_then(|n| n.parse().ok()),
            _ => None,
        };
        return Ok(match fd {
            Some(1) => Destination::Stdout,
            Some(fd) => Destination::Descriptor(fd),
            // Another process's: opened by its name.
            None => Destination::Stream(path.to_path_buf()),
        });
    };
    let meta = match std::fs::symlink_metadata(&current) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Destination::File(current));
        }
        Err(e) => return Err(walk.io_err(e)),
    };
    let kind = meta.file_type();
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
    Ok(Destination::Stream(current))
}

/// An error of the temporary file (its creation, a write, its rename) without the temporary
/// file's name, which the `tempfile` crate appends (`… at path "/dir/.kgate-tmp-x1y2"`): a
/// message names what the user named, never a name kgate made up.
fn without_temporary_name(e: std::io::Error) -> std::io::Error {
    let text = e.to_string();
    match text.find(" at path ") {
        Some(at) if text[at..].contains(TEMP_PREFIX) => {
            std::io::Error::new(e.kind(), text[..at].to_string())
        }
        _ => e,
    }
}

/// The start of a temporary file's name.
const TEMP_PREFIX: &str = ".kgate-tmp-";

/// Writes `bytes` to `path` so that a reader never sees half a file.
///
/// - A regular file (or a new name) is written to a temporary sibling file, flushed to disk and
///   renamed over the destination. With [`Overwrite::Refuse`] an existing file is left untouched
///   and [`WriteError::Exists`] is returned (checked atomically by a hard-link rename).
/// - A symbolic link is followed: its target is what gets replaced, the link stays a link; a
///   link inside a repository whose target is outside it is refused
///   ([`WriteError::LeavesRepository`]).
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
        Destination::Descriptor(fd) => {
            let file = own_descriptor(fd).map_err(io_err)?;
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
    builder.prefix(TEMP_PREFIX);
    // Created as 0666 and so masked by the umask, like any new file (the default is 0600).
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    let temp_err = |e| io_err(without_temporary_name(e));
    let tmp = builder.tempfile_in(&dir).map_err(temp_err)?;
    if overwrite == Overwrite::Allow
        && let Ok(existing) = std::fs::metadata(&target)
        && existing.is_file()
    {
        tmp.as_file()
            .set_permissions(existing.permissions())
            .map_err(io_err)?;
    }
    let mut out = std::io::BufWriter::with_capacity(BUFFER, EarlyWriteback::new(tmp));
    write(&mut out)
        .and_then(|()| out.flush())
        .map_err(temp_err)?;
    // The buffer is empty after a successful flush, so this cannot fail.
    let tmp = out.into_inner().map_err(|e| temp_err(e.into_error()))?.file;
    tmp.as_file().sync_all().map_err(temp_err)?;
    match overwrite {
        Overwrite::Allow => tmp.persist(&target).map_err(|e| temp_err(e.error))?,
        Overwrite::Refuse => tmp.persist_noclobber(&target).map_err(|e| {
            if e.error.kind() == std::io::ErrorKind::AlreadyExists {
                WriteError::Exists {
                    path: path.to_path_buf(),
                }
            } else {
                temp_err(e.error)
            }
        })?,
    };
    Ok(())
}

/// A copy of this process's open descriptor `fd`, to write into as it stands.
#[cfg(unix)]
fn own_descriptor(fd: i32) -> std::io::Result<std::fs::File> {
    // SAFETY: `fd` was listed in this process's /proc/<pid>/fd a moment ago; it is borrowed
    // only to be duplicated, and a descriptor closed since makes the duplication fail (EBADF).
    let borrowed = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
    borrowed.try_clone_to_owned().map(std::fs::File::from)
}

#[cfg(not(unix))]
fn own_descriptor(_fd: i32) -> std::io::Result<std::fs::File> {
    Err(std::io::ErrorKind::Unsupported.into())
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
/// `BUFFER` bytes at a time, which a `BufWriter` of that size (every writer
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
    use std::fs::read;

    /// The names of the entries of `dir`.
    fn names(dir: &Path) -> Vec<String> {
        let entries = std::fs::read_dir(dir).unwrap();
        entries
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect()
    }

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
        let back = read(&path).unwrap();
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
        assert_eq!(read(&path).unwrap(), b"first");
        write_atomic(&path, b"third", Overwrite::Allow).unwrap();
        assert_eq!(read(&path).unwrap(), b"third");
        assert_eq!(names(dir.path()), ["out.json"]);
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
        let made = unsafe { libc::mkfifo(c.as_ptr(), 0o666) };
        assert_eq!(made, 0, "mkfifo failed");
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
                    read(&node).unwrap()
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
        let names = names(dir.path());
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
        assert!(link.is_symlink());
        assert_eq!(read(&target).unwrap(), b"new");
        // A dangling link creates its target.
        let dangling = dir.path().join("dangling.json");
        std::os::unix::fs::symlink("made.json", &dangling).unwrap();
        write_atomic(&dangling, b"made", Overwrite::Refuse).unwrap();
        assert_eq!(read(dir.path().join("made.json")).unwrap(), b"made");
        // Refusing to overwrite looks through the link too.
        let err = write_atomic(&link, b"again", Overwrite::Refuse).unwrap_err();
        assert!(matches!(err, WriteError::Exists { .. }), "{err}");
        // A loop is an error, not a hang.
        let a = dir.path().join("a");
        std::os::unix::fs::symlink("b", &a).unwrap();
        std::os::unix::fs::symlink("a", dir.path().join("b")).unwrap();
        let err = write_atomic(&a, b"x", Overwrite::Allow).unwrap_err();
        assert_contains!(err.to_string(), "symbolic links");
    }

    /// A folder with a repository in it (`repo/.git`) and a file outside it.
    #[cfg(unix)]
    fn repository_beside_a_file() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let repo = base.join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join(".kgate/baselines")).unwrap();
        let victim = base.join("outside/victim.txt");
        std::fs::create_dir_all(victim.parent().unwrap()).unwrap();
        std::fs::write(&victim, b"precious").unwrap();
        (dir, repo, victim)
    }

    #[cfg(unix)]
    #[test]
    fn a_link_in_a_repository_that_leads_out_of_it_is_refused_naming_link_and_target() {
        use std::os::unix::fs::symlink;
        let (_dir, repo, victim) = repository_beside_a_file();
        let outside = victim.parent().unwrap().to_path_buf();
        // A file link (relative and absolute), a dangling one, a folder link, and a link to a
        // link that leaves.
        let baselines = repo.join(".kgate/baselines");
        let default = baselines.join("default.json");
        symlink("../../../outside/victim.txt", &default).unwrap();
        symlink(&victim, repo.join("report.json")).unwrap();
        symlink("../outside/new.json", repo.join("dangling.json")).unwrap();
        symlink("../../outside", repo.join(".kgate/history")).unwrap();
        symlink("report.json", repo.join("hop.json")).unwrap();
        let (report, dangling) = (repo.join("report.json"), repo.join("dangling.json"));
        for (named, link, target) in [
            (default.clone(), default.clone(), victim.clone()),
            (report.clone(), report.clone(), victim.clone()),
            (dangling.clone(), dangling, outside.join("new.json")),
            (
                repo.join(".kgate/history/k/r.json"),
                repo.join(".kgate/history"),
                outside.clone(),
            ),
            (repo.join("hop.json"), report.clone(), victim.clone()),
        ] {
            for overwrite in [Overwrite::Allow, Overwrite::Refuse] {
                let err = write_atomic(&named, b"forged", overwrite).unwrap_err();
                let text = err.to_string();
                assert!(
                    matches!(&err, WriteError::LeavesRepository { link: l, target: t, root, .. }
                        if *l == link && *t == target && *root == repo),
                    "{}: {text}",
                    named.display()
                );
                let (l, t, r) = (link.display(), target.display(), repo.display());
                let said =
                    format!("`{l}` is a symbolic link to `{t}`, outside the repository `{r}`");
                assert_contains!(text, said);
            }
        }
        assert_eq!(read(&victim).unwrap(), b"precious");
        let left: Vec<_> = std::fs::read_dir(&outside).unwrap().collect();
        assert_eq!(left.len(), 1, "something was written outside: {left:?}");
        // Through a relative name from inside the repository too.
        let here = std::env::current_dir().unwrap();
        let relative = pathdiff(&default, &here);
        let err = write_atomic(&relative, b"forged", Overwrite::Allow).unwrap_err();
        assert!(matches!(err, WriteError::LeavesRepository { .. }), "{err}");
    }

    /// `to` named relative to `from` (both absolute), through `..` as far as needed.
    fn pathdiff(to: &Path, from: &Path) -> PathBuf {
        let common = to
            .components()
            .zip(from.components())
            .take_while(|(a, b)| a == b)
            .count();
        let mut out: PathBuf = from.components().skip(common).map(|_| "..").collect();
        out.extend(to.components().skip(common));
        out
    }

    #[cfg(unix)]
    #[test]
    fn a_link_that_stays_in_the_repository_or_is_outside_any_is_followed() {
        use std::os::unix::fs::symlink;
        let (_dir, repo, victim) = repository_beside_a_file();
        std::fs::create_dir_all(repo.join("reports")).unwrap();
        std::fs::write(repo.join("reports/real.json"), b"old").unwrap();
        symlink("reports/real.json", repo.join("latest.json")).unwrap();
        symlink("reports", repo.join("out")).unwrap();
        write_atomic(&repo.join("latest.json"), b"new", Overwrite::Allow).unwrap();
        assert_eq!(read(repo.join("reports/real.json")).unwrap(), b"new");
        assert!(repo.join("latest.json").is_symlink());
        write_atomic(&repo.join("out/more.json"), b"more", Overwrite::Refuse).unwrap();
        assert_eq!(read(repo.join("reports/more.json")).unwrap(), b"more");
        // Outside any repository, the user's own link is followed wherever it leads: into a
        // repository included.
        let outside = victim.parent().unwrap();
        symlink("../repo/reports/real.json", outside.join("mine.json")).unwrap();
        write_atomic(&outside.join("mine.json"), b"mine", Overwrite::Allow).unwrap();
        assert_eq!(read(repo.join("reports/real.json")).unwrap(), b"mine");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_descriptor_is_written_through_and_no_message_names_a_temporary_file() {
        // `/dev/fd/N` of a file this process holds open: written into at the descriptor's
        // offset (one write after the other, as a shell's `>` gives them), never replaced.
        let dir = tempfile::tempdir().unwrap();
        let held = dir.path().join("held.txt");
        let file = std::fs::File::create(&held).unwrap();
        let fd = std::os::fd::AsRawFd::as_raw_fd(&file);
        let fd_path = |prefix: &str| PathBuf::from(format!("{prefix}/{fd}"));
        write_atomic(&fd_path("/dev/fd"), b"one ", Overwrite::Allow).unwrap();
        write_atomic(&fd_path("/proc/self/fd"), b"two", Overwrite::Refuse).unwrap();
        assert_eq!(read(&held).unwrap(), b"one two");
        let names = names(dir.path());
        assert_eq!(names.len(), 1, "{names:?}");
        drop(file);
        // A descriptor that is not open: the folder takes no temporary file, and the message
        // names what was asked for.
        let err = write_atomic(Path::new("/proc/self/fd/999999"), b"x", Overwrite::Allow)
            .unwrap_err()
            .to_string();
        assert_contains!(err, "`/proc/self/fd/999999`");
        assert!(!err.contains(TEMP_PREFIX), "{err}");
    }

    #[test]
    fn refuses_a_directory_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let err = write_atomic(dir.path(), b"x", Overwrite::Allow).unwrap_err();
        assert_contains!(err.to_string(), "it is a directory");
    }
}
