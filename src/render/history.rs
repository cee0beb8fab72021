//! `kgate history`'s outputs: text and JSON of each metric's recorded jobs with the change
//! points found in them, and the dashboard: one offline HTML page with a chart per benchmark
//! and metric over the recorded jobs (`--format html`), for publishing on GitHub Pages.
//!
//! Like the HTML report it is one file with no scripts, fonts or style sheets from elsewhere:
//! the charts are `plotters` SVG inlined in the page. Each job is a point at its median, coloured
//! by the gate's verdict in that job; the band behind the line is the minimum detectable effect
//! each job's comparison had (a change inside it could not have been seen), drawn around the
//! median of the jobs before it since the last change point; change points (E-divisive, as the
//! text output finds them) are vertical lines. The points are SVG links to their commits when
//! the repository's web address is known, with a tooltip, and a table under each chart lists
//! the same jobs for readers without a mouse.

use std::io::Write;

use plotters::prelude::*;

use crate::baseline::history::JobSummary;
use crate::compare::format_p;
use crate::model::text::escape_terminal;
use crate::model::units::{format_change, format_value};
use crate::model::verdict::Verdict;
use crate::render::escape::escape_html;
use crate::render::html::{BASE_COLOR, HEAD_COLOR, STYLE, draw_svg, padded_range, plot_label};
use crate::render::markdown_details::display_unit;
use crate::render::strip::css;
use crate::stats::changepoint::{ChangePoint, Settings};

const WIDTH: u32 = 900;
const HEIGHT: u32 = 300;
const IMPROVED: RGBColor = RGBColor(0x1b, 0x7f, 0x3b);
const INCONCLUSIVE: RGBColor = RGBColor(0xc2, 0x85, 0x00);
const CHANGE_POINT: RGBColor = RGBColor(0x7b, 0x3f, 0xb5);
/// The MDE band, drawn opaque so a screenshot shows one colour.
const BAND: RGBColor = RGBColor(0xd5, 0xe4, 0xf0);

/// One metric's history: a benchmark's metric over the recorded jobs, oldest first, and the
/// change points found in its medians.
pub struct MetricHistory {
    pub benchmark: String,
    pub metric: String,
    pub jobs: Vec<JobSummary>,
    pub change_points: Vec<ChangePoint>,
}

/// How many series a dashboard charts unless told otherwise (`kgate history --max-charts`). A
/// chart of 100 jobs with its table is some 44 KB, so a page of a suite with thousands of
/// metrics would run to tens of megabytes that a browser struggles to open; past this many, the
/// series that changed are charted and the rest are a row each in one table.
pub const DEFAULT_MAX_CHARTS: usize = 100;

