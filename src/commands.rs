//! Command handlers: parsed flags in, an exit status out.
//!
//! This is the only layer that prints for people and adds context to errors (anyhow); the
//! pipeline stages below it return typed errors and data.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result, bail};

use crate::baseline;
use crate::cli::{
    BaselineCommand, CheckArgs, Cli, Commands, CompareArgs, ImportArgs, ReportArgs, RunSelection,
};
use crate::compare::{self, ComparePolicy, Design, Report, RunVerdict};
use crate::config::{self, LoadedConfig};
use crate::exit::ExitStatus;
use crate::fsutil::{self, Overwrite};
use crate::import;
use crate::plan::{MetricPolicy, Overrides, Plan};
use crate::progress;
use crate::render::{self, Format};
use crate::results::{RunResults, Status};
use crate::runner::{self, Revision, RunError};
use crate::worktree::Worktree;

/// Runs a parsed command line and returns the process exit status.
pub fn execute(cli: Cli) -> Result<u8> {
    match cli.command {
        Commands::Run(args) => {
            let loaded = load_config(&cli.config)?;
            let results = run_suite(&loaded, &args.selection)?;
            emit_results(&results, args.output.as_deref())?;
            Ok(report_failures(&results))
        }
        Commands::Check(args) => check(&cli.config, args),
        Commands::Compare(args) => compare_files(&cli.config, args),
        Commands::Import(args) => import_files(&cli.config, args),
        Commands::Baseline(BaselineCommand::Save(args)) => {
            let loaded = load_config(&cli.config)?;
            let results = match &args.results {
                Some(path) => RunResults::load(path)?,
                None => run_suite(&loaded, &args.selection)?,
            };
            if results.has_failures() {
                report_failures(&results);
                bail!("not saving a baseline from a run with failed benchmarks");
            }
            let path = baseline::resolve(&loaded.root, &args.name)?;
            baseline::save(&path, &results, args.force)
                .with_context(|| format!("cannot save baseline `{}`", args.name))?;
            eprintln!(
                "saved baseline `{}` ({} benchmarks) to {}",
                args.name,
                results.benchmarks.len(),
                path.display()
            );
            Ok(ExitStatus::PASS)
        }
        Commands::Init(args) => {
            let overwrite = if args.force {
                Overwrite::Allow
            } else {
                Overwrite::Refuse
            };
            fsutil::write_atomic(&cli.config, config::STARTER.as_bytes(), overwrite)?;
            eprintln!(
                "wrote {}; edit its benchmarks, then run `kgate baseline save`",
                cli.config.display()
            );
            Ok(ExitStatus::PASS)
        }
        Commands::Validate => {
            let loaded = load_config(&cli.config)?;
            println!(
                "{}: valid, {} benchmark{}",
                loaded.path.display(),
                loaded.config.benchmarks.len(),
                if loaded.config.benchmarks.len() == 1 {
                    ""
                } else {
                    "s"
                }
            );
            Ok(ExitStatus::PASS)
        }
    }
}

fn load_config(path: &Path) -> Result<LoadedConfig> {
    Ok(config::load(path)?)
}

fn overrides(selection: &RunSelection) -> Overrides {
    Overrides {
        only: selection.bench.clone(),
        repetitions: selection.repetitions,
        warmup: selection.warmup,
        no_build: selection.no_build,
    }
}

fn run_suite(loaded: &LoadedConfig, selection: &RunSelection) -> Result<RunResults> {
    let plan = Plan::new(&loaded.config, &overrides(selection))?;
    let mut progress = progress::for_stderr(selection.no_progress);
    let revision = Revision {
        root: loaded.root.clone(),
        label: None,
    };
    runner::run_plan(&plan, &revision, progress.as_mut()).map_err(anyhow::Error::from)
}

/// Prints each failed benchmark with its stderr tail; returns the exit status of the run.
fn report_failures(results: &RunResults) -> u8 {
    let mut failed = false;
    for b in &results.benchmarks {
        if b.status == Status::Failed {
            failed = true;
            if let Some(f) = &b.failure {
                eprintln!("error: benchmark `{}` failed: {}", b.name, f.message);
                if !f.stderr_tail.is_empty() {
                    eprintln!("  stderr (last lines):");
                    for line in f
                        .stderr_tail
                        .lines()
                        .rev()
                        .take(20)
                        .collect::<Vec<_>>()
                        .into_iter()
                        .rev()
                    {
                        eprintln!("  | {line}");
                    }
                }
            }
        }
    }
    if failed {
        ExitStatus::ERROR
    } else {
        ExitStatus::PASS
    }
}

fn emit_results(results: &RunResults, output: Option<&Path>) -> Result<()> {
    match output {
        Some(path) => results
            .save(path, Overwrite::Allow)
            .with_context(|| format!("cannot write results to {}", path.display())),
        None => write_stdout(&results.to_json()),
    }
}

fn write_stdout(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}

/// Renders and emits a report; returns the exit status its verdict calls for.
fn emit_report(report: &Report, args: &ReportArgs, fail_on_inconclusive: bool) -> Result<u8> {
    let color =
        args.output.is_none() && args.format == Format::Table && render::stdout_wants_color();
    let text = render::exporter(args.format, color).render(report);
    match &args.output {
        Some(path) => {
            fsutil::write_atomic(path, text.as_bytes(), Overwrite::Allow)?;
            // The verdict still goes to the terminal.
            eprintln!("{}", render::summary_line(report));
        }
        None => write_stdout(&text)?,
    }
    Ok(match report.verdict {
        RunVerdict::Pass => ExitStatus::PASS,
        RunVerdict::Regressed => ExitStatus::REGRESSION,
        RunVerdict::Inconclusive if fail_on_inconclusive || args.fail_on_inconclusive => {
            ExitStatus::INCONCLUSIVE
        }
        RunVerdict::Inconclusive => ExitStatus::PASS,
        RunVerdict::NoBaseline => ExitStatus::NO_BASELINE,
    })
}

