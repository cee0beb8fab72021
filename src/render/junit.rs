//! JUnit XML, for CI systems that show test results (GitLab, Jenkins, Buildkite, Azure).
//!
//! One `<testcase>` per benchmark and metric (classname = benchmark, name = metric); a
//! regression is a `<failure>`, an inconclusive gating metric is `<skipped>` (undecided, not
//! passed), a benchmark missing from or failed in the candidate is an `<error>`. Benchmarks
//! without metrics (new, missing) get one test case named after the benchmark, and so does an
//! incorrect one (its candidate failed its correctness check), before its metrics: a
//! `<failure type="incorrect">`.

use crate::model::report::{BenchmarkComparison, MetricComparison, Report};
use crate::model::units::{format_change, format_value};
use crate::model::verdict::Verdict;
use crate::render::escape::escape_html;
use crate::render::{Exporter, summary_line};

/// The JUnit exporter.
pub struct JunitExporter;

#[derive(Default)]
struct Tally {
    tests: usize,
    failures: usize,
    errors: usize,
    skipped: usize,
}

/// What a test case reports besides its output.
#[derive(Clone, Copy, PartialEq)]
enum Outcome {
    Failure,
    Skipped,
    Error,
    Passed,
}

fn metric_outcome(m: &MetricComparison) -> Outcome {
    match (m.verdict, m.gates) {
        (Verdict::Regressed, true) => Outcome::Failure,
        (Verdict::Inconclusive, true) => Outcome::Skipped,
        _ => Outcome::Passed,
    }
}

fn benchmark_outcome(b: &BenchmarkComparison) -> Outcome {
    match b.verdict {
        // Nothing was measured on a side: the run is an error (exit 2), and so is its case.
        Verdict::Failed => Outcome::Error,
        // A wrong answer fails the gate whatever the metrics say.
        Verdict::Incorrect => Outcome::Failure,
        // Removed from the suite, or not run: no test happened, and nothing failed.
        Verdict::Missing | Verdict::Skipped => Outcome::Skipped,
        _ => Outcome::Passed,
    }
}

/// The counts of the header, before any test case is written (a first reading of the rows).
fn tally(report: &Report) -> Tally {
    let mut tally = Tally::default();
    for b in &report.benchmarks {
        let bare = has_own_case(b).then(|| benchmark_outcome(b));
        for outcome in bare.into_iter().chain(b.metrics.iter().map(metric_outcome)) {
            tally.tests += 1;
            match outcome {
                Outcome::Failure => tally.failures += 1,
                Outcome::Skipped => tally.skipped += 1,
                Outcome::Error => tally.errors += 1,
                Outcome::Passed => {}
            }
        }
    }
    tally
}

fn metric_case(b: &BenchmarkComparison, m: &MetricComparison) -> String {
    let median = |s: &Option<crate::stats::Summary>| {
        s.as_ref()
            .map_or_else(|| "–".into(), |s| format_value(s.median, &m.unit))
    };
    let estimate = m.source == crate::model::metric::Source::Estimate;
    let estimate = if estimate { " (estimate)" } else { "" };
    let reason = (!m.reason.is_empty()).then(|| format!("; {}", m.reason));
    let (verdict, base, head) = (m.verdict.as_str(), median(&m.base), median(&m.head));
    let change = m.change.map_or("–".into(), format_change);
    let reason = reason.unwrap_or_default();
    let detail = format!("{verdict}{estimate}: base {base}, head {head}, change {change}{reason}");
    let detail = escape_html(&detail);
    let body = match metric_outcome(m) {
        Outcome::Failure => {
            format!("<failure message=\"{detail}\" type=\"regression\">{detail}</failure>")
        }
        Outcome::Skipped => format!("<skipped message=\"{detail}\"/>"),
        _ => format!("<system-out>{detail}</system-out>"),
    };
    let (class, name) = (escape_html(&b.name), escape_html(&m.name));
    format!("    <testcase classname=\"{class}\" name=\"{name}\">{body}</testcase>\n")
}

/// Whether the benchmark gets a test case of its own: one without metrics, or an incorrect one.
fn has_own_case(b: &BenchmarkComparison) -> bool {
    b.metrics.is_empty() || b.verdict == Verdict::Incorrect
}

fn benchmark_case(b: &BenchmarkComparison) -> String {
    let (verdict, why) = (b.verdict.as_str(), escape_html(&b.explanation));
    let body = match benchmark_outcome(b) {
        Outcome::Failure => {
            format!("<failure message=\"{why}\" type=\"incorrect\">{why}</failure>")
        }
        Outcome::Error => format!("<error message=\"{why}\" type=\"failed\"/>"),
        Outcome::Skipped => format!("<skipped message=\"{verdict}: {why}\"/>"),
        _ => format!("<system-out>{verdict}: {why}</system-out>"),
    };
    let name = escape_html(&b.name);
    format!("    <testcase classname=\"{name}\" name=\"{name}\">{body}</testcase>\n")
}

impl Exporter for JunitExporter {
    /// The test cases are written one by one as they are made: a suite of thousands of
    /// benchmarks gives hundreds of thousands, and the page was held twice over.
    fn write_to(&self, report: &Report, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        let tally = tally(report);
        write!(
            out,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"kgate\" tests=\"{0}\" failures=\"{1}\" errors=\"{2}\" skipped=\"{3}\">\n  <testsuite name=\"kgate\" tests=\"{0}\" failures=\"{1}\" errors=\"{2}\" skipped=\"{3}\">\n",
            tally.tests, tally.failures, tally.errors, tally.skipped
        )?;
        let summary = escape_html(&summary_line(report));
        let summary = format!("<property name=\"summary\" value=\"{summary}\"/>");
        writeln!(out, "    <properties>{summary}</properties>")?;
        for b in &report.benchmarks {
            if has_own_case(b) {
                out.write_all(benchmark_case(b).as_bytes())?;
            }
            for m in &b.metrics {
                out.write_all(metric_case(b, m).as_bytes())?;
            }
        }
        out.write_all(b"  </testsuite>\n</testsuites>\n")
    }
}
