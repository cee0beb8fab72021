//! Profile on regression: the bundled suite's matmul made naive regresses, and the report's
//! callgrind section names the function that changed and its instruction-count change, against
//! a revision (both sides profiled) and against a stored baseline (head side only, said so).

use serde_json::Value;

use crate::common::{
    copy_example_suite, git, kgate, require_tool, stderr_of, use_naive_matmul, write,
};

fn benchmark<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == name)
        .unwrap_or_else(|| panic!("no `{name}` in {report}"))
}

#[test]
#[cfg_attr(kgate_no_valgrind, ignore = "needs valgrind (Debian's valgrind)")]
fn a_regressed_matmul_names_the_naive_kernel_and_its_ir_change() {
    require_tool("valgrind", "valgrind");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    copy_example_suite(d);
    write(d, ".gitignore", "target/\n.kgate/\n");
    git(d, &["init", "-q", "-b", "main"]);
    git(d, &["add", "-A"]);
    git(d, &["commit", "-q", "-m", "suite"]);
    let bench = ["--no-progress", "--bench", "matmul_callgrind"];
    kgate(d)
        .args(["baseline", "save"])
        .args(bench)
        .assert()
        .success();
    use_naive_matmul(d);

    // Against the stored baseline: the base side cannot be re-run, so only the head side is
    // profiled, and the profile says so.
    let out = kgate(d)
        .args(["check", "--profile-regressions", "--format", "json"])
        .args(bench)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr_of(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let p = &benchmark(&report, "matmul_callgrind")["profile"];
    assert_eq!(p["tool"], "callgrind", "{p}");
    assert_eq!(p["sides"], serde_json::json!(["head"]), "{p}");
    assert!(
        p["notes"][0].as_str().unwrap().contains("stored baseline"),
        "{p}"
    );
    let top = &p["functions"][0];
    assert_eq!(
        top["function"], "kgate_example_kernels::matmul::naive",
        "{p}"
    );
    assert!(
        top.get("self_ir_change").is_none(),
        "one side: no change: {p}"
    );

    // Against the committed (blocked) revision: both sides, ranked by change.
    let out = kgate(d)
        .args(["check", "--against", "HEAD", "--profile-regressions"])
        .args(["--format", "json", "-o", "report.json"])
        .args(bench)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr_of(&out));
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("report.json")).unwrap()).unwrap();
    let b = benchmark(&report, "matmul_callgrind");
    assert_eq!(b["verdict"], "regressed");
    let p = &b["profile"];
    assert_eq!(p["sides"], serde_json::json!(["base", "head"]), "{p}");
    assert!(p.get("notes").is_none(), "nothing skipped: {p}");
    let functions = p["functions"].as_array().unwrap();
    let naive = &functions[0];
    assert_eq!(
        naive["function"], "kgate_example_kernels::matmul::naive",
        "{p}"
    );
    // Only the head runs the naive kernel: its whole count is the change.
    assert!(naive.get("base").is_none(), "{p}");
    let head_ir = naive["head"]["self_ir"].as_i64().unwrap();
    assert!(head_ir > 1_000_000, "{p}");
    assert_eq!(naive["self_ir_change"].as_i64(), Some(head_ir), "{p}");
    // Debug line tables: the file (relative to the tree, so both sides meet) and a line.
    assert_eq!(naive["file"], "examples/kernels/src/matmul.rs", "{p}");
    assert!(naive["line"].as_u64().is_some_and(|l| l > 0), "{p}");
    assert!(naive["head"]["self_d1_misses"].as_i64().unwrap() > 0, "{p}");
    // The blocked kernel ran on the base side only: its count went away.
    let blocked = functions
        .iter()
        .find(|f| f["function"] == "kgate_example_kernels::matmul::blocked")
        .unwrap_or_else(|| panic!("{p}"));
    let base_ir = blocked["base"]["self_ir"].as_i64().unwrap();
    assert_eq!(blocked["self_ir_change"].as_i64(), Some(-base_ir), "{p}");
    // Trading the blocked kernel for the naive one is the gated Ir change, within what the
    // rest of the program (allocation, set-up) moved.
    let gated = b["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "Ir")
        .unwrap();
    let gated_change =
        gated["head"]["median"].as_f64().unwrap() - gated["base"]["median"].as_f64().unwrap();
    let traded = (head_ir - base_ir) as f64;
    assert!(
        (traded - gated_change).abs() < 0.01 * gated_change,
        "naive − blocked {traded} against the gated change {gated_change}: {p}"
    );
    // A file outside the tree keeps its path on both sides: the two sides' glibc meet.
    assert!(
        !functions.iter().any(|f| f["function"] == "malloc"),
        "malloc did the same on both sides: {p}"
    );

    // The Markdown comment folds the profile; the table gives one line.
    let md = kgate(d)
        .args(["report", "report.json", "--format", "markdown"])
        .output()
        .unwrap();
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(
        md.contains("<details><summary><b>matmul_callgrind</b>: profile (callgrind, base and head"),
        "{md}"
    );
    assert!(
        md.contains("| kgate\\_example\\_kernels::matmul::naive | examples/kernels/src/matmul.rs:"),
        "{md}"
    );
    // Cut to a comment limit, the profiles go after the charts and before any benchmark.
    let mut bare = report.clone();
    bare.as_object_mut().unwrap().remove("evidence");
    for b in bare["benchmarks"].as_array_mut().unwrap() {
        b.as_object_mut().unwrap().remove("profile");
    }
    write(d, "bare.json", &bare.to_string());
    let bare_md = kgate(d)
        .args([
            "report",
            "bare.json",
            "--format",
            "markdown",
            "--max-chars",
            "0",
        ])
        .output()
        .unwrap();
    let limit = String::from_utf8_lossy(&bare_md.stdout).chars().count() + 400;
    let cut = kgate(d)
        .args(["report", "report.json", "--format", "markdown"])
        .args(["--max-chars", &limit.to_string()])
        .output()
        .unwrap();
    let cut = String::from_utf8_lossy(&cut.stdout);
    assert!(
        cut.contains("left out: charts and counter tables; profiles (the JSON report has them)"),
        "{cut}"
    );
    assert!(!cut.contains("profile (callgrind"), "{cut}");
    assert!(cut.contains("matmul\\_callgrind"), "{cut}");
    let table = kgate(d).args(["report", "report.json"]).output().unwrap();
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(
        table.lines().any(|l| l.starts_with(
            "  profile (callgrind, base and head): top change kgate_example_kernels::matmul::naive self Ir +"
        )),
        "{table}"
    );
}

#[test]
fn a_misspelt_on_regression_names_the_key_and_the_words() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(
        d,
        "kgate.yaml",
        "gate:\n  on_regression: profil\nbenchmarks:\n  - name: a\n    command: [\"true\"]\n",
    );
    let out = kgate(d).arg("validate").output().unwrap();
    assert_ne!(out.status.code(), Some(0));
    let err = stderr_of(&out);
    assert!(err.contains("gate.on_regression"), "{err}");
    assert!(err.contains("`profile`"), "{err}");
    write(
        d,
        "kgate.yaml",
        "gate:\n  profile_budget: 5\nbenchmarks:\n  - name: a\n    command: [\"true\"]\n",
    );
    let err = stderr_of(&kgate(d).arg("validate").output().unwrap());
    assert!(
        err.contains("profile_budget") && err.contains("`5m`"),
        "{err}"
    );
}
