//! `kgate bisect` on a repository built here: sixteen commits, one making a timed kernel 3×
//! slower and another adding 2 % more instructions to a kernel counted under callgrind, with
//! a commit between them whose build fails. Each culprit must be named, in fewer measurements
//! than a linear scan, with the broken commit skipped rather than guessed.

use std::path::Path;
use std::time::Instant;

use serde_json::Value;

use crate::common::{git, kgate, require_tool, stderr_of, write};

const CONFIG: &str = r#"version: 1
gate:
  alpha: 0.01
  threshold: 50%
benchmarks:
  # A timed kernel: process wall time of a sleep whose length is in `delay`.
  - name: timed
    command: [sh, -c, 'sleep "$(cat delay)"']
    captures: [timer]
    warmup: 1
    repetitions: {min: 6, max: 24}
  # A counted kernel: instructions inside `kernel` only, as callgrind counts them; its loop
  # count is in `loops`.
  - name: counted
    build: cc -O1 -o count count.c
    command: [./count]
    captures: [callgrind]
    valgrind: {toggle_collect: kernel}
"#;

const COUNT_C: &str = r#"#include <stdio.h>
__attribute__((noinline)) static long kernel(long n) {
    volatile long s = 0;
    for (long i = 0; i < n; i++) s += i;
    return s;
}
int main(void) {
    long n = 0;
    FILE *f = fopen("loops", "r");
    if (!f || fscanf(f, "%ld", &n) != 1) return 1;
    fclose(f);
    return kernel(n) == -1;
}
"#;

/// Which commit changes what (position after GOOD, which is commit 0).
const BROKEN: usize = 7;
const MORE_INSTRUCTIONS: usize = 10;
const SLOWER: usize = 13;
const LAST: usize = 15;

/// GOOD and fifteen commits after it; returns the hashes, oldest first.
fn repository(d: &Path) -> Vec<String> {
    git(d, &["init", "-q", "-b", "main"]);
    write(d, "kgate.yaml", CONFIG);
    write(d, "count.c", COUNT_C);
    write(d, "loops", "2000000\n");
    write(d, "delay", "0.05\n");
    write(d, "notes.txt", "history\n");
    git(d, &["add", "."]);
    git(d, &["commit", "-q", "-m", "initial kernels"]);
    let mut hashes = vec![git(d, &["rev-parse", "HEAD"])];
    for i in 1..=LAST {
        let subject = match i {
            BROKEN => {
                write(d, "count.c", &COUNT_C.replace("return s;", "return s"));
                "count.c: a typo that does not compile".to_string()
            }
            n if n == BROKEN + 1 => {
                write(d, "count.c", COUNT_C);
                "count.c: fix the typo".to_string()
            }
            MORE_INSTRUCTIONS => {
                write(d, "loops", "2040000\n");
                "counted: 2 % more iterations".to_string()
            }
            SLOWER => {
                write(d, "delay", "0.15\n");
                "timed: three times the sleep".to_string()
            }
            n => {
                let mut notes = std::fs::read_to_string(d.join("notes.txt")).unwrap();
                notes.push_str(&format!("change {n}\n"));
                write(d, "notes.txt", &notes);
                format!("notes: change {n}")
            }
        };
        git(d, &["commit", "-q", "-am", &subject]);
        hashes.push(git(d, &["rev-parse", "HEAD"]));
    }
    hashes
}

fn benchmark<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == name)
        .unwrap_or_else(|| panic!("no `{name}` in {report:#}"))
}

