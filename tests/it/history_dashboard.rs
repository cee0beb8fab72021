//! The history dashboard (`kgate history --format html`): a page built from history records
//! written with the project's own types, and from records `check --record` writes; its charts,
//! change points, verdicts, MDE bands, commit links and escaping. scripts/screenshot-history.sh
//! checks the same page in headless Chromium.

use crate::common::{self, git, stderr_of, write};

use std::path::Path;

use kgate::baseline::history::{
    HISTORY_SCHEMA_VERSION, HistoryBenchmark, HistoryMetric, HistoryRecord, key_dir,
};
use kgate::machine::fingerprint::Fingerprint;
use kgate::model::metric::Direction;
use kgate::model::verdict::Verdict;
use kgate::render::escape::escape_html;

const KEY: &str = "test-runner-key";
const REPO: &str = "https://github.com/octo-org/kernels";

/// `kgate` without the CI variables that would name a repository.
fn kgate(dir: &Path) -> assert_cmd::Command {
    let mut cmd = common::kgate(dir);
    cmd.env_remove("CI_PROJECT_URL");
    for (k, _) in std::env::vars() {
        if k.starts_with("GITHUB_") {
            cmd.env_remove(k);
        }
    }
    cmd
}

fn commit(i: usize) -> String {
    format!("{i:02x}{}", &"c0ffee".repeat(7)[..38])
}

fn metric(name: &str, unit: &str, values: &[f64], verdict: Option<Verdict>) -> HistoryMetric {
    HistoryMetric {
        name: name.into(),
        unit: unit.into(),
        direction: Direction::Lower,
        summary: kgate::stats::summarize(values).unwrap(),
        verdict,
        mde: verdict.map(|_| 0.04),
    }
}

/// Ten jobs: `matmul`'s wall time steps up by 30 % at job 6, which the gate called a
/// regression; `evil<script>` has no verdicts (recorded by `run --record`).
fn write_history(dir: &Path) {
    let env = Fingerprint::capture(dir);
    for i in 0..10 {
        let base = if i < 5 { 1.0e6 } else { 1.3e6 };
        let values: Vec<f64> = (0..5).map(|k| base + (k as f64 - 2.0) * 1e3).collect();
        let verdict = match i {
            0 => None,
            5 => Some(Verdict::Regressed),
            _ => Some(Verdict::Unchanged),
        };
        let rec = HistoryRecord {
            schema_version: HISTORY_SCHEMA_VERSION,
            created: format!("2026-11-{:02}T10:00:00Z", i + 1),
            commit: Some(commit(i)),
            dirty: false,
            baseline_key: KEY.into(),
            environment: env.clone(),
            benchmarks: vec![
                HistoryBenchmark {
                    name: "matmul".into(),
                    duration_ns: None,
                    metrics: vec![
                        metric("wall_time", "ns", &values, verdict),
                        metric("Ir", "count", &[5000.0 + i as f64], verdict),
                    ],
                },
                HistoryBenchmark {
                    name: "evil<script>alert(1)</script>".into(),
                    duration_ns: None,
                    metrics: vec![metric("kernel_time", "us", &[40.0 + i as f64], None)],
                },
            ],
        };
        let path = key_dir(dir, KEY).join(rec.file_name());
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, serde_json::to_string_pretty(&rec).unwrap()).unwrap();
    }
}

fn page(dir: &Path, extra: &[&str]) -> (String, String) {
    let mut args = vec![
        "history",
        "--key",
        KEY,
        "--format",
        "html",
        "-o",
        "site/index.html",
    ];
    args.extend_from_slice(extra);
    let out = kgate(dir).args(&args).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    (
        std::fs::read_to_string(dir.join("site/index.html")).unwrap(),
        stderr_of(&out),
    )
}

