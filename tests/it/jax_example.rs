//! The JAX examples run for real on the CPU: the jitted kernel's fast and slow variants gated
//! live (protocol times from `block_until_ready`) and offline (`kgate import xplane` on the
//! `jax.profiler` traces the runs wrote), the Pallas kernel executed in interpret mode, and the
//! TPU counter-sampling options kgate plans handed to the benchmark and turned into
//! `jax.profiler.ProfileOptions` by the example's helper.
//!
//! Tests that need jax are reported as ignored where it is not installed (build.rs sets
//! `kgate_no_jax`), and fail under `CI`, where `.ci/run` installs it.

use std::path::{Path, PathBuf};

use crate::common::{copy_tree, kgate, stderr_of, stdout_of, write};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Fails (under CI, where build.rs does not mark jax missing) when `python3` has no jax.
fn require_jax() {
    let found = std::process::Command::new("python3")
        .args([
            "-c",
            "import importlib.util, sys; sys.exit(importlib.util.find_spec('jax') is None)",
        ])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found,
        "jax is not installed for python3: `python3 -m pip install \"jax[cpu]\"` (`.ci/run` does)"
    );
}

/// `examples/jax` and `examples/pallas` copied into `dir/examples/`, as the scripts expect
/// each other; returns `dir/examples`.
fn copy_examples(dir: &Path) -> PathBuf {
    let examples = dir.join("examples");
    for name in ["jax", "pallas"] {
        std::fs::create_dir_all(examples.join(name)).unwrap();
        copy_tree(&repo().join("examples").join(name), &examples.join(name));
    }
    examples
}

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// The values of `metric` of benchmark `bench` in a results file.
fn values(results: &serde_json::Value, bench: &str, metric: &str) -> Vec<f64> {
    let b = results["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == bench)
        .unwrap_or_else(|| panic!("no benchmark `{bench}` in {results}"));
    let m = b["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == metric)
        .unwrap_or_else(|| panic!("no metric `{metric}` in {b}"));
    m["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect()
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The verdict of `metric` of `bench` in a JSON report.
fn verdict<'a>(report: &'a serde_json::Value, bench: &str, metric: &str) -> &'a str {
    let b = report["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == bench)
        .unwrap_or_else(|| panic!("no benchmark `{bench}` in {report}"));
    b["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == metric)
        .unwrap_or_else(|| panic!("no metric `{metric}` in {b}"))["verdict"]
        .as_str()
        .unwrap()
}

/// The example's own story: a baseline saved from the fast variant, the slow variant checked
/// in, `kgate check` fails on `kernel_time`; and the same two runs' `jax.profiler` traces,
/// imported with `kgate import xplane`, regress in `kgate compare` too.
#[test]
#[cfg_attr(
    kgate_no_jax,
    ignore = "needs jax for python3: `python3 -m pip install \"jax[cpu]\"`"
)]
fn the_slow_jax_variant_regresses_live_and_from_its_xplane_trace() {
    require_jax();
    let dir = tempfile::tempdir().unwrap();
    let suite = copy_examples(dir.path()).join("jax");
    let traces = dir.path().join("traces");
    let config = suite.join("kgate.yaml");

    let out = kgate(&suite)
        .args(["baseline", "save", "--no-progress"])
        .env("KGATE_TRACE_DIR", traces.join("fast"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));

    let kernel = suite.join("kernel.py");
    let text = std::fs::read_to_string(&kernel).unwrap();
    let slow = text.replace("VARIANT = \"fast\"", "VARIANT = \"slow\"");
    assert_ne!(slow, text, "kernel.py no longer selects the fast variant");
    std::fs::write(&kernel, slow).unwrap();

    let out = kgate(&suite)
        .args(["check", "--no-progress", "--format", "json"])
        .env("KGATE_TRACE_DIR", traces.join("slow"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr_of(&out));
    let report = json(&stdout_of(&out));
    assert_eq!(report["verdict"], "regressed", "{report}");
    assert_eq!(verdict(&report, "matmul_tanh", "kernel_time"), "regressed");

    // Offline: each run's profile folder, imported (every launch is annotated `matmul_tanh`).
    let mut imported = Vec::new();
    for variant in ["fast", "slow"] {
        let results = dir.path().join(format!("{variant}.json"));
        let out = kgate(dir.path())
            .arg("-c")
            .arg(&config)
            .args(["import", "xplane", "--kernel", "^matmul_tanh$", "-o"])
            .arg(&results)
            .arg(traces.join(variant))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
        let r = json(&std::fs::read_to_string(&results).unwrap());
        let times = values(&r, "matmul_tanh", "kernel_time");
        assert_eq!(times.len(), 30, "one sample per launch: {times:?}");
        assert!(r["environment"]["tools"]["jax"].is_string(), "{r}");
        imported.push((results, median(&times)));
    }
    let (fast_median, slow_median) = (imported[0].1, imported[1].1);
    assert!(
        slow_median > 2.0 * fast_median,
        "the trace shows the slow variant slower: {fast_median} ns vs {slow_median} ns"
    );
    let out = kgate(dir.path())
        .arg("-c")
        .arg(&config)
        .args(["compare", "--format", "json"])
        .arg(&imported[0].0)
        .arg(&imported[1].0)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr_of(&out));
    let report = json(&stdout_of(&out));
    assert_eq!(verdict(&report, "matmul_tanh", "kernel_time"), "regressed");
}

/// The Pallas example's kernel runs (interpret mode, on the CPU), its result checked by the
/// script and reported as the benchmark's correctness; its times are informational, so the
/// benchmark is reported as not gated.
#[test]
#[cfg_attr(
    kgate_no_jax,
    ignore = "needs jax for python3: `python3 -m pip install \"jax[cpu]\"`"
)]
fn the_pallas_kernel_runs_in_interpret_mode_and_does_not_gate() {
    require_jax();
    let dir = tempfile::tempdir().unwrap();
    let examples = copy_examples(dir.path());
    let out = kgate(dir.path())
        .arg("-c")
        .arg(examples.join("pallas/kgate.yaml"))
        .args([
            "run",
            "--no-progress",
            "--bench",
            "matmul_interpret",
            "-o",
            "r.json",
        ])
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let r = json(&std::fs::read_to_string(dir.path().join("r.json")).unwrap());
    assert_eq!(r["benchmarks"][0]["status"], "ok", "{r}");
    assert_eq!(values(&r, "matmul_interpret", "kernel_time").len(), 5);
    // Its answer, checked against jnp.dot, is reported as the benchmark's correctness.
    let correctness = &r["benchmarks"][0]["correctness"];
    assert_eq!(correctness["passed"], true, "{r}");
    assert!(
        correctness["detail"]
            .as_str()
            .is_some_and(|d| d.starts_with("max abs error ") && d.contains("<= 2 %")),
        "{r}"
    );
    let out = kgate(dir.path())
        .args(["compare", "--format", "json", "r.json", "r.json"])
        .output()
        .unwrap();
    let report = json(&stdout_of(&out));
    assert_eq!(report["benchmarks"][0]["verdict"], "not-gated", "{report}");
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
}

