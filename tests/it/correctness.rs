//! Wrong answers fail the gate: a candidate that failed its correctness check (a protocol
//! `{"correct": false}` line, a CUTLASS `Disposition` other than `passed`) is `incorrect`
//! whatever its speed, the run exits 1, and every report says so first.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{
    check_against_main, committed_repository, git, kgate, numbers, stderr_of, stdout_of, write,
};

const DETAIL: &str = "max abs error 0.5 > 1e-3";

/// A protocol benchmark that reports `value` microseconds per repetition and, when `correct`
/// is given, the outcome of its correctness check.
fn reporting(value: u32, correct: Option<bool>) -> String {
    let mut script = format!(
        "echo '{{\"metric\": \"kernel_time\", \"value\": {value}, \"unit\": \"us\"}}' >> \"$KGATE_PROTOCOL_FILE\"\n"
    );
    if let Some(correct) = correct {
        script.push_str(&format!(
            "echo '{{\"correct\": {correct}, \"detail\": \"{DETAIL}\"}}' >> \"$KGATE_PROTOCOL_FILE\"\n"
        ));
    }
    script
}

const SUITE: &str = "defaults: {warmup: 0, repetitions: 8, captures: [protocol]}
benchmarks:
  - name: work
    command: [sh, bench.sh]
";

/// A repository whose commit on `main` measures 200 µs and passes its check; the work tree's
/// script measures 100 µs (twice as fast) and reports a wrong answer.
fn faster_but_wrong(d: &Path) {
    committed_repository(
        d,
        &[
            ("kgate.yaml", SUITE),
            ("bench.sh", &reporting(200, Some(true))),
        ],
    );
    write(d, "bench.sh", &reporting(100, Some(false)));
}

/// The case: faster, but wrong. `check --against` exits 1 with the verdict
/// `incorrect`, and the first line of every format says so.
#[test]
fn a_faster_candidate_with_a_wrong_answer_fails_the_gate_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    faster_but_wrong(d);
    for format in ["table", "markdown", "json", "junit", "html"] {
        let out = check_against_main(d, format);
        let stdout = stdout_of(&out);
        assert_eq!(out.status.code(), Some(1), "{format}: {}", stderr_of(&out));
        let first = stdout.lines().next().unwrap_or_default();
        match format {
            "table" => {
                assert!(
                    first.starts_with("REGRESSED: 1 incorrect, 0 regressions, 0 improvements"),
                    "{stdout}"
                );
                assert!(
                    stdout.contains(&format!(
                        "incorrect work: failed its correctness check in the candidate: {DETAIL}"
                    )),
                    "{stdout}"
                );
            }
            "markdown" => assert!(
                first.starts_with("### ❌ kgate: REGRESSED: 1 incorrect,"),
                "{stdout}"
            ),
            "html" => assert!(
                stdout.contains("<h1>kgate: REGRESSED</h1>\n<p class=\"summary\">1 incorrect,")
                    && stdout.contains("<span class=\"incorrect\">incorrect</span>"),
                "{stdout}"
            ),
            "json" => {
                let report: Value = serde_json::from_str(&stdout).unwrap();
                assert_eq!(report["verdict"], "regressed");
                assert_eq!(report["summary"]["incorrect"], 1);
                assert_eq!(report["summary"]["improved"], 0);
                let work = &report["benchmarks"][0];
                assert_eq!(work["verdict"], "incorrect");
                // Its numbers are still compared and shown: it was faster.
                assert_eq!(work["metrics"][0]["verdict"], "improved");
                assert!(
                    work["explanation"]
                        .as_str()
                        .unwrap()
                        .contains("its metrics alone say improved"),
                    "{work}"
                );
            }
            _ => assert!(
                stdout.contains("failures=\"1\"")
                    && stdout.contains("type=\"incorrect\"")
                    && stdout.contains("value=\"1 incorrect,"),
                "{stdout}"
            ),
        }
        assert!(!stdout.contains("PASS"), "{format}: {stdout}");
    }
}

