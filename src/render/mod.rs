//! Rendering a comparison report: a terminal table, Markdown for pull requests (with its
//! details and GitHub's size limits in `markdown_details` and `markdown_limits`), JSON, an
//! offline HTML page (`html`) and JUnit XML (`junit`); `stored` reads a JSON report back.
//!
//! One exporter per format behind one trait, as hyperfine does. Everything that came from the
//! repository (benchmark and metric names, reasons quoting them) is escaped before it goes into
//! Markdown: a name may hold `|`, `<`, `@` or backticks.

use std::io::IsTerminal;

pub mod escape;
pub mod function_diff;
pub mod history;
pub mod html;
pub mod junit;
pub mod markdown_details;
pub mod markdown_limits;
pub mod stored;
pub mod strip;
mod table;

pub use markdown_limits::{LimitedMarkdownExporter, render_markdown_limited};
pub use table::{TableExporter, stdout_width};

use crate::compare::format_p;
use crate::model::report::{MetricComparison, Report};
use crate::model::text::short_kernel_name;
use crate::model::units::{format_change, format_value};
use crate::model::verdict::{RunVerdict, Verdict};
use escape::escape_markdown;

/// Output formats of a report (`--format`: the command line's names are in `cli`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Table,
    Markdown,
    Json,
    /// A self-contained HTML page with SVG plots.
    Html,
    /// JUnit XML: a test case per benchmark and metric.
    Junit,
}

/// Renders a report in one format. An exporter implements `write_to`; a format produced piece
/// by piece writes as it goes, so that a large report is never held whole in memory.
pub trait Exporter {
    /// Writes the report into `out`.
    fn write_to(&self, report: &Report, out: &mut dyn std::io::Write) -> std::io::Result<()>;

    /// The report as one string.
    fn render(&self, report: &Report) -> String {
        let mut out = Vec::new();
        self.write_to(report, &mut out)
            .expect("writing into memory does not fail");
        String::from_utf8(out).expect("exporters write UTF-8")
    }
}

/// The exporter of a format; `color` applies to the table only, which then has no width limit
/// and shows the gating metrics.
pub fn exporter(format: Format, color: bool) -> Box<dyn Exporter> {
    match format {
        Format::Table => Box::new(TableExporter {
            color,
            ..TableExporter::default()
        }),
        Format::Markdown => Box::new(MarkdownExporter),
        Format::Json => Box::new(JsonExporter { pretty: false }),
        Format::Html => Box::new(html::HtmlExporter),
        Format::Junit => Box::new(junit::JunitExporter),
    }
}

/// Whether to colour output on stdout: a terminal, and `NO_COLOR` unset.
pub fn stdout_wants_color() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// "1 regression, 0 improvements, 3 unchanged, 0 inconclusive of 4 benchmarks", naming the
/// not-gated benchmarks one of whose metrics would have regressed.
pub fn summary_line(report: &Report) -> String {
    let would: Vec<&str> = report
        .benchmarks
        .iter()
        .filter(|b| {
            b.verdict == Verdict::NotGated
                && b.metrics
                    .iter()
                    .any(|m| m.verdict == Verdict::Regressed && m.not_gating.is_some())
        })
        .map(|b| b.name.as_str())
        .collect();
    let s = &report.summary;
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let mut parts = Vec::new();
    if s.incorrect > 0 {
        // First of all: wrong answers fail the gate whatever their speed.
        parts.push(format!("{} incorrect", s.incorrect));
    }
    if s.failed > 0 {
        // First: nothing was measured for these, and they make the run an error.
        parts.push(format!("{} failed", s.failed));
    }
    parts.extend([
        plural(s.regressed, "regression", "regressions"),
        plural(s.improved, "improvement", "improvements"),
        format!("{} unchanged", s.unchanged),
        format!("{} inconclusive", s.inconclusive),
    ]);
    if s.within_threshold > 0 {
        parts.push(format!("{} within threshold", s.within_threshold));
    }
    if s.not_gated > 0 {
        // A benchmark that cannot gate is never counted as unchanged, and one that would have
        // regressed is named here, not only in its row.
        let mut part = format!("{} not gated", s.not_gated);
        if !would.is_empty() {
            let (n, names) = (would.len(), would.join(", "));
            part.push_str(&format!(" ({n} would regress: {names})"));
        }
        parts.push(part);
    }
    #[rustfmt::skip]
    let counts = [
        (s.new, "new"), (s.missing, "missing"), (s.skipped, "skipped"),
        (s.identical, "identical (not measured)"), (s.waived, "waived"),
    ];
    for (n, what) in counts {
        if n > 0 {
            parts.push(format!("{n} {what}"));
        }
    }
    let total = plural(s.total, "benchmark", "benchmarks");
    format!("{} of {total}", parts.join(", "))
}

