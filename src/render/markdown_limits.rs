//! Fitting the Markdown report into GitHub's limits: 65,536 characters for a pull-request
//! comment, 1 MiB for a job summary.
//!
//! The report is already folded (everything but the verdict table sits in `<details>`), so
//! what is left is cutting, from the least to the most important: artifact diffs, then charts
//! and counter tables, then whole benchmarks (unchanged first, regressions last, each group
//! from the end of the list). The verdict line and the summary counts always stay, and a
//! line says what was cut and where the full report is.

use crate::model::report::{BenchmarkComparison, Report};
use crate::model::verdict::Verdict;
use crate::render::{Exporter, MarkdownExporter};

/// GitHub's limit on a pull-request comment, in characters.
pub const GITHUB_COMMENT_LIMIT: usize = 65_536;
/// GitHub's limit on a job's step summary, in bytes: use [`render_markdown_limited_bytes`].
pub const GITHUB_STEP_SUMMARY_LIMIT: usize = 1024 * 1024;

/// Where the reader is told to find the full report when this one was cut.
pub const DEFAULT_FULL_REPORT_HINT: &str = "the job's JSON report (render it with `kgate report FILE --format markdown` or `--format html`)";

/// Markdown cut to at most `max_chars` characters (see [`render_markdown_limited`]).
pub struct LimitedMarkdownExporter {
    pub max_chars: usize,
}

impl Exporter for LimitedMarkdownExporter {
    fn write_to(&self, report: &Report, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        out.write_all(render_markdown_limited(report, self.max_chars).as_bytes())
    }
}

/// The Markdown report, cut to at most `max_chars` characters.
pub fn render_markdown_limited(report: &Report, max_chars: usize) -> String {
    render_markdown_limited_with_hint(report, max_chars, DEFAULT_FULL_REPORT_HINT)
}

/// The Markdown report, cut to at most `max_bytes` bytes of UTF-8 (for a job summary).
pub fn render_markdown_limited_bytes(report: &Report, max_bytes: usize, hint: &str) -> String {
    limited(report, max_bytes, hint, str::len)
}

/// As [`render_markdown_limited`], naming where the full report is (a URL, an artifact name).
pub fn render_markdown_limited_with_hint(report: &Report, max_chars: usize, hint: &str) -> String {
    limited(report, max_chars, hint, chars)
}

fn limited(report: &Report, max_chars: usize, hint: &str, size: fn(&str) -> usize) -> String {
    limited_with(report, max_chars, hint, size, true)
}

/// The fewest characters (and bytes) a row of the "All metrics" table takes: the opening `|`,
/// ten cells of a space, their text and ` |`, and the line's end. The two names may be empty;
/// the other eight cells never are (a number absent shows `–`, source and verdict are words).
const MIN_METRIC_ROW_CHARS: usize = 1 + 10 * 3 + 8 + 1;

/// [`limited`]; `skip_hopeless` skips rendering the steps that keep every benchmark when the
/// rows of the "All metrics" table alone are over the limit (each such render of a suite of
/// thousands of benchmarks cost as much as the whole report, and held a copy of it), saying
/// what they cut all the same: the text is the one rendering them gives.
fn limited_with(
    report: &Report,
    max_chars: usize,
    hint: &str,
    size: fn(&str) -> usize,
    skip_hopeless: bool,
) -> String {
    let rows: usize = report.benchmarks.iter().map(|b| b.metrics.len()).sum();
    let hopeless = skip_hopeless && rows.saturating_mul(MIN_METRIC_ROW_CHARS) > max_chars;
    if !hopeless {
        let full = MarkdownExporter.render(report);
        if size(&full) <= max_chars {
            return full;
        }
    }
    let mut cut: Vec<String> = Vec::new();
    // Without its benchmarks when no step that keeps them all is rendered.
    let mut trimmed = if hopeless {
        without_benchmarks(report)
    } else {
        report.clone()
    };
    if let Some(e) = &mut trimmed.evidence {
        if e.benchmarks.iter().any(|b| !b.artifacts.is_empty()) {
            for b in &mut e.benchmarks {
                b.artifacts.clear();
            }
            cut.push("artifact diffs".into());
            if !hopeless && let Some(text) = fits(&trimmed, &cut, max_chars, hint, size) {
                return text;
            }
        }
        trimmed.evidence = None;
        cut.push("charts and counter tables".into());
        if !hopeless && let Some(text) = fits(&trimmed, &cut, max_chars, hint, size) {
            return text;
        }
    }
    let strip_profiles = report.benchmarks.iter().any(|b| b.profile.is_some());
    if strip_profiles {
        for b in &mut trimmed.benchmarks {
            b.profile = None;
        }
        cut.push("profiles (the JSON report has them)".into());
        if !hopeless && let Some(text) = fits(&trimmed, &cut, max_chars, hint, size) {
            return text;
        }
    }
    let owned = std::mem::take(&mut trimmed.benchmarks);
    let benchmarks: &[BenchmarkComparison] = if hopeless { &report.benchmarks } else { &owned };
    let candidates = Candidates {
        verdicts: benchmarks.iter().map(|b| b.verdict).collect(),
        metrics: benchmarks.iter().map(|b| b.metrics.len()).collect(),
        strip_profiles,
    };
    candidates.best_fit(&trimmed, &cut, &|i| &benchmarks[i], max_chars, hint, size)
}