fn check(config_path: &Path, args: CheckArgs) -> Result<u8> {
    let loaded = load_config(config_path)?;
    let policy = ComparePolicy::from(&loaded.config.gate);
    let fail_on_inconclusive = loaded.config.gate.fail_on_inconclusive;
    let (report, head) = match &args.against {
        Some(reference) => {
            let plan = Plan::new(&loaded.config, &overrides(&args.selection))?;
            let tree = Worktree::checkout(&loaded.root, reference)?;
            eprintln!(
                "measuring {reference} ({}) interleaved with the work tree",
                &tree.commit[..12.min(tree.commit.len())]
            );
            let mut progress = progress::for_stderr(args.selection.no_progress);
            let base_rev = Revision {
                root: tree.root.clone(),
                label: Some("base"),
            };
            let head_rev = Revision {
                root: loaded.root.clone(),
                label: Some("head"),
            };
            let (base, head) =
                runner::run_interleaved(&plan, &base_rev, &head_rev, progress.as_mut())?;
            (
                compare::compare(&base, &head, &policy, Design::Interleaved),
                head,
            )
        }
        None => {
            let path = baseline::resolve(&loaded.root, &args.baseline)?;
            if !path.exists() {
                let head = run_suite(&loaded, &args.selection)?;
                let reason = format!(
                    "no baseline at {}; store one with `kgate baseline save`, or compare against a revision with `kgate check --against REF`",
                    path.display()
                );
                eprintln!("error: {reason}");
                let report = compare::no_baseline(&head, &policy, reason);
                save_candidate(&head, &args)?;
                let status = emit_report(&report, &args.report, fail_on_inconclusive)?;
                return Ok(report_failures(&head).max(status));
            }
            let base = RunResults::load(&path).context("cannot read the stored baseline")?;
            let head = run_suite(&loaded, &args.selection)?;
            (
                compare::compare(&base, &head, &policy, Design::StoredBaseline),
                head,
            )
        }
    };
    save_candidate(&head, &args)?;
    let status = emit_report(&report, &args.report, fail_on_inconclusive)?;
    let failures = report_failures(&head);
    // A benchmark that could not run is an error, whatever the others did.
    Ok(if failures == ExitStatus::ERROR {
        ExitStatus::ERROR
    } else {
        status
    })
}

fn save_candidate(head: &RunResults, args: &CheckArgs) -> Result<()> {
    if let Some(path) = &args.save_results {
        head.save(path, Overwrite::Allow)
            .with_context(|| format!("cannot write results to {}", path.display()))?;
    }
    Ok(())
}

fn compare_files(config_path: &Path, args: CompareArgs) -> Result<u8> {
    let base = RunResults::load(&args.base)?;
    let head = RunResults::load(&args.head)?;
    // The configuration's gate policy applies only when one is named explicitly or present.
    let gate = if config_path.exists() {
        Some(load_config(config_path)?.config.gate)
    } else {
        None
    };
    let mut policy = gate.as_ref().map(ComparePolicy::from).unwrap_or_default();
    if let Some(alpha) = args.alpha {
        if !(alpha > 0.0 && alpha < 0.5) {
            bail!(
                "--alpha {alpha} is not a usable significance level; use a value between 0 and 0.5, such as 0.01"
            );
        }
        policy.alpha = alpha;
    }
    let report = compare::compare(&base, &head, &policy, Design::Files);
    emit_report(
        &report,
        &args.report,
        gate.is_some_and(|g| g.fail_on_inconclusive),
    )
}

fn import_files(config_path: &Path, args: ImportArgs) -> Result<u8> {
    let (policies, threshold) = if config_path.exists() {
        let loaded = load_config(config_path)?;
        let plan = Plan::new(&loaded.config, &Overrides::default())?;
        let policies: BTreeMap<String, MetricPolicy> = plan
            .benchmarks
            .into_iter()
            .map(|b| (b.name, b.metrics))
            .collect();
        (policies, loaded.config.gate.threshold.0)
    } else {
        (BTreeMap::new(), 0.05)
    };
    let policies = import::Policies::new(policies, MetricPolicy::permissive(threshold));
    let results = if args.format.is_trace() {
        let selection = import::trace::TraceSelection::new(
            &args.kernel,
            &args.kernel_glob,
            args.pid,
            args.tid,
        )?;
        import::import_trace(args.format, &args.files, &policies, &selection)?
    } else {
        if !(args.kernel.is_empty() && args.kernel_glob.is_empty())
            || args.pid.is_some()
            || args.tid.is_some()
        {
            bail!(
                "--kernel, --kernel-glob, --pid and --tid apply to chrome-trace and xplane imports only"
            );
        }
        import::import(args.format, &args.files, &policies)?
    };
    emit_results(&results, args.output.as_deref())?;
    Ok(ExitStatus::PASS)
}

/// Whether an error chain holds an interruption.
pub fn is_interruption(err: &anyhow::Error) -> bool {
    err.chain()
        .any(|c| matches!(c.downcast_ref::<RunError>(), Some(RunError::Interrupted)))
}