/// Writes the dashboard page for the history of `key` into `to`, a chart at a time. At most
/// `max_charts` series are charted (`None`: every one); when there are more, the ones charted
/// are those with the largest change point or whose latest job did not pass, the others are
/// summarised in a table at the end, and the page says so. `repo_url`
/// (`https://host/owner/repo`) makes each point a link to `REPO/commit/SHA`. `notes` are shown
/// at the top (jobs left out, the order used).
pub fn write_history_page(
    to: &mut dyn Write,
    key: &str,
    charts: &[MetricHistory],
    repo_url: Option<&str>,
    notes: &[String],
    max_charts: Option<usize>,
) -> std::io::Result<()> {
    let charted = charted_series(charts, max_charts);
    let shown = charted.iter().filter(|&&c| c).count();
    let runs = charts.iter().map(|c| c.jobs.len()).max().unwrap_or(0);
    write!(
        to,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>kgate history</title>\n<style>{STYLE}svg a circle{{cursor:pointer}}.chart{{margin-top:1em}}td.commit{{font-family:monospace}}</style>\n</head>\n<body>\n"
    )?;
    let key = escape_html(key);
    let charts_s = if shown == 1 { "" } else { "s" };
    let jobs_s = if runs == 1 { "" } else { "s" };
    write!(
        to,
        "<h1>kgate history</h1>\n<p>Environment <code>{key}</code>: {shown} chart{charts_s}, up to {runs} job{jobs_s} each, in commit order, oldest on the left.</p>\n"
    )?;
    #[rustfmt::skip]
    let colors = [BASE_COLOR, HEAD_COLOR, IMPROVED, INCONCLUSIVE, CHANGE_POINT, BAND];
    let [base, head, improved, inconclusive, change, band] = colors.map(css);
    writeln!(
        to,
        "<p class=\"legend\">Jobs:<span style=\"background:{base}\"></span>unchanged or not compared<span style=\"background:{head}\"></span>regressed<span style=\"background:{improved}\"></span>improved<span style=\"background:{inconclusive}\"></span>inconclusive<span style=\"background:{change}\"></span>change point<span style=\"background:{band}\"></span>minimum detectable effect</p>"
    )?;
    match repo_url {
        Some(url) => writeln!(
            to,
            "<p>Each point links to its commit in <a href=\"{0}\">{0}</a>.</p>",
            escape_html(url)
        )?,
        None => to.write_all(
            b"<p class=\"warning\">The repository's web address is not known, so the points do not link to their commits (pass <code>--repo-url</code>).</p>\n",
        )?,
    }
    for n in notes {
        writeln!(to, "<p class=\"warning\">{}</p>", escape_html(n))?;
    }
    if shown < charts.len() {
        let (all, other) = (charts.len(), charts.len() - shown);
        writeln!(
            to,
            "<p class=\"warning\">{shown} of {all} series are charted: those with the largest change point or whose latest job did not pass; the other {other} are a row each in the table at the end (<code>--max-charts 0</code> charts every series).</p>"
        )?;
    }
    for (c, _) in charts.iter().zip(&charted).filter(|(_, c)| **c) {
        to.write_all(chart_section(c, repo_url).as_bytes())?;
    }
    if shown < charts.len() {
        write_uncharted_table(to, charts, &charted)?;
    }
    to.write_all(b"<p><small>Change points: E-divisive means with a permutation test. Made by <code>kgate history --format html</code>.</small></p>\n</body>\n</html>\n")
}

/// Which of `charts` get a chart under a cap of `max_charts`: every one when they fit;
/// otherwise the series that changed first (a latest job that did not pass, or a change point,
/// the largest change first), then the rest in page order. The page keeps its order.
fn charted_series(charts: &[MetricHistory], max_charts: Option<usize>) -> Vec<bool> {
    let max = max_charts.unwrap_or(usize::MAX);
    if charts.len() <= max {
        return vec![true; charts.len()];
    }
    let latest_not_passed = |c: &MetricHistory| {
        c.jobs.last().is_some_and(|j| {
            matches!(
                j.verdict,
                Some(Verdict::Regressed | Verdict::Inconclusive | Verdict::Improved)
            )
        })
    };
    let largest_change = |c: &MetricHistory| {
        c.change_points
            .iter()
            .map(|p| p.relative_change.abs())
            .filter(|x| x.is_finite())
            .fold(0.0_f64, f64::max)
    };
    let mut order: Vec<usize> = (0..charts.len()).collect();
    // Stable: series that rank the same keep their page order.
    order.sort_by(|&a, &b| {
        let (a, b) = (&charts[a], &charts[b]);
        latest_not_passed(b)
            .cmp(&latest_not_passed(a))
            .then((!b.change_points.is_empty()).cmp(&!a.change_points.is_empty()))
            .then(largest_change(b).total_cmp(&largest_change(a)))
    });
    let mut charted = vec![false; charts.len()];
    for &i in order.iter().take(max) {
        charted[i] = true;
    }
    charted
}

