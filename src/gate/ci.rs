//! What `kgate ci` and `kgate comment` add to a check: the report posted from a job. On GitHub
//! the sticky pull-request comment, the check run, the annotations and the step outputs; in a
//! GitLab merge-request pipeline the sticky note. Posting never decides the gate: what fails is
//! collected in [`Posted`], for the caller to report, and fails the step only on request.

use std::path::Path;

use super::{GateError, Say, within};
use crate::github::body::{self as gh_body, CommentPolicy};
use crate::github::client::{CommentOutcome, Conclusion, GithubClient};
use crate::github::env::{self as gh_env, GithubContext, Level};
use crate::gitlab::GitlabContext;
use crate::gitlab::client::{GitlabClient, NoteOutcome};
use crate::model::exit::ExitStatus;
use crate::model::report::{MetricComparison, Report};
use crate::model::units::format_change;
use crate::model::verdict::Verdict;
use crate::render;

/// The sticky-comment and check-run id of this job: `--job-id`, else the CI's job name, else
/// `default`.
pub fn job_id(flag: Option<&str>, job: Option<String>) -> Result<String, GateError> {
    let id = flag.map(str::to_string).or(job);
    let id = id.unwrap_or_else(|| "default".to_string());
    gh_body::validate_job_id(&id).map_err(|e| GateError::Invalid(format!("--job-id: {e}")))?;
    Ok(id)
}

/// A current-thread runtime for the REST clients.
fn runtime(what: &str) -> Result<tokio::runtime::Runtime, GateError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    runtime.map_err(within(format!("cannot start the runtime for {what} calls")))
}

/// The GitHub client with its runtime, when there is a context and a token.
pub struct Poster {
    runtime: tokio::runtime::Runtime,
    client: GithubClient,
}

impl Poster {
    pub fn new(ctx: &GithubContext, token: &str) -> Result<Poster, GateError> {
        let runtime = runtime("GitHub")?;
        // octocrab's service stack spawns onto the runtime it is built in.
        let client = {
            let _entered = runtime.enter();
            GithubClient::new(&ctx.api_url, token, &ctx.owner, &ctx.repo)?
        };
        Ok(Poster { runtime, client })
    }

    /// Starts the job's check run ("in progress") on `head_sha`; a failure, or no commit to
    /// attach it to, is recorded in `errors` (posting never decides the gate).
    pub fn start_check_run(
        &self,
        job_id: &str,
        head_sha: Option<&str>,
        no_sha: &str,
        errors: &mut Vec<GateError>,
    ) -> Option<u64> {
        let Some(sha) = head_sha else {
            errors.push(GateError::Invalid(format!("{no_sha}, so no check run")));
            return None;
        };
        let name = match job_id {
            "default" => "kgate".to_string(),
            _ => format!("kgate ({job_id})"),
        };
        match self
            .runtime
            .block_on(self.client.start_check_run(&name, sha))
        {
            Ok(id) => Some(id),
            Err(e) => {
                errors.push(e.into());
                None
            }
        }
    }

    /// The open pull request of `owner`'s `branch` at `sha` (a `workflow_run` event's).
    pub fn find_pull_request(
        &self,
        owner: &str,
        branch: &str,
        sha: &str,
    ) -> Result<Option<u64>, GateError> {
        let found = self.client.find_pull_request(owner, branch, sha);
        Ok(self.runtime.block_on(found)?)
    }

    /// Completes a check run as failed by an error that stopped kgate (`text`); best effort.
    pub fn fail_check_run(&self, id: u64, text: &str) {
        let summary = format!(
            "kgate stopped with an error: {}",
            render::escape::escape_markdown(text)
        );
        let finish =
            self.client
                .finish_check_run(id, Conclusion::Failure, "kgate failed", &summary);
        let _ = self.runtime.block_on(finish);
    }
}

/// The check run's conclusion for the gate's exit status.
pub fn conclusion_for(status: u8) -> Conclusion {
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
pub struct Posted {
    pub comment_url: Option<String>,
    pub check_run_url: Option<String>,
    pub errors: Vec<GateError>,
}

/// Where and how a report is posted: the sticky comment's policy and author, the job, the pull
/// request, and the check run to complete (with its conclusion and a note for its title).
pub struct Posting<'a> {
    pub policy: CommentPolicy,
    pub author: Option<&'a str>,
    pub job_id: &'a str,
    pub pr: Option<u64>,
    pub check_run: Option<u64>,
    pub conclusion: Conclusion,
    pub title_note: Option<&'a str>,
}