/// A configuration that requests TPU counters in two passes (a profile of 2 counters per pass).
const TPU_CONFIG: &str = "device: mine\nprofiles:\n  mine: {base: tpu-v7x, counters_per_pass: {value: 2, source: test}}\ndefaults: {warmup: 0, repetitions: 2, captures: [protocol]}\nbenchmarks:\n  - name: k\n    command: COMMAND\n    counters:\n      request: [mxu_busy_2, cycles, sync_wait, hbm_rd_beats]\n      interval_us: 5\n      counter_size_bits: 2\n";

/// Each repetition gets its counter pass's options, in XProf's format; the counter without a
/// TensorCore index is named in the results' provenance, and each string recorded there.
#[test]
fn each_counter_pass_gets_its_tpu_sampling_options() {
    let dir = tempfile::tempdir().unwrap();
    let command = r#"'printf "%s|%s\n" "$KGATE_COUNTER_PASS" "${KGATE_TPU_COUNTER_SAMPLING_OPTIONS-unset}" >> seen.txt; echo "{\"metric\": \"kernel_time\", \"value\": 1, \"unit\": \"ns\"}" >> "$KGATE_PROTOCOL_FILE"'"#;
    write(
        dir.path(),
        "kgate.yaml",
        &TPU_CONFIG.replace("COMMAND", command),
    );
    let out = kgate(dir.path())
        .args(["run", "--no-progress", "-o", "r.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let seen = std::fs::read_to_string(dir.path().join("seen.txt")).unwrap();
    assert_eq!(
        seen,
        "0|interval_us:5 scaling:0 counter_size_bits:2 indices:0 indices:58\n\
         1|interval_us:5 scaling:0 counter_size_bits:2 indices:105\n"
    );
    let r = json(&std::fs::read_to_string(dir.path().join("r.json")).unwrap());
    let provenance = &r["benchmarks"][0]["provenance"];
    assert_eq!(
        provenance["details"]["tpu_sampling_options.pass1"],
        "interval_us:5 scaling:0 counter_size_bits:2 indices:105"
    );
    let notes = provenance["notes"].to_string();
    assert!(
        notes.contains("`hbm_rd_beats` requested on `mine` has no TensorCore counter index"),
        "{notes}"
    );
}

/// Off a TPU the helper fails the repetition with the reason (kgate shows a benchmark's stderr
/// only when it fails), so planned counters never go missing quietly; told to go on anyway, it
/// turns the variable into `ProfileOptions.advanced_configuration`, with a note; without the
/// variable it sets no configuration.
#[test]
#[cfg_attr(
    kgate_no_jax,
    ignore = "needs jax for python3: `python3 -m pip install \"jax[cpu]\"`"
)]
fn the_helper_builds_profile_options_from_the_variable() {
    require_jax();
    let dir = tempfile::tempdir().unwrap();
    let examples = copy_examples(dir.path());
    let script = |allow: bool, seen: &str| {
        format!(
            "import json, os, sys; sys.path.insert(0, {:?}); import kgate_jax; o = kgate_jax.profile_options(allow_other_backend={}); open({seen:?}, 'a').write(json.dumps(dict(o.advanced_configuration)) + chr(10)); kgate_jax.report('kernel_time', [1])",
            examples.join("jax").display().to_string(),
            if allow { "True" } else { "False" }
        )
    };
    let config = |script: &str| {
        let command = format!("[python3, -c, {}]", serde_json::to_string(script).unwrap());
        TPU_CONFIG
            .replace("COMMAND", &command)
            .replace("repetitions: 2", "repetitions: 1")
            .replace(
                "    command:",
                "    env: {JAX_PLATFORMS: cpu, PYTHONDONTWRITEBYTECODE: \"1\"}\n    command:",
            )
    };
    let options = "interval_us:5 scaling:0 counter_size_bits:2 indices:0 indices:58";

    write(
        dir.path(),
        "kgate.yaml",
        &config(&script(false, "seen.jsonl")),
    );
    let out = kgate(dir.path())
        .args(["run", "--no-progress", "-o", "r.json"])
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("kgate planned TPU counters (KGATE_TPU_COUNTER_SAMPLING_OPTIONS={options}), but the backend is `cpu`: the TPU sampling options would sample nothing here; run on a TPU, remove `counters.request`")),
        "{err}"
    );
    assert!(!dir.path().join("seen.jsonl").exists());

    write(
        dir.path(),
        "kgate.yaml",
        &config(&script(true, "seen.jsonl")),
    );
    let out = kgate(dir.path())
        .args(["run", "--no-progress", "-o", "r.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let seen = std::fs::read_to_string(dir.path().join("seen.jsonl")).unwrap();
    assert_eq!(
        json(seen.trim()),
        serde_json::json!({
            "tpu_enable_periodic_counter_sampling": true,
            "tpu_tc_perf_counter_sampling_options": options,
        })
    );

    // Run directly, without kgate's variable: no advanced configuration, nothing said.
    let out = std::process::Command::new("python3")
        .args(["-c", &script(false, "plain.jsonl")])
        .current_dir(dir.path())
        .env("JAX_PLATFORMS", "cpu")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env_remove("KGATE_TPU_COUNTER_SAMPLING_OPTIONS")
        .env_remove("KGATE_PROTOCOL_FILE")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(
        !stderr_of(&out).contains("kgate_jax"),
        "{}",
        stderr_of(&out)
    );
    let plain = std::fs::read_to_string(dir.path().join("plain.jsonl")).unwrap();
    assert_eq!(json(plain.trim()), serde_json::json!({}));
}

/// Sampling settings that cannot work are configuration errors naming the key and the line.
#[test]
fn bad_sampling_settings_are_refused_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "interval_us: 0",
            "kgate.yaml:11: key `benchmarks[1].counters.interval_us`: XProf's periodic sampling period is a whole number of microseconds, at least 1",
        ),
        (
            "interval_us: 5\n      external_trigger: true",
            "key `benchmarks[1].counters.external_trigger`: `external_trigger: true` and `interval_us` exclude each other",
        ),
        (
            "counter_size_bits: 64",
            "for 64-bit counters write `counter_size_bits: 3`",
        ),
        (
            "interval: 5",
            "unknown field `interval` (did you mean `interval_us`?)",
        ),
        (
            "is_external_trigger: true",
            "hint: XProf's `is_external_trigger` is written `external_trigger: true` here",
        ),
    ];
    for (setting, expected) in cases {
        // The first entry's own `interval_us` is not the one the error points at.
        let config = "device: tpu-v7x\nbenchmarks:\n  - name: other\n    command: ./other\n    counters: {request: [cycles], interval_us: 3}\n  - name: k\n    command: ./k\n    counters:\n      request: [cycles]\n      mode: interval\n      SETTING\n"
            .replace("SETTING", setting);
        write(dir.path(), "kgate.yaml", &config);
        let out = kgate(dir.path()).arg("validate").output().unwrap();
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "{setting}: {err}");
        assert!(err.contains(expected), "{setting}: {err}");
    }
}

/// The example scripts are valid Python everywhere (run for real where jax is installed).
#[test]
fn the_jax_example_scripts_parse() {
    for script in [
        "examples/jax/kgate_jax.py",
        "examples/jax/kernel.py",
        "examples/jax/bench_matmul.py",
        "examples/pallas/bench_matmul.py",
    ] {
        let out = std::process::Command::new("python3")
            .args([
                "-c",
                "import ast, sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])",
            ])
            .arg(repo().join(script))
            .output()
            .expect("python3 runs");
        assert!(out.status.success(), "{script}: {}", stderr_of(&out));
    }
}
