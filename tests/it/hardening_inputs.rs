//! Inputs that used to crash kgate or make it write what it cannot read back: samples large
//! enough to exhaust memory in the comparison, overflowing and negative values at import,
//! bytes outside JSON strings that broke the importers, and streams without end. Each test runs
//! the command line as a user meets it and asserts a verdict or a refusal (exit 2 with a
//! message), never a crash.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};

use crate::common::{kgate, stderr_of, write};

/// The address-space cap of the capped runs: generous for kgate's own needs, far below what a
/// quadratic or unbounded buffer would take.
const MEMORY_CAP: libc::rlim_t = 2_000_000_000;

/// `kgate ARGS` in `dir` under [`MEMORY_CAP`] (setrlimit in the child before exec).
fn kgate_capped(dir: &Path, args: &[&str]) -> Output {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kgate"));
    cmd.current_dir(dir)
        .args(args)
        .env_remove("CI")
        .env("NO_COLOR", "1");
    // SAFETY: setrlimit is async-signal-safe and touches only the child's own limits.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: MEMORY_CAP,
                rlim_max: MEMORY_CAP,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.output().unwrap()
}

/// A results file of one benchmark with one `kernel_time` metric holding `values`.
fn results_file(commit: &str, values: &[f64]) -> String {
    serde_json::to_string(&json!({
        "schema_version": 1, "kgate_version": "0.1.0", "created": "2026-01-01T00:00:00Z",
        "environment": {
            "cpu_model": "cpu", "cores": 4, "arch": "x86_64", "os": "Linux", "kernel": "6.1",
            "kgate_version": "0.1.0", "git": {"commit": commit, "dirty": false}, "tools": {},
        },
        "benchmarks": [{
            "name": "mm", "status": "ok", "warmup": 0, "repetitions": values.len(),
            "metrics": [{
                "name": "kernel_time", "unit": "ns", "source": "timer", "direction": "lower",
                "gate": {"gates": true, "threshold": 0.05},
                "values": values, "repetition": (0..values.len()).collect::<Vec<_>>(),
            }],
            "provenance": {"captures": ["protocol"]},
        }],
    }))
    .unwrap()
}

#[test]
fn compare_of_a_hundred_thousand_samples_a_side_gives_a_verdict_under_a_memory_cap() {
    // 10^10 pairwise differences would need 80 GB; the comparison must not hold them.
    let dir = tempfile::tempdir().unwrap();
    let n = 100_000;
    let mut rng = kgate::stats::inference::Xorshift::new(11);
    let mut sample = |scale: f64| -> Vec<f64> {
        (0..n)
            .map(|_| (1000.0 * scale * (0.05 * rng.normal()).exp()).round())
            .collect()
    };
    let (base, head) = (sample(1.0), sample(1.2));
    write(dir.path(), "base.json", &results_file("a", &base));
    write(dir.path(), "head.json", &results_file("b", &head));
    let out = kgate_capped(
        dir.path(),
        &["compare", "base.json", "head.json", "--format", "json"],
    );
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{:?}: {}",
        out.status,
        stderr_of(&out)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let metric = &report["benchmarks"][0]["metrics"][0];
    assert_eq!(metric["base"]["n"], n);
    assert_eq!(report["verdict"], "regressed", "{metric}");
    let change = metric["change"].as_f64().unwrap();
    assert!((change - 0.2).abs() < 0.01, "{change}");
}