/// What an adaptive run's benchmarks cost against a fixed plan at `repetitions.max`:
/// "repetitions: 212 of the 640 a fixed plan at max would run; benchmark time 41.2 s (about
/// 118.0 s at max)". None where the report has no cost (no looks, or untimed runs).
pub fn cost_line(report: &Report) -> Option<String> {
    let c = report.cost?;
    let share = if c.fixed_repetitions > 0 {
        let share = 100.0 * c.repetitions as f64 / c.fixed_repetitions as f64;
        format!(" ({share:.0} %)")
    } else {
        String::new()
    };
    Some(format!(
        "repetitions: {} of the {} a fixed plan at max would run{share}; benchmark time {:.1} s (about {:.1} s at max)",
        c.repetitions, c.fixed_repetitions, c.seconds, c.fixed_seconds
    ))
}

pub(crate) fn verdict_word(v: RunVerdict) -> &'static str {
    match v {
        RunVerdict::Pass => "PASS",
        RunVerdict::Regressed => "REGRESSED",
        RunVerdict::Inconclusive => "INCONCLUSIVE",
        RunVerdict::NoBaseline => "NO BASELINE",
        RunVerdict::Error => "ERROR",
    }
}

fn change_cell(m: &MetricComparison) -> String {
    m.change.map(format_change).unwrap_or_else(|| "–".into())
}

fn ci_cell(m: &MetricComparison) -> String {
    m.ci.map(|[lo, hi]| format!("{} … {}", format_change(lo), format_change(hi)))
        .unwrap_or_else(|| "–".into())
}

fn median_cell(s: &Option<crate::stats::Summary>, unit: &str) -> String {
    s.as_ref()
        .map(|s| format!("{} (n={})", format_value(s.median, unit), s.n))
        .unwrap_or_else(|| "–".into())
}

fn mde_cell(m: &MetricComparison) -> String {
    m.mde
        .map(|v| format_change(v).trim_start_matches('+').to_string())
        .unwrap_or_else(|| "–".into())
}

fn p_cell(m: &MetricComparison) -> String {
    m.p_value.map(format_p).unwrap_or_else(|| "–".into())
}

/// A metric's verdict as shown: `regressed (waived)` when a waiver accepts it, and for a metric
/// that may not fail the build a cell that says so rather than the word a gating verdict gets:
/// `would regress (not gated)`, `would improve (not gated)`, `unchanged (not gated)`.
pub(crate) fn metric_verdict(m: &MetricComparison) -> String {
    if m.waived {
        format!("{} (waived)", m.verdict.as_str())
    } else if m.gates {
        m.verdict.as_str().to_string()
    } else {
        match m.verdict {
            Verdict::Regressed => "would regress (not gated)".to_string(),
            Verdict::Improved => "would improve (not gated)".to_string(),
            Verdict::NotGated | Verdict::Skipped | Verdict::New | Verdict::Missing => {
                m.verdict.as_str().to_string()
            }
            other => format!("{} (not gated)", other.as_str()),
        }
    }
}

/// A figure cell that a narrow comment column cannot split between a value and its unit
/// (`+12.0` over `%`): a no-break space inside each figure; a line may still break on either
/// side of an interval's `…` and before a sample count, so the table stays narrow enough for
/// its last column, the verdict, to show.
fn unbreakable_figures(cell: &str) -> String {
    cell.split(" … ")
        .map(|figure| match figure.split_once(" (") {
            Some((value, count)) => format!("{} ({count}", value.replace(' ', "\u{a0}")),
            None => figure.replace(' ', "\u{a0}"),
        })
        .collect::<Vec<_>>()
        .join(" … ")
}

/// Markdown for a pull-request comment or job summary.
pub struct MarkdownExporter;

