//! A bisect report as people read it: a plain-text table for the terminal and Markdown for an
//! issue or a job summary (JSON is the report itself, serialized).
//!
//! Subjects, benchmark names, units and reasons come from the repository, so each is escaped
//! for its format ([`crate::render::escape`]).

use super::{BenchmarkBisect, BenchmarkOutcome, BisectReport, StepRecord, short};
use crate::compare::format_p;
use crate::model::text::count;
use crate::model::units::format_change;
use crate::render::escape::{escape_markdown, escape_terminal};

/// `+200 %`, or `—` when there is no change.
fn change(step: &StepRecord) -> String {
    step.change.map(format_change).unwrap_or_else(|| "—".into())
}

/// `+190 % … +210 % (98 %)`, or `—`.
fn interval(step: &StepRecord) -> String {
    match (step.ci, step.ci_level) {
        (Some([lo, hi]), Some(level)) => format!(
            "{} … {} ({} %)",
            format_change(lo),
            format_change(hi),
            (level * 1000.0).round() / 10.0
        ),
        (Some([lo, hi]), None) => format!("{} … {}", format_change(lo), format_change(hi)),
        _ => "—".into(),
    }
}

fn p_value(step: &StepRecord) -> String {
    step.p_value.map(format_p).unwrap_or_else(|| "—".into())
}

/// BAD against GOOD, then the search's steps, each with its label (`BAD`, `1`, `2`, …).
fn labelled(b: &BenchmarkBisect) -> impl Iterator<Item = (String, &StepRecord)> {
    let steps = b.steps.iter().enumerate();
    std::iter::once(("BAD".to_string(), &b.endpoints))
        .chain(steps.map(|(i, s)| ((i + 1).to_string(), s)))
}

/// The last line: what was found, in how many measurements and how long.
pub fn summary_line(report: &BisectReport) -> String {
    let located: Vec<String> = report
        .benchmarks
        .iter()
        .filter_map(|b| match b.outcome {
            BenchmarkOutcome::Found => b
                .culprit
                .as_ref()
                .map(|c| format!("{} at {}", b.name, short(&c.commit))),
            BenchmarkOutcome::Range => Some(format!("{} in {} commits", b.name, b.range.len())),
            _ => None,
        })
        .collect();
    let what = match report.outcome {
        super::Outcome::Found => format!("FOUND {}", located.join(", ")),
        super::Outcome::NotReproduced => "NOT REPRODUCED: BAD does not regress against GOOD".into(),
        super::Outcome::Undecided => "UNDECIDED: BAD against GOOD stayed inconclusive".into(),
    };
    format!(
        "{what} ({} of {} commits, {} built, {:.1} s)",
        count(report.measurements, "measurement", "measurements"),
        report.commits,
        report.builds,
        report.seconds
    )
}

/// The terminal table.
pub fn table(report: &BisectReport) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "bisect {} ({}) .. {} ({}): {} on the first-parent history, each measured interleaved against GOOD\n",
        short(&report.good.commit),
        escape_terminal(&report.good.subject),
        short(&report.bad.commit),
        escape_terminal(&report.bad.subject),
        count(report.commits, "commit", "commits"),
    ));
    for b in &report.benchmarks {
        out.push('\n');
        out.push_str(&format!(
            "{} {}: {}\n",
            b.outcome.as_str(),
            escape_terminal(&b.name),
            escape_terminal(&b.explanation)
        ));
        let rows: Vec<[String; 8]> = labelled(b)
            .map(|(label, s)| {
                [
                    label,
                    short(&s.commit.commit).to_string(),
                    s.commit.position.to_string(),
                    s.outcome.as_str().to_string(),
                    s.metric
                        .as_deref()
                        .map(|m| escape_terminal(m).into_owned())
                        .unwrap_or_else(|| "—".into()),
                    change(s),
                    interval(s),
                    p_value(s),
                ]
            })
            .collect();
        let header = [
            "step", "commit", "pos", "outcome", "metric", "change", "CI", "p",
        ]
        .map(String::from);
        let mut widths = header.clone().map(|h| h.chars().count());
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        for row in std::iter::once(&header).chain(&rows) {
            let cells: Vec<String> = row
                .iter()
                .zip(&widths)
                .map(|(c, w)| format!("{c:<w$}", w = *w))
                .collect();
            out.push_str("  ");
            out.push_str(cells.join("  ").trim_end());
            out.push('\n');
        }
        let named = |what: &str, c: &super::Commit| {
            format!("  {what}: {} {}\n", c.commit, escape_terminal(&c.subject))
        };
        if let Some(c) = &b.culprit {
            out.push_str(&named("culprit", c));
        } else if b.outcome == BenchmarkOutcome::Range {
            for c in &b.range {
                out.push_str(&named("candidate", c));
            }
        }
    }
    for note in &report.notes {
        out.push_str(&format!("note: {}\n", escape_terminal(note)));
    }
    out.push('\n');
    out.push_str(&escape_terminal(&summary_line(report)));
    out.push('\n');
    out
}

