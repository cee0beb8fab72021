//! The results format on disk: version 2 stores counter readings and kernel windows as series,
//! version 1 files (committed baselines, history) still read, and a damaged series is refused
//! by name.

use std::path::{Path, PathBuf};

use kgate::model::results::{RESULTS_SCHEMA_VERSION, RunResults};

use crate::common::{kgate, stderr_of, stdout_of, write};

const V7X: &str = "device: tpu-v7x\nbenchmarks:\n  - name: suite\n    command: [\"true\"]\n";

fn fixture(folder: &str, name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(folder)
        .join(name)
}

/// Imports `input` with this kgate into `dir/name`.
fn import_now(dir: &Path, format: &str, input: &Path, name: &str) -> PathBuf {
    write(dir, "kgate.yaml", V7X);
    let out = kgate(dir)
        .args(["import", format])
        .arg(input)
        .args(["-o", name])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    dir.join(name)
}

/// The protocol fixture with two counters read 13 times and one kernel window, imported into
/// `dir/r.json`.
fn protocol_results(dir: &Path) -> PathBuf {
    import_now(
        dir,
        "protocol",
        &fixture("trace_windows", "protocol_epoch_ns.jsonl"),
        "r.json",
    )
}

/// A results file as a JSON tree, to be edited into a damaged one.
fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn version_1_files_read_as_the_series_this_version_writes() {
    let cases = [
        ("protocol_epoch_ns", "protocol", "protocol_epoch_ns.jsonl"),
        (
            "kineto_epoch_counters",
            "chrome-trace",
            "kineto_epoch_counters.json",
        ),
    ];
    for (name, format, input) in cases {
        let dir = tempfile::tempdir().unwrap();
        let old_path = fixture("results_v1", &format!("{name}.json"));
        let text = std::fs::read_to_string(&old_path).unwrap();
        assert!(
            text.starts_with(r#"{"schema_version":1,"#),
            "{name}: not a v1 file"
        );
        let new_path = import_now(
            dir.path(),
            format,
            &fixture("trace_windows", input),
            "now.json",
        );
        let old = RunResults::load(&old_path).unwrap();
        let new = RunResults::load(&new_path).unwrap();
        assert_eq!(old.schema_version, RESULTS_SCHEMA_VERSION);
        assert_eq!(old.benchmarks.len(), new.benchmarks.len(), "{name}");
        let mut series = 0;
        for (a, b) in old.benchmarks.iter().zip(&new.benchmarks) {
            assert_eq!(a.name, b.name);
            assert_eq!(a.metrics, b.metrics, "{name}: {}", a.name);
            // A v1 trace import copied the readings around a kernel's launches onto its
            // benchmark; this version keeps them once, on `counters`, and its windows say
            // where: the readings they are read against are the ones v1 copied.
            let mut read_against = b.counters.clone();
            read_against.extend(new.series_from_others(b));
            assert_eq!(a.counters, read_against, "{name}: {}", a.name);
            let mut windows = b.kernel_windows.clone();
            for w in &mut windows {
                w.counters_of = None;
            }
            assert_eq!(a.kernel_windows, windows, "{name}: {}", a.name);
            series += a.counters.len();
        }
        assert!(series >= 2, "{name}: the fixture holds counter series");
        let stored = |r: &RunResults| -> usize {
            r.benchmarks
                .iter()
                .flat_map(|b| &b.counters)
                .map(|c| c.len())
                .sum()
        };
        if name == "kineto_epoch_counters" {
            assert!(stored(&new) < stored(&old), "{name}: each reading once");
        }
        // Every reading survives the gathering: the v1 file's reading objects, counted.
        let v1: serde_json::Value = serde_json::from_str(&text).unwrap();
        let v1_readings: usize = v1["benchmarks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["counters"].as_array().map_or(0, Vec::len))
            .sum();
        let v2_readings: usize = old
            .benchmarks
            .iter()
            .flat_map(|b| &b.counters)
            .map(|c| c.len())
            .sum();
        assert_eq!(v1_readings, v2_readings, "{name}");

        // A version 1 baseline compares against a version 2 run: the same numbers, no change
        // (the fixture's environment block was written elsewhere).
        let out = kgate(dir.path())
            .arg("compare")
            .arg(&old_path)
            .arg(&new_path)
            .arg("--allow-fingerprint-mismatch")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
        assert!(
            !stdout_of(&out).contains("regressed"),
            "{}",
            stdout_of(&out)
        );
    }
}

#[test]
fn version_2_stores_each_counter_name_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = protocol_results(dir.path());
    let text = std::fs::read_to_string(&path).unwrap();
    // Two counters read 13 times each: each name once in `counters` (and once more in the
    // metrics derived from it), not once per reading.
    assert_eq!(
        text.matches(r#""counter":"mxu_busy_1""#).count(),
        1,
        "{text}"
    );
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let series = &doc["benchmarks"][0]["counters"][0];
    assert_eq!(series["repetition"], 0);
    assert_eq!(series["t_ns"].as_array().unwrap().len(), 13);
    assert_eq!(series["value"].as_array().unwrap().len(), 13);
}

#[test]
fn a_series_whose_arrays_differ_in_length_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = protocol_results(dir.path());
    let mut doc = read_json(&path);
    doc["benchmarks"][0]["counters"][0]["t_ns"]
        .as_array_mut()
        .unwrap()
        .pop();
    std::fs::write(dir.path().join("bad.json"), doc.to_string()).unwrap();
    let err = RunResults::load(&dir.path().join("bad.json"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("bad.json` is damaged: benchmark `protocol_epoch_ns`, counter `mxu_busy_1` (repetition 0): 12 times but 13 values"),
        "{err}"
    );

    doc["benchmarks"][0]["counters"][0]["t_ns"]
        .as_array_mut()
        .unwrap()
        .push(12_000.into());
    doc["benchmarks"][0]["kernel_windows"][0]["end_ns"] = serde_json::json!([]);
    std::fs::write(dir.path().join("bad.json"), doc.to_string()).unwrap();
    let out = kgate(dir.path())
        .args(["compare", "bad.json", "r.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    assert!(
        stderr_of(&out).contains("kernel windows of `gemm` (repetition 0): 1 start but 0 ends"),
        "{}",
        stderr_of(&out)
    );

    // A spread describes one mean; on a metric of several values it is refused.
    doc["benchmarks"][0]["kernel_windows"][0]["end_ns"] = serde_json::json!([2_000]);
    let metric = &mut doc["benchmarks"][0]["metrics"][0];
    metric["spread"] = serde_json::json!({"sd": 1.0, "n": 10});
    metric["values"] = serde_json::json!([10_000, 11_000]);
    std::fs::write(dir.path().join("bad.json"), doc.to_string()).unwrap();
    let err = RunResults::load(&dir.path().join("bad.json"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(
            "metric `kernel_time`: `spread` describes one mean, but the metric has 2 values"
        ),
        "{err}"
    );
}

#[test]
fn kernel_windows_read_against_a_benchmark_the_file_lacks_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = import_now(
        dir.path(),
        "chrome-trace",
        &fixture("trace_windows", "kineto_epoch_counters.json"),
        "r.json",
    );
    let mut doc = read_json(&path);
    let benchmarks = doc["benchmarks"].as_array_mut().unwrap();
    let kernel = benchmarks
        .iter()
        .find(|b| {
            b["kernel_windows"]
                .as_array()
                .is_some_and(|w| !w.is_empty())
        })
        .unwrap()
        .clone();
    assert_eq!(
        kernel["kernel_windows"][0]["counters_of"],
        serde_json::json!({"benchmark": "counters", "repetition": 0})
    );
    benchmarks.retain(|b| b["name"] != "counters");
    std::fs::write(dir.path().join("cut.json"), doc.to_string()).unwrap();
    let err = RunResults::load(&dir.path().join("cut.json"))
        .unwrap_err()
        .to_string();
    let expected = format!(
        "cut.json` is damaged: benchmark `{0}`, kernel windows of `{0}` (repetition 0) are read against the counters of benchmark `counters`, which the file does not hold",
        kernel["name"].as_str().unwrap()
    );
    assert!(err.contains(&expected), "{err}");
}

#[test]
fn a_kernels_report_evidence_charts_the_readings_its_windows_are_read_against() {
    let dir = tempfile::tempdir().unwrap();
    let trace = fixture("trace_windows", "kineto_epoch_counters.json");
    let base = import_now(dir.path(), "chrome-trace", &trace, "base.json");
    let head = import_now(dir.path(), "chrome-trace", &trace, "head.json");
    let results = RunResults::load(&head).unwrap();
    let kernel = results
        .benchmarks
        .iter()
        .find(|b| !b.kernel_windows.is_empty())
        .unwrap();
    let around = results.series_from_others(kernel);
    assert!(!around.is_empty() && kernel.counters.is_empty());
    let out = kgate(dir.path())
        .arg("compare")
        .args([&base, &head])
        .args(["--format", "json", "--full-evidence"])
        .output()
        .unwrap();
    let report: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr_of(&out)));
    let evidence = report["evidence"]["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == kernel.name.as_str())
        .unwrap();
    let charted: Vec<&str> = evidence["counters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    let expected: Vec<&str> = around.iter().map(|c| c.counter.as_str()).collect();
    assert!(!charted.is_empty());
    assert!(charted.iter().all(|c| expected.contains(c)), "{charted:?}");
    let first = &evidence["counters"][0]["head"]["timeline"];
    let series = around.iter().find(|c| c.counter == charted[0]).unwrap();
    assert_eq!(first.as_array().unwrap().len(), series.len());
}

#[test]
fn a_newer_version_is_refused_with_both_versions_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = protocol_results(dir.path());
    let text = std::fs::read_to_string(&path).unwrap().replacen(
        r#""schema_version":2"#,
        r#""schema_version":3"#,
        1,
    );
    std::fs::write(&path, text).unwrap();
    let err = RunResults::load(&path).unwrap_err().to_string();
    assert!(
        err.ends_with("has results format version 3; this kgate reads version 2"),
        "{err}"
    );
}

#[test]
fn repetition_numbers_are_left_out_when_each_value_is_its_own_repetition() {
    let dir = tempfile::tempdir().unwrap();
    let path = protocol_results(dir.path());
    let mut doc = read_json(&path);
    let metric = &doc["benchmarks"][0]["metrics"][0];
    assert_eq!(metric["name"], "kernel_time");
    assert!(metric.get("repetition").is_none(), "{metric}");
    let back = RunResults::load(&path).unwrap();
    assert_eq!(back.benchmarks[0].metrics[0].repetition, [0]);

    // Numbers given that do not match the values are refused by name.
    doc["benchmarks"][0]["metrics"][0]["repetition"] = serde_json::json!([0, 1]);
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, doc.to_string()).unwrap();
    let err = RunResults::load(&bad).unwrap_err().to_string();
    assert!(
        err.contains(
            "benchmark `protocol_epoch_ns`, metric `kernel_time`: 1 value but 2 repetition numbers"
        ),
        "{err}"
    );
}
