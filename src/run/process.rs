//! One process of a run: started in its own process group, so that a timeout, Ctrl-C or
//! SIGTERM kills it together with everything it spawned; timed around spawn and wait; its
//! stderr read and its exit awaited (a pidfd, or a thread where there is none) in one poll
//! loop, so a repetition costs no thread and the timeout never skews the measurement; its
//! stderr's tail kept for the failure message. Apart from the runner's loop because the
//! build steps, the identity commands and the profiler's re-runs start processes the same way.

use std::io::Read;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
#[cfg(target_os = "linux")]
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::{Duration, Instant};

use crate::model::results::{Failure, FailureKind};
use crate::run::secrets;

/// How many bytes of a benchmark's stderr are kept for error reports.
const TAIL_BYTES: usize = 4096;

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static CURRENT_GROUP: AtomicI32 = AtomicI32::new(0);
/// The signal that stopped the run (0 before any).
static SIGNAL: AtomicI32 = AtomicI32::new(0);

/// The handler of SIGINT, SIGTERM and SIGHUP: it marks the run as interrupted, remembers the
/// signal for the exit status, and kills the process group of the benchmark that is running.
/// Atomics and kill(2) only: all of it is async-signal-safe.
extern "C" fn on_signal(signal: libc::c_int) {
    SIGNAL.store(signal, Ordering::SeqCst);
    INTERRUPTED.store(true, Ordering::SeqCst);
    kill_group(CURRENT_GROUP.load(Ordering::SeqCst));
}

/// Installs the SIGINT/SIGTERM/SIGHUP handler: the runner unwinds promptly and writes nothing,
/// and the process exits 128 + the signal's number ([`interrupted_status`]).
pub fn install_interrupt_handler() -> std::io::Result<()> {
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: a zeroed sigaction is a valid value to fill in; the handler is an
        // `extern "C" fn(c_int)` that does only async-signal-safe work.
        let installed = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut())
        };
        if installed != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The exit status of a run that a signal interrupted: 130 for SIGINT, 143 for SIGTERM, 129
/// for SIGHUP.
pub fn interrupted_status() -> u8 {
    crate::model::exit::ExitStatus::of_signal(SIGNAL.load(Ordering::SeqCst))
}

/// Whether a signal has interrupted the run.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

fn kill_group(pgid: i32) {
    if pgid > 0 {
        // SAFETY: kill(2) with a negative pid signals a process group; no memory is touched.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
    }
}

/// How a process ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
    TimedOut,
}

/// One finished process.
#[derive(Debug, Clone)]
pub struct ProcessOutcome {
    pub exit: Exit,
    pub wall: Duration,
    pub stderr_tail: String,
    /// A process outside the benchmark's process group (a daemon started with `setsid`) still
    /// held its stderr open after the group was killed; kgate stopped waiting for it.
    pub pipe_held_open: bool,
}

/// How long the runner waits for stderr to close once the process group is gone. Only a
/// process that left the group (`setsid`, a double fork into a new session) can keep it open.
const PIPE_GRACE: Duration = Duration::from_secs(2);

/// What to start.
#[derive(Debug, Clone)]
pub struct ProcessSpec<'a> {
    pub argv: &'a [String],
    pub cwd: &'a Path,
    pub env: Vec<(String, String)>,
    /// Start from an empty environment (plus [`FIXED_PATH`]) instead of inheriting kgate's.
    pub clear_env: bool,
    /// Variables of kgate's environment the process gets under `clear_env`. The runner's
    /// credentials are never passed, named here or not.
    pub pass_env: &'a [String],
    pub timeout: Duration,
}

use crate::run::FIXED_PATH;

/// Runs one process in its own process group, with a timeout that kills the whole group.
pub fn run_process(spec: &ProcessSpec<'_>) -> std::io::Result<ProcessOutcome> {
    run_watched(spec, Watcher::Pidfd)
}