/// Markdown, for an issue, a comment or a job summary.
pub fn markdown(report: &BisectReport) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "## kgate bisect: {}\n\n",
        escape_markdown(&summary_line(report))
    ));
    out.push_str(&format!(
        "GOOD `{}` ({}) … BAD `{}` ({}): {} on the first-parent history; each step measured interleaved against GOOD at alpha {}.\n",
        short(&report.good.commit),
        escape_markdown(&report.good.subject),
        short(&report.bad.commit),
        escape_markdown(&report.bad.subject),
        count(report.commits, "commit", "commits"),
        report.alpha
    ));
    for b in &report.benchmarks {
        out.push('\n');
        markdown_benchmark(&mut out, b);
    }
    if !report.notes.is_empty() {
        out.push('\n');
        for note in &report.notes {
            out.push_str(&format!("- {}\n", escape_markdown(note)));
        }
    }
    out
}

fn markdown_benchmark(out: &mut String, b: &BenchmarkBisect) {
    out.push_str(&format!(
        "### `{}`: {}\n\n{}\n\n",
        escape_markdown(&b.name),
        b.outcome.as_str(),
        escape_markdown(&b.explanation)
    ));
    match (&b.culprit, b.outcome) {
        (Some(c), _) => out.push_str(&format!(
            "**Culprit:** `{}` {}\n\n",
            escape_markdown(&c.commit),
            escape_markdown(&c.subject)
        )),
        (None, BenchmarkOutcome::Range) => {
            out.push_str("**Candidates:**\n\n");
            for c in &b.range {
                out.push_str(&format!(
                    "- `{}` {}\n",
                    escape_markdown(&c.commit),
                    escape_markdown(&c.subject)
                ));
            }
            out.push('\n');
        }
        _ => {}
    }
    out.push_str(
        "| step | commit | subject | outcome | metric | change | CI | p | repetitions |\n",
    );
    out.push_str("|---|---|---|---|---|---:|---|---:|---:|\n");
    for (label, s) in labelled(b) {
        out.push_str(&format!(
            "| {label} | `{}` | {} | {} | {} | {} | {} | {} | {} |\n",
            short(&s.commit.commit),
            escape_markdown(&s.commit.subject),
            s.outcome.as_str(),
            s.metric
                .as_deref()
                .map(escape_markdown)
                .unwrap_or_else(|| "—".into()),
            change(s),
            interval(s),
            p_value(s),
            s.repetitions
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bisect::{Commit, Outcome, StepOutcome};
    use crate::model::verdict::Verdict;

    fn commit(position: usize, subject: &str) -> Commit {
        Commit {
            commit: format!("{position:0>40}"),
            subject: subject.into(),
            position,
        }
    }

    fn step(position: usize, outcome: StepOutcome, change: Option<f64>) -> StepRecord {
        StepRecord {
            commit: commit(position, "notes"),
            outcome,
            verdict: change.map(|_| match outcome {
                StepOutcome::Bad => Verdict::Regressed,
                _ => Verdict::WithinThreshold,
            }),
            metric: change.map(|_| "wall_time".into()),
            unit: change.map(|_| "ns".into()),
            change,
            ci: change.map(|c| [c - 0.1, c + 0.1]),
            ci_level: change.map(|_| 0.99),
            p_value: change.map(|_| 0.002),
            repetitions: if change.is_some() { 6 } else { 0 },
            reason: "r".into(),
            seconds: 1.0,
        }
    }

    /// A report whose subjects and names hold what a repository can put there: terminal
    /// escapes, a forged line, Markdown table pipes and a mention.
    fn hostile() -> BisectReport {
        let culprit = commit(3, "slower \u{1b}[2J| @team\n::error::forged");
        BisectReport {
            schema_version: 1,
            outcome: Outcome::Found,
            good: commit(0, "<b>good</b>"),
            bad: commit(4, "bad"),
            commits: 4,
            alpha: 0.01,
            benchmarks: vec![
                BenchmarkBisect {
                    name: "k|\u{1b}]".into(),
                    outcome: BenchmarkOutcome::Found,
                    explanation: "first regressed".into(),
                    endpoints: step(4, StepOutcome::Bad, Some(2.0)),
                    culprit: Some(culprit.clone()),
                    range: vec![culprit.clone()],
                    steps: vec![
                        step(2, StepOutcome::Good, Some(0.01)),
                        StepRecord {
                            commit: culprit,
                            ..step(3, StepOutcome::Bad, Some(1.9))
                        },
                    ],
                    linear_steps: Some(3),
                },
                BenchmarkBisect {
                    name: "other".into(),
                    outcome: BenchmarkOutcome::Range,
                    explanation: "one of 2".into(),
                    endpoints: step(4, StepOutcome::Bad, Some(0.5)),
                    culprit: None,
                    range: vec![commit(2, "two"), commit(3, "three")],
                    steps: vec![step(2, StepOutcome::Skipped, None)],
                    linear_steps: None,
                },
            ],
            measurements: 4,
            builds: 4,
            seconds: 12.34,
            notes: vec![],
        }
    }

    #[test]
    fn the_table_shows_each_step_and_escapes_what_the_repository_wrote() {
        let t = table(&hostile());
        assert!(!t.contains('\u{1b}'), "{t}");
        assert!(!t.contains("\n::error"), "{t}");
        assert_contains!(t, "slower \\u{1b}[2J| @team\\n\\u{3a}:error::forged");
        let rows: Vec<&str> = t.lines().filter(|l| l.contains("wall_time")).collect();
        assert_eq!(rows.len(), 4, "{t}");
        assert!(rows[0].starts_with("  BAD   0000000000"), "{t}");
        let cells = ["  2     ", "  3    ", "bad      wall_time", "+190 %"];
        for cell in cells.into_iter().chain(["+180 % … +200 % (99 %)"]) {
            assert_contains!(rows[2], cell);
        }
        assert!(rows[2].ends_with("0.002"), "{t}");
        let skipped = t.lines().find(|l| l.contains("skipped")).unwrap();
        assert!(skipped.starts_with("  1     "), "{skipped}");
        assert!(skipped.ends_with('—'), "{skipped}");
        let candidate = format!("  candidate: {} two\n", commit(2, "").commit);
        assert_contains!(t, candidate);
        let found = "FOUND k|\\u{1b}] at 000000000000, other in 2 commits (4 measurements of 4 commits, 4 built, 12.3 s)\n";
        assert!(t.ends_with(found), "{t}");
    }

    #[test]
    fn markdown_rows_cannot_be_broken_or_mention_anyone() {
        let m = markdown(&hostile());
        assert!(!m.contains('\u{1b}'), "{m}");
        assert!(!m.contains("@team"), "{m}");
        assert!(!m.contains("<b>"), "{m}");
        for row in m.lines().filter(|l| l.starts_with("| ")) {
            // Nine columns: ten pipes.
            assert_eq!(row.matches('|').count(), 10, "{row}");
        }
        assert_contains!(m, "**Culprit:** `0000000000000000000000000000000000000003`");
        let two = commit(2, "").commit;
        assert_contains!(m, format!("**Candidates:**\n\n- `{two}` two\n"));
        let skipped = "| 1 | `000000000000` | notes | skipped | — | — | — | — | 0 |";
        assert_contains!(m, skipped);
    }
}
