//! GitHub integration: the Actions context and environment files ([`env`](mod@env)), the comment
//! and summary text fitted to GitHub's limits ([`body`]), and the REST calls ([`client`]).
//!
//! Kept apart from the pipeline: nothing below [`crate::gate::ci`] needs a network or a
//! runtime, and the async client runs on a current-thread runtime created only there. The
//! guard against running or posting a fork's code ([`refuse_untrusted_checkout`]) is here too.

pub mod body;
pub mod client;
pub mod env;

use std::path::{Path, PathBuf};
use std::process::Command;

use env::GithubContext;

/// What kgate is about to do with the checked-out code, for the refusal message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrustedAction {
    /// Post a comment, check run or summary with the job's token.
    Post,
    /// Run the benchmarks (and their build steps).
    RunBenchmarks,
}

/// Events whose token can write to the base repository while naming a pull request's head.
const WRITE_TOKEN_EVENTS: &[&str] = &["pull_request_target", "workflow_run"];

/// How deep below the workspace kgate looks for other checkouts.
const CHECKOUT_SEARCH_DEPTH: usize = 3;

/// Why kgate will not run or post here: a fork's code is checked out in a job that holds a
/// write token ([`refuse_untrusted_checkout`]), or the Actions context cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    #[error("{0}")]
    Untrusted(String),
    #[error(transparent)]
    Context(#[from] env::EnvError),
}

/// Stops a job whose token can write from running or posting a fork's code. `allow` is
/// `--allow-untrusted-checkout`; `KGATE_ALLOW_UNTRUSTED_CHECKOUT=1` does the same for the
/// commands without that flag.
///
/// A `pull_request_target` (or `workflow_run`) job runs with a write token and secrets. If it
/// has checked out a fork's code, anywhere, the code (and any report it made) came from whoever
/// opened the pull request, and running it or posting with the write token is the "pwn request"
/// pattern. The fork's code counts as checked out in a git work tree whose `HEAD` is the pull
/// request's head commit or has it as an ancestor (the `refs/pull/N/merge` commit, a local
/// merge). The work trees looked at are those of `dirs` (the working folder, the
/// configuration's folder) and every checkout up to three levels below `GITHUB_WORKSPACE`.
pub fn refuse_untrusted_checkout(
    ctx: Option<&GithubContext>,
    dirs: &[&Path],
    action: TrustedAction,
    allow: bool,
) -> Result<(), Refused> {
    let allowed_by_env =
        std::env::var("KGATE_ALLOW_UNTRUSTED_CHECKOUT").is_ok_and(|v| v == "1" || v == "true");
    match ctx {
        Some(ctx) if !allow && !allowed_by_env => match untrusted_checkout(ctx, dirs, action) {
            Some(reason) => Err(Refused::Untrusted(reason)),
            None => Ok(()),
        },
        _ => Ok(()),
    }
}

/// The guard before any benchmark runs: a no-op outside GitHub Actions.
pub fn refuse_untrusted_run(root: &Path) -> Result<(), Refused> {
    if std::env::var_os("GITHUB_ACTIONS").is_none()
        && std::env::var_os("GITHUB_EVENT_NAME").is_none()
    {
        return Ok(());
    }
    let ctx = GithubContext::from_env()?;
    let dirs = [Path::new("."), root];
    refuse_untrusted_checkout(ctx.as_ref(), &dirs, TrustedAction::RunBenchmarks, false)
}

fn untrusted_checkout(
    ctx: &GithubContext,
    dirs: &[&Path],
    action: TrustedAction,
) -> Option<String> {
    if !WRITE_TOKEN_EVENTS.contains(&ctx.event_name.as_str()) {
        return None;
    }
    let event = &ctx.event;
    let from_fork = match (&event.head_repo, &event.base_repo) {
        (Some(head), Some(base)) => !head.eq_ignore_ascii_case(base),
        // A deleted fork has no head repository: treat it as a fork.
        (None, _) => true,
        (Some(_), None) => false,
    };
    if !from_fork {
        return None;
    }
    let head_sha = event.head_sha.as_deref()?;
    let mut candidates: Vec<PathBuf> = dirs.iter().map(|d| d.to_path_buf()).collect();
    if let Some(workspace) = std::env::var_os("GITHUB_WORKSPACE") {
        candidates.extend(checkouts_below(Path::new(&workspace)));
    }
    let holder = candidates.iter().find(|dir| holds_commit(dir, head_sha))?;
    let doing = match action {
        TrustedAction::Post => "refusing to post",
        TrustedAction::RunBenchmarks => "refusing to run benchmarks",
    };
    let fork = event.head_repo.as_deref().unwrap_or("a deleted fork");
    let (event_name, holder) = (&ctx.event_name, holder.display());
    Some(format!(
        "{doing} from a `{event_name}` job that has checked out the fork's code (commit {head_sha} of {fork}, or a merge of it) in `{holder}`: that code, and any report it makes, comes from the pull request's author, and this job holds a write token. Run the benchmarks in a `pull_request` workflow, which gets a read-only token, and post from a `workflow_run` workflow that only downloads the report (docs/github.md, \"Fork pull requests\"); if the job is gated by an approval environment, pass --allow-untrusted-checkout (or set KGATE_ALLOW_UNTRUSTED_CHECKOUT=1)"
    ))
}

/// Git work trees at or below `root`, a few levels deep (`.git` folders or files).
fn checkouts_below(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut level = vec![root.to_path_buf()];
    for _ in 0..=CHECKOUT_SEARCH_DEPTH {
        let mut next = Vec::new();
        for dir in level {
            if dir.join(".git").exists() {
                found.push(dir.clone());
            }
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
                if is_dir && entry.file_name() != ".git" {
                    next.push(entry.path());
                }
            }
        }
        level = next;
    }
    found
}

/// Whether the work tree at `dir` has `commit` checked out, or merged into what is.
fn holds_commit(dir: &Path, commit: &str) -> bool {
    let git = |args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .ok()
    };
    let Some(head) = git(&["rev-parse", "HEAD"]).filter(|o| o.status.success()) else {
        return false;
    };
    if String::from_utf8_lossy(&head.stdout).trim() == commit {
        return true;
    }
    git(&["merge-base", "--is-ancestor", commit, "HEAD"]).is_some_and(|o| o.status.success())
}
