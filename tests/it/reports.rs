//! Snapshot tests of every report format over one fixed, hand-built comparison that covers
//! every verdict, an explanation, counters with a utilization timeline, an artifact diff,
//! names that need escaping, and the size-limit path. Snapshots live in `tests/it/snapshots/`;
//! review changes with `cargo insta review` (CI runs with `CI=true`, so it never writes them).

use kgate::model::evidence::{
    ArtifactPair, BenchmarkEvidence, CounterPair, CounterSide, Evidence, SamplePair,
};
use kgate::model::metric::{Direction, Source};
use kgate::model::report::{BenchmarkComparison, Counts, Design, Method, MetricComparison, Report};
use kgate::model::verdict::{RunVerdict, Verdict};
use kgate::render::{self, Exporter, Format};

const NASTY: &str = "matmul|fp16 <tile=128> @team `v2`";

/// Deterministic samples around `center` with a relative spread.
fn samples(center: f64, spread: f64, n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| center * (1.0 + spread * (((i * 7) % 11) as f64 / 10.0 - 0.5)))
        .collect()
}

#[allow(clippy::too_many_arguments)]
fn metric(
    name: &str,
    unit: &str,
    source: Source,
    verdict: Verdict,
    reason: &str,
    base: &[f64],
    head: &[f64],
    stats: Option<(f64, [f64; 2], f64)>,
    mde: Option<f64>,
) -> MetricComparison {
    MetricComparison {
        name: name.into(),
        unit: unit.into(),
        source,
        direction: Direction::Lower,
        gates: source != Source::Reported,
        verdict,
        reason: reason.into(),
        method: if stats.is_some() {
            Method::RankTest
        } else {
            Method::None
        },
        threshold: 0.05,
        base: kgate::stats::summarize(base),
        head: kgate::stats::summarize(head),
        change: stats.map(|s| s.0),
        ci: stats.map(|s| s.1),
        ci_level: stats.map(|_| 0.98),
        not_gating: None,
        p_value: stats.map(|s| s.2),
        mde,
        p_regression: None,
        p_improvement: None,
        p_adjusted: None,
        equivalence_margin: None,
        equivalence_ci: None,
        waived: false,
        waiver: None,
    }
}

fn timeline(levels: &[f64], step_ns: f64) -> Vec<[f64; 2]> {
    levels
        .iter()
        .enumerate()
        .map(|(i, v)| [i as f64 * step_ns, *v])
        .collect()
}