#[test]
fn the_dashboard_charts_each_metric_with_change_points_verdicts_bands_and_commit_links() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write_history(dir);
    let (html, stderr) = page(dir, &["--repo-url", REPO]);
    assert!(
        stderr.contains(&format!(
            "wrote the history of {KEY} (3 metrics) to site/index.html"
        )),
        "{stderr}"
    );
    // Not a repository: the order the jobs ran in, and the page says so.
    assert!(
        stderr.contains("note: git cannot list HEAD's history here"),
        "{stderr}"
    );
    assert!(html.contains(&escape_html(
        "Git cannot list HEAD's history here (not a repository, or no commit yet): jobs are in the order they ran"
    )));
    // One chart per benchmark and metric, nothing from elsewhere.
    assert_eq!(html.matches("<svg").count(), 3, "{html}");
    assert_eq!(html.matches("<section class=\"chart\">").count(), 3);
    for bad in ["<script", "<link", " src=", "@import", "url("] {
        assert!(!html.contains(bad), "the page holds `{bad}`");
    }
    assert!(html.contains("<h2>evil&lt;script&gt;alert(1)&lt;/script&gt; / kernel_time</h2>"));
    // Every job of every chart links to its commit: a point and a table row each.
    for i in 0..10 {
        let href = format!("href=\"{REPO}/commit/{}\"", commit(i));
        assert_eq!(html.matches(&href).count(), 6, "job {i}: {href}");
    }
    // The step at job 6 is found in the wall time, and the gate's regression there is marked.
    let matmul = &html[html.find("<h2>matmul / wall_time</h2>").unwrap()..];
    let matmul = &matmul[..matmul.find("</section>").unwrap()];
    assert!(
        matmul.contains(&format!(
            "change point at job 6 (<code>{}</code>): +30.0 %",
            &commit(5)[..12]
        )),
        "{matmul}"
    );
    assert_eq!(matmul.matches("class=\"job regressed\"").count(), 1);
    assert_eq!(matmul.matches("class=\"job unchanged\"").count(), 8);
    assert_eq!(matmul.matches("class=\"job not-compared\"").count(), 1);
    assert!(matmul.contains("<title>job 6 · "), "{matmul}");
    assert!(
        matmul.contains(" · regressed, MDE ±4.00 %</title>"),
        "{matmul}"
    );
    // The MDE band: one shaded cell per job with an MDE, in the band's colour.
    assert_eq!(
        matmul
            .to_ascii_lowercase()
            .matches("fill=\"#d5e4f0\"")
            .count(),
        9,
        "{matmul}"
    );
    // A metric without verdicts has no band and no change point.
    let evil = &html[html.find("<h2>evil&lt;").unwrap()..];
    assert!(!evil.to_ascii_lowercase().contains("fill=\"#d5e4f0\""));
    assert!(evil.contains("class=\"job not-compared\""));

    // A page charts every metric of a suite, so a chart is kept small: grid lines at the
    // labels only (the light lines between them made these charts of ten jobs 24 KB each,
    // and a page of 5,000 metrics 56 MB).
    for svg in html.split("<svg").skip(1) {
        let svg = &svg[..svg.find("</svg>").unwrap()];
        assert!(svg.len() < 16_000, "a chart of {} bytes", svg.len());
    }

    // --bench and --metric narrow the page as they narrow the text.
    let (html, _) = page(
        dir,
        &["--repo-url", REPO, "--bench", "matmul", "--metric", "Ir"],
    );
    assert_eq!(html.matches("<svg").count(), 1);
}

