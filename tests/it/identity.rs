//! Code that provably did not change is not measured: a benchmark's `identity` digest, taken
//! in each side's own tree after its own build, with the benchmark's declaration on that side.

use std::path::Path;

use serde_json::Value;

use crate::common::{check_against_main, committed_repository, git, kgate, stderr_of, write};

/// A protocol benchmark that counts its runs in `ran.txt` (of the tree it runs in).
fn config(extra_args: &str, identity: &str) -> String {
    format!(
        "defaults: {{warmup: 0, repetitions: 3, captures: [protocol]}}
build: sh build.sh
benchmarks:
  - name: k
    command: 'echo run{extra_args} >> ran.txt; echo \"{{\\\"metric\\\": \\\"kernel_time\\\", \\\"value\\\": 100, \\\"unit\\\": \\\"us\\\"}}\" >> \"$KGATE_PROTOCOL_FILE\"'
    identity: {identity}
"
    )
}

const BUILD: &str = "mkdir -p build; cp gen.txt build/k.bin\n";
const IDENTITY: &str = "{files: [build/k.bin], commands: [\"wc -c < build/k.bin\"]}";

/// A repository whose base commit builds `build/k.bin` from `gen.txt`.
fn repository(dir: &Path) {
    committed_repository(
        dir,
        &[
            ("kgate.yaml", &config("", IDENTITY)),
            ("build.sh", BUILD),
            ("gen.txt", "kernel v1\n"),
            ("notes.md", "notes\n"),
            (".gitignore", "ran.txt\nbuild/\n"),
        ],
    );
}

fn check(dir: &Path, extra: &[&str]) -> (Option<i32>, Value) {
    let out = kgate(dir)
        .args([
            "check",
            "--against",
            "main",
            "--no-progress",
            "--format",
            "json",
        ])
        .args(extra)
        .output()
        .unwrap();
    let report =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr_of(&out)));
    (out.status.code(), report)
}

fn verdict(report: &Value) -> String {
    report["benchmarks"][0]["verdict"]
        .as_str()
        .unwrap()
        .to_string()
}

/// A change that leaves the built kernel and the benchmark's declaration alone is `identical`:
/// not run at all, passing, and saying so with its digest; `--measure-identical` runs it.
#[test]
fn identical_code_is_not_measured_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    repository(d);
    write(d, "notes.md", "notes, edited\n");
    let (code, report) = check(d, &[]);
    assert_eq!(code, Some(0), "{report}");
    assert_eq!(verdict(&report), "identical");
    let why = report["benchmarks"][0]["explanation"].as_str().unwrap();
    assert!(why.starts_with("identical code (digest "), "{why}");
    assert!(why.ends_with("): not measured"), "{why}");
    assert_eq!(report["summary"]["identical"], 1);
    assert!(!d.join("ran.txt").exists(), "the benchmark ran");
    let table = kgate(d)
        .args(["check", "--against", "main", "--no-progress"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(text.contains("1 identical (not measured)"), "{text}");
    assert!(
        text.contains("identical k: identical code (digest"),
        "{text}"
    );

    let (code, report) = check(d, &["--measure-identical"]);
    assert_eq!(code, Some(0), "{report}");
    assert_ne!(verdict(&report), "identical");
    assert!(d.join("ran.txt").exists(), "--measure-identical measures");
}

/// Each side's digest is taken in its own tree after its own build: a source the identity does
/// not name changes what the build writes, and the benchmark is measured (had the base been
/// hashed with the head's build files, both digests would agree).
#[test]
fn the_digest_is_taken_after_each_sides_own_build() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    repository(d);
    write(d, "gen.txt", "kernel v2\n");
    let (code, report) = check(d, &[]);
    assert_eq!(code, Some(0), "{report}");
    assert_ne!(verdict(&report), "identical", "{report}");
    assert!(d.join("ran.txt").exists());
}

/// A change to the benchmark's command or settings is always measured, whatever its files.
#[test]
fn a_change_to_the_command_or_the_settings_is_always_measured() {
    for head in [
        config(" --n 2", IDENTITY),
        config("", IDENTITY).replace("repetitions: 3", "repetitions: 4"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        repository(d);
        write(d, "kgate.yaml", &head);
        let (code, report) = check(d, &[]);
        assert_eq!(code, Some(0), "{report}");
        assert_ne!(verdict(&report), "identical", "{head}: {report}");
        assert!(d.join("ran.txt").exists(), "{head}");
    }
}

/// An identity that cannot be taken (a file the build did not write) is measured, with the
/// reason on stderr, never guessed identical.
#[test]
fn an_identity_that_cannot_be_taken_is_measured_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    repository(d);
    write(
        d,
        "kgate.yaml",
        &config("", "{files: [build/missing.cubin]}"),
    );
    git(
        d,
        &[
            "commit",
            "-qam",
            "identity of a file the build does not write",
        ],
    );
    let out = check_against_main(d, "json");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_ne!(verdict(&report), "identical", "{report}");
    let stderr = stderr_of(&out);
    assert!(
        stderr.contains("identity file `build/missing.cubin` matches no file"),
        "{stderr}"
    );
    assert!(stderr.contains("it is measured"), "{stderr}");
}

/// `kgate ci --against` takes the same digests: identical code passes the job unmeasured, its
/// report says so, and `--measure-identical` runs it.
#[test]
fn ci_against_a_ref_skips_identical_code_too() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    repository(d);
    write(d, "notes.md", "notes, edited\n");
    let ci = |extra: &[&str]| {
        let out = kgate(d)
            .args([
                "ci",
                "--against",
                "main",
                "--no-progress",
                "--comment",
                "never",
            ])
            .args(extra)
            .output()
            .unwrap();
        let report: Value =
            serde_json::from_str(&std::fs::read_to_string(d.join("kgate-report.json")).unwrap())
                .unwrap();
        (out.status.code(), report, stderr_of(&out))
    };
    let (code, report, stderr) = ci(&[]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(verdict(&report), "identical", "{report}");
    assert_eq!(report["summary"]["identical"], 1);
    assert!(!d.join("ran.txt").exists(), "the benchmark ran");

    let (code, report, stderr) = ci(&["--measure-identical"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_ne!(verdict(&report), "identical", "{report}");
    assert!(d.join("ran.txt").exists(), "--measure-identical measures");
}