/// The fixed comparison.
pub(crate) fn fixture() -> Report {
    let mm_base = samples(100_000.0, 0.04, 12);
    let mm_head = samples(112_000.0, 0.04, 12);
    let red_base = samples(40_000.0, 0.03, 10);
    let red_head = samples(32_000.0, 0.03, 10);
    let soft = samples(2_500_000.0, 0.02, 10);
    let soft_head = samples(2_502_000.0, 0.02, 10);
    let ln_base = samples(9_000.0, 0.3, 8);
    let ln_head = samples(9_400.0, 0.3, 8);
    let printed = samples(512.0, 0.0, 10);
    let benchmarks = vec![
        BenchmarkComparison {
            name: NASTY.into(),
            verdict: Verdict::Regressed,
            explanation: "kernel_time: +12.0 % (99 % CI +10.1 % … +14.0 %), beyond the 5 % threshold; sm_util fell while dram_read rose: the <tile> change made it memory-bound".into(),
            metrics: vec![metric(
                "kernel_time",
                "ns",
                Source::Timer,
                Verdict::Regressed,
                "+12.0 % (99 % CI +10.1 % … +14.0 %), p = 0.0001, beyond the 5 % threshold",
                &mm_base,
                &mm_head,
                Some((0.12, [0.101, 0.14], 0.0001)),
                Some(0.021),
            )],
            profile: None,
        },
        BenchmarkComparison {
            name: "reduce".into(),
            verdict: Verdict::Improved,
            explanation: "kernel_time: -20.0 % (99 % CI -22.0 % … -18.1 %)".into(),
            metrics: vec![metric(
                "kernel_time",
                "ns",
                Source::Timer,
                Verdict::Improved,
                "-20.0 % (99 % CI -22.0 % … -18.1 %), p = 0.0002",
                &red_base,
                &red_head,
                Some((-0.2, [-0.22, -0.181], 0.0002)),
                Some(0.018),
            )],
            profile: None,
        },
        BenchmarkComparison {
            name: "softmax".into(),
            verdict: Verdict::Unchanged,
            explanation: "wall_time: +0.08 %, interval inside ±5 %".into(),
            metrics: vec![
                metric(
                    "wall_time",
                    "ns",
                    Source::Timer,
                    Verdict::Unchanged,
                    "+0.08 % (99 % CI -1.2 % … +1.3 %), interval inside ±5 %",
                    &soft,
                    &soft_head,
                    Some((0.0008, [-0.012, 0.013], 0.91)),
                    None,
                ),
                metric(
                    "gflops",
                    "GB/s",
                    Source::Reported,
                    Verdict::Unchanged,
                    "source `reported` may not fail the build (gate.sources); identical",
                    &printed,
                    &printed,
                    None,
                    None,
                ),
            ],
            profile: None,
        },
        BenchmarkComparison {
            name: "layernorm".into(),
            verdict: Verdict::Inconclusive,
            explanation: "kernel_time: +4.4 % (99 % CI -9.0 % … +19.5 %) straddles the 5 % threshold".into(),
            metrics: vec![metric(
                "kernel_time",
                "ns",
                Source::Timer,
                Verdict::Inconclusive,
                "+4.4 % (99 % CI -9.0 % … +19.5 %) straddles the 5 % threshold",
                &ln_base,
                &ln_head,
                Some((0.044, [-0.09, 0.195], 0.38)),
                Some(0.16),
            )],
            profile: None,
        },
        BenchmarkComparison {
            name: "conv2d".into(),
            verdict: Verdict::New,
            explanation: "not in the baseline; this run's numbers become its reference once saved".into(),
            metrics: Vec::new(),
            profile: None,
        },
        BenchmarkComparison {
            name: "attention `flash` <v2>".into(),
            verdict: Verdict::Missing,
            explanation: "failed in the candidate: exited with status 1".into(),
            metrics: Vec::new(),
            profile: None,
        },
    ];
    let evidence = Evidence {
        benchmarks: vec![
            BenchmarkEvidence {
                name: NASTY.into(),
                metrics: vec![SamplePair {
                    name: "kernel_time".into(),
                    unit: "ns".into(),
                    base: mm_base,
                    head: mm_head,
                    history: vec![99_000.0, 100_500.0, 99_800.0, 100_200.0],
                    thinned_from: None,
                }],
                counters: vec![
                    CounterPair {
                        name: "sm_util".into(),
                        unit: "%".into(),
                        base: CounterSide {
                            timeline: timeline(&[10.0, 85.0, 92.0, 93.0, 91.0, 90.0, 40.0], 15_000.0),
                            repetition_means: vec![71.5, 72.0, 70.9],
                            thinned_from: None,
                        },
                        head: CounterSide {
                            timeline: timeline(
                                &[10.0, 55.0, 61.0, 60.0, 58.0, 62.0, 59.0, 35.0],
                                15_000.0,
                            ),
                            repetition_means: vec![50.0, 51.2, 49.5],
                            thinned_from: None,
                        },
                    },
                    CounterPair {
                        name: "dram_read|bytes".into(),
                        unit: "bytes".into(),
                        base: CounterSide {
                            timeline: Vec::new(),
                            repetition_means: vec![1.0e9, 1.0e9, 1.0e9],
                            thinned_from: None,
                        },
                        head: CounterSide {
                            timeline: Vec::new(),
                            repetition_means: vec![1.5e9, 1.5e9, 1.5e9],
                            thinned_from: None,
                        },
                    },
                ],
                artifacts: vec![ArtifactPair {
                    name: "ptx".into(),
                    path: "build/matmul.ptx".into(),
                    base: Some(
                        "// tile 64\nld.shared.f16 %h1, [%r1];\nmma.sync.aligned.m16n8k16 ...;\nst.global.f16 [%r2], %h1;\n".into(),
                    ),
                    head: Some(
                        "// tile 128 ```fence``` <script>@x</script>\nld.global.f16 %h1, [%r1];\nmma.sync.aligned.m16n8k16 ...;\nst.global.f16 [%r2], %h1;\n".into(),
                    ),
                    truncated: false,
                }],
            },
            BenchmarkEvidence {
                name: "reduce".into(),
                metrics: vec![SamplePair {
                    name: "kernel_time".into(),
                    unit: "ns".into(),
                    base: red_base,
                    head: red_head,
                    history: Vec::new(),
                    thinned_from: None,
                }],
                counters: Vec::new(),
                artifacts: vec![ArtifactPair {
                    name: "ir".into(),
                    path: "reduce.ll".into(),
                    base: Some("same\n".into()),
                    head: Some("same\n".into()),
                    truncated: false,
                }],
            },
        ],
        omitted: None,
    };
    Report {
        schema_version: kgate::model::report::REPORT_SCHEMA_VERSION,
        verdict: RunVerdict::Regressed,
        summary: Counts {
            regressed: 1,
            improved: 1,
            unchanged: 1,
            within_threshold: 0,
            inconclusive: 1,
            not_gated: 0,
            new: 1,
            missing: 1,
            skipped: 0,
            failed: 0,
            identical: 0,
            incorrect: 0,
            waived: 0,
            total: 6,
        },
        design: Design::Interleaved,
        alpha: 0.01,
        correction: Default::default(),
        looks: 1,
        cost: None,
        model: Default::default(),
        base_commit: Some("1111111111111111111111111111111111111111".into()),
        head_commit: Some("2222222222222222222222222222222222222222".into()),
        head_dirty: false,
        warnings: vec![
            "baseline and candidate ran on different environments: cpu `A` vs `B`".into(),
        ],
        benchmarks,
        evidence: Some(evidence),
    }
}

