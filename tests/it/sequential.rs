//! Adaptive repetitions end to end (issue #57, part 2): `kgate check --against` in a git
//! repository whose protocol benchmarks print seeded noisy numbers, one alike on both sides
//! (A/A) and one 3 % slower in the work tree. The A/A benchmark stops well before `max` with a
//! passing verdict, the slow one is caught early, and the report states the repetitions each
//! used and what the run cost against a fixed plan at `max`.

use std::path::Path;

use kgate::stats::inference::Xorshift;
use serde_json::Value;

use crate::common::{check_against_main, committed_repository, stderr_of, stdout_of, write};

const MAX: usize = 40;

/// `bench.sh NAME` prints repetition r's value: 100 × scale_NAME × line r + 1 of noise_NAME.
const BENCH: &str = r#"awk -v r="$KGATE_REPETITION" -v s="$(cat scale_$1.txt)" 'NR == r + 1 { printf "{\"metric\": \"kernel_time\", \"value\": %.6f, \"unit\": \"us\", \"source\": \"timer\"}\n", 100 * s * $1 }' noise_$1.txt >> "$KGATE_PROTOCOL_FILE"
"#;

const CONFIG: &str = "defaults: {warmup: 0, repetitions: {min: 10, max: 40}, captures: [protocol]}
gate: {threshold: 1%}
benchmarks:
  - name: same
    command: [sh, bench.sh, same]
    metrics:
      kernel_time: {direction: lower, source: timer}
  - name: slower
    command: [sh, bench.sh, slower]
    metrics:
      kernel_time: {direction: lower, source: timer}
";

/// Multipliers with 1 % lognormal noise, one a line.
fn noise(seed: u64) -> String {
    let mut rng = Xorshift::new(seed);
    let sigma = (1.0f64 + 0.01 * 0.01).ln().sqrt();
    (0..MAX)
        .map(|_| format!("{:.6}\n", (sigma * rng.normal()).exp()))
        .collect()
}

/// The base commit, and a work tree with fresh noise on both benchmarks and `slower` 3 %
/// slower.
fn repository(dir: &Path) {
    let (same, slower) = (noise(11), noise(12));
    committed_repository(
        dir,
        &[
            ("kgate.yaml", CONFIG),
            ("bench.sh", BENCH),
            ("noise_same.txt", &same),
            ("noise_slower.txt", &slower),
            ("scale_same.txt", "1.0\n"),
            ("scale_slower.txt", "1.0\n"),
        ],
    );
    write(dir, "noise_same.txt", &noise(21));
    write(dir, "noise_slower.txt", &noise(22));
    write(dir, "scale_slower.txt", "1.03\n");
}

#[test]
fn an_aa_benchmark_stops_early_and_a_slowdown_is_caught_early() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    repository(d);
    let out = check_against_main(d, "json");
    let report: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr_of(&out)));
    assert_eq!(out.status.code(), Some(1), "{report}");
    let bench = |name: &str| {
        report["benchmarks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["name"] == name)
            .unwrap()
            .clone()
    };
    let n = |b: &Value| b["metrics"][0]["head"]["n"].as_u64().unwrap();
    let same = bench("same");
    let verdict = same["verdict"].as_str().unwrap();
    assert!(
        verdict == "unchanged" || verdict == "within-threshold",
        "{same}"
    );
    assert!(n(&same) < MAX as u64, "{same}");
    assert_eq!(
        same["metrics"][0]["base"]["n"],
        same["metrics"][0]["head"]["n"]
    );
    let slower = bench("slower");
    assert_eq!(slower["verdict"], "regressed", "{slower}");
    assert!(n(&slower) <= 14, "{slower}");
    // The run's cost against a fixed plan at `max`: 2 sides × 2 benchmarks × 40.
    let cost = &report["cost"];
    assert_eq!(cost["fixed_repetitions"], 4 * MAX as u64, "{report}");
    assert_eq!(
        cost["repetitions"].as_u64().unwrap(),
        2 * (n(&same) + n(&slower)),
        "{report}"
    );
    let (spent, fixed) = (
        cost["seconds"].as_f64().unwrap(),
        cost["fixed_seconds"].as_f64().unwrap(),
    );
    assert!(spent > 0.0 && fixed > spent, "{cost}");
    assert_eq!(report["looks"], 16);
    eprintln!(
        "same: {verdict} at n = {}; slower: regressed at n = {}; {}",
        n(&same),
        n(&slower),
        cost
    );
    // The table and the Markdown say so under the verdict, and each row its repetitions.
    for format in ["table", "markdown"] {
        let out = check_against_main(d, format);
        let text = stdout_of(&out);
        assert_eq!(out.status.code(), Some(1), "{text}");
        assert!(
            text.contains("a fixed plan at max would run"),
            "{format}: {text}"
        );
        assert!(
            text.contains(&format!("(n={})", n(&same))),
            "{format}: {text}"
        );
    }
}
