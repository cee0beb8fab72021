//! The first-hour issue's silent acceptances, through the command line: a declared metric the
//! benchmark never reports, and a unit that looks like a time but is not one kgate reads.

use crate::common::{kgate, stderr_of, write};

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
fn the_reduced_valgrind_environment_is_explained_and_pass_env_fixes_it() {
    if std::process::Command::new("valgrind")
        .arg("--version")
        .output()
        .is_err()
    {
        assert!(
            std::env::var_os("CI").is_none(),
            "valgrind is missing under CI"
        );
        eprintln!("SKIPPED: valgrind is not installed");
        return;
    }
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
