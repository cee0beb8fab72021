//! `kgate ci` and `kgate comment`: the gate in GitHub Actions (docs/github.md) and in GitLab CI.
//!
//! `ci` runs the same check as `kgate check`, then adds what a pull request needs: the job
//! summary, annotations, step outputs, one sticky comment per job and a check run. In a GitLab
//! merge-request pipeline it writes the JUnit report for the merge-request widget and keeps one
//! sticky note per job instead. The posting itself is the library's (`gate::ci`); here the
//! flags are read, the outputs written and the posting errors reported.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::{
    Format, ReportArgs, emit_checked, error_text, load_config, run_check, say, write_stdout,
};
use crate::cli::{CiArgs, CommentArgs, FailOn, PostArgs};
use crate::gate::ci::{self, Posted, Poster, Posting, conclusion_for};
use crate::gate::{self, GateError};
use crate::github::TrustedAction;
use crate::github::body::{self as gh_body, CommentPolicy};
use crate::github::client::Conclusion;
use crate::github::env::{self as gh_env, GithubContext, Level};
use crate::gitlab::GitlabContext;
use crate::model::exit::ExitStatus;
use crate::model::report::Report;
use crate::model::verdict::RunVerdict;
use crate::render;
use crate::store::fsutil::{self, Overwrite};

pub use crate::gate::ci::report_annotations;

