//! The runner: executes build steps and benchmark repetitions.
//!
//! Each repetition is its own process, started in its own process group so that a timeout (or
//! Ctrl-C) kills the benchmark together with everything it spawned. Wall time is taken around
//! spawn and wait; the runner's own thread reads stderr and waits for the exit (a pidfd) in one
//! poll loop, so a repetition costs no thread, and the timeout never skews the measurement. A
//! benchmark that fails is recorded with the tail of its stderr and the other benchmarks still
//! run. What a repetition measures is up to the benchmark's capture backends
//! ([`crate::run::backend`]): they prepare the process, then explain its failure or collect its
//! samples.
//! Nothing is written here: results leave the runner only when the whole run is complete, so an
//! interrupted run leaves no partial file behind.

use std::collections::BTreeMap;
use std::io::Read;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
#[cfg(target_os = "linux")]
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::{Duration, Instant};

use crate::capture::Collector;
use crate::machine::fingerprint::Fingerprint;
use crate::model::results::{
    Artifact, BenchmarkResult, Failure, FailureKind, Look, Provenance, RESULTS_SCHEMA_VERSION,
    RunResults, Status,
};
use crate::model::verdict::Verdict;
use crate::plan::{BUILD_TIMEOUT, BenchmarkPlan, Plan};
use crate::run::backend::{self, Backend, Launch, Repetition};
use crate::run::progress::{Event, Progress};
use crate::run::secrets;
use crate::stats::inference::LookPlan;

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

fn kill_group(pgid: i32) {
    if pgid > 0 {
        // SAFETY: kill(2) with a negative pid signals a process group; no memory is touched.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
    }
}

/// Errors that stop a whole run (as opposed to one benchmark failing).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("interrupted; no results were written")]
    Interrupted,
    #[error("cannot create a temporary folder for protocol files: {0}")]
    TempDir(std::io::Error),
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
    let exited = match pump(
        &mut stderr,
        &mut tail,
        Some(watch.fd()),
        start.checked_add(spec.timeout),
    ) {
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
    let closed = pump(
        &mut stderr,
        &mut tail,
        None,
        Instant::now().checked_add(PIPE_GRACE),
    )
    .unwrap_or(true);
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
    let (program, args) = spec
        .argv
        .split_first()
        .ok_or_else(|| std::io::Error::other("empty command"))?;
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
            ExitWatch::Thread { waiter, .. } => waiter.join().unwrap_or_else(|_| {
                (
                    Err(std::io::Error::other("waiter thread panicked")),
                    Duration::ZERO,
                )
            }),
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
        Exit::TimedOut => (
            FailureKind::Timeout,
            format!(
                "timed out after {}; its process group was killed",
                humantime::format_duration(timeout)
            ),
        ),
    };
    if outcome.pipe_held_open {
        // Such a process cannot be killed with the group and would disturb every later
        // measurement, so it fails the benchmark even when the command itself succeeded.
        message.push_str(&format!(
            ", but a process outside its process group (started with `setsid` or as a daemon) \
             kept its stderr open; kgate stopped waiting after {} and cannot stop that process: \
             make the benchmark wait for or kill what it starts",
            humantime::format_duration(PIPE_GRACE)
        ));
    }
    Some(Failure {
        kind,
        message,
        stderr_tail: outcome.stderr_tail.clone(),
    })
}

/// One revision's tree: where commands run.
#[derive(Debug, Clone)]
pub struct Revision {
    /// Root folder (the configuration's folder in this tree).
    pub root: PathBuf,
    /// `base` or `head` in interleaved runs, for messages.
    pub label: Option<&'static str>,
}

/// Runs the build steps of a plan in one revision. Returns the failure of each step that failed,
/// by build index.
pub fn run_builds(
    plan: &Plan,
    revision: &Revision,
    progress: &mut dyn Progress,
) -> Result<BTreeMap<usize, Failure>, RunError> {
    let mut failures = BTreeMap::new();
    for (i, step) in plan.builds.iter().enumerate() {
        progress.event(Event::BuildStarted {
            command: &step.command.display(),
            revision: revision.label,
        });
        let argv = step.command.argv();
        let cwd = revision.root.join(&step.cwd);
        let outcome = run_process(&ProcessSpec {
            argv: &argv,
            cwd: &cwd,
            env: Vec::new(),
            clear_env: false,
            pass_env: &[],
            timeout: BUILD_TIMEOUT,
        });
        if INTERRUPTED.load(Ordering::SeqCst) {
            return Err(RunError::Interrupted);
        }
        let failure = match outcome {
            Ok(o) => failure_of(&o, BUILD_TIMEOUT),
            Err(e) => Some(Failure {
                kind: FailureKind::Spawn,
                message: format!("cannot start `{}`: {e}", argv[0]),
                stderr_tail: String::new(),
            }),
        };
        if let Some(mut f) = failure {
            f.kind = FailureKind::Build;
            f.message = format!("build step `{}` {}", step.command.display(), f.message);
            failures.insert(i, f);
        }
    }
    Ok(failures)
}

