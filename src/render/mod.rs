//! Rendering a comparison report: a terminal table, Markdown for pull requests (with its
//! details and GitHub's size limits in `markdown_details` and `markdown_limits`), JSON, an
//! offline HTML page (`html`) and JUnit XML (`junit`); `stored` reads a JSON report back.
//!
//! One exporter per format behind one trait, as hyperfine does. Everything that came from the
//! repository (benchmark and metric names, reasons quoting them) is escaped before it goes into
//! Markdown: a name may hold `|`, `<`, `@` or backticks.

use std::io::IsTerminal;

pub mod escape;
pub mod html;
pub mod junit;
pub mod markdown_details;
pub mod markdown_limits;
pub mod stored;

pub use markdown_limits::render_markdown_limited;

use comfy_table::{Cell, Color, ContentArrangement, Table, presets};

use crate::compare::format_p;
use crate::model::report::{MetricComparison, Report};
use crate::model::units::{format_change, format_value};
use crate::model::verdict::{RunVerdict, Verdict};
use escape::{escape_markdown, escape_terminal};

/// Output formats of a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Table,
    Markdown,
    Json,
    /// A self-contained HTML page with SVG plots.
    Html,
    /// JUnit XML: a test case per benchmark and metric.
    Junit,
}

/// Renders a report in one format.
pub trait Exporter {
    fn render(&self, report: &Report) -> String;
}

/// The exporter of a format; `color` applies to the table only.
pub fn exporter(format: Format, color: bool) -> Box<dyn Exporter> {
    match format {
        Format::Table => Box::new(TableExporter { color }),
        Format::Markdown => Box::new(MarkdownExporter),
        Format::Json => Box::new(JsonExporter),
        Format::Html => Box::new(html::HtmlExporter),
        Format::Junit => Box::new(junit::JunitExporter),
    }
}

/// Whether to colour output on stdout: a terminal, and `NO_COLOR` unset.
pub fn stdout_wants_color() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// "1 regression, 0 improvements, 3 unchanged, 0 inconclusive of 4 benchmarks".
pub fn summary_line(report: &Report) -> String {
    let s = &report.summary;
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let mut parts = vec![
        plural(s.regressed, "regression", "regressions"),
        plural(s.improved, "improvement", "improvements"),
        format!("{} unchanged", s.unchanged),
        format!("{} inconclusive", s.inconclusive),
    ];
    if s.within_threshold > 0 {
        parts.push(format!("{} within threshold", s.within_threshold));
    }
    if s.not_gated > 0 {
        // A benchmark that cannot gate is never counted as unchanged, and one that would have
        // regressed is named here, not only in its row.
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
        let mut part = format!("{} not gated", s.not_gated);
        if !would.is_empty() {
            part.push_str(&format!(
                " ({} would regress: {})",
                would.len(),
                would.join(", ")
            ));
        }
        parts.push(part);
    }
    if s.new > 0 {
        parts.push(format!("{} new", s.new));
    }
    if s.missing > 0 {
        parts.push(format!("{} missing", s.missing));
    }
    if s.skipped > 0 {
        parts.push(format!("{} skipped", s.skipped));
    }
    if s.waived > 0 {
        parts.push(format!("{} waived", s.waived));
    }
    format!(
        "{} of {}",
        parts.join(", "),
        plural(s.total, "benchmark", "benchmarks")
    )
}