/// How the runner learns that the process exited.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Watcher {
    /// A pidfd where the kernel offers one (Linux 5.3 and later), else a thread.
    Pidfd,
    /// Always a thread (as where pidfds are missing or forbidden); for the tests.
    #[cfg_attr(not(test), allow(dead_code))]
    Thread,
}

fn run_watched(spec: &ProcessSpec<'_>, watcher: Watcher) -> std::io::Result<ProcessOutcome> {
    let mut cmd = command(spec)?;
    let start = Instant::now();
    let mut child = cmd.spawn()?;
    let pgid = child.id() as i32;
    CURRENT_GROUP.store(pgid, Ordering::SeqCst);
    if INTERRUPTED.load(Ordering::SeqCst) {
        kill_group(pgid);
    }
    let mut stderr = child.stderr.take();
    let watch = ExitWatch::new(child, start, watcher).inspect_err(|_| {
        CURRENT_GROUP.store(0, Ordering::SeqCst);
    })?;
    // One thread reads stderr and waits for the exit at once: the tail cannot fill the pipe
    // and block the benchmark, and the timeout never skews the measurement.
    let mut tail = Tail::default();
    let deadline = start.checked_add(spec.timeout);
    let exited = match pump(&mut stderr, &mut tail, Some(watch.fd()), deadline) {
        Ok(exited) => exited,
        Err(e) => {
            kill_group(pgid);
            let _ = watch.finish();
            CURRENT_GROUP.store(0, Ordering::SeqCst);
            return Err(e);
        }
    };
    if !exited {
        kill_group(pgid);
    }
    let (status, wall) = watch.finish();
    let wall = if exited { wall } else { spec.timeout };
    // Whatever the leader left running in its group goes too, so that pipes close.
    kill_group(pgid);
    CURRENT_GROUP.store(0, Ordering::SeqCst);
    // Only a process that left the group can still hold stderr: it gets a bounded wait.
    let grace_end = Instant::now().checked_add(PIPE_GRACE);
    let closed = pump(&mut stderr, &mut tail, None, grace_end).unwrap_or(true);
    let (stderr_tail, pipe_held_open) = if closed {
        (secrets::mask(&tail.text()).into_owned(), false)
    } else {
        (String::new(), true)
    };
    let status = status?;
    let exit = if !exited {
        Exit::TimedOut
    } else if let Some(code) = status.code() {
        Exit::Code(code)
    } else {
        Exit::Signal(status.signal().unwrap_or(0))
    };
    Ok(ProcessOutcome {
        exit,
        wall,
        stderr_tail,
        pipe_held_open,
    })
}

/// The command of a spec: its own process group, stdin and stdout on `/dev/null`, stderr
/// piped, the environment without the runner's credentials.
fn command(spec: &ProcessSpec<'_>) -> std::io::Result<Command> {
    let empty = || std::io::Error::other("empty command");
    let (program, args) = spec.argv.split_first().ok_or_else(empty)?;
    let mut cmd = Command::new(program);
    if spec.clear_env {
        cmd.env_clear().env("PATH", FIXED_PATH);
        let refused = secrets::refused(spec.pass_env);
        for name in spec
            .pass_env
            .iter()
            .filter(|n| !refused.contains(&n.as_str()))
        {
            if let Some(value) = std::env::var_os(name) {
                cmd.env(name, value);
            }
        }
    } else {
        // Gone from kgate's environment once `secrets::seal` ran; removed here in any case.
        for name in secrets::withheld() {
            cmd.env_remove(name);
        }
    }
    // No `pre_exec`: with `process_group` alone, std starts the child with posix_spawn.
    cmd.args(args)
        .current_dir(spec.cwd)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        // Benchmarks may print freely; only stderr is kept, for failure reports.
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0);
    Ok(cmd)
}

