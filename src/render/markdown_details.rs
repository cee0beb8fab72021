//! The per-benchmark part of the Markdown report: counter tables, Mermaid charts and artifact
//! diffs, each benchmark folded in its own `<details>` so the verdict table stays on top.
//!
//! GitHub renders Mermaid `xychart-beta` blocks in comments and job summaries, so a trend or a
//! utilization timeline costs a few hundred characters and no image hosting. Everything from
//! the repository is escaped: names go through [`escape_markdown_html`] inside HTML tags and
//! through `mermaid_label` inside chart labels; diffs sit in a code fence longer than any run
//! of backticks they contain.

use similar::TextDiff;

use crate::model::evidence::{ArtifactPair, BenchmarkEvidence, CounterPair};
use crate::model::report::{BenchmarkComparison, Report};
use crate::model::units::{format_change, format_value};
use crate::model::verdict::Verdict;
use crate::render::escape::{escape_code, escape_markdown, escape_markdown_html, escape_terminal};

/// Points a chart keeps per line; longer series are thinned evenly.
const MAX_CHART_POINTS: usize = 60;
/// Buckets of a counter timeline.
const TIMELINE_BUCKETS: usize = 24;
/// Lines of one artifact diff before it is cut.
const MAX_DIFF_LINES: usize = 400;

/// The per-benchmark sections of every benchmark with evidence worth showing.
pub fn benchmark_sections(report: &Report) -> String {
    let Some(evidence) = &report.evidence else {
        return String::new();
    };
    let mut out = String::new();
    let by_name = evidence.by_name();
    for b in &report.benchmarks {
        if let Some(e) = by_name.get(b.name.as_str()) {
            out.push_str(&benchmark_section(b, e));
        }
    }
    out
}

fn benchmark_section(b: &BenchmarkComparison, e: &BenchmarkEvidence) -> String {
    let mut body = String::new();
    if !b.explanation.is_empty() {
        body.push_str(&format!("{}\n\n", escape_markdown(&b.explanation)));
    }
    if !e.counters.is_empty() {
        body.push_str(&counter_table(&e.counters));
        body.push('\n');
    }
    // Charts where a verdict needs a picture; an unchanged benchmark keeps its tables only.
    if matches!(
        b.verdict,
        Verdict::Regressed | Verdict::Improved | Verdict::Inconclusive
    ) {
        if let Some(chart) = repetition_chart(b, e) {
            body.push_str(&chart);
        }
        if let Some(chart) = trend_chart(b, e) {
            body.push_str(&chart);
        }
        for c in &e.counters {
            if let Some(chart) = timeline_chart(c) {
                body.push_str(&chart);
            }
        }
    }
    for a in e.artifacts.iter().filter(|a| a.changed()) {
        body.push_str(&artifact_diff(a));
    }
    if body.is_empty() {
        return String::new();
    }
    let (name, verdict) = (escape_markdown_html(&b.name), b.verdict.as_str());
    format!("\n<details><summary><b>{name}</b>: {verdict}</summary>\n\n{body}</details>\n")
}

fn median(values: &[f64]) -> Option<f64> {
    crate::stats::summarize(values).map(|s| s.median)
}

/// Counters: the median over repetitions of each repetition's mean reading.
fn counter_table(counters: &[CounterPair]) -> String {
    let mut s = String::from("| counter | base | head | change |\n|---|---:|---:|---:|\n");
    for c in counters {
        let base = median(&c.base.repetition_means);
        let head = median(&c.head.repetition_means);
        let cell = |v: Option<f64>| {
            v.map(|v| format_value(v, &c.unit))
                .unwrap_or_else(|| "–".into())
        };
        let change = match (base, head) {
            (Some(b), Some(h)) if b != 0.0 => format_change(h / b - 1.0),
            _ => "–".into(),
        };
        let [name, base, head] = [&c.name, &cell(base), &cell(head)].map(|t| escape_markdown(t));
        s.push_str(&format!("| {name} | {base} | {head} | {change} |\n"));
    }
    s
}

/// A unit for people and the factor that converts canonical values into it.
pub(crate) fn display_unit(unit: &str, typical: f64) -> (f64, String) {
    if unit == "ns" {
        let abs = typical.abs();
        return if abs >= 1e9 {
            (1e-9, "s".into())
        } else if abs >= 1e6 {
            (1e-6, "ms".into())
        } else if abs >= 1e3 {
            (1e-3, "µs".into())
        } else {
            (1.0, "ns".into())
        };
    }
    (1.0, unit.to_string())
}

