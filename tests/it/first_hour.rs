//! The first-hour issue's silent acceptances, through the command line: a declared metric the
//! benchmark never reports, and a unit that looks like a time but is not one kgate reads.

use crate::common::{kgate, require_tool, stderr_of, write};

const REPORTS_KERNEL_TIME: &str = r#"echo "{\"metric\": \"kernel_time\", \"value\": 120, \"unit\": \"UNIT\"}" >> "$KGATE_PROTOCOL_FILE""#;

fn config(metrics: &str, unit: &str) -> String {
    format!(
        "defaults: {{warmup: 0, repetitions: 2, captures: [protocol]}}\nbenchmarks:\n  - name: k\n    command: '{}'\n    metrics: {metrics}\n",
        REPORTS_KERNEL_TIME.replace("UNIT", unit)
    )
}

#[test]
fn a_declared_gating_metric_that_is_never_reported_fails_with_a_suggestion() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "kgate.yaml",
        &config("{kernel_tme: {source: timer}}", "us"),
    );
    let out = kgate(dir.path())
        .args(["run", "--no-progress", "-o", "r.json"])
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("declares `kernel_tme` (did you mean `kernel_time`?)"),
        "{err}"
    );

    // Declared with `gate: false`: a warning, and the run goes on.
    write(
        dir.path(),
        "kgate.yaml",
        &config("{kernel_tme: {gate: false}}", "us"),
    );
    let out = kgate(dir.path())
        .args(["run", "--no-progress", "-o", "r.json"])
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("warning: k: metric `kernel_tme` is declared under `metrics` but was not reported (did you mean `kernel_time`?)"),
        "{err}"
    );
}

#[test]
fn a_time_unit_kgate_does_not_read_is_named() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "kgate.yaml", &config("{}", "msec"));
    let out = kgate(dir.path())
        .args(["run", "--no-progress", "-o", "r.json"])
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("has the unit `msec`, which kgate does not read as a time"),
        "{err}"
    );
    assert!(err.contains("did you mean `ms`?"), "{err}");
}

/// Under the valgrind captures the command gets a reduced environment; when that breaks it,
/// the failure says so and how to pass variables, and the stderr tail is the benchmark's own.
#[test]
#[cfg_attr(kgate_no_valgrind, ignore = "needs valgrind (Debian's valgrind)")]
fn the_reduced_valgrind_environment_is_explained_and_pass_env_fixes_it() {
    require_tool("valgrind", "valgrind");
    let dir = tempfile::tempdir().unwrap();
    let config = |pass: &str| {
        format!(
            "defaults: {{warmup: 0, repetitions: 1}}\nbenchmarks:\n  - name: needs_home\n    command: [sh, -c, 'test -n \"$HOME\" || {{ echo HOME is not set >&2; exit 3; }}']\n    captures: [cachegrind]\n{pass}"
        )
    };
    write(dir.path(), "kgate.yaml", &config(""));
    let out = kgate(dir.path())
        .args(["run", "--no-progress", "-o", "r.json"])
        .env("HOME", "/root")
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("under cachegrind the command runs in a reduced environment"),
        "{err}"
    );
    assert!(
        err.contains("list the variables it needs under `pass_env`"),
        "{err}"
    );
    assert!(
        err.contains("| HOME is not set"),
        "the benchmark's own message: {err}"
    );

    write(dir.path(), "kgate.yaml", &config("    pass_env: [HOME]\n"));
    let out = kgate(dir.path())
        .args(["run", "--no-progress", "-o", "r.json"])
        .env("HOME", "/root")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
}

/// Messages say each thing once and in the right number.
#[test]
fn messages_say_it_once_and_count_right() {
    let dir = tempfile::tempdir().unwrap();
    let out = kgate(dir.path())
        .args(["import", "protocol", "missing.jsonl"])
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.matches("(os error 2)").count(), 1, "{err}");

    write(
        dir.path(),
        "kgate.yaml",
        "defaults: {warmup: 0, repetitions: 1}\nbenchmarks:\n  - name: one\n    command: [true]\n",
    );
    let out = kgate(dir.path())
        .args(["baseline", "save"])
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("one: 1 repetition,"), "{err}");
    assert!(err.contains("(1 benchmark)"), "{err}");
    assert!(
        !err.contains("1 repetitions") && !err.contains("1 benchmarks"),
        "{err}"
    );
}

