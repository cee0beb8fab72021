//! `kgate calibrate` and `kgate compare --history` end to end.

use assert_cmd::cargo::cargo_bin_cmd;
use serde_json::Value;

const CONFIG: &str = r#"
defaults: {warmup: 0, repetitions: 6, captures: [protocol]}
gate: {threshold: 5%}
benchmarks:
  - name: steady
    command: 'echo "{\"metric\": \"kernel_time\", \"value\": $((1000 + ${JOB_OFFSET:-0} + 7 * KGATE_REPETITION % 13)), \"unit\": \"ns\", \"source\": \"timer\"}" >> "$KGATE_PROTOCOL_FILE"'
"#;

#[test]
fn calibrate_reports_noise_and_suggestions_as_json() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("kgate.yaml"), CONFIG).unwrap();
    let out = cargo_bin_cmd!("kgate")
        .current_dir(dir.path())
        .env_remove("CI")
        .args(["calibrate", "--format", "json", "--no-progress"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["gated_metrics"], 1);
    assert_eq!(v["level"], 0.01);
    let row = &v["rows"][0];
    assert_eq!(row["benchmark"], "steady");
    assert_eq!(row["metric"], "kernel_time");
    assert_eq!(row["n"], 6);
    // Values 1000 + (7r mod 13) for r = 0..6: 1000, 1007, 1001, 1008, 1002, 1009 on both sides.
    let values = [1000.0f64, 1007.0, 1001.0, 1008.0, 1002.0, 1009.0];
    let mean = values.iter().sum::<f64>() / 6.0;
    let sd = (values.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / 5.0).sqrt();
    assert!((row["cv"].as_f64().unwrap() - sd / mean).abs() < 1e-12);
    // Identical sides: no change, p = 1.
    assert_eq!(row["aa_change"], 0.0);
    assert_eq!(row["aa_p_value"], 1.0);
    assert!(row["mde"].as_f64().unwrap() > 0.0);
    assert!(row["suggested_repetitions"].as_u64().unwrap() >= 2);

    let table = cargo_bin_cmd!("kgate")
        .current_dir(dir.path())
        .env_remove("CI")
        .args(["calibrate", "--no-progress"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(
        text.contains("reps for threshold") && text.contains("steady"),
        "{text}"
    );
}

#[test]
fn compare_with_history_uses_the_prediction_interval() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("kgate.yaml"), CONFIG).unwrap();
    // Three jobs whose values differ by a job offset, as separate CI jobs would.
    let run = |name: &str, offset: &str| {
        let out = cargo_bin_cmd!("kgate")
            .current_dir(dir.path())
            .env_remove("CI")
            .env("JOB_OFFSET", offset)
            .args(["run", "--no-progress", "-o", name])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    for (name, offset) in [("a.json", "0"), ("b.json", "4"), ("c.json", "2")] {
        run(name, offset);
    }
    let out = cargo_bin_cmd!("kgate")
        .current_dir(dir.path())
        .env_remove("CI")
        .args([
            "compare",
            "a.json",
            "c.json",
            "--history",
            "b.json",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["design"], "stored-baseline");
    assert_eq!(v["model"], "prediction-interval");
    let m = &v["benchmarks"][0]["metrics"][0];
    assert_eq!(m["method"], "prediction-interval");
    // Each job's summary is the median of its logs: values 1000, 1007, 1001, 1008, 1002,
    // 1009 plus the offset, so the mean of ln(1002 + o) and ln(1007 + o).
    let job = |o: f64| ((1002.0 + o).ln() + (1007.0 + o).ln()) / 2.0;
    let want = (job(2.0) - (job(0.0) + job(4.0)) / 2.0).exp_m1();
    assert!((m["change"].as_f64().unwrap() - want).abs() < 1e-12, "{m}");
    assert!(
        m["reason"].as_str().unwrap().contains("2 stored jobs"),
        "{m}"
    );
    // Right between the two stored jobs: well inside the prediction interval.
    assert!(m["p_value"].as_f64().unwrap() > 0.5, "{m}");
}