/// One row per series left without a chart: its jobs, latest median, change over the history
/// and its change points.
fn write_uncharted_table(
    to: &mut dyn Write,
    charts: &[MetricHistory],
    charted: &[bool],
) -> std::io::Result<()> {
    to.write_all(b"<section class=\"chart\">\n<h2>Series not charted</h2>\n<table>\n<tr><th>benchmark / metric</th><th>jobs</th><th>latest median</th><th>first to latest</th><th>change points</th><th>latest verdict</th></tr>\n")?;
    for (c, _) in charts.iter().zip(charted).filter(|(_, c)| !**c) {
        let (Some(first), Some(last)) = (c.jobs.first(), c.jobs.last()) else {
            continue;
        };
        let change = last.summary.median / first.summary.median - 1.0;
        let points: Vec<String> = (c.change_points.iter())
            .map(|p| format!("job {} {}", p.index + 1, format_change(p.relative_change)))
            .collect();
        let points = match points.len() {
            0 => "none".to_string(),
            n => format!("{n}: {}", points.join(", ")),
        };
        let verdict = last.verdict.map(|v| v.as_str()).unwrap_or("–");
        let change = match change.is_finite() {
            true => escape_html(&format_change(change)),
            false => "–".into(),
        };
        let name = escape_html(&format!("{} / {}", c.benchmark, c.metric));
        let (jobs, points) = (c.jobs.len(), escape_html(&points));
        let median = escape_html(&format_value(last.summary.median, &last.unit));
        writeln!(
            to,
            "<tr><td class=\"l\">{name}</td><td>{jobs}</td><td>{median}</td><td>{change}</td><td class=\"l\">{points}</td><td class=\"l {verdict}\">{verdict}</td></tr>"
        )?;
    }
    to.write_all(b"</table>\n</section>\n")
}

fn verdict_color(v: Option<Verdict>) -> RGBColor {
    match v {
        Some(Verdict::Regressed) => HEAD_COLOR,
        Some(Verdict::Improved) => IMPROVED,
        Some(Verdict::Inconclusive) => INCONCLUSIVE,
        _ => BASE_COLOR,
    }
}

/// The address of a commit's page, when the repository's address is a plain web address and
/// the commit an object id: both come from outside (the environment, a history file), and
/// neither may turn the `href` into `javascript:…` or a path elsewhere on the host.
fn commit_link(repo_url: Option<&str>, commit: Option<&str>) -> Option<String> {
    let repo_url = crate::model::text::web_address(repo_url?)?;
    let commit = commit.filter(|c| !c.is_empty() && c.chars().all(|c| c.is_ascii_hexdigit()))?;
    Some(format!("{repo_url}/commit/{commit}"))
}

/// The first 12 characters of a commit (a recorded commit is text from a file, not always hex).
fn short(commit: Option<&str>) -> &str {
    match commit {
        Some(c) => c.char_indices().nth(12).map(|(i, _)| &c[..i]).unwrap_or(c),
        None => "–",
    }
}

/// The median of the jobs before `i` since the last change point at or before `i`: what a job's
/// MDE is measured from.
fn reference(c: &MetricHistory, i: usize) -> f64 {
    let points = c.change_points.iter().map(|p| p.index);
    let start = points.filter(|&p| p <= i).max().unwrap_or(0);
    let before: Vec<f64> = c.jobs[start..i].iter().map(|j| j.summary.median).collect();
    let median = crate::stats::summarize(&before).map(|s| s.median);
    median.unwrap_or(c.jobs[i].summary.median)
}

