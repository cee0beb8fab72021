//! Acceptance scenarios of register-derived utilization: the tiled-matmul case study through
//! `kgate run` and `kgate compare`, and the same counter streams through `kgate import`.

use crate::common::kgate;

use std::path::{Path, PathBuf};

use serde_json::Value;

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/utilization/tiled_matmul.sh")
}

fn config(buffers: u32) -> String {
    format!(
        "device: tpu-v7x\ndefaults: {{warmup: 0, repetitions: 8}}\nbenchmarks:\n  - name: tiled_matmul\n    command: [sh, {}]\n    env: {{BUFFERS: \"{buffers}\"}}\n    captures: [protocol]\n    counters: {{request: [cycles, mxu_busy_1, mxu_busy_2, sync_wait]}}\n",
        script().display()
    )
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn metric<'a>(results: &'a Value, name: &str) -> &'a Value {
    results["benchmarks"][0]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("metric {name} recorded"))
}

#[test]
fn single_buffered_matmul_regresses_and_the_explanation_names_the_memory_stall() {
    let dir = tempfile::tempdir().unwrap();
    for (buffers, out) in [(3, "base.json"), (1, "head.json")] {
        std::fs::write(dir.path().join("kgate.yaml"), config(buffers)).unwrap();
        kgate(dir.path())
            .args(["run", "-o", out])
            .assert()
            .success();
    }
    let base = json(&dir.path().join("base.json"));
    // Triple-buffered: 1500 + 0.5·200 (or 1510 + 100) busy cycles in 1900 per microsecond.
    let mxu = metric(&base, "avg_mxu_busy");
    assert_eq!(mxu["source"], "derived");
    let v = mxu["values"][0].as_f64().unwrap();
    assert!((v - 100.0 * 1600.0 / 1900.0).abs() < 1e-9, "{v}");
    // 88 samples inside an 88 µs window, 16-bit counters wrapping: 88 × 1900 cycles.
    let cycles = metric(&base, "counter.cycles");
    assert_eq!(cycles["values"][0].as_f64().unwrap(), 88.0 * 1900.0);
    let util = metric(&base, "util.mxu_busy_2");
    assert!((util["values"][0].as_f64().unwrap() - 100.0 * 1500.0 / 1900.0).abs() < 1e-9);
    assert_eq!(
        base["benchmarks"][0]["provenance"]["details"]["device.profile"],
        "tpu-v7x"
    );

    let out = kgate(dir.path())
        .args(["compare", "base.json", "head.json", "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "a regression exits 1");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["verdict"], "regressed");
    let b = &report["benchmarks"][0];
    assert_eq!(b["verdict"], "regressed");
    let explanation = b["explanation"].as_str().unwrap();
    assert!(explanation.contains("kernel_time"), "{explanation}");
    assert!(explanation.contains("counter.sync_wait +"), "{explanation}");
    assert!(explanation.contains("avg_mxu_busy −"), "{explanation}");
    assert!(
        explanation
            .contains("memory stall: the compute units wait on memory (HBM); check buffering"),
        "{explanation}"
    );
    // Utilization metrics are compared but only explain: they do not gate by default.
    let m = b["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "avg_mxu_busy")
        .unwrap();
    assert_eq!(m["gates"], false);

    for format in ["markdown", "table"] {
        let out = kgate(dir.path())
            .args(["compare", "base.json", "head.json", "--format", format])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("memory stall"), "{format}: {text}");
    }
}

#[test]
fn imported_protocol_files_get_the_same_utilization() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("kgate.yaml"), config(1)).unwrap();
    let path = dir.path().join("tiled_matmul.jsonl");
    let status = std::process::Command::new("sh")
        .arg(script())
        .env("BUFFERS", "1")
        .env("KGATE_REPETITION", "1")
        .env("KGATE_PROTOCOL_FILE", &path)
        .status()
        .unwrap();
    assert!(status.success());
    kgate(dir.path())
        .args(["import", "protocol", "tiled_matmul.jsonl", "-o", "imp.json"])
        .assert()
        .success();
    let r = json(&dir.path().join("imp.json"));
    // 125 whole samples in the 125.5 µs window; the half microsecond at the end is not sampled.
    assert_eq!(
        metric(&r, "counter.cycles")["values"][0].as_f64().unwrap(),
        125.0 * 1900.0
    );
    let mxu = metric(&r, "avg_mxu_busy")["values"][0].as_f64().unwrap();
    assert!((mxu - 100.0 * 1110.0 / 1900.0).abs() < 1e-9, "{mxu}");
}

#[test]
fn counters_beyond_the_budget_are_split_into_passes_and_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("bench.sh");
    std::fs::write(
        &script,
        "echo \"{\\\"metric\\\": \\\"t\\\", \\\"value\\\": 1, \\\"unit\\\": \\\"ns\\\"}\" >> \"$KGATE_PROTOCOL_FILE\"\necho \"$KGATE_COUNTER_PASS $KGATE_COUNTERS\" >> passes.txt\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("kgate.yaml"),
        "device: cpu\ndefaults: {warmup: 0, repetitions: 3}\nbenchmarks:\n  - name: b\n    command: [sh, bench.sh]\n    captures: [protocol]\n    counters: {request: [c1, c2, c3, c4, c5, c6]}\n",
    )
    .unwrap();
    kgate(dir.path())
        .args(["run", "-o", "r.json"])
        .assert()
        .success();
    let passes = std::fs::read_to_string(dir.path().join("passes.txt")).unwrap();
    assert_eq!(passes, "0 c1,c2,c3,c4\n1 c5,c6\n0 c1,c2,c3,c4\n");
    let r = json(&dir.path().join("r.json"));
    let details = &r["benchmarks"][0]["provenance"]["details"];
    assert_eq!(details["counter_pass.c1"], "0");
    assert_eq!(details["counter_pass.c6"], "1");
}

