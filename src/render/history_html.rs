//! The history dashboard: one offline HTML page with a chart per benchmark and metric over the
//! recorded jobs (`kgate history --format html`), for publishing on GitHub Pages.
//!
//! Like the HTML report it is one file with no scripts, fonts or style sheets from elsewhere:
//! the charts are `plotters` SVG inlined in the page. Each job is a point at its median, coloured
//! by the gate's verdict in that job; the band behind the line is the minimum detectable effect
//! each job's comparison had (a change inside it could not have been seen), drawn around the
//! median of the jobs before it since the last change point; change points (E-divisive, as the
//! text output finds them) are vertical lines. The points are SVG links to their commits when
//! the repository's web address is known, with a tooltip, and a table under each chart lists
//! the same jobs for readers without a mouse.

use plotters::prelude::*;

use crate::baseline::history::JobSummary;
use crate::model::units::{format_change, format_value};
use crate::model::verdict::Verdict;
use crate::render::escape::escape_html;
use crate::render::html::{BASE_COLOR, HEAD_COLOR, STYLE, css, draw_svg, padded_range, plot_label};
use crate::render::markdown_details::display_unit;
use crate::stats::changepoint::ChangePoint;

const WIDTH: u32 = 900;
const HEIGHT: u32 = 300;
const IMPROVED: RGBColor = RGBColor(0x1b, 0x7f, 0x3b);
const INCONCLUSIVE: RGBColor = RGBColor(0xc2, 0x85, 0x00);
const CHANGE_POINT: RGBColor = RGBColor(0x7b, 0x3f, 0xb5);
/// The MDE band, drawn opaque so a screenshot shows one colour.
const BAND: RGBColor = RGBColor(0xd5, 0xe4, 0xf0);

/// One chart: a benchmark's metric over the recorded jobs, oldest first, and the change points
/// found in its medians.
pub struct HistoryChart<'a> {
    pub benchmark: &'a str,
    pub metric: &'a str,
    pub jobs: &'a [JobSummary],
    pub change_points: &'a [ChangePoint],
}

/// The dashboard page for the history of `key`. `repo_url` (`https://host/owner/repo`) makes
/// each point a link to `REPO/commit/SHA`.
/// `notes` are shown at the top (jobs left out, the order used).
pub fn render_history(
    key: &str,
    charts: &[HistoryChart],
    repo_url: Option<&str>,
    notes: &[String],
) -> String {
    let runs = charts.iter().map(|c| c.jobs.len()).max().unwrap_or(0);
    let mut out = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>kgate history</title>\n<style>",
    );
    out.push_str(STYLE);
    out.push_str(
        "svg a circle{cursor:pointer}.chart{margin-top:1em}td.commit{font-family:monospace}",
    );
    out.push_str("</style>\n</head>\n<body>\n");
    out.push_str(&format!(
        "<h1>kgate history</h1>\n<p>Environment <code>{}</code>: {} chart{}, up to {runs} job{} each, in commit order, oldest on the left.</p>\n",
        escape_html(key),
        charts.len(),
        if charts.len() == 1 { "" } else { "s" },
        if runs == 1 { "" } else { "s" },
    ));
    out.push_str(&format!(
        "<p class=\"legend\">Jobs:<span style=\"background:{}\"></span>unchanged or not compared<span style=\"background:{}\"></span>regressed<span style=\"background:{}\"></span>improved<span style=\"background:{}\"></span>inconclusive<span style=\"background:{}\"></span>change point<span style=\"background:{}\"></span>minimum detectable effect</p>\n",
        css(BASE_COLOR),
        css(HEAD_COLOR),
        css(IMPROVED),
        css(INCONCLUSIVE),
        css(CHANGE_POINT),
        css(BAND),
    ));
    match repo_url {
        Some(url) => out.push_str(&format!(
            "<p>Each point links to its commit in <a href=\"{0}\">{0}</a>.</p>\n",
            escape_html(url)
        )),
        None => out.push_str(
            "<p class=\"warning\">The repository's web address is not known, so the points do not link to their commits (pass <code>--repo-url</code>).</p>\n",
        ),
    }
    for n in notes {
        out.push_str(&format!("<p class=\"warning\">{}</p>\n", escape_html(n)));
    }
    for c in charts {
        out.push_str(&chart_section(c, repo_url));
    }
    out.push_str("<p><small>Change points: E-divisive means with a permutation test. Made by <code>kgate history --format html</code>.</small></p>\n</body>\n</html>\n");
    out
}

