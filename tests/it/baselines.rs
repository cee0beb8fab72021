//! End-to-end tests of baselines, history and scale-out: fingerprint refusal, baselines read
//! from git refs at the merge-base, change points in a recorded history, waivers, shards and
//! merge, diff-aware selection and `baseline update`.

use crate::common::{git, kgate, stderr_of, stdout_of, write};

use std::path::Path;

use serde_json::{Value, json};

fn stdout_json(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

fn init_repo(dir: &Path) {
    git(dir, &["init", "-q", "-b", "main"]);
}

/// A results file: each benchmark has `kernel_time` samples (timer, 5 % threshold).
pub(crate) fn results(
    cpu: &str,
    commit: &str,
    created: &str,
    benches: &[(&str, &[f64])],
) -> String {
    let benchmarks: Vec<Value> = benches
        .iter()
        .map(|(name, values)| {
            json!({
                "name": name, "status": "ok", "warmup": 0, "repetitions": values.len(),
                "metrics": [{
                    "name": "kernel_time", "unit": "ns", "source": "timer", "direction": "lower",
                    "gate": {"gates": true, "threshold": 0.05},
                    "values": values, "repetition": (0..values.len()).collect::<Vec<_>>(),
                }],
                "provenance": {"captures": ["protocol"]},
            })
        })
        .collect();
    serde_json::to_string_pretty(&json!({
        "schema_version": 1, "kgate_version": "0.1.0", "created": created,
        "environment": {
            "cpu_model": cpu, "cores": 4, "arch": "x86_64", "os": "Linux", "kernel": "6.1",
            "kgate_version": "0.1.0", "git": {"commit": commit, "dirty": false}, "tools": {},
        },
        "benchmarks": benchmarks,
    }))
    .unwrap()
}

pub(crate) const BASE: [f64; 10] = [
    100.2, 101.1, 99.8, 100.5, 100.9, 100.1, 100.4, 99.9, 100.7, 100.3,
];
pub(crate) const SLOW: [f64; 10] = [
    120.2, 121.1, 119.8, 120.5, 120.9, 120.1, 120.4, 119.9, 120.7, 120.3,
];

/// `base.json` and `head.json` of one benchmark, `mm`, that got about 20 % slower.
fn write_mm_regression(dir: &Path) {
    write(
        dir,
        "base.json",
        &results("cpu", "a", "2026-01-01T00:00:00Z", &[("mm", &BASE)]),
    );
    write(
        dir,
        "head.json",
        &results("cpu", "b", "2026-01-02T00:00:00Z", &[("mm", &SLOW)]),
    );
}

#[test]
fn different_fingerprints_are_refused_by_field_unless_overridden() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    write(
        dir,
        "base.json",
        &results(
            "AMD EPYC 7763",
            "a",
            "2026-01-01T00:00:00Z",
            &[("mm", &BASE)],
        ),
    );
    write(
        dir,
        "head.json",
        &results(
            "AMD EPYC 9V74",
            "b",
            "2026-01-02T00:00:00Z",
            &[("mm", &BASE)],
        ),
    );
    let out = kgate(dir)
        .args(["compare", "base.json", "head.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    let err = stderr_of(&out);
    assert!(
        err.contains("refusing to compare results from different environments (cpu_model: `AMD EPYC 7763` vs `AMD EPYC 9V74`)"),
        "{err}"
    );
    assert!(err.contains("--allow-fingerprint-mismatch"), "{err}");

    let out = kgate(dir)
        .args([
            "compare",
            "base.json",
            "head.json",
            "--allow-fingerprint-mismatch",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let report = stdout_json(&out);
    // One line on the environments, naming the difference, the consequence and who allowed it.
    let warnings: Vec<&str> = report["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .filter(|w| w.contains("different environments"))
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with("baseline and candidate ran on different environments (cpu_model: `AMD EPYC 7763` vs `AMD EPYC 9V74`): a timing or hardware counter from another machine says nothing about the change"),
        "{}",
        warnings[0]
    );
    assert!(
        warnings[0].ends_with("(compared anyway because --allow-fingerprint-mismatch was given)"),
        "{}",
        warnings[0]
    );
    // A timer from another machine does not gate: the benchmark is not gated, not unchanged.
    assert_eq!(report["benchmarks"][0]["verdict"], "not-gated");
    assert_eq!(report["summary"]["not_gated"], 1);
}

/// main: c1 (baseline 100) → c2 (baseline 120, the moving tip). feature forks at c1.
fn repo_with_moving_main(dir: &Path) -> (String, String) {
    init_repo(dir);
    write(
        dir,
        ".kgate/baselines/default.json",
        &results("cpu", "c1", "2026-01-01T00:00:00Z", &[("mm", &BASE)]),
    );
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-qm", "baseline at 100"]);
    let c1 = git(dir, &["rev-parse", "HEAD"]);
    git(dir, &["checkout", "-qb", "feature"]);
    write(dir, "src.txt", "feature work\n");
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-qm", "feature"]);
    git(dir, &["checkout", "-q", "main"]);
    write(
        dir,
        ".kgate/baselines/default.json",
        &results("cpu", "c2", "2026-01-03T00:00:00Z", &[("mm", &SLOW)]),
    );
    git(dir, &["commit", "-qam", "baseline at 120"]);
    let c2 = git(dir, &["rev-parse", "HEAD"]);
    git(dir, &["checkout", "-q", "feature"]);
    (c1, c2)
}

#[test]
fn baselines_are_read_from_the_merge_base_of_a_ref_without_checkout() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let (c1, c2) = repo_with_moving_main(dir);
    assert_eq!(
        kgate::baseline::gitref::merge_base(dir, "main").unwrap(),
        c1
    );
    assert_eq!(kgate::baseline::gitref::merge_base(dir, &c2).unwrap(), c1);
    // `kgate compare` of the baseline at main's merge-base against head.json.
    let compare_at_main = |extra: &[&str]| {
        kgate(dir)
            .args([
                "compare",
                ".kgate/baselines/default.json",
                "head.json",
                "--baseline-ref",
                "main",
            ])
            .args(extra)
            .output()
            .unwrap()
    };
    // The work tree's copy is something else entirely: it must not be read.
    write(dir, ".kgate/baselines/default.json", "not json");
    write(
        dir,
        "head.json",
        &results("cpu", "h", "2026-01-04T00:00:00Z", &[("mm", &SLOW)]),
    );
    let out = compare_at_main(&["--format", "json"]);
    // Against the merge-base (100) the head (120) regressed; against main's tip (120) it would not.
    assert_eq!(out.status.code(), Some(1), "{}", stderr_of(&out));
    let report = stdout_json(&out);
    assert_eq!(report["base_commit"], "c1");
    assert!(
        stderr_of(&out).contains(&format!("at {} (merge-base of main and HEAD)", &c1[..12])),
        "{}",
        stderr_of(&out)
    );
    // A ref that is an ancestor is its own merge-base: main's tip from main.
    git(
        dir,
        &["checkout", "-q", "--", ".kgate/baselines/default.json"],
    );
    git(dir, &["checkout", "-q", "main"]);
    write(dir, ".kgate/baselines/default.json", "not json");
    let out = compare_at_main(&["--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(stdout_json(&out)["base_commit"], "c2");
    // A ref without the file, and a name that is no ref, are clear errors.
    let out = kgate(dir)
        .args([
            "compare",
            "missing.json",
            "head.json",
            "--baseline-ref",
            "main",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr_of(&out).contains("`missing.json` does not exist at main"),
        "{}",
        stderr_of(&out)
    );
    let out = kgate(dir)
        .args(["compare", "x.json", "head.json", "--baseline-ref", "nope"])
        .output()
        .unwrap();
    assert!(
        stderr_of(&out).contains("`nope` does not name a commit"),
        "{}",
        stderr_of(&out)
    );
    // A damaged baseline at the ref is named by its path in the repository, not by a copy.
    git(dir, &["commit", "-qam", "a damaged baseline"]);
    let out = compare_at_main(&[]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr_of(&out);
    assert!(
        err.contains("`.kgate/baselines/default.json` is not a kgate results file"),
        "{err}"
    );
    assert!(!err.contains("baseline.json"), "{err}");
}

/// `check --against main` on a branch measures what the branch started from, not main's tip:
/// main got faster after the branch forked, and the branch itself changed nothing, so only
/// `--against-tip` (which measures the tip) sees a "regression".
#[test]
fn check_against_a_ref_measures_its_merge_base_and_against_tip_its_tip() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    init_repo(dir);
    write(
        dir,
        "kgate.yaml",
        "defaults: {warmup: 0, repetitions: 8, captures: [protocol]}\n\
         benchmarks:\n  - name: mm\n    command: [sh, bench.sh]\n    \
         metrics: {kernel_time: {threshold: 5%, source: timer}}\n",
    );
    // The kernel time is the committed `speed.txt`, with a little spread.
    write(
        dir,
        "bench.sh",
        "v=$(cat speed.txt)\nprintf '{\"metric\": \"kernel_time\", \"value\": %d, \"unit\": \"us\", \"source\": \"timer\"}\\n' $((v + KGATE_REPETITION % 3)) >> \"$KGATE_PROTOCOL_FILE\"\n",
    );
    write(dir, "speed.txt", "100\n");
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-qm", "kernel at 100 us"]);
    let fork = git(dir, &["rev-parse", "HEAD"]);
    git(dir, &["checkout", "-qb", "feature"]);
    write(dir, "notes.txt", "the branch does not touch the kernel\n");
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-qm", "feature"]);
    let feature = git(dir, &["rev-parse", "HEAD"]);
    git(dir, &["checkout", "-q", "main"]);
    write(dir, "speed.txt", "60\n");
    git(dir, &["commit", "-qam", "main: kernel at 60 us"]);
    let tip = git(dir, &["rev-parse", "HEAD"]);
    git(dir, &["checkout", "-q", "feature"]);

    let check = |flags: &[&str]| {
        kgate(dir)
            .args(["check", "--no-progress", "--format", "json"])
            .args(flags)
            .output()
            .unwrap()
    };
    let out = check(&["--against", "main"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(stdout_json(&out)["base_commit"], fork.as_str());
    assert!(
        stderr_of(&out).contains(&format!(
            "measuring the merge-base of main and HEAD ({}) interleaved with the work tree",
            &fork[..12]
        )),
        "{}",
        stderr_of(&out)
    );

    let out = check(&["--against-tip", "main"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr_of(&out));
    assert_eq!(stdout_json(&out)["base_commit"], tip.as_str());
    assert!(
        stderr_of(&out).contains(&format!("measuring main ({})", &tip[..12])),
        "{}",
        stderr_of(&out)
    );

    // A ref that HEAD contains is its own merge-base: `--against HEAD` is unchanged.
    let out = check(&["--against", "HEAD"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(stdout_json(&out)["base_commit"], feature.as_str());
    assert!(
        stderr_of(&out).contains(&format!("measuring HEAD ({})", &feature[..12])),
        "{}",
        stderr_of(&out)
    );
    let out = check(&["--against", "main", "--against-tip", "main"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
}

#[test]
fn history_finds_a_planted_step_at_the_commit_that_made_it() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let noise = [0.4, -0.7, 0.9, -0.2, 0.1, -0.9, 0.6, -0.4];
    let mut commits = Vec::new();
    for i in 0..20 {
        let level = if i < 13 { 100.0 } else { 115.0 };
        let values: Vec<f64> = (0..5).map(|k| level + noise[(i + k) % 8]).collect();
        let commit = format!("{:040x}", 0xc0ffee00u64 + i as u64);
        let created = format!("2026-02-{:02}T12:00:00Z", i + 1);
        let path = write(
            dir,
            &format!("r{i}.json"),
            &results("cpu", &commit, &created, &[("mm", &values)]),
        );
        // Half through the library, half through the command.
        if i % 2 == 0 {
            let r = kgate::model::results::RunResults::load(&path).unwrap();
            kgate::baseline::history::record(dir, &r).unwrap();
        } else {
            kgate(dir)
                .args(["history", "record"])
                .arg(&path)
                .assert()
                .success();
        }
        commits.push(commit);
    }
    let keys = kgate::baseline::history::keys(dir);
    assert_eq!(keys.len(), 1);
    let files = std::fs::read_dir(dir.join(".kgate/history").join(&keys[0]))
        .unwrap()
        .count();
    assert_eq!(files, 20, "one file per run");
    let series =
        kgate::baseline::history::job_summaries(dir, &keys[0], "mm", "kernel_time").unwrap();
    assert_eq!(series.len(), 20);
    assert_eq!(series[0].commit.as_deref(), Some(commits[0].as_str()));
    assert_eq!(series[0].summary.n, 5);

    let out = kgate(dir)
        .args([
            "history",
            "--key",
            &keys[0],
            "--json",
            "--metric",
            "kernel_time",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let h = stdout_json(&out);
    let cps = h["metrics"][0]["change_points"].as_array().unwrap();
    assert_eq!(cps.len(), 1, "{h}");
    assert_eq!(cps[0]["index"], 13);
    assert_eq!(cps[0]["commit"], commits[13].as_str());
    let change = cps[0]["relative_change"].as_f64().unwrap();
    assert!((change - 0.15).abs() < 0.01, "{change}");

    let out = kgate(dir)
        .args(["history", "--key", &keys[0]])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("{}  ", &commits[13][..12])),
        "{text}"
    );
    assert!(text.contains("◀ change point: +15."), "{text}");
    let out = kgate(dir)
        .args(["history", "--key", "unknown"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr_of(&out).contains(&format!("histories exist for: {}", keys[0])),
        "{}",
        stderr_of(&out)
    );
}

#[test]
fn waivers_apply_expire_and_malformed_files_are_located() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    write(
        dir,
        "base.json",
        &results(
            "cpu",
            "a",
            "2026-01-01T00:00:00Z",
            &[("mm_large", &BASE), ("other", &BASE)],
        ),
    );
    write(
        dir,
        "head.json",
        &results(
            "cpu",
            "b",
            "2026-01-02T00:00:00Z",
            &[("mm_large", &SLOW), ("other", &BASE)],
        ),
    );
    let compare = || {
        kgate(dir)
            .args(["compare", "base.json", "head.json", "--format", "json"])
            .output()
            .unwrap()
    };
    let out = compare();
    assert_eq!(out.status.code(), Some(1), "no waiver: a regression");

    write(
        dir,
        ".kgate/waivers.yaml",
        "waivers:\n  - benchmark: \"mm_*\"\n    metric: kernel_time\n    reason: \"new tiling trades 20 % here for 2x elsewhere\"\n    expires: 2999-12-31\n",
    );
    let out = compare();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let r = stdout_json(&out);
    assert_eq!(r["verdict"], "pass");
    assert_eq!(r["summary"]["waived"], 1);
    assert_eq!(r["summary"]["regressed"], 0);
    let m = &r["benchmarks"][0]["metrics"][0];
    assert_eq!(
        m["verdict"], "regressed",
        "the metric still says what happened"
    );
    assert_eq!(m["waived"], true);
    assert_eq!(m["waiver"], "new tiling trades 20 % here for 2x elsewhere");
    assert_eq!(r["benchmarks"][0]["verdict"], "unchanged");
    assert!(
        r["benchmarks"][0]["explanation"]
            .as_str()
            .unwrap()
            .contains("waived: new tiling")
    );

    write(
        dir,
        ".kgate/waivers.yaml",
        "waivers:\n  - benchmark: \"mm_*\"\n    reason: old excuse\n    expires: 2000-01-31\n",
    );
    let out = compare();
    assert_eq!(
        out.status.code(),
        Some(1),
        "an expired waiver no longer applies"
    );
    let r = stdout_json(&out);
    assert_eq!(r["benchmarks"][0]["verdict"], "regressed");
    let m = &r["benchmarks"][0]["metrics"][0];
    assert!(m.get("waived").is_none());
    assert_eq!(m["waiver"], "expired on 2000-01-31: old excuse");
    assert!(
        r["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().starts_with(
                "waiver for `mm_*` / `*` expired on 2000-01-31 and no longer applies"
            )),
        "{}",
        r["warnings"]
    );

    write(
        dir,
        ".kgate/waivers.yaml",
        "waivers:\n  - benchmark: mm_large\n    reason: fine\n    expires: tomorrow\n",
    );
    let out = compare();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr_of(&out);
    assert!(
        err.contains("./.kgate/waivers.yaml:2: key `waivers[0].expires`: `tomorrow` is not a date; write it as YYYY-MM-DD"),
        "{err}"
    );
    write(
        dir,
        ".kgate/waivers.yaml",
        "waivers:\n  - benchmark: mm_large\n    reason: [1, 2]\n    expires: 2999-01-01\n",
    );
    let err = stderr_of(&compare());
    assert!(
        err.contains("./.kgate/waivers.yaml:3:") && err.contains("waivers[0].reason"),
        "{err}"
    );
}

#[test]
fn a_waiver_until_a_commit_expires_once_the_commit_is_in_history() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    init_repo(dir);
    write(dir, "a.txt", "1\n");
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-qm", "one"]);
    git(dir, &["checkout", "-qb", "fix"]);
    write(dir, "a.txt", "2\n");
    git(dir, &["commit", "-qam", "the fix"]);
    let fix = git(dir, &["rev-parse", "HEAD"]);
    git(dir, &["checkout", "-q", "main"]);
    write_mm_regression(dir);
    write(
        dir,
        ".kgate/waivers.yaml",
        &format!(
            "waivers:\n  - benchmark: mm\n    reason: until the fix lands\n    until_commit: {}\n",
            &fix[..10]
        ),
    );
    let code = || {
        kgate(dir)
            .args(["compare", "base.json", "head.json"])
            .output()
            .unwrap()
            .status
            .code()
    };
    assert_eq!(code(), Some(0), "the fix is not in main yet");
    git(dir, &["merge", "-q", "--ff-only", "fix"]);
    assert_eq!(code(), Some(1), "the fix landed: the waiver expired");
}

/// A suite of five deterministic benchmarks (protocol values) with different costs.
const SUITE: &str = r#"defaults:
  warmup: 0
  repetitions: 3
  captures: [protocol]
benchmarks:
  - {name: alpha, command: "echo '{\"metric\":\"kernel_time\",\"value\":100,\"unit\":\"ns\"}' >> \"$KGATE_PROTOCOL_FILE\"", metrics: {kernel_time: {tolerance: 1%, source: timer}}, paths: ["src/alpha/**"]}
  - {name: beta, command: "echo '{\"metric\":\"kernel_time\",\"value\":200,\"unit\":\"ns\"}' >> \"$KGATE_PROTOCOL_FILE\"", metrics: {kernel_time: {tolerance: 1%, source: timer}}, paths: ["src/beta/**"]}
  - {name: gamma, command: "echo '{\"metric\":\"kernel_time\",\"value\":300,\"unit\":\"ns\"}' >> \"$KGATE_PROTOCOL_FILE\"", metrics: {kernel_time: {tolerance: 1%, source: timer}}, paths: ["src/gamma/**"]}
  - {name: delta, command: "echo '{\"metric\":\"kernel_time\",\"value\":400,\"unit\":\"ns\"}' >> \"$KGATE_PROTOCOL_FILE\"", metrics: {kernel_time: {tolerance: 1%, source: timer}}}
  - {name: epsilon, command: "echo '{\"metric\":\"kernel_time\",\"value\":500,\"unit\":\"ns\"}' >> \"$KGATE_PROTOCOL_FILE\"", metrics: {kernel_time: {tolerance: 1%, source: timer}}, paths: ["src/eps/**"]}
"#;

fn names(r: &Value) -> Vec<String> {
    r["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["name"].as_str().unwrap().to_string())
        .collect()
}

/// name → (verdict, kernel_time verdict, change), the parts of a report a shard split must keep.
fn outcome(r: &Value) -> Vec<(String, String, String, String)> {
    let mut v: Vec<_> = r["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            let m = b["metrics"]
                .as_array()
                .unwrap()
                .iter()
                .find(|m| m["name"] == "kernel_time")
                .unwrap();
            (
                b["name"].as_str().unwrap().to_string(),
                b["verdict"].as_str().unwrap().to_string(),
                m["verdict"].as_str().unwrap().to_string(),
                m["change"].to_string(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn shards_cover_every_benchmark_once_and_merge_to_the_unsharded_comparison() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    write(dir, "kgate.yaml", SUITE);
    kgate(dir)
        .args(["run", "--no-progress", "-o", "full.json"])
        .assert()
        .success();
    // A baseline where beta was faster, so the comparison has a regression to keep.
    let mut base: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("full.json")).unwrap()).unwrap();
    for b in base["benchmarks"].as_array_mut().unwrap() {
        if b["name"] == "beta" {
            for m in b["metrics"].as_array_mut().unwrap() {
                if m["name"] == "kernel_time" {
                    m["values"] = json!([150.0, 150.0, 150.0]);
                }
            }
        }
    }
    write(dir, "base.json", &serde_json::to_string(&base).unwrap());

    let mut seen = Vec::new();
    for i in 1..=3 {
        let file = format!("shard{i}.json");
        kgate(dir)
            .args([
                "run",
                "--no-progress",
                "--shard",
                &format!("{i}/3"),
                "-o",
                &file,
            ])
            .assert()
            .success();
        seen.extend(names(
            &serde_json::from_str(&std::fs::read_to_string(dir.join(&file)).unwrap()).unwrap(),
        ));
    }
    seen.sort();
    assert_eq!(
        seen,
        ["alpha", "beta", "delta", "epsilon", "gamma"],
        "each benchmark exactly once"
    );
    // Stable: the same split again.
    let again = kgate(dir)
        .args(["run", "--no-progress", "--shard", "2/3"])
        .output()
        .unwrap();
    let shard2: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("shard2.json")).unwrap()).unwrap();
    assert_eq!(names(&stdout_json(&again)), names(&shard2));

    kgate(dir)
        .args([
            "merge",
            "shard1.json",
            "shard2.json",
            "shard3.json",
            "-o",
            "merged.json",
        ])
        .assert()
        .success();
    let report = |head: &str| {
        let out = kgate(dir)
            .args(["compare", "base.json", head, "--format", "json"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", stderr_of(&out));
        stdout_json(&out)
    };
    let (sharded, unsharded) = (report("merged.json"), report("full.json"));
    assert_eq!(outcome(&sharded), outcome(&unsharded));
    assert_eq!(sharded["summary"], unsharded["summary"]);
    assert!(
        outcome(&sharded)
            .iter()
            .any(|o| o.0 == "beta" && o.1 == "regressed")
    );

    // Duplicates and foreign environments are refused.
    let out = kgate(dir)
        .args(["merge", "shard1.json", "shard1.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr_of(&out).contains("appears in both `shard1.json` and `shard1.json`"),
        "{}",
        stderr_of(&out)
    );
    let mut foreign: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("shard2.json")).unwrap()).unwrap();
    foreign["environment"]["cpu_model"] = json!("Another CPU");
    write(
        dir,
        "foreign.json",
        &serde_json::to_string(&foreign).unwrap(),
    );
    let out = kgate(dir)
        .args(["merge", "shard1.json", "foreign.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr_of(&out);
    assert!(err.contains("`foreign.json` was measured in a different environment from `shard1.json` (cpu_model: `"), "{err}");
    assert!(err.contains("vs `Another CPU`"), "{err}");
}

#[test]
fn changed_since_runs_only_affected_benchmarks_and_reports_the_rest_skipped() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    init_repo(dir);
    write(dir, "kgate.yaml", SUITE);
    write(dir, "src/alpha/k.c", "1\n");
    write(dir, "src/beta/k.c", "1\n");
    kgate(dir)
        .args(["baseline", "save", "--no-progress"])
        .assert()
        .success();
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-qm", "suite"]);
    write(dir, "src/alpha/k.c", "2\n");
    let out = kgate(dir)
        .args([
            "check",
            "--no-progress",
            "--changed-since",
            "HEAD",
            "--format",
            "json",
            "--save-results",
            "head.json",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let r = stdout_json(&out);
    let head: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("head.json")).unwrap()).unwrap();
    assert_eq!(
        names(&head),
        ["alpha", "delta"],
        "alpha changed; delta declares no paths"
    );
    assert_eq!(r["summary"]["skipped"], 3);
    assert_eq!(r["summary"]["missing"], 0);
    let beta = r["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == "beta")
        .unwrap();
    assert_eq!(beta["verdict"], "skipped");
    assert_eq!(
        beta["explanation"],
        "skipped: no file changed since HEAD matches its `paths`"
    );
    assert_eq!(beta["metrics"][0]["base"]["median"], 200.0);
    assert!(beta["metrics"][0]["head"].is_null());
    // Changing the configuration runs everything.
    write(dir, "kgate.yaml", &format!("{SUITE}\n"));
    let out = kgate(dir)
        .args([
            "check",
            "--no-progress",
            "--changed-since",
            "HEAD",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert_eq!(
        stdout_json(&out)["summary"]["skipped"],
        0,
        "{}",
        stderr_of(&out)
    );
}

#[test]
fn baseline_update_shows_the_diff_and_wants_confirmation() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    write(dir, "kgate.yaml", SUITE);
    write(
        dir,
        ".kgate/baselines/default.json",
        &results(
            "cpu",
            "a",
            "2026-01-01T00:00:00Z",
            &[
                ("alpha", &[90.0, 90.0, 90.0]),
                ("beta", &[200.0, 200.0, 200.0]),
            ],
        ),
    );
    let before = std::fs::read(dir.join(".kgate/baselines/default.json")).unwrap();
    write(
        dir,
        "new.json",
        &results(
            "cpu",
            "b",
            "2026-01-02T00:00:00Z",
            &[
                ("alpha", &[100.0, 100.0, 100.0]),
                ("beta", &[200.0, 200.0, 200.0]),
            ],
        ),
    );
    let out = kgate(dir)
        .args(["baseline", "update", "new.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "--- default (stored)\n+++ default (new)\n@@ -1,2 +1,2 @@\n-alpha / kernel_time: 90.00 ns (n = 3)\n+alpha / kernel_time: 100.0 ns (n = 3)\n beta / kernel_time: 200.0 ns (n = 3)\n"
    );
    assert!(
        stderr_of(&out).contains("rerun with --yes"),
        "{}",
        stderr_of(&out)
    );
    assert_eq!(
        std::fs::read(dir.join(".kgate/baselines/default.json")).unwrap(),
        before
    );
    kgate(dir)
        .args(["baseline", "update", "new.json", "--yes"])
        .assert()
        .success();
    // The same results (a whole number may be written `100` or `100.0`: the same value).
    let read = |name: &str| kgate::model::results::RunResults::load(&dir.join(name)).unwrap();
    assert_eq!(read(".kgate/baselines/default.json"), read("new.json"));
}

#[test]
fn check_refuses_a_foreign_baseline_reads_one_from_a_ref_and_records_history() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    init_repo(dir);
    write(dir, "kgate.yaml", SUITE);
    kgate(dir)
        .args(["baseline", "save", "--no-progress"])
        .assert()
        .success();
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-qm", "suite and baseline"]);
    // The committed baseline is fine; the work tree's copy claims another CPU.
    let path = dir.join(".kgate/baselines/default.json");
    let mut foreign: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    foreign["environment"]["cpu_model"] = json!("Some Other CPU");
    std::fs::write(&path, serde_json::to_string(&foreign).unwrap()).unwrap();

    let out = kgate(dir)
        .args(["check", "--no-progress"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr_of(&out).contains("vs `Some Other CPU`")
            || stderr_of(&out).contains("cpu_model: `Some Other CPU` vs"),
        "{}",
        stderr_of(&out)
    );

    let out = kgate(dir)
        .args([
            "check",
            "--no-progress",
            "--allow-fingerprint-mismatch",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(
        stdout_json(&out)["warnings"][0]
            .as_str()
            .unwrap()
            .contains("--allow-fingerprint-mismatch")
    );

    let out = kgate(dir)
        .args([
            "check",
            "--no-progress",
            "--baseline-ref",
            "HEAD",
            "--record",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let r = stdout_json(&out);
    assert_eq!(r["summary"]["unchanged"], 5);
    assert!(
        !r["warnings"].to_string().contains("different environments"),
        "{}",
        r["warnings"]
    );
    let keys = kgate::baseline::history::keys(dir);
    assert_eq!(keys.len(), 1);
    let series =
        kgate::baseline::history::job_summaries(dir, &keys[0], "gamma", "kernel_time").unwrap();
    assert_eq!(series.len(), 1);
    assert_eq!(series[0].summary.median, 300.0);
    assert_eq!(series[0].summary.n, 3);
}

#[test]
fn waived_regressions_are_labelled_in_the_table_and_markdown() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    write_mm_regression(dir);
    write(
        dir,
        ".kgate/waivers.yaml",
        "waivers:\n  - benchmark: mm\n    reason: \"accepted <b>trade-off</b>\"\n    expires: 2999-01-01\n",
    );
    let out = kgate(dir)
        .args(["compare", "base.json", "head.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.starts_with("PASS: 0 regressions, 0 improvements, 1 unchanged, 0 inconclusive, 1 waived of 1 benchmark"), "{table}");
    assert!(table.contains("regressed (waived)"), "{table}");
    assert!(table.contains("waived mm: kernel_time: +19.9 %"), "{table}");
    let out = kgate(dir)
        .args(["compare", "base.json", "head.json", "--format", "markdown"])
        .output()
        .unwrap();
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(
        md.contains("- **mm** waived: kernel\\_time: +19.9 %"),
        "{md}"
    );
    assert!(
        md.contains("accepted &lt;b&gt;trade-off&lt;/b&gt;"),
        "the reason is escaped: {md}"
    );
    assert!(!md.contains("<b>trade-off</b>"), "{md}");
}

/// With a stored baseline and recorded history of the same environment, `check` decides noisy
/// metrics by a prediction interval over the recorded jobs, and says so.
#[test]
fn recorded_history_feeds_the_prediction_interval_model() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        dir,
        "kgate.yaml",
        "defaults: {warmup: 0, repetitions: 5}\ngate: {threshold: 400%}\nbenchmarks:\n  - {name: a, command: [true]}\n",
    );
    kgate(dir)
        .args(["baseline", "save", "--no-progress"])
        .assert()
        .success();
    let out = kgate(dir)
        .args(["check", "--no-progress", "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(
        stdout_json(&out)["model"],
        "rank-test",
        "{}",
        stderr_of(&out)
    );
    for _ in 0..3 {
        // Recorded whatever the verdict: `true`'s wall time gates here (the model needs a
        // noisy gated metric), and a loaded machine can make one job five times slower.
        let out = kgate(dir)
            .args(["check", "--no-progress", "--record", "--format", "json"])
            .output()
            .unwrap();
        assert!(
            matches!(out.status.code(), Some(0 | 1 | 3)),
            "{}",
            stderr_of(&out)
        );
    }
    let out = kgate(dir)
        .args(["check", "--no-progress", "--format", "json"])
        .output()
        .unwrap();
    let report = stdout_json(&out);
    assert_eq!(report["model"], "prediction-interval", "{report}");
    assert_eq!(
        report["benchmarks"][0]["metrics"][0]["method"],
        "prediction-interval"
    );
    let history = &report["evidence"]["benchmarks"][0]["metrics"][0]["history"];
    assert_eq!(history.as_array().map(Vec::len), Some(3), "{report}");
}

/// A timed benchmark and one counted under callgrind: a run of either alone asks other tools
/// (valgrind) than a run of the other, which once filed each selection under its own key.
const TIMER_AND_CALLGRIND: &str = r#"defaults: {warmup: 0, repetitions: 3}
gate: {threshold: 400%}
benchmarks:
  - {name: t, command: [sh, -c, "sleep 0.01"], captures: [timer]}
  - {name: c, command: ["true"], captures: [callgrind], repetitions: 1}
"#;

/// The runner class's key of a results file's environment.
fn class_of(path: &Path) -> String {
    let r = kgate::model::results::RunResults::load(path).unwrap();
    kgate::machine::envkey::class_key(&r.environment)
}

fn history_folders(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir.join(".kgate/history"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

/// How many runs `kgate history --json` shows for a benchmark's metric.
fn runs_of(h: &Value, bench: &str, metric: &str) -> usize {
    h["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["benchmark"] == bench && m["metric"] == metric)
        .map_or(0, |m| m["runs"].as_array().unwrap().len())
}

/// The issue's reproduction: `run --record --bench c` three times, then `kgate history`, found
/// `no history for environment …` because the key held the versions of the tools the selected
/// benchmarks asked. Every selection now files its runs under the runner class's one key.
#[test]
fn history_finds_what_run_record_wrote_whichever_benchmarks_were_selected() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    write(dir, "kgate.yaml", TIMER_AND_CALLGRIND);
    let selections: [&[&str]; 5] = [&["c"], &["c"], &["c"], &["t"], &[]];
    for (i, selection) in selections.iter().enumerate() {
        let out_file = format!("run{i}.json");
        let mut args = vec!["run", "--no-progress", "--record", "-o", &out_file];
        for b in selection.iter() {
            args.extend(["--bench", b]);
        }
        let out = kgate(dir).args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr_of(&out));
        // The content hash names a record, and the start time is to the second: the same
        // counts recorded within one second would be one run recorded twice.
        std::thread::sleep(std::time::Duration::from_millis(1100));
    }
    let key = class_of(&dir.join("run0.json"));
    assert_eq!(class_of(&dir.join("run3.json")), key);
    assert_eq!(
        history_folders(dir),
        std::slice::from_ref(&key),
        "one folder for every selection"
    );

    let out = kgate(dir).args(["history", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(
        !stderr_of(&out).contains("other keys"),
        "{}",
        stderr_of(&out)
    );
    let h = stdout_json(&out);
    assert_eq!(h["key"], key.as_str());
    assert_eq!(runs_of(&h, "c", "Ir"), 4, "{h}");
    assert_eq!(runs_of(&h, "t", "wall_time"), 2, "{h}");

    // Another runner class's history beside it: `history` says which key it shows and names
    // the other.
    let mut foreign: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run4.json")).unwrap()).unwrap();
    foreign["environment"]["cpu_model"] = json!("Some Other CPU");
    write(dir, "foreign.json", &foreign.to_string());
    let other = class_of(&dir.join("foreign.json"));
    kgate(dir)
        .args(["history", "record", "foreign.json"])
        .assert()
        .success();
    let out = kgate(dir).args(["history"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(
        stderr_of(&out).contains(&format!(
            "history of `{key}` (this machine's runner class); other keys with a history: {other}"
        )),
        "{}",
        stderr_of(&out)
    );
    assert!(
        stdout_of(&out).starts_with(&format!("history of {key}: 5 runs")),
        "{}",
        stdout_of(&out)
    );
    let out = kgate(dir)
        .args(["history", "--key", "list"])
        .output()
        .unwrap();
    let mut listed = [key, other];
    listed.sort();
    assert_eq!(stdout_of(&out), listed.join("\n") + "\n");
}

/// Folders written by earlier versions, named by a key that hashed the tool versions in, are
/// read as the history of the runner class their records were measured on; a run recorded
/// there is not recorded again.
#[test]
fn history_keeps_reading_folders_named_by_earlier_keys() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let with_tools = |name: &str, cpu: &str, commit: &str, created: &str, valgrind: &str| {
        let mut r: Value = serde_json::from_str(&results(
            cpu,
            commit,
            created,
            &[("mm", &[100.0, 101.0, 99.0])],
        ))
        .unwrap();
        r["environment"]["tools"] = json!({"git": "git version 2.39.5", "valgrind": valgrind});
        write(dir, name, &r.to_string())
    };
    let old = with_tools(
        "old.json",
        "cpu A",
        "a1",
        "2026-01-01T00:00:00Z",
        "valgrind-3.19.0",
    );
    with_tools(
        "new.json",
        "cpu A",
        "a2",
        "2026-01-02T00:00:00Z",
        "valgrind-3.22.0",
    );
    with_tools(
        "b.json",
        "cpu B",
        "b1",
        "2026-01-03T00:00:00Z",
        "valgrind-3.22.0",
    );
    // As an earlier version filed `old.json`: indented, under the key with the tools in it.
    let run = kgate::model::results::RunResults::load(&old).unwrap();
    let legacy = kgate::machine::envkey::legacy_key(&run.environment);
    let class = kgate::machine::envkey::class_key(&run.environment);
    assert_ne!(legacy, class);
    let mut rec = kgate::baseline::history::HistoryRecord::from_results(&run);
    rec.baseline_key = legacy.clone();
    let path = kgate::baseline::history::key_dir(dir, &legacy).join(rec.file_name());
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, serde_json::to_string_pretty(&rec).unwrap() + "\n").unwrap();

    kgate(dir)
        .args(["history", "record", "new.json", "b.json"])
        .assert()
        .success();
    let out = kgate(dir)
        .args(["history", "record", "old.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    assert!(
        stderr_of(&out).contains("already in the history"),
        "{}",
        stderr_of(&out)
    );
    let other = class_of(&dir.join("b.json"));
    let mut expected = vec![class.clone(), legacy.clone(), other.clone()];
    expected.sort();
    assert_eq!(history_folders(dir), expected);
    let mut classes = vec![class.clone(), other.clone()];
    classes.sort();
    assert_eq!(kgate::baseline::history::keys(dir), classes);

    let series = kgate::baseline::history::job_summaries(dir, &class, "mm", "kernel_time").unwrap();
    let commits: Vec<_> = series.iter().map(|j| j.commit.clone().unwrap()).collect();
    assert_eq!(commits, ["a1", "a2"], "oldest first, across both folders");
    let out = kgate(dir)
        .args(["history", "--key", &class, "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(runs_of(&stdout_json(&out), "mm", "kernel_time"), 2);
    let err = stderr_of(&out);
    assert!(
        err.contains(&format!(
            "with the runs earlier versions filed under {legacy}"
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!("other keys with a history: {other}")),
        "{err}"
    );
    // The old folder's own name still shows that folder alone.
    let out = kgate(dir)
        .args(["history", "--key", &legacy, "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(runs_of(&stdout_json(&out), "mm", "kernel_time"), 1);
}

/// `check` feeds its prediction intervals the jobs recorded on this runner class, though they
/// ran another selection of the suite (and so asked other tools) than the check itself.
#[test]
fn check_reads_the_history_recorded_by_runs_of_another_selection() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    write(dir, "kgate.yaml", TIMER_AND_CALLGRIND);
    kgate(dir)
        .args(["baseline", "save", "--no-progress"])
        .assert()
        .success();
    for _ in 0..3 {
        kgate(dir)
            .args([
                "run",
                "--no-progress",
                "--record",
                "--bench",
                "t",
                "-o",
                "t.json",
            ])
            .assert()
            .success();
    }
    let out = kgate(dir)
        .args(["check", "--no-progress", "--format", "json"])
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1 | 3)),
        "{}",
        stderr_of(&out)
    );
    let report = stdout_json(&out);
    let t = report["evidence"]["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == "t")
        .unwrap();
    let wall = t["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "wall_time")
        .unwrap();
    assert_eq!(
        wall["history"].as_array().map(Vec::len),
        Some(3),
        "{report}"
    );
    let row = report["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == "t")
        .unwrap()["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "wall_time")
        .unwrap()
        .clone();
    assert_eq!(row["method"], "prediction-interval", "{report}");
}

/// `run --shard` balances by the durations `run --record` wrote, also when that run asked a
/// tool (valgrind) that a bare look at the machine does not.
#[test]
fn shards_are_balanced_by_durations_recorded_by_runs_that_asked_tools() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    write(
        dir,
        "kgate.yaml",
        r#"defaults: {warmup: 0, repetitions: 2}
benchmarks:
  - {name: long, command: [sh, -c, "sleep 1"], captures: [timer]}
  - {name: a, command: ["true"], captures: [timer]}
  - {name: b, command: ["true"], captures: [timer]}
  - {name: c, command: ["true"], captures: [callgrind], repetitions: 1}
"#,
    );
    kgate(dir)
        .args(["run", "--no-progress", "--record", "-o", "full.json"])
        .assert()
        .success();
    // Without durations the shards would hold two benchmarks each; with them, `long` (2 s)
    // outweighs the other three together.
    let mut shards = Vec::new();
    for i in 1..=2 {
        let out = kgate(dir)
            .args([
                "run",
                "--no-progress",
                "--repetitions",
                "1",
                "--shard",
                &format!("{i}/2"),
                "-o",
                &format!("shard{i}.json"),
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
        shards.push(names(
            &serde_json::from_str(
                &std::fs::read_to_string(dir.join(format!("shard{i}.json"))).unwrap(),
            )
            .unwrap(),
        ));
    }
    assert!(shards.contains(&vec!["long".to_string()]), "{shards:?}");
}