/// Posts the sticky comment (per policy) and completes the check run.
pub fn post_report(
    poster: &Poster,
    ctx: &GithubContext,
    report: &Report,
    how: &Posting<'_>,
    say: &mut Say<'_>,
) -> Posted {
    let mut posted = Posted::default();
    match how.pr {
        _ if how.policy == CommentPolicy::Never => {}
        None => say("kgate: not a pull request, so no comment"),
        Some(pr) => {
            let body = gh_body::comment_body(report, how.job_id, ctx.run_url().as_deref());
            let result = poster.runtime.block_on(async {
                let author = match how.author {
                    Some(a) => a.to_string(),
                    None => poster.client.identity().await?,
                };
                let marker = gh_body::marker(how.job_id);
                let new = how.policy.allows_new(report);
                (poster.client)
                    .upsert_comment(pr, &marker, &author, &body, new)
                    .await
            });
            match result {
                Ok(outcome) => {
                    say(&match &outcome {
                        CommentOutcome::Created { url, .. } => {
                            format!("kgate: commented on #{pr}: {url}")
                        }
                        CommentOutcome::Updated { url, .. } => {
                            format!("kgate: updated the comment on #{pr}: {url}")
                        }
                        CommentOutcome::Skipped => format!(
                            "kgate: no comment on #{pr}: the `{}` policy does not call for one",
                            how.policy
                        ),
                    });
                    posted.comment_url = outcome.url().map(str::to_string);
                }
                Err(e) => posted.errors.push(e.into()),
            }
        }
    }
    if let Some(id) = how.check_run {
        let summary = gh_body::check_run_summary(report);
        let title = match how.title_note {
            Some(note) => format!("{note}: {}", render::summary_line(report)),
            None => render::summary_line(report),
        };
        let finish = poster
            .client
            .finish_check_run(id, how.conclusion, &title, &summary);
        match poster.runtime.block_on(finish) {
            Ok(url) => posted.check_run_url = url,
            Err(e) => posted.errors.push(e.into()),
        }
    }
    posted
}

/// The sticky merge-request note of a GitLab job: updated when this job's note exists, created
/// when the policy calls for one. `None` where nothing was to be posted.
pub fn post_note(
    gl: &GitlabContext,
    report: &Report,
    flag_job_id: Option<&str>,
    policy: CommentPolicy,
    say: &mut Say<'_>,
) -> Result<Option<NoteOutcome>, GateError> {
    let job_id = job_id(flag_job_id, gl.job_id())?;
    if policy == CommentPolicy::Never {
        return Ok(None);
    }
    let Some(iid) = gl.merge_request else {
        say("kgate: not a merge-request pipeline (CI_MERGE_REQUEST_IID is unset), so no note");
        return Ok(None);
    };
    let token = GitlabContext::token(crate::run::secrets::var).ok_or_else(|| {
        GateError::Invalid("no GitLab token, so nothing is posted; set KGATE_GITLAB_TOKEN to a project access token with the `api` scope (a masked CI/CD variable)".into())
    })?;
    let runtime = runtime("GitLab")?;
    let client = {
        let _entered = runtime.enter();
        GitlabClient::new(&gl.api_url, &gl.project_id, &token)?
    };
    let body = gh_body::comment_body(report, &job_id, gl.job_url.as_deref());
    let project_url = std::env::var("CI_PROJECT_URL").ok();
    let (marker, new) = (gh_body::marker(&job_id), policy.allows_new(report));
    let upsert = client.upsert_note(iid, &marker, &body, new, project_url.as_deref());
    let outcome = runtime.block_on(upsert)?;
    let link = |url: &Option<String>| url.as_deref().map(|u| format!(": {u}")).unwrap_or_default();
    say(&match &outcome {
        NoteOutcome::Created { url, .. } => format!("kgate: added a note to !{iid}{}", link(url)),
        NoteOutcome::Updated { url, .. } => {
            format!("kgate: updated the note on !{iid}{}", link(url))
        }
        NoteOutcome::Skipped => {
            format!("kgate: no note on !{iid}: the `{policy}` policy does not call for one")
        }
    });
    Ok(Some(outcome))
}