/// Reports posting failures; returns the exit status they call for.
fn settle_post_errors(errors: Vec<GateError>, post: &PostArgs, status: u8) -> u8 {
    let failed = !errors.is_empty();
    for e in errors {
        let text = error_text(&e.into());
        eprintln!("warning: {}", crate::model::text::escape_log(&text));
        if std::env::var_os("GITHUB_ACTIONS").is_some() {
            let level = if post.fail_on_post_error {
                Level::Error
            } else {
                Level::Warning
            };
            let annotation = gh_env::annotation(level, "kgate could not post", &text);
            println!("{annotation}");
        }
    }
    if post.fail_on_post_error && failed {
        ExitStatus::combine(ExitStatus::ERROR, status)
    } else {
        status
    }
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

/// The GitLab job's sticky note; returns the exit status the posting errors call for.
fn gitlab_note(gl: &GitlabContext, report: &Report, post: &PostArgs, status: u8) -> u8 {
    let posted = ci::post_note(gl, report, post.job_id.as_deref(), post.comment, &mut say);
    settle_post_errors(posted.err().into_iter().collect(), post, status)
}

pub(super) fn ci(config_path: &Path, args: CiArgs) -> Result<u8> {
    let ctx = GithubContext::from_env()?;
    // GitLab CI, when not in GitHub Actions; read before the benchmarks run, so a broken
    // context fails at once.
    let gitlab = match &ctx {
        None => GitlabContext::from_env()?,
        Some(_) => None,
    };
    let job = ctx.as_ref().and_then(|c| c.job.clone());
    let job_id = ci::job_id(args.post.job_id.as_deref(), job)?;
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
            post_errors.push(GateError::Invalid(
                "no GitHub token, so nothing is posted; pass `token: ${{ github.token }}` to the action or set GITHUB_TOKEN".into(),
            ));
            None
        }
        _ => None,
    };
    // The check run shows "in progress" while the benchmarks run.
    let mut check_run = None;
    if let (Some(p), Some(ctx), true) = (&poster, &ctx, args.post.check_run) {
        let no_sha = "no head commit in the event or GITHUB_SHA";
        check_run = p.start_check_run(&job_id, ctx.head_sha(), no_sha, &mut post_errors);
    }
    // The pull request's merge-base is already the commit to measure: taken as it is.
    let against = if args.against_pr_base {
        let loaded = load_config(config_path)?;
        let base = ci::pr_merge_base(ctx.as_ref(), &loaded.root)?;
        eprintln!("kgate: comparing against the merge-base {base}");
        Some(gate::Against {
            reference: base,
            tip: true,
        })
    } else {
        super::against(&args.against, &args.against_tip)
    };
    let options = gate::CheckOptions {
        selection: super::overrides(&args.selection),
        baseline: args.baseline.clone(),
        against,
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
    let save = args.save_results.as_deref();
    let checked = run_check(config_path, &options, args.selection.no_progress).and_then(|c| {
        let status = emit_checked(&c, save, &report_args, c.base.is_some())?;
        Ok((status, c.report))
    });
    let (status, report) = match checked {
        Ok(checked) => checked,
        Err(err) => {
            if let (Some(p), Some(id)) = (&poster, check_run) {
                p.fail_check_run(id, &error_text(&err));
            }
            return Err(err);
        }
    };
    let status = apply_fail_on(status, &report, args.fail_on);
    write_stdout(&render::exporter(Format::Table, render::stdout_wants_color()).render(&report))?;
    let gitlab_junit = gitlab.as_ref().map(|_| PathBuf::from("kgate-junit.xml"));
    let junit = args.junit.clone().or(gitlab_junit);
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
        let json = render::escape::code_span(&args.report.display().to_string());
        let more = format!("the JSON report {json}");
        let (room, bytes) = (gh_env::summary_room(path), gh_body::Measure::Bytes);
        let markdown = gh_body::fit_markdown(&report, "", "\n", &more, room, bytes);
        gh_env::append_step_summary(path, &markdown)?;
    }
    for line in report_annotations(&report, args.annotations) {
        println!("{line}");
    }
    let posting = Posting {
        policy: args.post.comment,
        author: args.post.comment_author.as_deref(),
        job_id: &job_id,
        pr: ctx.event.pr_number,
        check_run,
        conclusion: conclusion_for(status),
        title_note: None,
    };
    let mut posted = match &poster {
        Some(p) => ci::post_report(p, &ctx, &report, &posting, &mut say),
        None => Posted::default(),
    };
    post_errors.append(&mut posted.errors);
    if let Some(path) = &ctx.output {
        let outputs = ci::ci_outputs(&report, status, &args.report, &posted);
        gh_env::write_outputs(path, &outputs)?;
    }
    Ok(settle_post_errors(post_errors, &args.post, status))
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
    let (here, allow) = ([Path::new(".")], args.allow_untrusted_checkout);
    crate::github::refuse_untrusted_checkout(Some(&ctx), &here, TrustedAction::Post, allow)?;
    let job_id = ci::job_id(args.post.job_id.as_deref(), ctx.job.clone())?;
    let Some(token) = args.post.token.as_deref().filter(|t| !t.is_empty()) else {
        let why = "no GitHub token, so nothing is posted; set GITHUB_TOKEN or pass --token";
        let errors = vec![GateError::Invalid(why.into())];
        return Ok(settle_post_errors(errors, &args.post, ExitStatus::PASS));
    };
    let poster = Poster::new(&ctx, token)?;
    let mut errors = Vec::new();
    let event_sha = ctx.head_sha().map(str::to_string);
    let head_sha = args.head_sha.clone().or(event_sha);
    let mut pr = args.pr.or(ctx.event.pr_number);
    if pr.is_none()
        && ctx.event_name == "workflow_run"
        && let (Some(owner), Some(branch), Some(sha)) =
            (&ctx.event.head_owner, &ctx.event.head_branch, &head_sha)
    {
        match poster.find_pull_request(owner, branch, sha) {
            Ok(found) => pr = found,
            Err(e) => errors.push(e),
        }
    }
    let mut check_run = None;
    if args.post.check_run {
        let no_sha = "no head commit (--head-sha, the event or GITHUB_SHA)";
        check_run = poster.start_check_run(&job_id, head_sha.as_deref(), no_sha, &mut errors);
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
        let warning = match check_run {
            Some(_) => format!("{why}; the check run is neutral"),
            None => why,
        };
        report.warnings.insert(0, warning);
        title_note = Some("neutral: waivers claimed by the report");
    }
    let posting = Posting {
        policy: args.post.comment,
        author: args.post.comment_author.as_deref(),
        job_id: &job_id,
        pr,
        check_run,
        conclusion: from_rows.no_better_than(args.gate_status.map(conclusion_for)),
        title_note,
    };
    let mut posted = ci::post_report(&poster, &ctx, &report, &posting, &mut say);
    errors.append(&mut posted.errors);
    if let Some(path) = &ctx.output {
        let url = |u: &Option<String>| u.clone().unwrap_or_default();
        let outputs = [
            ("comment-url", url(&posted.comment_url)),
            ("check-run-url", url(&posted.check_run_url)),
        ];
        gh_env::write_outputs(path, &outputs)?;
    }
    Ok(settle_post_errors(errors, &args.post, ExitStatus::PASS))
}