/// Right after `baseline save` on the same commit and machine, `check` does not claim the
/// baseline came from another job; once the commit moves on, it says so.
#[test]
fn the_other_job_warning_only_when_the_baseline_is_from_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    committed_with_baseline(
        d,
        "defaults: {warmup: 0, repetitions: 5}\nbenchmarks:\n  - name: a\n    command: [true]\n    metrics: {wall_time: {source: timer}}\n",
    );
    let check = || {
        let out = kgate(d).args(["check", "--no-progress"]).output().unwrap();
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            stderr_of(&out)
        )
    };
    assert!(!check().contains("stored by another job"), "{}", check());
    crate::common::git(d, &["commit", "-q", "--allow-empty", "-m", "two"]);
    assert!(check().contains("stored by another job"), "{}", check());
}

/// The wording of the errors a first-time user meets, kept deliberate by a snapshot.
#[test]
fn first_hour_error_messages_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut transcript = String::new();
    let mut say = |title: &str, config: Option<&str>, args: &[&str]| {
        if let Some(config) = config {
            write(d, "kgate.yaml", config);
        }
        let out = kgate(d).args(args).output().unwrap();
        let err = stderr_of(&out).replace(&d.display().to_string(), "<dir>");
        transcript.push_str(&format!(
            "## {title}\n$ kgate {}\nexit {}\n{err}\n",
            args.join(" "),
            out.status.code().unwrap_or(-1)
        ));
    };
    say("no configuration", None, &["validate"]);
    say(
        "a missing input",
        None,
        &["import", "protocol", "missing.jsonl"],
    );
    say(
        "a typo in a key",
        Some("benchmarks:\n  - name: a\n    command: ./a\n    wormup: 3\n"),
        &["validate"],
    );
    say(
        "a fraction as a threshold",
        Some("gate: {threshold: 0.05}\nbenchmarks:\n  - name: a\n    command: ./a\n"),
        &["validate"],
    );
    say(
        "a duplicate name",
        Some("benchmarks:\n  - name: a\n    command: ./a\n  - name: a\n    command: ./b\n"),
        &["validate"],
    );
    say(
        "a baseline that is not stored",
        Some(
            "defaults: {warmup: 0, repetitions: 1}\nbenchmarks:\n  - name: a\n    command: [true]\n",
        ),
        &["check", "--no-progress", "--baseline", "nightly"],
    );
    say(
        "a declared metric never reported",
        Some(
            "defaults: {warmup: 0, repetitions: 1}\nbenchmarks:\n  - name: a\n    command: [true]\n    metrics: {kernel_tme: {source: timer}}\n",
        ),
        &["run", "--no-progress", "-o", "r.json"],
    );
    insta::assert_snapshot!("first_hour_errors", transcript);
}

/// The HTML report marks a head that is the work tree, so base and head showing one commit
/// do not read as "nothing changed".
#[test]
fn the_html_report_marks_a_work_tree_head() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    committed_with_baseline(
        d,
        "defaults: {warmup: 0, repetitions: 3}\nbenchmarks:\n  - name: a\n    command: [true]\n",
    );
    write(
        d,
        "kgate.yaml",
        "defaults: {warmup: 0, repetitions: 3}\nbenchmarks:\n  - name: a\n    command: [true, x]\n",
    );
    let out = kgate(d)
        .args(["check", "--no-progress", "--format", "html", "-o", "r.html"])
        .output()
        .unwrap();
    assert!(
        out.status.code().is_some_and(|c| c != 2),
        "{}",
        stderr_of(&out)
    );
    let html = std::fs::read_to_string(d.join("r.html")).unwrap();
    assert!(
        html.contains("plus uncommitted changes (the work tree)"),
        "{html}"
    );
}

/// A git repository in `d` with `config` committed and a baseline saved from it.
fn committed_with_baseline(d: &std::path::Path, config: &str) {
    crate::common::git(d, &["init", "-q"]);
    write(d, "kgate.yaml", config);
    crate::common::git(d, &["add", "."]);
    crate::common::git(d, &["commit", "-q", "-m", "one"]);
    let out = kgate(d)
        .args(["baseline", "save", "--no-progress"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
}
