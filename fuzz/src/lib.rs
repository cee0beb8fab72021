//! The entry points the fuzz targets drive, one per parser: each import format through its
//! file reader, the protocol line, the configuration loader, the perf and Valgrind output
//! parsers, a results file, `kgate compare` of two, a stored report, and a stored report as
//! `kgate comment` posts it. They are plain functions so that the integration tests replay
//! every input kept in `fuzz/regressions/` (and the seeds of the last three) through the same
//! code without libFuzzer.
//!
//! What each checks beyond "no panic": an import that succeeds writes a results file that reads
//! back (no `NaN` or infinity turned into `null`, nothing kgate cannot load again); a results
//! file read a benchmark at a time gives what its whole text does; two compared a benchmark at
//! a time give the report, in every format, of the two loaded whole; a stored report renders
//! within its limits, with no script in its page; `kgate comment`'s comment keeps its marker
//! first and alone, and its check run never passes a regressed or failed row.

use std::io::Write;
use std::path::PathBuf;

use kgate::import::{self, ImportContext, Policies};
use kgate::model::results::RunResults;
use kgate::plan::MetricPolicy;
use kgate::render;

/// Every import format with the file name its inputs are given (some formats look at the
/// name: a gzip suffix, Criterion's `estimates.json`).
pub const IMPORT_TARGETS: &[(&str, &str)] = &[
    ("protocol", "input.jsonl"),
    ("ncu", "input.csv"),
    ("rocprof", "results.csv"),
    ("chrome-trace", "input.trace.json"),
    ("xplane", "host.xplane.pb"),
    ("proton", "input.hatchet"),
    ("gbench", "input.json"),
    ("nvbench", "input.json"),
    ("kernelbench", "eval_results.json"),
    ("cutlass", "input.csv"),
    ("pytest-benchmark", "input.json"),
    ("hyperfine", "input.json"),
    ("criterion", "estimates.json"),
    ("perf-stat", "perf.txt"),
    ("callgrind", "callgrind.out"),
    ("cachegrind", "cachegrind.out"),
];

thread_local! {
    static SCRATCH: tempfile::TempDir = tempfile::tempdir().expect("a scratch folder");
}

/// Imports `data` as one file of `format`; panics (a finding) if the import panics or if
/// results it accepted do not read back.
pub fn import_bytes(format: &str, data: &[u8]) {
    let (_, file_name) = IMPORT_TARGETS
        .iter()
        .find(|(name, _)| *name == format)
        .unwrap_or_else(|| panic!("no import target `{format}`"));
    let path: PathBuf = SCRATCH.with(|d| d.path().join(file_name));
    {
        let mut file = std::fs::File::create(&path).expect("a scratch file");
        file.write_all(data).expect("writing the scratch file");
    }
    let importer = import::importer(format).expect("a registered format");
    let ctx = ImportContext::new(Policies::new(
        Default::default(),
        MetricPolicy::permissive(0.05),
    ));
    let Ok(results) = importer.import(std::slice::from_ref(&path), &ctx) else {
        return;
    };
    // Written as `kgate import` writes it, it reads back as the results it was written from.
    // A number that is not finite (`1e999` in a cell, or a unit's factor overflowing it) is
    // refused when the results are written, naming where it is: such results were never
    // accepted, and the write must have failed.
    let written = SCRATCH.with(|d| d.path().join("results.json"));
    let saved = results.save_as(
        &written,
        kgate::store::fsutil::Overwrite::Allow,
        kgate::store::JsonLayout::Compact,
    );
    match saved {
        Ok(()) => {
            round_trip(&results);
            let loaded = RunResults::load(&written)
                .unwrap_or_else(|e| panic!("written results do not read back: {e}"));
            let whole = RunResults::parse(&results.to_json(), std::path::Path::new("r.json"))
                .expect("read back above");
            assert_eq!(
                loaded.benchmarks, whole.benchmarks,
                "written results differ"
            );
        }
        Err(e) => assert!(
            results.non_finite().is_some(),
            "results were not written: {e}"
        ),
    }
}

/// What kgate writes must read back, through the reader every command uses.
fn round_trip(results: &RunResults) {
    let text = results.to_json();
    if let Err(e) = RunResults::parse(&text, std::path::Path::new("results.json")) {
        panic!("accepted results do not read back: {e}");
    }
}