fn render(format: Format) -> String {
    render::exporter(format, false).render(&fixture())
}

#[test]
fn table_snapshot() {
    insta::assert_snapshot!("table", render(Format::Table));
}

fn table_at(width: Option<usize>, all_metrics: bool) -> String {
    render::TableExporter {
        color: false,
        width,
        all_metrics,
    }
    .render(&fixture())
}

/// At 80 and 120 columns and at an unknown width: no cell is ever split, columns are dropped
/// (and named) instead, informational rows are counted, and the verdict closes the output.
#[test]
fn table_snapshots_at_80_120_and_unknown_width() {
    for (name, width) in [
        ("table_80", Some(80)),
        ("table_120", Some(120)),
        ("table_unknown", None),
    ] {
        let text = table_at(width, false);
        insta::assert_snapshot!(name, text);
        if let Some(width) = width {
            for line in text.lines() {
                assert!(
                    line.chars().count() <= width,
                    "{name}: a line over {width}: {line}"
                );
            }
        }
        let rows = text.lines().filter(|l| l.starts_with('│')).count();
        // In table form, rows are one line each: a split cell would add a continuation line.
        assert!(
            rows == 0 || rows == 1 + 6,
            "{name}: {rows} table lines\n{text}"
        );
        assert!(text.contains("1 informational metric not shown"), "{name}");
        let first = text.lines().next().unwrap();
        assert!(
            text.ends_with(&format!("{first}\n")) || text.contains(&format!("\n{first}\n")),
            "{name}"
        );
        assert_eq!(
            text.matches(first).count(),
            2,
            "{name}: the verdict opens and closes the output"
        );
    }
    // At 80 columns the fixture's long names need the list form; at 120 the table drops what
    // it must and says so.
    let narrow = table_at(Some(80), false);
    assert!(narrow.contains("regressed: matmul|fp16"), "{narrow}");
    let wide = table_at(Some(120), false);
    assert!(wide.contains("not shown at 120 columns"), "{wide}");
    let all = table_at(None, true);
    assert!(all.contains("gflops (info)"), "{all}");
    assert!(!all.contains("not shown"), "{all}");
}

