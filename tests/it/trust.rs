//! No verdict passes what it did not measure: a benchmark that failed on either side is an
//! error headed so in every format, a benchmark the base does not declare is `new` and says it
//! was not gated, unselected benchmarks are not `missing`, and a large suite stays testable
//! under the multiplicity correction it is decided with.

use std::path::Path;

use serde_json::Value;

use crate::common::{check_against_main, committed_repository, kgate, stderr_of, stdout_of, write};

/// A protocol benchmark that reports `value` microseconds per repetition.
fn reporting(value: u32) -> String {
    format!(
        "echo \"{{\\\"metric\\\": \\\"kernel_time\\\", \\\"value\\\": {value}, \\\"unit\\\": \\\"us\\\"}}\" >> \"$KGATE_PROTOCOL_FILE\""
    )
}

const SCRIPT_SUITE: &str = "defaults: {warmup: 0, repetitions: 3, captures: [protocol]}
benchmarks:
  - name: work
    command: [sh, bench.sh]
";

/// The case: the committed configuration declares a benchmark whose script is not
/// committed yet. The base side fails; that is an error with the base's stderr, whatever the
/// candidate measured (before: `PASS … 1 missing`, exit 0, even with the candidate 2x slower).
#[test]
fn a_benchmark_that_fails_at_the_base_is_an_error_with_the_bases_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    committed_repository(d, &[("kgate.yaml", SCRIPT_SUITE)]);
    for value in [100, 200] {
        write(d, "bench.sh", &reporting(value));
        let out = kgate(d)
            .args(["check", "--against", "main", "--no-progress"])
            .output()
            .unwrap();
        let (stdout, stderr) = (stdout_of(&out), stderr_of(&out));
        assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
        assert!(stdout.starts_with("ERROR: 1 failed"), "{stdout}");
        assert!(!stdout.contains("PASS"), "{stdout}");
        assert!(
            stdout.contains("failed work: failed in the baseline"),
            "{stdout}"
        );
        assert!(
            stderr.contains("error: benchmark `work` failed [base]"),
            "{stderr}"
        );
        assert!(
            stderr.contains("bench.sh"),
            "the base's stderr tail: {stderr}"
        );
    }
}

/// A candidate that fails is an error in every format: the exit status, the headline of the
/// table, Markdown, HTML, the JSON verdict and JUnit's error all agree (before: `PASS` headlines
/// over exit 2, and JSON `inconclusive`).
#[test]
fn a_failed_candidate_is_headed_error_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    committed_repository(
        d,
        &[("kgate.yaml", SCRIPT_SUITE), ("bench.sh", &reporting(100))],
    );
    write(d, "bench.sh", "echo broken >&2; exit 3\n");
    for format in ["table", "markdown", "json", "junit", "html"] {
        let out = check_against_main(d, format);
        let stdout = stdout_of(&out);
        assert_eq!(out.status.code(), Some(2), "{format}: {}", stderr_of(&out));
        assert!(stderr_of(&out).contains("failed [head]: exited with status 3"));
        match format {
            "table" => assert!(stdout.starts_with("ERROR: 1 failed"), "{stdout}"),
            "markdown" => assert!(
                stdout.starts_with("### 🛑 kgate: ERROR: 1 failed"),
                "{stdout}"
            ),
            "html" => assert!(stdout.contains("ERROR"), "{stdout}"),
            "json" => {
                let report: Value = serde_json::from_str(&stdout).unwrap();
                assert_eq!(report["verdict"], "error");
                assert_eq!(report["summary"]["failed"], 1);
                assert_eq!(report["benchmarks"][0]["verdict"], "failed");
            }
            _ => assert!(
                stdout.contains("errors=\"1\"") && stdout.contains("type=\"failed\""),
                "{stdout}"
            ),
        }
        assert!(!stdout.contains("PASS"), "{format}: {stdout}");
    }
}

/// A benchmark the base revision does not declare is measured on the head side only and is
/// `new`, saying why it did not gate; one the base declares and the head no longer does is
/// `missing` (removed or renamed). Neither fails the run.
#[test]
fn what_the_base_does_not_declare_is_new_and_what_it_alone_declares_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let base = format!(
        "defaults: {{warmup: 0, repetitions: 3, captures: [protocol]}}
benchmarks:
  - name: kept
    command: '{0}'
  - name: old_name
    command: '{0}'
",
        reporting(100)
    );
    committed_repository(d, &[("kgate.yaml", &base)]);
    // The new benchmark's script exists only in the work tree: the base never runs it.
    write(d, "new.sh", &reporting(100));
    write(
        d,
        "kgate.yaml",
        &format!(
            "defaults: {{warmup: 0, repetitions: 3, captures: [protocol]}}
benchmarks:
  - name: kept
    command: '{0}'
  - name: new_name
    command: [sh, new.sh]
",
            reporting(100)
        ),
    );
    let out = check_against_main(d, "json");
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let verdict = |name: &str| {
        let b = report["benchmarks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["name"] == name)
            .unwrap_or_else(|| panic!("{name} in {report}"));
        (
            b["verdict"].as_str().unwrap().to_string(),
            b["explanation"].as_str().unwrap().to_string(),
        )
    };
    let (v, why) = verdict("new_name");
    assert_eq!(v, "new");
    assert!(why.contains("not declared by the base revision"), "{why}");
    assert!(why.contains("not gated"), "{why}");
    let (v, why) = verdict("old_name");
    assert_eq!(v, "missing");
    assert!(why.contains("removed or renamed"), "{why}");
    // Declared on both sides: measured on both and compared.
    let (v, why) = verdict("kept");
    assert!(
        !["new", "missing", "failed"].contains(&v.as_str()),
        "{v}: {why}"
    );
    // Neither `new` nor `missing` is an error, and neither gates.
    assert_ne!(report["verdict"], "error");
    assert_eq!(report["summary"]["new"], 1);
    assert_eq!(report["summary"]["missing"], 1);
}