/// A results file as `compare`, `baseline` and `history` read it (committed baselines and
/// files from other revisions are inputs too): any version, damaged series. Loaded from a file
/// (a benchmark at a time) it gives what its whole text parses to, the same results or the
/// same error; what it accepts must write and read back the same.
pub fn results(data: &[u8]) {
    let path = SCRATCH.with(|d| d.path().join("results.json"));
    std::fs::write(&path, data).expect("the scratch folder is writable");
    let loaded = RunResults::load(&path);
    let Ok(text) = std::str::from_utf8(data) else {
        assert!(loaded.is_err(), "a file that is not UTF-8 was loaded");
        return;
    };
    let parsed = RunResults::parse(text, &path);
    match (&loaded, &parsed) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "loaded and parsed results differ"),
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "different errors"),
        _ => panic!(
            "loaded {:?}, parsed {:?}",
            loaded.as_ref().err().map(|e| e.to_string()),
            parsed.as_ref().err().map(|e| e.to_string())
        ),
    }
    if let Ok(results) = parsed
        && results.non_finite().is_none()
    {
        let again = RunResults::parse(&results.to_json(), std::path::Path::new("again.json"))
            .unwrap_or_else(|e| panic!("accepted results do not read back: {e}"));
        assert_eq!(again, results, "results changed on a round trip");
    }
}

/// Two results files as `kgate compare` reads them: `data` up to its first NUL byte is the
/// baseline, the rest the candidate (without a NUL, the same file on both sides). Files that
/// load compare into a report that writes as JSON and reads back the same, renders in every
/// format, and cuts to a comment within each limit.
pub fn compare(data: &[u8]) {
    compare_checked(data);
}

/// What [`compare_checked`] checked: whether both files loaded (and so were compared), and
/// how many Markdown comments were cut (the others fit whole).
#[derive(Debug, Default, PartialEq)]
pub struct Compared {
    pub loaded: bool,
    pub markdown_cuts: usize,
}

/// [`compare`], saying what it checked.
pub fn compare_checked(data: &[u8]) -> Compared {
    use kgate::compare::{self, ComparePolicy};
    let (base, head) = match data.iter().position(|&b| b == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, data),
    };
    let (base_path, head_path) =
        SCRATCH.with(|d| (d.path().join("base.json"), d.path().join("head.json")));
    std::fs::write(&base_path, base).expect("the scratch folder is writable");
    std::fs::write(&head_path, head).expect("the scratch folder is writable");
    let (Ok(base), Ok(head)) = (RunResults::load(&base_path), RunResults::load(&head_path)) else {
        return Compared::default();
    };
    let policy = ComparePolicy::default();
    let mut report = compare::compare(&base, &head, &policy, kgate::model::report::Design::Files);
    report.attach_bounded_evidence(Some(&base), &head);
    let json = serde_json::to_string(&report).expect("a report writes as JSON");
    let again: kgate::model::report::Report =
        serde_json::from_str(&json).expect("a written report reads back");
    assert_eq!(
        serde_json::to_string(&again).expect("a report writes as JSON"),
        json,
        "the report changed on a round trip"
    );
    formats(&report);
    let mut compared = Compared {
        loaded: true,
        markdown_cuts: 0,
    };
    let whole = render::Exporter::render(&render::MarkdownExporter, &report);
    for max_chars in [200, 500, 1_000, 4_000, 65_536] {
        let cut = render::markdown_limits::render_markdown_limited(&report, max_chars);
        assert!(
            cut.chars().count() <= max_chars,
            "Markdown cut to {max_chars} characters is longer"
        );
        compared.markdown_cuts += usize::from(cut != whole);
    }
    compared
}

/// A stored JSON report as `kgate report` and `kgate comment` read it (one may come from
/// another job, a pull request's own among them). One that loads renders in every format;
/// the HTML page holds no script or frame, the table and the comment no control character,
/// and JUnit no character XML forbids, whatever the report's text; the sticky comment and
/// the Markdown cut to a comment's size stay within their limits; written again as JSON, it
/// reads back the same.
pub fn report(data: &[u8]) {
    render_stored(data);
}