/// The commit the pull request branched from: merge-base of its head and base.
pub fn pr_merge_base(ctx: Option<&GithubContext>, root: &Path) -> Result<String, GateError> {
    let ctx = ctx.ok_or_else(|| {
        GateError::Invalid("--against-pr-base needs the GitHub Actions context (GITHUB_REPOSITORY and GITHUB_EVENT_PATH)".into())
    })?;
    let base_ref = ctx.event.base_ref.as_deref().ok_or_else(|| {
        GateError::Invalid(format!(
            "--against-pr-base: the `{}` event is not a pull request; use --against REF or the stored baseline",
            ctx.event_name
        ))
    })?;
    let base_sha = ctx.event.base_sha.clone();
    let base = base_sha.unwrap_or_else(|| format!("origin/{base_ref}"));
    let head = ctx.head_sha().unwrap_or("HEAD");
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["merge-base", head, &base])
        .output()
        .map_err(within("cannot run git"))?;
    if !out.status.success() {
        return Err(GateError::Invalid(format!(
            "cannot find the merge-base of {head} and {base} (base branch `{base_ref}`): {}; check out the history with `fetch-depth: 0` in actions/checkout",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Workflow-command annotations for the `limit` largest regressions (errors) and
/// inconclusive benchmarks (warnings).
pub fn report_annotations(report: &Report, limit: usize) -> Vec<String> {
    let mut lines = Vec::new();
    // A wrong answer fails the gate whatever its speed: said first. A benchmark that failed
    // on a side measured nothing: an error, before any regression. Those say their
    // explanation; a regression or an inconclusive benchmark its largest gating change.
    let size = |m: &MetricComparison| m.change.unwrap_or(0.0).abs();
    #[rustfmt::skip]
    let levels = [(Verdict::Incorrect, Level::Error), (Verdict::Failed, Level::Error),
                  (Verdict::Regressed, Level::Error), (Verdict::Inconclusive, Level::Warning)];
    for (verdict, level) in levels {
        let whole = matches!(verdict, Verdict::Incorrect | Verdict::Failed);
        let mut hits: Vec<(&str, String, f64)> = (report.benchmarks.iter())
            .filter(|b| b.verdict == verdict)
            .filter_map(|b| {
                if whole {
                    return Some((b.name.as_str(), b.explanation.clone(), 0.0));
                }
                let m = (b.metrics.iter())
                    .filter(|m| m.gates && m.verdict == verdict)
                    .max_by(|x, y| size(x).total_cmp(&size(y)))?;
                let message = match b.explanation.is_empty() {
                    true => format!("{} {}", m.name, m.change.map_or("–".into(), format_change)),
                    false => b.explanation.clone(),
                };
                Some((b.name.as_str(), message, size(m)))
            })
            .collect();
        // Largest first; a stable sort keeps the report's order among equals.
        hits.sort_by(|a, b| b.2.total_cmp(&a.2));
        for (name, message, _) in hits.iter().take(limit) {
            let title = format!("kgate: {name} {}", verdict.as_str());
            lines.push(gh_env::annotation(level, &title, message));
        }
        if hits.len() > limit {
            let (more, verdict) = (hits.len() - limit, verdict.as_str());
            let more = format!("{more} more {verdict} benchmarks are listed in the job summary");
            lines.push(gh_env::annotation(Level::Notice, "kgate", &more));
        }
    }
    lines
}

/// The step outputs of `kgate ci` (`verdict`, `exit-code`, the counts, the report's path, the
/// regressed benchmarks, where the comment and check run are).
pub fn ci_outputs(
    report: &Report,
    status: u8,
    report_path: &Path,
    posted: &Posted,
) -> Vec<(&'static str, String)> {
    let s = &report.summary;
    let regressions: Vec<&str> = (report.benchmarks.iter())
        .filter(|b| b.verdict == Verdict::Regressed)
        .map(|b| b.name.as_str())
        .collect();
    let verdict = serde_json::to_value(report.verdict).ok();
    let verdict = verdict
        .as_ref()
        .and_then(|v| v.as_str())
        .unwrap_or_default();
    vec![
        ("verdict", verdict.to_string()),
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
        ("report", report_path.display().to_string()),
        ("regressions", regressions.join("\n")),
        (
            "comment-url",
            posted.comment_url.clone().unwrap_or_default(),
        ),
        (
            "check-run-url",
            posted.check_run_url.clone().unwrap_or_default(),
        ),
    ]
}
