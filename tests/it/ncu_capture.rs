//! The `ncu` capture end to end: `kgate run` with a stand-in `ncu` first on `PATH` that records
//! the arguments it got, runs the wrapped program, and writes a real ncu raw-page CSV (from the
//! corpus) to the `--log-file` it was given, as ncu does.

use crate::common::corpus;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::cargo::cargo_bin_cmd;
use serde_json::Value;

/// A stand-in for ncu: options until the first non-option word, then the program. It answers
/// `--version` like ncu 2026.2.1 and copies `$FAKE_NCU_CSV` to the log file.
const FAKE_NCU: &str = r#"#!/bin/sh
if [ "$1" = "--version" ]; then
  printf 'NVIDIA (R) Nsight Compute Command Line Profiler\nCopyright (c) 2018-2026 NVIDIA Corporation\nVersion 2026.2.1.0 (build 38283040) (public-release)\n'
  exit 0
fi
echo "$@" >> "$FAKE_NCU_ARGS"
echo "LC_ALL=$LC_ALL" >> "$FAKE_NCU_ARGS"
log=
while [ $# -gt 0 ]; do
  case "$1" in
    --csv) shift ;;
    --log-file) log=$2; shift 2 ;;
    --*) shift 2 ;;
    *) break ;;
  esac
done
"$@"
status=$?
if [ $status -ne 0 ]; then
  printf '==PROF== Connected to process 1 (%s)\n==ERROR== The application returned an error code (%s).\n' "$1" "$status" > "$log"
  exit $status
fi
cp "$FAKE_NCU_CSV" "$log"
"#;

fn setup(dir: &Path, command: &str) -> (PathBuf, PathBuf) {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let ncu = bin.join("ncu");
    std::fs::write(&ncu, FAKE_NCU).unwrap();
    std::fs::set_permissions(&ncu, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(
        dir.join("kgate.yaml"),
        format!(
            "benchmarks:\n  - name: decode\n    command: {command}\n    warmup: 1\n    repetitions: 2\n    captures: [timer, ncu]\n    ncu:\n      metrics: [gpu__time_duration.sum, sm__throughput.avg.pct_of_peak_sustained_elapsed]\n      clock_control: base\n      cache_control: all\n      kernel_name: \"regex:Batch|Merge\"\n      launch_skip: 3\n      launch_count: 16\n"
        ),
    )
    .unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    (PathBuf::from(path), dir.join("args.txt"))
}

/// `kgate run` in `dir` with the stand-in ncu first on `PATH`, the benchmark running
/// `command` and ncu "writing" `csv`. Returns the process output, the file of arguments ncu
/// got, and the results file.
fn run_under_fake_ncu(dir: &Path, command: &str, csv: &Path) -> (Output, PathBuf, PathBuf) {
    let (path, args) = setup(dir, command);
    let out = dir.join("results.json");
    let output = cargo_bin_cmd!("kgate")
        .current_dir(dir)
        .env_remove("CI")
        .env_remove("KGATE_NCU")
        .env("PATH", &path)
        .env("FAKE_NCU_CSV", csv)
        .env("FAKE_NCU_ARGS", &args)
        .args(["run", "--no-progress", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    (output, args, out)
}

#[test]
#[cfg_attr(
    kgate_no_corpus,
    ignore = "needs the conformance corpus: set KGATE_CORPUS to its folder"
)]
fn kgate_run_wraps_the_benchmark_in_ncu_and_reads_its_csv() {
    let c = corpus();
    let csv = c.join("ncu/meinie_b200_flashinfer_raw_page.ncu.csv");
    let dir = tempfile::tempdir().unwrap();
    let (output, args, out) = run_under_fake_ncu(dir.path(), "[sh, -c, \"exit 0\"]", &csv);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );

    let recorded = std::fs::read_to_string(&args).unwrap();
    let lines: Vec<&str> = recorded.lines().collect();
    assert_eq!(
        lines.len(),
        6,
        "one warm-up and two repetitions: {recorded}"
    );
    let first = lines[0];
    assert!(
        first.starts_with("--csv --page raw --print-units base --log-file "),
        "{first}"
    );
    assert!(
        first.ends_with(" --metrics gpu__time_duration.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed --clock-control base --cache-control all --kernel-name regex:Batch|Merge --launch-skip 3 --launch-count 16 sh -c exit 0"),
        "{first}"
    );
    assert_eq!(lines[1], "LC_ALL=C");

    let results: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let b = &results["benchmarks"][0];
    assert_eq!(b["name"], "decode");
    assert_eq!(b["status"], "ok");
    assert_eq!(b["repetitions"], 2);
    let details = &b["provenance"]["details"];
    assert_eq!(
        details["ncu.version"],
        "2026.2.1.0 (build 38283040) (public-release)"
    );
    assert_eq!(details["ncu.replay_passes"], "11");
    assert_eq!(details["ncu.clock_control"], "base");
    assert_eq!(details["ncu.device"], "NVIDIA B200");
    assert_eq!(
        b["provenance"]["captures"],
        serde_json::json!(["timer", "ncu"])
    );
    // Two kernels ran: their metrics are kept apart by kernel name; 8 launches per kernel and
    // repetition, so 16 samples over two repetitions.
    let metrics = b["metrics"].as_array().unwrap();
    let time = metrics
        .iter()
        .find(|m| {
            let name = m["name"].as_str().unwrap();
            name.starts_with("void BatchDecodeWithPagedKVCacheKernel")
                && name.ends_with("/gpu__time_duration.sum")
        })
        .expect("per-kernel duration");
    assert_eq!(time["unit"], "ns");
    assert_eq!(time["source"], "timer");
    let values: Vec<f64> = time["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(values.len(), 16);
    assert_eq!(
        &values[..8],
        &[
            23872.0, 23264.0, 23392.0, 24288.0, 24000.0, 23456.0, 23456.0, 23776.0
        ]
    );
    assert_eq!(time["repetition"][8], 1);
    assert!(metrics.iter().any(|m| m["name"] == "wall_time"));
}

#[test]
#[cfg_attr(
    kgate_no_corpus,
    ignore = "needs the conformance corpus: set KGATE_CORPUS to its folder"
)]
fn a_failing_program_under_ncu_fails_its_benchmark_with_ncus_words() {
    let c = corpus();
    let csv = c.join("ncu/meinie_b200_flashinfer_raw_page.ncu.csv");
    let dir = tempfile::tempdir().unwrap();
    let (output, _, out) = run_under_fake_ncu(dir.path(), "[sh, -c, \"exit 3\"]", &csv);
    assert_eq!(output.status.code(), Some(2));
    let results: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let failure = &results["benchmarks"][0]["failure"];
    let message = failure["message"].as_str().unwrap();
    assert!(
        message.contains("ncu said: ==ERROR== The application returned an error code (3)."),
        "{message}"
    );
}