/// `kgate import FORMAT FILE` in `dir`; asserts exit 2 (an input error, not a crash) and an
/// error naming the file, and returns stderr.
fn refused(dir: &Path, format: &str, file: &str) -> String {
    let out = kgate(dir).args(["import", format, file]).output().unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "{format} {file}: {err}");
    assert!(err.contains(file), "{format} {file}: {err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

/// `kgate import FORMAT FILE` in `dir` succeeds; returns the results as JSON.
fn imported(dir: &Path, format: &str, file: &str) -> Value {
    let out = kgate(dir).args(["import", format, file]).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{format} {file}: {}",
        stderr_of(&out)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_protocol_value_that_overflows_in_nanoseconds_is_refused_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "p.jsonl",
        "{\"metric\": \"t\", \"value\": 5, \"unit\": \"s\"}\n{\"metric\": \"t\", \"value\": 1e300, \"unit\": \"s\"}\n",
    );
    let err = refused(dir.path(), "protocol", "p.jsonl");
    assert!(err.contains("line 2"), "{err}");
    assert!(
        err.contains("1e300 s is beyond the largest number"),
        "{err}"
    );
    // With -o nothing is written, so no baseline that later commands cannot read.
    let out = kgate(dir.path())
        .args(["import", "protocol", "p.jsonl", "-o", "r.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    assert!(!dir.path().join("r.json").exists());
    // The largest time that still fits is kept.
    write(
        dir.path(),
        "ok.jsonl",
        "{\"metric\": \"t\", \"value\": 1e299, \"unit\": \"s\"}\n",
    );
    let r = imported(dir.path(), "protocol", "ok.jsonl");
    assert_eq!(r["benchmarks"][0]["metrics"][0]["values"][0], 1e308);
}

#[test]
fn negative_durations_are_refused_at_every_entry() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "p.jsonl",
        "{\"metric\": \"kernel_time\", \"value\": -88, \"unit\": \"us\"}\n",
    );
    let err = refused(dir.path(), "protocol", "p.jsonl");
    assert!(err.contains("line 1"), "{err}");
    assert!(err.contains("the duration -88 us is negative"), "{err}");
    // A negative number that is not a time (a reported difference) is kept.
    write(
        dir.path(),
        "d.jsonl",
        "{\"metric\": \"delta\", \"value\": -3, \"unit\": \"cycles\"}\n",
    );
    imported(dir.path(), "protocol", "d.jsonl");

    write(
        dir.path(),
        "h.json",
        r#"{"results": [{"command": "sleep 0", "times": [0.1, -0.2]}]}"#,
    );
    let err = refused(dir.path(), "hyperfine", "h.json");
    assert!(err.contains("negative"), "{err}");
    write(
        dir.path(),
        "g.json",
        r#"{"benchmarks": [{"name": "BM_x", "run_type": "iteration", "real_time": -5, "cpu_time": 5, "time_unit": "ns"}]}"#,
    );
    let err = refused(dir.path(), "gbench", "g.json");
    assert!(err.contains("BM_x") && err.contains("negative"), "{err}");
    write(
        dir.path(),
        "pb.json",
        r#"{"benchmarks": [{"name": "test_x", "stats": {"data": [0.001, -0.002]}}]}"#,
    );
    let err = refused(dir.path(), "pytest-benchmark", "pb.json");
    assert!(err.contains("negative"), "{err}");
    write(
        dir.path(),
        "nv.json",
        r#"{"benchmarks": [{"name": "copy", "states": [{"name": "Device=0", "device": null, "axis_values": null, "is_skipped": false, "summaries": [{"tag": "nv/cold/time/gpu/mean", "data": [{"name": "value", "type": "float64", "value": "-5e-6"}]}]}]}]}"#,
    );
    let err = refused(dir.path(), "nvbench", "nv.json");
    assert!(err.contains("copy") && err.contains("negative"), "{err}");
    write(
        dir.path(),
        "t.json",
        r#"{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "gemm", "ts": 10, "dur": -4, "pid": 1, "tid": 1}]}"#,
    );
    let err = refused(dir.path(), "chrome-trace", "t.json");
    assert!(err.contains("gemm") && err.contains("negative"), "{err}");
}