impl MarkdownExporter {
    fn table(rows: &[(&str, &MetricComparison)]) -> String {
        let mut s = String::from(
            "| benchmark | metric | base | head | change | CI | p | MDE | source | verdict |\n|---|---|---:|---:|---:|---:|---:|---:|---|---|\n",
        );
        for (bench, m) in rows {
            // Every cell is escaped, numbers included: a unit is text from the benchmark.
            let cells = [
                short_kernel_name(bench).unwrap_or_else(|| bench.to_string()),
                format!("{}{}", m.name, crate::compare::explain::marker(m)),
                median_cell(&m.base, &m.unit),
                median_cell(&m.head, &m.unit),
                change_cell(m),
                ci_cell(m),
                p_cell(m),
                mde_cell(m),
                m.source.as_str().to_string(),
                metric_verdict(m),
            ];
            s.push('|');
            for (column, cell) in cells.iter().enumerate() {
                s.push(' ');
                let escaped = escape_markdown(cell);
                if (2..=7).contains(&column) {
                    s.push_str(&unbreakable_figures(&escaped));
                } else {
                    s.push_str(&escaped);
                }
                s.push_str(" |");
            }
            s.push('\n');
        }
        s
    }
}

impl Exporter for MarkdownExporter {
    fn write_to(&self, report: &Report, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        out.write_all(self.markdown(report).as_bytes())
    }
}

impl MarkdownExporter {
    /// The whole Markdown report.
    fn markdown(&self, report: &Report) -> String {
        let icon = match report.verdict {
            RunVerdict::Pass => "✅",
            RunVerdict::Regressed => "❌",
            RunVerdict::Inconclusive => "⚠️",
            RunVerdict::NoBaseline => "❔",
            RunVerdict::Error => "🛑",
        };
        let summary = escape_markdown(&summary_line(report));
        let mut out = format!(
            "### {icon} kgate: {}: {summary}\n\n",
            verdict_word(report.verdict)
        );
        if let Some(cost) = cost_line(report) {
            out.push_str(&format!("{}\n\n", escape_markdown(&cost)));
        }
        let notable: Vec<(&str, &MetricComparison)> = report
            .benchmarks
            .iter()
            .flat_map(|b| b.metrics.iter().map(move |m| (b.name.as_str(), m)))
            .filter(|(_, m)| {
                m.gates
                    && matches!(
                        m.verdict,
                        Verdict::Regressed | Verdict::Improved | Verdict::Inconclusive
                    )
            })
            .collect();
        if !notable.is_empty() {
            out.push_str(&Self::table(&notable));
            out.push('\n');
        }
        for b in &report.benchmarks {
            let (name, verdict) = (escape_markdown(&b.name), b.verdict.as_str());
            if matches!(
                b.verdict,
                Verdict::Regressed
                    | Verdict::Failed
                    | Verdict::Incorrect
                    | Verdict::Inconclusive
                    | Verdict::Missing
                    | Verdict::NotGated
                    | Verdict::Identical
            ) {
                let why = escape_markdown(&b.explanation);
                out.push_str(&format!("- **{name}** {verdict}: {why}\n"));
            } else if b.metrics.iter().any(|m| m.waived) {
                let why = escape_markdown(&b.explanation);
                out.push_str(&format!("- **{name}** waived: {why}\n"));
            } else if let Some(note) = b.changed_parameters() {
                let note = escape_markdown(note);
                out.push_str(&format!("- **{name}** {verdict}: {note}\n"));
            }
        }
        let all: Vec<(&str, &MetricComparison)> = report
            .benchmarks
            .iter()
            .flat_map(|b| b.metrics.iter().map(move |m| (b.name.as_str(), m)))
            .collect();
        if !all.is_empty() {
            out.push_str("\n<details><summary>All metrics</summary>\n\n");
            out.push_str(&Self::table(&all));
            out.push_str("\n</details>\n");
        }
        let shortened = shortened_names(report);
        if !shortened.is_empty() {
            out.push_str("\n<details><summary>Kernel names shortened in the tables</summary>\n\n");
            for (short, name) in &shortened {
                let (short, name) = (escape_markdown(short), escape_markdown(name));
                out.push_str(&format!("- {short}: {name}\n"));
            }
            out.push_str("\n</details>\n");
        }
        out.push_str(&markdown_details::benchmark_sections(report));
        out.push_str(&function_diff::markdown_sections(report));
        for w in &report.warnings {
            out.push_str(&format!("\n> [!NOTE]\n> {}\n", escape_markdown(w)));
        }
        let welch = report
            .benchmarks
            .iter()
            .flat_map(|b| &b.metrics)
            .any(|m| m.method == crate::model::report::Method::WelchSummaries);
        let model = match report.model {
            crate::model::report::Model::RankTest if welch => {
                "Rank test (Welch's test on summaries where a side stored only a mean)"
            }
            crate::model::report::Model::RankTest => "Rank test",
            crate::model::report::Model::PredictionInterval => {
                "Prediction interval over stored jobs"
            }
        };
        let (alpha, correction, looks) = (report.alpha, report.correction.as_str(), report.looks);
        let (s, confidence) = (if looks == 1 { "" } else { "s" }, (1.0 - alpha) * 100.0);
        out.push_str(&format!(
            "\n<sub>{model} at α = {alpha} ({correction} correction, {looks} look{s}), intervals at {confidence} % confidence; changes are head against base; MDE is the smallest change this run would flag with 80 % power.</sub>\n"
        ));
        out
    }
}