/// Protocol files imported elsewhere: any repetition reporting `false` makes the benchmark
/// incorrect with the first failure's detail, and `compare` exits 1 even though it is faster.
#[test]
fn compare_of_imported_protocol_files_fails_a_wrong_candidate() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut base = Vec::new();
    let mut head = Vec::new();
    for rep in 0..5 {
        base.push(write(
            d,
            &format!("base/{rep}/work.jsonl"),
            &format!(
                "{{\"metric\": \"kernel_time\", \"value\": {}, \"unit\": \"us\"}}\n{{\"correct\": true}}\n",
                200 + rep
            ),
        ));
        // Only the third repetition is wrong; the fourth is wrong too, with another detail.
        let correct = match rep {
            2 => format!("{{\"correct\": false, \"detail\": \"{DETAIL}\"}}\n"),
            3 => "{\"correct\": false, \"detail\": \"NaN in the output\"}\n".to_string(),
            _ => "{\"correct\": true}\n".to_string(),
        };
        head.push(write(
            d,
            &format!("head/{rep}/work.jsonl"),
            &format!(
                "{{\"metric\": \"kernel_time\", \"value\": {}, \"unit\": \"us\"}}\n{correct}",
                100 + rep
            ),
        ));
    }
    let import = |files: &[PathBuf], out: &str| {
        let o = kgate(d)
            .args(["import", "protocol", "-o", out])
            .args(files)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr_of(&o));
        serde_json::from_str::<Value>(&std::fs::read_to_string(d.join(out)).unwrap()).unwrap()
    };
    let b = import(&base, "base.json");
    assert_eq!(b["benchmarks"][0]["correctness"]["passed"], true);
    let h = import(&head, "head.json");
    assert_eq!(
        h["benchmarks"][0]["correctness"],
        serde_json::json!({"passed": false, "detail": DETAIL})
    );
    let out = kgate(d)
        .args(["compare", "base.json", "head.json", "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr_of(&out));
    let report: Value = serde_json::from_str(&stdout_of(&out)).unwrap();
    assert_eq!(report["benchmarks"][0]["verdict"], "incorrect");
    assert_eq!(report["summary"]["incorrect"], 1);

    // GitHub: an error annotation, before anything else, and the comment's headline.
    write(d, "report.json", &stdout_of(&out));
    let stored = kgate::render::stored::load_report(&d.join("report.json")).unwrap();
    let lines = kgate::cli::commands::github::report_annotations(&stored, 10);
    assert!(
        lines[0].starts_with("::error title=kgate%3A work incorrect::failed its correctness check in the candidate: max abs error 0.5 > 1e-3"),
        "{lines:?}"
    );
    let body = kgate::github::body::comment_body(&stored, "default", None);
    assert!(body.contains("kgate: REGRESSED: 1 incorrect,"), "{body}");
    // A stored report's incorrect verdict is kept without a warning (its rows cannot show it).
    let mut reconciled = stored.clone();
    let found = kgate::compare::adjust::reconcile(&mut reconciled);
    assert!(found.warnings.is_empty(), "{:?}", found.warnings);
    assert_eq!(reconciled, stored);

    // A correct candidate passes (faster: improved), and a wrong baseline gates nothing.
    let out = kgate(d)
        .args(["compare", "head.json", "base.json", "--format", "json"])
        .output()
        .unwrap();
    let report: Value = serde_json::from_str(&stdout_of(&out)).unwrap();
    assert_eq!(out.status.code(), Some(1), "slower: {report}");
    assert_eq!(report["benchmarks"][0]["verdict"], "regressed");
    assert_eq!(report["summary"]["incorrect"], 0);
}

/// A failure on a side still wins: the run is an error (exit 2), headed ERROR, and the
/// incorrect benchmark is still named first.
#[test]
fn an_error_wins_over_an_incorrect_benchmark() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    git(d, &["init", "-q", "-b", "main"]);
    write(
        d,
        "kgate.yaml",
        "defaults: {warmup: 0, repetitions: 3, captures: [protocol]}
benchmarks:
  - name: work
    command: [sh, bench.sh]
  - name: broken
    command: [sh, broken.sh]
",
    );
    write(d, "bench.sh", &reporting(200, Some(true)));
    write(d, "broken.sh", &reporting(200, None));
    git(d, &["add", "-A"]);
    git(d, &["commit", "-qm", "base"]);
    write(d, "bench.sh", &reporting(200, Some(false)));
    write(d, "broken.sh", "exit 3\n");
    let out = kgate(d)
        .args(["check", "--against", "main", "--no-progress"])
        .output()
        .unwrap();
    let stdout = stdout_of(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{}", stderr_of(&out));
    assert!(
        stdout.starts_with("ERROR: 1 incorrect, 1 failed,"),
        "{stdout}"
    );
}

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cutlass/conv2d_int8.csv")
}

const FIRST_PROBLEM: &str = "conv_kind=fprop,n=8,h=56,w=56,c=64,k=256,r=1,s=1,p=56,q=56,pad_h=0,pad_w=0,stride_h=1,stride_w=1,dilation_h=1,dilation_w=1,Activation=s8:nhwc,Filter=s8:nhwc,Output=s32:nhwc,conv_mode=cross,iterator_algorithm=optimized,alpha=1,beta=0,split_k_mode=serial,split_k_slices=1,eq_gemm_provider=none";