fn chart_section(c: &MetricHistory, repo_url: Option<&str>) -> String {
    let unit = c.jobs.last().map(|j| j.unit.as_str()).unwrap_or("");
    let title = escape_html(&format!("{} / {}", c.benchmark, c.metric));
    let mut s = format!("<section class=\"chart\">\n<h2>{title}</h2>\n");
    match chart_svg(c, unit, repo_url) {
        Some(svg) => s.push_str(&svg),
        None => s.push_str("<p>No finite values to draw.</p>\n"),
    }
    if c.change_points.is_empty() {
        s.push_str("<p>No change point.</p>\n");
    } else {
        s.push_str("<ul>\n");
        for p in &c.change_points {
            let commit = escape_html(short(c.jobs[p.index].commit.as_deref()));
            let change = escape_html(&format_change(p.relative_change));
            let (job, p) = (p.index + 1, escape_html(&format_p(p.p_value)));
            s.push_str(&format!(
                "<li>change point at job {job} (<code>{commit}</code>): {change} (p = {p})</li>\n"
            ));
        }
        s.push_str("</ul>\n");
    }
    s.push_str("<details><summary>Jobs</summary>\n<table>\n<tr><th>#</th><th>commit</th><th>run</th><th>median</th><th>n</th><th>verdict</th><th>MDE</th></tr>\n");
    for (i, j) in c.jobs.iter().enumerate() {
        let commit = escape_html(short(j.commit.as_deref()));
        let commit = match commit_link(repo_url, j.commit.as_deref()) {
            Some(href) => format!("<a href=\"{}\">{commit}</a>", escape_html(&href)),
            None => commit,
        };
        let verdict = j.verdict.map(|v| v.as_str()).unwrap_or("–");
        let (job, created, n) = (i + 1, escape_html(&j.created), j.summary.n);
        let median = escape_html(&format_value(j.summary.median, &j.unit));
        let mde = j.mde.map_or("–".into(), |m| format!("±{:.2} %", m * 100.0));
        s.push_str(&format!(
            "<tr><td>{job}</td><td class=\"commit l\">{commit}</td><td class=\"l\">{created}</td><td>{median}</td><td>{n}</td><td class=\"l {verdict}\">{verdict}</td><td>{mde}</td></tr>\n"
        ));
    }
    s.push_str("</table>\n</details>\n</section>\n");
    s
}

