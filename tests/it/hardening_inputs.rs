//! Inputs that used to crash kgate or make it write what it cannot read back: samples large
//! enough to exhaust memory in the comparison, overflowing and negative values at import,
//! bytes outside JSON strings that broke the importers, and streams without end. Each test runs
//! the command line as a user meets it and asserts a verdict or a refusal (exit 2 with a
//! message), never a crash.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};

use crate::common::{stderr_of, write};

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
