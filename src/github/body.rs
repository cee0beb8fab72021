//! The text kgate posts: a sticky comment with a hidden marker, fitted to GitHub's limits.
//!
//! GitHub refuses a comment body over 65,536 characters and a check-run summary over 65,535
//! bytes, and drops a job summary over 1 MiB. A large suite can exceed all three, so the report
//! is fitted in steps that keep what a reviewer needs: first the full report; then folded (only
//! the benchmarks and metrics with something to say); then the least important rows dropped,
//! with a line saying how many; only as a last resort a cut at a line boundary.

use crate::model::report::{MetricComparison, Report};
use crate::model::verdict::Verdict;
use crate::render::escape::code_span;
use crate::render::{Exporter, MarkdownExporter};

/// GitHub's limit on an issue or pull-request comment body, in characters.
pub const COMMENT_LIMIT_CHARS: usize = 65_536;
/// GitHub's limit on a check run's `output.summary`, in bytes.
pub const CHECK_SUMMARY_LIMIT_BYTES: usize = 65_535;

/// How a limit is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    Chars,
    Bytes,
}

impl Measure {
    fn of(self, text: &str) -> usize {
        match self {
            Measure::Chars => text.chars().count(),
            Measure::Bytes => text.len(),
        }
    }
}

/// A job id usable in the hidden marker: letters, digits and `._:/-`.
pub fn validate_job_id(id: &str) -> Result<(), String> {
    if !id.is_empty()
        && id.len() <= 100
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._:/-".contains(c))
        && !id.contains("--")
    {
        Ok(())
    } else {
        Err(format!(
            "job id `{id}` may hold only letters, digits and `._:/-` (no `--`), at most 100 characters; for matrix jobs use something like `bench-${{{{ matrix.gpu }}}}`"
        ))
    }
}

/// The hidden marker that identifies kgate's comment for one job: the comment's first line.
pub fn marker(job_id: &str) -> String {
    format!("<!-- kgate:{job_id} -->")
}

/// Whether a comment's `body` is the one `marker` names: the marker is its whole first line,
/// where kgate writes it. Found anywhere else (another job's comment quoting it, a diff in a
/// report), it names nothing.
pub fn carries_marker(body: &str, marker: &str) -> bool {
    body.lines().next() == Some(marker)
}

fn importance(m: &MetricComparison) -> (u8, u64) {
    let rank = match m.verdict {
        Verdict::Failed | Verdict::Incorrect | Verdict::Regressed => 0,
        Verdict::Inconclusive => 1,
        Verdict::Missing => 2,
        Verdict::Improved => 3,
        Verdict::New => 4,
        Verdict::WithinThreshold => 5,
        Verdict::Unchanged => 6,
        Verdict::NotGated => 7,
        Verdict::Skipped | Verdict::Identical => 8,
    };
    let gating = if m.gates { 0 } else { 10 };
    // Larger changes first: sort on the negated magnitude, as an integer key.
    let magnitude = m.change.map(|c| c.abs()).unwrap_or(0.0);
    let key = u64::MAX - (magnitude.min(1e12) * 1e6) as u64;
    (rank + gating, key)
}

fn is_notable(m: &MetricComparison) -> bool {
    m.gates
        && matches!(
            m.verdict,
            Verdict::Regressed | Verdict::Improved | Verdict::Inconclusive | Verdict::Missing
        )
}

/// A copy of the report with only the `keep` most important metric rows; benchmarks left
/// without rows go too, except those that never had any (a missing benchmark) when
/// `metricless` says so.
fn keep_rows(report: &Report, rows: &[(usize, usize)], keep: usize, metricless: bool) -> Report {
    let mut reduced = report.clone();
    let kept: std::collections::BTreeSet<(usize, usize)> = rows[..keep].iter().copied().collect();
    for (bi, b) in reduced.benchmarks.iter_mut().enumerate() {
        let mut mi = 0..;
        b.metrics
            .retain(|_| kept.contains(&(bi, mi.next().unwrap_or_default())));
    }
    // `retain` visits the benchmarks in order, once each.
    let mut had_rows = report.benchmarks.iter().map(|b| !b.metrics.is_empty());
    reduced.benchmarks.retain(|b| {
        use Verdict::{Failed, Inconclusive, Incorrect, Missing, Regressed};
        let had = had_rows.next() == Some(true);
        let bad = matches!(
            b.verdict,
            Regressed | Failed | Incorrect | Inconclusive | Missing
        );
        !b.metrics.is_empty() || (metricless && !had && bad)
    });
    reduced
}

