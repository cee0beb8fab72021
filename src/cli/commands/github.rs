//! `kgate ci` and `kgate comment`: the gate in GitHub Actions (docs/github.md) and in GitLab CI.
//!
//! `ci` runs the same check as `kgate check`, then adds what a pull request needs: the job
//! summary, annotations, step outputs, one sticky comment per job and a check run. In a GitLab
//! merge-request pipeline it writes the JUnit report for the merge-request widget and keeps one
//! sticky note per job instead. Posting never decides the gate; its errors are reported, and
//! fail the step only on request.

use std::path::Path;

use anyhow::{Context, Result, bail};

use super::{Format, ReportArgs, emit_checked, load_config, run_check, write_stdout};
use crate::gate;
use crate::model::exit::ExitStatus;
use crate::model::report::Report;
use crate::model::verdict::RunVerdict;
use crate::render;

use crate::cli::{CiArgs, CommentArgs, FailOn, PostArgs};
use crate::github::TrustedAction;
use crate::github::body::{self as gh_body, CommentPolicy};
use crate::github::client::{Conclusion, GithubClient};
use crate::github::env::{self as gh_env, GithubContext, Level};
use crate::gitlab::GitlabContext;
use crate::gitlab::client::{GitlabClient, NoteOutcome};
use crate::store::fsutil::{self, Overwrite};

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
    (check_run, conclusion, title_note): (Option<u64>, Conclusion, Option<&str>),
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
        let summary = gh_body::check_run_summary(report);
        let title = match title_note {
            Some(note) => format!("{note}: {}", render::summary_line(report)),
            None => render::summary_line(report),
        };
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
        let text = super::error_text(e);
        eprintln!("warning: {}", crate::model::text::escape_log(&text));
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
    // A wrong answer fails the gate whatever its speed: said first. A benchmark that failed
    // on a side measured nothing: an error, before any regression.
    for verdict in [
        crate::model::verdict::Verdict::Incorrect,
        crate::model::verdict::Verdict::Failed,
    ] {
        let word = verdict.as_str();
        let hits: Vec<_> = report
            .benchmarks
            .iter()
            .filter(|b| b.verdict == verdict)
            .collect();
        for b in hits.iter().take(limit) {
            lines.push(gh_env::annotation(
                Level::Error,
                &format!("kgate: {} {word}", b.name),
                &b.explanation,
            ));
        }
        if hits.len() > limit {
            lines.push(gh_env::annotation(
                Level::Notice,
                "kgate",
                &format!(
                    "{} more {word} benchmarks are listed in the job summary",
                    hits.len() - limit
                ),
            ));
        }
    }
    for (verdict, level) in [
        (crate::model::verdict::Verdict::Regressed, Level::Error),
        (crate::model::verdict::Verdict::Inconclusive, Level::Warning),
    ] {
        let mut hits: Vec<(&str, &crate::model::report::MetricComparison, &str)> = report
            .benchmarks
            .iter()
            .filter(|b| b.verdict == verdict)
            .filter_map(|b| {
                b.metrics
                    .iter()
                    .filter(|m| m.gates && m.verdict == verdict)
                    .max_by(|a, b| {
                        let key = |m: &crate::model::report::MetricComparison| {
                            m.change.unwrap_or(0.0).abs()
                        };
                        key(a).total_cmp(&key(b))
                    })
                    .map(|m| (b.name.as_str(), m, b.explanation.as_str()))
            })
            .collect();
        hits.sort_by(|a, b| {
            let key = |m: &crate::model::report::MetricComparison| m.change.unwrap_or(0.0).abs();
            key(b.1).total_cmp(&key(a.1))
        });
        let total = hits.len();
        for (name, m, explanation) in hits.into_iter().take(limit) {
            let change = m
                .change
                .map(crate::model::units::format_change)
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

pub(super) fn ci(config_path: &Path, args: CiArgs) -> Result<u8> {
    let ctx = GithubContext::from_env()?;
    // GitLab CI, when not in GitHub Actions; read before the benchmarks run, so a broken
    // context fails at once.
    let gitlab = match &ctx {
        None => GitlabContext::from_env()?,
        Some(_) => None,
    };
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
    let options = gate::CheckOptions {
        selection: super::overrides(&args.selection),
        baseline: args.baseline.clone(),
        against: (against.map(|reference| gate::Against {
            reference,
            tip: false,
        }))
        .or_else(|| {
            against_tip.map(|reference| gate::Against {
                reference,
                tip: true,
            })
        }),
        record: args.record,
        measure_identical: args.measure_identical,
        // `gate.on_regression: profile` still applies.
        ..gate::CheckOptions::default()
    };
    // The report goes to its file as `kgate check` writes it (for `kgate comment` in a second
    // workflow), and is posted from memory.
    let report_args = ReportArgs {
        format: Format::Json,
        output: Some(args.report.clone()),
        fail_on_inconclusive: false,
        view: crate::cli::ViewArgs::default(),
    };
    let checked = run_check(config_path, &options, args.selection.no_progress).and_then(|c| {
        emit_checked(
            &c,
            args.save_results.as_deref(),
            &report_args,
            c.base.is_some(),
        )
        .map(|status| (status, c))
    });
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
                        render::escape::escape_markdown(&super::error_text(&err))
                    ),
                ));
            }
            return Err(err);
        }
    };
    let status = apply_fail_on(status, &report, args.fail_on);
    write_stdout(&render::exporter(Format::Table, render::stdout_wants_color()).render(&report))?;
    let junit = args.junit.clone().or_else(|| {
        gitlab
            .as_ref()
            .map(|_| std::path::PathBuf::from("kgate-junit.xml"))
    });
    if let Some(path) = junit {
        let xml = render::exporter(Format::Junit, false).render(&report);
        fsutil::write_atomic(&path, xml.as_bytes(), Overwrite::Allow)
            .with_context(|| format!("cannot write the JUnit report {}", path.display()))?;
        eprintln!("kgate: wrote the JUnit report {}", path.display());
    }
    if let Some(gl) = &gitlab {
        return Ok(gitlab_note(gl, &report, &args.post, status));
    }

    let Some(ctx) = ctx else {
        eprintln!("kgate: not running in GitHub Actions (GITHUB_REPOSITORY unset): nothing posted");
        return Ok(status);
    };
    if let Some(path) = &ctx.step_summary {
        let more = format!(
            "the JSON report {}",
            render::escape::code_span(&args.report.display().to_string())
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
            (check_run, conclusion_for(status), None),
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
            .filter(|b| b.verdict == crate::model::verdict::Verdict::Regressed)
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
                ("failed", s.failed.to_string()),
                ("incorrect", s.incorrect.to_string()),
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

/// The sticky merge-request note of a GitLab job: updated when this job's note exists, created
/// when the policy calls for one. Returns the exit status the posting errors call for.
fn gitlab_note(gl: &GitlabContext, report: &Report, post: &PostArgs, status: u8) -> u8 {
    let mut posted = Posted::default();
    let job_id = post
        .job_id
        .clone()
        .or_else(|| gl.job_id())
        .unwrap_or_else(|| "default".to_string());
    let result = (|| -> Result<Option<NoteOutcome>> {
        gh_body::validate_job_id(&job_id).map_err(|e| anyhow::anyhow!("--job-id: {e}"))?;
        if post.comment == CommentPolicy::Never {
            return Ok(None);
        }
        let Some(iid) = gl.merge_request else {
            eprintln!(
                "kgate: not a merge-request pipeline (CI_MERGE_REQUEST_IID is unset), so no note"
            );
            return Ok(None);
        };
        let token = GitlabContext::token(crate::run::secrets::var)
            .context(
                "no GitLab token, so nothing is posted; set KGATE_GITLAB_TOKEN to a project access token with the `api` scope (a masked CI/CD variable)",
            )?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the runtime for GitLab calls")?;
        let client = {
            let _entered = runtime.enter();
            GitlabClient::new(&gl.api_url, &gl.project_id, &token)?
        };
        let body = gh_body::comment_body(report, &job_id, gl.job_url.as_deref());
        let project_url = std::env::var("CI_PROJECT_URL").ok();
        let outcome = runtime.block_on(client.upsert_note(
            iid,
            &gh_body::marker(&job_id),
            &body,
            post.comment.allows_new(report),
            project_url.as_deref(),
        ))?;
        let link =
            |url: &Option<String>| url.as_deref().map(|u| format!(": {u}")).unwrap_or_default();
        match &outcome {
            NoteOutcome::Created { url, .. } => {
                eprintln!("kgate: added a note to !{iid}{}", link(url))
            }
            NoteOutcome::Updated { url, .. } => {
                eprintln!("kgate: updated the note on !{iid}{}", link(url))
            }
            NoteOutcome::Skipped => eprintln!(
                "kgate: no note on !{iid}: the `{}` policy does not call for one",
                post.comment
            ),
        }
        Ok(Some(outcome))
    })();
    if let Err(e) = result {
        posted.errors.push(e);
    }
    settle_post_errors(&posted, post, status)
}

pub(super) fn comment(args: CommentArgs) -> Result<u8> {
    // Read as `kgate report` reads it: a report of another format version is refused by it.
    // The report came from another job (a fork's, in the two-workflow pattern): its verdict,
    // counts and benchmark verdicts are what its rows support, never what it says of itself.
    let mut report = render::stored::load_report(&args.report)?;
    let reconciled = super::reconcile_stored(&mut report);
    let Some(ctx) = GithubContext::from_env()? else {
        // GitLab CI: the sticky note of a job that measured without the access token.
        if let Some(mut gl) = GitlabContext::from_env()? {
            gl.merge_request = args.pr.or(gl.merge_request);
            return Ok(gitlab_note(&gl, &report, &args.post, ExitStatus::PASS));
        }
        bail!(
            "`kgate comment` needs the GitHub Actions context (GITHUB_REPOSITORY and GITHUB_EVENT_PATH) or GitLab CI's (GITLAB_CI=true): neither is set"
        );
    };
    crate::github::refuse_untrusted_checkout(
        Some(&ctx),
        &[Path::new(".")],
        TrustedAction::Post,
        args.allow_untrusted_checkout,
    )?;
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
    let from_rows = Conclusion::of_stored_report(&report, reconciled.waived_regressions);
    let mut title_note = None;
    if from_rows == Conclusion::Neutral && report.verdict == RunVerdict::Pass {
        // A regression the report itself says is waived cannot be checked from the report:
        // such a pass is never green.
        let n = reconciled.waived_regressions;
        let why = format!(
            "{n} gating regression{} pass{} only by a waiver the report itself claims, which a job that only reads the report cannot check",
            if n == 1 { "" } else { "s" },
            if n == 1 { "es" } else { "" },
        );
        report.warnings.insert(
            0,
            match check_run {
                Some(_) => format!("{why}; the check run is neutral"),
                None => why,
            },
        );
        title_note = Some("neutral: waivers claimed by the report");
    }
    let conclusion = from_rows.no_better_than(args.gate_status.map(conclusion_for));
    let mut posted = post_report(
        &poster,
        &ctx,
        &report,
        &args.post,
        &job_id,
        pr,
        (check_run, conclusion, title_note),
    );
    errors.append(&mut posted.errors);
    posted.errors = errors;
    if let Some(path) = &ctx.output {
        gh_env::write_outputs(
            path,
            &[
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
    Ok(settle_post_errors(&posted, &args.post, ExitStatus::PASS))
}