#[test]
fn check_record_keeps_the_verdict_and_mde_the_dashboard_shows() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        dir,
        "kgate.yaml",
        "defaults: {warmup: 0, repetitions: 5}\ngate: {threshold: 400%}\nbenchmarks:\n  - {name: a, command: [true]}\n",
    );
    git(dir, &["init", "-q"]);
    git(dir, &["add", "kgate.yaml"]);
    git(dir, &["commit", "-q", "-m", "suite"]);
    let head = git(dir, &["rev-parse", "HEAD"]);
    kgate(dir)
        .args(["baseline", "save", "--no-progress"])
        .assert()
        .success();
    // A run of `true` is timed, and a loaded machine can make it several times slower than
    // its baseline: the verdict may be a regression (exit 1) or inconclusive (3). Any verdict
    // is recorded; only an error (exit 2) fails here.
    let verdict_given = |args: &[&str]| {
        let out = kgate(dir).args(args).output().unwrap();
        assert!(
            matches!(out.status.code(), Some(0 | 1 | 3)),
            "{args:?}: {}",
            stderr_of(&out)
        );
    };
    for _ in 0..2 {
        verdict_given(&["check", "--no-progress", "--record"]);
    }
    // `kgate ci --record`, as the Pages example workflow runs it through the action.
    verdict_given(&["ci", "--no-progress", "--record", "--comment", "never"]);
    let out = kgate(dir).args(["history", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let runs = &json["metrics"][0]["runs"];
    assert_eq!(runs.as_array().map(Vec::len), Some(3), "{json}");
    for run in runs.as_array().unwrap() {
        assert_eq!(run["commit"], head.as_str());
        assert!(run["verdict"].is_string(), "{run}");
    }
    let (html, _) = page_default_key(dir);
    assert_eq!(
        html.matches("class=\"job ").count(),
        3 * json["metrics"].as_array().unwrap().len()
    );
    assert!(!html.contains("not-compared"), "{html}");
}

fn page_default_key(dir: &Path) -> (String, String) {
    let out = kgate(dir)
        .args([
            "history",
            "--format",
            "html",
            "-o",
            "site/index.html",
            "--repo-url",
            REPO,
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    (
        std::fs::read_to_string(dir.join("site/index.html")).unwrap(),
        stderr_of(&out),
    )
}

#[test]
fn commit_links_come_from_the_origin_remote_or_the_page_says_why_there_are_none() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write_history(dir);
    // Not a repository, no flag, no CI variables: no links, and both the page and stderr say so.
    let (html, stderr) = page(dir, &[]);
    assert!(
        stderr.contains("note: the repository's web address is not known"),
        "{stderr}"
    );
    assert!(html.contains("do not link to their commits (pass <code>--repo-url</code>)"));
    assert!(!html.contains("/commit/"));

    git(dir, &["init", "-q"]);
    git(
        dir,
        &[
            "remote",
            "add",
            "origin",
            "git@github.com:octo-org/kernels.git",
        ],
    );
    let (html, _) = page(dir, &[]);
    assert!(
        html.contains(&format!("href=\"{REPO}/commit/{}\"", commit(3))),
        "{html}"
    );
    // An https remote with credentials in it: the credentials never reach the page.
    git(
        dir,
        &[
            "remote",
            "set-url",
            "origin",
            "https://user:s3cret@gitlab.example.com/group/kernels.git",
        ],
    );
    let (html, _) = page(dir, &[]);
    assert!(html.contains("href=\"https://gitlab.example.com/group/kernels/commit/"));
    assert!(!html.contains("s3cret"));

    let out = kgate(dir)
        .args([
            "history",
            "--key",
            KEY,
            "--format",
            "html",
            "--repo-url",
            "git@github.com:o/r",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr_of(&out).contains("--repo-url `git@github.com:o/r` is not a web address"),
        "{}",
        stderr_of(&out)
    );

    // The CI's variables are held to what the flag is: `javascript:` goes into no `href`.
    for (vars, from) in [
        (
            &[
                ("GITHUB_SERVER_URL", "javascript:alert(document.domain)//"),
                ("GITHUB_REPOSITORY", "o/r"),
            ][..],
            "GITHUB_SERVER_URL/GITHUB_REPOSITORY `javascript:alert(document.domain)/o/r`",
        ),
        (
            &[("CI_PROJECT_URL", "javascript:alert(1)")][..],
            "CI_PROJECT_URL `javascript:alert(1)`",
        ),
        (
            &[
                ("GITHUB_SERVER_URL", "https://github.com"),
                ("GITHUB_REPOSITORY", "o/r\" onmouseover=\"alert(1)"),
            ][..],
            "GITHUB_SERVER_URL/GITHUB_REPOSITORY `https://github.com/o/r\" onmouseover=\"alert(1)`",
        ),
    ] {
        let out = kgate(dir)
            .args([
                "history", "--key", KEY, "--format", "html", "-o", "bad.html",
            ])
            .envs(vars.iter().copied())
            .output()
            .unwrap();
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains(&format!("{from} is not a web address")),
            "{err}"
        );
        assert!(!dir.join("bad.html").exists());
    }
}

#[test]
fn jobs_are_charted_in_commit_order_and_jobs_of_other_branches_are_left_out_with_a_note() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    git(dir, &["init", "-q", "-b", "main"]);
    let mut commits = Vec::new();
    for i in 0..3 {
        write(dir, "job", &i.to_string());
        git(dir, &["add", "job"]);
        git(dir, &["commit", "-q", "-m", &format!("job {i}")]);
        commits.push(git(dir, &["rev-parse", "HEAD"]));
    }
    git(dir, &["checkout", "-q", "-b", "other", &commits[0]]);
    write(dir, "job", "elsewhere");
    git(dir, &["commit", "-q", "-am", "elsewhere"]);
    let elsewhere = git(dir, &["rev-parse", "HEAD"]);
    git(dir, &["checkout", "-q", "main"]);
    // Recorded out of order: the last commit's job ran first.
    let env = Fingerprint::capture(dir);
    for (created, commit, value) in [
        ("2026-11-01T10:00:00Z", &commits[2], 30.0),
        ("2026-11-02T10:00:00Z", &commits[0], 10.0),
        ("2026-11-03T10:00:00Z", &commits[1], 20.0),
        ("2026-11-04T10:00:00Z", &elsewhere, 99.0),
    ] {
        let rec = HistoryRecord {
            schema_version: HISTORY_SCHEMA_VERSION,
            created: created.into(),
            commit: Some(commit.clone()),
            dirty: false,
            baseline_key: KEY.into(),
            environment: env.clone(),
            benchmarks: vec![HistoryBenchmark {
                name: "k".into(),
                duration_ns: None,
                metrics: vec![metric("kernel_time", "us", &[value], None)],
            }],
        };
        let path = key_dir(dir, KEY).join(rec.file_name());
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, serde_json::to_string(&rec).unwrap()).unwrap();
    }
    let (html, stderr) = page(dir, &["--repo-url", REPO]);
    let note = "1 of the 4 recorded jobs measured commits that are not on HEAD's history (another branch, or older than a shallow clone) and are left out";
    assert!(stderr.contains(&format!("note: {note}")), "{stderr}");
    assert!(html.contains(&escape_html(note)), "{html}");
    let at = |c: &str| html.find(&format!("{REPO}/commit/{c}")).unwrap();
    assert!(at(&commits[0]) < at(&commits[1]) && at(&commits[1]) < at(&commits[2]));
    assert!(!html.contains(&elsewhere));
    assert_eq!(
        html.matches("<tr><td>").count(),
        3,
        "three jobs in the table"
    );
}