#[test]
fn importer_values_of_1e308_that_overflow_on_conversion_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "h.json",
        r#"{"results": [{"command": "sleep 0", "times": [1e308, 0.1]}]}"#,
    );
    let err = refused(dir.path(), "hyperfine", "h.json");
    assert!(
        err.contains("sleep 0") && err.contains("beyond the largest number"),
        "{err}"
    );
    write(
        dir.path(),
        "g.json",
        r#"{"benchmarks": [{"name": "BM_x", "run_type": "iteration", "real_time": 1e308, "cpu_time": 1e308, "time_unit": "ms"}]}"#,
    );
    let err = refused(dir.path(), "gbench", "g.json");
    assert!(
        err.contains("BM_x") && err.contains("beyond the largest number"),
        "{err}"
    );
    write(
        dir.path(),
        "pb.json",
        r#"{"benchmarks": [{"name": "test_x", "stats": {"data": [1e308]}}]}"#,
    );
    let err = refused(dir.path(), "pytest-benchmark", "pb.json");
    assert!(err.contains("beyond the largest number"), "{err}");
    write(
        dir.path(),
        "nv.json",
        r#"{"benchmarks": [{"name": "copy", "states": [{"name": "Device=0", "device": null, "axis_values": null, "is_skipped": false, "summaries": [{"tag": "nv/cold/time/gpu/mean", "data": [{"name": "value", "type": "float64", "value": "1e308"}]}]}]}]}"#,
    );
    let err = refused(dir.path(), "nvbench", "nv.json");
    assert!(
        err.contains("copy") && err.contains("beyond the largest number"),
        "{err}"
    );
    // Chrome trace durations are microseconds: 1e308 us overflows in nanoseconds.
    write(
        dir.path(),
        "t.json",
        r#"{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "gemm", "ts": 10, "dur": 1e308, "pid": 1, "tid": 1}]}"#,
    );
    let err = refused(dir.path(), "chrome-trace", "t.json");
    assert!(
        err.contains("gemm") && err.contains("not a finite number"),
        "{err}"
    );
}

#[test]
fn gbench_accepts_a_byte_order_mark_and_refuses_stray_characters_without_panicking() {
    let dir = tempfile::tempdir().unwrap();
    let doc = r#"{"benchmarks": [{"name": "BM_x", "run_type": "iteration", "real_time": 5, "cpu_time": 5, "time_unit": "ns"}]}"#;
    write(dir.path(), "bom.json", &format!("\u{feff}{doc}"));
    let r = imported(dir.path(), "gbench", "bom.json");
    assert_eq!(r["benchmarks"][0]["name"], "BM_x");
    // Non-ASCII outside strings, before, inside and after the document; NaN next to one.
    for (i, text) in [
        format!("é{doc}"),
        doc.replace("\"benchmarks\":", "\"benchmarks\": ü"),
        format!("{doc} 日本"),
        doc.replace("\"real_time\": 5", "\"real_time\": ÑaN"),
        doc.replace("\"real_time\": 5", "\"real_time\": NaN€"),
    ]
    .iter()
    .enumerate()
    {
        let name = format!("stray{i}.json");
        write(dir.path(), &name, text);
        let err = refused(dir.path(), "gbench", &name);
        assert!(err.contains("not valid JSON"), "{err}");
    }
}

#[test]
fn other_json_importers_and_the_protocol_accept_a_byte_order_mark() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "hyperfine",
            r#"{"results": [{"command": "sleep 0", "times": [0.1, 0.2]}]}"#,
        ),
        (
            "pytest-benchmark",
            r#"{"benchmarks": [{"name": "test_x", "stats": {"data": [0.001, 0.002]}}]}"#,
        ),
        (
            "protocol",
            "{\"metric\": \"t\", \"value\": 5, \"unit\": \"ns\"}\n",
        ),
        (
            "nvbench",
            r#"{"benchmarks": [{"name": "copy", "states": [{"name": "Device=0", "device": null, "axis_values": null, "is_skipped": false, "summaries": [{"tag": "nv/cold/time/gpu/mean", "data": [{"name": "value", "type": "float64", "value": "5e-6"}]}]}]}]}"#,
        ),
    ];
    for (format, doc) in cases {
        let name = format!("{format}.json");
        write(dir.path(), &name, &format!("\u{feff}{doc}"));
        imported(dir.path(), format, &name);
        // Stray non-ASCII after the document is an error, not a panic.
        let stray = format!("stray-{format}.json");
        write(dir.path(), &stray, &format!("{}é\n", doc.trim_end()));
        refused(dir.path(), format, &stray);
    }
}

