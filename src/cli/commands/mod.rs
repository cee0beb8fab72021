//! Command handlers: parsed flags in, an exit status out.
//!
//! This is the only layer that prints for people and adds context to errors (anyhow); the
//! pipeline stages below it return typed errors and data.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result, bail};

mod bisect;
pub mod github;
mod import_files;
mod scale;

use crate::baseline;
use crate::cli::{
    BaselineCommand, CalibrateArgs, CalibrateFormat, CheckArgs, Cli, Commands, CompareArgs,
    RenderArgs, ReportArgs, RunSelection,
};
use crate::compare::{self, ComparePolicy};
use crate::config::{self, LoadedConfig};
use crate::model::evidence::Evidence;
use crate::model::exit::ExitStatus;
use crate::model::report::{Design, Report};
use crate::model::results::{RunResults, Status};
use crate::model::text::{escape_log, escape_terminal};
use crate::model::verdict::RunVerdict;
use crate::plan::{Overrides, Plan};
use crate::render::{self, Format};
use crate::run::progress;
use crate::run::runner::{self, Revision, RunError};
use crate::run::worktree::Worktree;
use crate::store::JsonLayout;
use crate::store::fsutil::{self, Overwrite};

/// Runs a parsed command line and returns the process exit status.
pub fn execute(cli: Cli) -> Result<u8> {
    match cli.command {
        Commands::Run(args) => {
            let loaded = load_config(&cli.config)?;
            let selection = match args.shard {
                Some(shard) => scale::shard_selection(&loaded, &args.selection, shard)?,
                None => Some(args.selection.clone()),
            };
            let results = match selection {
                Some(selection) => run_suite(&loaded, &selection)?,
                None => scale::empty_run(&loaded.root),
            };
            emit_results(&results, args.output.as_deref(), args.pretty)?;
            if args.record {
                scale::record(&loaded.root, &results)?;
            }
            Ok(report_failures(&results))
        }
        Commands::Merge(args) => scale::merge(&args),
        Commands::History(args) => {
            let root = match cli.config.parent() {
                Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
                _ => std::path::PathBuf::from("."),
            };
            scale::history(&root, &args)
        }
        Commands::Baseline(BaselineCommand::Update(args)) => {
            let loaded = load_config(&cli.config)?;
            let results = match &args.results {
                Some(path) => RunResults::load(path)?,
                None => run_suite(&loaded, &args.selection)?,
            };
            if results.has_failures() {
                report_failures(&results);
                bail!("not updating a baseline from a run with failed benchmarks");
            }
            scale::baseline_update(&loaded, &args, &results)
        }
        Commands::Check(args) => check(&cli.config, args),
        Commands::Compare(args) => compare_files(&cli.config, args),
        Commands::Import(args) => import_files::import_files(&cli.config, args),
        Commands::Report(args) => render_stored(args),
        Commands::Baseline(BaselineCommand::Save(args)) => {
            let loaded = load_config(&cli.config)?;
            // Refused before the suite runs, not after minutes of benchmarks.
            let path = baseline::resolve(&loaded.root, &args.name)?;
            if !args.force && path.exists() {
                bail!(
                    "baseline `{}` already exists at {}; pass --force to replace it, use `kgate baseline update` to see the change of every median first, or save under another name with --name",
                    args.name,
                    path.display()
                );
            }
            let results = match &args.results {
                Some(path) => RunResults::load(path)?,
                None => run_suite(&loaded, &args.selection)?,
            };
            if results.has_failures() {
                report_failures(&results);
                bail!("not saving a baseline from a run with failed benchmarks");
            }
            baseline::save(&path, &results, args.force)
                .with_context(|| format!("cannot save baseline `{}`", args.name))?;
            eprintln!(
                "saved baseline `{}` ({}) to {}",
                args.name,
                crate::model::text::count(results.benchmarks.len(), "benchmark", "benchmarks"),
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
        Commands::Ci(args) => github::ci(&cli.config, args),
        Commands::Comment(args) => github::comment(args),
        Commands::Calibrate(args) => calibrate(&cli.config, args),
        Commands::Bisect(args) => bisect::bisect(&cli.config, args),
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
    github::refuse_untrusted_run(&loaded.root)?;
    let plan = Plan::new(&loaded.config, &overrides(selection))?;
    let mut progress = progress::for_stderr(selection.no_progress);
    let revision = Revision {
        root: loaded.root.clone(),
        label: None,
    };
    let mut results = runner::run_plan(&plan, &revision, progress.as_mut())?;
    warn_declared(&plan, &mut results);
    Ok(results)
}

/// Checks the run against the metrics the configuration declared (a declared gating metric
/// that is absent fails its benchmark) and prints the warnings.
fn warn_declared(plan: &Plan, results: &mut RunResults) {
    for w in crate::plan::declared::check_declared_metrics(plan, results) {
        eprintln!("warning: {}", escape_log(&w));
    }
}

/// Prints each failed benchmark with its stderr tail; returns the exit status of the run.
fn report_failures(results: &RunResults) -> u8 {
    report_side_failures(results, None)
}

/// [`report_failures`] of one side of a comparison, named (`base`, `head`) in each line.
fn report_side_failures(results: &RunResults, side: Option<&str>) -> u8 {
    let mut failed = false;
    let side = side.map(|s| format!(" [{s}]")).unwrap_or_default();
    for b in &results.benchmarks {
        if b.status == Status::Failed {
            failed = true;
            if let Some(f) = &b.failure {
                eprintln!(
                    "error: benchmark `{}` failed{side}: {}",
                    escape_terminal(&b.name),
                    escape_log(&f.message)
                );
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
                        eprintln!("  | {}", escape_terminal(line));
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

/// Writes results to a file or stdout, compact unless `pretty`, streamed as they serialise.
fn emit_results(results: &RunResults, output: Option<&Path>, pretty: bool) -> Result<()> {
    let layout = if pretty {
        JsonLayout::Pretty
    } else {
        JsonLayout::Compact
    };
    match output {
        Some(path) => results
            .save_as(path, Overwrite::Allow, layout)
            .with_context(|| format!("cannot write results to {}", path.display())),
        // The same check as a file gets: nothing kgate could not read back.
        None => match results.non_finite() {
            Some(why) => bail!("not writing these results: {why}"),
            None => results
                .save_as(Path::new("-"), Overwrite::Allow, layout)
                .context("cannot write results to stdout"),
        },
    }
}

fn write_stdout(text: &str) -> Result<()> {
    write_stdout_with(|out| out.write_all(text.as_bytes()))
}

/// Streams a document to stdout; a reader that went away (`| head`) is not an error.
fn write_stdout_with(write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> Result<()> {
    Ok(fsutil::write_atomic_with(
        Path::new("-"),
        Overwrite::Allow,
        write,
    )?)
}

/// Writes a report to `output` (atomically) or to stdout, streamed by its exporter.
fn write_report(
    report: &Report,
    exporter: &dyn render::Exporter,
    output: Option<&Path>,
) -> Result<()> {
    match output {
        Some(path) => {
            fsutil::write_atomic_with(path, Overwrite::Allow, |out| exporter.write_to(report, out))
                .with_context(|| format!("cannot write the report to {}", path.display()))?;
            Ok(())
        }
        None => write_stdout_with(|out| exporter.write_to(report, out)),
    }
}

/// Renders and emits a report; returns the exit status its verdict calls for.
fn emit_report(report: &Report, args: &ReportArgs, fail_on_inconclusive: bool) -> Result<u8> {
    let exporter = view_exporter(args.format, &args.view, args.output.is_none())?;
    write_report(report, exporter.as_ref(), args.output.as_deref())?;
    let summary = render::summary_line(report);
    Ok(after_report(report, summary, args, fail_on_inconclusive))
}

/// What follows a written report: its warnings and verdict on the terminal where the report
/// did not go there, and the exit status its verdict calls for.
fn after_report(
    report: &Report,
    summary: String,
    args: &ReportArgs,
    fail_on_inconclusive: bool,
) -> u8 {
    match &args.output {
        Some(_) => {
            // The verdict and the warnings still go to the terminal.
            eprint_warnings(report);
            eprintln!("{}", escape_terminal(&summary));
        }
        // A table or Markdown on stdout carries the warnings itself; JSON, HTML and JUnit on
        // stdout are for programs, so a person reads the warnings on stderr. Each is said once.
        None => {
            if !matches!(args.format, Format::Table | Format::Markdown) {
                eprint_warnings(report);
            }
        }
    }
    match report.verdict {
        RunVerdict::Pass => ExitStatus::PASS,
        RunVerdict::Regressed => ExitStatus::REGRESSION,
        RunVerdict::Inconclusive if fail_on_inconclusive || args.fail_on_inconclusive => {
            ExitStatus::INCONCLUSIVE
        }
        RunVerdict::Inconclusive => ExitStatus::PASS,
        RunVerdict::NoBaseline => ExitStatus::NO_BASELINE,
        RunVerdict::Error => ExitStatus::ERROR,
    }
}

/// The report's warnings on stderr, for a report that does not show them on the terminal.
fn eprint_warnings(report: &Report) {
    for warning in &report.warnings {
        eprintln!("warning: {}", escape_terminal(warning));
    }
}

/// The terminal table as the view flags ask: fitted to the terminal when it goes to one.
fn table_exporter(view: &crate::cli::ViewArgs, to_stdout: bool) -> render::TableExporter {
    render::TableExporter {
        color: to_stdout && render::stdout_wants_color(),
        width: if to_stdout {
            render::stdout_width()
        } else {
            None
        },
        all_metrics: view.all_metrics,
    }
}

/// The exporter of a report format as the view flags ask: the table fitted to the terminal
/// (when it goes to one), Markdown cut to `--max-chars`, JSON indented with `--pretty`.
fn view_exporter(
    format: Format,
    view: &crate::cli::ViewArgs,
    to_stdout: bool,
) -> Result<Box<dyn render::Exporter>> {
    if view.max_chars.is_some() && format != Format::Markdown {
        bail!("--max-chars applies to --format markdown only");
    }
    if view.pretty && format != Format::Json {
        bail!("--pretty applies to --format json only");
    }
    Ok(match format {
        Format::Markdown => match view
            .max_chars
            .unwrap_or(crate::github::body::COMMENT_LIMIT_CHARS)
        {
            0 => render::exporter(format, false),
            max_chars => Box::new(render::LimitedMarkdownExporter { max_chars }),
        },
        Format::Table => Box::new(table_exporter(view, to_stdout)),
        Format::Json => Box::new(render::JsonExporter {
            pretty: view.pretty,
        }),
        other => render::exporter(other, false),
    })
}

/// What `kgate check` measured and decided, before anything is written or printed: `kgate ci`
/// posts this report as it is.
struct Checked {
    report: Report,
    /// The base revision's run, where `--against` measured one.
    base: Option<RunResults>,
    head: RunResults,
    fail_on_inconclusive: bool,
}

fn check(config_path: &Path, args: CheckArgs) -> Result<u8> {
    let checked = run_check(config_path, &args)?;
    emit_checked(&checked, &args)
}

/// Writes a check's candidate results and report; returns the exit status (a benchmark that
/// could not run is an error, whatever the others did).
fn emit_checked(checked: &Checked, args: &CheckArgs) -> Result<u8> {
    save_candidate(&checked.head, args)?;
    let status = emit_report(&checked.report, &args.report, checked.fail_on_inconclusive)?;
    // A failure on either side is an error, with that side's stderr tail.
    let base = checked
        .base
        .as_ref()
        .map_or(ExitStatus::PASS, |b| report_side_failures(b, Some("base")));
    let head = match checked.base {
        Some(_) => report_side_failures(&checked.head, Some("head")),
        None => report_failures(&checked.head),
    };
    Ok(ExitStatus::combine(ExitStatus::combine(base, head), status))
}

/// Runs the suite (and the baseline side when interleaved) and compares.
fn run_check(config_path: &Path, args: &CheckArgs) -> Result<Checked> {
    let loaded = load_config(config_path)?;
    let policy = ComparePolicy::from(&loaded.config.gate);
    let fail_on_inconclusive = loaded.config.gate.fail_on_inconclusive;
    let against = match (&args.against, &args.against_tip) {
        (Some(reference), _) => Some((reference.as_str(), false)),
        (None, Some(reference)) => Some((reference.as_str(), true)),
        (None, None) => None,
    };
    // The base revision's work tree, kept for profiling the base side of a regression.
    let mut base_tree: Option<Worktree> = None;
    let (report, base, head) = match against {
        Some((reference, tip)) => {
            github::refuse_untrusted_run(&loaded.root)?;
            let mut plan = Plan::new(&loaded.config, &overrides(&args.selection))?;
            let (commit, what) = against_commit(&loaded.root, reference, tip)?;
            let tree = Worktree::checkout(&loaded.root, &commit)?;
            eprintln!(
                "measuring {what} ({}) interleaved with the work tree",
                &tree.commit[..12.min(tree.commit.len())]
            );
            let removed = match declared_at_base(&loaded, &args.selection, &tree.root, &what) {
                Some(base_plan) => {
                    let declared: std::collections::HashSet<String> = base_plan
                        .benchmarks
                        .iter()
                        .map(|b| b.name.clone())
                        .collect();
                    for b in plan.benchmarks.iter_mut() {
                        b.head_only = !declared.contains(&b.name);
                        // The base's own declaration enters its side's identity digest, so a
                        // change to the command or the settings is always measured.
                        if b.identity.is_some() && !args.measure_identical {
                            b.base_description = base_plan
                                .benchmarks
                                .iter()
                                .find(|x| x.name == b.name && x.identity.is_some())
                                .map(|x| x.description());
                        }
                    }
                    // Only a run of the whole suite can tell that one is gone.
                    let mut removed: Vec<String> = declared
                        .into_iter()
                        .filter(|name| !loaded.config.benchmarks.iter().any(|b| &b.name == name))
                        .collect();
                    if !args.selection.bench.is_empty() {
                        removed.clear();
                    }
                    removed
                }
                None => Vec::new(),
            };
            let mut progress = progress::for_stderr(args.selection.no_progress);
            let base_rev = Revision {
                root: tree.root.clone(),
                label: Some("base"),
            };
            let head_rev = Revision {
                root: loaded.root.clone(),
                label: Some("head"),
            };
            let adaptive = runner::Adaptive {
                policy: policy.clone(),
                time_budget: loaded.config.gate.time_budget.map(|d| d.0),
            };
            let (base, mut head) = runner::run_interleaved_adaptive(
                &plan,
                &base_rev,
                &head_rev,
                progress.as_mut(),
                Some(&adaptive),
            )?;
            warn_declared(&plan, &mut head);
            let mut report = compare::compare(&base, &head, &policy, Design::Interleaved);
            if !removed.is_empty() {
                crate::compare::adjust::mark_removed(&mut report, &removed);
            }
            report.evidence = Some(Evidence::from_runs(Some(&base), &head));
            base_tree = Some(tree);
            (report, Some(base), head)
        }
        None => {
            let path = baseline::resolve(&loaded.root, &args.baseline)?;
            let (selection, skipped) = match &args.changed_since {
                Some(reference) => {
                    let (run, skipped) =
                        scale::changed_selection(&loaded, &args.selection, reference)?;
                    let selection = (!run.is_empty()).then(|| RunSelection {
                        bench: run,
                        ..args.selection.clone()
                    });
                    (selection, skipped)
                }
                None => (Some(args.selection.clone()), Vec::new()),
            };
            let run_selected = |selection: &Option<RunSelection>| match selection {
                Some(selection) => run_suite(&loaded, selection),
                None => Ok(scale::empty_run(&loaded.root)),
            };
            if args.baseline_ref.is_none()
                && !path.exists()
                && args.baseline != baseline::DEFAULT_NAME
            {
                // A name someone typed that is not there: a typo, most likely; said before the
                // suite runs. A missing default baseline is a first run, measured below.
                bail!(
                    "no baseline `{}` at {}; {}. Store it with `kgate baseline save --name {}`",
                    args.baseline,
                    path.display(),
                    baseline::listing(&loaded.root),
                    args.baseline
                );
            }
            if args.baseline_ref.is_none() && !path.exists() {
                let head = run_selected(&selection)?;
                let reason = format!(
                    "no baseline at {}; store one with `kgate baseline save`, or compare against a revision with `kgate check --against REF`",
                    path.display()
                );
                let mut report = compare::no_baseline(&head, &policy, reason);
                if !skipped.is_empty() {
                    crate::compare::adjust::mark_skipped(
                        &mut report,
                        &skipped,
                        None,
                        "skipped: not affected by the changed files",
                    );
                }
                report.evidence = Some(Evidence::from_runs(None, &head));
                return Ok(Checked {
                    report,
                    base: None,
                    head,
                    fail_on_inconclusive,
                });
            }
            let base = match &args.baseline_ref {
                Some(reference) => scale::baseline_at_ref(&loaded.root, &path, reference)?,
                None => RunResults::load(&path).context("cannot read the stored baseline")?,
            };
            let history = load_history(&args.history)?;
            let head = run_selected(&selection)?;
            // Earlier jobs for the prediction-interval model: the files given with --history,
            // else the history store's records of this runner class (kept by --record): the
            // key `--record` files them under, whichever benchmarks this run selected.
            let key = crate::machine::envkey::class_key(&head.environment);
            let records = crate::baseline::history::load(&loaded.root, &key)?;
            let (medians, off_level) = if history.is_empty() {
                crate::baseline::history::job_medians(&records)
            } else {
                (
                    compare::job_medians(std::iter::once(&base).chain(&history)),
                    0,
                )
            };
            let mut report = compare::compare_with_job_medians(
                &base,
                &head,
                &medians,
                &policy,
                Design::StoredBaseline,
            );
            if off_level > 0 {
                report.warnings.push(format!(
                    "{} in which the gate found a metric regressed or improved {} left out of that metric's prediction interval: off the baseline's level, such a job cannot describe it",
                    crate::model::text::count(off_level, "recorded job", "recorded jobs"),
                    if off_level == 1 { "is" } else { "are" }
                ));
            }
            scale::check_environments(
                &base,
                &head,
                scale::allowance(
                    args.allow_fingerprint_mismatch,
                    loaded.config.gate.allow_fingerprint_mismatch,
                ),
                &mut report.warnings,
            )?;
            if !skipped.is_empty() {
                let why = format!(
                    "skipped: no file changed since {} matches its `paths`",
                    args.changed_since.as_deref().unwrap_or("the reference")
                );
                crate::compare::adjust::mark_skipped(&mut report, &skipped, Some(&base), &why);
            }
            // The baseline's other benchmarks were not asked for: not run, not missing.
            let unselected = unselected(&loaded, &args.selection, &base);
            if !unselected.is_empty() {
                crate::compare::adjust::mark_skipped(
                    &mut report,
                    &unselected,
                    Some(&base),
                    "skipped: not selected (`--bench`)",
                );
            }
            let mut evidence = Evidence::from_runs(Some(&base), &head);
            crate::baseline::history::add_to_evidence(&mut evidence, &records);
            report.evidence = Some(evidence);
            (report, None, head)
        }
    };
    let mut report = report;
    scale::apply_waivers(&loaded.root, &mut report)?;
    if args.profile_regressions || loaded.config.gate.on_regression == config::OnRegression::Profile
    {
        profile_regressions(&loaded, args, base_tree.as_ref(), &mut report)?;
    }
    if args.record {
        scale::record_checked(&loaded.root, &head, &report)?;
    }
    if !args.report.view.full_evidence {
        report.bound_evidence();
    }
    Ok(Checked {
        report,
        base,
        head,
        fail_on_inconclusive,
    })
}

/// The baseline's benchmarks that the configuration declares but `--bench` left out.
fn unselected(loaded: &LoadedConfig, selection: &RunSelection, base: &RunResults) -> Vec<String> {
    if selection.bench.is_empty() {
        return Vec::new();
    }
    base.benchmarks
        .iter()
        .map(|b| &b.name)
        .filter(|name| !selection.bench.contains(name))
        .filter(|name| loaded.config.benchmarks.iter().any(|b| &b.name == *name))
        .cloned()
        .collect()
}

/// The plan of the base revision's configuration (its file at the same place in the base's
/// tree, `base_root`), with this run's overrides but every benchmark: a benchmark it does not
/// declare is measured on the head side only and reported `new`, and the declaration of one it
/// does enters the base side's identity digest. None, with a warning, where that file cannot
/// be read as a configuration (every benchmark is then measured on both sides, and one that
/// fails at the base is an error).
fn declared_at_base(
    loaded: &LoadedConfig,
    selection: &RunSelection,
    base_root: &Path,
    what: &str,
) -> Option<Plan> {
    let file = base_root.join(loaded.path.file_name()?);
    if !file.exists() {
        eprintln!(
            "note: {what} has no `{}`: it declares no benchmark, so every benchmark is new and none gates",
            escape_terminal(&file.file_name()?.to_string_lossy())
        );
        return Some(Plan {
            builds: Vec::new(),
            benchmarks: Vec::new(),
            policy: loaded.config.gate.clone(),
        });
    }
    let every = Overrides {
        only: Vec::new(),
        ..overrides(selection)
    };
    match config::load(&file).map(|base| Plan::new(&base.config, &every)) {
        Ok(Ok(plan)) => Some(plan),
        Ok(Err(e)) => {
            eprintln!(
                "warning: the configuration of {what} cannot be planned ({}); every benchmark is measured on both sides",
                escape_log(&e.to_string())
            );
            None
        }
        Err(e) => {
            eprintln!(
                "warning: the configuration of {what} cannot be read ({}); every benchmark is measured on both sides",
                escape_log(&e.to_string())
            );
            None
        }
    }
}

/// Re-runs each regressed benchmark under a deeper capture on each side that can be re-run
/// (see `crate::profile`) and attaches what changed to the report.
fn profile_regressions(
    loaded: &LoadedConfig,
    args: &CheckArgs,
    base_tree: Option<&Worktree>,
    report: &mut Report,
) -> Result<()> {
    let regressed = report.summary.regressed;
    if regressed == 0 {
        return Ok(());
    }
    let plan = Plan::new(&loaded.config, &overrides(&args.selection))?;
    let budget = loaded
        .config
        .gate
        .profile_budget
        .map_or(config::DEFAULT_PROFILE_BUDGET, |d| d.0);
    eprintln!(
        "profiling {} under a deeper capture",
        crate::model::text::count(regressed, "regressed benchmark", "regressed benchmarks")
    );
    let sides = crate::profile::Sides {
        base: base_tree.map(|t| t.root.as_path()),
        head: &loaded.root,
    };
    let profiled = crate::profile::profile_regressions(report, &plan, &sides, budget);
    if profiled < regressed {
        eprintln!(
            "profiled {profiled} of {regressed}; the report's profile notes say why the others were not"
        );
    }
    Ok(())
}

/// The commit `check --against REF` measures, and how to name it: the merge-base of REF and
/// HEAD (what the branch started from, so that commits REF gained since do not count as the
/// branch's changes), or REF itself with `--against-tip`. When HEAD contains REF (`HEAD`,
/// `HEAD~1`, an ancestor branch) the two are the same commit.
fn against_commit(root: &Path, reference: &str, tip: bool) -> Result<(String, String)> {
    let top = crate::baseline::gitref::toplevel(root)?;
    let commit = crate::baseline::gitref::resolve(&top, reference)?;
    if tip {
        return Ok((commit, reference.to_string()));
    }
    let base = crate::baseline::gitref::merge_base(&top, reference)?;
    let what = if base == commit {
        reference.to_string()
    } else {
        format!("the merge-base of {reference} and HEAD")
    };
    Ok((base, what))
}

fn save_candidate(head: &RunResults, args: &CheckArgs) -> Result<()> {
    if let Some(path) = &args.save_results {
        head.save(path, Overwrite::Allow)
            .with_context(|| format!("cannot write results to {}", path.display()))?;
    }
    Ok(())
}

fn compare_files(config_path: &Path, args: CompareArgs) -> Result<u8> {
    let root = match config_path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
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
    let allowance = scale::allowance(
        args.allow_fingerprint_mismatch,
        gate.as_ref().is_some_and(|g| g.allow_fingerprint_mismatch),
    );
    let fail_on_inconclusive = gate.as_ref().is_some_and(|g| g.fail_on_inconclusive);
    let base = match &args.baseline_ref {
        Some(reference) => scale::baseline_at_ref(&root, &args.base, reference)?,
        None => RunResults::load(&args.base)?,
    };
    let head = RunResults::load(&args.head)?;
    let history = load_history(&args.history)?;
    let design = if history.is_empty() {
        Design::Files
    } else {
        Design::StoredBaseline
    };
    let mut report = compare::compare_with_history(&base, &head, &history, &policy, design);
    scale::check_environments(&base, &head, allowance, &mut report.warnings)?;
    scale::apply_waivers(&root, &mut report)?;
    if args.report.view.full_evidence {
        report.evidence = Some(Evidence::from_runs(Some(&base), &head));
    } else {
        report.attach_bounded_evidence(Some(&base), &head);
    }
    let status = emit_report(&report, &args.report, fail_on_inconclusive)?;
    // A benchmark that failed on either side is an error, as in `check`.
    let failures = ExitStatus::combine(report_failures(&base), report_failures(&head));
    Ok(ExitStatus::combine(failures, status))
}

/// Earlier jobs' results for the prediction-interval model.
fn load_history(paths: &[std::path::PathBuf]) -> Result<Vec<RunResults>> {
    paths
        .iter()
        .map(|p| {
            RunResults::load(p).with_context(|| format!("cannot read history file {}", p.display()))
        })
        .collect()
}

/// `kgate calibrate`: the work tree interleaved against itself, then the noise table.
fn calibrate(config_path: &Path, args: CalibrateArgs) -> Result<u8> {
    let loaded = load_config(config_path)?;
    let policy = ComparePolicy::from(&loaded.config.gate);
    github::refuse_untrusted_run(&loaded.root)?;
    let plan = Plan::new(&loaded.config, &overrides(&args.selection))?;
    let mut progress = progress::for_stderr(args.selection.no_progress);
    let side = |label| Revision {
        root: loaded.root.clone(),
        label: Some(label),
    };
    let (a, b) = runner::run_interleaved(&plan, &side("A"), &side("B"), progress.as_mut())?;
    let failures = ExitStatus::combine(report_failures(&a), report_failures(&b));
    let calibration = crate::compare::calibrate::analyse(&a, &b, &policy);
    let text = match args.format {
        CalibrateFormat::Table => crate::compare::calibrate::render_table(&calibration),
        CalibrateFormat::Json => {
            let mut s = serde_json::to_string_pretty(&calibration)?;
            s.push('\n');
            s
        }
    };
    match &args.output {
        Some(path) => fsutil::write_atomic(path, text.as_bytes(), Overwrite::Allow)?,
        None => write_stdout(&text)?,
    }
    Ok(failures)
}

/// `kgate report FILE`: renders a stored JSON report again. The exit status is 0 whatever the
/// verdict: the gate already spoke when the report was made.
fn render_stored(args: RenderArgs) -> Result<u8> {
    let mut report = render::stored::load_report(&args.file)?;
    reconcile_stored(&mut report);
    let exporter = view_exporter(args.format, &args.view, args.output.is_none())?;
    write_report(&report, exporter.as_ref(), args.output.as_deref())?;
    Ok(ExitStatus::PASS)
}

/// Makes a report read back from a file say only what its rows support
/// ([`crate::compare::adjust::reconcile`]), with a warning on stderr for each claim they do not.
fn reconcile_stored(report: &mut Report) -> crate::compare::adjust::Reconciled {
    let reconciled = crate::compare::adjust::reconcile(report);
    for w in &reconciled.warnings {
        eprintln!(
            "warning: {}",
            crate::model::text::escape_log(&format!("stored report: {w}"))
        );
    }
    reconciled
}

/// An error with its causes, `outer: inner: innermost`, for the terminal. A cause whose text
/// the message already quotes (an error that formats its source into its own message, such as
/// "cannot read `x`: No such file or directory (os error 2)") is not repeated.
pub fn error_text(err: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in err.chain() {
        let said = cause.to_string();
        if text.contains(&said) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&said);
    }
    text
}

/// Whether an error chain holds an interruption.
pub fn is_interruption(err: &anyhow::Error) -> bool {
    err.chain()
        .any(|c| matches!(c.downcast_ref::<RunError>(), Some(RunError::Interrupted)))
}