/// What the search for the most benchmarks that fit knows of every benchmark without holding
/// it: its verdict and its number of metric rows, by its place in the report.
struct Candidates {
    verdicts: Vec<Verdict>,
    metrics: Vec<usize>,
    /// Whether the kept benchmarks go without their profiles.
    strip_profiles: bool,
}

impl Candidates {
    /// The benchmarks from the most to the least important, each group in report order.
    fn order(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.verdicts.len()).collect();
        order.sort_by_key(|&i| (importance(self.verdicts[i]), i));
        order
    }

    /// How many of the most important benchmarks could fit at most: their "All metrics" rows
    /// alone take [`MIN_METRIC_ROW_CHARS`] each, so more than this many never fit.
    fn most_that_could_fit(&self, order: &[usize], max_chars: usize) -> usize {
        let mut used = 0usize;
        order
            .iter()
            .take_while(|&&i| {
                used = used.saturating_add(self.metrics[i].saturating_mul(MIN_METRIC_ROW_CHARS));
                used <= max_chars
            })
            .count()
    }

    /// The report `shell` (with no benchmarks) with the most important benchmarks that fit
    /// `max_chars`, in their original order, and the note on what was `cut`. `benchmark` gives
    /// the benchmark at a place in the report; it is asked only for the places of the
    /// [`Candidates::most_that_could_fit`] most important ones.
    fn best_fit<'b>(
        &self,
        shell: &Report,
        cut: &[String],
        benchmark: &dyn Fn(usize) -> &'b BenchmarkComparison,
        max_chars: usize,
        hint: &str,
        size: fn(&str) -> usize,
    ) -> String {
        let order = self.order();
        let total = order.len();
        // Keep the k most important benchmarks, in their original order; find the largest k
        // that fits by galloping up from one, then bisecting: what fits is usually a small
        // share of a large suite, and a render costs what it keeps, so the search costs a few
        // renders of the part that fits rather than of the whole suite.
        let keep = |k: usize| -> (Report, Vec<String>) {
            let mut kept: Vec<usize> = order[..k].to_vec();
            kept.sort_unstable();
            let mut r = shell.clone();
            r.benchmarks = kept
                .iter()
                .map(|&i| {
                    let mut b = benchmark(i).clone();
                    if self.strip_profiles {
                        b.profile = None;
                    }
                    b
                })
                .collect();
            let mut what = cut.to_vec();
            let dropped = total - k;
            if dropped > 0 {
                let mut by_verdict: Vec<(Verdict, usize)> = Vec::new();
                for &i in &order[k..] {
                    let v = self.verdicts[i];
                    match by_verdict.iter_mut().find(|(w, _)| *w == v) {
                        Some((_, n)) => *n += 1,
                        None => by_verdict.push((v, 1)),
                    }
                }
                let parts: Vec<String> = by_verdict
                    .iter()
                    .map(|(v, n)| format!("{n} {}", v.as_str()))
                    .collect();
                let parts = parts.join(", ");
                what.push(format!("{dropped} of {total} benchmarks ({parts})"));
            }
            (r, what)
        };
        let attempt = |k: usize| {
            let (r, what) = keep(k);
            fits(&r, &what, max_chars, hint, size)
        };
        let (mut lo, mut hi) = (0usize, self.most_that_could_fit(&order, max_chars));
        let mut best = None;
        let mut step = 1;
        while step <= hi {
            match attempt(step) {
                Some(text) => {
                    best = Some(text);
                    lo = step + 1;
                    step *= 2;
                }
                None => {
                    hi = step - 1;
                    break;
                }
            }
        }
        while lo <= hi {
            let mid = (lo + hi) / 2;
            match attempt(mid) {
                Some(text) => {
                    best = Some(text);
                    lo = mid + 1;
                }
                None if mid == 0 => break,
                None => hi = mid - 1,
            }
        }
        if let Some(text) = best {
            return text;
        }
        // Even the verdict alone is too long (huge warnings, or a tiny limit): cut the text.
        let (r, what) = keep(0);
        let text = with_note(&MarkdownExporter.render(&r), &what, hint);
        hard_cut(&text, max_chars, size)
    }
}

