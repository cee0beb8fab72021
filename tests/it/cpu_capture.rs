//! The counter captures with the real tools: perf on this machine (hardware counters are often
//! unavailable on virtual machines: that must be an explicit "unavailable" with a hint), and
//! cachegrind on the example kernels, whose slow variant must move the counters the right way.

use std::path::Path;

use assert_cmd::cargo::cargo_bin_cmd;

use crate::common::{copy_example_suite, require_tool, use_naive_matmul};

fn results(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn metric<'a>(bench: &'a serde_json::Value, name: &str) -> Option<&'a serde_json::Value> {
    bench["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
}

#[test]
#[cfg_attr(kgate_no_perf, ignore = "needs perf (Debian's linux-perf)")]
fn perf_capture_records_counters_or_says_they_are_unavailable() {
    require_tool("perf", "linux-perf");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("kgate.yaml"),
        "benchmarks:\n  - name: spin\n    command: [sh, -c, \"i=0; while [ $i -lt 2000 ]; do i=$((i+1)); done\"]\n    captures: [perf]\n    repetitions: 2\n    warmup: 0\n    perf: {events: [instructions, task-clock]}\n",
    )
    .unwrap();
    let out = d.join("r.json");
    cargo_bin_cmd!("kgate")
        .current_dir(d)
        .args(["run", "--no-progress", "-o", "r.json"])
        .assert()
        .success();
    let r = results(&out);
    assert!(
        r["environment"]["tools"]["perf"]
            .as_str()
            .unwrap()
            .starts_with("perf version")
    );
    let b = &r["benchmarks"][0];
    let clock = metric(b, "task-clock").expect("task-clock is a software clock and always counts");
    assert_eq!(clock["source"], "timer");
    assert_eq!(clock["unit"], "ns");
    assert_eq!(clock["values"].as_array().unwrap().len(), 2);
    assert!(clock["values"][0].as_f64().unwrap() > 0.0);
    match metric(b, "instructions") {
        Some(m) => {
            // A machine with a PMU: real counts.
            assert_eq!(m["source"], "hardware");
            assert!(m["values"][0].as_f64().unwrap() > 100_000.0);
        }
        None => {
            // No PMU (virtual machine): unavailable, never a zero sample, and a hint.
            let u = &b["provenance"]["unavailable"][0];
            assert_eq!(u["counter"], "instructions");
            assert_eq!(u["reason"], "not supported");
            assert!(u["hint"].as_str().unwrap().contains("cachegrind"), "{u}");
            // The report repeats it as a warning.
            let report = cargo_bin_cmd!("kgate")
                .current_dir(d)
                .args(["compare", "r.json", "r.json", "--format", "json"])
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&report.stdout);
            assert!(
                text.contains("spin: counter `instructions` unavailable (not supported)"),
                "{text}"
            );
        }
    }
}

#[test]
#[cfg_attr(kgate_no_valgrind, ignore = "needs valgrind (Debian's valgrind)")]
fn cachegrind_gate_catches_the_slow_matmul() {
    require_tool("valgrind", "valgrind");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    copy_example_suite(d);
    let kgate = || {
        let mut c = cargo_bin_cmd!("kgate");
        c.current_dir(d);
        c
    };
    kgate()
        .args([
            "run",
            "--no-progress",
            "--bench",
            "matmul_cachegrind",
            "-o",
            "fast.json",
        ])
        .assert()
        .success();
    kgate()
        .args(["baseline", "save", "fast.json", "--no-progress"])
        .assert()
        .success();
    use_naive_matmul(d);
    kgate()
        .args([
            "run",
            "--no-progress",
            "--bench",
            "matmul_cachegrind",
            "-o",
            "slow.json",
        ])
        .assert()
        .success();
    let (fast, slow) = (results(&d.join("fast.json")), results(&d.join("slow.json")));
    let value = |r: &serde_json::Value, m: &str| {
        let b = &r["benchmarks"][0];
        assert_eq!(b["repetitions"], 1, "deterministic: one repetition");
        let m = metric(b, m).unwrap();
        assert_eq!(m["source"], "simulated");
        assert_eq!(m["gate"]["tolerance"]["relative"], 0.01);
        m["values"][0].as_f64().unwrap()
    };
    // The simulated cache geometry is pinned, and recorded with the counts and in the
    // environment (so it is part of the baseline key): misses mean the same on every CPU.
    let geometry = "--I1=32768,8,64 --D1=32768,8,64 --LL=8388608,16,64";
    assert_eq!(fast["environment"]["tools"]["valgrind.caches"], geometry);
    assert_eq!(
        fast["benchmarks"][0]["provenance"]["details"]["valgrind.caches"],
        geometry
    );
    assert!(value(&slow, "D1_misses") > 5.0 * value(&fast, "D1_misses"));
    assert!(value(&slow, "Ir") > 2.0 * value(&fast, "Ir"));
    assert!(value(&slow, "estimated_cycles") > value(&fast, "estimated_cycles"));

    let out = kgate()
        .args([
            "check",
            "--no-progress",
            "--no-build",
            "--bench",
            "matmul_cachegrind",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let line = stdout
        .lines()
        .find(|l| l.starts_with("regressed matmul_cachegrind: "))
        .expect(&stdout);
    assert!(line.contains("D1_misses: deterministic: +"), "{line}");
    assert!(line.contains("Ir: deterministic: +"), "{line}");
}