#[test]
#[cfg_attr(
    kgate_no_corpus,
    ignore = "needs the conformance corpus: set KGATE_CORPUS to its folder"
)]
fn a_run_where_ncu_writes_no_csv_is_a_profiler_failure() {
    let c = corpus();
    let csv = c.join("ncu/meinie_only_prof_lines_no_csv.ncu.csv");
    let dir = tempfile::tempdir().unwrap();
    let (output, _, out) = run_under_fake_ncu(dir.path(), "[sh, -c, \"exit 0\"]", &csv);
    assert_eq!(output.status.code(), Some(2));
    let results: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let failure = &results["benchmarks"][0]["failure"];
    assert_eq!(failure["kind"], "profiler");
    assert!(
        failure["message"]
            .as_str()
            .unwrap()
            .contains("ncu wrote no CSV"),
        "{failure}"
    );
}

#[test]
fn the_cuda_example_configuration_is_valid() {
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/cuda/kgate.yaml");
    let mut cmd = cargo_bin_cmd!("kgate");
    let output = cmd.arg("validate").arg("-c").arg(&config).output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("valid, 2 benchmarks"), "{text}");
}

/// ncu's version is part of the environment key, as perf's and valgrind's are: a live run
/// records it in the fingerprint's tools, and results of another ncu version are refused.
#[test]
#[cfg_attr(
    kgate_no_corpus,
    ignore = "needs the conformance corpus: set KGATE_CORPUS to its folder"
)]
fn the_ncu_version_is_recorded_in_the_environment_and_keys_it() {
    let c = corpus();
    let csv = c.join("ncu/meinie_b200_flashinfer_raw_page.ncu.csv");
    let dir = tempfile::tempdir().unwrap();
    let (output, _, out) = run_under_fake_ncu(dir.path(), "[sh, -c, \"exit 0\"]", &csv);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut results: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(
        results["environment"]["tools"]["ncu"], "2026.2.1.0 (build 38283040) (public-release)",
        "the parsed version, not the first line of `ncu --version`"
    );
    results["environment"]["tools"]["ncu"] = "2025.1.0.0 (build 35237751) (public-release)".into();
    let older = dir.path().join("older-ncu.json");
    std::fs::write(&older, results.to_string()).unwrap();
    let compared = cargo_bin_cmd!("kgate")
        .current_dir(dir.path())
        .env_remove("CI")
        .arg("compare")
        .arg(&older)
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&compared.stderr);
    assert_eq!(compared.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("tools.ncu: `2025.1.0.0 (build 35237751) (public-release)` vs `2026.2.1.0 (build 38283040) (public-release)`"),
        "{stderr}"
    );
}