/// The state of one benchmark being measured in one revision.
struct BenchmarkRun<'p> {
    plan: &'p BenchmarkPlan,
    backends: Vec<&'static dyn Backend>,
    cwd: PathBuf,
    scratch: tempfile::TempDir,
    collector: Collector<'p>,
    runs: u32,
    failed: bool,
}

impl<'p> BenchmarkRun<'p> {
    fn new(plan: &'p BenchmarkPlan, revision: &Revision) -> Result<BenchmarkRun<'p>, RunError> {
        let mut provenance = Provenance {
            command: plan.command.display(),
            captures: plan
                .captures
                .iter()
                .map(|c| c.as_str().to_string())
                .collect(),
            ..Provenance::default()
        };
        // The TPU sampling options each counter pass was given, and what they left out.
        for (k, options) in plan.sampling.options.iter().enumerate() {
            if let Some(options) = options {
                provenance
                    .details
                    .insert(format!("tpu_sampling_options.pass{k}"), options.clone());
            }
        }
        provenance.notes.extend(plan.sampling.notes.iter().cloned());
        let mut collector = Collector::new(&plan.name, &plan.metrics, provenance);
        collector.result_mut().parameters = plan.parameters.clone();
        Ok(BenchmarkRun {
            plan,
            backends: backend::of(&plan.captures),
            cwd: revision.root.join(&plan.cwd),
            scratch: tempfile::Builder::new()
                .prefix("kgate-protocol-")
                .tempdir()
                .map_err(RunError::TempDir)?,
            collector,
            runs: 0,
            failed: false,
        })
    }

    fn fail(&mut self, failure: Failure) {
        self.failed = true;
        let r = self.collector.result_mut();
        r.status = Status::Failed;
        r.failure = Some(failure);
    }

    /// The benchmark's command and environment, before any backend prepared them.
    fn launch(&self, measured: bool, repetition: u32) -> Launch {
        let mut env: Vec<(String, String)> = self.plan.env.clone().into_iter().collect();
        env.extend([
            ("KGATE_BENCHMARK".into(), self.plan.name.clone()),
            (
                "KGATE_WARMUP".into(),
                if measured { "0" } else { "1" }.into(),
            ),
            ("KGATE_REPETITION".into(), repetition.to_string()),
        ]);
        env.extend(self.plan.counter_env(repetition));
        Launch {
            argv: self.plan.command.argv(),
            env,
            clear_env: false,
        }
    }

    /// One run: a warm-up (`measured == false`) or a measured repetition. Each backend of the
    /// benchmark prepares it, the process runs, then each backend explains a failure or
    /// collects its samples.
    fn step(&mut self, measured: bool) -> Result<(), RunError> {
        if self.failed {
            return Ok(());
        }
        let started = Instant::now();
        let result = self.step_untimed(measured);
        let spent = started.elapsed().as_secs_f64();
        let seconds = self
            .collector
            .result_mut()
            .seconds
            .get_or_insert_with(Default::default);
        if measured {
            seconds.repetitions += spent;
        } else {
            seconds.warmup += spent;
        }
        result
    }

    fn step_untimed(&mut self, measured: bool) -> Result<(), RunError> {
        let run = Repetition {
            plan: self.plan,
            index: self.collector.result_mut().repetitions,
            scratch: self.scratch.path(),
            runs_before: self.runs,
        };
        self.runs += 1;
        let mut launch = self.launch(measured, run.index);
        for b in &self.backends {
            b.prepare(&run, &mut launch).map_err(RunError::TempDir)?;
        }
        let outcome = run_process(&ProcessSpec {
            argv: &launch.argv,
            cwd: &self.cwd,
            env: launch.env,
            clear_env: launch.clear_env,
            pass_env: &self.plan.pass_env,
            timeout: self.plan.timeout,
        });
        if INTERRUPTED.load(Ordering::SeqCst) {
            return Err(RunError::Interrupted);
        }
        let failure = match outcome {
            Err(e) => Some(Failure {
                kind: FailureKind::Spawn,
                message: format!(
                    "cannot start `{}` in `{}`: {e}",
                    launch.argv[0],
                    self.cwd.display()
                ),
                stderr_tail: String::new(),
            }),
            Ok(outcome) => match failure_of(&outcome, self.plan.timeout) {
                Some(mut failure) => {
                    for said in self.backends.iter().filter_map(|b| b.explain(&run)) {
                        failure.message = format!("{}; {said}", failure.message);
                    }
                    Some(failure)
                }
                None if !measured => {
                    self.collector.result_mut().warmup += 1;
                    None
                }
                None => self
                    .backends
                    .iter()
                    .find_map(|b| b.collect(&run, outcome.wall, &mut self.collector).err())
                    .map(|refusal| Failure {
                        kind: refusal.kind,
                        message: refusal.message,
                        stderr_tail: outcome.stderr_tail.clone(),
                    }),
            },
        };
        match failure {
            Some(failure) => self.fail(failure),
            None if measured => self.collector.result_mut().repetitions += 1,
            None => {}
        }
        Ok(())
    }

    /// The result of a benchmark that is not measured (its identity is the same on both
    /// sides): no repetition, no artifact, the digest recorded.
    fn unmeasured(self, digest: String) -> BenchmarkResult {
        let mut result = self.collector.finish();
        result.identity = Some(digest);
        result
    }

    fn finish(mut self) -> BenchmarkResult {
        if !self.failed {
            self.read_artifacts();
        }
        let mut result = self.collector.finish();
        if let Some(opts) = crate::derive::utilization::options(self.plan) {
            crate::derive::utilization::apply(&mut result, &[], opts);
        }
        result
    }

    /// Keeps the declared artifact files; one that is missing is a warning, not a failure.
    fn read_artifacts(&mut self) {
        for (name, path) in &self.plan.artifacts {
            let full = self.cwd.join(path);
            match Artifact::read(&full, &path.display().to_string()) {
                Ok(artifact) => {
                    self.collector
                        .result_mut()
                        .artifacts
                        .insert(name.clone(), artifact);
                }
                Err(e) => eprintln!(
                    "warning: benchmark `{}` declares artifact `{name}` at `{}`, which cannot be read: {e}",
                    self.plan.name,
                    full.display()
                ),
            }
        }
    }
}

/// How long one `identity:` command may run.
const IDENTITY_COMMAND_TIMEOUT: Duration = Duration::from_secs(300);

/// The standard output of `sh -c command` in `dir` (an `identity:` command), run as a build
/// step is (kgate's environment, which holds no credential), with a time limit.
fn identity_command_output(command: &str, dir: &Path) -> Result<Vec<u8>, String> {
    let out = tempfile::NamedTempFile::new()
        .map_err(|e| format!("identity command `{command}`: no temporary file: {e}"))?;
    let argv = vec![
        "sh".to_string(),
        "-c".to_string(),
        format!("{command} > \"$KGATE_IDENTITY_OUTPUT\""),
    ];
    let outcome = run_process(&ProcessSpec {
        argv: &argv,
        cwd: dir,
        env: vec![(
            "KGATE_IDENTITY_OUTPUT".to_string(),
            out.path().to_string_lossy().into_owned(),
        )],
        clear_env: false,
        pass_env: &[],
        timeout: IDENTITY_COMMAND_TIMEOUT,
    })
    .map_err(|e| format!("identity command `{command}` cannot start: {e}"))?;
    if let Some(f) = failure_of(&outcome, IDENTITY_COMMAND_TIMEOUT) {
        let mut why = format!("identity command `{command}` {}", f.message);
        if let Some(last) = f.stderr_tail.lines().last() {
            why.push_str(&format!(": {last}"));
        }
        return Err(why);
    }
    std::fs::read(out.path()).map_err(|e| format!("identity command `{command}`: {e}"))
}

/// Runs every benchmark of a plan in one revision: builds, then warm-up and repetitions.
pub fn run_plan(
    plan: &Plan,
    revision: &Revision,
    progress: &mut dyn Progress,
) -> Result<RunResults, RunError> {
    let created = crate::model::results::now_rfc3339();
    warn_refused_pass_env(plan);
    let build_failures = run_builds(plan, revision, progress)?;
    let mut benchmarks = Vec::new();
    for b in &plan.benchmarks {
        benchmarks.push(run_one(b, revision, &build_failures, progress)?);
    }
    Ok(results_for(plan, revision, benchmarks, created))
}

/// Says which benchmarks name a credential in `pass_env`: it is withheld all the same, since the
/// configuration comes with the change under test.
fn warn_refused_pass_env(plan: &Plan) {
    for b in &plan.benchmarks {
        let refused = secrets::refused(&b.pass_env);
        if !refused.is_empty() {
            eprintln!(
                "warning: benchmark `{}`: `pass_env` names {}, the runner's credentials; kgate never passes credentials to build steps or benchmarks, so it gets none of them",
                crate::model::text::escape_log(&b.name),
                crate::model::text::escape_log(&refused.join(", "))
            );
        }
    }
}

/// One benchmark in one revision: warm-up, then its `min` repetitions (or the failure of its
/// build step).
fn run_one(
    b: &BenchmarkPlan,
    revision: &Revision,
    build_failures: &BTreeMap<usize, Failure>,
    progress: &mut dyn Progress,
) -> Result<BenchmarkResult, RunError> {
    let mut run = BenchmarkRun::new(b, revision)?;
    if let Some(f) = b.build.and_then(|i| build_failures.get(&i)) {
        run.fail(f.clone());
    } else {
        progress.event(Event::BenchmarkStarted {
            name: &b.name,
            runs: u64::from(b.warmup + b.repetitions.min),
        });
        for _ in 0..b.warmup {
            run.step(false)?;
            progress.event(Event::RunFinished);
        }
        for _ in 0..b.repetitions.min {
            run.step(true)?;
            progress.event(Event::RunFinished);
        }
    }
    let result = run.finish();
    progress.event(Event::BenchmarkFinished {
        result: &result,
        revision: revision.label,
    });
    Ok(result)
}

/// Runs two revisions interleaved in one job: for each benchmark, warm-ups and repetitions
/// alternate between base and head, in A B B A order so that a linear drift (thermal, clock)
/// affects both sides alike. Returns (base, head). Repetitions are fixed at `min`; see
/// [`run_interleaved_adaptive`] for more repetitions while undecided.
pub fn run_interleaved(
    plan: &Plan,
    base: &Revision,
    head: &Revision,
    progress: &mut dyn Progress,
) -> Result<(RunResults, RunResults), RunError> {
    run_interleaved_adaptive(plan, base, head, progress, None)
}

/// How an interleaved run may add repetitions to undecided benchmarks.
#[derive(Debug, Clone)]
pub struct Adaptive {
    /// The gate's decision rule, applied at each look.
    pub policy: crate::compare::ComparePolicy,
    /// No look starts after this much time since the run began.
    pub time_budget: Option<Duration>,
}

/// Like [`run_interleaved`], but with `adaptive` a benchmark whose `repetitions.max` exceeds
/// its `min` is analysed at fixed looks (min, min + step, … max repetitions per side, see
/// `inference::LookPlan`) against a boundary that holds alpha over the whole plan
/// ([`interim_look`]), and only a benchmark still inconclusive gets the next look's
/// repetitions. The looks taken are recorded with both results.
pub fn run_interleaved_adaptive(
    plan: &Plan,
    base: &Revision,
    head: &Revision,
    progress: &mut dyn Progress,
    adaptive: Option<&Adaptive>,
) -> Result<(RunResults, RunResults), RunError> {
    let started = Instant::now();
    let created = crate::model::results::now_rfc3339();
    warn_refused_pass_env(plan);
    let base_failures = run_builds(plan, base, progress)?;
    let head_failures = run_builds(plan, head, progress)?;
    // The runner class, part of every identity digest; taken once, where one is asked for.
    let mut class: Option<String> = None;
    let mut base_results = Vec::new();
    let mut head_results = Vec::new();
    for b in &plan.benchmarks {
        if b.head_only {
            // The base revision does not declare it: measured here, compared with nothing.
            head_results.push(run_one(b, head, &head_failures, progress)?);
            continue;
        }
        let mut runs = [BenchmarkRun::new(b, base)?, BenchmarkRun::new(b, head)?];
        let mut built = true;
        for (run, failures) in runs.iter_mut().zip([&base_failures, &head_failures]) {
            if let Some(f) = b.build.and_then(|i| failures.get(&i)) {
                run.fail(f.clone());
                built = false;
            }
        }
        // What the benchmark depends on, hashed in each side's tree after its own build: the
        // same digest on both sides is code that did not change, and is not measured.
        let digests = match (&b.identity, &b.base_description) {
            (Some(identity), Some(base_description)) if built => {
                let class = class.get_or_insert_with(|| {
                    crate::machine::envkey::class_key(&Fingerprint::capture(&head.root))
                });
                let of = |description: &str, revision: &Revision| {
                    crate::run::identity::digest(
                        identity,
                        description,
                        class,
                        &revision.root.join(&b.cwd),
                        &identity_command_output,
                    )
                };
                let sides = [of(base_description, base), of(&b.description(), head)];
                for (side, digest) in ["base", "head"].iter().zip(&sides) {
                    if let Err(why) = digest {
                        eprintln!(
                            "warning: benchmark `{}`: {why} [{side}]; it is measured",
                            crate::model::text::escape_log(&b.name)
                        );
                    }
                }
                match sides {
                    [Ok(x), Ok(y)] => Some((x, y)),
                    _ => None,
                }
            }
            _ => None,
        };
        if let Some((x, y)) = &digests
            && x == y
        {
            let [base_run, head_run] = runs;
            for (run, out, label) in [
                (base_run, &mut base_results, base.label),
                (head_run, &mut head_results, head.label),
            ] {
                let result = run.unmeasured(x.clone());
                progress.event(Event::BenchmarkFinished {
                    result: &result,
                    revision: label,
                });
                out.push(result);
            }
            continue;
        }
        progress.event(Event::BenchmarkStarted {
            name: &b.name,
            runs: 2 * u64::from(b.warmup + b.repetitions.min),
        });
        let mut pair = |runs: &mut [BenchmarkRun<'_>; 2], i: u32, measured: bool| {
            let order = if i.is_multiple_of(2) { [0, 1] } else { [1, 0] };
            for side in order {
                runs[side].step(measured)?;
                progress.event(Event::RunFinished);
            }
            Ok::<(), RunError>(())
        };
        for i in 0..b.warmup {
            pair(&mut runs, i, false)?;
        }
        let looks = LookPlan::new(
            b.repetitions.min,
            b.repetitions.max,
            b.repetitions
                .step
                .unwrap_or(crate::stats::inference::DEFAULT_LOOK_STEP),
        );
        let adaptive = adaptive.filter(|_| looks.count() > 1);
        let mut done = 0;
        let mut taken = Vec::new();
        for (k, &n) in looks.looks.iter().enumerate() {
            let over_budget = adaptive
                .and_then(|a| a.time_budget)
                .is_some_and(|budget| started.elapsed() >= budget);
            if k > 0 && over_budget {
                break;
            }
            while done < n {
                pair(&mut runs, done, true)?;
                done += 1;
            }
            let Some(adaptive) = adaptive else { break };
            if runs.iter().any(|r| r.failed) {
                break;
            }
            let [base_run, head_run] = &mut runs;
            let look = interim_look(
                base_run.collector.result_mut(),
                head_run.collector.result_mut(),
                n,
                &looks,
                &adaptive.policy,
                plan.benchmarks.len(),
            );
            let decided = look.verdict != Verdict::Inconclusive;
            taken.push(look);
            if decided {
                break;
            }
        }
        let [base_run, head_run] = runs;
        let digests = digests.map(|(x, y)| [Some(x), Some(y)]).unwrap_or_default();
        for ((run, out, label), digest) in [
            (base_run, &mut base_results, base.label),
            (head_run, &mut head_results, head.label),
        ]
        .into_iter()
        .zip(digests)
        {
            let mut result = run.finish();
            result.identity = digest;
            result.looks = taken.clone();
            progress.event(Event::BenchmarkFinished {
                result: &result,
                revision: label,
            });
            out.push(result);
        }
    }
    Ok((
        results_for(plan, base, base_results, created.clone()),
        results_for(plan, head, head_results, created),
    ))
}

/// One interim analysis of an adaptive run: the gate's rule on the repetitions so far of one
/// benchmark (`base` and `head`, their looks ignored), tested against the plan's boundary, with
/// the family taken as this benchmark's gated metrics times `benchmarks` so that it is as
/// strict as the run-wide comparison. Its verdict is what the runner stops on: anything but
/// `inconclusive` (a regression, an improvement, `unchanged` or `within-threshold`) ends the
/// benchmark's repetitions. Public so that the simulations (tests/it/simulation.rs) drive the
/// runner's own rule.
pub fn interim_look(
    base: &BenchmarkResult,
    head: &BenchmarkResult,
    n: u32,
    looks: &LookPlan,
    policy: &crate::compare::ComparePolicy,
    benchmarks: usize,
) -> Look {
    let record = |verdict| Look {
        n,
        of: looks.count(),
        alpha: looks.alpha_per_look(policy.alpha),
        verdict,
        schedule: looks.schedule(),
    };
    let snapshot = |r: &BenchmarkResult| {
        let mut r = r.clone();
        // Marks the plan so that the comparison tests against its boundary.
        r.looks = vec![record(Verdict::Inconclusive)];
        RunResults {
            schema_version: RESULTS_SCHEMA_VERSION,
            kgate_version: env!("CARGO_PKG_VERSION").to_string(),
            created: String::new(),
            environment: Fingerprint::default(),
            benchmarks: vec![r],
        }
    };
    let (base, head) = (snapshot(base), snapshot(head));
    // As strict as the run-wide comparison: this benchmark's gated metrics times the number
    // of benchmarks stands in for the whole family.
    let gated = head.benchmarks[0]
        .metrics
        .iter()
        .filter(|m| m.gate.gates && m.gate.tolerance.is_none())
        .filter(|m| policy.gating_sources.contains(&m.source))
        .count()
        .max(1);
    let policy = crate::compare::ComparePolicy {
        family_hint: gated * benchmarks.max(1),
        ..policy.clone()
    };
    let report = crate::compare::compare(
        &base,
        &head,
        &policy,
        crate::model::report::Design::Interleaved,
    );
    record(
        report
            .benchmarks
            .first()
            .map(|b| b.verdict)
            .unwrap_or(Verdict::Inconclusive),
    )
}

fn results_for(
    plan: &Plan,
    revision: &Revision,
    benchmarks: Vec<BenchmarkResult>,
    created: String,
) -> RunResults {
    let mut environment = Fingerprint::capture(&revision.root);
    // Versions of the tools kgate itself ran: git, and each build step's program (`cargo`,
    // `make`, `cmake`...). Benchmark programs are never asked: `--version` may run them.
    let mut programs = vec!["git".to_string()];
    programs.extend(plan.builds.iter().filter_map(|b| build_program(&b.command)));
    for program in programs {
        if !environment.tools.contains_key(&program)
            && let Some(v) = crate::machine::fingerprint::tool_version(&program)
        {
            environment.tools.insert(program, v);
        }
    }
    // And the tools the capture backends ran, in their own words.
    let captures: Vec<_> = plan
        .benchmarks
        .iter()
        .flat_map(|b| b.captures.iter().copied())
        .collect();
    for b in backend::of(&captures) {
        environment.tools.extend(b.tool_versions());
    }
    RunResults {
        schema_version: RESULTS_SCHEMA_VERSION,
        kgate_version: env!("CARGO_PKG_VERSION").to_string(),
        created,
        environment,
        benchmarks,
    }
}

/// The program a build step runs (the first word of a shell string), when it is a plain name.
fn build_program(command: &crate::config::CommandSpec) -> Option<String> {
    let first = match command {
        crate::config::CommandSpec::Shell(s) => s.split_whitespace().next()?.to_string(),
        crate::config::CommandSpec::Argv(v) => v.first()?.clone(),
    };
    let plain = first
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    plain.then_some(first)
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
        for w in WATCHERS {
            assert_eq!(
                sh_with("exit 0", Duration::from_secs(10), w).exit,
                Exit::Code(0)
            );
            let o = sh_with("echo boom >&2; exit 3", Duration::from_secs(10), w);
            assert_eq!(o.exit, Exit::Code(3));
            assert_eq!(o.stderr_tail, "boom");
            assert!(!o.pipe_held_open);
            let o = sh_with("kill -SEGV $$", Duration::from_secs(10), w);
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
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "waited {:?} for a pipe held by a daemon ({w:?})",
                started.elapsed()
            );
            assert!(o.pipe_held_open);
            let f = failure_of(&o, Duration::from_secs(5)).expect("a failure");
            assert!(
                f.message.contains("outside its process group"),
                "{}",
                f.message
            );
            // With a timeout, the same.
            let started = Instant::now();
            let o = sh_with("setsid sleep 30 & sleep 30", Duration::from_millis(500), w);
            assert!(started.elapsed() < Duration::from_secs(10));
            assert_eq!(o.exit, Exit::TimedOut);
            assert!(o.pipe_held_open);
            let f = failure_of(&o, Duration::from_millis(500)).unwrap();
            assert!(
                f.message.starts_with("timed out after 500ms"),
                "{}",
                f.message
            );
        }
    }

    #[test]
    fn stderr_tail_keeps_the_end() {
        for w in WATCHERS {
            let o = sh_with(
                "i=0; while [ $i -lt 2000 ]; do echo line-$i >&2; i=$((i+1)); done; exit 1",
                Duration::from_secs(20),
                w,
            );
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
            let o = sh_with(
                "head -c 1000000 /dev/zero | tr '\\0' x >&2; echo >&2; echo last-line >&2; exit 2",
                Duration::from_secs(20),
                w,
            );
            assert_eq!(o.exit, Exit::Code(2), "{w:?}");
            assert!(o.stderr_tail.ends_with("last-line"), "{w:?}");
            assert!(o.stderr_tail.len() <= TAIL_BYTES);
        }
    }

    #[test]
    fn adaptive_looks_add_repetitions_only_while_undecided() {
        let dir = tempfile::tempdir().unwrap();
        // Both sides report the same value per repetition: undecidable at 2 and 4 per side
        // (no interval of the needed confidence exists), "unchanged" at 8.
        let yaml = r#"
defaults: {warmup: 0, repetitions: {min: 2, max: 8}, captures: [protocol]}
benchmarks:
  - name: same
    command: 'echo "{\"metric\": \"kernel_time\", \"value\": $((1000 + KGATE_REPETITION)), \"unit\": \"ns\", \"source\": \"timer\"}" >> "$KGATE_PROTOCOL_FILE"'
"#;
        let config = crate::config::parse(yaml, "kgate.yaml").unwrap();
        let plan = Plan::new(&config, &crate::plan::Overrides::default()).unwrap();
        let rev = |label| Revision {
            root: dir.path().to_path_buf(),
            label: Some(label),
        };
        let adaptive = Adaptive {
            policy: crate::compare::ComparePolicy::default(),
            time_budget: None,
        };
        let (base, head) = run_interleaved_adaptive(
            &plan,
            &rev("base"),
            &rev("head"),
            &mut crate::run::progress::Silent,
            Some(&adaptive),
        )
        .unwrap();
        let h = &head.benchmarks[0];
        // Looks every 2 repetitions per side (the default step): undecidable at 2 and 4, and
        // "unchanged" at the first look whose interval exists.
        let planned = LookPlan::new(2, 8, 2);
        assert_eq!(planned.looks, vec![2, 4, 6, 8]);
        let looks: Vec<(u32, Verdict)> = h.looks.iter().map(|l| (l.n, l.verdict)).collect();
        assert!(looks.len() >= 3, "{looks:?}");
        assert_eq!(h.repetitions, looks.last().unwrap().0, "{h:?}");
        for (k, (n, verdict)) in looks.iter().enumerate() {
            assert_eq!(*n, planned.looks[k]);
            let last = k + 1 == looks.len();
            let want = if last {
                Verdict::Unchanged
            } else {
                Verdict::Inconclusive
            };
            assert_eq!(*verdict, want, "{looks:?}");
        }
        let nominal = planned.alpha_per_look(0.01);
        assert!(nominal < 0.01 && nominal > 0.01 / 4.0, "{nominal}");
        assert!(h.looks.iter().all(|l| l.of == 4
            && (l.alpha - nominal).abs() < 1e-15
            && l.schedule == planned.schedule()));
        // Each side's time is recorded for the report's cost.
        let seconds = h.seconds.unwrap();
        assert!(
            seconds.repetitions > 0.0 && seconds.warmup == 0.0,
            "{seconds:?}"
        );
        assert_eq!(base.benchmarks[0].looks, h.looks);
        // Without the adaptive policy, `min` repetitions and no looks.
        let (_, head) = run_interleaved(
            &plan,
            &rev("base"),
            &rev("head"),
            &mut crate::run::progress::Silent,
        )
        .unwrap();
        assert_eq!(head.benchmarks[0].repetitions, 2);
        assert!(head.benchmarks[0].looks.is_empty());
    }
}
