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