#[test]
fn an_unknown_device_is_a_config_error_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("kgate.yaml"),
        "device: tpu-v9\nbenchmarks:\n  - {name: a, command: ./a}\n",
    )
    .unwrap();
    let out = kgate(dir.path()).arg("validate").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("kgate.yaml:1:") && err.contains("no device profile named `tpu-v9`"),
        "{err}"
    );
}

#[test]
fn roofline_and_estimates_side_by_side() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("kgate.yaml"),
        "device: h100\nbenchmarks:\n  - {name: matmul, command: ./m}\n",
    )
    .unwrap();
    let mut lines = String::new();
    for (i, t) in [88.0, 88.4, 87.8].iter().enumerate() {
        lines.push_str(&format!(
            "{{\"metric\": \"kernel_time\", \"value\": {t}, \"unit\": \"us\", \"source\": \"timer\"}}\n{{\"metric\": \"flops\", \"value\": 68719476736, \"source\": \"hardware\"}}\n{{\"metric\": \"flops_estimate\", \"value\": 70000000000, \"source\": \"estimate\"}}\n{{\"metric\": \"bytes\", \"value\": 184549376, \"unit\": \"B\", \"source\": \"hardware\"}}\n"
        ));
        std::fs::write(dir.path().join(format!("r{i}.jsonl")), &lines).unwrap();
        lines.clear();
    }
    // The three files are three repetitions of one benchmark named by the `benchmark` key.
    for i in 0..3 {
        let p = dir.path().join(format!("r{i}.jsonl"));
        let text = std::fs::read_to_string(&p)
            .unwrap()
            .replace("}\n", ", \"benchmark\": \"matmul\"}\n");
        std::fs::write(&p, text).unwrap();
    }
    kgate(dir.path())
        .args([
            "import", "protocol", "r0.jsonl", "r1.jsonl", "r2.jsonl", "-o", "r.json",
        ])
        .assert()
        .success();
    let r = json(&dir.path().join("r.json"));
    // 2·8192·1024·4096 FLOP over the case study's 176 MiB: 372.4 FLOP/B, above H100's BF16
    // ridge of 989.4 TFLOP/s / 3.35 TB/s = 295.3 FLOP/B, so the bound is the peak.
    let ai = metric(&r, "roofline.intensity")["values"][0]
        .as_f64()
        .unwrap();
    assert!((ai - 68719476736.0 / 184549376.0).abs() < 1e-9);
    assert_eq!(metric(&r, "roofline.attainable")["values"][0], 9.894e14);
    assert_eq!(metric(&r, "roofline.intensity")["source"], "derived");
    let eff = metric(&r, "roofline.efficiency")["values"][0]
        .as_f64()
        .unwrap();
    assert!(
        (eff - 100.0 * 68719476736.0 / 88e-6 / 9.894e14).abs() < 1e-9,
        "{eff}"
    );
    let notes = r["benchmarks"][0]["provenance"]["notes"].to_string();
    assert!(notes.contains("compute-bound"), "{notes}");

    let out = kgate(dir.path())
        .args(["compare", "r.json", "r.json", "--format", "json"])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let explanation = report["benchmarks"][0]["explanation"].as_str().unwrap();
    assert!(
        explanation.contains("flops: hardware 6.8719e10 vs estimate 7.0000e10 (estimate +1.9 %)"),
        "{explanation}"
    );
    assert!(
        explanation
            .contains("estimate-based (annotate only, never fail the build): flops_estimate"),
        "{explanation}"
    );
    let html = kgate(dir.path())
        .args(["compare", "r.json", "r.json", "--format", "markdown"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&html.stdout).contains("vs estimate"));
    for format in ["table", "markdown", "html", "junit"] {
        let out = kgate(dir.path())
            .args(["compare", "r.json", "r.json", "--format", format])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("(estimate)"),
            "{format} marks the estimate: {text}"
        );
    }
}

#[test]
fn counters_from_different_configurations_are_not_compared() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("kgate.yaml"), config(3)).unwrap();
    kgate(dir.path())
        .args(["run", "-o", "base.json"])
        .assert()
        .success();
    let other = config(3).replace(
        "device: tpu-v7x\n",
        "device: v7x-mine\nprofiles:\n  v7x-mine: {base: tpu-v7x}\n",
    );
    std::fs::write(dir.path().join("kgate.yaml"), other).unwrap();
    kgate(dir.path())
        .args(["run", "-o", "head.json"])
        .assert()
        .success();
    let out = kgate(dir.path())
        .args(["compare", "base.json", "head.json", "--format", "json"])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let metrics = report["benchmarks"][0]["metrics"].as_array().unwrap();
    for name in ["avg_mxu_busy", "util.mxu_busy_2", "counter.sync_wait"] {
        let m = metrics.iter().find(|m| m["name"] == name).unwrap();
        assert_eq!(m["verdict"], "inconclusive", "{name}");
        let reason = m["reason"].as_str().unwrap();
        assert!(
            reason.starts_with(
                "counters collected under different configurations (baseline: profile tpu-v7x"
            ) && reason.contains("this run: profile v7x-mine"),
            "{reason}"
        );
    }
    let time = metrics.iter().find(|m| m["name"] == "kernel_time").unwrap();
    assert_ne!(time["reason"].as_str().unwrap_or(""), "");
}