pub(crate) fn verdict_word(v: RunVerdict) -> &'static str {
    match v {
        RunVerdict::Pass => "PASS",
        RunVerdict::Regressed => "REGRESSED",
        RunVerdict::Inconclusive => "INCONCLUSIVE",
        RunVerdict::NoBaseline => "NO BASELINE",
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

fn verdict_color(v: Verdict) -> Color {
    match v {
        Verdict::Regressed => Color::Red,
        Verdict::Improved => Color::Green,
        Verdict::Inconclusive => Color::Yellow,
        Verdict::Unchanged | Verdict::WithinThreshold => Color::Reset,
        Verdict::NotGated | Verdict::New | Verdict::Missing | Verdict::Skipped => Color::Cyan,
    }
}

/// The terminal table.
pub struct TableExporter {
    pub color: bool,
}

impl Exporter for TableExporter {
    fn render(&self, report: &Report) -> String {
        let mut out = format!(
            "{}: {}\n",
            verdict_word(report.verdict),
            escape_terminal(&summary_line(report))
        );
        let mut table = Table::new();
        table
            .load_style(presets::UTF8_FULL_CONDENSED)
            .set_content_arrangement(ContentArrangement::Dynamic);
        if !self.color {
            table.force_no_tty();
        } else {
            table.enforce_styling();
        }
        table.set_header(vec![
            "benchmark",
            "metric",
            "base",
            "head",
            "change",
            "CI",
            "p",
            "MDE",
            "verdict",
        ]);
        for b in &report.benchmarks {
            if b.metrics.is_empty() {
                table.add_row(vec![
                    text_cell(&b.name),
                    Cell::new("–"),
                    Cell::new("–"),
                    Cell::new("–"),
                    Cell::new("–"),
                    Cell::new("–"),
                    Cell::new("–"),
                    Cell::new("–"),
                    verdict_cell(b.verdict, self.color, true),
                ]);
            }
            for m in &b.metrics {
                let mut metric = m.name.clone();
                metric.push_str(crate::compare::explain::marker(m));
                table.add_row(vec![
                    text_cell(&b.name),
                    text_cell(&metric),
                    text_cell(&median_cell(&m.base, &m.unit)),
                    text_cell(&median_cell(&m.head, &m.unit)),
                    Cell::new(change_cell(m)),
                    Cell::new(ci_cell(m)),
                    Cell::new(p_cell(m)),
                    Cell::new(mde_cell(m)),
                    if m.waived {
                        text_cell(&metric_verdict(m))
                    } else {
                        verdict_cell(m.verdict, self.color, m.gates)
                    },
                ]);
            }
        }
        out.push_str(&table.to_string());
        out.push('\n');
        for b in &report.benchmarks {
            if matches!(
                b.verdict,
                Verdict::Regressed
                    | Verdict::Inconclusive
                    | Verdict::Improved
                    | Verdict::Missing
                    | Verdict::NotGated
            ) {
                out.push_str(&format!(
                    "{} {}: {}\n",
                    b.verdict.as_str(),
                    escape_terminal(&b.name),
                    escape_terminal(&b.explanation)
                ));
            } else if b.metrics.iter().any(|m| m.waived) {
                out.push_str(&format!(
                    "waived {}: {}\n",
                    escape_terminal(&b.name),
                    escape_terminal(&b.explanation)
                ));
            }
        }
        for w in &report.warnings {
            out.push_str(&format!("warning: {}\n", escape_terminal(w)));
        }
        out
    }
}

/// A metric's verdict as shown: `regressed (waived)` when a waiver accepts it.
fn metric_verdict(m: &MetricComparison) -> String {
    if m.waived {
        format!("{} (waived)", m.verdict.as_str())
    } else {
        m.verdict.as_str().to_string()
    }
}

/// A table cell of text that may have come from a benchmark or a results file.
fn text_cell(text: &str) -> Cell {
    Cell::new(escape_terminal(text))
}

fn verdict_cell(v: Verdict, color: bool, gates: bool) -> Cell {
    let cell = Cell::new(v.as_str());
    if color && gates {
        cell.fg(verdict_color(v))
    } else {
        cell
    }
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
                bench.to_string(),
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
            for cell in &cells {
                s.push(' ');
                s.push_str(&escape_markdown(cell));
                s.push_str(" |");
            }
            s.push('\n');
        }
        s
    }
}

impl Exporter for MarkdownExporter {
    fn render(&self, report: &Report) -> String {
        let icon = match report.verdict {
            RunVerdict::Pass => "✅",
            RunVerdict::Regressed => "❌",
            RunVerdict::Inconclusive => "⚠️",
            RunVerdict::NoBaseline => "❔",
        };
        let mut out = format!(
            "### {icon} kgate: {}: {}\n\n",
            verdict_word(report.verdict),
            escape_markdown(&summary_line(report))
        );
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
            if matches!(
                b.verdict,
                Verdict::Regressed | Verdict::Inconclusive | Verdict::Missing | Verdict::NotGated
            ) {
                out.push_str(&format!(
                    "- **{}** {}: {}\n",
                    escape_markdown(&b.name),
                    b.verdict.as_str(),
                    escape_markdown(&b.explanation)
                ));
            } else if b.metrics.iter().any(|m| m.waived) {
                out.push_str(&format!(
                    "- **{}** waived: {}\n",
                    escape_markdown(&b.name),
                    escape_markdown(&b.explanation)
                ));
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
        out.push_str(&markdown_details::benchmark_sections(report));
        for w in &report.warnings {
            out.push_str(&format!("\n> [!NOTE]\n> {}\n", escape_markdown(w)));
        }
        let model = match report.model {
            crate::model::report::Model::RankTest => "Rank test",
            crate::model::report::Model::PredictionInterval => {
                "Prediction interval over stored jobs"
            }
        };
        out.push_str(&format!(
            "\n<sub>{model} at α = {} ({} correction, {} look{}), intervals at {} % confidence; changes are head against base; MDE is the smallest change this run would flag with 80 % power.</sub>\n",
            report.alpha,
            report.correction.as_str(),
            report.looks,
            if report.looks == 1 { "" } else { "s" },
            (1.0 - report.alpha) * 100.0
        ));
        out
    }
}

/// The JSON report of DESIGN.md's contract.
pub struct JsonExporter;

impl Exporter for JsonExporter {
    fn render(&self, report: &Report) -> String {
        let mut s = serde_json::to_string_pretty(report).expect("reports serialize to JSON");
        s.push('\n');
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_escaping_neutralizes_repository_text() {
        assert_eq!(
            escape_markdown("a|b <script>@team `x` *y*\nz"),
            "a&#124;b &lt;script&gt;&#64;team \\`x\\` \\*y\\* z"
        );
    }
}