/// Everything of `report` but its benchmarks, which are not cloned.
fn without_benchmarks(report: &Report) -> Report {
    Report {
        schema_version: report.schema_version,
        verdict: report.verdict,
        summary: report.summary.clone(),
        design: report.design,
        alpha: report.alpha,
        correction: report.correction,
        looks: report.looks,
        cost: report.cost,
        model: report.model,
        base_commit: report.base_commit.clone(),
        head_commit: report.head_commit.clone(),
        head_dirty: report.head_dirty,
        warnings: report.warnings.clone(),
        benchmarks: Vec::new(),
        evidence: report.evidence.clone(),
    }
}

/// Lower is kept longer: regressions stay to the end, unchanged benchmarks go first.
fn importance(v: Verdict) -> u8 {
    match v {
        Verdict::Regressed | Verdict::Failed | Verdict::Incorrect => 0,
        Verdict::Missing => 1,
        Verdict::Inconclusive => 2,
        Verdict::Improved => 3,
        Verdict::New => 4,
        Verdict::WithinThreshold => 5,
        Verdict::NotGated => 6,
        Verdict::Unchanged => 7,
        Verdict::Skipped | Verdict::Identical => 8,
    }
}

fn chars(text: &str) -> usize {
    text.chars().count()
}

fn note(cut: &[String], hint: &str) -> String {
    format!(
        "\n> [!NOTE]\n> This report was cut to fit GitHub's size limit; left out: {}. The full report is in {hint}.\n",
        cut.join("; ")
    )
}

fn with_note(text: &str, cut: &[String], hint: &str) -> String {
    let note = note(cut, hint);
    // The note goes right after the verdict line, where nobody misses it.
    match text.find("\n\n") {
        Some(i) => {
            let (head, tail) = text.split_at(i + 2);
            format!("{head}{}\n{tail}", note.trim_start())
        }
        None => format!("{text}{note}"),
    }
}

fn fits(
    report: &Report,
    cut: &[String],
    max: usize,
    hint: &str,
    size: fn(&str) -> usize,
) -> Option<String> {
    let text = with_note(&MarkdownExporter.render(report), cut, hint);
    (size(&text) <= max).then_some(text)
}

