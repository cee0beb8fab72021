//! Counter-explained verdicts on real counters: a C program run under cachegrind, imported and
//! compared. Needs valgrind and a C compiler (`kgate_no_valgrind` from `build.rs` reports the
//! test as ignored without them; under `CI` it runs and fails instead).

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common::{kgate, stderr_of};

/// `tests/fixtures/explain/reps.c` built into `dir/reps`.
fn build_reps(dir: &Path) -> std::path::PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/explain/reps.c");
    let binary = dir.join("reps");
    let out = Command::new("cc")
        .args(["-O2", "-o"])
        .arg(&binary)
        .arg(&source)
        .output()
        .expect("cc runs (build.rs found it)");
    assert!(out.status.success(), "{}", stderr_of(&out));
    binary
}

/// Runs `reps ARGS` under cachegrind with a pinned cache geometry (32 KiB first-level caches,
/// an 8 MiB last level), writing `dir/SIDE/reps.cgout`, and imports it as `dir/SIDE.json`.
fn cachegrind(dir: &Path, binary: &Path, side: &str, args: &[&str]) {
    std::fs::create_dir_all(dir.join(side)).unwrap();
    let profile = dir.join(side).join("reps.cgout");
    let out = Command::new("valgrind")
        .args([
            "--tool=cachegrind",
            "--cache-sim=yes",
            "--I1=32768,8,64",
            "--D1=32768,8,64",
            "--LL=8388608,16,64",
        ])
        .arg(format!("--cachegrind-out-file={}", profile.display()))
        .arg(binary)
        .args(args)
        .output()
        .expect("valgrind runs (build.rs found it)");
    assert!(out.status.success(), "{}", stderr_of(&out));
    kgate(dir)
        .args(["import", "cachegrind"])
        .arg(&profile)
        .args(["-o", &format!("{side}.json")])
        .assert()
        .success();
}

/// `kgate compare BASE HEAD`: the exit code and the one benchmark's explanation.
fn explanation(dir: &Path, base: &str, head: &str) -> (Option<i32>, String) {
    let out = kgate(dir)
        .args(["compare", base, head, "--format", "json"])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", stderr_of(&out));
    });
    let b = &report["benchmarks"][0];
    assert_eq!(b["name"], "reps");
    (
        out.status.code(),
        b["explanation"].as_str().unwrap().to_string(),
    )
}

/// 10 → 11 repetitions of the same loop: Ir, D1mr and D1mw all +10 %, the D1 miss rate flat.
/// The regression is more work, not cache misses (it used to read "cache misses: more
/// accesses miss the cache"). The same work over an array that no longer fits the cache is
/// cache misses.
#[test]
#[cfg_attr(
    kgate_no_valgrind,
    ignore = "needs valgrind and a C compiler (`cc`): `apt-get install valgrind gcc`, then `touch build.rs`"
)]
fn more_repetitions_are_more_work_and_a_larger_array_is_cache_misses() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let reps = build_reps(d);
    cachegrind(d, &reps, "ten", &["10"]);
    cachegrind(d, &reps, "eleven", &["11"]);
    cachegrind(d, &reps, "fits", &["10", "16"]);

    let (code, text) = explanation(d, "ten.json", "eleven.json");
    assert_eq!(code, Some(1), "Ir +10 % is beyond its tolerance: {text}");
    assert!(
        text.ends_with(". more work: Ir +10 %, miss rates unchanged"),
        "{text}"
    );
    assert!(!text.contains("cache misses"), "{text}");

    let (code, text) = explanation(d, "fits.json", "ten.json");
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains(
            "cache misses: more accesses miss the cache; check the access pattern and the working-set size"
        ),
        "{text}"
    );
    assert!(text.contains("D1_miss_rate +"), "{text}");
    assert!(!text.contains("more work"), "{text}");
}