/// [`report`], saying whether the report loaded (and so was checked).
pub fn render_stored(data: &[u8]) -> bool {
    let path = SCRATCH.with(|d| d.path().join("report.json"));
    std::fs::write(&path, data).expect("the scratch folder is writable");
    let Ok(report) = render::stored::load_report(&path) else {
        return false;
    };
    let written = formats(&report);
    // The page has no link, image or script of its own: any is the report's text unescaped.
    let html = written.html.to_ascii_lowercase();
    for tag in ["<script", "<iframe", "<object", "<embed", "<img", "<a "] {
        assert!(!html.contains(tag), "the HTML page holds `{tag}`");
    }
    // No control character of the report's text reaches a terminal (the table, its colours
    // off) or the comment, and none that XML forbids reaches JUnit (CI readers refuse it).
    let controls = |text: &str, allowed: &[char]| {
        text.chars()
            .find(|&c| c.is_control() && !allowed.contains(&c))
            .map(|c| format!("{c:?}"))
    };
    for table in [&written.table, &written.table_every_row] {
        assert_eq!(
            controls(table, &['\n']),
            None,
            "a control character in the table"
        );
    }
    let xml_forbidden = written.junit.chars().find(|&c| {
        (c < ' ' && !['\t', '\n', '\r'].contains(&c)) || c == '\u{FFFE}' || c == '\u{FFFF}'
    });
    assert_eq!(xml_forbidden, None, "a character XML forbids in JUnit");
    let chars = |text: &str| text.chars().count();
    let limit = kgate::github::body::COMMENT_LIMIT_CHARS;
    let comment = kgate::github::body::comment_body(&report, "default", None);
    assert!(
        chars(&comment) <= limit,
        "a comment of {} characters",
        chars(&comment)
    );
    assert_eq!(
        controls(&comment, &['\n']),
        None,
        "a control character in the comment"
    );
    for max_chars in [4_000, limit] {
        let cut = render::markdown_limits::render_markdown_limited(&report, max_chars);
        assert!(
            chars(&cut) <= max_chars,
            "Markdown of {} characters",
            chars(&cut)
        );
    }
    let mut json = Vec::new();
    render::write_json(&report, false, &mut json).expect("JSON into memory");
    std::fs::write(&path, &json).expect("the scratch folder is writable");
    let again = render::stored::load_report(&path)
        .unwrap_or_else(|e| panic!("a report kgate wrote does not read back: {e}"));
    let mut json_again = Vec::new();
    render::write_json(&again, false, &mut json_again).expect("JSON into memory");
    assert_eq!(json, json_again, "the report changed on a round trip");
    true
}

/// A stored report as `kgate comment` posts it: the artifact a fork's job uploads, read by the
/// trusted `workflow_run` job, which loads it, writes the sticky comment and finishes the
/// check run. Whatever the report says, the comment holds within GitHub's 65,536 characters,
/// its marker is its first line and no kgate marker (its own or another job's, which that
/// job's comment would then be taken for) appears again; the check-run summary holds within
/// its 65,535 bytes, and a report fitted to smaller limits keeps within them, its header first
/// and its footer last. The check run never concludes `success` while a benchmark row, or a
/// gating metric row, says regressed or failed, whatever the report's own verdict says.
pub fn comment(data: &[u8]) {
    comment_stored(data);
}

/// [`comment`], saying whether the report loaded (and so was checked).
pub fn comment_stored(data: &[u8]) -> bool {
    use kgate::github::body::{self as gh_body, Measure};
    use kgate::github::client::Conclusion;
    use kgate::model::verdict::Verdict;
    let path = SCRATCH.with(|d| d.path().join("comment.json"));
    std::fs::write(&path, data).expect("the scratch folder is writable");
    // Read as `kgate comment` reads it.
    let Ok(mut report) = render::stored::load_report(&path) else {
        return false;
    };
    // Its verdicts recomputed from its rows, as `kgate comment` does before anything is shown.
    let reconciled = kgate::compare::adjust::reconcile(&mut report);
    let chars = |text: &str| text.chars().count();
    for (job_id, run_url) in [
        ("default", None),
        (
            "bench-gpu_1.x:a/b",
            Some("https://github.com/o/r/actions/runs/1"),
        ),
    ] {
        gh_body::validate_job_id(job_id).expect("a valid job id");
        let body = gh_body::comment_body(&report, job_id, run_url);
        assert!(
            chars(&body) <= gh_body::COMMENT_LIMIT_CHARS,
            "a comment of {} characters",
            chars(&body)
        );
        let marker = gh_body::marker(job_id);
        assert_eq!(
            body.lines().next(),
            Some(marker.as_str()),
            "the comment does not start with its marker line"
        );
        assert_eq!(
            body.matches("<!-- kgate:").count(),
            1,
            "a kgate marker in the comment's text besides its own first line"
        );
    }
    let summary = gh_body::check_run_summary(&report);
    assert!(
        summary.len() <= gh_body::CHECK_SUMMARY_LIMIT_BYTES,
        "a check-run summary of {} bytes",
        summary.len()
    );
    let _title = render::summary_line(&report);
    // The folds and cuts a large report needs, on the small reports a fuzzer writes.
    let (header, footer) = ("<!-- header -->\n", "\n<sub>footer</sub>\n");
    for limit in [1_000, 4_000] {
        for (measure, size) in [
            (Measure::Chars, chars as fn(&str) -> usize),
            (Measure::Bytes, str::len as fn(&str) -> usize),
        ] {
            let fitted =
                gh_body::fit_markdown(&report, header, footer, "the job summary", limit, measure);
            assert!(
                size(&fitted) <= limit,
                "fitted to {limit} ({measure:?}): {} long",
                size(&fitted)
            );
            assert!(
                fitted.starts_with(header) && fitted.ends_with(footer),
                "fitted to {limit} ({measure:?}): the header or footer moved"
            );
        }
    }
    // The check run never passes what a row says regressed or failed.
    let bad = |v: Verdict| matches!(v, Verdict::Regressed | Verdict::Failed);
    let conclusion = Conclusion::of_stored_report(&report, reconciled.waived_regressions);
    // The gate's status never makes a check run the rows do not pass green.
    if conclusion != Conclusion::Success {
        for gate in [None, Some(Conclusion::Success), Some(Conclusion::Neutral)] {
            assert_ne!(
                conclusion.no_better_than(gate),
                Conclusion::Success,
                "the gate's status made a failing or neutral check run green"
            );
        }
    }
    if let Some(b) = report
        .benchmarks
        .iter()
        .find(|b| bad(b.verdict) || b.metrics.iter().any(|m| m.gates && bad(m.verdict)))
    {
        assert_ne!(
            conclusion,
            Conclusion::Success,
            "the check run succeeds (report verdict {:?}) though benchmark {:?} says {:?}",
            report.verdict,
            b.name,
            b.verdict
        );
    }
    true
}