/// Cuts text to `max` (as `size` measures) at a character boundary, ending in an ellipsis.
fn hard_cut(text: &str, max: usize, size: fn(&str) -> usize) -> String {
    const ELLIPSIS: &str = "\n…\n";
    let budget = max.saturating_sub(size(ELLIPSIS));
    let mut out = String::new();
    let mut used = 0;
    let mut buf = [0u8; 4];
    for c in text.chars() {
        let n = size(c.encode_utf8(&mut buf));
        if used + n > budget {
            break;
        }
        used += n;
        out.push(c);
    }
    if used + size(ELLIPSIS) <= max {
        out.push_str(ELLIPSIS);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::function_diff::BenchmarkProfile;
    use crate::model::report::Design;
    use crate::model::results::{Artifact, BenchmarkResult, MetricSamples, Provenance, RunResults};

    /// A suite of `benchmarks` × 12 metrics whose first benchmarks regress, with artifacts
    /// (one changed), evidence, a profile and a warning.
    fn report(benchmarks: usize) -> Report {
        report_with(benchmarks, |_| 12)
    }

    /// [`report`] with `metrics(b)` metric rows in benchmark `b`.
    fn report_with(benchmarks: usize, metrics: fn(usize) -> usize) -> Report {
        let side = |shift: f64, ir: &str| {
            RunResults::of(
                (0..benchmarks)
                    .map(|b| {
                        let mut r =
                            BenchmarkResult::new(&format!("kernel_{b}"), Provenance::default());
                        r.repetitions = 10;
                        for m in 0..metrics(b) {
                            let change = if b % 5 == 0 { shift } else { 1.0 };
                            let values =
                                (0..10).map(|i| 100.0 * change * (1.0 + 0.002 * f64::from(i)));
                            let values: Vec<f64> = values.collect();
                            r.metrics
                                .push(MetricSamples::timer(&format!("m{m}"), &values));
                        }
                        r.artifacts.insert(
                            "ir".into(),
                            Artifact {
                                path: "out.ll".into(),
                                text: if b == 0 { ir.into() } else { "same\n".into() },
                                truncated: false,
                            },
                        );
                        r
                    })
                    .collect(),
            )
        };
        let (base, head) = (side(1.0, "add\n"), side(1.3, "mul\n"));
        let policy = crate::compare::ComparePolicy::default();
        let mut report = crate::compare::compare(&base, &head, &policy, Design::Files);
        report.attach_bounded_evidence(Some(&base), &head);
        report.benchmarks[0].profile = Some(BenchmarkProfile {
            tool: "callgrind".into(),
            sides: vec!["base".into(), "head".into()],
            events: Vec::new(),
            functions: Vec::new(),
            functions_left_out: 0,
            notes: vec!["a note".into()],
            seconds: 1.0,
        });
        report.warnings.push("a warning".into());
        report
    }

    #[test]
    fn at_most_the_benchmarks_whose_rows_fit_could_fit() {
        let candidates = Candidates {
            verdicts: vec![Verdict::Unchanged; 4],
            metrics: vec![2, 0, 3, 1],
            strip_profiles: false,
        };
        let order = [2, 1, 0, 3];
        let row = MIN_METRIC_ROW_CHARS;
        assert_eq!(candidates.most_that_could_fit(&order, 6 * row), 4);
        assert_eq!(candidates.most_that_could_fit(&order, 6 * row - 1), 3);
        assert_eq!(candidates.most_that_could_fit(&order, 5 * row - 1), 2);
        assert_eq!(candidates.most_that_could_fit(&order, 3 * row), 2);
        assert_eq!(candidates.most_that_could_fit(&order, 3 * row - 1), 0);
    }

    #[test]
    fn skipping_the_renders_that_keep_every_benchmark_gives_the_same_text() {
        let report = report(60);
        let rows: usize = report.benchmarks.iter().map(|b| b.metrics.len()).sum();
        let full = MarkdownExporter.render(&report);
        // Limits under which every row is over the limit alone, and the rest.
        let all_rows = rows * MIN_METRIC_ROW_CHARS;
        #[rustfmt::skip]
        let limits = [80, 2_000, 9_000, all_rows - 1, all_rows, full.len() - 1, full.len()];
        for max in limits {
            for size in [chars as fn(&str) -> usize, str::len] {
                let skipping = limited_with(&report, max, "the artifact", size, true);
                let rendering = limited_with(&report, max, "the artifact", size, false);
                assert_eq!(skipping, rendering, "limit {max}");
                assert!(size(&skipping) <= max, "limit {max}");
            }
        }
        // The bound holds: the table of every row is over it on its own.
        let table_rows = full.lines().filter(|l| l.starts_with("| kernel"));
        let table_rows = table_rows.map(|l| l.chars().count() + 1);
        assert!(table_rows.clone().count() >= rows);
        assert!(table_rows.min().unwrap() >= MIN_METRIC_ROW_CHARS);
    }
}