#[test]
fn past_max_charts_the_largest_change_is_charted_and_the_rest_are_rows_of_a_table() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write_history(dir);
    let (html, stderr) = page(dir, &["--max-charts", "1"]);
    assert!(
        stderr.contains("note: 1 of 3 series charted, the rest summarised in a table"),
        "{stderr}"
    );
    // matmul's wall time, up 30 % at job 6, is the largest change of the three.
    assert_eq!(html.matches("<svg").count(), 1, "{html}");
    assert!(html.contains("<h2>matmul / wall_time</h2>"), "{html}");
    assert!(html.contains("1 of 3 series are charted"), "{html}");
    assert!(html.contains("<h2>Series not charted</h2>"), "{html}");
    let table = &html[html.find("Series not charted").unwrap()..];
    assert!(
        table.contains("<td class=\"l\">matmul / Ir</td><td>10</td>"),
        "{table}"
    );
    // Names from the records stay escaped in the table too.
    assert!(
        table.contains(&escape_html("evil<script>alert(1)</script> / kernel_time")),
        "{table}"
    );
    assert!(!html.contains("<script>"), "{html}");
    // 0 lifts the cap: every series charted, no table.
    let (all, _) = page(dir, &["--max-charts", "0"]);
    assert_eq!(all.matches("<svg").count(), 3);
    assert!(!all.contains("Series not charted"));
    // The flag is the page's: with the text output it is refused rather than ignored.
    let out = kgate(dir)
        .args(["history", "--key", KEY, "--max-charts", "1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    assert!(
        stderr_of(&out).contains("add --format html"),
        "{}",
        stderr_of(&out)
    );
}