/// `--bench` runs one benchmark: the stored baseline's others were not selected, so they are
/// `skipped`, not `missing` (before: `2 missing` in the headline).
#[test]
fn benchmarks_left_out_by_bench_are_skipped_not_missing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(
        d,
        "kgate.yaml",
        &format!(
            "defaults: {{warmup: 0, repetitions: 3, captures: [protocol]}}
benchmarks:
  - name: a
    command: '{0}'
  - name: b
    command: '{0}'
  - name: c
    command: '{0}'
",
            reporting(100)
        ),
    );
    let saved = kgate(d)
        .args(["baseline", "save", "--no-progress"])
        .output()
        .unwrap();
    assert!(saved.status.success(), "{}", stderr_of(&saved));
    let out = kgate(d)
        .args(["check", "--no-progress", "--bench", "a"])
        .output()
        .unwrap();
    let stdout = stdout_of(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", stderr_of(&out));
    let headline = stdout.lines().next().unwrap();
    assert!(!headline.contains("missing"), "{headline}");
    assert!(headline.contains("2 skipped"), "{headline}");
    let out = kgate(d)
        .args(["check", "--no-progress", "--bench", "a", "--format", "json"])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["summary"]["missing"], 0);
    for b in report["benchmarks"].as_array().unwrap() {
        if b["name"] != "a" {
            assert_eq!(b["verdict"], "skipped", "{b}");
            assert_eq!(b["explanation"], "skipped: not selected (`--bench`)");
        }
    }
}

/// Two protocol files of `n` benchmarks with 10 samples a side and lognormal noise
/// (σ = 0.5 %), every other benchmark 30 % slower in the candidate; imported into results.
fn suite_pair(dir: &Path, n: usize) -> (String, String) {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15 ^ n as u64;
    let mut uniform = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut normal = move || {
        let (u, v) = (uniform().max(1e-300), uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    };
    let mut names = Vec::new();
    for side in ["base", "head"] {
        let mut text = String::new();
        for b in 0..n {
            let slower = if side == "head" && b % 2 == 0 {
                1.3
            } else {
                1.0
            };
            for _ in 0..10 {
                let value = 100.0 * slower * (0.005 * normal()).exp();
                text.push_str(&format!(
                    "{{\"benchmark\": \"k{b:05}\", \"metric\": \"kernel_time\", \"value\": {value}, \"unit\": \"us\"}}\n"
                ));
            }
        }
        let protocol = format!("{side}_{n}.jsonl");
        write(dir, &protocol, &text);
        let results = format!("{side}_{n}.json");
        let out = kgate(dir)
            .args(["import", "protocol", &protocol, "-o", &results])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr_of(&out));
        names.push(results);
    }
    (names[0].clone(), names[1].clone())
}

/// The rank test's floor with 10 samples a side is 5.4e-6. Under Benjamini–Hochberg a test is
/// rejected at up to alpha·k/m, so the suite's size alone must not make every metric
/// untestable: the regressions found never fall as the suite grows with the same effect per
/// benchmark, and at 3,000 benchmarks (before: 0 regressions, exit 0) all 1,500 are found.
#[test]
fn regressions_found_never_fall_as_the_suite_grows() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut found = Vec::new();
    for n in [100, 500, 1000, 2000, 3000, 5000] {
        let (base, head) = suite_pair(d, n);
        let out = kgate(d)
            .args(["compare", &base, &head, "--format", "json"])
            .output()
            .unwrap();
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        let regressed = report["summary"]["regressed"].as_u64().unwrap();
        assert_eq!(out.status.code(), Some(1), "{n}: {}", report["summary"]);
        assert_eq!(
            report["summary"]["inconclusive"], 0,
            "{n}: {}",
            report["summary"]
        );
        found.push((n, regressed));
    }
    for pair in found.windows(2) {
        assert!(
            pair[1].1 >= pair[0].1,
            "fewer regressions in a larger suite: {found:?}"
        );
    }
    let at_3000 = found.iter().find(|(n, _)| *n == 3000).unwrap().1;
    assert!(at_3000 >= 1490, "{found:?}");
}