/// Renders `report` as Markdown no longer than `limit` (measured by `measure`), with `header`
/// first and `footer` last. `more` names where the full report is (a link), for the notes.
pub fn fit_markdown(
    report: &Report,
    header: &str,
    footer: &str,
    more: &str,
    limit: usize,
    measure: Measure,
) -> String {
    let assemble = |body: &str, note: &str| format!("{header}{body}{note}{footer}");
    let full = assemble(&MarkdownExporter.render(report), "");
    if measure.of(&full) <= limit {
        return full;
    }
    // Every metric row, most important first; fold to the notable ones, then drop from the end.
    let mut rows: Vec<(usize, usize)> = report
        .benchmarks
        .iter()
        .enumerate()
        .flat_map(|(bi, b)| (0..b.metrics.len()).map(move |mi| (bi, mi)))
        .collect();
    let metric = |&(bi, mi): &(usize, usize)| &report.benchmarks[bi].metrics[mi];
    rows.sort_by_key(|r| importance(metric(r)));
    let total = rows.len();
    let notable = rows.iter().filter(|r| is_notable(metric(r))).count();
    let render_keep = |keep: usize| {
        let reduced = keep_rows(report, &rows, keep, keep >= notable);
        let note = if keep >= notable {
            format!(
                "\n_Folded to fit GitHub's size limit: the {} rows without a change are left out; {more} has every row._\n",
                total - keep
            )
        } else {
            format!(
                "\n_Cut to fit GitHub's size limit: {keep} of {total} rows shown ({keep} of the {notable} rows with a change, most important first); {more} has every row._\n"
            )
        };
        assemble(&MarkdownExporter.render(&reduced), &note)
    };
    let folded = render_keep(notable);
    if measure.of(&folded) <= limit {
        return folded;
    }
    // The largest number of rows that fits (rendering grows with the rows kept).
    let (mut lo, mut hi) = (0usize, notable);
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if measure.of(&render_keep(mid)) <= limit {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    let best = render_keep(lo);
    if measure.of(&best) <= limit {
        return best;
    }
    // Explanations or warnings alone are too long: cut at a line boundary.
    let note = format!("\n\n_Truncated to fit GitHub's size limit; {more} has the full report._\n");
    let room = limit.saturating_sub(measure.of(header) + measure.of(&note) + measure.of(footer));
    let body = MarkdownExporter.render(&keep_rows(report, &rows, 0, false));
    let mut cut = String::new();
    for line in body.split_inclusive('\n') {
        if measure.of(&cut) + measure.of(line) > room {
            break;
        }
        cut.push_str(line);
    }
    assemble(&cut, &note)
}

/// The sticky comment: marker first, then the report fitted to the comment limit.
pub fn comment_body(report: &Report, job_id: &str, run_url: Option<&str>) -> String {
    let mut header = format!("{}\n", marker(job_id));
    if job_id != "default" {
        header.push_str(&format!("<sub>job {}</sub>\n\n", code_span(job_id)));
    }
    let more = match run_url {
        Some(url) => format!("[the job summary]({url})"),
        None => "the job summary".to_string(),
    };
    let footer = match run_url {
        Some(url) => format!("\n<sub>[Workflow run]({url})</sub>\n"),
        None => String::new(),
    };
    let limit = COMMENT_LIMIT_CHARS;
    fit_markdown(report, &header, &footer, &more, limit, Measure::Chars)
}

/// The check run's summary: the report fitted to GitHub's limit on it, in bytes.
pub fn check_run_summary(report: &Report) -> String {
    let (more, limit) = ("the job summary", CHECK_SUMMARY_LIMIT_BYTES);
    fit_markdown(report, "", "", more, limit, Measure::Bytes)
}

/// Whether a comment is warranted under a policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommentPolicy {
    /// Create or update the comment on every run.
    Always,
    /// Create it when a benchmark changed (failed, regressed, improved, new, missing or
    /// inconclusive); keep an existing one up to date.
    OnChange,
    /// Create it when something regressed; keep an existing one up to date.
    OnRegression,
    /// Never comment.
    Never,
}

/// The name users write (`on-change`), as `--comment` and the action's `comment` input take it.
impl std::fmt::Display for CommentPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl CommentPolicy {
    /// Every policy, in the order `--help` lists them.
    pub const ALL: [CommentPolicy; 4] = [
        CommentPolicy::Always,
        CommentPolicy::OnChange,
        CommentPolicy::OnRegression,
        CommentPolicy::Never,
    ];

    /// The name users write: `on-change`.
    pub fn as_str(self) -> &'static str {
        match self {
            CommentPolicy::Always => "always",
            CommentPolicy::OnChange => "on-change",
            CommentPolicy::OnRegression => "on-regression",
            CommentPolicy::Never => "never",
        }
    }

    /// Whether a new comment may be created for this report. An existing comment is updated
    /// whenever the policy is not `never`, so that it never shows a stale verdict.
    pub fn allows_new(self, report: &Report) -> bool {
        let s = &report.summary;
        match self {
            CommentPolicy::Always => true,
            CommentPolicy::OnChange => {
                s.failed
                    + s.incorrect
                    + s.regressed
                    + s.improved
                    + s.inconclusive
                    + s.new
                    + s.missing
                    > 0
            }
            CommentPolicy::OnRegression => s.failed + s.incorrect + s.regressed > 0,
            CommentPolicy::Never => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_marker_counts_only_as_the_first_line() {
        let m = marker("gpu");
        assert!(carries_marker("<!-- kgate:gpu -->\n### PASS", &m));
        assert!(carries_marker("<!-- kgate:gpu -->\r\n### PASS", &m));
        assert!(carries_marker("<!-- kgate:gpu -->", &m));
        for other in [
            "<!-- kgate:cpu -->\n```diff\n+<!-- kgate:gpu -->\n```",
            "x <!-- kgate:gpu -->\n",
            " <!-- kgate:gpu -->\n",
            "<!-- kgate:gpu --> and more\n",
            "<!-- kgate:gpu-h100 -->\n",
            "",
        ] {
            assert!(!carries_marker(other, &m), "{other:?}");
        }
    }
}