#[test]
#[cfg_attr(kgate_no_valgrind, ignore = "needs valgrind (Debian's valgrind)")]
fn bisect_names_each_culprit_in_fewer_measurements_than_a_linear_scan() {
    require_tool("valgrind", "valgrind");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let hashes = repository(d);
    let started = Instant::now();
    let out = kgate(d)
        .args([
            "bisect",
            "HEAD~15",
            "HEAD",
            "--no-progress",
            "--format",
            "json",
        ])
        .args(["-o", "bisect.json"])
        .output()
        .unwrap();
    let wall = started.elapsed();
    let stderr = stderr_of(&out);
    assert_eq!(out.status.code(), Some(1), "found exits 1\n{stderr}");
    let text = std::fs::read_to_string(d.join("bisect.json")).unwrap();
    let report: Value = serde_json::from_str(&text).unwrap();
    eprintln!("bisect took {wall:?}:\n{text}");

    // The report conforms to its committed schema.
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/bisect.schema.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&report)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");

    assert_eq!(report["outcome"], "found");
    assert_eq!(report["good"]["commit"], hashes[0].as_str());
    assert_eq!(report["bad"]["commit"], hashes[LAST].as_str());
    assert_eq!(report["commits"], LAST);
    for (name, culprit, subject) in [
        ("timed", SLOWER, "timed: three times the sleep"),
        ("counted", MORE_INSTRUCTIONS, "counted: 2 % more iterations"),
    ] {
        let b = benchmark(&report, name);
        assert_eq!(b["outcome"], "found", "{name}: {b:#}");
        assert_eq!(b["endpoints"]["outcome"], "bad", "{name}");
        assert_eq!(
            b["culprit"]["commit"],
            hashes[culprit].as_str(),
            "{name}: {b:#}"
        );
        assert_eq!(b["culprit"]["subject"], subject);
        assert_eq!(b["culprit"]["position"], culprit);
        let steps = b["steps"].as_array().unwrap();
        // A linear scan from GOOD measures every commit up to the culprit.
        assert!(
            steps.len() < culprit,
            "{name}: {} measurements, a linear scan takes {culprit}",
            steps.len()
        );
        assert_eq!(b["linear_steps"], culprit);
        // The culprit was measured bad and the commit before it good, with an interval.
        let at = |p: usize| steps.iter().find(|s| s["position"] == p);
        let bad = at(culprit).expect("the culprit was measured");
        assert_eq!(bad["outcome"], "bad");
        assert_eq!(bad["verdict"], "regressed");
        assert!(bad["change"].as_f64().unwrap() > 0.015, "{bad:#}");
        if let Some(good) = at(culprit - 1) {
            assert_eq!(good["outcome"], "good", "{good:#}");
        }
        assert!(
            steps
                .iter()
                .all(|s| s["outcome"] != "inconclusive" || s["position"] != culprit),
            "{steps:#?}"
        );
    }
    let timed = benchmark(&report, "timed");
    let regressed = timed["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["outcome"] == "bad")
        .unwrap();
    assert_eq!(regressed["metric"], "wall_time");
    let [lo, hi] = [0, 1].map(|i| regressed["ci"][i].as_f64().unwrap());
    // The interval excludes no change (its low end may sit below the threshold: a regression
    // needs the estimate beyond it and the interval above zero).
    assert!(lo > 0.0 && lo <= hi, "{regressed:#}");
    assert!(
        regressed["change"].as_f64().unwrap() >= 0.5,
        "{regressed:#}"
    );
    assert!(regressed["p_value"].as_f64().unwrap() < 0.01);
    let counted = benchmark(&report, "counted");
    let regressed = counted["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["outcome"] == "bad")
        .unwrap();
    assert_eq!(regressed["repetitions"], 1, "deterministic: one run a side");
    let change = regressed["change"].as_f64().unwrap();
    assert!((0.015..0.025).contains(&change), "{regressed:#}");
    // The commit that does not build was skipped, as git bisect skip, with the build's error.
    let broken = counted["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["position"] == BROKEN)
        .expect("the search lands on the broken commit first");
    assert_eq!(broken["outcome"], "skipped");
    assert!(
        broken["reason"]
            .as_str()
            .unwrap()
            .contains("build step `cc -O1 -o count count.c`"),
        "{broken:#}"
    );
    // Each commit was checked out and built once, however often it was measured.
    let measured: std::collections::BTreeSet<u64> = ["timed", "counted"]
        .iter()
        .flat_map(|n| benchmark(&report, n)["steps"].as_array().unwrap().clone())
        .map(|s| s["position"].as_u64().unwrap())
        .chain([0, LAST as u64])
        .collect();
    assert_eq!(report["builds"], measured.len());
    // The summary line names both culprits.
    assert!(stderr.contains("FOUND timed at "), "{stderr}");
    assert!(
        stderr.contains(&format!("counted at {}", &hashes[MORE_INSTRUCTIONS][..12])),
        "{stderr}"
    );
    // The worktrees are gone.
    let worktrees = git(d, &["worktree", "list"]);
    assert_eq!(worktrees.lines().count(), 1, "{worktrees}");
}

#[test]
fn a_range_without_the_regression_is_not_reproduced_and_bad_input_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    repository(d);
    // GOOD against a BAD before the slower commit: nothing to bisect.
    let out = kgate(d)
        .args([
            "bisect",
            "HEAD~15",
            "HEAD~5",
            "--bench",
            "timed",
            "--no-progress",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", stderr_of(&out));
    assert!(
        stdout.contains("not-reproduced timed: BAD against GOOD is"),
        "{stdout}"
    );
    assert!(stdout.contains("NOT REPRODUCED"), "{stdout}");
    assert!(
        stdout.contains("(1 measurement of 10 commits, 2 built"),
        "{stdout}"
    );
    // Too few repetitions to decide anything: undecided, not guessed either way.
    let out = kgate(d)
        .args([
            "bisect",
            "HEAD~15",
            "HEAD",
            "--bench",
            "timed",
            "--repetitions",
            "2",
        ])
        .args(["--no-progress", "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr_of(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["outcome"], "undecided");
    let timed = benchmark(&report, "timed");
    assert_eq!(timed["outcome"], "undecided");
    assert_eq!(timed["endpoints"]["verdict"], "inconclusive");
    assert!(timed["steps"].as_array().unwrap().is_empty());
    assert_eq!(
        report["notes"][0],
        "`timed` not bisected: BAD against GOOD stayed inconclusive"
    );
    // GOOD and BAD swapped, the same commit twice, a name that is no commit.
    for (args, says) in [
        (["HEAD", "HEAD~3"], "is not an ancestor of BAD"),
        (["HEAD", "main"], "are the same commit"),
        (["nope", "HEAD"], "`nope` does not name a commit"),
    ] {
        let out = kgate(d)
            .args(["bisect", args[0], args[1], "--no-progress"])
            .output()
            .unwrap();
        let stderr = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
    }
}

/// A benchmark left inconclusive at BAD is advised to get more repetitions under the name the
/// user gave them: `repetitions` for a number, `repetitions.max` for `{min, max}`, the flag for
/// `--repetitions`; never a key the configuration does not have.
#[test]
fn undecided_advice_names_repetitions_as_the_configuration_writes_them() {
    for (repetitions, flag, says) in [
        ("2", None, "raise `repetitions` or the threshold"),
        (
            "{min: 2, max: 2}",
            None,
            "raise `repetitions.max` or the threshold",
        ),
        (
            "{min: 2, max: 2}",
            Some("2"),
            "raise `--repetitions` or the threshold",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        git(d, &["init", "-q", "-b", "main"]);
        write(
            d,
            "kgate.yaml",
            &format!(
                "version: 1\nbenchmarks:\n  - name: quick\n    command: [\"true\"]\n    warmup: 0\n    repetitions: {repetitions}\n"
            ),
        );
        write(d, "notes.txt", "one\n");
        git(d, &["add", "."]);
        git(d, &["commit", "-q", "-m", "one"]);
        write(d, "notes.txt", "two\n");
        git(d, &["commit", "-q", "-am", "two"]);
        let mut cmd = kgate(d);
        cmd.args([
            "bisect",
            "HEAD~1",
            "HEAD",
            "--no-progress",
            "--format",
            "json",
        ]);
        if let Some(n) = flag {
            cmd.args(["--repetitions", n]);
        }
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(3), "{}", stderr_of(&out));
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        let quick = benchmark(&report, "quick");
        assert_eq!(quick["outcome"], "undecided", "{quick:#}");
        let explanation = quick["explanation"].as_str().unwrap();
        assert!(
            explanation.ends_with(says),
            "{repetitions} {flag:?}: {explanation}"
        );
    }
}

/// A bisect step whose identity digest is GOOD's is identical code: it passes without a single
/// repetition, so only the commits that change the kernel's input cost measurement time.
#[test]
fn a_step_of_identical_code_is_not_measured() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    repository(d);
    let config = CONFIG.replace(
        "    repetitions: {min: 6, max: 24}\n",
        "    repetitions: {min: 6, max: 24}\n    identity: {files: [delay]}\n",
    );
    assert_ne!(config, CONFIG);
    write(d, "kgate.yaml", &config);
    git(
        d,
        &["commit", "-q", "-am", "timed: identity is the delay file"],
    );
    let out = kgate(d)
        .args(["bisect", "HEAD~16", "HEAD", "--bench", "timed"])
        .args(["--no-progress", "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "found\n{}", stderr_of(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let timed = benchmark(&report, "timed");
    assert_eq!(timed["culprit"]["position"], SLOWER, "{timed:#}");
    let steps = timed["steps"].as_array().unwrap();
    let identical: Vec<&Value> = steps
        .iter()
        .filter(|s| s["verdict"] == "identical")
        .collect();
    // Every commit before the slower one leaves `delay` alone; the search visits some of them.
    assert!(!identical.is_empty(), "{steps:#?}");
    for s in &identical {
        assert!(s["position"].as_u64().unwrap() < SLOWER as u64, "{s:#}");
        assert_eq!(s["outcome"], "good", "{s:#}");
        assert_eq!(s["repetitions"], 0, "not measured: {s:#}");
        assert!(
            s["reason"]
                .as_str()
                .unwrap()
                .starts_with("identical code (digest "),
            "{s:#}"
        );
    }
    // The measured steps are those that change `delay`: the culprit and none before it.
    for s in steps.iter().filter(|s| s["verdict"] != "identical") {
        assert!(s["position"].as_u64().unwrap() >= SLOWER as u64, "{s:#}");
        assert!(s["repetitions"].as_u64().unwrap() >= 6, "{s:#}");
    }
}