/// hyperfine's `exit_codes` says whether a command failed: what hyperfine never writes there
/// (`{}`, `true`, `"NaN"`, a fraction) was read as "no failures" and passed the command. It is
/// refused by its place, as is a `memory_usage_byte` that is not bytes; integers and `null`
/// read as before.
#[test]
fn hyperfine_exit_codes_and_memory_that_hyperfine_never_writes_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let doc = |field: &str| {
        format!(r#"{{"results": [{{"command": "sleep 0", "times": [0.1, 0.2]{field}}}]}}"#)
    };
    for (field, place, got) in [
        (r#", "exit_codes": {}"#, "exit_codes", "{}"),
        (r#", "exit_codes": true"#, "exit_codes", "true"),
        (r#", "exit_codes": "NaN""#, "exit_codes", "\"NaN\""),
        (r#", "exit_codes": [0, "NaN"]"#, "exit_codes[1]", "\"NaN\""),
        (r#", "exit_codes": [0, 1.5]"#, "exit_codes[1]", "1.5"),
        (
            r#", "memory_usage_byte": [100, "lots"]"#,
            "memory_usage_byte[1]",
            "\"lots\"",
        ),
        (r#", "memory_usage_byte": 7"#, "memory_usage_byte", "7"),
    ] {
        write(dir.path(), "h.json", &doc(field));
        let err = refused(dir.path(), "hyperfine", "h.json");
        assert!(
            err.contains(&format!("results[0].{place} (`sleep 0`) is {got}, not ")),
            "{field}: {err}"
        );
    }
    for (field, failed) in [
        (r#", "exit_codes": [0, 0]"#, false),
        (r#", "exit_codes": null"#, false),
        ("", false),
        (r#", "exit_codes": [0, 2]"#, true),
        (r#", "exit_codes": [null, 0]"#, true),
    ] {
        // With a command that ran, so that the file holds a measurement either way.
        let two = doc(field).replace("]}]}", r#"]}, {"command": "true", "times": [0.1, 0.2]}]}"#);
        write(dir.path(), "h.json", &two);
        let r = imported(dir.path(), "hyperfine", "h.json");
        assert_eq!(r["benchmarks"][0]["name"], "sleep 0");
        assert_eq!(
            r["benchmarks"][0]["status"] == "failed",
            failed,
            "{field}: {r}"
        );
    }
}

/// A value of the wrong type is named by its key and said in the file's words, not serde's
/// (`invalid type: null, expected f64`): in a protocol line, a results file, a JSON report and
/// the configuration.
#[test]
fn a_value_of_the_wrong_type_is_named_in_the_files_words() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(
        d,
        "p.jsonl",
        "{\"metric\": \"t\", \"value\": null, \"unit\": \"ns\"}\n",
    );
    let err = refused(d, "protocol", "p.jsonl");
    assert!(err.contains("`value` must be a number, got null"), "{err}");
    assert!(!err.contains("invalid type"), "{err}");

    write(
        d,
        "ok.jsonl",
        "{\"metric\": \"t\", \"value\": 5, \"unit\": \"ns\"}\n",
    );
    let out = kgate(d)
        .args(["import", "protocol", "ok.jsonl", "-o", "r.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let mut results: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("r.json")).unwrap()).unwrap();
    results["benchmarks"][0]["metrics"][0]["values"][0] = Value::Null;
    write(d, "bad.json", &results.to_string());
    let out = kgate(d)
        .args(["compare", "bad.json", "r.json"])
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("`benchmarks[0].metrics[0].values[0]` must be a number, got null"),
        "{err}"
    );

    let out = kgate(d)
        .args([
            "compare", "r.json", "r.json", "--format", "json", "-o", "rep.json",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let mut report: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("rep.json")).unwrap()).unwrap();
    report["alpha"] = json!("0.05");
    write(d, "rep.json", &report.to_string());
    let out = kgate(d).args(["report", "rep.json"]).output().unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("`alpha` must be a number, got the text \"0.05\""),
        "{err}"
    );

    write(
        d,
        "kgate.yaml",
        "defaults: {warmup: many}\nbenchmarks:\n  - name: a\n    command: ./a\n",
    );
    let out = kgate(d).args(["validate"]).output().unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("key `defaults.warmup`: must be a whole number, 0 or more\n"),
        "{err}"
    );
}

/// A Proton tree `depth` scopes deep with one kernel at the bottom.
fn nested_proton(depth: usize) -> String {
    let kernel = r#"{"frame": {"name": "k"}, "metrics": {"count": 2, "time (ns)": 10, "device_type": "CUDA", "device_id": "0"}, "children": []}"#;
    let mut tree = kernel.to_string();
    for i in (0..depth).rev() {
        tree = format!(r#"{{"frame": {{"name": "s{i}"}}, "metrics": {{}}, "children": [{tree}]}}"#);
    }
    format!(r#"[{{"frame": {{"name": "ROOT"}}, "metrics": {{}}, "children": [{tree}]}}, {{}}]"#)
}

/// Proton scopes nest as deep as the program's `proton.scope`s: 63 and more were refused as
/// "not valid JSON (recursion limit exceeded)". Thousands read; deeper than the limit is
/// refused by that limit, named.
#[test]
fn deeply_nested_proton_scopes_are_read_and_the_depth_limit_is_named() {
    let dir = tempfile::tempdir().unwrap();
    for depth in [63, 200, 4_990] {
        let name = format!("deep{depth}.hatchet");
        write(dir.path(), &name, &nested_proton(depth));
        let r = imported(dir.path(), "proton", &name);
        assert_eq!(r["benchmarks"][0]["name"], "k", "{depth}");
        assert_eq!(
            r["benchmarks"][0]["metrics"][0]["values"][0], 5.0,
            "{depth}"
        );
    }
    write(dir.path(), "deeper.hatchet", &nested_proton(5_100));
    let err = refused(dir.path(), "proton", "deeper.hatchet");
    assert!(
        err.contains("levels deep, more than the 10000 kgate reads (some 5000 nested scopes"),
        "{err}"
    );
    // Brackets inside strings are not nesting.
    write(
        dir.path(),
        "names.hatchet",
        &nested_proton(3).replace("\"s1\"", &format!("\"{}\\\"\"", "[{".repeat(20_000))),
    );
    imported(dir.path(), "proton", "names.hatchet");
}

/// kgate's own files saved by a Windows editor or PowerShell begin with a byte-order mark: a
/// results file (compared, merged, stored, recorded) and a JSON report (`kgate report`) read
/// as without one, from a file and from a pipe.
#[test]
fn results_files_and_reports_accept_a_byte_order_mark() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(
        d,
        "p.jsonl",
        "{\"benchmark\": \"k\", \"metric\": \"t\", \"value\": 5, \"unit\": \"ns\"}\n",
    );
    let run = |args: &[&str]| {
        let out = kgate(d).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr_of(&out));
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    run(&["import", "protocol", "p.jsonl", "-o", "r.json"]);
    let results = std::fs::read_to_string(d.join("r.json")).unwrap();
    write(d, "bom.json", &format!("\u{feff}{results}"));
    run(&[
        "compare",
        "bom.json",
        "r.json",
        "--format",
        "json",
        "-o",
        "report.json",
    ]);
    run(&["merge", "bom.json", "-o", "merged.json"]);
    let report = std::fs::read_to_string(d.join("report.json")).unwrap();
    write(d, "bom-report.json", &format!("\u{feff}{report}"));
    assert!(run(&["report", "bom-report.json"]).contains("1 benchmark"));
    // Through a pipe, which is read once.
    for (command, file) in [("report", "bom-report.json"), ("merge", "bom.json")] {
        let out = Command::new(assert_cmd::cargo::cargo_bin!("kgate"))
            .current_dir(d)
            .args([command, "/dev/stdin"])
            .stdin(std::fs::File::open(d.join(file)).unwrap())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{command}: {}", stderr_of(&out));
    }
}

#[test]
#[cfg_attr(kgate_no_dev_zero, ignore = "needs /dev/zero")]
fn dev_zero_is_refused_by_the_protocol_and_json_importers() {
    let zero = Path::new("/dev/zero");
    assert!(zero.exists(), "/dev/zero is missing");
    let dir = tempfile::tempdir().unwrap();
    for format in [
        "protocol",
        "gbench",
        "hyperfine",
        "pytest-benchmark",
        "nvbench",
        "xplane",
        "cutlass",
        "kernelbench",
    ] {
        let out = kgate_capped(dir.path(), &["import", format, "/dev/zero"]);
        let err = stderr_of(&out);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{format}: {:?} {err}",
            out.status
        );
        assert!(err.contains("/dev/zero"), "{format}: {err}");
    }
    let out = kgate_capped(dir.path(), &["import", "protocol", "/dev/zero"]);
    let err = stderr_of(&out);
    assert!(err.contains("line 1") && err.contains("NUL byte"), "{err}");
}

#[test]
fn a_protocol_line_without_end_is_refused_at_the_line_bound() {
    let dir = tempfile::tempdir().unwrap();
    let long = format!(
        "{{\"metric\": \"t\", \"value\": 1}}\n{{\"metric\": \"{}\"",
        "x".repeat(2 << 20)
    );
    write(dir.path(), "long.jsonl", &long);
    let err = refused(dir.path(), "protocol", "long.jsonl");
    assert!(
        err.contains("line 2") && err.contains("longer than 1 MiB"),
        "{err}"
    );
    // Bytes that are not UTF-8 name their line instead of failing the read.
    std::fs::write(
        dir.path().join("latin1.jsonl"),
        b"{\"metric\": \"t\", \"value\": 1}\n{\"metric\": \"caf\xe9\", \"value\": 1}\n",
    )
    .unwrap();
    let err = refused(dir.path(), "protocol", "latin1.jsonl");
    assert!(err.contains("line 2") && err.contains("not UTF-8"), "{err}");
}

/// A gzip file of `members`: each `(text, repeat)` is compressed once and its member written
/// `repeat` times (gzip readers read concatenated members as one stream).
fn gzip_members(path: &Path, members: &[(&[u8], usize)]) {
    use std::io::Write;
    let mut file = std::fs::File::create(path).unwrap();
    for (text, repeat) in members {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        gz.write_all(text).unwrap();
        let member = gz.finish().unwrap();
        for _ in 0..*repeat {
            file.write_all(&member).unwrap();
        }
    }
}

#[test]
fn a_gzip_of_a_gigabyte_of_whitespace_streams_under_a_memory_cap() {
    let dir = tempfile::tempdir().unwrap();
    let spaces = vec![b' '; 64 << 20];
    let event =
        br#"{"ph": "X", "cat": "kernel", "name": "gemm", "ts": 10, "dur": 4, "pid": 1, "tid": 1}"#;
    // 1 GiB of whitespace between two events: read through, the events kept.
    let path = dir.path().join("ws.json.gz");
    gzip_members(
        &path,
        &[
            (b"{\"traceEvents\": [", 1),
            (event, 1),
            (b",", 1),
            (&spaces, 16),
            (event, 1),
            (b"]}", 1),
        ],
    );
    assert!(std::fs::metadata(&path).unwrap().len() < 4 << 20);
    let out = kgate_capped(dir.path(), &["import", "chrome-trace", "ws.json.gz"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{:?}: {}",
        out.status,
        stderr_of(&out)
    );
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        crate::common::numbers(&r["benchmarks"][0]["metrics"][0]["values"]),
        [4000.0, 4000.0]
    );

    // Whitespace inside one event cannot stream: refused at the bound, naming the file.
    let path = dir.path().join("inside.json.gz");
    gzip_members(
        &path,
        &[
            (b"{\"traceEvents\": [{\"ph\": ", 1),
            (&spaces, 8),
            (b"\"X\"}]}", 1),
        ],
    );
    let out = kgate_capped(dir.path(), &["import", "chrome-trace", "inside.json.gz"]);
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "{:?}: {err}", out.status);
    assert!(
        err.contains("inside.json.gz") && err.contains("256 MiB"),
        "{err}"
    );
}

#[test]
fn the_results_writer_refuses_a_value_it_could_not_read_back() {
    use kgate::model::results::RunResults;
    use kgate::store::ResultsError;
    use kgate::store::fsutil::Overwrite;
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "r.json", &results_file("a", &[1.0, 2.0]));
    let mut results = RunResults::load(&path).unwrap();
    results.benchmarks[0].metrics[0].values[1] = f64::INFINITY;
    let out = dir.path().join("out.json");
    let err = results.save(&out, Overwrite::Allow).unwrap_err();
    assert!(matches!(err, ResultsError::NotFinite { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("benchmark `mm`, metric `kernel_time`, value 2 (inf)"),
        "{err}"
    );
    assert!(!out.exists());
    let err = results.require_measurements("the import").unwrap_err();
    assert!(err.contains("not finite"), "{err}");
}

/// `kgate ARGS` in `dir` with `input` on a pipe as its standard input.
fn kgate_piped(dir: &Path, args: &[&str], input: &str) -> Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_kgate"))
        .current_dir(dir)
        .args(args)
        .env_remove("CI")
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_string();
    // Written from a thread, so that a reader that stops early does not block the test.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

#[test]
fn a_file_given_as_a_pipe_is_read_once_and_read_as_the_same_file_would_be() {
    // A file that a piece-at-a-time reading leaves to a whole reading (another version, a
    // syntax error) is read again from its path: a pipe cannot be, so it is read whole first.
    let dir = tempfile::tempdir().unwrap();
    let version_1 = results_file("abc", &[100.0, 101.0, 99.0, 100.5, 100.2]);
    write(dir.path(), "base.json", &version_1);
    write(dir.path(), "head.json", &version_1);
    let compare = ["compare", "/dev/stdin", "head.json", "--format", "json"];
    let piped = kgate_piped(dir.path(), &compare, &version_1);
    let from_file = kgate(dir.path())
        .args(["compare", "base.json", "head.json", "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(
        from_file.status.code(),
        Some(0),
        "{}",
        stderr_of(&from_file)
    );
    assert_eq!(piped.status.code(), Some(0), "{}", stderr_of(&piped));
    let verdict =
        |out: &Output| serde_json::from_slice::<Value>(&out.stdout).unwrap()["verdict"].clone();
    assert_eq!(verdict(&piped), verdict(&from_file));
    // A report of another version that does not read as this one: its version is read from
    // its text again, which a pipe holds only once.
    let mut report: Value = serde_json::from_slice(&from_file.stdout).unwrap();
    report["schema_version"] = json!(99);
    report.as_object_mut().unwrap().remove("verdict");
    let report = report.to_string();
    write(dir.path(), "report.json", &report);
    let from_file = kgate(dir.path())
        .args(["report", "report.json"])
        .output()
        .unwrap();
    let piped = kgate_piped(dir.path(), &["report", "/dev/stdin"], &report);
    assert!(
        stderr_of(&from_file).contains("report format version 99"),
        "{}",
        stderr_of(&from_file)
    );
    assert_eq!(
        stderr_of(&piped).replace("/dev/stdin", "report.json"),
        stderr_of(&from_file)
    );

    let gbench = r#"{"context": {}, "benchmarks": [{"name": "BM_x", "run_type": "iteration", "real_time": 5, "cpu_time": 5, "time_unit": "ns", "iterations": 1}]} x"#;
    write(dir.path(), "g.json", gbench);
    let from_file = refused(dir.path(), "gbench", "g.json");
    let piped = kgate_piped(dir.path(), &["import", "gbench", "/dev/stdin"], gbench);
    assert_eq!(piped.status.code(), Some(2), "{}", stderr_of(&piped));
    assert_eq!(
        stderr_of(&piped).replace("/dev/stdin", "g.json"),
        from_file,
        "the pipe's message differs from the file's"
    );
    // An ncu export: its first bytes were read to tell a `--version` file from a CSV, and
    // lost to the CSV reader of a pipe.
    let csv = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/ncu/body_items_details.csv"
    ))
    .unwrap();
    write(dir.path(), "n.csv", &csv);
    let from_file = imported(dir.path(), "ncu", "n.csv");
    let piped = kgate_piped(dir.path(), &["import", "ncu", "/dev/stdin"], &csv);
    assert_eq!(piped.status.code(), Some(0), "{}", stderr_of(&piped));
    let piped: Value = serde_json::from_slice(&piped.stdout).unwrap();
    assert_eq!(
        piped["benchmarks"][0]["metrics"],
        from_file["benchmarks"][0]["metrics"]
    );
    let hyperfine = r#"{"results": [{"command": "true", "times": [0.1, 0.2]}]} x"#;
    write(dir.path(), "h.json", hyperfine);
    let from_file = refused(dir.path(), "hyperfine", "h.json");
    let piped = kgate_piped(
        dir.path(),
        &["import", "hyperfine", "/dev/stdin"],
        hyperfine,
    );
    assert_eq!(
        stderr_of(&piped).replace("/dev/stdin", "h.json"),
        from_file,
        "the pipe's message differs from the file's"
    );
}

#[test]
fn a_results_file_or_report_that_is_an_endless_device_is_refused_at_its_first_nul() {
    // `/dev/zero` was read until memory ran out: a stream is read once, and no JSON text holds
    // a NUL byte.
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["compare", "/dev/zero", "/dev/zero"][..],
        &["report", "/dev/zero"][..],
    ] {
        let out = kgate_capped(dir.path(), args);
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("`/dev/zero`: a NUL byte at byte 0"),
            "{args:?}: {err}"
        );
    }
}

/// A results file, stored report or history record of the wrong JSON shape is refused in the
/// file's words once: no Rust type name, and serde's own text not repeated after the plain one.
#[test]
fn wrong_json_shapes_are_refused_in_plain_words_once() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "list.json", "[1]");
    write(d, "text.json", "\"x\"");
    for (args, plain) in [
        (
            &["compare", "list.json", "list.json"][..],
            "must be an object, got 1 item",
        ),
        (
            &["compare", "text.json", "text.json"][..],
            "must be an object, got the text \"x\"",
        ),
        (
            &["report", "list.json"][..],
            "must be an object, got 1 item",
        ),
    ] {
        let out = kgate(d).args(args).output().unwrap();
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(plain), "{args:?}: {err}");
        for leaked in ["RunResults", "Report", "expected struct", "invalid "] {
            assert!(!err.contains(leaked), "{args:?} says `{leaked}`: {err}");
        }
    }
}
