//! Command handlers: parsed flags in, an exit status out. Each turns its flags into the
//! options of a pipeline function in [`crate::gate`] and writes what comes back.
//!
//! This is the only layer that prints for people and adds context to errors (anyhow); the
//! pipeline below it returns typed errors and data.

use std::io::IsTerminal;
use std::path::Path;

use anyhow::{Context, Result, bail};

mod bisect;
pub mod github;

use crate::baseline;
use crate::cli::{
    BaselineCommand, BaselineUpdateArgs, CalibrateArgs, CalibrateFormat, CheckArgs, Cli, Commands,
    CompareArgs, HistoryAction, HistoryArgs, HistoryFormat, RenderArgs, ReportArgs, RunSelection,
};
use crate::config::{self, LoadedConfig};
use crate::gate::{self, Checked};
use crate::github::body::COMMENT_LIMIT_CHARS;
use crate::model::exit::ExitStatus;
use crate::model::report::Report;
use crate::model::results::{RunResults, Status};
use crate::model::text::{count, escape_log, escape_terminal};
use crate::model::verdict::RunVerdict;
use crate::plan::Overrides;
use crate::render::{self, Format};
use crate::run::progress;
use crate::run::runner::RunError;
use crate::store::JsonLayout;
use crate::store::fsutil::{self, Overwrite};

/// Runs a parsed command line and returns the process exit status.
pub fn execute(cli: Cli) -> Result<u8> {
    match cli.command {
        Commands::Run(args) => {
            let loaded = load_config(&cli.config)?;
            let all = overrides(&args.selection);
            let selection = match args.shard {
                Some(shard) => gate::shard_selection(&loaded, &all, shard, &mut say)?,
                None => Some(all),
            };
            let mut progress = progress::for_stderr(args.selection.no_progress);
            let results =
                gate::run_suite(&loaded, selection.as_ref(), progress.as_mut(), &mut say)?;
            emit_results(&results, args.output.as_deref(), args.pretty)?;
            if args.record {
                gate::record(&loaded.root, &results, None, &mut say)?;
            }
            Ok(report_failures(&results, None))
        }
        Commands::Merge(args) => {
            let merged = gate::merge(&args.files)?;
            emit_results(&merged, args.output.as_deref(), args.pretty)?;
            let files = count(args.files.len(), "file", "files");
            let benchmarks = count(merged.benchmarks.len(), "benchmark", "benchmarks");
            eprintln!("merged {files}: {benchmarks}");
            Ok(ExitStatus::PASS)
        }
        Commands::History(args) => history(&config::root_of(&cli.config), &args),
        Commands::Baseline(BaselineCommand::Update(args)) => {
            let loaded = load_config(&cli.config)?;
            let file = args.results.as_deref();
            let results = baseline_results(&loaded, file, &args.selection, "updating")?;
            baseline_update(&loaded, &args, &results)
        }
        Commands::Check(args) => {
            let options = check_options(&args);
            let checked = run_check(&cli.config, &options, args.selection.no_progress)?;
            let (save, compared) = (args.save_results.as_deref(), checked.base.is_some());
            emit_checked(&checked, save, &args.report, compared)
        }
        Commands::Compare(args) => compare_files(&cli.config, args),
        Commands::Import(args) => {
            let options = gate::ImportOptions {
                format: args.format,
                files: args.files,
                kernel: args.kernel,
                kernel_glob: args.kernel_glob,
                pid: args.pid,
                tid: args.tid,
                nvtx: args.nvtx,
            };
            let results = gate::import(&cli.config, &options, &mut say)?;
            emit_results(&results, args.output.as_deref(), args.pretty)?;
            Ok(ExitStatus::PASS)
        }
        Commands::Report(args) => render_stored(args),
        Commands::Baseline(BaselineCommand::Save(args)) => {
            let loaded = load_config(&cli.config)?;
            // Refused before the suite runs, not after minutes of benchmarks.
            let path = baseline::resolve(&loaded.root, &args.name)?;
            if !args.force && path.exists() {
                let (name, path) = (&args.name, path.display());
                bail!(
                    "baseline `{name}` already exists at {path}; pass --force to replace it, use `kgate baseline update` to see the change of every median first, or save under another name with --name"
                );
            }
            let results =
                baseline_results(&loaded, args.results.as_deref(), &args.selection, "saving")?;
            baseline::save(&path, &results, args.force)
                .with_context(|| format!("cannot save baseline `{}`", args.name))?;
            let benchmarks = count(results.benchmarks.len(), "benchmark", "benchmarks");
            let (name, path) = (&args.name, path.display());
            eprintln!("saved baseline `{name}` ({benchmarks}) to {path}");
            Ok(ExitStatus::PASS)
        }
        Commands::Init(args) => {
            let overwrite = if args.force {
                Overwrite::Allow
            } else {
                Overwrite::Refuse
            };
            fsutil::write_atomic(&cli.config, config::STARTER.as_bytes(), overwrite)?;
            let config = cli.config.display();
            eprintln!("wrote {config}; edit its benchmarks, then run `kgate baseline save`");
            Ok(ExitStatus::PASS)
        }
        Commands::Ci(args) => github::ci(&cli.config, args),
        Commands::Comment(args) => github::comment(args),
        Commands::Calibrate(args) => calibrate(&cli.config, args),
        Commands::Bisect(args) => bisect::bisect(&cli.config, args),
        Commands::Validate => {
            let loaded = load_config(&cli.config)?;
            let n = loaded.config.benchmarks.len();
            let benchmarks = count(n, "benchmark", "benchmarks");
            println!("{}: valid, {benchmarks}", loaded.path.display());
            Ok(ExitStatus::PASS)
        }
    }
}

