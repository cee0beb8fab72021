//! A self-contained HTML report with SVG plots, for reading a comparison offline.
//!
//! One file, no scripts, no web fonts, no external style sheets: CI systems keep it as an
//! artifact and people open it from a zip on a plane. The plots are inlined SVG: per benchmark,
//! the samples of base and head on one axis (a strip plot, so a shift or a bimodal side is
//! visible at a glance; written by [`crate::render::strip`]), and each counter's timeline over
//! the first repetition, base against head (drawn with `plotters`' SVG backend). Metrics that
//! held (unchanged or within threshold) are summarised in a line under the table.

use plotters::prelude::*;

use crate::model::evidence::{BenchmarkEvidence, CounterPair, SamplePair};
use crate::model::report::{BenchmarkComparison, MetricComparison, Report};
use crate::model::units::{format_change, format_value};
use crate::model::verdict::Verdict;
use crate::render::escape::{escape_html, escape_html_lines, escape_terminal};
use crate::render::markdown_details::{display_unit, unified_diff};
use crate::render::strip::css;
use crate::render::{Exporter, strip, summary_line, verdict_word};

pub(crate) const BASE_COLOR: RGBColor = RGBColor(0x1f, 0x77, 0xb4);
pub(crate) const HEAD_COLOR: RGBColor = RGBColor(0xd6, 0x27, 0x28);
const PLOT_WIDTH: u32 = 640;
const TIMELINE_HEIGHT: u32 = 240;

/// The HTML report.
pub struct HtmlExporter;

pub(crate) const STYLE: &str = "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2em;color:#222;max-width:1100px}\
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:.2em .5em;text-align:right;white-space:nowrap}\
td:first-child,th:first-child,td.l{text-align:left}.regressed{color:#b00020;font-weight:600}\
.improved{color:#1b7f3b;font-weight:600}.inconclusive{color:#9a6700}.missing,.new{color:#0969da}.failed,.incorrect{color:#cf222e;font-weight:600}\
section{border-top:1px solid #ddd;margin-top:1.5em}pre{background:#f6f8fa;padding:.5em;overflow:auto}\
.legend span{display:inline-block;width:1em;height:.6em;margin:0 .3em 0 1em}figure{margin:.5em 0}";

impl Exporter for HtmlExporter {
    /// Writes the page a benchmark's section at a time: the page of 10,000 benchmarks (37 MB)
    /// was built whole first, 52 MB above the comparison's own memory.
    fn write_to(&self, report: &Report, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        let mut head = String::from(
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>kgate report</title>\n<style>",
        );
        head.push_str(STYLE);
        head.push_str("</style>\n</head>\n<body>\n");
        let (verdict, summary) = (verdict_word(report.verdict), summary_line(report));
        let summary = escape_html(&summary);
        head.push_str(&format!(
            "<h1>kgate: {verdict}</h1>\n<p class=\"summary\">{summary}</p>\n"
        ));
        if let Some(cost) = crate::render::cost_line(report) {
            head.push_str(&format!("<p class=\"cost\">{}</p>\n", escape_html(&cost)));
        }
        if let (Some(b), Some(h)) = (&report.base_commit, &report.head_commit) {
            let dirty = " plus uncommitted changes (the work tree)";
            let dirty = report.head_dirty.then_some(dirty);
            let (b, h, dirty) = (escape_html(b), escape_html(h), dirty.unwrap_or_default());
            head.push_str(&format!(
                "<p>base <code>{b}</code>, head <code>{h}</code>{dirty}</p>\n"
            ));
        }
        for w in &report.warnings {
            head.push_str(&format!("<p class=\"warning\">⚠ {}</p>\n", escape_html(w)));
        }
        let (base, head_color) = (css(BASE_COLOR), css(HEAD_COLOR));
        head.push_str(&format!(
            "<p class=\"legend\">Plots:<span style=\"background:{base}\"></span>base<span style=\"background:{head_color}\"></span>head</p>\n"
        ));
        out.write_all(head.as_bytes())?;
        let by_name = report.evidence.as_ref().map(|e| e.by_name());
        for b in &report.benchmarks {
            let evidence = by_name.as_ref().and_then(|e| e.get(b.name.as_str()));
            let evidence = evidence.copied();
            out.write_all(benchmark_section(b, evidence).as_bytes())?;
        }
        let alpha = report.alpha;
        let end = format!(
            "<p><small>Rank test at α = {alpha}; changes are head against base.</small></p>\n</body>\n</html>\n"
        );
        out.write_all(end.as_bytes())
    }
}

