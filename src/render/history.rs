//! `kgate history`'s text and JSON: each metric's recorded jobs (commit, median, n, verdict)
//! with the change points found in them. The HTML dashboard is `history_html`.

use std::io::Write as _;

use crate::baseline::history::JobSummary;
use crate::model::text::escape_terminal;
use crate::model::units::{format_change, format_value};
use crate::stats::changepoint::{ChangePoint, Settings};
use crate::store::fsutil;

/// One metric's history: benchmark, metric, the jobs' summaries, the change points among them.
pub type MetricHistory = (String, String, Vec<JobSummary>, Vec<ChangePoint>);

/// `kgate history --format json`, its keys in alphabetical order (as the document has always
/// had them). Serialised from the histories as they are, straight into the output: building a
/// `serde_json::Value` of every run first held four times the output in memory.
#[derive(serde::Serialize)]
struct HistoryJson<'a> {
    key: &'a str,
    #[serde(serialize_with = "metric_histories_json")]
    metrics: &'a [MetricHistory],
}

#[derive(serde::Serialize)]
struct MetricHistoryJson<'a> {
    benchmark: &'a str,
    change_points: Vec<ChangePointJson<'a>>,
    metric: &'a str,
    #[serde(serialize_with = "runs_json")]
    runs: &'a [JobSummary],
    unit: &'a str,
}

#[derive(serde::Serialize)]
struct RunJson<'a> {
    commit: &'a Option<String>,
    created: &'a str,
    mde: Option<f64>,
    median: f64,
    n: usize,
    verdict: Option<crate::model::verdict::Verdict>,
}

#[derive(serde::Serialize)]
struct ChangePointJson<'a> {
    commit: &'a Option<String>,
    created: &'a str,
    index: usize,
    p_value: f64,
    relative_change: f64,
}

fn metric_histories_json<S: serde::Serializer>(
    out: &&[MetricHistory],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(out.iter().map(|(bench, metric, series, points)| {
        MetricHistoryJson {
            benchmark: bench,
            change_points: points
                .iter()
                .map(|p| ChangePointJson {
                    commit: &series[p.index].commit,
                    created: &series[p.index].created,
                    index: p.index,
                    p_value: p.p_value,
                    relative_change: p.relative_change,
                })
                .collect(),
            metric,
            runs: series,
            unit: series.last().map_or("", |s| s.unit.as_str()),
        }
    }))
}

fn runs_json<S: serde::Serializer>(
    series: &&[JobSummary],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(series.iter().map(|s| RunJson {
        commit: &s.commit,
        created: &s.created,
        mde: s.mde,
        median: s.summary.median,
        n: s.summary.n,
        verdict: s.verdict,
    }))
}

/// Writes [`HistoryJson`] of `out`, indented, with a final newline.
pub fn write_history_json(
    key: &str,
    out: &[MetricHistory],
    to: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let mut buffer = fsutil::serializer_buffer(to);
    serde_json::to_writer_pretty(&mut buffer, &HistoryJson { key, metrics: out })?;
    buffer.write_all(b"\n")?;
    buffer.flush()
}

pub fn history_text(key: &str, runs: usize, settings: &Settings, out: &[MetricHistory]) -> String {
    use std::fmt::Write as _;
    let mut text = String::new();
    let _ = writeln!(
        text,
        "history of {key}: {runs} runs (change points: E-divisive means, permutation test, {} shuffles, seed {:#x}, p ≤ {})",
        settings.permutations, settings.seed, settings.max_p
    );
    for (bench, metric, series, points) in out {
        let _ = writeln!(
            text,
            "\n{} / {}: {} runs",
            escape_terminal(bench),
            escape_terminal(metric),
            series.len()
        );
        for (i, s) in series.iter().enumerate() {
            let commit = s.commit.as_deref().map_or("-", |c| {
                c.char_indices().nth(12).map_or(c, |(i, _)| &c[..i])
            });
            let commit = escape_terminal(commit);
            let mark = points
                .iter()
                .find(|p| p.index == i)
                .map(|p| {
                    format!(
                        "  ◀ change point: {} (p = {})",
                        format_change(p.relative_change),
                        crate::compare::format_p(p.p_value)
                    )
                })
                .unwrap_or_default();
            let verdict = s
                .verdict
                .map(|v| format!("  {}", v.as_str()))
                .unwrap_or_default();
            let _ = writeln!(
                text,
                "  {}  {commit}  {:>12}  n={}{verdict}{mark}",
                s.created,
                format_value(s.summary.median, &s.unit),
                s.summary.n
            );
        }
        if points.is_empty() {
            let _ = writeln!(text, "  no change point");
        }
    }
    text
}