#[test]
fn table_colours_only_when_asked() {
    let plain = render(Format::Table);
    let coloured = render::exporter(Format::Table, true).render(&fixture());
    assert!(!plain.contains('\u{1b}'));
    // Red for the regression, green for the improvement.
    assert!(
        coloured.contains("\u{1b}[38;5;9m") || coloured.contains("\u{1b}[31m"),
        "{coloured}"
    );
    assert!(plain.starts_with(
        "REGRESSED: 1 regression, 1 improvement, 1 unchanged, 1 inconclusive, 1 new, 1 missing of 6 benchmarks\n"
    ));
}

#[test]
fn markdown_snapshot() {
    let text = render(Format::Markdown);
    // Repository text never reaches Markdown or HTML raw.
    assert!(!text.contains("<tile"), "unescaped name");
    assert!(!text.contains("@team"), "a mention slipped through");
    // Raw HTML from an artifact appears only inside the diff's code fence, where it is text.
    assert_eq!(text.matches("<script>").count(), 1);
    assert!(
        text.contains("\n+// tile 128 ```fence``` <script>&#64;x</script>\n")
            || text.contains("\n+// tile 128 ```fence``` <script>@x</script>\n")
    );
    assert!(text.contains("```mermaid\nxychart-beta\n"));
    // The artifact's own triple backticks cannot close the diff's fence.
    assert!(text.contains("````diff\n"));
    // An unchanged artifact shows no diff.
    assert!(!text.contains("reduce.ll"));
    insta::assert_snapshot!("markdown", text);
}

#[test]
fn json_snapshot_round_trips() {
    let text = render(Format::Json);
    // What `kgate report` reads back renders to the same JSON again.
    let back: Report = serde_json::from_str(&text).unwrap();
    assert_eq!(render::exporter(Format::Json, false).render(&back), text);
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    insta::assert_json_snapshot!("json", value);
}

#[test]
fn junit_snapshot() {
    let text = render(Format::Junit);
    assert!(text.contains(
        "<testsuites name=\"kgate\" tests=\"7\" failures=\"1\" errors=\"0\" skipped=\"2\">"
    ));
    insta::assert_snapshot!("junit", text);
}

/// The SVG structure of the HTML report: one strip plot per benchmark with samples (a circle
/// per sample, a median mark per side), one timeline per counter with readings over time (two
/// polylines), and nothing fetched from the network.
#[test]
fn html_is_self_contained_with_plots() {
    let text = render(Format::Html);
    assert!(text.starts_with("<!DOCTYPE html>"));
    assert_eq!(
        text.matches("<svg").count(),
        3,
        "two strip plots and one timeline"
    );
    assert_eq!(text.matches("<circle").count(), 12 + 12 + 10 + 10);
    assert_eq!(text.matches("stroke-width=\"2\"/>").count(), 2 + 2);
    assert!(text.matches("<polyline").count() >= 2);
    for external in ["<script", "<link", "http://", "https://", "@import", "url("] {
        let allowed = "http://www.w3.org/2000/svg";
        assert!(
            !text.replace(allowed, "").contains(external),
            "the HTML report must work offline, found {external}"
        );
    }
    assert!(!text.contains("<tile"));
    assert!(text.contains("<h2>matmul|fp16 &lt;tile=128&gt; &#64;team `v2` <span"));
    insta::assert_snapshot!("html", text);
}