fn benchmark_section(b: &BenchmarkComparison, e: Option<&BenchmarkEvidence>) -> String {
    let (name, verdict) = (escape_html(&b.name), b.verdict.as_str());
    let mut s = format!("<section>\n<h2>{name} <span class=\"{verdict}\">{verdict}</span></h2>\n");
    if !b.explanation.is_empty() {
        s.push_str(&format!("<p>{}</p>\n", escape_html(&b.explanation)));
    }
    // Rows for the metrics that changed or are undecided (or say why they cannot gate); the
    // ones that held are summarised in one line: a suite of a thousand benchmarks would
    // otherwise be tens of thousands of rows saying nothing moved. The JSON report has them.
    let (held, shown): (Vec<&MetricComparison>, Vec<&MetricComparison>) = b
        .metrics
        .iter()
        .partition(|m| matches!(m.verdict, Verdict::Unchanged | Verdict::WithinThreshold));
    if !shown.is_empty() {
        s.push_str("<table>\n<tr><th>metric</th><th>base</th><th>head</th><th>change</th><th>interval</th><th>p</th><th>MDE</th><th>source</th><th>verdict</th></tr>\n");
        for m in shown {
            s.push_str(&metric_row(m));
        }
        s.push_str("</table>\n");
    }
    if !held.is_empty() {
        let named: Vec<String> = held
            .iter()
            .map(|m| {
                let change = m.change.map(format_change).unwrap_or_default();
                let named = format!("{} {change}", escape_html(&m.name));
                named.trim_end().to_string()
            })
            .collect();
        let metrics = crate::model::text::count(held.len(), "metric", "metrics");
        let named = named.join(", ");
        s.push_str(&format!(
            "<p class=\"held\">{metrics} unchanged or within threshold: {named}</p>\n"
        ));
    }
    if let Some(e) = e {
        for pair in &e.metrics {
            if let Some(svg) = strip_plot(pair) {
                s.push_str(&figure(&svg, &format!("{}: samples", pair.name)));
            }
        }
        for c in &e.counters {
            if let Some(svg) = timeline_plot(c) {
                s.push_str(&figure(&svg, &format!("{}: first repetition", c.name)));
            }
        }
        for a in e.artifacts.iter().filter(|a| a.changed()) {
            let (diff, added, removed) = unified_diff(a);
            let (name, diff) = (escape_html(&a.name), escape_html_lines(&diff));
            s.push_str(&format!(
                "<details><summary>artifact <code>{name}</code> changed: +{added} −{removed} lines</summary>\n<pre>{diff}</pre>\n</details>\n"
            ));
        }
    }
    s.push_str("</section>\n");
    s
}

fn figure(svg: &str, caption: &str) -> String {
    format!(
        "<figure>\n{svg}\n<figcaption>{}</figcaption>\n</figure>\n",
        escape_html(caption)
    )
}

fn metric_row(m: &MetricComparison) -> String {
    let summary = |s: &Option<crate::stats::Summary>| {
        s.as_ref()
            .map(|s| escape_html(&format!("{} (n={})", format_value(s.median, &m.unit), s.n)))
            .unwrap_or_else(|| "–".into())
    };
    let opt = |v: Option<String>| v.unwrap_or_else(|| "–".into());
    format!(
        "<tr><td>{}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l\">{}</td><td class=\"l {}\">{}</td></tr>\n",
        escape_html(&m.name),
        crate::compare::explain::marker(m),
        summary(&m.base),
        summary(&m.head),
        opt(m.change.map(format_change)),
        opt(m
            .ci
            .map(|[lo, hi]| format!("{} … {}", format_change(lo), format_change(hi)))),
        opt(m.p_value.map(crate::compare::format_p)),
        opt(m.mde.map(|d| format!("±{:.2} %", d * 100.0))),
        m.source.as_str(),
        if m.gates {
            m.verdict.as_str()
        } else {
            "not-gated"
        },
        escape_html(&crate::render::metric_verdict(m))
    )
}

/// Text for a plot: the SVG backend escapes markup itself, so only the control characters are
/// made visible here (escaping markup too would show `&lt;` in the picture).
pub(crate) fn plot_label(text: &str) -> String {
    escape_terminal(text).into_owned()
}

/// A plot's title: `what (unit)`, or `what` alone for a count without a unit (`Ir`, not
/// `Ir ()`).
fn titled(what: &str, unit: &str) -> String {
    if unit.is_empty() {
        plot_label(what)
    } else {
        plot_label(&format!("{what} ({unit})"))
    }
}

