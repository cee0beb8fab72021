//! `kgate bisect GOOD BAD`: the flags into [`gate::bisect`]'s options, its lines on stderr,
//! its report in the chosen format, and the exit status its outcome calls for.

use std::path::Path;

use anyhow::{Context, Result};

use super::{load_config, overrides, say, write_stdout};
use crate::bisect::{Outcome, render};
use crate::cli::{BisectArgs, BisectFormat};
use crate::gate;
use crate::model::exit::ExitStatus;
use crate::model::text::escape_terminal;
use crate::run::progress;
use crate::store::fsutil::{self, Overwrite};

pub(super) fn bisect(config_path: &Path, args: BisectArgs) -> Result<u8> {
    let loaded = load_config(config_path)?;
    let options = gate::BisectOptions {
        selection: overrides(&args.selection),
        good: args.good,
        bad: args.bad,
    };
    let quiet = args.selection.no_progress;
    let mut progress = progress::for_stderr(quiet);
    let mut lines = |line: &str| {
        if !quiet {
            say(line);
        }
    };
    let report = gate::bisect(&loaded, &options, progress.as_mut(), &mut lines)?;
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
        BisectFormat::Table => render::table(&report),
        BisectFormat::Markdown => render::markdown(&report),
        BisectFormat::Json => json()?,
    };
    match &args.output {
        Some(path) => {
            fsutil::write_atomic(path, text.as_bytes(), Overwrite::Allow)
                .with_context(|| format!("cannot write the bisect to {}", path.display()))?;
            eprintln!("{}", escape_terminal(&render::summary_line(&report)));
        }
        None => write_stdout(&text)?,
    }
    Ok(match report.outcome {
        Outcome::Found => ExitStatus::BISECT_FOUND,
        Outcome::NotReproduced => ExitStatus::BISECT_NOT_REPRODUCED,
        Outcome::Undecided => ExitStatus::BISECT_UNDECIDED,
    })
}
