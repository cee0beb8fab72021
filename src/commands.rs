//! Command handlers: parsed flags in, an exit status out.
//!
//! This is the only layer that prints for people and adds context to errors (anyhow); the
//! pipeline stages below it return typed errors and data.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result, bail};

mod scale;

use crate::baseline;
use crate::cli::{
    BaselineCommand, CalibrateArgs, CalibrateFormat, CheckArgs, Cli, Commands, CompareArgs,
    ImportArgs, RenderArgs, ReportArgs, RunSelection,
};
use crate::compare::{self, ComparePolicy};
use crate::config::{self, LoadedConfig};
use crate::evidence::Evidence;
use crate::exit::ExitStatus;
use crate::fsutil::{self, Overwrite};
use crate::import;
use crate::plan::{MetricPolicy, Overrides, Plan};
use crate::progress;
use crate::render::{self, Format};
use crate::report::{Design, Report};
use crate::results::{RunResults, Status};
use crate::runner::{self, Revision, RunError};
use crate::verdict::RunVerdict;
use crate::worktree::Worktree;

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
            emit_results(&results, args.output.as_deref())?;
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
        Commands::Import(args) => import_files(&cli.config, args),
        Commands::Report(args) => render_stored(args),
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
        Commands::Ci(args) => ci(&cli.config, args),
        Commands::Comment(args) => comment(args),
        Commands::Calibrate(args) => calibrate(&cli.config, args),
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