/// Draws into an SVG string; a drawing error (which the SVG backend does not produce for
/// finite data) yields no plot rather than a broken page.
pub(crate) fn draw_svg(
    width: u32,
    height: u32,
    draw: impl FnOnce(&DrawingArea<SVGBackend, plotters::coord::Shift>) -> Option<()>,
) -> Option<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE).ok()?;
        draw(&root)?;
        root.present().ok()?;
    }
    Some(svg)
}

pub(crate) fn padded_range(values: impl Iterator<Item = f64> + Clone) -> Option<(f64, f64)> {
    let lo = values.clone().fold(f64::INFINITY, f64::min);
    let hi = values.fold(f64::NEG_INFINITY, f64::max);
    if !lo.is_finite() || !hi.is_finite() {
        return None;
    }
    let pad = if hi > lo {
        (hi - lo) * 0.08
    } else {
        lo.abs().max(1.0) * 0.05
    };
    Some((lo - pad, hi + pad))
}

/// Base and head samples of one metric on one value axis, each side in its own row with a
/// deterministic jitter, medians marked.
fn strip_plot(pair: &SamplePair) -> Option<String> {
    if pair.base.is_empty() && pair.head.is_empty() {
        return None;
    }
    let typical = crate::stats::summarize(&pair.head)
        .or(crate::stats::summarize(&pair.base))
        .map(|s| s.median)
        .unwrap_or_default();
    let (factor, unit) = display_unit(&pair.unit, typical);
    let scaled = |v: &[f64]| -> Vec<f64> {
        let values = v.iter().map(|x| x * factor);
        values.filter(|x| x.is_finite()).collect()
    };
    let base = scaled(&pair.base);
    let head = scaled(&pair.head);
    let range = padded_range(base.iter().chain(&head).copied())?;
    let median = |v: &[f64]| crate::stats::summarize(v).map(|s| s.median);
    let rows = [
        strip::Row {
            label: "base",
            color: BASE_COLOR,
            values: &base,
            median: median(&base),
        },
        strip::Row {
            label: "head",
            color: HEAD_COLOR,
            values: &head,
            median: median(&head),
        },
    ];
    let (title, unit) = (titled(&pair.name, &unit), plot_label(&unit));
    Some(strip::strip_plot(&title, &unit, range, &rows))
}

/// A counter's readings over the first repetition, base and head as two lines.
fn timeline_plot(c: &CounterPair) -> Option<String> {
    if c.base.timeline.len() < 2 && c.head.timeline.len() < 2 {
        return None;
    }
    let all = || c.base.timeline.iter().chain(&c.head.timeline);
    let end = all().map(|p| p[0]).fold(0.0_f64, f64::max);
    let (factor, time_unit) = display_unit("ns", end);
    let (x_lo, x_hi) = padded_range(all().map(|p| p[0] * factor))?;
    let (y_lo, y_hi) = padded_range(all().map(|p| p[1]))?;
    let y_lo = if c.unit == "%" { y_lo.min(0.0) } else { y_lo };
    let caption = titled(&format!("{} over time", c.name), &c.unit);
    draw_svg(PLOT_WIDTH, TIMELINE_HEIGHT, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(caption, ("sans-serif", 16))
            .margin(8)
            .x_label_area_size(30)
            .y_label_area_size(50)
            .build_cartesian_2d(x_lo..x_hi, y_lo..y_hi)
            .ok()?;
        chart
            .configure_mesh()
            .x_desc(format!("time ({time_unit})"))
            .max_light_lines(0)
            .draw()
            .ok()?;
        for (side, color) in [(&c.base, BASE_COLOR), (&c.head, HEAD_COLOR)] {
            chart
                .draw_series(LineSeries::new(
                    side.timeline.iter().map(|p| (p[0] * factor, p[1])),
                    color.stroke_width(2),
                ))
                .ok()?;
        }
        Some(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A count without a unit is titled by its name alone; a unit stays in parentheses.
    #[test]
    fn a_unitless_metrics_plot_has_no_empty_parentheses() {
        let pair = |name: &str, unit: &str| SamplePair {
            name: name.into(),
            unit: unit.into(),
            base: vec![100.0, 101.0, 102.0],
            head: vec![110.0, 111.0, 112.0],
            ..SamplePair::default()
        };
        for name in ["Ir", "D1_misses"] {
            let svg = strip_plot(&pair(name, "")).unwrap();
            assert_contains!(svg, format!(">{name}</text>"));
            assert!(!svg.contains("()"), "{svg}");
        }
        let svg = strip_plot(&pair("kernel_time", "ns")).unwrap();
        assert_contains!(svg, ">kernel_time (ns)</text>");
    }
}