/// The chart's SVG with its points as links. Points are drawn by hand after plotters has drawn
/// the axes, band, line and change points, because plotters' SVG backend has no links.
fn chart_svg(c: &MetricHistory, unit: &str, repo_url: Option<&str>) -> Option<String> {
    let n = c.jobs.len();
    let typical = c.jobs.last()?.summary.median;
    let (factor, shown_unit) = display_unit(unit, typical);
    let medians: Vec<f64> = c.jobs.iter().map(|j| j.summary.median * factor).collect();
    let bands: Vec<Option<(f64, f64)>> = (0..n)
        .map(|i| {
            let m = c.jobs[i].mde?;
            let r = reference(c, i) * factor;
            let (lo, hi) = (r * (1.0 - m), r * (1.0 + m));
            (lo.is_finite() && hi.is_finite()).then_some((lo, hi))
        })
        .collect();
    let values = medians
        .iter()
        .copied()
        .chain(bands.iter().flatten().flat_map(|&(lo, hi)| [lo, hi]))
        .filter(|v| v.is_finite());
    let (y_lo, y_hi) = padded_range(values)?;
    let mut points: Vec<(i32, i32)> = Vec::new();
    let svg = draw_svg(WIDTH, HEIGHT, |root| {
        let mut chart = ChartBuilder::on(root)
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(70)
            .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), y_lo..y_hi)
            .ok()?;
        chart
            .configure_mesh()
            .x_desc("job (oldest first)")
            .y_desc(plot_label(&shown_unit))
            .x_labels(n.min(12))
            .x_label_formatter(&|x| format!("{}", x.round() as i64 + 1))
            // Bold lines at the labels only: the light lines between them (up to ten per
            // pair) were some 80 % of a chart's SVG, and a page charts every metric of a suite.
            .max_light_lines(0)
            .draw()
            .ok()?;
        chart
            .draw_series(bands.iter().enumerate().filter_map(|(i, b)| {
                let (lo, hi) = (*b)?;
                Some(Rectangle::new(
                    [(i as f64 - 0.5, lo), (i as f64 + 0.5, hi)],
                    BAND.filled(),
                ))
            }))
            .ok()?;
        for p in &c.change_points {
            let x = p.index as f64 - 0.5;
            chart
                .draw_series(LineSeries::new(
                    [(x, y_lo), (x, y_hi)],
                    CHANGE_POINT.stroke_width(2),
                ))
                .ok()?;
        }
        chart
            .draw_series(LineSeries::new(
                medians
                    .iter()
                    .enumerate()
                    .filter(|(_, m)| m.is_finite())
                    .map(|(i, &m)| (i as f64, m)),
                BASE_COLOR.stroke_width(2),
            ))
            .ok()?;
        points = medians
            .iter()
            .enumerate()
            .map(|(i, &m)| chart.backend_coord(&(i as f64, m)))
            .collect();
        Some(())
    })?;
    let mut marks = String::new();
    for (i, (j, (x, y))) in c.jobs.iter().zip(&points).enumerate() {
        if !medians[i].is_finite() {
            continue;
        }
        let verdict = j.verdict.map(|v| v.as_str()).unwrap_or("not-compared");
        let mde = j.mde.map(|m| format!(", MDE ±{:.2} %", m * 100.0));
        let mde = mde.unwrap_or_default();
        let compared = match j.verdict {
            Some(_) => format!(" · {verdict}{mde}"),
            None => String::new(),
        };
        let (job, commit, created, n) =
            (i + 1, short(j.commit.as_deref()), &j.created, j.summary.n);
        let median = format_value(j.summary.median, &j.unit);
        let tip = format!("job {job} · {commit} · {created} · {median} (n={n}){compared}");
        let moved = matches!(j.verdict, Some(Verdict::Regressed | Verdict::Improved));
        let r = if moved { 7 } else { 5 };
        let (class, tip) = (escape_html(verdict), escape_html(&tip));
        let fill = css(verdict_color(j.verdict));
        let circle = format!(
            "<circle class=\"job {class}\" cx=\"{x}\" cy=\"{y}\" r=\"{r}\" fill=\"{fill}\" stroke=\"#ffffff\" stroke-width=\"1\"><title>{tip}</title></circle>"
        );
        match commit_link(repo_url, j.commit.as_deref()) {
            Some(href) => {
                let href = escape_html(&href);
                marks.push_str(&format!("<a href=\"{href}\">{circle}</a>\n"));
            }
            None => marks.push_str(&circle),
        }
    }
    let end = svg.rfind("</svg>")?;
    Some(format!("{}{marks}{}", &svg[..end], &svg[end..]))
}

