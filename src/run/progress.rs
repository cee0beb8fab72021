//! Progress output while benchmarks run, fed by one stream of runner events.
//!
//! On a terminal a progress bar (indicatif) shows where the run is; in CI logs and when stderr
//! is not a terminal, plain lines are written instead, one per build and benchmark, so logs stay
//! readable. Both consume the same [`Event`]s, as nextest's reporters do.

use std::io::{IsTerminal, Write};

use indicatif::{ProgressBar, ProgressStyle};

use crate::model::results::BenchmarkResult;
use crate::model::text::escape_terminal;
use crate::model::units;

/// What the runner tells the user about.
#[derive(Debug)]
pub enum Event<'a> {
    /// A build step starts (`revision` is `base` or `head` in an interleaved run).
    BuildStarted {
        command: &'a str,
        revision: Option<&'a str>,
    },
    /// A benchmark starts, with the number of runs it will make in total.
    BenchmarkStarted { name: &'a str, runs: u64 },
    /// One run (warm-up or measured) finished.
    RunFinished,
    /// A benchmark finished (successfully or not).
    BenchmarkFinished {
        result: &'a BenchmarkResult,
        revision: Option<&'a str>,
    },
}

/// Receives runner events.
pub trait Progress {
    fn event(&mut self, event: Event<'_>);
}

/// Chooses the bar on an interactive terminal outside CI, plain lines otherwise.
pub fn for_stderr(disabled: bool) -> Box<dyn Progress> {
    let interactive = std::io::stderr().is_terminal() && std::env::var_os("CI").is_none();
    if disabled {
        Box::new(Silent)
    } else if interactive {
        Box::new(Bar { bar: None })
    } else {
        Box::new(Lines)
    }
}

/// No output at all.
pub struct Silent;

impl Progress for Silent {
    fn event(&mut self, _: Event<'_>) {}
}

/// One line per build and finished benchmark, on stderr.
pub struct Lines;

impl Progress for Lines {
    fn event(&mut self, event: Event<'_>) {
        let line = match event {
            Event::BuildStarted { command, revision } => {
                format!("build{}: {command}", revision_tag(revision))
            }
            Event::BenchmarkFinished { result, revision } => {
                format!("{}{}", summary_line(result), revision_tag(revision))
            }
            Event::BenchmarkStarted { .. } | Event::RunFinished => return,
        };
        let _ = writeln!(std::io::stderr().lock(), "{line}");
    }
}

/// An indicatif bar per benchmark.
pub struct Bar {
    bar: Option<ProgressBar>,
}

impl Progress for Bar {
    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::BuildStarted { command, revision } => {
                let (tag, command) = (revision_tag(revision), escape_terminal(command));
                eprintln!("build{tag}: {command}");
            }
            Event::BenchmarkStarted { name, runs } => {
                let bar = ProgressBar::new(runs);
                let template = "{spinner} {msg:<28} {wide_bar} {pos}/{len} ETA {eta}";
                let style = ProgressStyle::with_template(template);
                bar.set_style(style.unwrap_or_else(|_| ProgressStyle::default_bar()));
                bar.set_message(escape_terminal(name).into_owned());
                self.bar = Some(bar);
            }
            Event::RunFinished => {
                if let Some(bar) = &self.bar {
                    bar.inc(1);
                }
            }
            Event::BenchmarkFinished { result, revision } => {
                let (summary, tag) = (summary_line(result), revision_tag(revision));
                let line = format!("{}{tag}", escape_terminal(&summary));
                match self.bar.take() {
                    Some(bar) => {
                        bar.finish_and_clear();
                        eprintln!("{line}");
                    }
                    None => eprintln!("{line}"),
                }
            }
        }
    }
}

fn revision_tag(revision: Option<&str>) -> String {
    revision.map(|r| format!(" [{r}]")).unwrap_or_default()
}

/// `name: n reps, kernel_time median 6.43 ms` or `name: FAILED (timeout) …`.
fn summary_line(result: &BenchmarkResult) -> String {
    if let Some(message) = result.failed_because() {
        return format!("{}: FAILED: {message}", result.name);
    }
    let primary = result
        .metrics
        .iter()
        .find(|m| m.gate.gates)
        .or(result.metrics.first());
    let name = &result.name;
    let runs = crate::model::text::count(result.repetitions as usize, "repetition", "repetitions");
    let line = match primary.and_then(|m| crate::stats::median(&m.values).map(|v| (m, v))) {
        Some((m, median)) => {
            let median = units::format_value(median, &m.unit);
            format!("{name}: {runs}, {} median {median}", m.name)
        }
        None => format!("{name}: {runs}"),
    };
    // A wrong answer is said as soon as it is known, with the check's own words.
    match result.correctness.as_ref().filter(|c| !c.passed) {
        Some(c) => match c.detail.as_deref() {
            // The benchmark's text: no control character reaches the log.
            Some(detail) => format!("{line}; INCORRECT: {}", escape_terminal(detail)),
            None => format!("{line}; INCORRECT"),
        },
        None => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::results::{Correctness, Provenance};

    #[test]
    fn a_wrong_answer_is_said_on_the_benchmarks_line() {
        let mut r = BenchmarkResult::new("mm", Provenance::default());
        r.repetitions = 3;
        assert_eq!(summary_line(&r), "mm: 3 repetitions");
        Correctness::record(&mut r.correctness, true, None);
        assert_eq!(summary_line(&r), "mm: 3 repetitions");
        let forged = Some("max abs error 0.5\n::error::forged".into());
        Correctness::record(&mut r.correctness, false, forged);
        let said = "mm: 3 repetitions; INCORRECT: max abs error 0.5\\n\\u{3a}:error::forged";
        assert_eq!(summary_line(&r), said);
    }
}