/// A line the library says as it works, on stderr.
fn say(line: &str) {
    eprintln!("{line}");
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

/// The results a baseline is saved or updated from (`doing`): the file given, or the suite
/// run now; refused when a benchmark failed.
fn baseline_results(
    loaded: &LoadedConfig,
    file: Option<&Path>,
    selection: &RunSelection,
    doing: &str,
) -> Result<RunResults> {
    let results = match file {
        Some(path) => RunResults::load(path)?,
        None => {
            let mut progress = progress::for_stderr(selection.no_progress);
            let overrides = overrides(selection);
            gate::run_suite(loaded, Some(&overrides), progress.as_mut(), &mut say)?
        }
    };
    if results.has_failures() {
        report_failures(&results, None);
        bail!("not {doing} a baseline from a run with failed benchmarks");
    }
    Ok(results)
}

/// Prints each failed benchmark with its stderr tail, named with its side (`base`, `head`)
/// where there are two; returns the exit status of the run.
fn report_failures(results: &RunResults, side: Option<&str>) -> u8 {
    let mut failed = false;
    let side = side.map(|s| format!(" [{s}]")).unwrap_or_default();
    for b in &results.benchmarks {
        if b.status == Status::Failed {
            failed = true;
            if let Some(f) = &b.failure {
                let (name, message) = (escape_terminal(&b.name), escape_log(&f.message));
                eprintln!("error: benchmark `{name}` failed{side}: {message}");
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

/// Writes `text` to stdout; a reader that went away (`| head`) is not an error.
fn write_stdout(text: &str) -> Result<()> {
    let (stdout, bytes) = (Path::new("-"), text.as_bytes());
    Ok(fsutil::write_atomic(stdout, bytes, Overwrite::Allow)?)
}

/// Writes a report to `output` (atomically) or to stdout, streamed by its exporter.
fn write_report(
    report: &Report,
    exporter: &dyn render::Exporter,
    output: Option<&Path>,
) -> Result<()> {
    let path = output.unwrap_or(Path::new("-"));
    let written =
        fsutil::write_atomic_with(path, Overwrite::Allow, |out| exporter.write_to(report, out));
    match output {
        Some(path) => {
            written.with_context(|| format!("cannot write the report to {}", path.display()))
        }
        None => Ok(written?),
    }
}

/// Renders and emits a report; then its warnings and verdict on the terminal where the report
/// did not go there. Returns the exit status its verdict calls for.
fn emit_report(report: &Report, args: &ReportArgs, fail_on_inconclusive: bool) -> Result<u8> {
    let exporter = view_exporter(args.format, &args.view, args.output.is_none())?;
    write_report(report, exporter.as_ref(), args.output.as_deref())?;
    match &args.output {
        Some(_) => {
            // The verdict and the warnings still go to the terminal.
            eprint_warnings(report);
            eprintln!("{}", escape_terminal(&render::summary_line(report)));
        }
        // A table or Markdown on stdout carries the warnings itself; JSON, HTML and JUnit on
        // stdout are for programs, so a person reads the warnings on stderr. Each is said once.
        None => {
            if !matches!(args.format, Format::Table | Format::Markdown) {
                eprint_warnings(report);
            }
        }
    }
    Ok(match report.verdict {
        RunVerdict::Pass => ExitStatus::PASS,
        RunVerdict::Regressed => ExitStatus::REGRESSION,
        RunVerdict::Inconclusive if fail_on_inconclusive || args.fail_on_inconclusive => {
            ExitStatus::INCONCLUSIVE
        }
        RunVerdict::Inconclusive => ExitStatus::PASS,
        RunVerdict::NoBaseline => ExitStatus::NO_BASELINE,
        RunVerdict::Error => ExitStatus::ERROR,
    })
}

/// The report's warnings on stderr, for a report that does not show them on the terminal.
fn eprint_warnings(report: &Report) {
    for warning in &report.warnings {
        eprintln!("warning: {}", escape_terminal(warning));
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
        Format::Markdown => match view.max_chars.unwrap_or(COMMENT_LIMIT_CHARS) {
            0 => render::exporter(format, false),
            max_chars => Box::new(render::LimitedMarkdownExporter { max_chars }),
        },
        Format::Table => Box::new(render::TableExporter {
            color: to_stdout && render::stdout_wants_color(),
            width: to_stdout.then(render::stdout_width).flatten(),
            all_metrics: view.all_metrics,
        }),
        Format::Json => Box::new(render::JsonExporter {
            pretty: view.pretty,
        }),
        other => render::exporter(other, false),
    })
}

/// The revision `--against REF` (its merge-base with HEAD) or `--against-tip REF` names.
fn against(merge_base: &Option<String>, tip: &Option<String>) -> Option<gate::Against> {
    let (reference, tip) = match (merge_base, tip) {
        (Some(reference), _) => (reference, false),
        (None, Some(reference)) => (reference, true),
        (None, None) => return None,
    };
    let reference = reference.clone();
    Some(gate::Against { reference, tip })
}

/// What `check`'s flags ask.
fn check_options(args: &CheckArgs) -> gate::CheckOptions {
    gate::CheckOptions {
        selection: overrides(&args.selection),
        baseline: args.baseline.clone(),
        against: against(&args.against, &args.against_tip),
        baseline_ref: args.baseline_ref.clone(),
        allow_fingerprint_mismatch: args.allow_fingerprint_mismatch,
        changed_since: args.changed_since.clone(),
        record: args.record,
        measure_identical: args.measure_identical,
        history: args.history.clone(),
        profile_regressions: args.profile_regressions,
        full_evidence: args.report.view.full_evidence,
    }
}

/// `kgate check` (and the check of `kgate ci`): the suite run and compared.
fn run_check(
    config_path: &Path,
    options: &gate::CheckOptions,
    no_progress: bool,
) -> Result<Checked> {
    let loaded = load_config(config_path)?;
    let mut progress = progress::for_stderr(no_progress);
    Ok(gate::check(&loaded, options, progress.as_mut(), &mut say)?)
}

/// Writes a check's candidate results and report; returns the exit status (a benchmark that
/// could not run on either side is an error, whatever the others did, with that side's stderr
/// tail, the sides `named` where both were measured).
fn emit_checked(
    checked: &Checked,
    save_results: Option<&Path>,
    args: &ReportArgs,
    named: bool,
) -> Result<u8> {
    if let Some(path) = save_results {
        let saved = checked.head.save(path, Overwrite::Allow);
        saved.with_context(|| format!("cannot write results to {}", path.display()))?;
    }
    let status = emit_report(&checked.report, args, checked.fail_on_inconclusive)?;
    let side = |name| named.then_some(name);
    let base =
        (checked.base.as_ref()).map_or(ExitStatus::PASS, |b| report_failures(b, side("base")));
    let head = report_failures(&checked.head, side("head"));
    Ok(ExitStatus::combine(ExitStatus::combine(base, head), status))
}

/// `kgate compare BASE HEAD`.
fn compare_files(config_path: &Path, args: CompareArgs) -> Result<u8> {
    let options = gate::CompareOptions {
        base: args.base,
        head: args.head,
        alpha: args.alpha,
        baseline_ref: args.baseline_ref,
        allow_fingerprint_mismatch: args.allow_fingerprint_mismatch,
        history: args.history,
        full_evidence: args.report.view.full_evidence,
    };
    let compared = gate::compare_files(config_path, &options, &mut say)?;
    emit_checked(&compared, None, &args.report, false)
}

/// `kgate calibrate`: the work tree interleaved against itself, then the noise table.
fn calibrate(config_path: &Path, args: CalibrateArgs) -> Result<u8> {
    let loaded = load_config(config_path)?;
    let mut progress = progress::for_stderr(args.selection.no_progress);
    let run = gate::calibrate(&loaded, &overrides(&args.selection), progress.as_mut())?;
    let failures =
        ExitStatus::combine(report_failures(&run.a, None), report_failures(&run.b, None));
    let text = match args.format {
        CalibrateFormat::Table => crate::compare::calibrate::render_table(&run.calibration),
        CalibrateFormat::Json => {
            let mut s = serde_json::to_string_pretty(&run.calibration)?;
            s.push('\n');
            s
        }
    };
    let output = args.output.as_deref().unwrap_or(Path::new("-"));
    fsutil::write_atomic(output, text.as_bytes(), Overwrite::Allow)?;
    Ok(failures)
}

/// `kgate baseline update`: the change of every median shown, then the baseline replaced once
/// confirmed.
fn baseline_update(
    loaded: &LoadedConfig,
    args: &BaselineUpdateArgs,
    fresh: &RunResults,
) -> Result<u8> {
    let path = baseline::resolve(&loaded.root, &args.name)?;
    let old = if path.exists() {
        Some(RunResults::load(&path).context("cannot read the stored baseline")?)
    } else {
        None
    };
    let diff = baseline::median_diff(old.as_ref(), fresh, &args.name);
    if diff.is_empty() && old.as_ref() == Some(fresh) {
        let name = &args.name;
        eprintln!("baseline `{name}` is already these results; nothing to do");
        return Ok(ExitStatus::PASS);
    }
    if diff.is_empty() {
        println!("medians unchanged (samples and environment differ)");
    } else {
        print!("{diff}");
    }
    if !args.yes {
        if !std::io::stdin().is_terminal() {
            let name = &args.name;
            bail!(
                "not replacing baseline `{name}` without confirmation; review the diff above and rerun with --yes"
            );
        }
        eprint!("write {}? [y/N] ", path.display());
        let mut answer = String::new();
        std::io::stdin().read_line(&mut answer)?;
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            eprintln!("left unchanged");
            return Ok(ExitStatus::PASS);
        }
    }
    let saved = fresh.save(&path, Overwrite::Allow);
    saved.with_context(|| format!("cannot write baseline {}", path.display()))?;
    eprintln!("updated baseline `{}` ({})", args.name, path.display());
    Ok(ExitStatus::PASS)
}

/// `kgate history`: the keys, results recorded, or the series written as text, JSON or the
/// HTML dashboard.
fn history(root: &Path, args: &HistoryArgs) -> Result<u8> {
    if let Some(HistoryAction::Record { files }) = &args.action {
        gate::record_history(root, files, &mut say)?;
        return Ok(ExitStatus::PASS);
    }
    if args.key.as_deref() == Some("list") {
        for k in baseline::history::keys(root) {
            println!("{k}");
        }
        return Ok(ExitStatus::PASS);
    }
    let format = match (args.format, args.json) {
        (Some(f), _) => f,
        (None, true) => HistoryFormat::Json,
        (None, false) => HistoryFormat::Text,
    };
    let options = gate::HistoryOptions {
        key: args.key.clone(),
        bench: args.bench.clone(),
        metric: args.metric.clone(),
        commit_order: format == HistoryFormat::Html,
        repo_url: args.repo_url.clone(),
    };
    let found = gate::history(root, &options, &mut say)?;
    if args.max_charts.is_some() && format != HistoryFormat::Html {
        bail!("--max-charts sets how many charts the HTML page draws; add --format html");
    }
    let (key, series) = (&found.key, &found.series);
    let path = args.output.as_deref().unwrap_or(Path::new("-"));
    let written = match format {
        HistoryFormat::Json => fsutil::write_atomic_with(path, Overwrite::Allow, |to| {
            render::history::write_history_json(key, series, to)
        }),
        HistoryFormat::Text => {
            let text = render::history::history_text(key, found.runs, &found.settings, series);
            fsutil::write_atomic(path, text.as_bytes(), Overwrite::Allow)
        }
        HistoryFormat::Html => {
            if found.repo_url.is_none() {
                eprintln!(
                    "note: the repository's web address is not known (no --repo-url, no GITHUB_REPOSITORY or CI_PROJECT_URL, no GitHub or GitLab `origin` remote); the page does not link to commits"
                );
            }
            let mut notes = found.notes.clone();
            for n in &mut notes {
                eprintln!("note: {n}");
                *n = format!("{}{}", n[..1].to_uppercase(), &n[1..]);
            }
            // 0 charts every series.
            let max_charts = args
                .max_charts
                .unwrap_or(render::history::DEFAULT_MAX_CHARTS);
            let max_charts = (max_charts > 0).then_some(max_charts);
            let url = found.repo_url.as_deref();
            let written = fsutil::write_atomic_with(path, Overwrite::Allow, |to| {
                render::history::write_history_page(to, key, series, url, &notes, max_charts)
            });
            let charted = max_charts.map_or(series.len(), |n| n.min(series.len()));
            if charted < series.len() {
                eprintln!(
                    "note: {charted} of {} series charted, the rest summarised in a table (`--max-charts 0` charts them all)",
                    series.len()
                );
            }
            written
        }
    };
    written.with_context(|| format!("cannot write the history to {}", path.display()))?;
    if let Some(p) = &args.output {
        let metrics = count(series.len(), "metric", "metrics");
        eprintln!("wrote the history of {key} ({metrics}) to {}", p.display());
    }
    Ok(ExitStatus::PASS)
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
        let warning = escape_log(&format!("stored report: {w}"));
        eprintln!("warning: {warning}");
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
    err.chain().any(|c| {
        matches!(c.downcast_ref::<RunError>(), Some(RunError::Interrupted))
            || matches!(
                c.downcast_ref::<gate::GateError>(),
                Some(gate::GateError::Run(RunError::Interrupted))
            )
    })
}