/// `kgate import cutlass`: one benchmark per (operation, problem), the repeated pair as two
/// repetitions, the runtime in nanoseconds as a timer metric, correctness passed.
#[test]
fn cutlass_profiler_csv_imports_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = kgate(d)
        .args(["import", "cutlass", "-o", "base.json"])
        .arg(fixture())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let r: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("base.json")).unwrap()).unwrap();
    let benchmarks = r["benchmarks"].as_array().unwrap();
    assert_eq!(benchmarks.len(), 6);
    let best = format!(
        "cutlass_tensorop_s8_i16832fprop_optimized_s8_128x64_64x6_nhwc_align16/{FIRST_PROBLEM}"
    );
    let b = benchmarks
        .iter()
        .find(|b| b["name"] == best.as_str())
        .unwrap();
    assert_eq!(b["repetitions"], 2);
    assert_eq!(b["correctness"], serde_json::json!({"passed": true}));
    assert_eq!(b["parameters"]["k"], "256");
    assert_eq!(b["parameters"]["iterator_algorithm"], "optimized");
    assert!(b["parameters"].get("cta_m").is_none() && b["parameters"].get("Problem").is_none());
    let metric = |name: &str| {
        b["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name)
            .unwrap()
            .clone()
    };
    let runtime = metric("runtime");
    assert_eq!(runtime["unit"], "ns");
    assert_eq!(runtime["source"], "timer");
    assert_eq!(numbers(&runtime["values"]), [65_800.0, 66_300.0]);
    assert_eq!(
        metric("gflops")["values"],
        serde_json::json!([12493.7, 12399.5])
    );
    assert_eq!(metric("gflops")["source"], "reported");
    assert_eq!(metric("gflops")["direction"], "higher");
    assert_eq!(
        metric("bandwidth")["values"],
        serde_json::json!([415.078, 411.948])
    );

    // The same report with that kernel's second row `incorrect`: its correctness failed, and
    // compare says `incorrect` (exit 1) though its runtime is unchanged.
    let text = std::fs::read_to_string(fixture()).unwrap();
    let last = text.lines().last().unwrap();
    let wrong = text.replace(last, &last.replacen(",passed,", ",incorrect,", 1));
    assert_ne!(wrong, text);
    let path = write(d, "wrong.csv", &wrong);
    let out = kgate(d)
        .args(["import", "cutlass", "-o", "head.json"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let h: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("head.json")).unwrap()).unwrap();
    let b = h["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == best.as_str())
        .unwrap();
    assert_eq!(b["correctness"]["passed"], false);
    assert!(
        b["correctness"]["detail"]
            .as_str()
            .unwrap()
            .starts_with("CUTLASS disposition `incorrect` (line 8 of "),
        "{b}"
    );
    let out = kgate(d)
        .args(["compare", "base.json", "head.json", "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr_of(&out));
    let report: Value = serde_json::from_str(&stdout_of(&out)).unwrap();
    assert_eq!(report["summary"]["incorrect"], 1);
    let verdicts: Vec<(&str, &str)> = report["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| (b["name"].as_str().unwrap(), b["verdict"].as_str().unwrap()))
        .filter(|(_, v)| *v == "incorrect")
        .collect();
    assert_eq!(verdicts, [(best.as_str(), "incorrect")]);
}

fn kernelbench(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/kernelbench")
        .join(name)
}

/// `kgate import FORMAT FILE -o OUT` in `dir`, read back as JSON.
fn imported(dir: &Path, format: &str, file: &Path, out: &str) -> Value {
    let run = kgate(dir)
        .args(["import", format, "-o", out])
        .arg(file)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", stderr_of(&run));
    serde_json::from_str(&std::fs::read_to_string(dir.join(out)).unwrap()).unwrap()
}

fn named<'a>(results: &'a Value, name: &str) -> &'a Value {
    results["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == name)
        .unwrap_or_else(|| panic!("no benchmark `{name}`"))
}

/// KernelBench's eval_results.json: a compiled, correct sample's mean with its spread; a
/// wrong answer with KernelBench's reason; one that did not compile failed; compared, the
/// slower sample regresses (Welch's test on the summaries), the wrong one is `incorrect`, and
/// the one that did not build makes the run an error.
#[test]
fn kernelbench_eval_results_import_and_gate() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let base = imported(
        d,
        "kernelbench",
        &kernelbench("eval_base.json"),
        "base.json",
    );
    let head = imported(
        d,
        "kernelbench",
        &kernelbench("eval_head.json"),
        "head.json",
    );
    let one = named(&base, "problem_1/sample_0");
    let time = &one["metrics"][0];
    assert_eq!(time["name"], "kernel_time");
    assert_eq!(time["unit"], "ns");
    assert_eq!(numbers(&time["values"]), [2_660_000.0]);
    assert_eq!(time["spread"]["n"], 100);
    // KernelBench's population deviation (NumPy's default) as the sample deviation.
    let sd = 19_900.0 * (100.0_f64 / 99.0).sqrt();
    assert!((time["spread"]["sd"].as_f64().unwrap() - sd).abs() < 1e-6);
    assert_eq!(
        one["correctness"],
        serde_json::json!({"passed": true, "detail": "correctness_trials: (5 / 5)"})
    );
    assert_eq!(one["provenance"]["details"]["kernelbench.trials"], "100");
    assert_eq!(base["environment"]["accelerator"], "NVIDIA H100 80GB HBM3");
    let wrong = named(&head, "problem_3/sample_0");
    assert_eq!(wrong["correctness"]["passed"], false);
    assert_eq!(
        wrong["correctness"]["detail"],
        "correctness_issue: Output mismatch; max_difference: [\"0.531250\"]; correctness_trials: (0 / 5)"
    );
    assert!(wrong["metrics"].as_array().is_none_or(Vec::is_empty));
    assert!(
        wrong["provenance"]["notes"][0]
            .as_str()
            .unwrap()
            .starts_with("KernelBench did not time this sample"),
        "{wrong}"
    );
    let unbuilt = named(&head, "problem_4/sample_0");
    assert_eq!(unbuilt["status"], "failed");
    assert_eq!(unbuilt["failure"]["kind"], "build");
    assert!(
        unbuilt["failure"]["message"]
            .as_str()
            .unwrap()
            .contains("Error building extension 'matmul_cuda'"),
        "{unbuilt}"
    );

    let out = kgate(d)
        .args(["compare", "base.json", "head.json", "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    let report: Value = serde_json::from_str(&stdout_of(&out)).unwrap();
    let verdict = |name: &str| {
        named(&report, name)["verdict"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(verdict("problem_2/sample_0"), "regressed");
    assert_eq!(verdict("problem_3/sample_0"), "incorrect");
    assert_eq!(verdict("problem_4/sample_0"), "failed");
    let same = verdict("problem_1/sample_0");
    assert!(
        ["unchanged", "within-threshold"].contains(&same.as_str()),
        "{same}"
    );
    assert_eq!(report["verdict"], "error");
}

/// KernelBench's own H100 reference timings, eager PyTorch (base) against `torch.compile`
/// (head): 250 problems each, every one a mean with its spread, compared by Welch's test.
#[test]
fn kernelbench_reference_timings_compare() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let eager = imported(
        d,
        "kernelbench",
        &kernelbench("h100_modal_baseline_time_torch.json.gz"),
        "eager.json",
    );
    imported(
        d,
        "kernelbench",
        &kernelbench("h100_modal_baseline_time_torch_compile_inductor_default.json.gz"),
        "compile.json",
    );
    assert_eq!(eager["benchmarks"].as_array().unwrap().len(), 250);
    let matmul = named(&eager, "level1/1_Square_matrix_multiplication_");
    assert_eq!(numbers(&matmul["metrics"][0]["values"]), [2_660_000.0]);
    let out = kgate(d)
        .args(["compare", "eager.json", "compile.json", "--format", "json"])
        .output()
        .unwrap();
    let report: Value = serde_json::from_str(&stdout_of(&out)).unwrap();
    // Every p-value is scipy's ttest_ind_from_stats(equal_var=False) on the files' means and
    // deviations (as sample deviations) within 1.4e-12 relative; these are the decisions at
    // alpha 0.01 (BH over the 250) and the default 5 % threshold.
    let summary = &report["summary"];
    for (verdict, count) in [
        ("regressed", 25),
        ("improved", 118),
        ("unchanged", 27),
        ("within_threshold", 71),
        ("inconclusive", 9),
    ] {
        assert_eq!(summary[verdict], count, "{verdict}: {summary}");
    }
    assert_eq!(out.status.code(), Some(1), "{}", stderr_of(&out));
    let softmax = named(&report, "level1/24_LogSoftmax");
    assert_eq!(softmax["verdict"], "improved");
    let p = softmax["metrics"][0]["p_value"].as_f64().unwrap();
    // ttest_ind_from_stats(6.68, 1.43·√(100/99), 100, 8.48, 0.194·√(100/99), 100,
    // equal_var=False): 3.7615473257169366e-22, not 0.
    assert!((p / 3.7615473257169366e-22 - 1.0).abs() < 1e-9, "{p}");
    assert!(
        softmax["metrics"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("Welch's test on summaries"),
        "{softmax}"
    );
}