/// What the runner polls to learn that the process exited.
enum ExitWatch {
    /// The process's pidfd, readable once it exited.
    #[cfg(target_os = "linux")]
    Pidfd {
        child: Child,
        fd: OwnedFd,
        start: Instant,
    },
    /// A thread waits for the process, then drops the write end of a pipe whose read end is
    /// polled.
    Thread {
        fd: std::io::PipeReader,
        waiter: std::thread::JoinHandle<(std::io::Result<ExitStatus>, Duration)>,
    },
}

impl ExitWatch {
    fn new(mut child: Child, start: Instant, watcher: Watcher) -> std::io::Result<ExitWatch> {
        #[cfg(target_os = "linux")]
        if watcher == Watcher::Pidfd {
            // SAFETY: pidfd_open(2) takes a pid and flags and touches no memory. The child is
            // not reaped yet, so the pid is still its own.
            let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, child.id() as libc::pid_t, 0) };
            if let Ok(fd) = RawFd::try_from(fd)
                && fd >= 0
            {
                // SAFETY: a new descriptor (close-on-exec) that nothing else owns.
                let fd = unsafe { OwnedFd::from_raw_fd(fd) };
                return Ok(ExitWatch::Pidfd { child, fd, start });
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = watcher;
        let (fd, done) = match std::io::pipe() {
            Ok(pipe) => pipe,
            Err(e) => {
                kill_group(child.id() as i32);
                let _ = child.wait();
                return Err(e);
            }
        };
        let waiter = std::thread::spawn(move || {
            let status = child.wait();
            let wall = start.elapsed();
            drop(done);
            (status, wall)
        });
        Ok(ExitWatch::Thread { fd, waiter })
    }

    fn fd(&self) -> BorrowedFd<'_> {
        match self {
            #[cfg(target_os = "linux")]
            ExitWatch::Pidfd { fd, .. } => fd.as_fd(),
            ExitWatch::Thread { fd, .. } => fd.as_fd(),
        }
    }

    /// Reaps the process (at once when [`ExitWatch::fd`] was readable): its status, and the
    /// time from spawn to its end.
    fn finish(self) -> (std::io::Result<ExitStatus>, Duration) {
        match self {
            #[cfg(target_os = "linux")]
            ExitWatch::Pidfd {
                mut child, start, ..
            } => {
                let status = child.wait();
                (status, start.elapsed())
            }
            ExitWatch::Thread { waiter, .. } => {
                let panicked = std::io::Error::other("waiter thread panicked");
                waiter.join().unwrap_or((Err(panicked), Duration::ZERO))
            }
        }
    }
}

/// Reads what the process writes to stderr into `tail` until `exit` is readable, or, without
/// `exit`, until stderr closes. `Ok(false)` when `deadline` came first. A stderr that ended
/// (or failed) is set to `None`.
fn pump(
    stderr: &mut Option<std::process::ChildStderr>,
    tail: &mut Tail,
    exit: Option<BorrowedFd<'_>>,
    deadline: Option<Instant>,
) -> std::io::Result<bool> {
    let mut buf = [0u8; 8192];
    loop {
        let err_fd = stderr.as_ref().map_or(-1, |s| s.as_raw_fd());
        if err_fd < 0 && exit.is_none() {
            return Ok(true);
        }
        let mut fds = [err_fd, exit.map_or(-1, |fd| fd.as_raw_fd())].map(|fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        });
        if !poll_until(&mut fds, deadline)? {
            return Ok(false);
        }
        // The exit first: the wall time is taken before the last of stderr is read.
        if fds[1].revents != 0 {
            return Ok(true);
        }
        if fds[0].revents != 0
            && let Some(s) = stderr.as_mut()
        {
            match s.read(&mut buf) {
                Ok(0) => *stderr = None,
                Ok(n) => tail.push(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => *stderr = None,
            }
        }
    }
}