#[test]
fn markdown_fits_github_limits_by_dropping_the_least_important_first() {
    let report = fixture();
    let full = render::exporter(Format::Markdown, false).render(&report);
    // Fits: nothing is cut.
    assert_eq!(
        render::render_markdown_limited(&report, full.chars().count()),
        full
    );
    // Diffs go first.
    let without_diffs = render::render_markdown_limited(&report, full.chars().count() - 1);
    assert!(without_diffs.contains("left out: artifact diffs."));
    assert!(without_diffs.contains("```mermaid"));
    // Then benchmarks, unchanged first; the regression stays to the end.
    let tight = render::render_markdown_limited(&report, 2000);
    assert!(tight.chars().count() <= 2000, "{}", tight.chars().count());
    assert!(tight.starts_with("### ❌ kgate: REGRESSED: 1 regression"));
    assert!(tight.contains("matmul&#124;fp16"));
    assert!(!tight.contains("| softmax |"));
    insta::assert_snapshot!("markdown_limited", tight);
    // A limit below the verdict itself still yields no more than the limit.
    let tiny = render::render_markdown_limited(&report, 100);
    assert!(tiny.chars().count() <= 100);
    assert!(tiny.starts_with("### ❌ kgate: REGRESSED"));
    // A job summary counts bytes: µ, … and ❌ take more than one.
    let summary =
        render::markdown_limits::render_markdown_limited_bytes(&report, 2000, "the artifacts");
    assert!(summary.len() <= 2000 && summary.contains("The full report is in the artifacts."));
}

/// A large suite: thousands of rows cut to a comment, the regression kept, the rest counted.
/// (How long the cut takes is measured by `scripts/bench_compare.py --format markdown`, not
/// asserted here.)
#[test]
fn large_suites_are_cut_to_a_comment() {
    let mut report = fixture();
    let template = report.benchmarks[2].clone();
    for i in 0..3000 {
        let mut b = template.clone();
        b.name = format!("case_{i:04}");
        report.benchmarks.push(b);
    }
    let text =
        render::render_markdown_limited(&report, render::markdown_limits::GITHUB_COMMENT_LIMIT);
    assert!(text.chars().count() <= render::markdown_limits::GITHUB_COMMENT_LIMIT);
    assert!(
        text.contains("unchanged)"),
        "the note counts what was dropped"
    );
    assert!(text.contains("matmul&#124;fp16"));
    // As many benchmarks as fit are kept: the comment is close to the limit, not a fraction.
    assert!(
        text.chars().count() > render::markdown_limits::GITHUB_COMMENT_LIMIT * 9 / 10,
        "{}",
        text.chars().count()
    );
}

#[test]
fn a_stored_report_renders_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report.json");
    std::fs::write(&path, render(Format::Json)).unwrap();
    for (format, expected) in [
        ("markdown", render(Format::Markdown)),
        ("junit", render(Format::Junit)),
        ("html", render(Format::Html)),
    ] {
        let out = assert_cmd::cargo::cargo_bin_cmd!("kgate")
            .current_dir(dir.path())
            .env("NO_COLOR", "1")
            .args(["report", "report.json", "--format", format])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        assert_eq!(String::from_utf8(out.stdout).unwrap(), expected);
    }
    let limited = assert_cmd::cargo::cargo_bin_cmd!("kgate")
        .current_dir(dir.path())
        .args([
            "report",
            "report.json",
            "--format",
            "markdown",
            "--max-chars",
            "2000",
        ])
        .output()
        .unwrap();
    assert!(String::from_utf8(limited.stdout).unwrap().chars().count() <= 2000);
    std::fs::write(dir.path().join("results.json"), "{\"schema_version\": 1}").unwrap();
    let out = assert_cmd::cargo::cargo_bin_cmd!("kgate")
        .current_dir(dir.path())
        .args(["report", "results.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("`results.json` is not a kgate JSON report")
            && err.contains("--format json -o FILE"),
        "{err}"
    );
}