fn verdict_color(v: Option<Verdict>) -> RGBColor {
    match v {
        Some(Verdict::Regressed) => HEAD_COLOR,
        Some(Verdict::Improved) => IMPROVED,
        Some(Verdict::Inconclusive) => INCONCLUSIVE,
        _ => BASE_COLOR,
    }
}

fn commit_link(repo_url: Option<&str>, commit: Option<&str>) -> Option<String> {
    Some(format!(
        "{}/commit/{}",
        repo_url?.trim_end_matches('/'),
        commit?
    ))
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
fn reference(c: &HistoryChart, i: usize) -> f64 {
    let start = c
        .change_points
        .iter()
        .map(|p| p.index)
        .filter(|&p| p <= i)
        .max()
        .unwrap_or(0);
    let before: Vec<f64> = c.jobs[start..i].iter().map(|j| j.summary.median).collect();
    crate::stats::summarize(&before)
        .map(|s| s.median)
        .unwrap_or(c.jobs[i].summary.median)
}

fn chart_section(c: &HistoryChart, repo_url: Option<&str>) -> String {
    let unit = c.jobs.last().map(|j| j.unit.as_str()).unwrap_or("");
    let title = format!("{} / {}", c.benchmark, c.metric);
    let mut s = format!(
        "<section class=\"chart\">\n<h2>{}</h2>\n",
        escape_html(&title)
    );
    match chart_svg(c, unit, repo_url) {
        Some(svg) => s.push_str(&svg),
        None => s.push_str("<p>No finite values to draw.</p>\n"),
    }
    if c.change_points.is_empty() {
        s.push_str("<p>No change point.</p>\n");
    } else {
        s.push_str("<ul>\n");
        for p in c.change_points {
            let job = &c.jobs[p.index];
            s.push_str(&format!(
                "<li>change point at job {} (<code>{}</code>): {} (p = {})</li>\n",
                p.index + 1,
                escape_html(short(job.commit.as_deref())),
                escape_html(&format_change(p.relative_change)),
                escape_html(&crate::compare::format_p(p.p_value)),
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
        s.push_str(&format!(
            "<tr><td>{}</td><td class=\"commit l\">{commit}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td class=\"l {verdict}\">{verdict}</td><td>{}</td></tr>\n",
            i + 1,
            escape_html(&j.created),
            escape_html(&format_value(j.summary.median, &j.unit)),
            j.summary.n,
            j.mde.map(|m| format!("±{:.2} %", m * 100.0)).unwrap_or_else(|| "–".into()),
        ));
    }
    s.push_str("</table>\n</details>\n</section>\n");
    s
}

/// The chart's SVG with its points as links. Points are drawn by hand after plotters has drawn
/// the axes, band, line and change points, because plotters' SVG backend has no links.
fn chart_svg(c: &HistoryChart, unit: &str, repo_url: Option<&str>) -> Option<String> {
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
        for p in c.change_points {
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
        let tip = format!(
            "job {} · {} · {} · {} (n={}){}",
            i + 1,
            short(j.commit.as_deref()),
            j.created,
            format_value(j.summary.median, &j.unit),
            j.summary.n,
            match j.verdict {
                Some(_) => format!(
                    " · {verdict}{}",
                    j.mde
                        .map(|m| format!(", MDE ±{:.2} %", m * 100.0))
                        .unwrap_or_default()
                ),
                None => String::new(),
            }
        );
        let r = if matches!(j.verdict, Some(Verdict::Regressed | Verdict::Improved)) {
            7
        } else {
            5
        };
        let circle = format!(
            "<circle class=\"job {}\" cx=\"{x}\" cy=\"{y}\" r=\"{r}\" fill=\"{}\" stroke=\"#ffffff\" stroke-width=\"1\"><title>{}</title></circle>",
            escape_html(verdict),
            css(verdict_color(j.verdict)),
            escape_html(&tip)
        );
        match commit_link(repo_url, j.commit.as_deref()) {
            Some(href) => marks.push_str(&format!(
                "<a href=\"{}\">{circle}</a>\n",
                escape_html(&href)
            )),
            None => marks.push_str(&circle),
        }
    }
    let end = svg.rfind("</svg>")?;
    Some(format!("{}{marks}{}", &svg[..end], &svg[end..]))
}