/// poll(2) until one of `fds` is ready (`Ok(true)`) or `deadline` passed (`Ok(false)`);
/// without a deadline it waits as long as it takes.
fn poll_until(fds: &mut [libc::pollfd], deadline: Option<Instant>) -> std::io::Result<bool> {
    loop {
        let ms = match deadline {
            None => -1,
            Some(deadline) => {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Ok(false);
                }
                // Rounded up, so the wait never ends before the deadline.
                i32::try_from(left.as_nanos().div_ceil(1_000_000)).unwrap_or(i32::MAX)
            }
        };
        // SAFETY: `fds` is a valid, exclusively borrowed array of `fds.len()` pollfd structs.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
        if n > 0 {
            return Ok(true);
        }
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

/// The end of a stream as it is read: the last [`TAIL_BYTES`], as text when done.
#[derive(Default)]
struct Tail {
    kept: Vec<u8>,
}

impl Tail {
    fn push(&mut self, bytes: &[u8]) {
        self.kept.extend_from_slice(bytes);
        if self.kept.len() > 2 * TAIL_BYTES {
            self.kept.drain(..self.kept.len() - TAIL_BYTES);
        }
    }

    fn text(mut self) -> String {
        if self.kept.len() > TAIL_BYTES {
            self.kept.drain(..self.kept.len() - TAIL_BYTES);
        }
        String::from_utf8_lossy(&self.kept).trim_end().to_string()
    }
}

fn signal_name(sig: i32) -> String {
    match sig {
        libc::SIGSEGV => "SIGSEGV (segmentation fault)".into(),
        libc::SIGABRT => "SIGABRT (abort)".into(),
        libc::SIGKILL => "SIGKILL".into(),
        libc::SIGBUS => "SIGBUS (bus error)".into(),
        libc::SIGFPE => "SIGFPE (arithmetic error)".into(),
        libc::SIGILL => "SIGILL (illegal instruction)".into(),
        other => format!("signal {other}"),
    }
}

/// A failure message for a process that did not exit cleanly, or `None` if it did.
pub(crate) fn failure_of(outcome: &ProcessOutcome, timeout: Duration) -> Option<Failure> {
    let (kind, mut message) = match outcome.exit {
        Exit::Code(0) if outcome.pipe_held_open => {
            (FailureKind::ExitStatus, "exited with status 0".to_string())
        }
        Exit::Code(0) => return None,
        Exit::Code(code) => (
            FailureKind::ExitStatus,
            format!("exited with status {code}"),
        ),
        Exit::Signal(sig) => (
            FailureKind::Crashed,
            format!("killed by {}", signal_name(sig)),
        ),
        Exit::TimedOut => {
            let after = humantime::format_duration(timeout);
            let message = format!("timed out after {after}; its process group was killed");
            (FailureKind::Timeout, message)
        }
    };
    if outcome.pipe_held_open {
        // Such a process cannot be killed with the group and would disturb every later
        // measurement, so it fails the benchmark even when the command itself succeeded.
        let grace = humantime::format_duration(PIPE_GRACE);
        message.push_str(&format!(
            ", but a process outside its process group (started with `setsid` or as a daemon) \
             kept its stderr open; kgate stopped waiting after {grace} and cannot stop that process: \
             make the benchmark wait for or kill what it starts"
        ));
    }
    Some(Failure {
        kind,
        message,
        stderr_tail: outcome.stderr_tail.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh_with(script: &str, timeout: Duration, watcher: Watcher) -> ProcessOutcome {
        let argv = vec!["sh".to_string(), "-c".to_string(), script.to_string()];
        run_watched(
            &ProcessSpec {
                argv: &argv,
                cwd: Path::new("."),
                env: Vec::new(),
                clear_env: false,
                pass_env: &[],
                timeout,
            },
            watcher,
        )
        .unwrap()
    }

    /// Both ways of learning of the exit: the pidfd, and the thread used where there is none.
    const WATCHERS: [Watcher; 2] = [Watcher::Pidfd, Watcher::Thread];

    #[test]
    fn exit_codes_signals_and_stderr_tails() {
        let ten = Duration::from_secs(10);
        for w in WATCHERS {
            assert_eq!(sh_with("exit 0", ten, w).exit, Exit::Code(0));
            let o = sh_with("echo boom >&2; exit 3", ten, w);
            assert_eq!(o.exit, Exit::Code(3));
            assert_eq!(o.stderr_tail, "boom");
            assert!(!o.pipe_held_open);
            let o = sh_with("kill -SEGV $$", ten, w);
            assert_eq!(o.exit, Exit::Signal(libc::SIGSEGV));
            let f = failure_of(&o, Duration::from_secs(1)).unwrap();
            assert_eq!(f.kind, FailureKind::Crashed);
            assert_eq!(f.message, "killed by SIGSEGV (segmentation fault)");
        }
    }

    #[test]
    fn timeout_kills_the_whole_process_group() {
        for w in WATCHERS {
            let dir = tempfile::tempdir().unwrap();
            let marker = dir.path().join("grandchild-survived");
            // The grandchild sleeps, then would leave a marker: it must die with its parent.
            let script = format!("(sleep 2; touch '{}') & sleep 30", marker.display());
            let started = Instant::now();
            let o = sh_with(&script, Duration::from_millis(300), w);
            assert!(started.elapsed() < Duration::from_secs(10), "{w:?}");
            assert_eq!(o.exit, Exit::TimedOut);
            assert_eq!(o.wall, Duration::from_millis(300));
            std::thread::sleep(Duration::from_millis(2500));
            assert!(
                !marker.exists(),
                "a process of the group outlived the timeout ({w:?})"
            );
        }
    }

    #[test]
    fn a_daemon_holding_stderr_cannot_hold_up_the_run() {
        for w in WATCHERS {
            // `setsid` puts the helper outside the benchmark's process group, where the group
            // kill does not reach it; it keeps stderr open for 30 s.
            let started = Instant::now();
            let o = sh_with(
                "setsid sleep 30 & sleep 0.1; exit 0",
                Duration::from_secs(5),
                w,
            );
            let waited = started.elapsed();
            assert!(
                waited < Duration::from_secs(10),
                "waited {waited:?} for a pipe held by a daemon ({w:?})"
            );
            assert!(o.pipe_held_open);
            let f = failure_of(&o, Duration::from_secs(5)).expect("a failure");
            assert_contains!(f.message, "outside its process group");
            // With a timeout, the same.
            let started = Instant::now();
            let o = sh_with("setsid sleep 30 & sleep 30", Duration::from_millis(500), w);
            assert!(started.elapsed() < Duration::from_secs(10));
            assert_eq!(o.exit, Exit::TimedOut);
            assert!(o.pipe_held_open);
            let f = failure_of(&o, Duration::from_millis(500)).unwrap();
            let message = f.message;
            assert!(message.starts_with("timed out after 500ms"), "{message}");
        }
    }

    #[test]
    fn stderr_tail_keeps_the_end() {
        for w in WATCHERS {
            let script =
                "i=0; while [ $i -lt 2000 ]; do echo line-$i >&2; i=$((i+1)); done; exit 1";
            let o = sh_with(script, Duration::from_secs(20), w);
            assert!(o.stderr_tail.ends_with("line-1999"));
            assert!(o.stderr_tail.len() <= TAIL_BYTES);
            assert!(!o.stderr_tail.contains("line-0\n"));
        }
    }

    /// stderr is read while the process runs: one that writes more than a pipe holds
    /// (64 KiB on Linux) before it exits is not blocked into its timeout.
    #[test]
    fn stderr_beyond_a_pipe_buffer_is_read_while_the_process_runs() {
        for w in WATCHERS {
            let script =
                "head -c 1000000 /dev/zero | tr '\\0' x >&2; echo >&2; echo last-line >&2; exit 2";
            let o = sh_with(script, Duration::from_secs(20), w);
            assert_eq!(o.exit, Exit::Code(2), "{w:?}");
            assert!(o.stderr_tail.ends_with("last-line"), "{w:?}");
            assert!(o.stderr_tail.len() <= TAIL_BYTES);
        }
    }
}