/// The JSON report of DESIGN.md's contract: compact (one line) unless `pretty`.
pub struct JsonExporter {
    pub pretty: bool,
}

/// Writes a report as JSON (indented with `pretty`) into `out`.
pub fn write_json(
    report: &Report,
    pretty: bool,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    use std::io::Write;
    let mut out = crate::store::fsutil::serializer_buffer(out);
    // The strings of a report are untrusted: those that would act on a terminal are escaped.
    escape::write_inert_json(&mut out, report, pretty).map_err(std::io::Error::from)?;
    out.write_all(b"\n")?;
    out.flush()
}

impl Exporter for JsonExporter {
    fn write_to(&self, report: &Report, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        write_json(report, self.pretty, out)
    }
}

/// The kernel names the tables shorten ([`short_kernel_name`]), as (short, whole), once per
/// kernel: its ` [gpu N]` rows share one.
pub(crate) fn shortened_names(report: &Report) -> Vec<(String, &str)> {
    let mut seen = std::collections::BTreeSet::new();
    report
        .benchmarks
        .iter()
        .map(|b| crate::model::text::split_gpu_suffix(&b.name).0)
        .filter(|name| seen.insert(*name))
        .filter_map(|name| short_kernel_name(name).map(|s| (s, name)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::results::MetricSamples;

    /// A row that may not fail the build says so in its verdict cell, in every format that
    /// shows the cell, rather than the word a gating verdict gets (before: `regressed` under a
    /// PASS headline).
    #[test]
    fn a_metric_that_does_not_gate_reads_as_such_in_its_verdict_cell() {
        let samples = MetricSamples {
            unit: "us".into(),
            ..MetricSamples::timer("kernel_time", &[])
        };
        let mut m = crate::compare::blank(&samples, &crate::compare::ComparePolicy::default());
        for (verdict, gates, cell) in [
            (Verdict::Regressed, true, "regressed"),
            (Verdict::Regressed, false, "would regress (not gated)"),
            (Verdict::Improved, false, "would improve (not gated)"),
            (Verdict::Unchanged, false, "unchanged (not gated)"),
        ] {
            (m.verdict, m.gates) = (verdict, gates);
            assert_eq!(metric_verdict(&m), cell);
        }
        m.verdict = Verdict::Regressed;
        let markdown = MarkdownExporter::table(&[("b", &m)]);
        assert_contains!(markdown, "| would regress (not gated) |");
    }

    #[test]
    fn a_figure_in_a_comment_cell_breaks_only_between_the_ends_of_an_interval() {
        for (cell, figures) in [
            ("99.80 µs (n=12)", "99.80\u{a0}µs (n=12)"),
            ("+10.1 % … +14.0 %", "+10.1\u{a0}% … +14.0\u{a0}%"),
            ("–", "–"),
        ] {
            assert_eq!(unbreakable_figures(cell), figures);
        }
    }

    #[test]
    fn markdown_escaping_neutralizes_repository_text() {
        let escaped = escape_markdown("a|b <script>@team `x` *y*\nz");
        assert_eq!(
            escaped,
            "a&#124;b &lt;script&gt;&#64;&#8205;team \\`x\\` \\*y\\* z"
        );
    }
}