/// What `kgate check` measured and decided, before anything is written or printed: `kgate ci`
/// posts this report as it is.
struct Checked {
    report: Report,
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
    Ok(ExitStatus::combine(report_failures(&checked.head), status))
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
    let (report, head) = match against {
        Some((reference, tip)) => {
            let plan = Plan::new(&loaded.config, &overrides(&args.selection))?;
            let (commit, what) = against_commit(&loaded.root, reference, tip)?;
            let tree = Worktree::checkout(&loaded.root, &commit)?;
            eprintln!(
                "measuring {what} ({}) interleaved with the work tree",
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
            let adaptive = runner::Adaptive {
                policy: policy.clone(),
                time_budget: loaded.config.gate.time_budget.map(|d| d.0),
            };
            let (base, head) = runner::run_interleaved_adaptive(
                &plan,
                &base_rev,
                &head_rev,
                progress.as_mut(),
                Some(&adaptive),
            )?;
            let mut report = compare::compare(&base, &head, &policy, Design::Interleaved);
            report.evidence = Some(Evidence::from_runs(Some(&base), &head));
            (report, head)
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
            if args.baseline_ref.is_none() && !path.exists() {
                let head = run_selected(&selection)?;
                let reason = format!(
                    "no baseline at {}; store one with `kgate baseline save`, or compare against a revision with `kgate check --against REF`",
                    path.display()
                );
                eprintln!("error: {reason}");
                let mut report = compare::no_baseline(&head, &policy, reason);
                if !skipped.is_empty() {
                    crate::adjust::mark_skipped(
                        &mut report,
                        &skipped,
                        None,
                        "skipped: not affected by the changed files",
                    );
                }
                report.evidence = Some(Evidence::from_runs(None, &head));
                return Ok(Checked {
                    report,
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
            // else the history store's records of this environment (kept by --record).
            let key = crate::envkey::baseline_key(&head.environment);
            let records = crate::history::load(&loaded.root, &key)?;
            let medians = if history.is_empty() {
                crate::history::job_medians(&records)
            } else {
                compare::job_medians(std::iter::once(&base).chain(&history))
            };
            let mut report = compare::compare_with_job_medians(
                &base,
                &head,
                &medians,
                &policy,
                Design::StoredBaseline,
            );
            scale::check_environments(
                &base,
                &head,
                scale::allowance(
                    args.allow_fingerprint_mismatch,
                    loaded.config.gate.allow_fingerprint_mismatch,
                ),
                &mut report,
            )?;
            if !skipped.is_empty() {
                let why = format!(
                    "skipped: no file changed since {} matches its `paths`",
                    args.changed_since.as_deref().unwrap_or("the reference")
                );
                crate::adjust::mark_skipped(&mut report, &skipped, Some(&base), &why);
            }
            let mut evidence = Evidence::from_runs(Some(&base), &head);
            crate::history::add_to_evidence(&mut evidence, &records);
            report.evidence = Some(evidence);
            (report, head)
        }
    };
    let mut report = report;
    scale::apply_waivers(&loaded.root, &mut report)?;
    if args.record {
        scale::record(&loaded.root, &head)?;
    }
    Ok(Checked {
        report,
        head,
        fail_on_inconclusive,
    })
}

/// The commit `check --against REF` measures, and how to name it: the merge-base of REF and
/// HEAD (what the branch started from, so that commits REF gained since do not count as the
/// branch's changes), or REF itself with `--against-tip`. When HEAD contains REF (`HEAD`,
/// `HEAD~1`, an ancestor branch) the two are the same commit.
fn against_commit(root: &Path, reference: &str, tip: bool) -> Result<(String, String)> {
    let top = crate::gitref::toplevel(root)?;
    let commit = crate::gitref::resolve(&top, reference)?;
    if tip {
        return Ok((commit, reference.to_string()));
    }
    let base = crate::gitref::merge_base(&top, reference)?;
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
    let base = match &args.baseline_ref {
        Some(reference) => scale::baseline_at_ref(&root, &args.base, reference)?,
        None => RunResults::load(&args.base)?,
    };
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
    let history = load_history(&args.history)?;
    let design = if history.is_empty() {
        Design::Files
    } else {
        Design::StoredBaseline
    };
    let mut report = compare::compare_with_history(&base, &head, &history, &policy, design);
    scale::check_environments(
        &base,
        &head,
        scale::allowance(
            args.allow_fingerprint_mismatch,
            gate.as_ref().is_some_and(|g| g.allow_fingerprint_mismatch),
        ),
        &mut report,
    )?;
    scale::apply_waivers(&root, &mut report)?;
    report.evidence = Some(Evidence::from_runs(Some(&base), &head));
    let status = emit_report(
        &report,
        &args.report,
        gate.is_some_and(|g| g.fail_on_inconclusive),
    )?;
    // A benchmark that failed on either side is an error, as in `check`.
    let failures = ExitStatus::combine(report_failures(&base), report_failures(&head));
    Ok(ExitStatus::combine(failures, status))
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
    let importer = args.format;
    let mut ctx = import::ImportContext::new(import::Policies::new(
        policies,
        MetricPolicy::permissive(threshold),
    ));
    if importer.kernel_selection().is_some() {
        ctx.selection = import::trace::TraceSelection::new(
            &args.kernel,
            &args.kernel_glob,
            args.pid,
            args.tid,
        )?;
    } else if !(args.kernel.is_empty() && args.kernel_glob.is_empty())
        || args.pid.is_some()
        || args.tid.is_some()
    {
        bail!(
            "--kernel, --kernel-glob, --pid and --tid apply to {} imports only",
            import::kernel_selection_formats()
        );
    }
    let mut results = importer.import(&args.files, &ctx)?;
    let files: Vec<String> = args
        .files
        .iter()
        .map(|f| format!("`{}`", f.display()))
        .collect();
    results
        .require_measurements(&format!(
            "the {} import of {}",
            importer.name(),
            files.join(", ")
        ))
        .map_err(anyhow::Error::msg)?;
    if config_path.exists() {
        let loaded = load_config(config_path)?;
        let plan = Plan::new(&loaded.config, &Overrides::default())?;
        crate::utilization::apply_to_import(&mut results, &plan);
    }
    emit_results(&results, args.output.as_deref())?;
    Ok(ExitStatus::PASS)
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
    let plan = Plan::new(&loaded.config, &overrides(&args.selection))?;
    let mut progress = progress::for_stderr(args.selection.no_progress);
    let side = |label| Revision {
        root: loaded.root.clone(),
        label: Some(label),
    };
    let (a, b) = runner::run_interleaved(&plan, &side("A"), &side("B"), progress.as_mut())?;
    let failures = ExitStatus::combine(report_failures(&a), report_failures(&b));
    let calibration = crate::calibrate::analyse(&a, &b, &policy);
    let text = match args.format {
        CalibrateFormat::Table => crate::calibrate::render_table(&calibration),
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
    let report = render::stored::load_report(&args.file)?;
    let color =
        args.output.is_none() && args.format == Format::Table && render::stdout_wants_color();
    let text = match (args.format, args.max_chars) {
        (Format::Markdown, Some(max)) => render::render_markdown_limited(&report, max),
        (_, Some(_)) => bail!("--max-chars applies to --format markdown only"),
        (format, None) => render::exporter(format, color).render(&report),
    };
    match &args.output {
        Some(path) => fsutil::write_atomic(path, text.as_bytes(), Overwrite::Allow)
            .with_context(|| format!("cannot write the report to {}", path.display()))?,
        None => write_stdout(&text)?,
    }
    Ok(ExitStatus::PASS)
}

/// Whether an error chain holds an interruption.
pub fn is_interruption(err: &anyhow::Error) -> bool {
    err.chain()
        .any(|c| matches!(c.downcast_ref::<RunError>(), Some(RunError::Interrupted)))
}

// ---- GitHub: `kgate ci` and `kgate comment` (docs/github.md) ----

use crate::cli::{CiArgs, CommentArgs, FailOn, PostArgs};
use crate::github::body::{self as gh_body, CommentPolicy};
use crate::github::client::{Conclusion, GithubClient};
use crate::github::env::{self as gh_env, GithubContext, Level};

/// The sticky-comment and check-run id of this job: `--job-id`, else `GITHUB_JOB`.
fn job_id(post: &PostArgs, ctx: Option<&GithubContext>) -> Result<String> {
    let id = post
        .job_id
        .clone()
        .or_else(|| ctx.and_then(|c| c.job.clone()))
        .unwrap_or_else(|| "default".to_string());
    gh_body::validate_job_id(&id).map_err(|e| anyhow::anyhow!("--job-id: {e}"))?;
    Ok(id)
}

/// The GitHub client with its runtime, when there is a context and a token.
struct Poster {
    runtime: tokio::runtime::Runtime,
    client: GithubClient,
}

impl Poster {
    fn new(ctx: &GithubContext, token: &str) -> Result<Poster> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the runtime for GitHub calls")?;
        // octocrab's service stack spawns onto the runtime it is built in.
        let client = {
            let _entered = runtime.enter();
            GithubClient::new(&ctx.api_url, token, &ctx.owner, &ctx.repo)?
        };
        Ok(Poster { runtime, client })
    }
}

impl Poster {
    /// Starts the job's check run ("in progress") on `head_sha`; a failure, or no commit to
    /// attach it to, is recorded in `errors` (posting never decides the gate).
    fn start_check_run(
        &self,
        job_id: &str,
        head_sha: Option<&str>,
        no_sha: &str,
        errors: &mut Vec<anyhow::Error>,
    ) -> Option<u64> {
        let Some(sha) = head_sha else {
            errors.push(anyhow::anyhow!("{no_sha}, so no check run"));
            return None;
        };
        match self
            .runtime
            .block_on(self.client.start_check_run(&check_run_name(job_id), sha))
        {
            Ok(id) => Some(id),
            Err(e) => {
                errors.push(e.into());
                None
            }
        }
    }
}

fn check_run_name(job_id: &str) -> String {
    if job_id == "default" {
        "kgate".to_string()
    } else {
        format!("kgate ({job_id})")
    }
}

fn conclusion_for(status: u8) -> Conclusion {
    match status {
        ExitStatus::PASS => Conclusion::Success,
        ExitStatus::REGRESSION | ExitStatus::INCONCLUSIVE | ExitStatus::ERROR => {
            Conclusion::Failure
        }
        _ => Conclusion::Neutral,
    }
}

/// What posting achieved; errors are collected, not returned, so they cannot change the
/// gate's exit status unless asked to.
#[derive(Default)]
struct Posted {
    comment_url: Option<String>,
    check_run_url: Option<String>,
    errors: Vec<anyhow::Error>,
}

/// Posts the sticky comment (per policy) and completes the check run.
#[allow(clippy::too_many_arguments)]
fn post_report(
    poster: &Poster,
    ctx: &GithubContext,
    report: &Report,
    post: &PostArgs,
    job_id: &str,
    pr: Option<u64>,
    check_run: Option<u64>,
    conclusion: Conclusion,
) -> Posted {
    let mut posted = Posted::default();
    let run_url = ctx.run_url();
    if post.comment != CommentPolicy::Never {
        match pr {
            None => eprintln!("kgate: not a pull request, so no comment"),
            Some(pr) => {
                let body = gh_body::comment_body(report, job_id, run_url.as_deref());
                let result = poster.runtime.block_on(async {
                    let author = match &post.comment_author {
                        Some(a) => a.clone(),
                        None => poster.client.identity().await?,
                    };
                    poster
                        .client
                        .upsert_comment(
                            pr,
                            &gh_body::marker(job_id),
                            &author,
                            &body,
                            post.comment.allows_new(report),
                        )
                        .await
                });
                match result {
                    Ok(outcome) => {
                        match &outcome {
                            crate::github::client::CommentOutcome::Created { url, .. } => {
                                eprintln!("kgate: commented on #{pr}: {url}")
                            }
                            crate::github::client::CommentOutcome::Updated { url, .. } => {
                                eprintln!("kgate: updated the comment on #{pr}: {url}")
                            }
                            crate::github::client::CommentOutcome::Skipped => eprintln!(
                                "kgate: no comment on #{pr}: the `{}` policy does not call for one",
                                post.comment
                            ),
                        }
                        posted.comment_url = outcome.url().map(str::to_string);
                    }
                    Err(e) => posted.errors.push(e.into()),
                }
            }
        }
    }
    if let Some(id) = check_run {
        let summary = gh_body::fit_markdown(
            report,
            "",
            "",
            "the job summary",
            gh_body::CHECK_SUMMARY_LIMIT_BYTES,
            gh_body::Measure::Bytes,
        );
        let title = render::summary_line(report);
        match poster.runtime.block_on(
            poster
                .client
                .finish_check_run(id, conclusion, &title, &summary),
        ) {
            Ok(url) => posted.check_run_url = url,
            Err(e) => posted.errors.push(e.into()),
        }
    }
    posted
}

/// Reports posting failures; returns the exit status they call for.
fn settle_post_errors(posted: &Posted, post: &PostArgs, status: u8) -> u8 {
    for e in &posted.errors {
        let text = format!("{e:#}");
        eprintln!("warning: {text}");
        if std::env::var_os("GITHUB_ACTIONS").is_some() {
            let level = if post.fail_on_post_error {
                Level::Error
            } else {
                Level::Warning
            };
            println!(
                "{}",
                gh_env::annotation(level, "kgate could not post", &text)
            );
        }
    }
    if post.fail_on_post_error && !posted.errors.is_empty() {
        ExitStatus::combine(ExitStatus::ERROR, status)
    } else {
        status
    }
}

/// The commit the pull request branched from: merge-base of its head and base.
fn pr_merge_base(ctx: Option<&GithubContext>, root: &Path) -> Result<String> {
    let ctx = ctx.context(
        "--against-pr-base needs the GitHub Actions context (GITHUB_REPOSITORY and GITHUB_EVENT_PATH)",
    )?;
    let base_ref = ctx.event.base_ref.as_deref().with_context(|| {
        format!(
            "--against-pr-base: the `{}` event is not a pull request; use --against REF or the stored baseline",
            ctx.event_name
        )
    })?;
    let base = ctx
        .event
        .base_sha
        .clone()
        .unwrap_or_else(|| format!("origin/{base_ref}"));
    let head = ctx.head_sha().unwrap_or("HEAD");
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["merge-base", head, &base])
        .output()
        .context("cannot run git")?;
    if !out.status.success() {
        bail!(
            "cannot find the merge-base of {head} and {base} (base branch `{base_ref}`): {}; check out the history with `fetch-depth: 0` in actions/checkout",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The gate's exit status under `--fail-on`.
fn apply_fail_on(status: u8, report: &Report, fail_on: Option<FailOn>) -> u8 {
    match fail_on {
        None | Some(FailOn::Regression) => status,
        Some(_) if status == ExitStatus::ERROR || status == ExitStatus::NO_BASELINE => status,
        Some(FailOn::Inconclusive) if report.verdict == RunVerdict::Inconclusive => {
            ExitStatus::INCONCLUSIVE
        }
        Some(FailOn::Inconclusive) => status,
        Some(FailOn::Nothing) => ExitStatus::PASS,
    }
}

/// Workflow-command annotations for the `limit` largest regressions (errors) and
/// inconclusive benchmarks (warnings).
pub fn report_annotations(report: &Report, limit: usize) -> Vec<String> {
    let mut lines = Vec::new();
    for (verdict, level) in [
        (crate::verdict::Verdict::Regressed, Level::Error),
        (crate::verdict::Verdict::Inconclusive, Level::Warning),
    ] {
        let mut hits: Vec<(&str, &crate::report::MetricComparison, &str)> = report
            .benchmarks
            .iter()
            .filter(|b| b.verdict == verdict)
            .filter_map(|b| {
                b.metrics
                    .iter()
                    .filter(|m| m.gates && m.verdict == verdict)
                    .max_by(|a, b| {
                        let key =
                            |m: &crate::report::MetricComparison| m.change.unwrap_or(0.0).abs();
                        key(a).total_cmp(&key(b))
                    })
                    .map(|m| (b.name.as_str(), m, b.explanation.as_str()))
            })
            .collect();
        hits.sort_by(|a, b| {
            let key = |m: &crate::report::MetricComparison| m.change.unwrap_or(0.0).abs();
            key(b.1).total_cmp(&key(a.1))
        });
        let total = hits.len();
        for (name, m, explanation) in hits.into_iter().take(limit) {
            let change = m
                .change
                .map(crate::units::format_change)
                .unwrap_or_else(|| "–".into());
            let message = if explanation.is_empty() {
                format!("{} {change}", m.name)
            } else {
                explanation.to_string()
            };
            lines.push(gh_env::annotation(
                level,
                &format!("kgate: {name} {}", verdict.as_str()),
                &message,
            ));
        }
        if total > limit {
            lines.push(gh_env::annotation(
                Level::Notice,
                "kgate",
                &format!(
                    "{} more {} benchmarks are listed in the job summary",
                    total - limit,
                    verdict.as_str()
                ),
            ));
        }
    }
    lines
}

fn ci(config_path: &Path, args: CiArgs) -> Result<u8> {
    let ctx = GithubContext::from_env()?;
    let job_id = job_id(&args.post, ctx.as_ref())?;
    let token = args.post.token.as_deref().filter(|t| !t.is_empty());
    let mut post_errors = Vec::new();
    let poster = match (&ctx, token) {
        (Some(ctx), Some(token)) => match Poster::new(ctx, token) {
            Ok(p) => Some(p),
            Err(e) => {
                post_errors.push(e);
                None
            }
        },
        (Some(ctx), None)
            if (args.post.comment != CommentPolicy::Never && ctx.event.pr_number.is_some())
                || args.post.check_run =>
        {
            post_errors.push(anyhow::anyhow!(
                "no GitHub token, so nothing is posted; pass `token: ${{{{ github.token }}}}` to the action or set GITHUB_TOKEN"
            ));
            None
        }
        _ => None,
    };
    // The check run shows "in progress" while the benchmarks run.
    let mut check_run = None;
    if let (Some(p), Some(ctx), true) = (&poster, &ctx, args.post.check_run) {
        check_run = p.start_check_run(
            &job_id,
            ctx.head_sha(),
            "no head commit in the event or GITHUB_SHA",
            &mut post_errors,
        );
    }
    // The pull request's merge-base is already the commit to measure: taken as it is.
    let (against, against_tip) = if args.against_pr_base {
        let loaded = load_config(config_path)?;
        let base = pr_merge_base(ctx.as_ref(), &loaded.root)?;
        eprintln!("kgate: comparing against the merge-base {base}");
        (None, Some(base))
    } else {
        (args.against.clone(), args.against_tip.clone())
    };
    let check_args = CheckArgs {
        selection: args.selection.clone(),
        report: ReportArgs {
            format: Format::Json,
            output: Some(args.report.clone()),
            fail_on_inconclusive: false,
        },
        baseline: args.baseline.clone(),
        against,
        against_tip,
        save_results: args.save_results.clone(),
        baseline_ref: None,
        allow_fingerprint_mismatch: false,
        changed_since: None,
        record: false,
        history: Vec::new(),
    };
    // The report goes to its file as `kgate check` writes it (for `kgate comment` in a second
    // workflow), and is posted from memory.
    let checked = run_check(config_path, &check_args)
        .and_then(|c| emit_checked(&c, &check_args).map(|status| (status, c)));
    let (status, report) = match checked {
        Ok((status, c)) => (status, c.report),
        Err(err) => {
            if let (Some(p), Some(id)) = (&poster, check_run) {
                let _ = p.runtime.block_on(p.client.finish_check_run(
                    id,
                    Conclusion::Failure,
                    "kgate failed",
                    &format!(
                        "kgate stopped with an error: {}",
                        render::escape::escape_markdown(&format!("{err:#}"))
                    ),
                ));
            }
            return Err(err);
        }
    };
    let status = apply_fail_on(status, &report, args.fail_on);
    write_stdout(&render::exporter(Format::Table, render::stdout_wants_color()).render(&report))?;

    let Some(ctx) = ctx else {
        eprintln!("kgate: not running in GitHub Actions (GITHUB_REPOSITORY unset): nothing posted");
        return Ok(status);
    };
    if let Some(path) = &ctx.step_summary {
        let more = format!(
            "the JSON report `{}`",
            render::escape::escape_markdown(&args.report.display().to_string())
        );
        let markdown = gh_body::fit_markdown(
            &report,
            "",
            "\n",
            &more,
            gh_env::summary_room(path),
            gh_body::Measure::Bytes,
        );
        gh_env::append_step_summary(path, &markdown)?;
    }
    for line in report_annotations(&report, args.annotations) {
        println!("{line}");
    }
    let mut posted = match &poster {
        Some(p) => post_report(
            p,
            &ctx,
            &report,
            &args.post,
            &job_id,
            ctx.event.pr_number,
            check_run,
            conclusion_for(status),
        ),
        None => Posted::default(),
    };
    post_errors.append(&mut posted.errors);
    posted.errors = post_errors;
    if let Some(path) = &ctx.output {
        let s = &report.summary;
        let regressions: Vec<&str> = report
            .benchmarks
            .iter()
            .filter(|b| b.verdict == crate::verdict::Verdict::Regressed)
            .map(|b| b.name.as_str())
            .collect();
        let verdict = serde_json::to_value(report.verdict)?
            .as_str()
            .unwrap_or_default()
            .to_string();
        gh_env::write_outputs(
            path,
            &[
                ("verdict", verdict),
                ("exit-code", status.to_string()),
                ("regressed", s.regressed.to_string()),
                ("improved", s.improved.to_string()),
                ("unchanged", s.unchanged.to_string()),
                ("inconclusive", s.inconclusive.to_string()),
                ("new", s.new.to_string()),
                ("missing", s.missing.to_string()),
                ("total", s.total.to_string()),
                ("report", args.report.display().to_string()),
                ("regressions", regressions.join("\n")),
                (
                    "comment-url",
                    posted.comment_url.clone().unwrap_or_default(),
                ),
                (
                    "check-run-url",
                    posted.check_run_url.clone().unwrap_or_default(),
                ),
            ],
        )?;
    }
    Ok(settle_post_errors(&posted, &args.post, status))
}

fn comment(args: CommentArgs) -> Result<u8> {
    let text = std::fs::read_to_string(&args.report)
        .with_context(|| format!("cannot read the report {}", args.report.display()))?;
    let report: Report = serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not a kgate JSON report; write one with `kgate check --format json -o FILE`",
            args.report.display()
        )
    })?;
    let ctx = GithubContext::from_env()?.context(
        "`kgate comment` needs the GitHub Actions context: GITHUB_REPOSITORY (and GITHUB_EVENT_PATH) are not set",
    )?;
    if !args.allow_untrusted_checkout
        && let Some(reason) = crate::github::untrusted_checkout(&ctx, Path::new("."))
    {
        bail!(reason);
    }
    let job_id = job_id(&args.post, Some(&ctx))?;
    let Some(token) = args.post.token.as_deref().filter(|t| !t.is_empty()) else {
        let posted = Posted {
            errors: vec![anyhow::anyhow!(
                "no GitHub token, so nothing is posted; set GITHUB_TOKEN or pass --token"
            )],
            ..Posted::default()
        };
        return Ok(settle_post_errors(&posted, &args.post, ExitStatus::PASS));
    };
    let poster = Poster::new(&ctx, token)?;
    let mut errors = Vec::new();
    let head_sha = args
        .head_sha
        .clone()
        .or_else(|| ctx.head_sha().map(str::to_string));
    let mut pr = args.pr.or(ctx.event.pr_number);
    if pr.is_none()
        && ctx.event_name == "workflow_run"
        && let (Some(owner), Some(branch), Some(sha)) =
            (&ctx.event.head_owner, &ctx.event.head_branch, &head_sha)
    {
        match poster
            .runtime
            .block_on(poster.client.find_pull_request(owner, branch, sha))
        {
            Ok(found) => pr = found,
            Err(e) => errors.push(e.into()),
        }
    }
    let mut check_run = None;
    if args.post.check_run {
        check_run = poster.start_check_run(
            &job_id,
            head_sha.as_deref(),
            "no head commit (--head-sha, the event or GITHUB_SHA)",
            &mut errors,
        );
    }
    let conclusion = match report.verdict {
        RunVerdict::Pass => Conclusion::Success,
        RunVerdict::Regressed => Conclusion::Failure,
        RunVerdict::Inconclusive | RunVerdict::NoBaseline => Conclusion::Neutral,
    };
    let mut posted = post_report(
        &poster, &ctx, &report, &args.post, &job_id, pr, check_run, conclusion,
    );
    errors.append(&mut posted.errors);
    posted.errors = errors;
    if let (Some(path), Some(url)) = (&ctx.output, &posted.comment_url) {
        gh_env::write_outputs(path, &[("comment-url", url.clone())])?;
    }
    Ok(settle_post_errors(&posted, &args.post, ExitStatus::PASS))
}
