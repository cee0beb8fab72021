//! The hardening issue's defects, each through the command line as a user (or an attacker with
//! a pull request) meets it: output paths that are not regular files, a benchmark that leaves a
//! daemon holding its pipes, credentials in the environment, a forged name in the terminal.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::{kgate, stderr_of, write};

/// A private node that a rename would destroy: a character device like /dev/null where this
/// process may make one, else a FIFO (with a reader thread, as `-o` into a pipe needs).
fn special_node(dir: &std::path::Path) -> (std::path::PathBuf, bool) {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let null = dir.join("null");
    let c = CString::new(null.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path; mknod only creates a node there.
    if unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) } == 0 {
        return (null, false);
    }
    let fifo = dir.join("fifo");
    let c = CString::new(fifo.as_os_str().as_bytes()).unwrap();
    // SAFETY: as above.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o666) }, 0);
    (fifo, true)
}

const PROTOCOL: &str =
    "{\"benchmark\": \"k\", \"metric\": \"kernel_time\", \"value\": 120, \"unit\": \"ns\"}\n";

#[test]
fn output_onto_a_device_a_fifo_a_symlink_or_stdout_keeps_what_is_there() {
    use std::os::unix::fs::FileTypeExt;
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "p.jsonl", PROTOCOL);
    let (node, is_fifo) = special_node(dir.path());
    let reader = is_fifo.then(|| {
        let node = node.clone();
        std::thread::spawn(move || std::fs::read(node).unwrap())
    });
    let out = kgate(dir.path())
        .args(["import", "protocol", "p.jsonl", "-o"])
        .arg(&node)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    if let Some(reader) = reader {
        let got = reader.join().unwrap();
        assert!(String::from_utf8_lossy(&got).contains("kernel_time"));
    }
    let kind = std::fs::symlink_metadata(&node).unwrap().file_type();
    assert!(
        kind.is_char_device() || kind.is_fifo(),
        "the node became {kind:?}"
    );

    // A symlink: its target is replaced, the link stays.
    write(dir.path(), "real.json", "{}");
    std::os::unix::fs::symlink("real.json", dir.path().join("link.json")).unwrap();
    let out = kgate(dir.path())
        .args(["import", "protocol", "p.jsonl", "-o", "link.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let link = std::fs::symlink_metadata(dir.path().join("link.json")).unwrap();
    assert!(link.file_type().is_symlink());
    let real = std::fs::read_to_string(dir.path().join("real.json")).unwrap();
    assert!(real.contains("kernel_time"), "{real}");

    // `-` is standard output.
    let out = kgate(dir.path())
        .args(["import", "protocol", "p.jsonl", "-o", "-"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("kernel_time"));
    assert!(
        !dir.path().join("-").exists(),
        "a file named `-` was written"
    );

    // A folder is refused by name.
    std::fs::create_dir(dir.path().join("folder")).unwrap();
    let out = kgate(dir.path())
        .args(["import", "protocol", "p.jsonl", "-o", "folder"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr_of(&out).contains("`folder`: it is a directory"),
        "{}",
        stderr_of(&out)
    );
}

#[test]
fn a_daemonised_grandchild_does_not_defeat_the_timeout_or_ctrl_c() {
    let dir = tempfile::tempdir().unwrap();
    // The helper leaves the benchmark's process group with setsid and keeps stderr open.
    write(
        dir.path(),
        "kgate.yaml",
        "defaults: {warmup: 0, repetitions: 1}\nbenchmarks:\n  - name: daemon\n    command: \"setsid sleep 60 & sleep 30\"\n    timeout: 1s\n",
    );
    let started = Instant::now();
    let out = kgate(dir.path())
        .args(["run", "--no-progress", "-o", "out.json"])
        .output()
        .unwrap();
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    assert!(took < Duration::from_secs(20), "the run took {took:?}");
    let err = stderr_of(&out);
    assert!(err.contains("timed out after 1s"), "{err}");
    assert!(err.contains("a process outside its process group"), "{err}");

    // Ctrl-C while the daemon holds the pipe, once it runs in a session of its own.
    let outside = tempfile::tempdir().unwrap();
    let running = outside.path().join("running");
    write(
        dir.path(),
        "kgate.yaml",
        &format!(
            "defaults: {{warmup: 0, repetitions: 1}}\nbenchmarks:\n  - name: daemon\n    command: \"setsid sh -c \\\"touch '{}'; sleep 60\\\" & sleep 30\"\n    timeout: 60s\n",
            running.display()
        ),
    );
    let child = Command::new(assert_cmd::cargo::cargo_bin!("kgate"))
        .current_dir(dir.path())
        .args(["run", "--no-progress", "-o", "out2.json"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    crate::common::wait_for_file(&running);
    let started = Instant::now();
    // SAFETY: signalling the child this test started.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr_of(&out));
    assert!(started.elapsed() < Duration::from_secs(20));
}

/// Credentials of both forges as a runner sets them, each value holding `kgateprobe` (replaced
/// by a marker of its own in each test) so that a benchmark looking through `/proc` recognises
/// it and nothing else on the machine matches.
const CREDENTIALS: &[(&str, &str)] = &[
    ("GITHUB_TOKEN", "ghs_kgateprobe_github_token"),
    ("GH_TOKEN", "gho_kgateprobe_gh_token"),
    ("INPUT_GITHUB-TOKEN", "ghs_kgateprobe_github_token"),
    ("ACTIONS_RUNTIME_TOKEN", "kgateprobe-actions-runtime"),
    (
        "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
        "kgateprobe-oidc-request-token",
    ),
    ("KGATE_GITLAB_TOKEN", "glpat-kgateprobe-kgate"),
    ("GITLAB_TOKEN", "glpat-kgateprobe-gitlab"),
    ("CI_JOB_TOKEN", "glcbt-kgateprobe-job"),
    ("CI_REGISTRY_PASSWORD", "kgateprobe-registry"),
    (
        "CI_DEPENDENCY_PROXY_PASSWORD",
        "kgateprobe-dependency-proxy",
    ),
    ("CI_DEPLOY_PASSWORD", "kgateprobe-deploy"),
    (
        "CI_REPOSITORY_URL",
        "https://gitlab-ci-token:glcbt-kgateprobe-job@gitlab.example.com/g/k.git",
    ),
    // An ID token declared under `id_tokens:`, named as the job chose.
    (
        "VAULT_ID_TOKEN",
        "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJrIn0.kgateprobe_id_token_signature",
    ),
];

/// The credentials with the marker of one test.
fn credentials(marker: &str) -> Vec<(&'static str, String)> {
    CREDENTIALS
        .iter()
        .map(|(k, v)| (*k, v.replace("kgateprobe", marker)))
        .collect()
}

/// A benchmark that looks for credentials: every readable `/proc/*/environ`, and the chain of
/// its ancestors (following `PPid` in `/proc/PID/status`), each ancestor's command name and
/// whether its environment could be read listed in `$1.ancestors`, anything holding the marker
/// `$2` written to `$1`.
const SNOOP: &str = r#"#!/bin/sh
out=$1
marker=$2
: > "$out"
: > "$out.ancestors"
look() {
    grep -aoE "[A-Za-z0-9_.:/@=-]*$marker[A-Za-z0-9_.:/@-]*" "$1" 2>/dev/null | sed "s|^|$1: |" >> "$out"
}
pid=$$
while [ -n "$pid" ] && [ "$pid" -gt 1 ]; do
    if cat "/proc/$pid/environ" > /dev/null 2>&1; then state=readable; else state=unreadable; fi
    echo "$(cat "/proc/$pid/comm") $state" >> "$out.ancestors"
    look "/proc/$pid/environ"
    pid=$(sed -n 's/^PPid:[[:space:]]*//p' "/proc/$pid/status")
done
for f in /proc/[0-9]*/environ; do
    look "$f"
done
env | grep "$marker" | sed 's|^|own environment: |' >> "$out"
exit 0
"#;

/// The suite of a snooping build step and benchmark, one that passes the credentials through
/// by name, and a failing one that prints what it found (a value a benchmark could have learnt
/// anywhere) to stderr.
fn snooping_suite(dir: &std::path::Path, marker: &str) {
    use std::os::unix::fs::PermissionsExt;
    let snoop = write(dir, "snoop.sh", SNOOP);
    std::fs::set_permissions(&snoop, std::fs::Permissions::from_mode(0o755)).unwrap();
    let printed: Vec<String> = credentials(marker).into_iter().map(|(_, v)| v).collect();
    write(
        dir,
        "kgate.yaml",
        &format!(
            "defaults: {{warmup: 0, repetitions: 1}}\nbenchmarks:\n  - name: snoop\n    build: ./snoop.sh build-found.txt {marker}\n    command: ./snoop.sh bench-found.txt {marker}\n    metrics: {{wall_time: {{gate: false}}}}\n  - name: asks\n    command: \"echo passed: $GITHUB_TOKEN $KGATE_GITLAB_TOKEN $CI_JOB_TOKEN. >&2; exit 1\"\n    pass_env: [GITHUB_TOKEN, KGATE_GITLAB_TOKEN, CI_JOB_TOKEN]\n  - name: prints\n    command: \"echo found {} >&2; exit 1\"\n",
            printed.join(" ")
        ),
    );
}

fn found(dir: &std::path::Path) -> String {
    let mut text = String::new();
    for name in ["build-found.txt", "bench-found.txt"] {
        let found = std::fs::read_to_string(dir.join(name))
            .unwrap_or_else(|e| panic!("the snooping step did not run: {name}: {e}"));
        text.push_str(&found);
    }
    text
}

fn ancestors(dir: &std::path::Path) -> String {
    std::fs::read_to_string(dir.join("bench-found.txt.ancestors")).unwrap()
}

/// What kgate printed holds no credential, and the failing benchmarks' tails show them as `***`.
fn assert_masked(out: &std::process::Output, marker: &str) {
    let err = stderr_of(out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    for (name, value) in credentials(marker) {
        assert!(!err.contains(&value), "{name} was printed:\n{err}");
    }
    assert!(!err.contains(marker), "a credential was printed:\n{err}");
    assert!(err.contains("found ***"), "{err}");
    // Passed through by name, the credentials are still withheld: the names are configuration,
    // and the configuration comes with the change under test.
    assert!(err.contains("passed: ."), "{err}");
    assert!(
        err.contains("`pass_env` names GITHUB_TOKEN, KGATE_GITLAB_TOKEN, CI_JOB_TOKEN"),
        "{err}"
    );
}

#[test]
fn a_benchmark_searching_proc_finds_no_credential_and_tails_never_show_one() {
    let dir = tempfile::tempdir().unwrap();
    let marker = "kgateprobeRoot";
    snooping_suite(dir.path(), marker);
    let mut cmd = kgate(dir.path());
    cmd.args(["run", "--no-progress", "-o", "out.json"]);
    for (name, value) in credentials(marker) {
        cmd.env(name, value);
    }
    let out = cmd.output().unwrap();
    let found = found(dir.path());
    assert!(
        found.is_empty(),
        "the build step or the benchmark found credentials:\n{found}"
    );
    assert!(
        ancestors(dir.path()).contains("kgate "),
        "the benchmark walked up to kgate: {}",
        ancestors(dir.path())
    );
    assert_masked(&out, marker);
}

/// The same as an unprivileged user (the test's own user, or `nobody` where the tests run as
/// root): kgate's environment is not even readable to the benchmark while kgate holds the
/// credentials (it is not dumpable).
#[test]
#[cfg_attr(
    kgate_no_setpriv,
    ignore = "the tests run as root and setpriv (util-linux) is missing, so nothing can run kgate unprivileged"
)]
fn an_unprivileged_benchmark_cannot_read_kgates_environment() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let marker = "kgateprobeUser";
    snooping_suite(dir.path(), marker);
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let bin = assert_cmd::cargo::cargo_bin!("kgate");
    let mut cmd = if root {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(bin);
        c
    } else {
        Command::new(bin)
    };
    cmd.current_dir(dir.path())
        .env_remove("CI")
        .env("NO_COLOR", "1")
        .args(["run", "--no-progress", "-o", "out.json"]);
    for (name, value) in credentials(marker) {
        cmd.env(name, value);
    }
    let out = cmd.output().unwrap();
    let found = found(dir.path());
    assert!(
        found.is_empty(),
        "the build step or the benchmark found credentials:\n{found}"
    );
    let ancestors = ancestors(dir.path());
    assert!(
        ancestors.lines().any(|l| l == "kgate unreadable"),
        "kgate's environment was readable to the benchmark:\n{ancestors}"
    );
    assert_masked(&out, marker);
}

#[test]
fn a_forged_name_cannot_print_a_workflow_command_or_a_terminal_escape() {
    let dir = tempfile::tempdir().unwrap();
    let line = |v: f64| {
        format!(
            "{{\"benchmark\": \"k\\n::error title=forged::pwned\\u001b[2J\", \"metric\": \"kernel_time\\n::warning::x\", \"value\": {v}, \"unit\": \"ns\\u001b]0;title\\u0007\"}}\n"
        )
    };
    let base: String = (0..8).map(|i| line(100.0 + i as f64)).collect();
    let head: String = (0..8).map(|i| line(200.0 + i as f64)).collect();
    write(dir.path(), "base.jsonl", &base);
    write(dir.path(), "head.jsonl", &head);
    for (input, output) in [("base.jsonl", "base.json"), ("head.jsonl", "head.json")] {
        let out = kgate(dir.path())
            .args(["import", "protocol", input, "-o", output])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    }
    let out = kgate(dir.path())
        .args(["compare", "base.json", "head.json"])
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        stderr_of(&out)
    );
    assert!(text.contains("forged"), "{text}");
    for l in text.lines() {
        assert!(
            !l.trim_start().starts_with("::"),
            "a workflow command: {l:?}"
        );
    }
    assert!(
        !text.contains('\u{1b}'),
        "a raw escape reached the terminal"
    );
    assert!(!text.contains('\u{7}'));
}

#[test]
fn a_new_benchmark_that_fails_is_failed_with_its_failure_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "kgate.yaml",
        "defaults: {warmup: 0, repetitions: 3}\nbenchmarks:\n  - name: ok\n    command: [true]\n  - name: broken\n    command: \"echo no such input >&2; exit 3\"\n",
    );
    let out = kgate(dir.path())
        .args(["run", "--no-progress", "--bench", "ok", "-o", "base.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let out = kgate(dir.path())
        .args(["run", "--no-progress", "-o", "head.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    let json = kgate(dir.path())
        .args(["compare", "base.json", "head.json", "--format", "json"])
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let broken = report["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == "broken")
        .unwrap();
    assert_eq!(broken["verdict"], "failed");
    assert_eq!(
        broken["explanation"],
        "failed in the candidate: exited with status 3; it has no baseline either"
    );
    assert_eq!(report["verdict"], "error");
    assert_eq!(report["summary"]["failed"], 1);
    assert_eq!(report["summary"]["missing"], 0);
    assert_eq!(report["summary"]["new"], 0);
    assert_eq!(json.status.code(), Some(2));
    for format in ["markdown", "table"] {
        let out = kgate(dir.path())
            .args(["compare", "base.json", "head.json", "--format", format])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(2), "{format}: {text}");
        assert!(!text.contains("becomes its reference"), "{format}: {text}");
        assert!(text.contains("ERROR: 1 failed"), "{format}: {text}");
        assert!(!text.contains("PASS"), "{format}: {text}");
        assert!(text.contains("exited with status 3"), "{format}: {text}");
    }
}

#[test]
fn refusals_come_before_the_suite_runs_and_suggest_what_exists() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    write(
        dir.path(),
        "kgate.yaml",
        &format!(
            "defaults: {{warmup: 0, repetitions: 2}}\nbenchmarks:\n  - name: k\n    command: \"touch '{}'\"\n",
            marker.display()
        ),
    );
    let out = kgate(dir.path())
        .args(["baseline", "save", "--no-progress"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    std::fs::remove_file(&marker).unwrap();

    // The baseline exists: refused without running anything.
    let out = kgate(dir.path())
        .args(["baseline", "save", "--no-progress"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr_of(&out).contains("baseline `default` already exists"),
        "{}",
        stderr_of(&out)
    );
    assert!(!marker.exists(), "the suite ran before the refusal");

    // A named baseline that is not there: refused first, with the ones that are.
    let out = kgate(dir.path())
        .args(["check", "--no-progress", "--baseline", "nightly"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr_of(&out);
    assert!(err.contains("no baseline `nightly`"), "{err}");
    assert!(err.contains("the stored baselines are `default`"), "{err}");
    assert!(!marker.exists(), "the suite ran before the refusal");

    // Recording the same results twice names what happened, with no flag that does not exist.
    let out = kgate(dir.path())
        .args(["run", "--no-progress", "-o", "r.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    for attempt in 0..2 {
        let out = kgate(dir.path())
            .args(["history", "record", "r.json"])
            .output()
            .unwrap();
        let err = stderr_of(&out);
        if attempt == 0 {
            assert_eq!(out.status.code(), Some(0), "{err}");
        } else {
            assert_eq!(out.status.code(), Some(2), "{err}");
            assert!(err.contains("this run is already in the history"), "{err}");
            assert!(!err.contains("--force"), "{err}");
        }
    }
}

/// A pull request can commit symbolic links: `.kgate/baselines/default.json -> FILE`, a report
/// name, the history folder. A write through any of them that leaves the repository is refused,
/// naming the link and where it leads, and FILE keeps what it held; a link that stays inside
/// is followed as before.
#[test]
fn a_committed_symlink_out_of_the_repository_is_never_written_through() {
    use std::os::unix::fs::symlink;
    let d = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(d.path()).unwrap();
    let (repo, outside) = (base.join("repo"), base.join("outside"));
    let victim = write(&outside, "victim.txt", "precious\n");
    std::fs::create_dir_all(&repo).unwrap();
    crate::common::git(&repo, &["init", "-q"]);
    write(
        &repo,
        "kgate.yaml",
        "defaults: {warmup: 0, repetitions: 1}\nbenchmarks:\n  - name: k\n    command: \"true\"\n",
    );
    write(&repo, "p.jsonl", PROTOCOL);
    kgate(&repo)
        .args(["import", "protocol", "p.jsonl", "-o", "results.json"])
        .assert()
        .success();
    std::fs::create_dir_all(repo.join(".kgate/baselines")).unwrap();
    symlink(
        "../../../outside/victim.txt",
        repo.join(".kgate/baselines/default.json"),
    )
    .unwrap();
    symlink(&victim, repo.join("report.json")).unwrap();
    symlink("../../outside", repo.join(".kgate/history")).unwrap();
    crate::common::git(&repo, &["add", "-A"]);
    crate::common::git(&repo, &["commit", "-qm", "links"]);
    for (args, link, target) in [
        (
            &["baseline", "save", "results.json", "--force"][..],
            ".kgate/baselines/default.json",
            victim.clone(),
        ),
        (
            &["import", "protocol", "p.jsonl", "-o", "report.json"][..],
            "report.json",
            victim.clone(),
        ),
        (
            &["history", "record", "results.json"][..],
            ".kgate/history",
            outside.clone(),
        ),
    ] {
        let out = kgate(&repo).args(args).output().unwrap();
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        let said = format!(
            "`{}` is a symbolic link to `{}`, outside the repository `{}`",
            repo.join(link).display(),
            target.display(),
            repo.display()
        );
        assert!(err.contains(&said), "{args:?}: {err}");
    }
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1);

    // Inside the repository a link is followed: its target is replaced, the link stays.
    std::fs::remove_file(repo.join(".kgate/baselines/default.json")).unwrap();
    write(&repo, ".kgate/baselines/stored.json", "{}");
    symlink("stored.json", repo.join(".kgate/baselines/default.json")).unwrap();
    kgate(&repo)
        .args(["baseline", "save", "results.json", "--force"])
        .assert()
        .success();
    let stored = std::fs::read_to_string(repo.join(".kgate/baselines/stored.json")).unwrap();
    assert!(stored.contains("kernel_time"), "{stored}");
}

/// `-o /dev/stdout` into a pipe (`| cat`) is standard output, not a folder to put a temporary
/// file in; `/dev/fd/N` too. No message ever names a temporary file.
#[test]
fn output_onto_dev_stdout_into_a_pipe_is_written_through() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "p.jsonl", PROTOCOL);
    for named in ["/dev/stdout", "/proc/self/fd/1", "/dev/fd/1"] {
        // assert_cmd gives the command a pipe for its standard output.
        let out = kgate(dir.path())
            .args(["import", "protocol", "p.jsonl", "-o", named])
            .output()
            .unwrap();
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(0), "{named}: {err}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("kernel_time"),
            "{named}"
        );
    }
    let out = kgate(dir.path())
        .args(["import", "protocol", "p.jsonl", "-o", "/proc/self/fd/77777"])
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("`/proc/self/fd/77777`"), "{err}");
    assert!(!err.contains(".kgate-tmp"), "{err}");
}

/// A stopped run exits as a shell reports the signal: 143 for SIGTERM (a cancelled CI job),
/// 130 for SIGINT (Ctrl-C), 129 for SIGHUP, writing nothing either way.
#[test]
fn a_signal_exits_128_plus_its_number_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let started = dir.path().join("started");
    write(
        dir.path(),
        "kgate.yaml",
        &format!(
            "defaults: {{warmup: 0, repetitions: 1}}\nbenchmarks:\n  - name: slow\n    command: \"touch '{}'; sleep 30\"\n",
            started.display()
        ),
    );
    for (signal, status) in [
        (libc::SIGTERM, 143),
        (libc::SIGINT, 130),
        (libc::SIGHUP, 129),
    ] {
        let _ = std::fs::remove_file(&started);
        let child = Command::new(assert_cmd::cargo::cargo_bin!("kgate"))
            .current_dir(dir.path())
            .args(["run", "--no-progress", "-o", "out.json"])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        crate::common::wait_for_file(&started);
        let sent = Instant::now();
        // SAFETY: signalling the child this test started.
        unsafe {
            libc::kill(child.id() as i32, signal);
        }
        let out = child.wait_with_output().unwrap();
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(status), "signal {signal}: {err}");
        assert!(err.contains("no results were written"), "{err}");
        assert!(sent.elapsed() < Duration::from_secs(20));
        assert!(!dir.path().join("out.json").exists());
    }
}