/// A report as the terminal table, HTML and JUnit write it from its rows.
#[derive(Debug, PartialEq)]
struct Written {
    /// The terminal table's default rows, unwrapped.
    table: String,
    /// The table of every row, wrapped at 60 columns.
    table_every_row: String,
    html: String,
    junit: String,
}

fn formats(report: &kgate::model::report::Report) -> Written {
    let table = |width: Option<usize>| render::TableExporter {
        color: false,
        width,
        all_metrics: width.is_some(),
    };
    use render::Exporter;
    Written {
        table: table(None).render(report),
        table_every_row: table(Some(60)).render(report),
        html: render::html::HtmlExporter.render(report),
        junit: render::junit::JunitExporter.render(report),
    }
}

/// One protocol line.
pub fn protocol_line(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = kgate::model::protocol::parse_line(text);
    }
}

/// The configuration loader, with its located checks.
pub fn config(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = kgate::config::parse(text, "kgate.yaml");
    }
}

/// `perf stat` output as the perf capture reads it.
pub fn perf_stat(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = kgate::capture::perf::parse(text);
    }
}

/// Callgrind and Cachegrind output files as the Valgrind captures read them.
pub fn valgrind(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        for tool in [
            kgate::capture::valgrind::Tool::Callgrind,
            kgate::capture::valgrind::Tool::Cachegrind,
        ] {
            if let Ok(profile) = kgate::capture::valgrind::parse(text, tool) {
                let _ = kgate::capture::valgrind::metrics(&profile);
            }
        }
    }
}

/// The entry point of a target by its name (`import_ncu`, `config`), for the regression test.
pub fn by_target(target: &str) -> Option<fn(&[u8])> {
    Some(match target {
        "protocol_line" => protocol_line,
        "config" => config,
        "perf_stat_parse" => perf_stat,
        "valgrind_parse" => valgrind,
        "results" => results,
        "compare" => compare,
        "report" => report,
        "comment" => comment,
        "import_protocol" => |d| import_bytes("protocol", d),
        "import_ncu" => |d| import_bytes("ncu", d),
        "import_rocprof" => |d| import_bytes("rocprof", d),
        "import_chrome_trace" => |d| import_bytes("chrome-trace", d),
        "import_xplane" => |d| import_bytes("xplane", d),
        "import_proton" => |d| import_bytes("proton", d),
        "import_gbench" => |d| import_bytes("gbench", d),
        "import_nvbench" => |d| import_bytes("nvbench", d),
        "import_kernelbench" => |d| import_bytes("kernelbench", d),
        "import_cutlass" => |d| import_bytes("cutlass", d),
        "import_pytest_benchmark" => |d| import_bytes("pytest-benchmark", d),
        "import_hyperfine" => |d| import_bytes("hyperfine", d),
        "import_criterion" => |d| import_bytes("criterion", d),
        "import_perf_stat" => |d| import_bytes("perf-stat", d),
        "import_callgrind" => |d| import_bytes("callgrind", d),
        "import_cachegrind" => |d| import_bytes("cachegrind", d),
        _ => return None,
    })
}