/// A chart label: only characters that mean nothing to Mermaid survive.
pub(crate) fn mermaid_label(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_alphanumeric() || " _-.:/()%+=,".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn thin(values: &[f64], max: usize) -> Vec<f64> {
    if values.len() <= max {
        return values.to_vec();
    }
    let spread = |i| values[i * (values.len() - 1) / (max - 1)];
    (0..max).map(spread).collect()
}

fn number_list(values: &[f64]) -> String {
    let items: Vec<String> = values
        .iter()
        .map(|v| {
            let s = format!("{v:.4}");
            let s = s.trim_end_matches('0').trim_end_matches('.');
            if s.is_empty() || s == "-" {
                "0".to_string()
            } else {
                s.to_string()
            }
        })
        .collect();
    format!("[{}]", items.join(", "))
}

/// The gating metric's median over the recorded jobs of this environment, with this run's
/// median as the last point: is the change a step, or part of a drift?
fn trend_chart(b: &BenchmarkComparison, e: &BenchmarkEvidence) -> Option<String> {
    let metric = &b.metrics.iter().find(|m| m.gates)?.name;
    let pair = e.metrics.iter().find(|m| m.name == *metric)?;
    if pair.history.len() < 2 {
        return None;
    }
    let mut medians = pair.history.clone();
    medians.extend(median(&pair.head));
    let typical = median(&medians).unwrap_or_default();
    let (factor, unit) = display_unit(&pair.unit, typical);
    let thinned = thin(&medians, MAX_CHART_POINTS);
    let points: Vec<f64> = thinned.iter().map(|x| x * factor).collect();
    Some(format!(
        "```mermaid\nxychart-beta\n    title \"{} median per recorded job; last point: this run\"\n    x-axis \"job\" 1 --> {}\n    y-axis \"{}\"\n    line {}\n```\n\n",
        mermaid_label(&pair.name),
        points.len(),
        mermaid_label(&unit),
        number_list(&points)
    ))
}

/// The first gating metric's samples by repetition, base then head.
fn repetition_chart(b: &BenchmarkComparison, e: &BenchmarkEvidence) -> Option<String> {
    let gating = b.metrics.iter().find(|m| m.gates).or(b.metrics.first());
    let metric = gating
        .map(|m| &m.name)
        .or(e.metrics.first().map(|m| &m.name))?;
    let pair = e.metrics.iter().find(|m| m.name == *metric)?;
    if pair.base.len() + pair.head.len() < 3 {
        return None;
    }
    let typical = median(&pair.head).or(median(&pair.base));
    let (factor, unit) = display_unit(&pair.unit, typical.unwrap_or_default());
    let scale = |v: &[f64]| -> Vec<f64> {
        let thinned = thin(v, MAX_CHART_POINTS);
        thinned.iter().map(|x| x * factor).collect()
    };
    let base = scale(&pair.base);
    let head = scale(&pair.head);
    let n = base.len().max(head.len());
    let mut s = format!(
        "```mermaid\nxychart-beta\n    title \"{} per repetition: base (first line), head (second)\"\n    x-axis \"repetition\" 1 --> {}\n    y-axis \"{}\"\n",
        mermaid_label(&pair.name),
        n.max(2),
        mermaid_label(&unit)
    );
    for line in [&base, &head] {
        if !line.is_empty() {
            s.push_str(&format!("    line {}\n", number_list(line)));
        }
    }
    s.push_str("```\n\n");
    Some(s)
}

/// Averages a `[t, value]` timeline into equal time buckets over `[0, end]`; an empty bucket
/// repeats the previous one.
pub(crate) fn bucketed(timeline: &[[f64; 2]], end: f64, buckets: usize) -> Vec<f64> {
    let mut sums = vec![(0.0, 0usize); buckets];
    for [t, v] in timeline {
        let i = ((t / end) * buckets as f64).floor();
        let i = i.clamp(0.0, (buckets - 1) as f64) as usize;
        sums[i].0 += v;
        sums[i].1 += 1;
    }
    let mut last = timeline.first().map(|p| p[1]).unwrap_or_default();
    sums.into_iter()
        .map(|(sum, n)| {
            if n > 0 {
                last = sum / n as f64;
            }
            last
        })
        .collect()
}

/// A counter's timeline in the first repetition, base against head, when both have one.
fn timeline_chart(c: &CounterPair) -> Option<String> {
    if c.base.timeline.len() < 2 && c.head.timeline.len() < 2 {
        return None;
    }
    let times = c.base.timeline.iter().chain(&c.head.timeline).map(|p| p[0]);
    let end = times.fold(0.0_f64, f64::max);
    if end <= 0.0 {
        return None;
    }
    let (factor, time_unit) = display_unit("ns", end);
    let mut s = format!(
        "```mermaid\nxychart-beta\n    title \"{} over the first repetition: base (first line), head (second)\"\n    x-axis \"time ({})\" 0 --> {}\n    y-axis \"{}\"\n",
        mermaid_label(&c.name),
        mermaid_label(&time_unit),
        number_list(&[end * factor]).trim_matches(['[', ']']),
        mermaid_label(if c.unit.is_empty() { "value" } else { &c.unit })
    );
    for side in [&c.base, &c.head] {
        if !side.timeline.is_empty() {
            let points = bucketed(&side.timeline, end, TIMELINE_BUCKETS);
            s.push_str(&format!("    line {}\n", number_list(&points)));
        }
    }
    s.push_str("```\n\n");
    Some(s)
}

/// A fence of backticks longer than any run inside `text`.
pub(crate) fn fence_for(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    "`".repeat((longest + 1).max(3))
}

/// The unified diff of an artifact, with a count of changed lines.
pub fn unified_diff(a: &ArtifactPair) -> (String, usize, usize) {
    let base = a.base.as_deref().unwrap_or("");
    let head = a.head.as_deref().unwrap_or("");
    let diff = TextDiff::from_lines(base, head);
    let (mut added, mut removed) = (0, 0);
    for change in diff.iter_all_changes() {
        match change.tag() {
            similar::ChangeTag::Insert => added += 1,
            similar::ChangeTag::Delete => removed += 1,
            similar::ChangeTag::Equal => {}
        }
    }
    let path = escape_terminal(&a.path);
    let (base, head) = (format!("base/{path}"), format!("head/{path}"));
    let mut unified = diff.unified_diff();
    let text = unified.context_radius(3).header(&base, &head).to_string();
    (text, added, removed)
}

fn artifact_diff(a: &ArtifactPair) -> String {
    let (diff, added, removed) = unified_diff(a);
    let mut lines: Vec<&str> = diff.lines().collect();
    let total = lines.len();
    let cut = total > MAX_DIFF_LINES;
    lines.truncate(MAX_DIFF_LINES);
    let mut text = escape_code(&lines.join("\n"));
    if cut {
        let more = total - MAX_DIFF_LINES;
        text.push_str(&format!("\n… {more} more diff lines not shown"));
    }
    let fence = fence_for(&text);
    let side_note = match (&a.base, &a.head) {
        (None, _) => " (new on head)",
        (_, None) => " (gone on head)",
        _ => "",
    };
    let cap = "; the artifact was cut at the size cap";
    let capped = if a.truncated { cap } else { "" };
    let (name, path) = (escape_markdown_html(&a.name), escape_markdown_html(&a.path));
    format!(
        "<details><summary>artifact <code>{name}</code> (<code>{path}</code>) changed{side_note}: +{added} −{removed} lines{capped}</summary>\n\n{fence}diff\n{text}\n{fence}\n\n</details>\n\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_outgrow_backticks_in_the_text() {
        assert_eq!(fence_for("plain"), "```");
        assert_eq!(fence_for("a ```` b"), "`````");
    }

    #[test]
    fn timelines_average_into_buckets_and_carry_gaps() {
        let t = [[0.0, 10.0], [1.0, 30.0], [9.0, 50.0]];
        assert_eq!(bucketed(&t, 10.0, 4), vec![20.0, 20.0, 20.0, 50.0]);
    }

    #[test]
    fn mermaid_labels_lose_quotes_and_brackets() {
        assert_eq!(mermaid_label("a\"b]<c>`d`"), "a_b__c__d_");
    }

    #[test]
    fn diffs_count_added_and_removed_lines() {
        let a = ArtifactPair {
            name: "ptx".into(),
            path: "k.ptx".into(),
            base: Some("ld.global\nadd\nst.global\n".into()),
            head: Some("ld.global\nfma\nst.global\n".into()),
            truncated: false,
        };
        let (text, added, removed) = unified_diff(&a);
        assert_eq!((added, removed), (1, 1));
        assert_contains!(text, "--- base/k.ptx\n+++ head/k.ptx\n");
        assert_contains!(text, "-add\n+fma\n");
    }
}
