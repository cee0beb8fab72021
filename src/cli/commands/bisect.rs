//! `kgate bisect GOOD BAD`: the flags into a bisect request, its progress on stderr, its
//! report in the chosen format, and the exit status its outcome calls for.

use std::path::Path;

use anyhow::{Context, Result};

use super::{load_config, overrides, write_stdout};
use crate::bisect::{self, BisectError, Commit, Observer, Outcome, StepRecord, short};
use crate::cli::{BisectArgs, BisectFormat};
use crate::compare::ComparePolicy;
use crate::model::exit::ExitStatus;
use crate::model::text::{escape_log, escape_terminal};
use crate::plan::Plan;
use crate::run::progress;
use crate::store::fsutil::{self, Overwrite};

/// Says each checkout and each measurement on stderr, one line each.
struct Lines {
    quiet: bool,
}

impl Observer for Lines {
    fn building(&mut self, commit: &Commit) {
        if !self.quiet {
            eprintln!(
                "bisect: checking out {} ({})",
                short(&commit.commit),
                escape_terminal(&commit.subject)
            );
        }
    }

    fn measured(&mut self, benchmark: &str, step: &StepRecord) {
        if self.quiet {
            return;
        }
        let change = match (step.change, step.ci) {
            (Some(c), Some([lo, hi])) => format!(
                ", {} ({} … {})",
                crate::model::units::format_change(c),
                crate::model::units::format_change(lo),
                crate::model::units::format_change(hi)
            ),
            (Some(c), None) => format!(", {}", crate::model::units::format_change(c)),
            _ => String::new(),
        };
        eprintln!(
            "bisect: `{}` at {} (GOOD+{}): {}{change}",
            escape_terminal(benchmark),
            short(&step.commit.commit),
            step.commit.position,
            step.outcome.as_str(),
        );
        if step.outcome == bisect::StepOutcome::Skipped {
            eprintln!("  {}", escape_log(&step.reason));
        }
    }
}

pub(super) fn bisect(config_path: &Path, args: BisectArgs) -> Result<u8> {
    let loaded = load_config(config_path)?;
    crate::github::refuse_untrusted_run(&loaded.root)?;
    let plan = Plan::new(&loaded.config, &overrides(&args.selection))?;
    let policy = ComparePolicy::from(&loaded.config.gate);
    let request = bisect::Request {
        root: &loaded.root,
        plan: &plan,
        policy: &policy,
        time_budget: loaded.config.gate.time_budget.map(|d| d.0),
        good: &args.good,
        bad: &args.bad,
    };
    let mut progress = progress::for_stderr(args.selection.no_progress);
    let mut lines = Lines {
        quiet: args.selection.no_progress,
    };
    let report = match bisect::bisect(&request, progress.as_mut(), &mut lines) {
        Ok(report) => report,
        // An interruption stays one, so that it exits as such.
        Err(BisectError::Run(e)) => return Err(anyhow::Error::from(e)),
        Err(e) => return Err(anyhow::Error::from(e).context("cannot bisect")),
    };
    let json = || -> Result<String> {
        let mut s = serde_json::to_string_pretty(&report)?;
        s.push('\n');
        Ok(s)
    };
    if let Some(path) = &args.save_report {
        fsutil::write_atomic(path, json()?.as_bytes(), Overwrite::Allow)
            .with_context(|| format!("cannot write the bisect report to {}", path.display()))?;
    }
    let text = match args.format {
        BisectFormat::Table => bisect::render::table(&report),
        BisectFormat::Markdown => bisect::render::markdown(&report),
        BisectFormat::Json => json()?,
    };
    match &args.output {
        Some(path) => {
            fsutil::write_atomic(path, text.as_bytes(), Overwrite::Allow)
                .with_context(|| format!("cannot write the bisect to {}", path.display()))?;
            eprintln!(
                "{}",
                escape_terminal(&bisect::render::summary_line(&report))
            );
        }
        None => write_stdout(&text)?,
    }
    Ok(match report.outcome {
        Outcome::Found => ExitStatus::BISECT_FOUND,
        Outcome::NotReproduced => ExitStatus::BISECT_NOT_REPRODUCED,
        Outcome::Undecided => ExitStatus::BISECT_UNDECIDED,
    })
}