/// `kgate history --format json`, its keys in alphabetical order (as the document has always
/// had them). Serialised from the histories as they are, straight into the output: building a
/// `serde_json::Value` of every run first held four times the output in memory and took half
/// as long again.
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
    verdict: Option<Verdict>,
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
    serializer.collect_seq(out.iter().map(|h| {
        MetricHistoryJson {
            benchmark: &h.benchmark,
            change_points: (h.change_points.iter())
                .map(|p| ChangePointJson {
                    commit: &h.jobs[p.index].commit,
                    created: &h.jobs[p.index].created,
                    index: p.index,
                    p_value: p.p_value,
                    relative_change: p.relative_change,
                })
                .collect(),
            metric: &h.metric,
            runs: &h.jobs,
            unit: h.jobs.last().map_or("", |s| s.unit.as_str()),
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

/// Writes `HistoryJson` of `out`, indented, with a final newline.
pub fn write_history_json(
    key: &str,
    out: &[MetricHistory],
    to: &mut dyn Write,
) -> std::io::Result<()> {
    let mut buffer = crate::store::fsutil::serializer_buffer(to);
    serde_json::to_writer_pretty(&mut buffer, &HistoryJson { key, metrics: out })?;
    buffer.write_all(b"\n")?;
    buffer.flush()
}

/// `kgate history`'s text: each metric's jobs (time, commit, median, n, verdict), its change
/// points marked.
pub fn history_text(key: &str, runs: usize, settings: &Settings, out: &[MetricHistory]) -> String {
    use std::fmt::Write as _;
    let mut text = String::new();
    let _ = writeln!(
        text,
        "history of {key}: {runs} runs (change points: E-divisive means, permutation test, {} shuffles, seed {:#x}, p ≤ {})",
        settings.permutations, settings.seed, settings.max_p
    );
    for h in out {
        let (series, points) = (&h.jobs, &h.change_points);
        let (benchmark, metric) = (escape_terminal(&h.benchmark), escape_terminal(&h.metric));
        let _ = writeln!(text, "\n{benchmark} / {metric}: {} runs", series.len());
        for (i, s) in series.iter().enumerate() {
            let commit = s.commit.as_deref().map_or("-", |c| {
                c.char_indices().nth(12).map_or(c, |(i, _)| &c[..i])
            });
            let commit = escape_terminal(commit);
            let mark = points.iter().find(|p| p.index == i).map(|p| {
                let (change, p) = (format_change(p.relative_change), format_p(p.p_value));
                format!("  ◀ change point: {change} (p = {p})")
            });
            let mark = mark.unwrap_or_default();
            let verdict = s.verdict.map(|v| format!("  {}", v.as_str()));
            let verdict = verdict.unwrap_or_default();
            let (created, n) = (&s.created, s.summary.n);
            let median = format_value(s.summary.median, &s.unit);
            let _ = writeln!(
                text,
                "  {created}  {commit}  {median:>12}  n={n}{verdict}{mark}"
            );
        }
        if points.is_empty() {
            let _ = writeln!(text, "  no change point");
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commit_link_needs_a_web_address_and_an_object_id() {
        let repo = Some("https://github.com/o/r");
        let link = commit_link(repo, Some("0a1b2c")).unwrap();
        assert_eq!(link, "https://github.com/o/r/commit/0a1b2c");
        for commit in ["../../settings", "x\" onclick=\"y", ""] {
            assert_eq!(commit_link(repo, Some(commit)), None, "{commit}");
        }
        let script = Some("javascript:alert(1)//");
        assert_eq!(commit_link(script, Some("0a1b")), None);
    }

    fn job(median: f64, verdict: Option<Verdict>) -> JobSummary {
        JobSummary {
            created: "2026-11-01T10:00:00Z".into(),
            commit: Some("c0ffee".into()),
            unit: "ns".into(),
            summary: crate::stats::summarize(&[median]).unwrap(),
            verdict,
            mde: None,
        }
    }

    fn point(relative_change: f64) -> ChangePoint {
        ChangePoint {
            index: 1,
            statistic: 1.0,
            p_value: 0.01,
            relative_change,
        }
    }

    #[test]
    fn past_the_cap_the_series_that_changed_are_charted_first() {
        let quiet = [job(1.0, None), job(1.0, Some(Verdict::Unchanged))];
        let latest_regressed = [job(1.0, None), job(1.0, Some(Verdict::Regressed))];
        let small = [point(0.02)];
        let large = [point(-0.30)];
        let chart = |jobs: &[JobSummary], change_points: &[ChangePoint]| MetricHistory {
            benchmark: "b".into(),
            metric: "m".into(),
            jobs: jobs.to_vec(),
            change_points: change_points.to_vec(),
        };
        #[rustfmt::skip]
        let charts = [chart(&quiet, &[]), chart(&quiet, &small), chart(&quiet, &[]),
                      chart(&quiet, &large), chart(&latest_regressed, &[])];
        assert_eq!(charted_series(&charts, None), [true; 5]);
        assert_eq!(charted_series(&charts, Some(5)), [true; 5]);
        // A latest job that did not pass, then the largest change point, then the next; series
        // that rank the same keep their page order.
        let (y, n) = (true, false);
        for (max, charted) in [
            (1, [n, n, n, n, y]),
            (2, [n, n, n, y, y]),
            (3, [n, y, n, y, y]),
            (4, [y, y, n, y, y]),
        ] {
            assert_eq!(charted_series(&charts, Some(max)), charted, "at most {max}");
        }
    }
}