/// A report of another format version is refused by its version, whether or not the rest of
/// it reads as this version's report; the version is read without building a tree of the
/// whole document (a 228 MB report took 1.28 GB to check).
#[test]
fn a_stored_report_of_another_version_is_refused_by_its_version() {
    let dir = tempfile::tempdir().unwrap();
    // `kgate ARGS` in the folder: its exit status and stderr.
    let kgate = |args: &[&str]| {
        let out = assert_cmd::cargo::cargo_bin_cmd!("kgate")
            .current_dir(dir.path())
            .env_remove("GITHUB_REPOSITORY")
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let current = render(Format::Json);
    let mut other: serde_json::Value = serde_json::from_str(&current).unwrap();
    other["schema_version"] = serde_json::json!(7);
    for (file, text) in [
        ("readable.json", other.to_string()),
        (
            "unreadable.json",
            r#"{"schema_version": 7, "verdict": 12}"#.to_string(),
        ),
    ] {
        std::fs::write(dir.path().join(file), text).unwrap();
        let (code, err) = kgate(&["report", file]);
        assert_eq!(code, Some(2), "{file}: {err}");
        assert!(
            err.contains(&format!(
                "`{file}` has report format version 7; this kgate reads version 1"
            )),
            "{file}: {err}"
        );
    }
    // `kgate comment` reads a report as `kgate report` does: not one of another version.
    let (code, err) = kgate(&["comment", "readable.json"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("has report format version 7"), "{err}");
    // Only an object has a version: an array is not a report of version 7.
    std::fs::write(dir.path().join("array.json"), "[7]").unwrap();
    let (code, err) = kgate(&["report", "array.json"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("`array.json` is not a kgate JSON report"),
        "{err}"
    );
}

/// Artifacts declared in the configuration and counters reported through the protocol travel
/// from a real run into the results, then into the report's counter table, timeline chart and
/// artifact diff.
#[test]
fn artifacts_and_counters_travel_from_the_run_into_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("kgate.yaml"),
        "version: 1\nbenchmarks:\n  - name: k\n    command: [sh, bench.sh]\n    repetitions: 3\n    warmup: 0\n    captures: [protocol]\n    metrics:\n      kernel_time: {source: timer}\n    artifacts:\n      ir: out.ll\n",
    )
    .unwrap();
    let run = |op: &str, micros: u32, util: [u32; 3], out: &str| {
        let script = format!(
            "printf 'define @f\\n  {op}\\n' > out.ll\n\
             printf '%s\\n' '{{\"metric\": \"kernel_time\", \"value\": {micros}, \"unit\": \"us\"}}' \
             '{{\"counter\": \"sm_util\", \"t_ns\": 0, \"value\": {}, \"unit\": \"%\"}}' \
             '{{\"counter\": \"sm_util\", \"t_ns\": 1000, \"value\": {}, \"unit\": \"%\"}}' \
             '{{\"counter\": \"sm_util\", \"t_ns\": 2000, \"value\": {}, \"unit\": \"%\"}}' > \"$KGATE_PROTOCOL_FILE\"\n",
            util[0], util[1], util[2]
        );
        std::fs::write(d.join("bench.sh"), script).unwrap();
        let status = assert_cmd::cargo::cargo_bin_cmd!("kgate")
            .current_dir(d)
            .env("NO_COLOR", "1")
            .args(["run", "--no-progress", "-o", out])
            .output()
            .unwrap();
        assert_eq!(status.status.code(), Some(0), "{status:?}");
    };
    run("add", 5, [10, 90, 80], "base.json");
    run("mul", 9, [10, 50, 30], "head.json");
    let head: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("head.json")).unwrap()).unwrap();
    let artifact = &head["benchmarks"][0]["artifacts"]["ir"];
    assert_eq!(artifact["text"], "define @f\n  mul\n");
    assert_eq!(artifact["path"], "out.ll");
    let out = assert_cmd::cargo::cargo_bin_cmd!("kgate")
        .current_dir(d)
        .args(["compare", "base.json", "head.json", "--format", "markdown"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    // Three repetitions cannot reach significance at α = 0.01: inconclusive, so charts show.
    assert!(text.contains("<b>k</b>: inconclusive"), "{text}");
    assert!(
        text.contains("| sm\\_util | 60.00 % | 30.00 % | -50.0 % |"),
        "{text}"
    );
    assert!(
        text.contains("title \"sm_util over the first repetition"),
        "{text}"
    );
    assert!(text.contains("x-axis \"time (µs)\" 0 --> 2\n"), "{text}");
    assert!(
        text.contains(
            "--- base/out.ll\n+++ head/out.ll\n@@ -1,2 +1,2 @@\n define @f\n-  add\n+  mul\n"
        ),
        "{text}"
    );
    // The stored report renders the same Markdown again.
    assert_cmd::cargo::cargo_bin_cmd!("kgate")
        .current_dir(d)
        .args([
            "compare",
            "base.json",
            "head.json",
            "--format",
            "json",
            "-o",
            "report.json",
        ])
        .assert()
        .code(0);
    let again = assert_cmd::cargo::cargo_bin_cmd!("kgate")
        .current_dir(d)
        .args(["report", "report.json", "--format", "markdown"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8(again.stdout).unwrap(), text);
}

/// A results file of `benches` benchmarks, one timed metric each; the first `slowed` are
/// `shift` times slower, the others measured alike on both sides.
fn results_file(path: &std::path::Path, benches: usize, samples: usize, shift: f64, slowed: usize) {
    let benchmarks: Vec<serde_json::Value> = (0..benches)
        .map(|b| {
            let factor = if b < slowed { shift } else { 1.0 };
            let values: Vec<f64> = (0..samples)
                .map(|i| 1_000.0 * factor * (1.0 + 0.001 * ((i * 7919) % 13) as f64))
                .collect();
            serde_json::json!({
                "name": format!("bench_{b}"),
                "status": "ok",
                "warmup": 0,
                "repetitions": samples,
                "metrics": [{
                    "name": "kernel_time", "unit": "ns", "source": "timer", "direction": "lower",
                    "gate": {"gates": true, "threshold": 0.05},
                    "values": values, "repetition": (0..samples).collect::<Vec<_>>()
                }],
                "provenance": {"captures": ["protocol"]}
            })
        })
        .collect();
    let doc = serde_json::json!({
        "schema_version": 1, "kgate_version": "0.1.0", "created": "2026-01-01T00:00:00Z",
        "environment": {"cpu_model": "t", "cores": 2, "arch": "x86_64", "os": "Linux",
            "kernel": "6.1", "kgate_version": "0.1.0", "git": null, "tools": {}},
        "benchmarks": benchmarks
    });
    std::fs::write(path, serde_json::to_vec(&doc).unwrap()).unwrap();
}

/// The JSON report keeps the samples of what changed and counts what it left out; the
/// unchanged benchmarks keep their rows; `--full-evidence` keeps everything.
#[test]
fn the_json_report_keeps_the_evidence_of_what_changed_and_counts_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    results_file(&d.join("base.json"), 40, 2_000, 1.0, 1);
    results_file(&d.join("head.json"), 40, 2_000, 1.5, 1);
    let compare = |extra: &[&str]| -> serde_json::Value {
        let out = crate::common::kgate(d)
            .args(["compare", "base.json", "head.json", "--format", "json"])
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(1),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let bounded = compare(&[]);
    assert_eq!(bounded["benchmarks"].as_array().unwrap().len(), 40);
    assert_eq!(bounded["benchmarks"][0]["verdict"], "regressed");
    let evidence = &bounded["evidence"];
    assert_eq!(
        evidence["omitted"]["benchmarks"], 39,
        "{}",
        evidence["omitted"]
    );
    assert_eq!(evidence["omitted"]["metrics"], 39);
    assert_eq!(evidence["omitted"]["thinned_series"], 1);
    let regressed = &evidence["benchmarks"][0];
    assert_eq!(regressed["name"], "bench_0");
    let samples = &regressed["metrics"][0];
    assert_eq!(samples["base"].as_array().unwrap().len(), 1_000);
    assert_eq!(samples["thinned_from"], serde_json::json!([2_000, 2_000]));
    assert!(
        evidence["benchmarks"][1].get("metrics").is_none(),
        "{}",
        evidence["benchmarks"][1]
    );
    // Each unchanged row still has its medians and interval.
    assert_eq!(
        bounded["benchmarks"][1]["metrics"][0]["verdict"],
        "unchanged"
    );
    assert_eq!(bounded["benchmarks"][1]["metrics"][0]["head"]["n"], 2_000);
    let full = compare(&["--full-evidence"]);
    assert!(full["evidence"].get("omitted").is_none());
    assert_eq!(
        full["evidence"]["benchmarks"][1]["metrics"][0]["base"]
            .as_array()
            .unwrap()
            .len(),
        2_000
    );
    let (small, whole) = (bounded.to_string().len(), full.to_string().len());
    assert!(small * 10 < whole, "bounded {small} bytes, full {whole}");
}

/// Past the cap on charted metrics, the rest of the regressions keep their rows and lose their
/// samples, counted.
#[test]
fn a_report_charts_at_most_its_cap_of_metrics_regressions_first() {
    let cap = kgate::model::evidence::MAX_CHARTED_METRICS;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let n = cap + 50;
    results_file(&d.join("base.json"), n, 20, 1.0, n);
    results_file(&d.join("head.json"), n, 20, 2.0, n);
    let out = crate::common::kgate(d)
        .args(["compare", "base.json", "head.json", "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["summary"]["regressed"], n);
    let evidence = &report["evidence"];
    let charted = evidence["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b.get("metrics").is_some())
        .count();
    assert_eq!(charted, cap);
    assert_eq!(evidence["omitted"]["benchmarks"], 50);
    assert_eq!(evidence["omitted"]["metrics"], 50);
    // The first benchmarks in the report's order are the ones charted.
    assert!(evidence["benchmarks"][0].get("metrics").is_some());
    assert!(evidence["benchmarks"][n - 1].get("metrics").is_none());
}

/// A comparison far larger than a comment is cut to one, and the comment is the one its stored
/// JSON report renders.
#[test]
fn a_large_comparison_is_cut_to_the_comment_its_stored_report_gives() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let n = 2_000;
    results_file(&d.join("base.json"), n, 20, 1.0, 40);
    results_file(&d.join("head.json"), n, 20, 2.0, 40);
    let run = |args: &[&str]| {
        let out = crate::common::kgate(d).args(args).output().unwrap();
        // `kgate report` renders; `kgate compare` fails on the regressions.
        let status = if args[0] == "report" { 0 } else { 1 };
        assert_eq!(
            out.status.code(),
            Some(status),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let compare = ["compare", "base.json", "head.json"];
    let streamed = run(&[&compare[..], &["--format", "markdown"]].concat());
    run(&[&compare[..], &["--format", "json", "-o", "report.json"]].concat());
    let held = run(&["report", "report.json", "--format", "markdown"]);
    assert_eq!(streamed, held);
    let limit = kgate::render::markdown_limits::GITHUB_COMMENT_LIMIT;
    assert!(streamed.chars().count() <= limit);
    assert!(streamed.chars().count() > limit * 9 / 10);
    assert!(
        streamed.contains(&format!("of {n} benchmarks (")),
        "{streamed}"
    );
    assert!(
        streamed.contains("| bench\\_39 |"),
        "the regressions are kept"
    );
    // A limit the rows could fit holds them, as before.
    let whole = run(&[&compare[..], &["--format", "markdown", "--max-chars", "0"]].concat());
    assert!(whole.contains(&format!("| bench\\_{} |", n - 1)));
}
