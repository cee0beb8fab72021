//! JUnit XML, for CI systems that show test results (GitLab, Jenkins, Buildkite, Azure).
//!
//! One `<testcase>` per benchmark and metric (classname = benchmark, name = metric); a
//! regression is a `<failure>`, an inconclusive gating metric is `<skipped>` (undecided, not
//! passed), a benchmark missing from or failed in the candidate is an `<error>`. Benchmarks
//! without metrics (new, missing) get one test case named after the benchmark.

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

fn metric_case(b: &BenchmarkComparison, m: &MetricComparison, tally: &mut Tally) -> String {
    tally.tests += 1;
    let detail = format!(
        "{}{}: base {}, head {}, change {}{}",
        m.verdict.as_str(),
        if m.source == crate::model::metric::Source::Estimate {
            " (estimate)"
        } else {
            ""
        },
        m.base
            .as_ref()
            .map(|s| format_value(s.median, &m.unit))
            .unwrap_or_else(|| "–".into()),
        m.head
            .as_ref()
            .map(|s| format_value(s.median, &m.unit))
            .unwrap_or_else(|| "–".into()),
        m.change.map(format_change).unwrap_or_else(|| "–".into()),
        if m.reason.is_empty() {
            String::new()
        } else {
            format!("; {}", m.reason)
        }
    );
    let body = match (m.verdict, m.gates) {
        (Verdict::Regressed, true) => {
            tally.failures += 1;
            format!(
                "<failure message=\"{}\" type=\"regression\">{}</failure>",
                escape_html(&detail),
                escape_html(&detail)
            )
        }
        (Verdict::Inconclusive, true) => {
            tally.skipped += 1;
            format!("<skipped message=\"{}\"/>", escape_html(&detail))
        }
        _ => format!("<system-out>{}</system-out>", escape_html(&detail)),
    };
    format!(
        "    <testcase classname=\"{}\" name=\"{}\">{body}</testcase>\n",
        escape_html(&b.name),
        escape_html(&m.name)
    )
}

fn benchmark_case(b: &BenchmarkComparison, tally: &mut Tally) -> String {
    tally.tests += 1;
    let body = match b.verdict {
        Verdict::Missing => {
            tally.errors += 1;
            format!(
                "<error message=\"{}\" type=\"missing\"/>",
                escape_html(&b.explanation)
            )
        }
        _ => format!(
            "<system-out>{}: {}</system-out>",
            b.verdict.as_str(),
            escape_html(&b.explanation)
        ),
    };
    format!(
        "    <testcase classname=\"{}\" name=\"{}\">{body}</testcase>\n",
        escape_html(&b.name),
        escape_html(&b.name)
    )
}

impl Exporter for JunitExporter {
    fn render(&self, report: &Report) -> String {
        let mut tally = Tally::default();
        let mut cases = String::new();
        for b in &report.benchmarks {
            if b.metrics.is_empty() {
                cases.push_str(&benchmark_case(b, &mut tally));
            }
            for m in &b.metrics {
                cases.push_str(&metric_case(b, m, &mut tally));
            }
        }
        let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        out.push_str(&format!(
            "<testsuites name=\"kgate\" tests=\"{0}\" failures=\"{1}\" errors=\"{2}\" skipped=\"{3}\">\n  <testsuite name=\"kgate\" tests=\"{0}\" failures=\"{1}\" errors=\"{2}\" skipped=\"{3}\">\n",
            tally.tests, tally.failures, tally.errors, tally.skipped
        ));
        out.push_str(&format!(
            "    <properties><property name=\"summary\" value=\"{}\"/></properties>\n",
            escape_html(&summary_line(report))
        ));
        out.push_str(&cases);
        out.push_str("  </testsuite>\n</testsuites>\n");
        out
    }
}
